"""word2vec on CPU: the C tool's Hogwild SGD in numba, and the threads that run it (``train_hogwild``).

Each worker thread takes a job (a run of sentences, ~``JOB_WORDS`` words) and trains on it in a numba kernel that
holds no GIL, updating the shared float32 matrices without locks, as word2vec.c's threads and gensim's workers do.
What the kernel does per sentence is word2vec.c's ``TrainModelThread``:

1. frequent-word subsampling: a word is dropped when a random uint32 exceeds its ``sample_int`` (gensim's form
   of the C formula);
2. for each centre word, a window shrunk by b ~ U{0 .. window-1};
3. skip-gram: every context word's input vector predicts the centre word; CBOW: the sum (or mean) of the
   context vectors predicts it;
4. hierarchical softmax along the centre word's Huffman path and/or negative sampling with ``negative`` noise
   words (a noise word equal to the centre word is skipped); σ from a table of 1,001 points over [-6, 6]; the error is
   accumulated and added to the input vector(s) once per prediction;
5. alpha decays linearly with the number of words processed, over all epochs.

Where it departs from word2vec.c, for speed only: noise words are drawn with the alias method (two small tables,
exact) instead of a 10⁸-entry table, and the random generator is xorshift64* (the C tool's is a 48-bit LCG).

``shared_negatives=True`` (the default of ``hf_lineage.train_word2vec``) swaps step 3-4 for skip-gram with negative
sampling for pWord2Vec's (Ji et al., "Parallelizing Word2Vec in Shared and Distributed Memory", 2016/2019): the
noise words are drawn once per centre word and shared by all its context words, so the window's updates are small
matrix products (``_skipgram_shared_window``), 1.7-2× the pair-by-pair kernel's speed at the same analogy and
WordSim353 quality (docs/benchmarks.md). CBOW and hierarchical softmax train as word2vec.c does either way.

Negative sampling without hierarchical softmax (CBOW, and skip-gram with shared negatives: the defaults) has a
kernel of its own (``negative_sampling_kernel``), compiled per vector size: with the size a compile-time constant
LLVM vectorises the row loops for exactly that length (no run-time-length loop tails), and the next centre word's
window and noise words are drawn, and their rows prefetched, while the current one trains. Same algorithms and
random numbers as the generic kernel, but CBOW's centre word's and noise words' gradients and its input error are
all taken from the output vectors before any of them is updated (the C tool updates each output before the next
dot product, which differs only when a noise word is drawn twice for one centre word: both of its updates then
start from the value before the step, as in pWord2Vec's kernel).

Arrays in, arrays out: the corpus as token ids, the weight matrices (trained in place) and the vocabulary's tables
(``word2vec_sampling.sampling_tables``, their one home); before training, ``first_seen_ids`` numbers the words of a
corpus file's bytes, from which ``word2vec.read_and_encode_corpus`` builds the vocabulary and the ids in one pass.
Reading text, building the tokenizer, config and model, and saving are ``hf_lineage.train_word2vec`` (``word2vec.py``
beside this module); this module imports nothing from the package, so the kernels can be read, tested and timed on
arrays alone.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .sanity import check_vectors

logger = logging.getLogger(__name__)

EXP_TABLE_SIZE = 1000
MAX_EXP = 6.0
# Words per job: large enough that the Python dispatch per job is noise, small enough to spread evenly on threads
# and to update the learning rate and the progress often.
JOB_WORDS = 50_000

# xorshift64* constants; numba needs uint64 operands on both sides of every operation (mixed signedness → float).
_U12, _U25, _U27, _U32 = np.uint64(12), np.uint64(25), np.uint64(27), np.uint64(32)
_MULT = np.uint64(0x2545F4914F6CDD1D)
_MASK32 = np.uint64(0xFFFFFFFF)


def exp_table() -> np.ndarray:
    """word2vec.c's table of σ at EXP_TABLE_SIZE + 1 points of [-MAX_EXP, MAX_EXP], σ(MAX_EXP) the last.

    The kernels look σ(f) up for -MAX_EXP <= f <= MAX_EXP (``_sigmoid``), and f == MAX_EXP exactly maps to index
    EXP_TABLE_SIZE. word2vec.c allocates that entry but never fills it; a table of EXP_TABLE_SIZE entries made
    every dot product of exactly 6.0 read the float after the array's end (numba checks no bounds): whatever
    memory held there became σ, and a large value sent one update, and then the vectors, off to 10¹⁷ (CBOW with
    two workers diverged in 2 of 5 runs at 20 M words × 5 epochs; docs/benchmarks.md)."""
    x = (np.arange(EXP_TABLE_SIZE + 1, dtype=np.float64) / EXP_TABLE_SIZE * 2 - 1) * MAX_EXP
    e = np.exp(x)
    return (e / (e + 1)).astype(np.float32)


@njit(nogil=True, cache=True, inline="always")
def _next(state):
    state ^= state >> _U12
    state ^= state << _U25
    state ^= state >> _U27
    return state


@njit(nogil=True, cache=True, inline="always")
def _draw_noise(state, noise_ids, noise_alias, noise_thresholds):
    """One noise word by the alias method: the high 32 bits pick a slot (multiply-shift, no modulo), the low
    32 bits choose between the slot's own word and its alias."""
    r = state * _MULT
    slot = ((r >> _U32) * np.uint64(len(noise_ids))) >> _U32
    if (r & _MASK32) < np.uint64(noise_thresholds[slot]):
        return noise_ids[slot]
    return noise_alias[slot]


@intrinsic
def _prefetch(typingctx, matrix, row, column):
    """Ask the CPU to bring the cache line holding ``matrix[row, column]`` (a C-contiguous 2-D array) into every
    cache level, for writing (LLVM's ``llvm.prefetch``); it returns at once and never faults."""
    def codegen(context, builder, signature, args):
        matrix_type, row_type, column_type = signature.args
        array = context.make_array(matrix_type)(context, builder, args[0])
        index = [context.cast(builder, args[1], row_type, types.intp),
                 context.cast(builder, args[2], column_type, types.intp)]
        pointer = cgutils.get_item_pointer(context, builder, matrix_type, array, index, wraparound=False)
        byte_pointer = ir.IntType(8).as_pointer()
        prefetch = cgutils.get_or_insert_function(builder.module, ir.FunctionType(
            ir.VoidType(), [byte_pointer, ir.IntType(32), ir.IntType(32), ir.IntType(32)]), "llvm.prefetch.p0")
        write, all_levels, data = (ir.Constant(ir.IntType(32), v) for v in (1, 3, 1))
        builder.call(prefetch, [builder.bitcast(pointer, byte_pointer), write, all_levels, data])
        return context.get_dummy_value()

    return types.void(matrix, row, column), codegen


@njit(nogil=True, cache=True, inline="always")
def _prefetch_row(matrix, row, d):
    """``_prefetch`` every cache line of ``matrix[row, :d]`` (float32: 16 to a 64-byte line; a row of d = 100
    starts anywhere in a line, so its last float is fetched too)."""
    for k in range(0, d, 16):
        _prefetch(matrix, row, k)
    _prefetch(matrix, row, d - 1)


@njit(nogil=True, cache=True, inline="always")
def _subsample(corpus, starts, s, keep, state, sentence):
    """Sentence ``s``'s words that survive frequent-word subsampling, written to ``sentence``; (their number, the
    generator state)."""
    n = 0
    for p in range(starts[s], starts[s + 1]):
        w = corpus[p]
        threshold = keep[w]
        if threshold == 0:  # never trained (specials, words under min_count)
            continue
        if threshold != 0xFFFFFFFF:
            state = _next(state)
            if np.uint64(threshold) < ((state * _MULT) & _MASK32):
                continue
        sentence[n] = w
        n += 1
    return n, state


@njit(nogil=True, cache=True, inline="always")
def _window(state, window, i, n):
    """(lo, hi, state): centre word ``i``'s window in a sentence of ``n`` kept words, ``lo .. hi - 1`` (``i``
    included), shrunk by b ~ U{0 .. window-1} on each side."""
    state = _next(state)
    b = int(((state * _MULT) >> _U32) % np.uint64(window))
    return max(0, i - window + b), min(n, i + window + 1 - b), state


@njit(nogil=True, cache=True, inline="always")
def _draw_outputs(centre, state, negative, noise_ids, noise_alias, noise_thresholds, outs, syn1neg, d):
    """The outputs one centre word's context predicts, written to ``outs``: the centre word, then ``negative``
    noise words (a draw equal to the centre word dropped); their rows of ``syn1neg`` are prefetched. Returns (their
    number, the generator state)."""
    outs[0] = centre
    _prefetch_row(syn1neg, centre, d)
    m = 1
    for _ in range(negative):
        state = _next(state)
        word = _draw_noise(state, noise_ids, noise_alias, noise_thresholds)
        if word != centre:
            outs[m] = word
            m += 1
            _prefetch_row(syn1neg, word, d)
    return m, state


@njit(nogil=True, fastmath=True, cache=True, inline="always")
def _sigmoid(f, table):
    return table[int((f + MAX_EXP) * (EXP_TABLE_SIZE / MAX_EXP / 2))]


@njit(nogil=True, fastmath=True, cache=True, inline="always")
def _predict(h, hr, target, state, alpha, neu1e, syn1neg, syn1, d, noise_ids, noise_alias, noise_thresholds,
             points, codes, lengths, negative, hs, table):
    """One prediction of ``target`` from the hidden vector ``h[hr]``: updates the output / inner-node vectors
    and accumulates the input-side error in ``neu1e`` (word2vec.c's inner loops). Returns the generator state.
    Rows are addressed as ``m[row, k]``, never sliced out: a slice is an array view whose reference count both
    threads would update atomically on every prediction; and ``k`` from ``range`` is known non-negative, so no
    negative-index check keeps the loops from vectorising (as flat ``m[row * d + k]`` would)."""
    if hs:
        for n in range(lengths[target]):
            row = points[target, n]
            f = np.float32(0.0)
            for k in range(d):
                f += h[hr, k] * syn1[row, k]
            if f <= -MAX_EXP or f >= MAX_EXP:
                continue
            g = (np.float32(1.0) - np.float32(codes[target, n]) - _sigmoid(f, table)) * alpha
            for k in range(d):
                neu1e[k] += g * syn1[row, k]
                syn1[row, k] += g * h[hr, k]
    for s in range(negative + 1 if negative > 0 else 0):
        if s == 0:
            word, label = target, np.float32(1.0)
        else:
            state = _next(state)
            word = _draw_noise(state, noise_ids, noise_alias, noise_thresholds)
            if word == target:
                continue
            label = np.float32(0.0)
        row = word
        f = np.float32(0.0)
        for k in range(d):
            f += h[hr, k] * syn1neg[row, k]
        if f > MAX_EXP:
            g = (label - np.float32(1.0)) * alpha
        elif f < -MAX_EXP:
            g = label * alpha
        else:
            g = (label - _sigmoid(f, table)) * alpha
        for k in range(d):
            neu1e[k] += g * syn1neg[row, k]
            syn1neg[row, k] += g * h[hr, k]
    return state


@njit(nogil=True, fastmath=True, cache=True, inline="always")
def _skipgram_shared_window(syn0, syn1neg, sentence, lo, hi, i, outs, m, alpha, grad, dinp, d, table):
    """pWord2Vec's skip-gram step with negative sampling (Ji et al. 2016): one centre word's window as a small
    matrix product. The ``c`` context words' input vectors (the rows ``syn0[sentence[j]]``, an implicit c × d
    matrix) all predict the same ``m`` outputs ``outs[:m]`` (``_draw_outputs``): the centre word (label 1) and the
    noise words drawn *once* for the window (label 0). So:

        G      = (labels - σ(In · Outᵀ)) · alpha           (c × m; σ clipped as in C)
        Out   += Gᵀ · In        In += G · Out               (both from the values before the step)

    ``grad`` (c × m) and ``dinp`` (c × d) are the caller's scratch buffers. The classic kernel does the same
    products one (context, output) pair at a time, with fresh negatives for every context word and each update
    applied before the next pair reads the vectors."""
    # G = (labels - σ(In · Outᵀ)) · alpha
    c = 0
    for j in range(lo, hi):
        if j == i:
            continue
        l1 = sentence[j]
        for s in range(m):
            row = outs[s]
            f = np.float32(0.0)
            for k in range(d):
                f += syn0[l1, k] * syn1neg[row, k]
            label = np.float32(1.0) if s == 0 else np.float32(0.0)
            if f > MAX_EXP:
                grad[c, s] = (label - np.float32(1.0)) * alpha
            elif f < -MAX_EXP:
                grad[c, s] = label * alpha
            else:
                grad[c, s] = (label - _sigmoid(f, table)) * alpha
        c += 1
    # ΔIn = G · Out (before Out changes)
    for r in range(c):
        for k in range(d):
            dinp[r, k] = 0.0
        for s in range(m):
            g = grad[r, s]
            row = outs[s]
            for k in range(d):
                dinp[r, k] += g * syn1neg[row, k]
    # Out += Gᵀ · In (In not changed yet)
    for s in range(m):
        row = outs[s]
        r = 0
        for j in range(lo, hi):
            if j == i:
                continue
            g = grad[r, s]
            l1 = sentence[j]
            for k in range(d):
                syn1neg[row, k] += g * syn0[l1, k]
            r += 1
    # In += ΔIn
    r = 0
    for j in range(lo, hi):
        if j == i:
            continue
        l1 = sentence[j]
        for k in range(d):
            syn0[l1, k] += dinp[r, k]
        r += 1


@njit(nogil=True, fastmath=True, cache=True)
def train_sentences(corpus, starts, first, last, syn0, syn1neg, syn1, keep, noise_ids, noise_alias,
                    noise_thresholds, points, codes, lengths, table, skipgram, cbow_mean, window, negative, hs,
                    alpha, min_alpha, words_before, total_words, seed, shared_negatives=False):
    """Train on sentences ``first .. last - 1`` of ``corpus`` (token ids; sentence i is
    ``corpus[starts[i]:starts[i + 1]]``). Returns (effective words, raw words): words kept after subsampling, and
    all words. The learning rate is recomputed every sentence from ``words_before`` + the words seen so far.
    ``shared_negatives`` (skip-gram with negative sampling only): one set of noise words per centre word's window
    and the window's updates as small matrix products (``_skipgram_shared_window``); hierarchical softmax, if on,
    is still done pair by pair before it."""
    d = syn0.shape[1]
    longest = 0
    for s in range(first, last):
        longest = max(longest, starts[s + 1] - starts[s])
    sentence = np.empty(longest, dtype=np.int32)
    neu1 = np.empty((1, d), dtype=np.float32)  # CBOW's hidden vector, as row 0
    neu1e = np.empty(d, dtype=np.float32)
    shared = shared_negatives and skipgram and negative > 0
    outs = np.empty(negative + 1, dtype=np.int32)  # the shared kernel's scratch: output ids, G and ΔIn
    grad = np.empty((2 * window, negative + 1), dtype=np.float32)
    dinp = np.empty((2 * window, d), dtype=np.float32)
    state = np.uint64(seed) | np.uint64(1)  # xorshift state must not be 0
    for _ in range(4):
        state = _next(state)
    effective, raw = 0, 0
    for s in range(first, last):
        lr = alpha - (alpha - min_alpha) * (words_before + raw) / total_words
        lr = np.float32(max(lr, min_alpha))
        n, state = _subsample(corpus, starts, s, keep, state, sentence)  # 1. subsampling
        raw += starts[s + 1] - starts[s]
        effective += n
        for i in range(n):
            lo, hi, state = _window(state, window, i, n)  # 2. dynamic window
            centre = sentence[i]
            if skipgram and shared:
                # 3'. pWord2Vec: the window's context words against the centre word and shared noise words
                if hs:
                    for j in range(lo, hi):
                        if j == i:
                            continue
                        l1 = sentence[j]
                        for k in range(d):
                            neu1e[k] = 0.0
                        state = _predict(syn0, l1, centre, state, lr, neu1e, syn1neg, syn1, d, noise_ids,
                                         noise_alias, noise_thresholds, points, codes, lengths, 0, hs, table)
                        for k in range(d):
                            syn0[l1, k] += neu1e[k]
                if hi - lo > 1:
                    m, state = _draw_outputs(centre, state, negative, noise_ids, noise_alias, noise_thresholds,
                                             outs, syn1neg, d)
                    _skipgram_shared_window(syn0, syn1neg, sentence, lo, hi, i, outs, m, lr, grad, dinp, d, table)
            elif skipgram:
                # 3. each context word's input vector predicts the centre word
                for j in range(lo, hi):
                    if j == i:
                        continue
                    l1 = sentence[j]
                    for k in range(d):
                        neu1e[k] = 0.0
                    state = _predict(syn0, l1, centre, state, lr, neu1e, syn1neg, syn1, d, noise_ids, noise_alias,
                                     noise_thresholds, points, codes, lengths, negative, hs, table)
                    for k in range(d):
                        syn0[l1, k] += neu1e[k]
            else:
                # 3. the window's sum (or mean) predicts the centre word
                for k in range(d):
                    neu1[0, k] = 0.0
                    neu1e[k] = 0.0
                count = 0
                for j in range(lo, hi):
                    if j != i:
                        row = sentence[j]
                        for k in range(d):
                            neu1[0, k] += syn0[row, k]
                        count += 1
                if count == 0:
                    continue
                if cbow_mean:
                    inv = np.float32(1.0 / count)
                    for k in range(d):
                        neu1[0, k] *= inv
                state = _predict(neu1, 0, centre, state, lr, neu1e, syn1neg, syn1, d, noise_ids, noise_alias,
                                 noise_thresholds, points, codes, lengths, negative, hs, table)
                # word2vec.c adds the whole error to every context word, mean or sum alike.
                for j in range(lo, hi):
                    if j != i:
                        row = sentence[j]
                        for k in range(d):
                            syn0[row, k] += neu1e[k]
    return effective, raw


@njit(nogil=True, fastmath=True, cache=True, inline="always")
def _cbow_step(syn0, syn1neg, sentence, lo, hi, i, outs, m, alpha, h, neu1e, grads, d, cbow_mean, table):
    """CBOW's negative-sampling step for centre word ``i``: the mean (or sum) of the window's input vectors
    predicts the outputs ``outs[:m]`` (the centre word, label 1, then the noise words, label 0). Every output's
    gradient and the input error are taken from the outputs before any of them is updated (the module docstring
    says where that differs from word2vec.c); ``h``, ``neu1e`` and ``grads`` are the caller's scratch buffers."""
    for k in range(d):
        h[k] = 0.0
    for j in range(lo, hi):
        if j != i:
            row = sentence[j]
            for k in range(d):
                h[k] += syn0[row, k]
    if cbow_mean:
        inv = np.float32(1.0 / (hi - lo - 1))
        for k in range(d):
            h[k] *= inv
    # g = (label - σ(h · out)) · alpha for every output, before any output changes
    for t in range(m):
        row = outs[t]
        f = np.float32(0.0)
        for k in range(d):
            f += h[k] * syn1neg[row, k]
        label = np.float32(1.0) if t == 0 else np.float32(0.0)
        if f > MAX_EXP:
            grads[t] = (label - np.float32(1.0)) * alpha
        elif f < -MAX_EXP:
            grads[t] = label * alpha
        else:
            grads[t] = (label - _sigmoid(f, table)) * alpha
    # the input error from the outputs before their update, then the outputs' update
    for k in range(d):
        neu1e[k] = 0.0
    for t in range(m):
        row = outs[t]
        g = grads[t]
        for k in range(d):
            neu1e[k] += g * syn1neg[row, k]
    for t in range(m):
        row = outs[t]
        g = grads[t]
        for k in range(d):
            syn1neg[row, k] += g * h[k]
    # word2vec.c adds the whole error to every context word, mean or sum alike.
    for j in range(lo, hi):
        if j != i:
            row = sentence[j]
            for k in range(d):
                syn0[row, k] += neu1e[k]


@njit(nogil=True, cache=True, inline="always")
def _draw_centre(i, n, sentence, state, window, negative, noise_ids, noise_alias, noise_thresholds, outs, syn1neg,
                 d):
    """Centre word ``i``'s window and, when it has context, its outputs (``_draw_outputs``, into ``outs``, their
    rows prefetched): (lo, hi, the number of outputs, the generator state)."""
    lo, hi, state = _window(state, window, i, n)
    m = 0
    if hi - lo > 1:
        m, state = _draw_outputs(sentence[i], state, negative, noise_ids, noise_alias, noise_thresholds, outs,
                                 syn1neg, d)
    return lo, hi, m, state


_NEGATIVE_SAMPLING_KERNELS: dict = {}


def negative_sampling_kernel(d: int, skipgram: bool):
    """Negative sampling without hierarchical softmax, ``d``-dimensional vectors: CBOW (``_cbow_step``) or
    skip-gram with shared negatives (``_skipgram_shared_window``). A numba function compiled once per (``d``,
    ``skipgram``) and cached on disk, with ``train_sentences``' arguments less ``syn1``, the Huffman tables,
    ``skipgram``, ``hs`` and ``shared_negatives``; returns (effective, raw) words. Same random numbers, in the same
    order, as ``train_sentences``, so one worker gives the same words, windows, noise words and vectors.

    Two things make it faster than ``train_sentences``: the vector size is a compile-time constant (LLVM vectorises
    the row loops for exactly ``d`` floats, no run-time-length loop tails), and each centre word's window and noise
    words are drawn while the previous centre word trains, their output rows (and the input row entering the
    window) prefetched (``_prefetch_row``), so the rows it reads at random are in cache when it needs them instead
    of each read waiting on memory. On one thread of a Zen 3 the prefetch alone made CBOW 1.3× faster
    (docs/benchmarks.md)."""
    key = (int(d), bool(skipgram))
    kernel = _NEGATIVE_SAMPLING_KERNELS.get(key)
    if kernel is not None:
        return kernel
    D, SKIPGRAM = key  # closure constants: numba compiles for exactly these

    @njit(nogil=True, fastmath=True, cache=True)
    def train_negative_sampling(corpus, starts, first, last, syn0, syn1neg, keep, noise_ids, noise_alias,
                                noise_thresholds, table, cbow_mean, window, negative, alpha, min_alpha, words_before,
                                total_words, seed):
        longest = 0
        for s in range(first, last):
            longest = max(longest, starts[s + 1] - starts[s])
        sentence = np.empty(longest, dtype=np.int32)
        outs = np.empty(negative + 1, dtype=np.int32)  # this centre word's outputs
        ahead = np.empty(negative + 1, dtype=np.int32)  # the next centre word's, drawn in advance
        h = np.empty(D, dtype=np.float32)  # CBOW: the context's mean (or sum)
        neu1e = np.empty(D, dtype=np.float32)
        grads = np.empty(negative + 1, dtype=np.float32)
        grad = np.empty((2 * window, negative + 1), dtype=np.float32)  # skip-gram: G and ΔIn
        dinp = np.empty((2 * window, D), dtype=np.float32)
        state = np.uint64(seed) | np.uint64(1)
        for _ in range(4):
            state = _next(state)
        effective, raw = 0, 0
        for s in range(first, last):
            lr = alpha - (alpha - min_alpha) * (words_before + raw) / total_words
            lr = np.float32(max(lr, min_alpha))
            n, state = _subsample(corpus, starts, s, keep, state, sentence)
            raw += starts[s + 1] - starts[s]
            effective += n
            # The draws for centre word i + 1 are made before centre word i trains: the same draws in the same
            # order as train_sentences (window, then outputs when the window has context), only earlier.
            next_lo, next_hi, next_m = 0, 0, 0
            if n > 0:
                next_lo, next_hi, next_m, state = _draw_centre(0, n, sentence, state, window, negative, noise_ids,
                                                               noise_alias, noise_thresholds, ahead, syn1neg, D)
            for i in range(n):
                lo, hi, m = next_lo, next_hi, next_m
                for t in range(m):
                    outs[t] = ahead[t]
                if i + 1 < n:
                    next_lo, next_hi, next_m, state = _draw_centre(i + 1, n, sentence, state, window, negative,
                                                                   noise_ids, noise_alias, noise_thresholds, ahead,
                                                                   syn1neg, D)
                    _prefetch_row(syn0, sentence[next_hi - 1], D)  # the input row that joins the next window
                if hi - lo <= 1:
                    continue
                if SKIPGRAM:
                    _skipgram_shared_window(syn0, syn1neg, sentence, lo, hi, i, outs, m, lr, grad, dinp, D, table)
                else:
                    _cbow_step(syn0, syn1neg, sentence, lo, hi, i, outs, m, lr, h, neu1e, grads, D, cbow_mean,
                               table)
        return effective, raw

    _NEGATIVE_SAMPLING_KERNELS[key] = train_negative_sampling
    return train_negative_sampling


@njit(nogil=True, cache=True)
def draw_noise_words(noise_ids, noise_alias, noise_thresholds, n, seed):
    """``n`` noise words from the kernel's sampler (for tests of its distribution)."""
    out = np.empty(n, dtype=np.int32)
    state = np.uint64(seed) | np.uint64(1)
    for i in range(n):
        state = _next(state)
        out[i] = _draw_noise(state, noise_ids, noise_alias, noise_thresholds)
    return out


# --------------------------------------------------------------------------- the corpus pass

_FNV_OFFSET, _FNV_PRIME = np.uint64(0xCBF29CE484222325), np.uint64(0x100000001B3)
_U29 = np.uint64(29)


@njit(cache=True, inline="always")
def _grown(a, used):
    b = np.empty((2 * len(a),) + a.shape[1:], dtype=a.dtype)
    b[:used] = a[:used]
    return b


@njit(nogil=True, cache=True)
def first_seen_ids(data):
    """Text as UTF-8 bytes split into lines at ``\\n`` and ``\\r`` and lines into words at ASCII whitespace, each
    distinct word numbered in order of first occurrence: (the words' numbers int32, words per non-empty line int64,
    each number's first occurrence as byte offsets (start, end), int64 of shape (words, 2)). These are the words of
    Python's text mode and the ``WhitespaceSplit`` pre-tokenizer for a valid UTF-8 text without non-ASCII whitespace
    (the caller checks): no other byte can split a word. Words are found in a hash table (FNV-1a, linear probing)
    whose slots hold a word's number and hash side by side, so a look-up reads one slot and one span."""
    space = np.zeros(256, dtype=np.bool_)
    for c in (9, 10, 11, 12, 13, 32):
        space[c] = True
    n = len(data)
    ids = np.empty(n // 8 + 16, dtype=np.int32)
    line_lengths = np.empty(n // 128 + 16, dtype=np.int64)
    spans = np.empty((1024, 2), dtype=np.int64)
    slots = np.full((2048, 2), -1, dtype=np.int64)  # (word, hash); at most half full
    n_ids = n_lines = n_words = line_words = 0
    i = 0
    while i < n:
        c = data[i]
        if space[c]:
            if (c == 10 or c == 13) and line_words > 0:  # a line ends
                if n_lines == len(line_lengths):
                    line_lengths = _grown(line_lengths, n_lines)
                line_lengths[n_lines] = line_words
                n_lines += 1
                line_words = 0
            i += 1
            continue
        start = i
        h = _FNV_OFFSET
        while i < n and not space[data[i]]:
            h = (h ^ np.uint64(data[i])) * _FNV_PRIME
            i += 1
        key = np.int64(h ^ (h >> _U29))
        mask = len(slots) - 1
        slot = key & mask
        while True:
            word = slots[slot, 0]
            if word < 0:  # a new word
                word = n_words
                if word == len(spans):
                    spans = _grown(spans, word)
                spans[word, 0], spans[word, 1] = start, i
                slots[slot, 0], slots[slot, 1] = word, key
                n_words += 1
                if 2 * n_words > len(slots):  # rehash into twice the slots
                    old = slots
                    slots = np.full((2 * len(old), 2), -1, dtype=np.int64)
                    mask = len(slots) - 1
                    for s in range(len(old)):
                        if old[s, 0] >= 0:
                            t = old[s, 1] & mask
                            while slots[t, 0] >= 0:
                                t = (t + 1) & mask
                            slots[t, 0], slots[t, 1] = old[s, 0], old[s, 1]
                break
            if slots[slot, 1] == key and spans[word, 1] - spans[word, 0] == i - start:
                first = spans[word, 0]
                same = True
                for k in range(i - start):
                    if data[first + k] != data[start + k]:
                        same = False
                        break
                if same:
                    break
            slot = (slot + 1) & mask
        if n_ids == len(ids):
            ids = _grown(ids, n_ids)
        ids[n_ids] = word
        n_ids += 1
        line_words += 1
    if line_words > 0:
        if n_lines == len(line_lengths):
            line_lengths = _grown(line_lengths, n_lines)
        line_lengths[n_lines] = line_words
        n_lines += 1
    return ids[:n_ids], line_lengths[:n_lines], spans[:n_words]


# --------------------------------------------------------------------------- the threads


def _jobs(starts: np.ndarray, words: int) -> list[tuple[int, int]]:
    """Runs of whole sentences of about ``words`` words each."""
    jobs, first = [], 0
    cuts = np.searchsorted(starts, np.arange(words, starts[-1], words), side="left")
    for cut in list(cuts) + [len(starts) - 1]:
        cut = int(cut)
        if cut > first:
            jobs.append((first, cut))
            first = cut
    return jobs


def train_hogwild(corpus_ids: np.ndarray, starts: np.ndarray, syn0: np.ndarray, syn1neg: np.ndarray,
                  syn1: np.ndarray, tables, *, skipgram: bool, cbow_mean: bool, window: int, negative: int, hs: bool,
                  alpha: float, min_alpha: float, epochs: int, workers: int = 1, seed: int = 1,
                  log_every: float = 10.0, shared_negatives: bool = False) -> dict:
    """Train the float32 matrices ``syn0`` (input vectors), ``syn1neg`` (output vectors) and ``syn1`` (inner-node
    vectors) in place, ``epochs`` passes over the sentences ``corpus_ids[starts[i]:starts[i + 1]]`` on ``workers``
    threads; returns the training numbers. ``tables``: the vocabulary's ``SamplingTables``, seven plain arrays in
    the order ``train_sentences`` takes them (keep, noise ids, aliases and thresholds, Huffman points, codes and
    lengths).
    ``shared_negatives``: skip-gram with negative sampling trains each centre word's window as pWord2Vec does (one
    set of noise words for the whole window, the updates as small matrix products; see ``_skipgram_shared_window``);
    False is word2vec.c's pair-by-pair algorithm. CBOW and hierarchical softmax are the same either way. Negative
    sampling without hierarchical softmax (CBOW, shared-negatives skip-gram) trains in ``negative_sampling_kernel``.
    One worker and one seed give the same matrices every run; more workers race, as in the C tool."""
    table = exp_table()
    jobs = _jobs(starts, JOB_WORDS)
    words_per_epoch = int(starts[-1])
    total_words = float(words_per_epoch * epochs)
    corpus_ids = np.ascontiguousarray(corpus_ids, dtype=np.int32)

    lock = threading.Lock()
    progress = {"raw": 0, "effective": 0, "logged": time.time()}

    specialised = None  # negative sampling alone, CBOW or shared-negatives skip-gram: negative_sampling_kernel
    if negative > 0 and not hs and (not skipgram or shared_negatives):
        specialised = negative_sampling_kernel(syn0.shape[1], skipgram)
        keep, noise_ids, noise_alias, noise_thresholds = tables[:4]

    def run(job_index, epoch, first, last):
        with lock:
            words_before = progress["raw"]  # words handed out so far: the learning-rate clock
            progress["raw"] += int(starts[last] - starts[first])
        job_seed = (seed * 1_000_003 + epoch) * 1_000_033 + job_index
        if specialised is not None:
            effective, _ = specialised(corpus_ids, starts, first, last, syn0, syn1neg, keep, noise_ids, noise_alias,
                                noise_thresholds, table, cbow_mean, window, negative, np.float32(alpha),
                                np.float32(min_alpha), float(words_before), total_words, job_seed)
        else:
            effective, _ = train_sentences(
                corpus_ids, starts, first, last, syn0, syn1neg, syn1, *tables, table, skipgram, cbow_mean, window,
                negative, hs, np.float32(alpha), np.float32(min_alpha), float(words_before), total_words, job_seed,
                shared_negatives,
            )
        with lock:
            progress["effective"] += effective

    # Checked after every epoch (``sanity.check_vectors``): a diverged run stops there instead of saving garbage.
    trained = {"input vectors": syn0, **({"output vectors": syn1neg} if negative > 0 else {}),
               **({"inner-node vectors": syn1} if hs else {})}
    advice = f"Lower alpha (it was {alpha:g})" + (f" or train with fewer workers (it was {workers})" if workers > 1
                                                   else "") + "."
    started = time.time()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for epoch in range(epochs):
            futures = [pool.submit(run, i, epoch, first, last) for i, (first, last) in enumerate(jobs)]
            for future in futures:
                future.result()
                now = time.time()
                if now - progress["logged"] >= log_every:
                    progress["logged"] = now
                    logger.info("epoch %d: %.1f%% of words, %.0f effective words/s", epoch + 1,
                                100 * progress["raw"] / total_words, progress["effective"] / (now - started))
            logger.info("epoch %d done: %d effective words so far, %.0f effective words/s", epoch + 1,
                        progress["effective"], progress["effective"] / (time.time() - started))
            check_vectors("word2vec", epoch + 1, epochs, advice, trained)
    runtime = max(time.time() - started, 1e-9)
    results = {
        "backend": "cpu", "shared_negatives": bool(shared_negatives), "workers": workers, "epochs": epochs,
        "train_runtime": runtime,
        "raw_words": progress["raw"], "effective_words": progress["effective"],
        "words_per_second": progress["raw"] / runtime, "effective_words_per_second": progress["effective"] / runtime,
        "started": started,
    }
    logger.info("trained on %d raw words (%d effective words) in %.1fs: %.0f effective words/s, %.0f raw words/s",
                results["raw_words"], results["effective_words"], runtime, results["effective_words_per_second"],
                results["words_per_second"])
    return results
