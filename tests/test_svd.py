"""Lineage SVD (Levy, Goldberg & Dagan 2015): co-occurrence counts and PPMI against hand-computed values, the vectors
against numpy's dense SVD, determinism, the saved folder (Auto classes, trust_remote_code, WordVectors), a task head
on the vectors, the command line and bad input."""

import json
import math

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
import torch
import transformers
from sklearn.utils.extmath import svd_flip
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification, AutoModelForTokenClassification

import hf_lineage
from hf_lineage import LineageSvdConfig, LineageSvdModel, WordVectors, train_svd
from hf_lineage.cli import main as cli_main
from hf_lineage.word_vector_trainers.cooccurrence import CooccurrenceCounter, factorize, ppmi
from hf_lineage.models import modeling_lineage_svd
from hf_lineage.models.modeling_lineage_svd import LineageSvdForSequenceClassification
from hf_lineage.word_vector_trainers.word2vec import encode_corpus
from hf_lineage.tokenization import train_wordlevel_tokenizer

from conftest import REPO, run_without_hf_lineage

SAMPLE = REPO / "hf_lineage" / "samples" / "lineage" / "corpus.train.txt"
A, B, C, X = 4, 5, 6, 7  # token ids of a toy vocabulary after the 4 specials


def sentences(*lines):
    """(ids, starts) of sentences given as lists of ids: encode_corpus's format."""
    starts = np.cumsum([0] + [len(line) for line in lines])
    return np.array([i for line in lines for i in line]), starts


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    """The first ~40k words of the embedded WikiText-2 sample."""
    path = tmp_path_factory.mktemp("svd") / "corpus.txt"
    lines, words = [], 0
    with open(SAMPLE, encoding="utf-8") as f:
        for line in f:
            lines.append(line)
            words += len(line.split())
            if words > 40_000:
                break
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def saved(corpus_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("svd") / "model"
    model, tokenizer = train_svd(str(corpus_file), config="tiny", min_count=3, output_dir=out)
    return out, model, tokenizer


def test_auto_classes_build_the_family_and_a_fresh_model_starts_from_word2vecs_init():
    config = AutoConfig.for_model("lineage-svd", vocab_size=30, vector_size=8)
    assert isinstance(config, LineageSvdConfig) and "svd" in hf_lineage.FAMILIES
    for auto_name, class_name in modeling_lineage_svd.AUTO_CLASSES.items():
        assert type(getattr(transformers, auto_name).from_config(config)).__name__ == class_name
    vectors = LineageSvdModel(config).word_vectors.weight  # a from-scratch baseline: uniform in ±0.5/d
    assert vectors.abs().max() <= 0.5 / 8 and vectors.std() > 0.01


# --------------------------------------------------------------------------- counts and PPMI by hand


def test_counts_are_symmetric_windows_inside_sentences_without_dropped_words():
    # "a b a" and "b c": #(a,b) = 2 (a b, b a), #(b,c) = 1; no window crosses the two lines.
    counter = CooccurrenceCounter(vocab_size=8, window=1, dynamic_window=False)
    counter.add(*sentences([A, B, A], [B, C]))
    expected = np.zeros((8, 8))
    expected[A, B] = expected[B, A] = 2
    expected[B, C] = expected[C, B] = 1
    np.testing.assert_array_equal(counter.counts.toarray(), expected)
    assert counter.tokens == 5
    # A dropped word (keep False) is removed before windows are taken: "a x b" counts (a, b) as neighbours.
    keep = np.ones(8, dtype=bool)
    keep[X] = False
    counter = CooccurrenceCounter(vocab_size=8, window=1, dynamic_window=False, keep=keep)
    counter.add(*sentences([A, X, B]))
    assert counter.counts[A, B] == counter.counts[B, A] == 1 and counter.counts[:, X].nnz == 0 and counter.tokens == 2


def test_dynamic_window_weights_and_chunks_add_up():
    # window 2, dynamic: distance 1 counts 1, distance 2 counts (2 - 2 + 1) / 2 = 0.5
    counter = CooccurrenceCounter(vocab_size=8, window=2, dynamic_window=True)
    counter.add(*sentences([A, B, C]))
    assert counter.counts[A, B] == 1 and counter.counts[A, C] == 0.5 and counter.counts[C, A] == 0.5
    # Streaming: any split into chunks gives the counts of one (partial sums merged or kept apart along the way).
    lines = [[A, B, C, A], [C, B], [B, A, A, C, B], [A], [C, A, B, B, C, A, A]]
    whole = CooccurrenceCounter(vocab_size=8, window=2, dynamic_window=True)
    whole.add(*sentences(*lines))
    for cuts in ([2], [1, 2, 3, 4], [4]):
        chunked = CooccurrenceCounter(vocab_size=8, window=2, dynamic_window=True)
        for start, end in zip([0, *cuts], [*cuts, len(lines)]):
            chunked.add(*sentences(*lines[start:end]))
        np.testing.assert_array_equal(whole.counts.toarray(), chunked.counts.toarray())
        assert chunked.tokens == whole.tokens == 19


def test_ppmi_with_context_smoothing_and_shift_equals_the_hand_computed_values():
    # The counts of "a b a" / "b c": rows a, b, c = [0 2 0], [2 0 1], [0 1 0]; #(w) = #(c) = 2, 3, 1.
    counts = sp.csr_matrix(np.array([[0.0, 2, 0], [2, 0, 1], [0, 1, 0]]))
    smoothed_total = 2**0.75 + 3**0.75 + 1**0.75  # Σ_c #(c)^0.75

    def pmi(pair, word_total, context_total):
        return math.log(pair * smoothed_total / (word_total * context_total**0.75))

    got = ppmi(counts, cds=0.75, neg=1).toarray()
    expected = np.zeros((3, 3))
    expected[0, 1] = pmi(2, 2, 3)  # log(2.1765) = 0.778
    expected[1, 0] = pmi(2, 3, 2)  # 0.676
    expected[1, 2] = pmi(1, 3, 1)  # 0.503
    expected[2, 1] = pmi(1, 1, 3)  # 0.778
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    # Shifted by log 2: (a,b) and (c,b) stay positive, (b,a) and (b,c) fall below 0 and are clipped.
    shifted = ppmi(counts, cds=0.75, neg=2)
    np.testing.assert_allclose(shifted.toarray(), np.maximum(expected - math.log(2), 0), rtol=1e-12)
    assert shifted.nnz == 2  # clipped entries are not stored
    # cds = 1 is plain PPMI: log(#(w,c) · D / (#(w) · #(c))), D = 12
    assert ppmi(counts, cds=1.0)[0, 1] == pytest.approx(math.log(2 * 6 / (2 * 3)))
    assert counts.nnz == 4  # the input is left as it was


# --------------------------------------------------------------------------- the factorisation


def test_vectors_are_the_top_singular_subspace_of_numpys_dense_svd(corpus_file):
    tokenizer = train_wordlevel_tokenizer(files=[str(corpus_file)], min_count=20)
    keep = np.ones(len(tokenizer), dtype=bool)
    keep[:4] = False  # the specials
    counter = CooccurrenceCounter(len(tokenizer), window=2, dynamic_window=True, keep=keep)
    with open(corpus_file, encoding="utf-8") as lines:
        counter.add(*encode_corpus(tokenizer, lines))
    matrix = ppmi(counter.counts)
    assert matrix.shape[0] > 200
    u, sigma, vt = np.linalg.svd(matrix.toarray())
    k = 8
    u, vt = svd_flip(u[:, :k], vt[:k])  # scikit-learn's sign convention

    # The spectrum's gaps are small here (σ5..σ8 = 13.1, 12.9, 12.3, 12.0), so the power iterations matter: 20
    # bring the subspace within 0.1° (5, scikit-learn's default, leave ~10°: see docs/svd.md).
    vectors, singular_values = factorize(matrix, k, eig=0.0, n_iter=20, seed=0)
    np.testing.assert_allclose(singular_values, sigma[:k], rtol=1e-6)
    # The same subspace (principal angles near 0), and column by column the same vectors.
    assert np.degrees(scipy.linalg.subspace_angles(vectors, u)).max() < 0.1
    np.testing.assert_allclose(vectors, u, atol=1e-3)
    # Eigenvalue weighting and w+c: U·Σ^0.5 + V·Σ^0.5.
    weighted, _ = factorize(matrix, k, eig=0.5, add_context_vectors=True, n_iter=20, seed=0)
    np.testing.assert_allclose(weighted, (u + vt.T) * sigma[:k] ** 0.5, atol=5e-3)


def test_same_seed_same_vectors(corpus_file):
    first, _ = train_svd(str(corpus_file), config="tiny", min_count=3, seed=7)
    second, _ = train_svd(str(corpus_file), config="tiny", min_count=3, seed=7)
    assert torch.equal(first.word_vectors.weight, second.word_vectors.weight)
    assert first.word_vectors.weight[4:].abs().sum() > 0 and first.word_vectors.weight[:4].abs().sum() == 0


# --------------------------------------------------------------------------- the saved folder


def test_saved_folder_loads_with_auto_classes_and_keeps_the_vectors(saved):
    out, model, _ = saved
    loaded = AutoModel.from_pretrained(out)
    assert isinstance(loaded, LineageSvdModel) and loaded.config.model_type == "lineage-svd"
    assert torch.equal(loaded.word_vectors.weight, model.word_vectors.weight)
    assert torch.equal(loaded.singular_values, model.singular_values)
    ids = torch.tensor([[4, 5, 6]])
    assert torch.equal(loaded(ids).last_hidden_state, model.word_vectors.weight[ids])
    # A task head built from the folder starts from the vectors: the generic init does not overwrite them.
    head = AutoModelForTokenClassification.from_pretrained(out, num_labels=3)
    assert torch.equal(head.svd.word_vectors.weight, model.word_vectors.weight)
    results = json.loads((out / "train_results.json").read_text())
    assert results["raw_words"] > 30_000 and results["nonzero_ppmi"] > 0 and "Levy" in (out / "README.md").read_text()


def test_saved_folder_loads_with_trust_remote_code_without_hf_lineage(saved, tmp_path):
    out, model, _ = saved
    code = f"""
import torch
from transformers import AutoModel, AutoModelForSequenceClassification
model = AutoModel.from_pretrained({str(out)!r}, trust_remote_code=True)
assert type(model).__name__ == "LineageSvdModel" and "hf_lineage" not in type(model).__module__
print(float(model.word_vectors.weight.double().sum()))
head = AutoModelForSequenceClassification.from_pretrained({str(out)!r}, trust_remote_code=True, num_labels=2)
print(torch.equal(head.svd.word_vectors.weight, model.word_vectors.weight))
"""
    lines = run_without_hf_lineage(code, cwd=tmp_path).strip().splitlines()
    assert float(lines[-2]) == pytest.approx(float(model.word_vectors.weight.detach().double().sum()), rel=1e-9)
    assert lines[-1] == "True"


def test_word_vectors_on_a_saved_folder(saved, tmp_path):
    out, model, tokenizer = saved
    weight = model.word_vectors.weight.detach().clone()
    wv = WordVectors.from_pretrained(out)
    assert len(wv) == int(weight[4:].any(dim=1).sum()) and wv.vector_size == model.config.vector_size
    # A word whose vector is all zeros (never seen in a window) has no direction: it is left out, not a NaN.
    weight[tokenizer.convert_tokens_to_ids("of")] = 0
    emptied = LineageSvdModel(model.config)
    with torch.no_grad():
        emptied.word_vectors.weight.copy_(weight)
    without = WordVectors.from_pretrained(emptied, tokenizer=tokenizer)
    assert "of" not in without.key_to_index and len(without) == len(wv) - 1
    np.testing.assert_array_equal(wv["the"], model.word_vectors.weight.detach()[tokenizer.convert_tokens_to_ids("the")])
    neighbours = wv.most_similar("the", topn=5)
    assert len(neighbours) == 5 and all(-1 <= score <= 1 for _, score in neighbours)
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("the\tof\t5\nthe\ta\t7\nof\tin\t6\nand\tor\t8\n")
    _, spearman, oov = wv.evaluate_word_pairs(pairs)
    assert -1 <= spearman.statistic <= 1 and oov == 0
    analogies = tmp_path / "questions.txt"
    analogies.write_text(": toy\nthe a of in\n")
    accuracy, sections = wv.evaluate_word_analogies(analogies)
    assert sections[-1]["section"] == "Total accuracy" and 0 <= accuracy <= 1
    for binary in (False, True):
        path = tmp_path / f"vectors.{binary}"
        wv.save_word2vec_format(path, binary=binary)
        back = WordVectors.load_word2vec_format(path, binary=binary)
        assert back.index_to_key == wv.index_to_key
        np.testing.assert_allclose(back.vectors, wv.vectors, rtol=1e-5, atol=1e-6)


def test_a_static_head_on_frozen_vectors_learns_a_toy_task(saved):
    # Label 1 when a sentence holds "city", else 0; frozen vectors, the BiLSTM and classifier train.
    out, _, tokenizer = saved
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(out, num_labels=2, freeze_vectors=True,
                                                               task_hidden_size=16)
    assert isinstance(model, LineageSvdForSequenceClassification) and not model.svd.word_vectors.weight.requires_grad
    texts = ["the city is large", "the river is long", "a city of the north", "in the game of the season"] * 4
    labels = torch.tensor([1, 0, 1, 0] * 4)
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    losses = []
    model.train()
    for _ in range(30):
        loss = model(**batch, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


# --------------------------------------------------------------------------- command line and bad input


def test_pretrain_svd_through_the_cli(corpus_file, tmp_path, capsys):
    out = tmp_path / "cli"
    assert cli_main(["pretrain", "svd", "--config", "tiny", "--train-file", str(corpus_file), "--output-dir", str(out),
                     "--set", "min_count=3", "--set", "eig=0", "--set", "neg=5", "--set", "window=3",
                     "--vocab-size", "500"]) == 0
    model = AutoModel.from_pretrained(out)
    assert model.config.neg == 5 and model.config.eig == 0 and model.config.vector_size == 16
    assert model.config.vocab_size == 500  # --vocab-size caps the vocabulary, specials included
    assert "positive PPMI entries" in capsys.readouterr().out
    # The engine has no part in a factorisation: its options are refused before anything is written.
    for extra in (["--backend", "engine"], ["--max-steps", "3"], ["--learning-rate", "0.1"]):
        assert cli_main(["pretrain", "svd", "--config", "tiny", "--train-file", str(corpus_file), "--output-dir",
                         str(tmp_path / "refused"), *extra]) == 2
        assert not (tmp_path / "refused").exists()


@pytest.mark.parametrize("fields, message", [
    (dict(cds=0.0), "cds"), (dict(neg=0.5), "neg"), (dict(eig=1.5), "eig"), (dict(window=0), "window"),
    (dict(vector_size=0), "vector_size"), (dict(task_encoder="gru"), "task_encoder"),
])
def test_bad_config_is_a_value_error_naming_the_field(fields, message):
    with pytest.raises(ValueError, match=message):
        LineageSvdConfig.from_named("tiny", **fields)


def test_bad_input_is_a_clear_value_error(corpus_file, tmp_path):
    with pytest.raises(ValueError, match="vector_size=5000 is larger than the"):
        train_svd(str(corpus_file), vector_size=5000, min_count=3)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n")
    for corpus in ([], [[], []], str(empty)):
        with pytest.raises(ValueError, match="empty"):
            train_svd(corpus, config="tiny")
    with pytest.raises(ValueError, match="min_count=10000"):
        train_svd(str(corpus_file), config="tiny", min_count=10_000)
    with pytest.raises(ValueError, match="Unknown lineage-svd size"):
        train_svd(str(corpus_file), config="huge")


# --------------------------------------------------------------------------- the lineage experiment


def test_the_lineage_offers_svd_outside_its_default_run_and_pretrains_it(corpus_file, tmp_path):
    from hf_lineage.lineage.pretraining import pretrain_family
    from hf_lineage.lineage.settings import LINEAGE_FAMILIES, SCALES, LineageArguments, check_arguments

    assert "svd" in LINEAGE_FAMILIES and "svd" not in LineageArguments().families
    args = LineageArguments(families=["svd"], budget_words=6000)
    check_arguments(args)
    # The lineage's run (with its validation corpus and budget) is one svd's own trainer takes: a whole pass.
    corpus = {"train": [str(corpus_file)], "validation": [str(corpus_file)], "train_words": 40_000}
    result = pretrain_family("svd", SCALES["tiny"], args, corpus, tmp_path)
    assert result["parameters"] > 0 and result["words_seen"] == 40_000 and result["steps"] is None
    assert AutoModel.from_pretrained(tmp_path / "model").config.vector_size == 64


def test_the_causal_lm_head_on_the_vectors_generates(saved):
    # Generation tasks use the vectors under the shared left-to-right LSTM LM, as word2vec's do.
    from transformers import AutoModelForCausalLM

    out, model, tokenizer = saved
    lm = AutoModelForCausalLM.from_pretrained(out).eval()
    assert torch.equal(lm.svd.word_vectors.weight, model.word_vectors.weight)
    prompt = tokenizer(["the city of"], return_tensors="pt")
    # The svd checkpoint has no LM head: generating from the fresh one is refused until it has been trained.
    with pytest.raises(ValueError, match="never been trained"):
        lm.generate(**prompt, max_new_tokens=3, do_sample=False)
    loss = lm(**prompt, labels=prompt["input_ids"]).loss
    assert torch.isfinite(loss)
    loss.backward()  # a training step reaches lm_head: the head counts as trained
    generated = lm.generate(**prompt, max_new_tokens=3, do_sample=False)
    assert generated.shape == (1, prompt["input_ids"].shape[1] + 3)
