"""Lineage GloVe (Pennington, Socher & Manning 2014): the 1/d-weighted counts, f(x), the weighted least squares
gradient against autograd and the kernel's AdaGrad step against it, the falling cost, determinism, the saved folder
(Auto classes, trust_remote_code, WordVectors, a task head), the command line, bad input and the lineage."""

import json

import numpy as np
import pytest
import torch
import transformers
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification

import hf_lineage
from hf_lineage import LineageGloveConfig, LineageGloveModel, WordVectors, train_glove
from hf_lineage.cli import main as cli_main
from hf_lineage.models import modeling_lineage_glove
from hf_lineage.word_vector_trainers.cooccurrence import CooccurrenceCounter
from hf_lineage.word_vector_trainers.glove import _glove_epoch, fit_glove, glove_weighting, weighted_least_squares

from conftest import REPO, run_without_hf_lineage

SAMPLE = REPO / "hf_lineage" / "samples" / "lineage" / "corpus.train.txt"
A, B, C = 4, 5, 6  # token ids of a toy vocabulary after the 4 specials


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    """The first ~20k words of the embedded WikiText-2 sample."""
    path = tmp_path_factory.mktemp("glove") / "corpus.txt"
    lines, words = [], 0
    with open(SAMPLE, encoding="utf-8") as f:
        for line in f:
            lines.append(line)
            words += len(line.split())
            if words > 20_000:
                break
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def saved(corpus_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("glove") / "model"
    model, tokenizer = train_glove(str(corpus_file), config="tiny", min_count=3, workers=1, output_dir=out)
    return out, model, tokenizer


def test_auto_classes_build_the_family_and_the_paper_config_is_named():
    config = AutoConfig.for_model("lineage-glove", vocab_size=30, vector_size=8)
    assert isinstance(config, LineageGloveConfig) and "glove" in hf_lineage.FAMILIES
    for auto_name, class_name in modeling_lineage_glove.AUTO_CLASSES.items():
        assert type(getattr(transformers, auto_name).from_config(config)).__name__ == class_name
    paper = LineageGloveConfig.from_named("pennington2014", vocab_size=100)
    assert (paper.vector_size, paper.window, paper.x_max, paper.alpha, paper.learning_rate, paper.epochs) == \
        (300, 10, 100, 0.75, 0.05, 100) and paper.harmonic_window and paper.add_context_vectors


# --------------------------------------------------------------------------- counts, f(x), the gradient


def test_counts_weight_a_context_word_at_distance_d_by_one_over_d():
    counter = CooccurrenceCounter(vocab_size=8, window=3, dynamic_window=False, harmonic=True)
    counter.add(np.array([A, B, C, A]), np.array([0, 4]))
    counts = counter.counts.toarray()
    assert counts[A, B] == 1 + 1 / 2 and counts[A, C] == 1 / 2 + 1 and counts[A, A] == 2 / 3  # both directions
    np.testing.assert_array_equal(counts, counts.T)
    with pytest.raises(ValueError, match="not both"):
        CooccurrenceCounter(vocab_size=8, window=3, dynamic_window=True, harmonic=True)


def test_the_weighting_function_rises_as_a_power_and_caps_at_one():
    x = np.array([1.0, 10.0, 99.0, 100.0, 1000.0])
    np.testing.assert_allclose(glove_weighting(x), [0.01**0.75, 0.1**0.75, 0.99**0.75, 1.0, 1.0])
    np.testing.assert_allclose(glove_weighting(x, x_max=10, alpha=1.0), [0.1, 1.0, 1.0, 1.0, 1.0])


def test_the_weighted_least_squares_gradient_is_autograds():
    rng = np.random.default_rng(0)
    vocab, dims = 5, 3
    rows, cols = np.array([0, 1, 1, 2, 3, 4, 0]), np.array([1, 0, 2, 1, 4, 3, 0])
    counts = np.array([3.0, 3.0, 150.0, 150.0, 0.5, 0.5, 7.0])  # below and above x_max = 100
    params = [rng.normal(size=(vocab, dims)), rng.normal(size=(vocab, dims)), rng.normal(size=vocab),
              rng.normal(size=vocab)]
    loss, gradients = weighted_least_squares(*params, rows, cols, counts)
    w, c, bw, bc = (torch.tensor(p, requires_grad=True) for p in params)
    f = torch.tensor(glove_weighting(counts))
    error = (w[rows] * c[cols]).sum(1) + bw[rows] + bc[cols] - torch.log(torch.tensor(counts))
    expected = 0.5 * (f * error**2).sum()
    expected.backward()
    assert loss == pytest.approx(expected.item(), rel=1e-12)
    for name, tensor in zip(("word_vectors", "context_vectors", "word_biases", "context_biases"), (w, c, bw, bc)):
        np.testing.assert_allclose(gradients[name], tensor.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_the_kernel_takes_adagrad_steps_along_that_gradient():
    # Entries 2..12 of twelve, one step each: the first step on a row starts from squares of 1 (glove.c's), so it is
    # η·gradient; later ones on the same rows are divided by sqrt(1 + the earlier steps²). d = 19 puts elements in
    # both the kernel's vectorised loop and its remainder; the table rows hold a vector then its bias.
    rng = np.random.default_rng(1)
    vocab, dims, first, last = 5, 19, 2, 12
    params = [rng.normal(size=(vocab, dims)), rng.normal(size=(vocab, dims)), rng.normal(size=vocab),
              rng.normal(size=vocab)]
    params = [(p / 4).astype(np.float32).astype(np.float64) for p in params]  # exact in float32
    rows, cols = rng.integers(0, vocab, last).astype(np.int32), rng.integers(0, vocab, last).astype(np.int32)
    counts = rng.choice([0.5, 4.0, 30.0, 200.0], last)  # below and above x_max = 100
    expected, squares = [p.copy() for p in params], [np.ones_like(p) for p in params]
    for n in range(first, last):  # a plain loop of glove.c's step, in float64
        _, grads = weighted_least_squares(*expected, rows[n:n + 1], cols[n:n + 1], counts[n:n + 1])
        for p, s, g in zip(expected, squares, grads.values()):
            step = 0.05 * g
            p -= step / np.sqrt(s)
            s += step**2
    words, contexts = np.ones((2, vocab, 2, dims + 1), dtype=np.float32)
    words[:, 0, :-1], contexts[:, 0, :-1], words[:, 0, -1], contexts[:, 0, -1] = params
    cost = _glove_epoch(words, contexts, rows, cols, np.log(counts).astype(np.float32),
                        glove_weighting(counts).astype(np.float32), first, last, np.float32(0.05))
    got = [words[:, 0, :-1], contexts[:, 0, :-1], words[:, 0, -1], contexts[:, 0, -1],
           words[:, 1, :-1], contexts[:, 1, :-1], words[:, 1, -1], contexts[:, 1, -1]]
    for got_array, want in zip(got, expected + squares):
        np.testing.assert_allclose(got_array, want, rtol=1e-5, atol=1e-6)
    assert not np.allclose(expected[0], params[0]) and cost > 0


def test_the_cost_falls_and_one_worker_and_a_seed_give_the_same_vectors(corpus_file):
    fields = dict(config="tiny", min_count=3, epochs=10)
    first, _ = train_glove(str(corpus_file), seed=3, workers=1, **fields)
    again, _ = train_glove(str(corpus_file), seed=3, workers=1, **fields)
    other, _ = train_glove(str(corpus_file), seed=4, workers=1, **fields)
    losses = first.train_results["loss_curve"]
    assert len(losses) == 10 and losses[-1] < 0.6 * losses[0] and all(b < a for a, b in zip(losses, losses[1:]))
    assert torch.equal(first.word_vectors.weight, again.word_vectors.weight)
    assert not torch.equal(first.word_vectors.weight, other.word_vectors.weight)
    # Two threads race (Hogwild) but fit as well.
    raced, _ = train_glove(str(corpus_file), seed=3, workers=2, **fields)
    assert raced.train_results["loss_curve"][-1] < 1.1 * losses[-1]


def test_vectors_are_w_plus_w_tilde_and_words_without_counts_get_zero():
    import scipy.sparse as sp

    counts = sp.csr_matrix(np.array([[0, 2.0, 1, 0], [2, 0, 5, 0], [1, 5, 0, 0], [0, 0, 0, 0]]))
    summed, _ = fit_glove(counts, 3, epochs=2, seed=0)
    alone, _ = fit_glove(counts, 3, epochs=2, seed=0, add_context_vectors=False)
    assert not summed[3].any() and summed[:3].all() and not np.allclose(summed, alone)
    with pytest.raises(ValueError, match="all zero"):
        fit_glove(sp.csr_matrix((4, 4)), 3)


# --------------------------------------------------------------------------- the saved folder


def test_the_saved_folder_loads_with_and_without_hf_lineage(saved, tmp_path):
    out, model, tokenizer = saved
    loaded = AutoModel.from_pretrained(out)
    assert isinstance(loaded, LineageGloveModel) and torch.equal(loaded.word_vectors.weight, model.word_vectors.weight)
    assert not loaded.word_vectors.weight[tokenizer.pad_token_id].any()  # no counts: zero, as padding needs
    results = json.loads((out / "train_results.json").read_text())
    assert results["iterations"] == 25 and results["epochs"] == 1 and results["nonzero_counts"] > 1000
    assert "weighted least squares" in (out / "README.md").read_text()
    code = f"""
from transformers import AutoModel
model = AutoModel.from_pretrained({str(out)!r}, trust_remote_code=True)
assert type(model).__name__ == "LineageGloveModel" and "hf_lineage" not in type(model).__module__
print(float(model.word_vectors.weight.double().sum()))
"""
    lines = run_without_hf_lineage(code, cwd=tmp_path).strip().splitlines()
    assert float(lines[-1]) == pytest.approx(float(model.word_vectors.weight.detach().double().sum()), rel=1e-9)


def test_word_vectors_on_a_saved_folder(saved):
    out, model, tokenizer = saved
    wv = WordVectors.from_pretrained(out)
    assert wv.vector_size == 16 and len(wv) == int(model.word_vectors.weight[4:].any(dim=1).sum())
    np.testing.assert_array_equal(wv["the"], model.word_vectors.weight.detach()[tokenizer.convert_tokens_to_ids("the")])
    neighbours = wv.most_similar("the", topn=5)
    assert len(neighbours) == 5 and "the" not in dict(neighbours) and all(-1 <= s <= 1 for _, s in neighbours)


def test_a_static_head_on_frozen_vectors_learns_a_toy_task(saved):
    out, _, tokenizer = saved
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(out, num_labels=2, freeze_vectors=True,
                                                               task_hidden_size=16)
    assert type(model).__name__ == "LineageGloveForSequenceClassification"
    assert not model.glove.word_vectors.weight.requires_grad
    texts = ["the city is large", "the river is long", "a city of the north", "in the game of the season"] * 4
    labels = torch.tensor([1, 0, 1, 0] * 4)
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    losses = []
    for _ in range(30):
        loss = model(**batch, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


# --------------------------------------------------------------------------- command line and bad input


def test_pretrain_glove_through_the_cli_and_the_families_table(corpus_file, tmp_path, capsys):
    out = tmp_path / "cli"
    assert cli_main(["pretrain", "glove", "--config", "tiny", "--train-file", str(corpus_file), "--output-dir",
                     str(out), "--set", "min_count=3", "--set", "x_max=10", "--set", "epochs=3", "--seed", "2"]) == 0
    model = AutoModel.from_pretrained(out)
    assert model.config.x_max == 10 and model.config.epochs == 3 and model.config.vector_size == 16
    assert "non-zero counts" in capsys.readouterr().out
    assert json.loads((out / "train_results.json").read_text())["workers"] == 1  # one thread: reproducible
    assert cli_main(["families"]) == 0
    assert "lineage-glove" in capsys.readouterr().out
    for extra in (["--backend", "engine"], ["--max-steps", "3"], ["--set", "alpha=2"], ["--set", "xmax=5"]):
        assert cli_main(["pretrain", "glove", "--config", "tiny", "--train-file", str(corpus_file), "--output-dir",
                         str(tmp_path / "refused"), *extra]) == 2
        assert not (tmp_path / "refused").exists()


@pytest.mark.parametrize("fields, message", [
    (dict(x_max=0), "x_max"), (dict(alpha=1.5), "alpha"), (dict(learning_rate=0), "learning_rate"),
    (dict(epochs=0), "epochs"), (dict(window=0), "window"), (dict(task_encoder="gru"), "task_encoder"),
])
def test_bad_config_is_a_value_error_naming_the_field(fields, message):
    with pytest.raises(ValueError, match=message):
        LineageGloveConfig.from_named("tiny", **fields)


def test_bad_input_is_a_clear_value_error_and_writes_nothing(corpus_file, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n")
    for corpus in ([], [[], []], str(empty)):
        with pytest.raises(ValueError, match="empty"):
            train_glove(corpus, config="tiny", output_dir=tmp_path / "out")
    with pytest.raises(ValueError, match="min_count=10000"):
        train_glove(str(corpus_file), config="tiny", min_count=10_000, output_dir=tmp_path / "out")
    with pytest.raises(ValueError, match="alpha"):
        train_glove(str(corpus_file), config="tiny", alpha=3, output_dir=tmp_path / "out")
    with pytest.raises(ValueError, match="workers"):
        train_glove(str(corpus_file), config="tiny", workers=-1, output_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- the lineage experiment


def test_the_lineage_offers_glove_outside_its_default_run_and_pretrains_it(corpus_file, tmp_path):
    from hf_lineage.lineage.pretraining import pretrain_family
    from hf_lineage.lineage.settings import LINEAGE_FAMILIES, SCALES, LineageArguments, check_arguments

    assert "glove" in LINEAGE_FAMILIES and "glove" not in LineageArguments().families
    args = LineageArguments(families=["glove"], budget_words=6000)
    check_arguments(args)
    corpus = {"train": [str(corpus_file)], "validation": [str(corpus_file)], "train_words": 20_000}
    result = pretrain_family("glove", SCALES["tiny"], args, corpus, tmp_path)
    assert result["parameters"] > 0 and result["words_seen"] == 20_000 and result["steps"] is None
    assert result["size"] == "64-d"
    assert AutoModel.from_pretrained(tmp_path / "model").config.vector_size == 64


def test_the_analyses_read_glove_as_static_word_vectors():
    from hf_lineage.analysis import polysemy, probes
    from hf_lineage.registry import word_vector_model_types

    assert word_vector_model_types() == {"lineage-nnlm", "lineage-word2vec", "lineage-svd", "lineage-glove"}
    assert "lineage-glove" in probes.STATIC_MODEL_TYPES and "lineage-glove" in polysemy.STATIC_MODEL_TYPES


def test_continuing_a_glove_run_is_refused_before_anything_is_written(corpus_file, tmp_path):
    assert cli_main(["pretrain", "glove", "--config", "tiny", "--train-file", str(corpus_file), "--output-dir",
                     str(tmp_path / "out"), "--init-from", str(tmp_path)]) == 2
    assert not (tmp_path / "out").exists()


def test_a_diverging_run_stops_after_its_epoch_in_one_line_and_saves_nothing(corpus_file, tmp_path, capsys):
    """An absurd learning rate diverges in the first epoch: one line naming it and what was found, no folder."""
    out = tmp_path / "out"
    assert cli_main(["pretrain", "glove", "--config", "tiny", "--train-file", str(corpus_file), "--output-dir",
                     str(out), "--set", "min_count=3", "--set", "epochs=3", "--set", "learning_rate=1000000"]) == 2
    error = [line for line in capsys.readouterr().err.splitlines() if line.startswith("hf-lineage pretrain")]
    assert len(error) == 1 and "GloVe diverged in epoch 1 of 3: word vectors:" in error[0], error
    assert error[0].endswith("nothing was saved. Lower learning_rate (it was 1e+06).")
    assert not out.exists()
