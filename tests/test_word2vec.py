"""Lineage word2vec: config, the vocabulary tables against gensim's (Huffman tree, noise distribution, subsampling,
learning rate), the model (init, save/load, loss), the collator, the CPU trainer's vectors against gensim's on real
text, the engine and CPU backends through the CLI, and bad input."""

import inspect
import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import transformers
from transformers import AutoConfig, AutoModel, AutoModelForPreTraining, AutoTokenizer

import hf_lineage
from hf_lineage import LineageWord2VecConfig, LineageWord2VecForPreTraining, LineageWord2VecModel, train_word2vec
from hf_lineage.cli import main as cli_main
from hf_lineage.word_vector_trainers.word2vec_sampling import (
    DataCollatorForWord2Vec,
    alias_probabilities,
    alias_table,
    huffman_tree,
    keep_probabilities,
    learning_rate,
    noise_distribution,
    sample_ints,
    sampling_tables,
    trainable_counts,
)
from hf_lineage.word_vector_trainers.word2vec_kernels import draw_noise_words
from hf_lineage.models import modeling_lineage_word2vec

from conftest import REPO

gensim = pytest.importorskip("gensim")
from gensim.models import Word2Vec  # noqa: E402

# The embedded WikiText-2 sample: wiki.train.tokens' first 598k words, byte for byte.
WIKITEXT = REPO / "hf_lineage" / "samples" / "lineage" / "corpus.train.txt"
# Zipf-like counts with ties, after the 4 specials (count 0: never trained).
COUNTS = np.array([0, 0, 0, 0, 900, 400, 400, 250, 120, 120, 120, 60, 33, 20, 20, 9, 5, 5, 5, 2, 1])
WORDS = [f"w{i}" for i in range(len(COUNTS))]


def tiny(**overrides):
    return LineageWord2VecConfig.from_named("tiny", **{"vocab_size": len(COUNTS), **overrides})


def gensim_vocab(counts=COUNTS, **kwargs):
    """A gensim model with our trained words and counts, and our counts re-ordered as gensim's vocabulary (gensim's
    sort does not keep the order of equal counts): id 4 + k is gensim's word k."""
    model = Word2Vec(min_count=1, **kwargs)
    model.build_vocab_from_freq({WORDS[i]: int(c) for i, c in enumerate(counts) if c > 0})
    ordered = np.array([0] * 4 + [model.wv.get_vecattr(w, "count") for w in model.wv.index_to_key])
    return model, ordered


@pytest.fixture(scope="module")
def wikitext_lines():
    lines, words = [], 0
    with open(WIKITEXT, encoding="utf-8") as f:
        for line in f:
            tokens = [t for t in line.split() if t != "<unk>"]
            if tokens:
                lines.append(tokens)
                words += len(tokens)
            if words > 400_000:
                break
    return lines


# --------------------------------------------------------------------------- config and registration


def test_auto_classes_and_registration():
    config = AutoConfig.for_model("lineage-word2vec", vocab_size=30)
    assert isinstance(config, LineageWord2VecConfig)
    for auto_name, class_name in modeling_lineage_word2vec.AUTO_CLASSES.items():
        assert type(getattr(transformers, auto_name).from_config(config)).__name__ == class_name
    assert "word2vec" in hf_lineage.FAMILIES


def test_gensim_named_config_equals_gensims_defaults():
    defaults = {k: v.default for k, v in inspect.signature(Word2Vec.__init__).parameters.items()}
    config = LineageWord2VecConfig.from_named("gensim", vocab_size=10)
    assert config.architecture == ("skipgram" if defaults["sg"] else "cbow")
    for name in ("vector_size", "window", "negative", "sample", "ns_exponent", "min_count", "alpha", "min_alpha",
                 "epochs"):
        assert getattr(config, name) == defaults[name], name
    assert config.hs == bool(defaults["hs"]) and config.cbow_mean == bool(defaults["cbow_mean"])
    paper = LineageWord2VecConfig.from_named("mikolov2013", vocab_size=10)
    assert (paper.architecture, paper.vector_size, paper.window, paper.negative, paper.sample) == \
        ("skipgram", 300, 5, 5, 1e-5)


@pytest.mark.parametrize("kwargs, message", [
    (dict(negative=0, hs=False), "negative=0 and hs=False"),
    (dict(negative=-1), "negative"),
    (dict(architecture="glove"), "architecture"),
    (dict(vector_size=0), "vector_size"),
    (dict(window=0), "window"),
    (dict(epochs=0), "epochs"),
    (dict(sample=-0.1), "sample"),
    (dict(alpha=0.0), "alpha"),
    (dict(min_alpha=0.5), "min_alpha"),
    (dict(min_count=-1), "min_count"),
    (dict(task_encoder="gru"), "task_encoder"),
    (dict(task_dropout=1.0), "task_dropout"),
])
def test_invalid_config_raises_value_error_naming_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LineageWord2VecConfig(vocab_size=10, **kwargs)


# --------------------------------------------------------------------------- vocabulary tables against gensim


@pytest.mark.parametrize("counts", [COUNTS, np.array([0, 0, 0, 0, 7, 7, 7, 7, 7, 7, 7]), np.array([0, 3])])
def test_huffman_codes_and_points_equal_gensims(counts):
    model, counts = gensim_vocab(counts, hs=1, negative=0)
    ours = huffman_tree(counts)
    for k, word in enumerate(model.wv.index_to_key):
        n = ours.lengths[4 + k]
        assert ours.codes[4 + k, :n].tolist() == np.asarray(model.wv.get_vecattr(word, "code")).tolist(), word
        assert ours.points[4 + k, :n].tolist() == np.asarray(model.wv.get_vecattr(word, "point")).tolist(), word
    assert (ours.lengths[:4] == 0).all()


def test_noise_distribution_matches_gensims_cum_table_and_the_sampler_draws_from_it():
    model, counts = gensim_vocab(ns_exponent=0.75)
    gensim_p = np.diff(model.cum_table, prepend=0) / float(model.cum_table[-1])
    np.testing.assert_allclose(noise_distribution(counts, 0.75)[4:], gensim_p, atol=2e-9)
    ours = noise_distribution(COUNTS, 0.75)
    assert (ours[COUNTS == 0] == 0).all()
    table = alias_table(ours)
    np.testing.assert_allclose(alias_probabilities(*table, len(COUNTS)), ours, atol=1e-9)
    draws = draw_noise_words(*table, 400_000, 123)
    frequency = np.bincount(draws, minlength=len(COUNTS)) / len(draws)
    assert (frequency[COUNTS == 0] == 0).all()
    np.testing.assert_allclose(frequency, ours, atol=4 * np.sqrt(ours.max() / len(draws)))


@pytest.mark.parametrize("sample", [1e-3, 1e-2, 0.0])
def test_keep_probabilities_equal_the_c_formula_and_gensims_sample_int(sample):
    model, counts = gensim_vocab(sample=sample)
    gensim_int = np.array([model.wv.get_vecattr(w, "sample_int") for w in model.wv.index_to_key])
    assert (sample_ints(keep_probabilities(counts, sample))[4:] == gensim_int).all()
    keep = keep_probabilities(COUNTS, sample)
    if sample:
        t = sample * COUNTS.sum()
        f = COUNTS[4].astype(float)
        assert keep[4] == pytest.approx((math.sqrt(f / t) + 1) * t / f)
    assert (keep[COUNTS == 0] == 0).all() and keep.max() <= 1.0


def test_learning_rate_decays_linearly_like_gensim():
    model = Word2Vec(alpha=0.025, min_alpha=0.0001, epochs=5)
    total = 1000
    for done in (0, 100, 999, 1000, 1200):
        epoch, within = divmod(done, total / 5)
        expected = model._get_next_alpha(within / (total / 5), int(epoch)) if done < total else 0.0001
        assert learning_rate(0.025, 0.0001, done, total) == pytest.approx(expected)


def test_trainable_counts_drop_specials_and_rare_words():
    counts = trainable_counts([50, 40, 0, 0, 9, 3, 1], special_ids=[0, 1, 2, 3], min_count=3)
    assert counts.tolist() == [0, 0, 0, 0, 9, 3, 0]


def test_sampling_tables_keep_0_only_for_words_never_trained():
    # With so small a sample every word's keep threshold rounds to 0, which the kernel reads as "never trained".
    tables = sampling_tables(np.array([0, 0, 7, 10**9]), sample=1e-30, ns_exponent=0.75, hs=False)
    assert tables.keep.tolist() == [0, 0, 1, 1]


# --------------------------------------------------------------------------- the model


def test_init_is_the_c_tools_and_survives_from_pretrained(tmp_path):
    config = tiny(vector_size=40, vocab_size=3000, hs=True)
    model = LineageWord2VecForPreTraining(config)
    w = model.word2vec.input_vectors.weight
    bound = 0.5 / 40
    assert w.min() >= -bound and w.max() <= bound
    assert w.std().item() == pytest.approx(2 * bound / math.sqrt(12), rel=0.02)  # uniform's std
    assert model.output_vectors.weight.abs().max() == 0 and model.inner_node_vectors.weight.abs().max() == 0
    # A checkpoint of the bare model into the pre-training model: output layers and counts are missing and start
    # as the C tool's (zeros), the input vectors are the saved ones.
    model.word2vec.save_pretrained(tmp_path / "base")
    loaded = LineageWord2VecForPreTraining.from_pretrained(tmp_path / "base")
    assert torch.equal(loaded.word2vec.input_vectors.weight, w)
    assert loaded.output_vectors.weight.abs().max() == 0 and loaded.inner_node_vectors.weight.abs().max() == 0
    assert loaded.word_counts.abs().max() == 0
    # The pre-training model without input vectors (only output layers saved): the input vectors get the uniform init.
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("word2vec.")}
    model.save_pretrained(tmp_path / "no_input", state_dict=state)
    again = LineageWord2VecForPreTraining.from_pretrained(tmp_path / "no_input")
    w2 = again.word2vec.input_vectors.weight
    assert torch.isfinite(w2).all() and w2.abs().max() <= bound and w2.std().item() == pytest.approx(
        2 * bound / math.sqrt(12), rel=0.05)


def test_save_and_auto_round_trip_keeps_vectors_and_counts(tmp_path):
    model = LineageWord2VecForPreTraining(tiny(hs=True))
    with torch.no_grad():
        model.output_vectors.weight.normal_()
        model.inner_node_vectors.weight.normal_()
    model.word_counts.copy_(torch.from_numpy(COUNTS))
    model.save_pretrained(tmp_path)
    loaded = AutoModelForPreTraining.from_pretrained(tmp_path)
    assert isinstance(loaded, LineageWord2VecForPreTraining)
    for (name, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert torch.equal(a, b), name
    base = AutoModel.from_pretrained(tmp_path)
    assert isinstance(base, LineageWord2VecModel)
    ids = torch.tensor([[4, 5, 6]])
    assert torch.equal(base(ids).last_hidden_state, model.word2vec.input_vectors.weight[ids])
    assert base.get_input_embeddings() is base.input_vectors


def naive_item_loss(model, inputs, mask, label, negatives, path):
    """The C tool's objective for one item, with a Python loop."""
    config = model.config
    vectors = [model.word2vec.input_vectors.weight[i] for i, m in zip(inputs, mask) if m]
    h = sum(vectors)
    if config.architecture == "cbow" and config.cbow_mean:
        h = h / len(vectors)
    loss = 0.0
    if config.negative:
        loss -= F.logsigmoid(h @ model.output_vectors.weight[label])
        for n in negatives:
            if n != label:
                loss -= F.logsigmoid(-(h @ model.output_vectors.weight[n]))
    if config.hs:
        for point, code in path:
            loss -= F.logsigmoid((1 - 2 * code) * (h @ model.inner_node_vectors.weight[point]))
    return loss


@pytest.mark.parametrize("architecture", ["skipgram", "cbow"])
@pytest.mark.parametrize("negative, hs", [(3, False), (0, True), (2, True)])
def test_forward_loss_is_the_c_tools_objective(architecture, negative, hs):
    # sample=0: no subsampling, so the short sentences give many items
    model = LineageWord2VecForPreTraining(tiny(architecture=architecture, negative=negative, hs=hs, sample=0.0))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.5)
    collate = DataCollatorForWord2Vec(COUNTS, model.config)
    batch = collate([{"input_ids": [4, 9, 5, 4, 7, 2, 6, 11, 4, 5, 8], "mask_seed": 3},
                     {"input_ids": [12, 4, 13, 5], "mask_seed": 4}])
    out = model(**batch)
    tree = huffman_tree(COUNTS)
    expected = []
    for n in range(len(batch["labels"])):
        label = int(batch["labels"][n])
        n_nodes = tree.lengths[label]
        path = list(zip(tree.points[label, :n_nodes].tolist(), tree.codes[label, :n_nodes].tolist()))
        expected.append(naive_item_loss(model, batch["input_ids"][n].tolist(), batch["attention_mask"][n].tolist(),
                                        label, batch["negatives"][n].tolist() if negative else [], path))
    expected = torch.stack(expected)
    torch.testing.assert_close(out.item_losses, expected)
    torch.testing.assert_close(out.loss, expected.mean())
    summed = model(**batch, num_items_in_batch=torch.tensor(100)).loss.item()
    assert summed == pytest.approx(expected.sum().item() / 100)


def test_collator_builds_the_c_tools_items_deterministically():
    config = tiny(window=2, sample=0.0, negative=4)
    collate = DataCollatorForWord2Vec(COUNTS, config)
    sentence = [4, 5, 1, 6, 7, 8, 9, 10]  # 1 = <unk>: dropped before windowing, as gensim drops unknown words
    batch = collate([{"input_ids": sentence, "mask_seed": 11}])
    again = collate([{"input_ids": sentence, "mask_seed": 11}])
    assert all(torch.equal(batch[k], again[k]) for k in batch)
    kept = [w for w in sentence if w != 1]
    pairs = {(int(x), int(y)) for x, y in zip(batch["input_ids"][:, 0], batch["labels"])}
    # every pair is (context, centre) within the window; every centre has its nearest neighbours
    for context, centre in pairs:
        assert abs(kept.index(context) - kept.index(centre)) <= 2 and context != centre
    for i, centre in enumerate(kept):
        for j in (i - 1, i + 1):
            if 0 <= j < len(kept):
                assert (kept[j], centre) in pairs
    assert batch["negatives"].shape == (len(batch["labels"]), 4)
    assert (torch.from_numpy(COUNTS)[batch["negatives"]] > 0).all()  # never a special
    different = collate([{"input_ids": sentence, "mask_seed": 12}])
    assert not torch.equal(different["negatives"][:5], batch["negatives"][:5])
    cbow = DataCollatorForWord2Vec(COUNTS, tiny(window=2, sample=0.0, architecture="cbow"))(
        [{"input_ids": sentence, "mask_seed": 1}])
    assert cbow["input_ids"].shape == (len(kept), 4) and cbow["labels"].tolist() == kept
    assert cbow["attention_mask"].sum(1).min() >= 1


# --------------------------------------------------------------------------- the CPU kernel against a plain loop

M64 = (1 << 64) - 1


def xorshift(state):
    state ^= state >> 12
    state ^= (state << 25) & M64
    state ^= state >> 27
    return state


def shared_window_reference(syn0, syn1neg, context, outputs, table, alpha):
    """pWord2Vec's step as NumPy matrix products: the context words' input vectors (c × d) against the outputs
    (centre word first, label 1, then the noise words, label 0), both updated from their values before the step."""
    inputs, outs = syn0[context].copy(), syn1neg[outputs].copy()
    f = inputs @ outs.T
    labels = np.zeros(len(outputs), dtype=np.float32)
    labels[0] = 1
    index = np.clip(((f + 6.0) * (1000 / 6.0 / 2)).astype(int), 0, 1000)  # σ(6) at 1000
    sig = np.where(f > 6, 1.0, np.where(f < -6, 0.0, table[index]))
    g = ((labels - sig) * alpha).astype(np.float32)
    np.add.at(syn1neg, outputs, g.T @ inputs)
    np.add.at(syn0, context, g @ outs)


def cbow_step_reference(syn1neg, h, outputs, table, alpha):
    """CBOW's negative-sampling step as ``negative_sampling_kernel`` takes it: the hidden vector ``h`` against the
    outputs (centre word first, label 1, then the noise words, label 0), gradients and the returned input error from
    the output vectors before the step, then every output (a repeated one twice) moved by its gradient times ``h``."""
    outs = syn1neg[outputs].copy()
    f = outs @ h
    labels = np.zeros(len(outputs), dtype=np.float32)
    labels[0] = 1
    index = np.clip(((f + 6.0) * (1000 / 6.0 / 2)).astype(int), 0, 1000)  # σ(6) at 1000
    sig = np.where(f > 6, 1.0, np.where(f < -6, 0.0, table[index]))
    g = ((labels - sig) * alpha).astype(np.float32)
    np.add.at(syn1neg, outputs, g[:, None] * h[None, :])
    return g @ outs


def reference_train(corpus, starts, syn0, syn1neg, syn1, keep, noise, tree, table, config, alpha, seed,
                    shared=False, cbow_step=False):
    """word2vec.c's TrainModelThread as a plain Python loop over one job, with the kernel's random numbers;
    ``shared``: skip-gram's negative sampling as pWord2Vec's matrix products, noise words drawn once per window;
    ``cbow_step``: CBOW's negative sampling as ``negative_sampling_kernel`` does it (every output's gradient and the
    input error from the output vectors before the step; ``cbow_step_reference``)."""
    ids, alias, thresholds = noise
    state = (seed | 1) & M64
    for _ in range(4):
        state = xorshift(state)

    def rand32():
        nonlocal state
        state = xorshift(state)
        return (state * 0x2545F4914F6CDD1D) & M64

    def noise_word():
        r = rand32()
        slot = ((r >> 32) * len(ids)) >> 32
        return int(ids[slot]) if (r & 0xFFFFFFFF) < thresholds[slot] else int(alias[slot])

    def sigmoid(f):
        return table[int((f + 6.0) * (1000 / 6.0 / 2))]

    def predict(l1, target, neu1e):
        for n in range(tree.lengths[target] if config.hs else 0):
            point, code = tree.points[target, n], tree.codes[target, n]
            f = float(l1 @ syn1[point])
            if -6 < f < 6:
                g = np.float32((1 - code - sigmoid(f)) * alpha)
                neu1e += g * syn1[point]
                syn1[point] += g * l1
        for s in range(config.negative + 1 if config.negative else 0):
            if s == 0:
                word, label = target, 1.0
            else:
                word, label = noise_word(), 0.0
                if word == target:
                    continue
            f = float(l1 @ syn1neg[word])
            g = np.float32(((label - 1) if f > 6 else label if f < -6 else label - sigmoid(f)) * alpha)
            neu1e += g * syn1neg[word]
            syn1neg[word] += g * l1

    for s in range(len(starts) - 1):
        sentence = []
        for w in corpus[starts[s]:starts[s + 1]]:
            if keep[w] == 0 or (keep[w] != 0xFFFFFFFF and keep[w] < (rand32() & 0xFFFFFFFF)):
                continue
            sentence.append(int(w))
        for i, centre in enumerate(sentence):
            b = (rand32() >> 32) % config.window
            context = [j for j in range(max(0, i - config.window + b), min(len(sentence), i + config.window + 1 - b))
                       if j != i]
            if config.architecture == "skipgram" and shared and config.negative:
                if config.hs:
                    for j in context:
                        neu1e = np.zeros_like(syn0[0])
                        negative, config.negative = config.negative, 0
                        predict(syn0[sentence[j]].copy(), centre, neu1e)
                        config.negative = negative
                        syn0[sentence[j]] += neu1e
                if context:
                    noise_words = [noise_word() for _ in range(config.negative)]
                    outputs = [centre] + [w for w in noise_words if w != centre]
                    shared_window_reference(syn0, syn1neg, [sentence[j] for j in context], outputs, table, alpha)
            elif config.architecture == "skipgram":
                for j in context:
                    neu1e = np.zeros_like(syn0[0])
                    predict(syn0[sentence[j]].copy(), centre, neu1e)
                    syn0[sentence[j]] += neu1e
            elif context:
                h = sum(syn0[sentence[j]] for j in context)
                if config.cbow_mean:
                    h = h / np.float32(len(context))
                if cbow_step:
                    noise_words = [noise_word() for _ in range(config.negative)]
                    neu1e = cbow_step_reference(syn1neg, h, [centre] + [w for w in noise_words if w != centre],
                                                table, alpha)
                else:
                    neu1e = np.zeros_like(h)
                    predict(h, centre, neu1e)
                for j in context:
                    syn0[sentence[j]] += neu1e


@pytest.mark.parametrize("architecture, shared", [("skipgram", False), ("cbow", False), ("skipgram", True)])
@pytest.mark.parametrize("negative, hs", [(3, False), (0, True), (2, True)])
def test_cpu_kernel_equals_a_plain_loop_of_the_c_tools_algorithm(architecture, shared, negative, hs):
    """Both kernels against plain loops: word2vec.c's pair by pair, and (``shared``) pWord2Vec's shared noise words
    per window as NumPy matrix products, same random numbers (subsampling, windows, noise words)."""
    from hf_lineage.word_vector_trainers.word2vec_kernels import exp_table, train_sentences

    config = tiny(architecture=architecture, negative=negative, hs=hs, window=3, sample=1e-2)
    rng = np.random.default_rng(0)
    corpus = rng.choice(len(COUNTS), size=300, p=COUNTS / COUNTS.sum()).astype(np.int32)
    corpus[::17] = 1  # <unk>: skipped
    starts = np.array([0, 40, 41, 160, 300])
    d = config.vector_size
    syn0 = rng.uniform(-0.5 / d, 0.5 / d, (len(COUNTS), d)).astype(np.float32)
    syn1neg = rng.normal(0, 0.1, (len(COUNTS), d)).astype(np.float32)
    syn1 = rng.normal(0, 0.1, (len(COUNTS), d)).astype(np.float32)
    keep = sample_ints(keep_probabilities(COUNTS, config.sample))
    noise = alias_table(noise_distribution(COUNTS, config.ns_exponent))
    tree = huffman_tree(COUNTS)
    table = exp_table()
    expected = [m.copy() for m in (syn0, syn1neg, syn1)]
    initial = syn0.copy()
    # The kernel reads the tables as the trainer builds them in one call; the plain loop, from their pieces.
    tables = sampling_tables(COUNTS, config.sample, config.ns_exponent, hs)
    # min_alpha = alpha: a constant learning rate, so the plain loop need not track the decay
    train_sentences(corpus, starts, 0, len(starts) - 1, syn0, syn1neg, syn1, *tables, table,
                    architecture == "skipgram", True, config.window, negative, hs,
                    np.float32(0.05), np.float32(0.05), 0.0, 1e9, 99, shared)
    reference_train(corpus, starts, *expected, keep, noise, tree, table, config, np.float32(0.05), 99, shared)
    for ours, reference in zip((syn0, syn1neg, syn1), expected):
        np.testing.assert_allclose(ours, reference, rtol=1e-4, atol=1e-6)
    assert np.abs(syn0 - initial).max() > 1e-3  # it did train


@pytest.mark.parametrize("negative, cbow_mean, d", [(3, True, 16), (6, True, 100), (4, False, 37)])
def test_cbow_kernel_equals_a_plain_loop_of_its_step(negative, cbow_mean, d):
    """CBOW's negative-sampling kernel (compiled per vector size) against a plain loop with the same random numbers
    (subsampling, windows, noise words) and ``cbow_step_reference``'s step; with few words and 6 noise words per
    centre word, noise words repeat within a step, and both repeats must be applied. It also stays within rounding
    of the generic kernel (word2vec.c's order), which it replaces for CBOW with negative sampling."""
    from hf_lineage.word_vector_trainers.word2vec_kernels import exp_table, negative_sampling_kernel, train_sentences

    config = tiny(architecture="cbow", negative=negative, hs=False, window=3, sample=1e-2, cbow_mean=cbow_mean,
                  vector_size=d)
    rng = np.random.default_rng(1)
    corpus = rng.choice(len(COUNTS), size=400, p=COUNTS / COUNTS.sum()).astype(np.int32)
    corpus[::17] = 1  # <unk>: skipped
    starts = np.array([0, 40, 41, 160, 400])
    syn0 = rng.uniform(-0.5 / d, 0.5 / d, (len(COUNTS), d)).astype(np.float32)
    syn1neg = rng.normal(0, 0.1, (len(COUNTS), d)).astype(np.float32)
    keep = sample_ints(keep_probabilities(COUNTS, config.sample))
    noise = alias_table(noise_distribution(COUNTS, config.ns_exponent))
    tables = sampling_tables(COUNTS, config.sample, config.ns_exponent, False)
    table = exp_table()
    expected = [syn0.copy(), syn1neg.copy(), np.zeros((1, d), np.float32)]
    generic = [syn0.copy(), syn1neg.copy(), np.zeros((1, d), np.float32)]
    initial = syn0.copy()
    alpha = np.float32(0.05)
    effective, raw = negative_sampling_kernel(d, False)(corpus, starts, 0, len(starts) - 1, syn0, syn1neg, *tables[:4],
                                                        table, cbow_mean, config.window, negative, alpha, alpha, 0.0,
                                                        1e9, 99)
    assert raw == len(corpus) and 0 < effective < raw
    reference_train(corpus, starts, *expected, keep, noise, huffman_tree(COUNTS), table, config, alpha, 99,
                    cbow_step=True)
    np.testing.assert_allclose(syn0, expected[0], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(syn1neg, expected[1], rtol=1e-4, atol=1e-6)
    assert np.abs(syn0 - initial).max() > 1e-3  # it did train
    assert negative_sampling_kernel(d, False) is negative_sampling_kernel(d, False)  # compiled once per size
    train_sentences(corpus, starts, 0, len(starts) - 1, *generic, *tables, table, False, cbow_mean, config.window,
                    negative, False, alpha, alpha, 0.0, 1e9, 99, False)
    np.testing.assert_allclose(syn0, generic[0], atol=0.02)  # repeated noise words: a second-order difference


@pytest.mark.parametrize("d", [16, 100])
def test_negative_sampling_kernel_gives_skipgram_shared_negatives_what_the_generic_kernel_gives(d):
    """Skip-gram with shared negatives in the kernel compiled per vector size, which draws each centre word's window
    and noise words while the previous one trains: the same draws in the same order as the generic kernel, so the
    same vectors (to rounding: the row loops are vectorised differently)."""
    from hf_lineage.word_vector_trainers.word2vec_kernels import exp_table, negative_sampling_kernel, train_sentences

    rng = np.random.default_rng(2)
    corpus = rng.choice(len(COUNTS), size=400, p=COUNTS / COUNTS.sum()).astype(np.int32)
    corpus[::17] = 1  # <unk>: skipped
    starts = np.array([0, 40, 41, 42, 160, 400])  # one-word sentences: no window, no draws
    syn0 = rng.uniform(-0.5, 0.5, (len(COUNTS), d)).astype(np.float32)
    syn1neg = rng.normal(0, 0.3, (len(COUNTS), d)).astype(np.float32)
    tables = sampling_tables(COUNTS, 1e-2, 0.75, False)
    table, alpha = exp_table(), np.float32(0.05)
    generic = [syn0.copy(), syn1neg.copy()]
    initial = syn0.copy()
    ours = negative_sampling_kernel(d, True)(corpus, starts, 0, len(starts) - 1, syn0, syn1neg, *tables[:4], table,
                                             True, 3, 4, alpha, alpha, 0.0, 1e9, 5)
    theirs = train_sentences(corpus, starts, 0, len(starts) - 1, *generic, np.zeros((1, d), np.float32), *tables,
                             table, True, True, 3, 4, False, alpha, alpha, 0.0, 1e9, 5, True)
    assert ours == theirs
    np.testing.assert_allclose(syn0, generic[0], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(syn1neg, generic[1], rtol=1e-4, atol=1e-6)
    assert np.abs(syn0 - initial).max() > 1e-2  # it did train


def guarded(table, value=1e30):
    """``table`` as a view into a buffer whose next float is ``value``: what a read one past its end finds there is
    then known, not whatever memory follows (numba checks no bounds)."""
    buffer = np.full(len(table) + 1, value, dtype=np.float32)
    buffer[:len(table)] = table
    return buffer[:len(table)]


KERNELS = ["cbow", "cbow-generic", "skipgram-classic", "skipgram-shared", "skipgram-specialised"]


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_dot_product_of_exactly_max_exp_looks_up_sigma_of_it_not_past_the_table(kernel):
    """Issue 59's divergence: every output's dot product with the hidden vector is exactly MAX_EXP (6.0), which the
    kernels look up at index EXP_TABLE_SIZE. The table has that entry, σ(6); a table one shorter made the kernels read
    the float after its end (here 10³⁰, as a diverged run's vectors reached 4.6 × 10¹⁷) and blow the vectors up. Every
    kernel: the generic one (CBOW, skip-gram pair by pair, pWord2Vec's shared-negatives window) and the negative-
    sampling one (CBOW, shared-negatives skip-gram)."""
    from hf_lineage.word_vector_trainers.word2vec_kernels import (EXP_TABLE_SIZE, MAX_EXP, exp_table,
                                                                   negative_sampling_kernel, train_sentences)

    table = exp_table()
    assert len(table) == EXP_TABLE_SIZE + 1
    assert table[EXP_TABLE_SIZE] == pytest.approx(1 / (1 + math.exp(-MAX_EXP)), abs=1e-7)
    d, negative, alpha = 8, 3, np.float32(0.025)
    syn0 = np.zeros((len(COUNTS), d), np.float32)
    syn0[:, 0] = 6.0  # every input vector (6, 0, ...)
    syn1neg = np.zeros((len(COUNTS), d), np.float32)
    syn1neg[:, 0] = 1.0  # every output vector (1, 0, ...): each dot product with an input (or their mean) is 6.0
    tables = sampling_tables(COUNTS, 0.0, 0.75, False)  # no subsampling: every word trains
    corpus, starts = np.array([4, 5, 6, 7], dtype=np.int32), np.array([0, 4])
    arguments = (np.float32(alpha), np.float32(alpha), 0.0, 1e9, 3)
    if kernel in ("cbow", "skipgram-specialised"):
        negative_sampling_kernel(d, kernel != "cbow")(corpus, starts, 0, 1, syn0, syn1neg, *tables[:4],
                                                      guarded(table), True, 2, negative, *arguments)
    else:
        skipgram, shared = kernel.startswith("skipgram"), kernel.endswith("shared")
        train_sentences(corpus, starts, 0, 1, syn0, syn1neg, np.zeros((1, d), np.float32), *tables, guarded(table),
                        skipgram, True, 2, negative, False, *arguments, shared)
    # σ(6) = 0.9975: the centre word's own output barely moves, the noise words' move by about α · 6 each time.
    assert np.isfinite(syn0).all() and np.isfinite(syn1neg).all()
    assert np.abs(syn0).max() < 10 and np.abs(syn1neg).max() < 10


def test_cbow_with_negative_sampling_trains_in_its_kernel_deterministically(wikitext_lines, monkeypatch):
    """``train_word2vec`` sends CBOW with negative sampling to ``negative_sampling_kernel`` (and CBOW with
    hierarchical softmax to the generic kernel); one worker and one seed give the same vectors."""
    from hf_lineage.word_vector_trainers import word2vec_kernels

    sizes = []
    real = word2vec_kernels.negative_sampling_kernel
    monkeypatch.setattr(word2vec_kernels, "negative_sampling_kernel",
                        lambda d, skipgram: sizes.append((d, skipgram)) or real(d, skipgram))

    def run(seed, **kwargs):
        model = train_word2vec(wikitext_lines[:300], workers=1, seed=seed, min_count=2, epochs=1, vector_size=20,
                               architecture="cbow", **kwargs)[0]
        return model.word2vec.input_vectors.weight.detach().clone()

    first = run(7)
    assert sizes == [(20, False)]
    assert torch.equal(first, run(7)) and not torch.equal(first, run(8))
    run(7, negative=0, hs=True)
    assert sizes == [(20, False)] * 3


def test_shared_negatives_window_step_is_the_matrix_products():
    """One hand-made window: the kernel's step equals the NumPy products with the noise words it draws (known from
    the same generator), a draw equal to the centre word dropped, repeated noise words both applied."""
    from hf_lineage.word_vector_trainers.word2vec_kernels import _draw_outputs, _skipgram_shared_window, exp_table

    d, negative, centre = 8, 6, 5
    rng = np.random.default_rng(3)
    syn0 = rng.normal(0, 0.6, (10, d)).astype(np.float32)
    syn1neg = rng.normal(0, 0.6, (10, d)).astype(np.float32)
    noise = alias_table(np.array([0, 0, 0, 0, 0, 0.4, 0, 0.3, 0.2, 0.1]))

    def outputs_of(seed):  # the draws the kernel makes from state seed | 1, a draw equal to the centre dropped
        return [centre] + [int(w) for w in draw_noise_words(*noise, negative, seed) if w != centre]

    # a seed whose draws include the centre word (dropped) and a repeated noise word (applied twice)
    seed = next(s for s in range(1, 500) if 2 < len(outputs_of(s)) < negative + 1
                and len(set(outputs_of(s))) < len(outputs_of(s)))
    outputs = outputs_of(seed)
    syn1neg[outputs[-1]] = 8 * syn0[4] / (syn0[4] @ syn0[4])  # a product past 6: a clipped gradient
    sentence = np.array([4, 6, 5, 9, 4], dtype=np.int32)  # context word 4 twice
    context = [4, 6, 9, 4]
    table = exp_table()
    assert np.abs(syn0[context] @ syn1neg[outputs].T).max() > 6
    expected0, expected1 = syn0.copy(), syn1neg.copy()
    shared_window_reference(expected0, expected1, context, outputs, table, np.float32(0.1))
    before = syn0.copy()
    window = 2 * 3
    outs = np.empty(negative + 1, np.int32)
    m, _ = _draw_outputs(centre, np.uint64(seed | 1), negative, *noise, outs, syn1neg, d)
    assert outs[:m].tolist() == outputs
    _skipgram_shared_window(syn0, syn1neg, sentence, 0, 5, 2, outs, m, np.float32(0.1),
                            np.empty((window, negative + 1), np.float32), np.empty((window, d), np.float32), d, table)
    np.testing.assert_allclose(syn0, expected0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(syn1neg, expected1, rtol=1e-5, atol=1e-6)
    assert np.abs(syn0 - before).max() > 1e-2
    np.testing.assert_array_equal(syn0[[0, 1, 2, 3, 5, 7, 8]], before[[0, 1, 2, 3, 5, 7, 8]])  # only the context


def planted_corpus(groups=8, size=4, sentences=1500, length=12, seed=0):
    """Sentences each drawn from one group of ``size`` words (word g_k as "g{g}w{k}"): words of a group always
    co-occur, words of different groups never do."""
    rng = np.random.default_rng(seed)
    return [[f"g{g}w{k}" for k in rng.integers(0, size, length)] for g in rng.integers(0, groups, sentences)]


@pytest.mark.parametrize("shared", [True, False])
def test_both_kernels_recover_planted_co_occurrence_groups(shared):
    corpus = planted_corpus()
    model, tokenizer = train_word2vec(corpus, architecture="skipgram", vector_size=16, window=3, negative=5,
                                      min_count=1, sample=0.0, epochs=3, workers=1, seed=1, shared_negatives=shared)
    assert model.train_results["shared_negatives"] is shared
    words = sorted({w for line in corpus for w in line})
    ids = tokenizer.convert_tokens_to_ids(words)
    x = model.word2vec.input_vectors.weight.detach().numpy()[ids]
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    cos = x @ x.T
    np.fill_diagonal(cos, -2)
    group = np.array([w.split("w")[0] for w in words])
    neighbours = cos.argsort(1)[:, ::-1][:, :3]  # the 3 nearest: the rest of the word's group
    assert (group[neighbours] == group[:, None]).all()
    same = group[:, None] == group[None, :]
    np.fill_diagonal(same, False)
    assert cos[same].mean() > cos[~same & (cos > -2)].mean() + 0.5


def test_shared_negatives_one_worker_is_deterministic_and_differs_from_classic(wikitext_lines):
    def run(seed, shared=True):
        model = train_word2vec(wikitext_lines[:300], workers=1, seed=seed, min_count=2, epochs=1, vector_size=20,
                               architecture="skipgram", shared_negatives=shared)[0]
        return model.word2vec.input_vectors.weight.detach().clone()

    first = run(7)
    assert torch.equal(first, run(7))
    assert not torch.equal(first, run(8))
    assert not torch.equal(first, run(7, shared=False))  # the flag reaches the kernel


# --------------------------------------------------------------------------- the CPU trainer against gensim


def similarity_agreement(a, b, words, pairs=3000, seed=0):
    """Spearman correlation between two models' cosine similarities over random pairs of ``words``."""
    from scipy.stats import spearmanr

    rng = np.random.default_rng(seed)
    i, j = rng.integers(0, len(words), (2, pairs))
    keep = i != j

    def cos(vectors):
        x = np.stack([vectors[w] for w in words])
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        return (x[i[keep]] * x[j[keep]]).sum(1)

    return spearmanr(cos(a), cos(b)).statistic


@pytest.mark.parametrize("architecture, negative, hs", [
    ("skipgram", 5, False), ("cbow", 5, False), ("skipgram", 0, True), ("cbow", 0, True),
])
def test_trained_vectors_agree_with_gensims_as_much_as_gensims_own_reruns(wikitext_lines, architecture, negative,
                                                                           hs):
    settings = dict(vector_size=50, window=5, min_count=5, sample=1e-3, negative=negative, hs=hs, epochs=2,
                    alpha=0.025 if architecture == "skipgram" else 0.05)
    sg = int(architecture == "skipgram")
    gensim_settings = {**settings, "hs": int(hs), "sg": sg, "workers": 2}
    g1 = Word2Vec(wikitext_lines, seed=1, **gensim_settings).wv
    g2 = Word2Vec(wikitext_lines, seed=2, **gensim_settings).wv
    # one worker: our run is deterministic (gensim's two workers make its reference spread realistic)
    model, tokenizer = train_word2vec(wikitext_lines, architecture=architecture, workers=1, seed=1, **settings)
    trained = np.flatnonzero(model.word_counts.numpy())
    ours = dict(zip(tokenizer.convert_ids_to_tokens(trained.tolist()),
                    model.word2vec.input_vectors.weight.detach().numpy()[trained]))
    assert set(ours) == set(g1.index_to_key)  # same vocabulary after min_count
    words = g1.index_to_key[20:1020]  # frequent words, past the stop words
    reference = similarity_agreement(g1, g2, words)
    agreement = similarity_agreement(ours, g1, words)
    rng = np.random.default_rng(0)
    untrained = similarity_agreement({w: rng.uniform(-1, 1, size=50) for w in words}, g1, words)
    assert reference > 0.4 and abs(untrained) < 0.1
    assert agreement > reference - 0.1, (agreement, reference)
    # Related words are closer than random pairs are (as a percentile of the random pairs' similarities), in ours
    # as in gensim's. Raw cosines are high for any pair after this little training: a shared direction dominates.
    related = [("he", "she"), ("his", "her"), ("January", "February"), ("first", "second"), ("city", "town")]

    def percentile(vectors):
        def cos(a, b):
            return float(vectors[a] @ vectors[b] / np.linalg.norm(vectors[a]) / np.linalg.norm(vectors[b]))

        background = np.array([cos(a, b) for a, b in zip(words[::7], words[3::7])])
        return np.mean([(background < cos(a, b)).mean() for a, b in related])

    assert percentile(ours) > 0.5 and percentile(ours) > percentile(g1) - 0.2, (percentile(ours), percentile(g1))


def test_one_worker_is_deterministic_and_the_results_report_words_per_second(wikitext_lines):
    runs = [train_word2vec(wikitext_lines[:300], workers=1, seed=7, min_count=2, epochs=1, vector_size=20)[0]
            for _ in range(2)]
    assert torch.equal(runs[0].word2vec.input_vectors.weight, runs[1].word2vec.input_vectors.weight)
    results = runs[0].train_results
    assert 0 < results["effective_words"] < results["raw_words"]  # subsampling dropped frequent words
    assert results["effective_words_per_second"] > 0 and results["words_per_second"] > 0
    changed = train_word2vec(wikitext_lines[:300], workers=1, seed=8, min_count=2, epochs=1, vector_size=20)[0]
    assert not torch.equal(changed.word2vec.input_vectors.weight, runs[0].word2vec.input_vectors.weight)


# --------------------------------------------------------------------------- CLI: both backends, bad input


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory, wikitext_lines):
    path = tmp_path_factory.mktemp("w2v") / "corpus.txt"
    path.write_text("\n".join(" ".join(line) for line in wikitext_lines[:400]) + "\n", encoding="utf-8")
    return path


def _initial_and_final_loss(out, corpus_file):
    model = LineageWord2VecForPreTraining.from_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    collate = DataCollatorForWord2Vec(model.word_counts.numpy(), model.config)
    lines = corpus_file.read_text().splitlines()[:40]
    batch = collate([{"input_ids": tokenizer(line, add_special_tokens=False)["input_ids"], "mask_seed": i}
                     for i, line in enumerate(lines)])
    fresh = LineageWord2VecForPreTraining(model.config)
    with torch.no_grad():
        return fresh(**batch).loss.item(), model(**batch).loss.item()


def test_engine_backend_trains_end_to_end_through_the_cli(tmp_path, corpus_file):
    out = tmp_path / "engine"
    code = cli_main(["pretrain", "word2vec", "--config", "tiny", "--backend", "engine", "--train-file",
                     str(corpus_file), "--output-dir",
                     str(out), "--set", "min_count=3", "--set", "epochs=2", "--per-device-batch-size", "8",
                     "--report-to", "none"])
    assert code == 0
    results = json.loads((out / "train_results.json").read_text())
    assert results["step"] == 2 * results["steps_per_epoch"] and results["train_tokens_per_second"] > 0
    assert isinstance(AutoModel.from_pretrained(out), LineageWord2VecModel)
    initial, final = _initial_and_final_loss(out, corpus_file)
    # zero output vectors: log 2 for the label and each of the 3 noise words (fewer when one equals the label)
    assert 3.5 * math.log(2) < initial <= 4 * math.log(2) + 1e-6
    assert final < initial - 0.3


def test_cpu_backend_writes_the_same_kind_of_folder(tmp_path, corpus_file):
    out = tmp_path / "cpu"
    code = cli_main(["pretrain", "word2vec", "--config", "tiny", "--backend", "cpu", "--train-file",
                     str(corpus_file), "--output-dir",
                     str(out), "--set", "min_count=3", "--set", "epochs=3"])
    assert code == 0
    results = json.loads((out / "train_results.json").read_text())
    assert results["backend"] == "cpu" and results["epochs"] == 3 and results["effective_words_per_second"] > 0
    model = AutoModelForPreTraining.from_pretrained(out)
    assert model.word_counts.sum() > 0 and model.word_counts[:4].sum() == 0
    initial, final = _initial_and_final_loss(out, corpus_file)
    assert final < initial - 0.15


@pytest.mark.parametrize("backend", ["cpu", "engine"])
def test_vocabulary_empty_after_min_count_is_exit_2_before_writing(tmp_path, corpus_file, backend, capsys):
    out = tmp_path / "out"
    code = cli_main(["pretrain", "word2vec", "--config", "tiny", "--backend", backend, "--train-file", str(corpus_file),
                     "--output-dir", str(out), "--set", "min_count=100000", "--report-to", "none"])
    assert code == 2 and not out.exists()
    assert "min_count=100000" in capsys.readouterr().err


def test_empty_corpus_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        train_word2vec([], min_count=1)
    with pytest.raises(ValueError, match="empty"):
        train_word2vec([[], []], min_count=1)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    with pytest.raises(ValueError, match="empty"):
        train_word2vec(str(empty), min_count=1)
    assert cli_main(["pretrain", "word2vec", "--config", "tiny", "--train-file", str(empty), "--output-dir",
                     str(tmp_path / "o")]) == 2
    with pytest.raises(ValueError, match="min_count=50"):
        train_word2vec([["a", "b"]] * 3, min_count=50)
    with pytest.raises(ValueError, match="not found"):
        train_word2vec(str(tmp_path / "missing.txt"))
    with pytest.raises(ValueError, match="negative=0 and hs=False"):
        train_word2vec([["a", "b"]] * 3, min_count=1, negative=0)


@pytest.mark.parametrize("architecture", ["cbow", "skipgram"])
def test_a_diverging_run_stops_after_its_epoch_in_one_line_and_saves_nothing(tmp_path, corpus_file, capsys,
                                                                             architecture):
    """An absurd learning rate (alpha = 10⁶) certainly diverges: the trainer stops after the first epoch whose
    vectors are not finite or longer than ``sanity.MAX_SANE_NORM``, says which, and writes no folder."""
    out = tmp_path / "out"
    code = cli_main(["pretrain", "word2vec", "--config", "tiny", "--backend", "cpu", "--train-file", str(corpus_file),
                     "--output-dir", str(out), "--set", "min_count=3", "--set", "epochs=3", "--set",
                     f"architecture={architecture}", "--set", "alpha=1000000"])
    error = [line for line in capsys.readouterr().err.splitlines() if line.startswith("hf-lineage pretrain")]
    assert code == 2 and not out.exists()
    assert len(error) == 1 and "word2vec diverged in epoch 1 of 3: input vectors:" in error[0], error
    assert "nothing was saved. Lower alpha (it was 1e+06)" in error[0]


def test_the_vector_check_counts_non_finite_and_overlong_rows():
    from hf_lineage.word_vector_trainers.sanity import MAX_SANE_NORM, DivergedError, check_vectors

    sound = np.full((5, 4), MAX_SANE_NORM / 2 / 2, dtype=np.float32)  # norms MAX_SANE_NORM / 2
    check_vectors("word2vec", 1, 2, "", {"input vectors": sound, "output vectors": np.zeros((0, 4), np.float32)})
    broken = sound.copy()
    broken[1, 2], broken[3] = np.nan, 2 * MAX_SANE_NORM
    with pytest.raises(DivergedError) as error:
        check_vectors("word2vec", 2, 5, "Lower alpha.", {"input vectors": sound, "output vectors": broken})
    assert str(error.value) == ("word2vec diverged in epoch 2 of 5: output vectors: 1 of 5 rows not finite, 1 of 5 "
                                "rows longer than 1e+03 (largest norm 4e+03); nothing was saved. Lower alpha.")
