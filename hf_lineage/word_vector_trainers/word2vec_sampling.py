"""word2vec's vocabulary-derived tables and the engine path's batch builder.

The tables follow the C tool (word2vec.c) and gensim 4, computed from the corpus count of each token id:

* ``trainable_counts``: the counts with the tokenizer's specials (and words under ``min_count``) set to 0 —
  such ids are never trained, like the words gensim leaves out of its vocabulary;
* ``huffman_tree``: each word's code (0/1 per level) and path of inner nodes, equal to gensim's
  ``_assign_binary_codes`` for the same counts (same heap, same tie-breaking);
* ``noise_distribution``: the unigram distribution raised to ``ns_exponent`` (gensim's ``cum_table`` in
  probability form), and ``alias_table`` to draw from it in O(1);
* ``keep_probabilities``: the chance a word survives frequent-word subsampling, (sqrt(f/(s·T)) + 1)·(s·T)/f;
* ``learning_rate``: alpha decaying linearly to min_alpha over all words of all epochs.

This module is the one home of those tables, for both ways word2vec trains:

* the engine path: ``DataCollatorForWord2Vec`` turns sentences of token ids into the training items
  ``LineageWord2VecForPreTraining`` takes (subsampling, the dynamic window, noise words, Huffman paths), drawn from
  each example's ``mask_seed`` so a batch is the same whichever process, batch or resumed run builds it;
* the CPU trainer: ``sampling_tables`` gives the same tables as the plain integer arrays its numba kernels read
  (``word2vec_kernels`` beside this module), built in one call.

It depends on numpy and torch only; what reads a corpus or builds a model is ``hf_lineage.objectives.word2vec``
(the engine's objective, which imports this module) and ``word2vec.py`` beside it (the CPU trainer).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch

# gensim's MAX_WORDS_IN_BATCH: longer sentences are cut into pieces of at most this many words.
MAX_SENTENCE_WORDS = 10_000


def trainable_counts(counts, special_ids=(), min_count: int = 0) -> np.ndarray:
    """Counts (int64, by token id) with ``special_ids`` and every count below ``min_count`` set to 0.

    >>> trainable_counts([5, 9, 0, 0, 7, 1], special_ids=[0, 1, 2, 3], min_count=2).tolist()
    [0, 0, 0, 0, 7, 0]
    """
    counts = np.array(counts, dtype=np.int64)
    if counts.ndim != 1:
        raise ValueError(f"counts must be one count per token id, got shape {counts.shape}")
    if (counts < 0).any():
        raise ValueError("counts must be >= 0")
    counts[list(special_ids)] = 0
    counts[counts < min_count] = 0
    return counts


def check_vocabulary(counts: np.ndarray, min_count: int) -> None:
    """ValueError when no word is left to train."""
    if not (counts > 0).any():
        raise ValueError(
            f"The vocabulary is empty after min_count={min_count}: no word occurs at least {min_count} times in "
            "the corpus. Give more text or a lower min_count."
        )


def keep_probabilities(counts: np.ndarray, sample: float) -> np.ndarray:
    """Probability (float64, by id) that one occurrence of a word survives frequent-word subsampling.

    The C tool's formula (not the paper's 1 - sqrt(t/f)): keep = (sqrt(c / (s·T)) + 1) · (s·T) / c, capped at 1,
    with c the word's count and T the number of words in the vocabulary's corpus; ``sample`` >= 1 means "threshold
    count" as in gensim. Ids with count 0 get 0. gensim stores ``uint32(keep · (2**32 - 1))`` as ``sample_int``.
    """
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    if not sample:
        threshold = total
    elif sample < 1.0:
        threshold = sample * total
    else:
        threshold = int(sample * (3 + np.sqrt(5)) / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        keep = (np.sqrt(counts / threshold) + 1) * (threshold / counts)
    keep = np.minimum(keep, 1.0)
    keep[counts == 0] = 0.0
    return keep


def sample_ints(keep: np.ndarray) -> np.ndarray:
    """gensim's ``sample_int``: the keep probability as a uint32 threshold (a word is dropped when a random
    uint32 exceeds it)."""
    return (keep * (2**32 - 1)).astype(np.uint32)


def noise_distribution(counts: np.ndarray, ns_exponent: float) -> np.ndarray:
    """P(noise word = id) ∝ count^ns_exponent over ids with count > 0 (0 elsewhere), float64."""
    counts = np.asarray(counts, dtype=np.float64)
    weights = np.zeros_like(counts)
    present = counts > 0
    weights[present] = counts[present] ** float(ns_exponent)
    return weights / weights.sum()


def alias_table(probabilities: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Walker's alias method over the ids with probability > 0: ``(ids, alias_ids, thresholds)``.

    To draw: pick a slot i uniformly, then ``ids[i]`` if a uniform uint32 is below ``thresholds[i]``, else
    ``alias_ids[i]``. Two small arrays (hot in cache) instead of the C tool's 10⁸-entry table, and exact.
    """
    ids = np.flatnonzero(probabilities > 0).astype(np.int32)
    n = len(ids)
    scaled = probabilities[ids] * n
    alias = ids.copy()
    small = [i for i in range(n) if scaled[i] < 1.0]
    large = [i for i in range(n) if scaled[i] >= 1.0]
    while small and large:
        s, g = small.pop(), large.pop()
        alias[s] = ids[g]
        scaled[g] -= 1.0 - scaled[s]
        (small if scaled[g] < 1.0 else large).append(g)
    for i in small + large:  # numerically 1: always take the own id
        scaled[i] = 1.0
    thresholds = np.minimum(np.round(scaled * 2.0**32), 2**32 - 1).astype(np.uint32)
    thresholds[scaled >= 1.0] = np.uint32(2**32 - 1)
    return ids, alias.astype(np.int32), thresholds


def alias_probabilities(ids: np.ndarray, alias: np.ndarray, thresholds: np.ndarray, size: int) -> np.ndarray:
    """The distribution an alias table draws from (for tests): P(id), float64, length ``size``."""
    p = np.zeros(size)
    own = np.where(thresholds == 2**32 - 1, 1.0, thresholds / 2.0**32)
    np.add.at(p, ids, own / len(ids))
    np.add.at(p, alias, (1.0 - own) / len(ids))
    return p


@dataclass
class HuffmanTree:
    """Per token id: ``codes`` (V, L) uint8 and ``points`` (V, L) int32 (inner-node rows, root first), valid up
    to ``lengths`` (V,). Ids with count 0 have length 0."""

    codes: np.ndarray
    points: np.ndarray
    lengths: np.ndarray


class _HeapItem:
    """gensim's Heapitem: compared on the count only, so ties resolve as in gensim's heap."""

    __slots__ = ("count", "index", "left", "right")

    def __init__(self, count, index, left=None, right=None):
        self.count, self.index, self.left, self.right = count, index, left, right

    def __lt__(self, other):
        return self.count < other.count


def huffman_tree(counts: np.ndarray) -> HuffmanTree:
    """The Huffman tree of the words with count > 0, built exactly as gensim 4 builds it (``_build_heap`` and
    ``_assign_binary_codes``): the same codes and inner-node numbers for the same counts in the same order.

    >>> tree = huffman_tree(np.array([0, 0, 0, 0, 5, 3, 2]))
    >>> tree.codes[4, :tree.lengths[4]].tolist(), tree.points[4, :tree.lengths[4]].tolist()
    ([0], [1])
    """
    words = np.flatnonzero(np.asarray(counts) > 0)
    n = len(words)
    V = len(counts)
    heap = [_HeapItem(int(counts[w]), i) for i, w in enumerate(words)]
    heapq.heapify(heap)
    for i in range(n - 1):
        a, b = heapq.heappop(heap), heapq.heappop(heap)
        heapq.heappush(heap, _HeapItem(a.count + b.count, i + n, a, b))
    paths: dict[int, tuple[list[int], list[int]]] = {}
    stack = [(heap[0], [], [])] if heap else []
    while stack:
        node, code, point = stack.pop()
        if node.index < n:
            paths[int(words[node.index])] = (code, point)
        else:
            point = point + [node.index - n]
            stack.append((node.left, code + [0], point))
            stack.append((node.right, code + [1], point))
    depth = max((len(c) for c, _ in paths.values()), default=0)
    codes = np.zeros((V, max(depth, 1)), dtype=np.uint8)
    points = np.zeros((V, max(depth, 1)), dtype=np.int32)
    lengths = np.zeros(V, dtype=np.int32)
    for w, (code, point) in paths.items():
        lengths[w] = len(code)
        codes[w, : len(code)] = code
        points[w, : len(point)] = point
    return HuffmanTree(codes, points, lengths)


class SamplingTables(NamedTuple):
    """The tables of one vocabulary as the CPU kernels read them, all plain arrays indexed by token id.

    ``keep``: uint32 subsampling threshold (``sample_ints``), 0 only for ids never trained; ``noise_*``: the alias
    table of the noise distribution; ``points``, ``codes``, ``lengths``: the Huffman tree (one dummy row without
    hierarchical softmax, which then never reads it). The fields are in the order the kernel
    (``word2vec_kernels.train_sentences``) takes them."""

    keep: np.ndarray
    noise_ids: np.ndarray
    noise_alias: np.ndarray
    noise_thresholds: np.ndarray
    points: np.ndarray
    codes: np.ndarray
    lengths: np.ndarray


def sampling_tables(counts: np.ndarray, sample: float, ns_exponent: float, hs: bool) -> SamplingTables:
    """The ``SamplingTables`` of trainable ``counts`` (from ``trainable_counts``) for a config's ``sample``,
    ``ns_exponent`` and ``hs``."""
    keep = sample_ints(keep_probabilities(counts, sample))
    keep[(counts > 0) & (keep == 0)] = 1  # a kept-with-probability-~0 word must not read as "never trained"
    if hs:
        tree = huffman_tree(counts)
    else:
        tree = HuffmanTree(np.zeros((1, 1), np.uint8), np.zeros((1, 1), np.int32), np.zeros(1, np.int32))
    return SamplingTables(keep, *alias_table(noise_distribution(counts, ns_exponent)), tree.points, tree.codes,
                          tree.lengths)


def learning_rate(alpha: float, min_alpha: float, words_done: float, total_words: float) -> float:
    """alpha decayed linearly to min_alpha as ``words_done`` goes from 0 to ``total_words`` (all epochs)."""
    progress = min(1.0, words_done / max(total_words, 1))
    return max(min_alpha, alpha - (alpha - min_alpha) * progress)


def chunk_sentence(ids, max_words: int = MAX_SENTENCE_WORDS) -> list:
    """A sentence longer than ``max_words`` cut into pieces of at most ``max_words`` (gensim truncates instead)."""
    return [ids[i : i + max_words] for i in range(0, len(ids), max_words)] if len(ids) else []


def sentence_starts(lengths, max_words: int = MAX_SENTENCE_WORDS) -> np.ndarray:
    """Where the sentences start (int64, and the end last) in lines of ``lengths`` words laid end to end, each line
    cut into sentences as ``chunk_sentence`` cuts it; empty lines hold no sentence.

    >>> sentence_starts([3, 0, 5], max_words=2).tolist()
    [0, 2, 3, 5, 7, 8]
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    lengths = lengths[lengths > 0]
    pieces = -(-lengths // max_words)  # sentences per line
    piece_lengths = np.full(int(pieces.sum()), max_words, dtype=np.int64)
    piece_lengths[np.cumsum(pieces) - 1] = lengths - (pieces - 1) * max_words  # each line's last piece: the rest
    starts = np.zeros(len(piece_lengths) + 1, dtype=np.int64)
    np.cumsum(piece_lengths, out=starts[1:])
    return starts


@dataclass
class DataCollatorForWord2Vec:
    """Builds the training items of a batch of sentences for ``LineageWord2VecForPreTraining``.

    Each example is ``{"input_ids": [...], "mask_seed": int}`` (the engine adds ``mask_seed``); its random
    choices — which words subsampling drops, each centre word's window, the noise words — come from a private
    generator seeded with ``mask_seed``, so they do not depend on the batch or the process.

    Skip-gram items are the C tool's pairs: each context word within the centre word's (randomly shrunk) window
    predicts the centre word. CBOW items are one per centre word with at least one context word.

    Example::

        >>> collate = DataCollatorForWord2Vec(counts, config)                        # doctest: +SKIP
        >>> batch = collate([{"input_ids": [5, 9, 7, 4], "mask_seed": 1}])          # doctest: +SKIP
        >>> model(**batch).loss                                                     # doctest: +SKIP
    """

    counts: Any  # (V,) trainable counts: 0 for ids never trained
    config: Any  # LineageWord2VecConfig

    def __post_init__(self):
        counts = np.asarray(self.counts, dtype=np.int64)
        check_vocabulary(counts, self.config.min_count)
        self._keep = torch.from_numpy(keep_probabilities(counts, self.config.sample))
        self._noise = torch.from_numpy(noise_distribution(counts, self.config.ns_exponent))
        if self.config.hs:
            tree = huffman_tree(counts)
            self._codes = torch.from_numpy(tree.codes.astype(np.int64))
            self._points = torch.from_numpy(tree.points.astype(np.int64))
            self._lengths = torch.from_numpy(tree.lengths.astype(np.int64))

    def _items(self, ids: torch.Tensor, generator: torch.Generator):
        """(inputs (N, C), input mask (N, C), labels (N,)) of one sentence."""
        ids = ids[self._keep[ids] > 0]  # specials and dropped words leave the sentence, as in gensim
        ids = ids[torch.rand(len(ids), generator=generator, dtype=torch.float64) < self._keep[ids]]
        T, W = len(ids), self.config.window
        shrink = torch.randint(0, W, (T,), generator=generator)  # the C tool's b: window W - b
        offsets = torch.cat([torch.arange(-W, 0), torch.arange(1, W + 1)])  # (2W,)
        positions = torch.arange(T)[:, None] + offsets  # (T, 2W)
        valid = (offsets.abs() <= W - shrink[:, None]) & (positions >= 0) & (positions < T)
        context = ids[positions.clamp(0, max(T - 1, 0))] if T else positions
        if self.config.architecture == "skipgram":
            centre, slot = valid.nonzero(as_tuple=True)
            return context[centre, slot][:, None], torch.ones(len(centre), 1, dtype=torch.long), ids[centre]
        has_context = valid.any(1)
        return (context * valid)[has_context], valid[has_context].long(), ids[has_context]

    def __call__(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        inputs, masks, labels = [], [], []
        negatives = []
        for example in examples:
            generator = torch.Generator().manual_seed(int(example.get("mask_seed", 0)))
            x, m, y = self._items(torch.as_tensor(example["input_ids"], dtype=torch.long), generator)
            inputs.append(x)
            masks.append(m)
            labels.append(y)
            if self.config.negative > 0:
                k = self.config.negative
                draws = torch.multinomial(self._noise, len(y) * k, replacement=True, generator=generator) \
                    if len(y) else torch.zeros(0, dtype=torch.long)
                negatives.append(draws.view(len(y), k))
        width = max(x.shape[1] for x in inputs)
        pad = lambda t: torch.nn.functional.pad(t, (0, width - t.shape[1]))  # noqa: E731
        labels = torch.cat(labels)
        batch = {"input_ids": torch.cat([pad(x) for x in inputs]), "attention_mask": torch.cat([pad(m) for m in masks]),
                 "labels": labels}
        if self.config.negative > 0:
            batch["negatives"] = torch.cat(negatives)
        if self.config.hs:
            L = max(int(self._lengths[labels].max()) if len(labels) else 1, 1)
            batch["hs_points"] = self._points[labels, :L]
            batch["hs_codes"] = self._codes[labels, :L]
            batch["hs_mask"] = (torch.arange(L) < self._lengths[labels][:, None]).long()
        return batch
