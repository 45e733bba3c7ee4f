"""``train_glove``: GloVe word vectors (Pennington, Socher and Manning, 2014) from text to a saved model.

    hf-lineage pretrain glove --train-file corpus.txt --output-dir out/glove --config pennington2014

The corpus streams through the word-level tokenizer into the co-occurrence counts svd builds
(``cooccurrence.CooccurrenceCounter``, here with GloVe's 1/d distance weighting), and ``fit_glove`` fits word vectors
W, context vectors W̃ and biases b, b̃ to them by the paper's weighted least squares,

    J = Σ_{X_ij > 0} f(X_ij) (w_i·w̃_j + b_i + b̃_j − log X_ij)²,   f(x) = (x / x_max)^α if x < x_max else 1,

as the authors' glove.c does: AdaGrad over the non-zero counts one at a time (shuffled once, as glove.c's
``shuffle`` tool does), squared gradients starting at 1 and summed after each step's learning-rate scaling, the
vectors and biases drawn uniformly from ±0.5/d, and W + W̃ saved. The step is a numba kernel on plain arrays
(``_glove_epoch``), run by ``workers`` threads without locks on the shared matrices (Hogwild, as glove.c's threads
do); one worker and one seed give the same vectors every run. Only for speed (4-4.8x the plain kernel at 50
dimensions, docs/benchmarks.md#glove), a word's vector, bias and their squared gradients sit side by side in one table
row, and the rows of the entries a few steps ahead are prefetched. Nothing here is the engine's, so ``pretrain_glove``
takes every ``hf-lineage pretrain glove`` run on its own typed arguments (``GloveTrainingArguments``, which glove's
objective builds from the command line's).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..models import LineageGloveConfig, LineageGloveModel
from ..folders.pretrained import corpus_files, save_final
from .cooccurrence import CooccurrenceCounter
from .sanity import DivergedError, check_vectors
from .svd import _chunks, _corpus_counts
from .word2vec import read_corpus
from .word2vec_sampling import check_vocabulary, trainable_counts


def glove_weighting(counts: np.ndarray, x_max: float = 100.0, alpha: float = 0.75) -> np.ndarray:
    """f(X_ij) of the paper's equation 9: (x / x_max)^α below x_max, 1 from x_max on.

    >>> glove_weighting(np.array([1.0, 50.0, 100.0, 400.0]), x_max=100, alpha=1.0).tolist()
    [0.01, 0.5, 1.0, 1.0]
    """
    return np.where(counts < x_max, (np.asarray(counts, dtype=np.float64) / x_max) ** alpha, 1.0)


def weighted_least_squares(word_vectors, context_vectors, word_biases, context_biases, rows, cols, counts,
                           x_max: float = 100.0, alpha: float = 0.75):
    """(loss, gradients) of the non-zero counts ``counts`` at (``rows``, ``cols``): loss ½ Σ f(X)·e², with
    e = w_i·w̃_j + b_i + b̃_j − log X (glove.c's cost, half the paper's J), and its gradients
    ``{"word_vectors": (V, d), "context_vectors", "word_biases": (V,), "context_biases"}`` in numpy. The reference the
    kernel's steps are checked against; the kernel never builds these arrays."""
    weights = glove_weighting(counts, x_max, alpha)
    errors = ((word_vectors[rows] * context_vectors[cols]).sum(1) + word_biases[rows] + context_biases[cols]
              - np.log(counts))
    weighted = weights * errors  # (N,) ∂loss/∂prediction of each entry
    gradients = {"word_vectors": np.zeros_like(word_vectors), "context_vectors": np.zeros_like(context_vectors),
                 "word_biases": np.bincount(rows, weighted, len(word_biases)),
                 "context_biases": np.bincount(cols, weighted, len(context_biases))}
    np.add.at(gradients["word_vectors"], rows, weighted[:, None] * context_vectors[cols])
    np.add.at(gradients["context_vectors"], cols, weighted[:, None] * word_vectors[rows])
    return 0.5 * float((weights * errors**2).sum()), gradients


@intrinsic
def _prefetch(typingctx, array, index):
    """Asks the CPU to bring the cache line of ``array.flat[index]`` in (LLVM's ``llvm.prefetch``; no load, no
    fault): the kernel's rows are random, so each entry would otherwise wait on its two table rows from L3 or memory."""

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        data = context.make_array(array_type)(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, array_type, data, [args[1]], wraparound=False)
        byte_pointer = ir.IntType(8).as_pointer()
        int32 = ir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_pointer, int32, int32, int32]), "llvm.prefetch.p0i8")
        # read (0), highest locality (3), data cache (1)
        builder.call(function, [builder.bitcast(pointer, byte_pointer), int32(0), int32(3), int32(1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen


PREFETCH_AHEAD = 4  # entries: enough to hide a miss behind the steps in between (2-8 measure the same)


# error_model="numpy": x / 0 gives inf instead of raising, so numba puts no zero test (and exit) in the update loop
# and LLVM vectorises it (2.8x); the squares start at 1 and only grow.
@njit(nogil=True, fastmath=True, error_model="numpy", cache=True)
def _glove_epoch(words, contexts, rows, cols, log_counts, weights, start, end, learning_rate):
    """One AdaGrad step per entry start..end of the (shuffled) non-zero counts, as glove.c's ``glove_thread``: the
    error e = w·w̃ + b + b̃ − log X, the step's gradient g = η·f(X)·e·(the other vector), the parameter moved by
    g / sqrt(squares) and g² added to its squares. ``words``, ``contexts``: (V, 2, d + 1) float32 tables, row 0 a
    word's vector then its bias, row 1 their squared gradients, so that one entry's parameters and squares are two
    runs of adjacent cache lines (1.2x over eight separate arrays). Returns the summed cost ½ f(X)·e²."""
    dims = words.shape[2] - 1
    flat_words, flat_contexts = words.reshape(-1), contexts.reshape(-1)
    table_row = 2 * (dims + 1)
    cost = 0.0
    for n in range(start, end):
        if n + PREFETCH_AHEAD < end:
            ahead_word, ahead_context = rows[n + PREFETCH_AHEAD] * table_row, cols[n + PREFETCH_AHEAD] * table_row
            for offset in range(0, table_row, 16):  # 16 floats: a cache line
                _prefetch(flat_words, ahead_word + offset)
                _prefetch(flat_contexts, ahead_context + offset)
        i, j = rows[n], cols[n]
        w, c = words[i, 0], contexts[j, 0]
        ws, cs = words[i, 1], contexts[j, 1]
        dot = np.float32(0.0)
        for k in range(dims):
            dot += w[k] * c[k]
        error = dot + w[dims] + c[dims] - log_counts[n]
        weighted = weights[n] * error
        cost += 0.5 * weighted * error
        step = learning_rate * weighted
        for k in range(dims):
            word_step = step * c[k]
            context_step = step * w[k]
            w[k] -= word_step / np.sqrt(ws[k])
            c[k] -= context_step / np.sqrt(cs[k])
            ws[k] += word_step * word_step
            cs[k] += context_step * context_step
        w[dims] -= step / np.sqrt(ws[dims])  # the biases: the gradient is the step itself
        c[dims] -= step / np.sqrt(cs[dims])
        ws[dims] += step * step
        cs[dims] += step * step
    return cost


def fit_glove(counts: sp.spmatrix, vector_size: int, x_max: float = 100.0, alpha: float = 0.75,
              learning_rate: float = 0.05, epochs: int = 50, add_context_vectors: bool = True, seed: int = 0,
              workers: int = 1, callback=None) -> tuple[np.ndarray, list[float]]:
    """(vectors (V, vector_size) float32, mean cost per entry after each epoch): GloVe fitted to the non-zero
    entries of the V × V ``counts``. The vectors are W + W̃ (W alone without ``add_context_vectors``); a word
    without any count (a special token, a dropped word) gets a zero row. ``workers`` threads share the entries
    of each epoch (Hogwild); with one the result is the same for a seed. ``callback(epoch, cost)`` follows each
    epoch."""
    counts = sp.coo_matrix(counts)
    counts.sum_duplicates()
    keep = counts.data > 0
    rows, cols, values = counts.row[keep], counts.col[keep], counts.data[keep]
    if len(values) == 0:
        raise ValueError("The co-occurrence counts are all zero: no word pair to fit (is the corpus empty?)")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(values))  # shuffled once, as glove.c's shuffle tool does before training
    rows, cols = rows[order].astype(np.int32), cols[order].astype(np.int32)
    log_counts = np.log(values[order]).astype(np.float32)
    weights = glove_weighting(values[order], x_max, alpha).astype(np.float32)
    vocab = counts.shape[0]

    def uniform(*shape):
        return ((rng.random(shape) - 0.5) / vector_size).astype(np.float32)

    words, contexts = np.ones((2, vocab, 2, vector_size + 1), dtype=np.float32)  # _glove_epoch's tables, squares 1
    words[:, 0, :-1], contexts[:, 0, :-1] = uniform(vocab, vector_size), uniform(vocab, vector_size)
    words[:, 0, -1], contexts[:, 0, -1] = uniform(vocab), uniform(vocab)
    bounds = np.linspace(0, len(values), workers + 1).astype(np.int64)
    losses = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for epoch in range(epochs):
            parts = [pool.submit(_glove_epoch, words, contexts, rows, cols, log_counts, weights, bounds[t],
                                 bounds[t + 1], np.float32(learning_rate))
                     for t in range(workers)]
            cost = sum(part.result() for part in parts) / len(values)
            advice = f"Lower learning_rate (it was {learning_rate:g})."
            # each table's rows: the vector and its bias (``sanity.check_vectors``)
            check_vectors("GloVe", epoch + 1, epochs, advice, {"word vectors": words[:, 0], "context vectors":
                                                                contexts[:, 0]})
            if not np.isfinite(cost):
                raise DivergedError(f"GloVe diverged in epoch {epoch + 1} of {epochs}: cost {cost}; nothing was "
                                    f"saved. {advice}")
            losses.append(float(cost))
            if callback is not None:
                callback(epoch + 1, cost)
    vectors = words[:, 0, :-1] + contexts[:, 0, :-1] if add_context_vectors else words[:, 0, :-1].copy()
    vectors[np.bincount(rows, minlength=vocab) == 0] = 0.0
    return vectors, losses


def train_glove(corpus, tokenizer=None, seed: int = 0, output_dir=None, config=None, workers: int | None = None,
                batch_lines: int = 10_000, **config_fields):
    """GloVe vectors as Pennington et al. (2014) train them; returns ``(LineageGloveModel, tokenizer)``.

    ``corpus``: a text file path (one sentence per line, whitespace-tokenized), a list of paths, or an iterable of
    lines or of token lists (gensim's format). ``tokenizer``: a word-level tokenizer (default: one is built with
    ``train_wordlevel_tokenizer(min_count=...)``). ``config``: a config or a named config ("pennington2014",
    "tiny"); keyword arguments set config fields (``vector_size``, ``window``, ``harmonic_window``, ``min_count``,
    ``x_max``, ``alpha``, ``learning_rate``, ``epochs``, ``add_context_vectors``). ``seed`` seeds the initial
    vectors and the shuffle; ``workers``: threads (default: the CPUs this process may use; one gives the same
    vectors every run). With ``output_dir`` the model, the tokenizer and ``train_results.json`` are written there
    (``AutoModel.from_pretrained(output_dir)`` and ``WordVectors.from_pretrained(output_dir)`` load them).

    Example::

        >>> from hf_lineage import WordVectors, train_glove
        >>> model, tokenizer = train_glove("corpus.txt", config="pennington2014", vector_size=100)  # doctest: +SKIP
        >>> WordVectors.from_pretrained(model, tokenizer=tokenizer).most_similar("king")           # doctest: +SKIP
    """
    if isinstance(config, str):
        LineageGloveConfig.from_named(config)  # a ValueError naming the choices when unknown
        config_fields = {**LineageGloveConfig.named_sizes[config], **config_fields}
    elif config is not None:
        config_fields = {**config.to_diff_dict(), **config_fields}
    for key in ("model_type", "transformers_version", "auto_map", "architectures", "vocab_size"):
        config_fields.pop(key, None)
    LineageGloveConfig(**{**config_fields, "vocab_size": 2**31 - 1})  # the settings, before the corpus is read
    workers = workers or len(os.sched_getaffinity(0))
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    min_count = config_fields.get("min_count", LineageGloveConfig.min_count)

    started = time.time()
    lines, tokenizer = read_corpus(corpus, tokenizer, min_count)
    counts = trainable_counts(_corpus_counts(tokenizer, lines(), batch_lines), tokenizer.all_special_ids, min_count)
    check_vocabulary(counts, min_count)
    config = LineageGloveConfig(**{**config_fields, "vocab_size": len(tokenizer),
                                   "pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id,
                                   "eos_token_id": tokenizer.eos_token_id})

    counter = CooccurrenceCounter(config.vocab_size, config.window, dynamic_window=False, keep=counts > 0,
                                  harmonic=config.harmonic_window)
    for ids, starts in _chunks(tokenizer, lines(), batch_lines):
        counter.add(ids, starts)
    if counter.tokens == 0:
        raise ValueError("The corpus is empty: it holds no words of the vocabulary")
    counted = time.time()
    vectors, losses = fit_glove(counter.counts, config.vector_size, x_max=config.x_max, alpha=config.alpha,
                                learning_rate=config.learning_rate, epochs=config.epochs,
                                add_context_vectors=config.add_context_vectors, seed=seed, workers=workers)
    model = LineageGloveModel(config)
    with torch.no_grad():
        model.word_vectors.weight.copy_(torch.from_numpy(vectors))
    finished = time.time()
    # "epochs" is passes over the corpus (one, counting), as svd's; the fit's passes over the counts are "iterations".
    model.train_results = {
        "backend": "cpu", "workers": workers, "epochs": 1, "iterations": config.epochs, "raw_words": counter.tokens,
        "words": int((counts > 0).sum()), "nonzero_counts": int(counter.counts.nnz), "loss_curve": losses,
        "final_train_loss": losses[-1], "counting_seconds": counted - started, "fit_seconds": finished - counted,
        "train_runtime": finished - started,
    }
    if output_dir is not None:
        out = Path(output_dir)
        out.mkdir(parents=True, exist_ok=True)
        weighting = "1/d-weighted " if config.harmonic_window else ""
        card = (f"\n## Training\n\n`hf_lineage.train_glove` (CPU, {workers} workers): {weighting}co-occurrence counts "
                f"over {counter.tokens:,} words (window {config.window}), {counter.counts.nnz:,} non-zero; weighted "
                f"least squares (x_max {config.x_max:g}, α {config.alpha:g}) by AdaGrad from {config.learning_rate:g}"
                f" for {config.epochs} iterations to {config.vector_size} dimensions"
                f"{' (W + W̃)' if config.add_context_vectors else ''}, final cost {losses[-1]:.4f}, in "
                f"{finished - started:.1f} s.\n")
        save_final(model, tokenizer, out, card, datasets=corpus_files(corpus))
        (out / "train_results.json").write_text(json.dumps(model.train_results, indent=2))
    return model, tokenizer


@dataclass
class GloveTrainingArguments:
    """What ``pretrain_glove`` trains from: a pre-training run's corpus, vocabulary, config and output folder, as
    ``hf-lineage pretrain glove`` decides them (``GloveObjective.cpu_trainer_arguments``)."""

    train_files: list[str]  # plain text files, checked to exist and hold words
    output_dir: str
    tokenizer: object  # the word-level tokenizer: the run's --tokenizer, or one trained on train_files
    config_fields: dict  # LineageGloveConfig fields: the named size's and --set's
    seed: int = 0  # seeds the initial vectors and the shuffle of the counts
    # threads: 1, so that a run (and the lineage's glove cells) gives the same vectors every time; more race without
    # locks (Hogwild), up to 2x faster on two cores; None: the CPUs this process may use
    workers: int | None = 1
    overwrite_output_dir: bool = False  # delete what output_dir holds first (once the settings are checked)


def pretrain_glove(args: GloveTrainingArguments) -> str:
    """``train_glove`` on a pre-training run's arguments; returns the output directory."""
    LineageGloveConfig(**{**args.config_fields, "vocab_size": len(args.tokenizer)})  # before anything is written
    if args.overwrite_output_dir and Path(args.output_dir).exists():
        shutil.rmtree(args.output_dir)
    model, _ = train_glove(args.train_files, tokenizer=args.tokenizer, seed=args.seed, output_dir=args.output_dir,
                           workers=args.workers, **args.config_fields)
    results = model.train_results
    print(f"glove: {results['raw_words']:,} words counted, {results['nonzero_counts']:,} non-zero counts, "
          f"{model.config.vector_size} dimensions, {results['iterations']} iterations (cost "
          f"{results['loss_curve'][0]:.4f} → {results['final_train_loss']:.4f}) in {results['train_runtime']:.1f} s")
    return args.output_dir
