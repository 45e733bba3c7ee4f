"""Interpolated Kneser-Ney n-gram language model (Chen and Goodman 1998, "An Empirical Study of Smoothing
Techniques for Language Modeling", section 3.6 and the modified discounts of 4.1.6): the count-based language model
that Bengio et al.'s NNLM replaced. It scores minimal pairs beside the neural families (``hf-lineage evaluate
minimal-pairs --models kneser-ney:5``, through ``WordKneserNey``) and is the n-gram baseline of
``benchmarks/bench_nnlm_brown.py``. Pure Python and numpy; a trigram on a million words trains in seconds.

For order k and context h (the k − 1 previous words)::

    P_k(w | h) = max(c_k(h w) − D_k(c), 0) / c_k(h ·)  +  γ_k(h) · P_{k−1}(w | h minus its oldest word)
    γ_k(h)     = (D_k(1)·N1(h ·) + D_k(2)·N2(h ·) + D_k(3+)·N3+(h ·)) / c_k(h ·)

with c_n the raw counts at the highest order, and for lower orders the continuation counts
c_k(h w) = |{v : c_{k+1}(v h w) > 0}| (how many distinct words precede h w), the Kneser-Ney idea. Contexts never
seen fall back to the lower order entirely; the recursion ends in the uniform distribution over the vocabulary,
so every word of the vocabulary gets a non-zero probability and each P(· | h) sums to 1 (``check_normalised``).
``modified=False`` uses one discount D = n1 / (n1 + 2·n2) per order (plain interpolated Kneser-Ney).

Example::

    lm = KneserNey(train_ids, order=3, vocab_size=16000)
    lm.log_prob(history=(12, 7), word=42)
    lm.perplexity(test_ids)      # every word after the first order − 1 (the start context) is predicted

    words = WordKneserNey(open("wiki.train.tokens"), order=5)     # words of text lines, </s> after each line
    words.sentence_log_prob("Mary doesn 't like herself .".split())
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np


def _discounts(counts: dict, modified: bool) -> tuple[float, float, float]:
    """D(1), D(2), D(3+) from the count-of-counts n1..n4 (Chen and Goodman's estimates), kept in [0, c] (the
    estimates leave that range only on tiny or unnatural data)."""
    n = Counter(c for c in counts.values() if c <= 4)
    n1, n2, n3, n4 = (max(n[i], 1) for i in (1, 2, 3, 4))
    y = n1 / (n1 + 2 * n2)
    if not modified:
        return y, y, y
    estimates = (1 - 2 * y * n2 / n1, 2 - 3 * y * n3 / n2, 3 - 4 * y * n4 / n3)
    return tuple(min(max(d, 0.0), float(c)) for c, d in zip((1, 2, 3), estimates))


class KneserNey:
    def __init__(self, ids, order: int, vocab_size: int, modified: bool = True):
        ids = [int(i) for i in ids]
        if len(ids) <= order - 1:
            raise ValueError("the training stream has no n-gram")
        self.order, self.vocab_size = order, vocab_size
        # counts[k]: k-gram tuple -> count (raw for the highest order, continuation counts below)
        counts = {order: Counter(zip(*(ids[i : len(ids) - order + 1 + i] for i in range(order))))}
        for k in range(order - 1, 0, -1):
            counts[k] = Counter(gram[1:] for gram in counts[k + 1])  # distinct left extensions
        self.discount = {k: _discounts(counts[k], modified) for k in counts}
        # Per order and context: {word: count}, the context total and its γ numerator.
        self.table, self.total, self.backoff = {}, {}, {}
        for k, grams in counts.items():
            by_context = defaultdict(dict)
            for gram, c in grams.items():
                by_context[gram[:-1]][gram[-1]] = c
            self.table[k] = by_context
            self.total[k] = {h: sum(words.values()) for h, words in by_context.items()}
            self.backoff[k] = {h: sum(self._d(k, c) for c in words.values()) for h, words in by_context.items()}

    def _d(self, k, c):
        d1, d2, d3 = self.discount[k]
        return d1 if c == 1 else d2 if c == 2 else d3

    def prob(self, history: tuple, word: int) -> float:
        """P(word | history), history the order − 1 previous ids, oldest first."""
        p = 1.0 / self.vocab_size
        for k in range(1, self.order + 1):  # from the unigram up: each order interpolates with the one below
            h = tuple(history[len(history) - (k - 1) :]) if k > 1 else ()
            total = self.total[k].get(h)
            if not total:
                continue  # unseen context: the lower order's distribution as it is
            c = self.table[k][h].get(word, 0)
            p = (c - self._d(k, c) if c else 0.0) / total + self.backoff[k][h] / total * p
        return p

    def log_prob(self, history: tuple, word: int) -> float:
        """log P(word | history), natural log."""
        return math.log(self.prob(history, word))

    def prob_vector(self, history: tuple) -> np.ndarray:
        """P(· | history) over the whole vocabulary, (vocab_size,)."""
        p = np.full(self.vocab_size, 1.0 / self.vocab_size)
        for k in range(1, self.order + 1):
            h = tuple(history[len(history) - (k - 1) :]) if k > 1 else ()
            total = self.total[k].get(h)
            if not total:
                continue
            words = self.table[k][h]
            w = np.fromiter(words.keys(), dtype=np.int64, count=len(words))
            c = np.fromiter(words.values(), dtype=np.float64, count=len(words))
            d = np.select([c == 1, c == 2], self.discount[k][:2], self.discount[k][2])
            p = self.backoff[k][h] / total * p
            p[w] += (c - d) / total
        return p

    def token_log_probs(self, ids) -> np.ndarray:
        """Natural-log probability of every word of ``ids`` after the first order − 1 (its start context)."""
        ids = [int(i) for i in ids]
        n1 = self.order - 1
        return np.array([math.log(self.prob(tuple(ids[t - n1 : t]), ids[t])) for t in range(n1, len(ids))])

    def perplexity(self, ids) -> float:
        return float(np.exp(-self.token_log_probs(ids).mean()))

    def check_normalised(self, histories) -> float:
        """Largest |Σ_w P(w | h) − 1| over ``histories``, and that ``prob`` agrees with ``prob_vector``."""
        worst = 0.0
        for h in histories:
            vector = self.prob_vector(h)
            for w in (0, int(vector.argmax()), self.vocab_size - 1):
                assert abs(vector[w] - self.prob(h, w)) < 1e-12, (h, w)
            worst = max(worst, abs(vector.sum() - 1.0))
        return worst


START = "</s>"
UNKNOWN = "<unk>"


class WordKneserNey:
    """A Kneser-Ney language model over the words of text lines, read as the NNLM's pre-training reads its corpus
    (``hf_lineage.objectives.nnlm.word_stream``): one stream of the whitespace-separated words, each non-blank line
    followed by ``</s>``, the stream preceded by order − 1 ``</s>``; so a sentence is scored "after ``</s>``", where
    every training line starts. The vocabulary is every word of the text, ``</s>`` and ``<unk>`` (WikiText's own
    symbol for its rare words); a word the text never has is read as ``<unk>``.

        >>> lm = WordKneserNey(["the cat sat", "the dog sat"], order=2)
        >>> lm.encode(["the", "cow"]) == [lm.vocabulary["the"], lm.vocabulary["<unk>"]]
        True
    """

    def __init__(self, lines, order: int = 5, modified: bool = True):
        if not 2 <= order:
            raise ValueError(f"a Kneser-Ney model needs an order of at least 2, got {order}")
        self.order = order
        self.vocabulary = {START: 0, UNKNOWN: 1}
        ids = [0] * (order - 1)
        for line in lines:
            words = line.split()
            if not words:
                continue
            ids.extend(self.vocabulary.setdefault(word, len(self.vocabulary)) for word in words)
            ids.append(0)
        if len(ids) == order - 1:
            raise ValueError("the n-gram training text has no words")
        self.words = len(ids) - (order - 1)  # training tokens, </s> included
        self.model = KneserNey(ids, order=order, vocab_size=len(self.vocabulary), modified=modified)

    def encode(self, words) -> list[int]:
        unknown = self.vocabulary[UNKNOWN]
        return [self.vocabulary.get(word, unknown) for word in words]

    def sentence_log_prob(self, words) -> float:
        """Σ_t log P(w_t | the order − 1 words before it), the first word's context ``</s>`` … ``</s>``; no end
        marker is scored (as the neural causal LMs are scored)."""
        ids = [0] * (self.order - 1) + self.encode(words)
        return float(self.model.token_log_probs(ids).sum()) if len(ids) >= self.order else 0.0
