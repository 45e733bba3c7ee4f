"""The interpolated Kneser-Ney n-gram LM (``hf_lineage.minimal_pairs.kneser_ney``): every conditional distribution
sums to 1 at orders 2-5, for seen and unseen contexts, with modified and plain discounts; a bigram probability by
hand from Chen and Goodman's formula; the word-level model's stream, vocabulary and sentence scores."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

from hf_lineage.minimal_pairs.kneser_ney import KneserNey, WordKneserNey


def _stream(n=3000, vocab=40, seed=0):
    rng = random.Random(seed)
    words = list(range(vocab))
    weights = [1 / (i + 1) for i in words]  # Zipf-like: many rare words, so every count-of-count is present
    return rng.choices(words, weights, k=n)


@pytest.mark.parametrize("order", [2, 3, 4, 5])
@pytest.mark.parametrize("modified", [True, False])
def test_every_conditional_distribution_sums_to_one(order, modified):
    vocab = 50  # 10 ids never occur in the stream: unseen words get probability too
    ids = _stream(vocab=40)
    lm = KneserNey(ids, order=order, vocab_size=vocab, modified=modified)
    seen = [tuple(ids[t - order + 1:t]) for t in range(order - 1, 200)]
    rng = random.Random(order)
    unseen = [tuple(rng.randrange(vocab) for _ in range(order - 1)) for _ in range(20)]
    unseen += [tuple([45] * (order - 1)), tuple([0] * (order - 2) + [49])]  # words never seen as context
    assert any(h not in lm.total[order] for h in unseen)  # some contexts are truly unseen at the top order
    assert lm.check_normalised(seen + unseen) < 1e-9
    for h in unseen[:5]:
        vector = lm.prob_vector(h)
        assert (vector > 0).all()  # the uniform floor: no word has probability 0


def test_a_bigram_probability_by_hand():
    """P(b | a) from the formula with its three discounts, on a stream small enough to count by hand."""
    ids = [0, 1, 0, 1, 0, 2, 1, 2, 0, 1, 3, 1, 2, 2, 0, 1]
    lm = KneserNey(ids, order=2, vocab_size=5, modified=True)
    bigrams = Counter(zip(ids, ids[1:]))
    n = Counter(c for c in bigrams.values() if c <= 4)
    n1, n2, n3, n4 = (max(n[i], 1) for i in (1, 2, 3, 4))
    y = n1 / (n1 + 2 * n2)
    d = [min(max(v, 0.0), c) for c, v in zip((1, 2, 3), (1 - 2 * y * n2 / n1, 2 - 3 * y * n3 / n2,
                                                           3 - 4 * y * n4 / n3))]
    assert lm.discount[2] == pytest.approx(tuple(d))
    # The unigram level: continuation counts N1+(· w), interpolated with the uniform distribution.
    continuation = Counter(w for (_, w) in bigrams)
    total1 = sum(continuation.values())
    ucount = Counter(continuation.values())
    m1, m2, m3, m4 = (max(ucount[i], 1) for i in (1, 2, 3, 4))
    z = m1 / (m1 + 2 * m2)
    e = [min(max(v, 0.0), c) for c, v in zip((1, 2, 3), (1 - 2 * z * m2 / m1, 2 - 3 * z * m3 / m2,
                                                           3 - 4 * z * m4 / m3))]

    def disc(table, c):
        return table[0] if c == 1 else table[1] if c == 2 else table[2]

    gamma1 = sum(disc(e, c) for c in continuation.values()) / total1
    p1 = {w: (continuation[w] - disc(e, continuation[w]) if continuation[w] else 0.0) / total1 + gamma1 / 5
          for w in range(5)}
    after_zero = {w: c for (h, w), c in bigrams.items() if h == 0}
    total2 = sum(after_zero.values())
    gamma2 = sum(disc(d, c) for c in after_zero.values()) / total2
    for w in range(5):
        c = after_zero.get(w, 0)
        expected = (c - disc(d, c) if c else 0.0) / total2 + gamma2 * p1[w]
        assert lm.prob((0,), w) == pytest.approx(expected, rel=1e-12)
    assert lm.log_prob((0,), 1) == pytest.approx(math.log(lm.prob((0,), 1)))


def test_an_unseen_context_falls_back_to_the_lower_order_as_it_is():
    ids = _stream(n=500, vocab=20)
    lm = KneserNey(ids, order=3, vocab_size=25)
    assert (7, 24) not in lm.total[3] and (24,) not in lm.total[2]
    np.testing.assert_allclose(lm.prob_vector((7, 24)), lm.prob_vector(()), rtol=0, atol=1e-15)


def test_the_word_model_reads_lines_as_the_nnlm_reads_its_corpus():
    """``</s>`` after each non-blank line, order − 1 ``</s>`` before the stream; unknown words are ``<unk>``; a
    sentence is scored after ``</s>`` … ``</s>`` and no end marker is scored."""
    lines = ["the cat sat .", "", "the dog sat .", "a <unk> sat ."]
    lm = WordKneserNey(lines, order=3)
    v = lm.vocabulary
    assert (v["</s>"], v["<unk>"]) == (0, 1) and lm.words == 12 + 3  # 12 words and 3 </s>
    assert lm.encode(["the", "cow", "<unk>"]) == [v["the"], v["<unk>"], v["<unk>"]]
    words = ["the", "cow", "sat", "."]
    ids = [0, 0] + lm.encode(words)
    expected = sum(math.log(lm.model.prob(tuple(ids[t - 2:t]), ids[t])) for t in range(2, len(ids)))
    assert lm.sentence_log_prob(words) == pytest.approx(expected)
    assert lm.sentence_log_prob([]) == 0.0
    # The first word is predicted after the start context, as training lines start after </s>.
    assert lm.model.prob((0, 0), v["the"]) > lm.model.prob((0, 0), v["sat"])
    with pytest.raises(ValueError, match="no words"):
        WordKneserNey(["", "  "], order=2)
    with pytest.raises(ValueError, match="order of at least 2"):
        WordKneserNey(lines, order=1)
