"""word2vec on CPU: the C tool's Hogwild SGD in numba, and ``train_word2vec``.

Each worker thread takes a job (a run of sentences, ~``JOB_WORDS`` words) and trains on it in a numba kernel that
holds no GIL, updating the shared float32 matrices without locks, as word2vec.c's threads and gensim's workers do.
What the kernel does per sentence is word2vec.c's ``TrainModelThread``:

1. frequent-word subsampling: a word is dropped when a random uint32 exceeds its ``sample_int`` (gensim's form
   of the C formula);
2. for each centre word, a window shrunk by b ~ U{0 .. window-1};
3. skip-gram: every context word's input vector predicts the centre word; CBOW: the sum (or mean) of the
   context vectors predicts it;
4. hierarchical softmax along the centre word's Huffman path and/or negative sampling with ``negative`` noise
   words (a noise word equal to the centre word is skipped); σ from a 1000-entry table over [-6, 6]; the error is
   accumulated and added to the input vector(s) once per prediction;
5. alpha decays linearly with the number of words processed, over all epochs.

Where it departs from word2vec.c, for speed only: noise words are drawn with the alias method (two small tables,
exact) instead of a 10⁸-entry table, and the random generator is xorshift64* (the C tool's is a 48-bit LCG).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from numba import njit

from ..data.word2vec import (
    MAX_SENTENCE_WORDS,
    alias_table,
    check_vocabulary,
    huffman_tree,
    keep_probabilities,
    noise_distribution,
    sample_ints,
    trainable_counts,
)

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
    """word2vec.c's table of σ at EXP_TABLE_SIZE points of [-MAX_EXP, MAX_EXP)."""
    x = (np.arange(EXP_TABLE_SIZE, dtype=np.float64) / EXP_TABLE_SIZE * 2 - 1) * MAX_EXP
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


@njit(nogil=True, fastmath=True, cache=True)
def train_sentences(corpus, starts, first, last, syn0, syn1neg, syn1, keep, noise_ids, noise_alias,
                    noise_thresholds, points, codes, lengths, table, skipgram, cbow_mean, window, negative, hs,
                    alpha, min_alpha, words_before, total_words, seed):
    """Train on sentences ``first .. last - 1`` of ``corpus`` (token ids; sentence i is
    ``corpus[starts[i]:starts[i + 1]]``). Returns (effective words, raw words): words kept after subsampling, and
    all words. The learning rate is recomputed every sentence from ``words_before`` + the words seen so far."""
    d = syn0.shape[1]
    longest = 0
    for s in range(first, last):
        longest = max(longest, starts[s + 1] - starts[s])
    sentence = np.empty(longest, dtype=np.int32)
    neu1 = np.empty((1, d), dtype=np.float32)  # CBOW's hidden vector, as row 0
    neu1e = np.empty(d, dtype=np.float32)
    state = np.uint64(seed) | np.uint64(1)  # xorshift state must not be 0
    for _ in range(4):
        state = _next(state)
    effective, raw = 0, 0
    for s in range(first, last):
        lr = alpha - (alpha - min_alpha) * (words_before + raw) / total_words
        lr = np.float32(max(lr, min_alpha))
        # 1. subsampling into a local buffer
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
        raw += starts[s + 1] - starts[s]
        effective += n
        for i in range(n):
            # 2. dynamic window
            state = _next(state)
            b = int(((state * _MULT) >> _U32) % np.uint64(window))
            lo, hi = max(0, i - window + b), min(n, i + window + 1 - b)
            centre = sentence[i]
            if skipgram:
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


@njit(nogil=True, cache=True)
def draw_noise_words(noise_ids, noise_alias, noise_thresholds, n, seed):
    """``n`` noise words from the kernel's sampler (for tests of its distribution)."""
    out = np.empty(n, dtype=np.int32)
    state = np.uint64(seed) | np.uint64(1)
    for i in range(n):
        state = _next(state)
        out[i] = _draw_noise(state, noise_ids, noise_alias, noise_thresholds)
    return out


# --------------------------------------------------------------------------- corpus


def _read_lines(corpus):
    """(files or None, a function returning an iterable of lines). ``corpus`` is a path, a list of paths, or an
    iterable of lines or of token lists (gensim's format)."""
    if isinstance(corpus, (str, os.PathLike)):
        corpus = [corpus]
        paths = True
    else:
        corpus = list(corpus)
        paths = bool(corpus) and all(isinstance(c, os.PathLike) or (isinstance(c, str) and os.path.isfile(c))
                                     for c in corpus)
    if paths:
        missing = [str(c) for c in corpus if not os.path.isfile(c)]
        if missing:
            raise ValueError(f"Corpus file(s) not found: {', '.join(missing)}")
        files = [str(c) for c in corpus]

        def lines():
            for path in files:
                with open(path, encoding="utf-8") as f:
                    yield from f

        return files, lines
    items = [item if isinstance(item, str) else " ".join(item) for item in corpus]
    return None, lambda: iter(items)


def encode_corpus(tokenizer, lines: Iterable[str], batch_lines: int = 10_000) -> tuple[np.ndarray, np.ndarray]:
    """(token ids int32, sentence starts int64): one sentence per non-empty line, cut at MAX_SENTENCE_WORDS."""
    backend = tokenizer.backend_tokenizer
    pieces, lengths, batch = [], [], []

    def flush():
        for encoding in backend.encode_batch(batch, add_special_tokens=False):
            ids = np.asarray(encoding.ids, dtype=np.int32)
            for start in range(0, len(ids), MAX_SENTENCE_WORDS):
                pieces.append(ids[start : start + MAX_SENTENCE_WORDS])
                lengths.append(len(pieces[-1]))
        batch.clear()

    for line in lines:
        if line.strip():
            batch.append(line)
            if len(batch) == batch_lines:
                flush()
    flush()
    corpus = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int32)
    starts = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    return corpus, starts


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


# --------------------------------------------------------------------------- the Python API


def train_word2vec(corpus, tokenizer=None, workers: int | None = None, seed: int = 1, output_dir=None,
                   config=None, **config_fields):
    """Train word2vec on CPU as the C tool and gensim do; returns ``(LineageWord2VecForPreTraining, tokenizer)``.

    ``corpus``: a text file path (one sentence per line, whitespace-tokenized), a list of paths, or an iterable of
    lines or of token lists (gensim's format). ``tokenizer``: a word-level tokenizer (default: one is built with
    ``train_wordlevel_tokenizer(min_count=...)``). ``workers``: threads (default: the CPUs this process may use).
    ``config``: a config or a named config ("gensim", "mikolov2013", "tiny"); keyword arguments set config fields
    (``architecture``, ``vector_size``, ``window``, ``negative``, ``hs``, ``sample``, ``epochs`` ...).
    With ``output_dir`` the model, the tokenizer and ``train_results.json`` are written there
    (``AutoModel.from_pretrained(output_dir)`` loads them).

    Example::

        >>> from hf_lineage import train_word2vec
        >>> model, tokenizer = train_word2vec("corpus.txt", architecture="skipgram", vector_size=100,
        ...                                   window=5, negative=5, epochs=5, workers=2)   # doctest: +SKIP
        >>> model.train_results["effective_words_per_second"]                               # doctest: +SKIP
    """
    import torch

    from ..models import LineageWord2VecConfig, LineageWord2VecForPreTraining
    from ..tokenization import train_wordlevel_tokenizer
    from ..tokenization.trainers import WORD_COUNTS_KEY

    if isinstance(config, str):
        LineageWord2VecConfig.from_named(config)  # a ValueError naming the choices when unknown
        config_fields = {**LineageWord2VecConfig.named_sizes[config], **config_fields}
    elif config is not None:
        base = config.to_diff_dict()
        for key in ("model_type", "transformers_version", "auto_map", "architectures", "vocab_size"):
            base.pop(key, None)
        config_fields = {**base, **config_fields}
    # Validate the settings before reading the corpus (the vocabulary size is not known yet).
    LineageWord2VecConfig(**{**config_fields, "vocab_size": 2**31 - 1})
    min_count = config_fields.get("min_count", LineageWord2VecConfig.min_count)
    workers = workers or len(os.sched_getaffinity(0))
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")

    started = time.time()
    files, lines = _read_lines(corpus)
    if tokenizer is None:
        if not any(line.strip() for line in lines()):
            raise ValueError(f"The corpus is empty: {', '.join(files) if files else 'it'} holds no words")
        tokenizer = train_wordlevel_tokenizer(files=files, iterator=None if files else lines(), min_count=min_count)
    corpus_ids, starts = encode_corpus(tokenizer, lines())
    if len(corpus_ids) == 0:
        raise ValueError("The corpus is empty: it holds no words")
    if tokenizer.init_kwargs.get(WORD_COUNTS_KEY) is not None:
        counts = tokenizer.init_kwargs[WORD_COUNTS_KEY]
    else:
        counts = np.bincount(corpus_ids, minlength=len(tokenizer))
    counts = trainable_counts(counts, tokenizer.all_special_ids, min_count)
    check_vocabulary(counts, min_count)

    config = LineageWord2VecConfig(**{**config_fields, "vocab_size": len(tokenizer),
                                      "pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id,
                                      "eos_token_id": tokenizer.eos_token_id})
    torch.manual_seed(seed)
    model = LineageWord2VecForPreTraining(config)
    model.word_counts.copy_(torch.from_numpy(counts))
    results = train_word2vec_arrays(model, corpus_ids, starts, workers=workers, seed=seed)
    results["preparation_seconds"] = results.pop("started") - started
    model.train_results = results
    if output_dir is not None:
        from ..pretrain import save_final

        out = Path(output_dir)
        out.mkdir(parents=True, exist_ok=True)
        card = (f"\n## Training\n\n`hf_lineage.train_word2vec` (CPU, {workers} workers): {results['epochs']} epochs "
                f"over {results['raw_words'] // results['epochs']:,} words, "
                f"{results['effective_words_per_second']:,.0f} effective words/s.\n")
        save_final(model, tokenizer, out, card)
        (out / "train_results.json").write_text(json.dumps(results, indent=2))
    return model, tokenizer


def train_word2vec_arrays(model, corpus_ids: np.ndarray, starts: np.ndarray, workers: int = 1, seed: int = 1,
                          log_every: float = 10.0) -> dict:
    """Train ``model`` (a ``LineageWord2VecForPreTraining`` whose ``word_counts`` are set) in place on an encoded
    corpus; returns the training numbers. The kernels write straight into the model's weight tensors."""
    config = model.config
    counts = model.word_counts.numpy()
    check_vocabulary(counts, config.min_count)
    keep = sample_ints(keep_probabilities(counts, config.sample))
    keep[(counts > 0) & (keep == 0)] = 1  # a kept-with-probability-~0 word must not read as "never trained"
    noise = alias_table(noise_distribution(counts, config.ns_exponent))
    if config.hs:
        tree = huffman_tree(counts)
        points, codes, lengths = tree.points, tree.codes, tree.lengths
    else:
        points, codes, lengths = np.zeros((1, 1), np.int32), np.zeros((1, 1), np.uint8), np.zeros(1, np.int32)
    syn0 = model.word2vec.input_vectors.weight.data.numpy()
    empty = np.zeros((1, syn0.shape[1]), dtype=np.float32)
    syn1neg = model.output_vectors.weight.data.numpy() if config.negative > 0 else empty
    syn1 = model.inner_node_vectors.weight.data.numpy() if config.hs else empty
    table = exp_table()
    jobs = _jobs(starts, JOB_WORDS)
    words_per_epoch = int(starts[-1])
    total_words = float(words_per_epoch * config.epochs)
    corpus_ids = np.ascontiguousarray(corpus_ids, dtype=np.int32)

    lock = threading.Lock()
    progress = {"raw": 0, "effective": 0, "logged": time.time()}

    def run(job_index, epoch, first, last):
        with lock:
            words_before = progress["raw"]  # words handed out so far: the learning-rate clock
            progress["raw"] += int(starts[last] - starts[first])
        effective, _ = train_sentences(
            corpus_ids, starts, first, last, syn0, syn1neg, syn1, keep, noise[0], noise[1], noise[2], points, codes,
            lengths, table, config.architecture == "skipgram", config.cbow_mean, config.window, config.negative,
            config.hs, np.float32(config.alpha), np.float32(config.min_alpha), float(words_before), total_words,
            (seed * 1_000_003 + epoch) * 1_000_033 + job_index,
        )
        with lock:
            progress["effective"] += effective

    started = time.time()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for epoch in range(config.epochs):
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
    runtime = max(time.time() - started, 1e-9)
    results = {
        "backend": "cpu", "workers": workers, "epochs": config.epochs, "train_runtime": runtime,
        "raw_words": progress["raw"], "effective_words": progress["effective"],
        "words_per_second": progress["raw"] / runtime, "effective_words_per_second": progress["effective"] / runtime,
        "started": started,
    }
    logger.info("trained on %d raw words (%d effective words) in %.1fs: %.0f effective words/s, %.0f raw words/s",
                results["raw_words"], results["effective_words"], runtime, results["effective_words_per_second"],
                results["words_per_second"])
    return results
