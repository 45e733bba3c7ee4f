"""``train_svd``: count-based word vectors (Levy, Goldberg and Dagan, 2015) from text to a saved model.

    hf-lineage pretrain svd --train-file corpus.txt --output-dir out/svd --config levy2015 --set window=2

The glue around ``cooccurrence`` (beside this module): read the corpus, build or take the word-level tokenizer (the
one word2vec uses, read as word2vec's trainer reads it), stream the corpus through it in chunks of lines into the
sparse co-occurrence counts, weight them by PPMI, factorise, and write the vectors into ``LineageSvdModel``. Nothing
is trained by gradient descent, so the engine has no part in it: ``pretrain_svd`` takes every
``hf-lineage pretrain svd`` run, on its own typed arguments (``SvdTrainingArguments``, which svd's objective builds
from the command line's).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np
import torch

from ..models import LineageSvdConfig, LineageSvdModel
from ..folders.pretrained import corpus_files, save_final
from ..tokenization.trainers import WORD_COUNTS_KEY
from .cooccurrence import CooccurrenceCounter, factorize, ppmi
from .word2vec import encode_corpus, read_corpus
from .word2vec_sampling import check_vocabulary, trainable_counts


def _chunks(tokenizer, lines, batch_lines: int):
    """The corpus as (token ids, sentence starts) chunks of ``batch_lines`` lines: it is never held whole."""
    lines = iter(lines)
    while batch := list(islice(lines, batch_lines)):
        yield encode_corpus(tokenizer, batch)


def _corpus_counts(tokenizer, lines, batch_lines: int) -> np.ndarray:
    """Each token id's corpus count: the tokenizer's stored counts, or one pass over the corpus without them."""
    if tokenizer.init_kwargs.get(WORD_COUNTS_KEY) is not None:
        return np.asarray(tokenizer.init_kwargs[WORD_COUNTS_KEY])
    counts = np.zeros(len(tokenizer), dtype=np.int64)
    for ids, _ in _chunks(tokenizer, lines, batch_lines):
        counts += np.bincount(ids, minlength=len(tokenizer))
    return counts


def train_svd(corpus, tokenizer=None, seed: int = 0, output_dir=None, config=None, batch_lines: int = 10_000,
              **config_fields):
    """Count-based word vectors as Levy et al. (2015) build them; returns ``(LineageSvdModel, tokenizer)``.

    ``corpus``: a text file path (one sentence per line, whitespace-tokenized), a list of paths, or an iterable of
    lines or of token lists (gensim's format). ``tokenizer``: a word-level tokenizer (default: one is built with
    ``train_wordlevel_tokenizer(min_count=...)``). ``config``: a config or a named config ("levy2015", "tiny");
    keyword arguments set config fields (``vector_size``, ``window``, ``dynamic_window``, ``min_count``, ``cds``,
    ``neg``, ``eig``, ``add_context_vectors``). ``seed`` seeds the randomized SVD. The corpus streams through the
    counts ``batch_lines`` lines at a time. With ``output_dir`` the model, the tokenizer and ``train_results.json``
    are written there (``AutoModel.from_pretrained(output_dir)`` and ``WordVectors.from_pretrained(output_dir)``
    load them).

    Example::

        >>> from hf_lineage import WordVectors, train_svd
        >>> model, tokenizer = train_svd("corpus.txt", config="levy2015", vector_size=300)   # doctest: +SKIP
        >>> WordVectors.from_pretrained(model, tokenizer=tokenizer).most_similar("king")     # doctest: +SKIP
    """
    if isinstance(config, str):
        LineageSvdConfig.from_named(config)  # a ValueError naming the choices when unknown
        config_fields = {**LineageSvdConfig.named_sizes[config], **config_fields}
    elif config is not None:
        config_fields = {**config.to_diff_dict(), **config_fields}
    for key in ("model_type", "transformers_version", "auto_map", "architectures", "vocab_size"):
        config_fields.pop(key, None)
    LineageSvdConfig(**{**config_fields, "vocab_size": 2**31 - 1})  # the settings, before the corpus is read
    min_count = config_fields.get("min_count", LineageSvdConfig.min_count)

    started = time.time()
    lines, tokenizer = read_corpus(corpus, tokenizer, min_count)
    counts = trainable_counts(_corpus_counts(tokenizer, lines(), batch_lines), tokenizer.all_special_ids, min_count)
    check_vocabulary(counts, min_count)
    config = LineageSvdConfig(**{**config_fields, "vocab_size": len(tokenizer),
                                 "pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id,
                                 "eos_token_id": tokenizer.eos_token_id})

    counter = CooccurrenceCounter(config.vocab_size, config.window, config.dynamic_window, keep=counts > 0)
    for ids, starts in _chunks(tokenizer, lines(), batch_lines):
        counter.add(ids, starts)
    if counter.tokens == 0:
        raise ValueError("The corpus is empty: it holds no words of the vocabulary")
    counted = time.time()
    matrix = ppmi(counter.counts, cds=config.cds, neg=config.neg)
    vectors, singular_values = factorize(matrix, config.vector_size, eig=config.eig,
                                         add_context_vectors=config.add_context_vectors,
                                         n_iter=config.svd_iterations, n_oversamples=config.svd_oversamples, seed=seed)
    model = LineageSvdModel(config)
    with torch.no_grad():
        model.word_vectors.weight.copy_(torch.from_numpy(vectors))
        model.singular_values.copy_(torch.from_numpy(singular_values))
    finished = time.time()
    model.train_results = {
        "backend": "cpu", "epochs": 1, "raw_words": counter.tokens, "words": int((counts > 0).sum()),
        "nonzero_counts": int(counter.counts.nnz), "nonzero_ppmi": int(matrix.nnz),
        "counting_seconds": counted - started, "svd_seconds": finished - counted, "train_runtime": finished - started,
    }
    if output_dir is not None:
        out = Path(output_dir)
        out.mkdir(parents=True, exist_ok=True)
        shift = f", shifted by log {config.neg:g}" if config.neg != 1 else ""
        card = (f"\n## Training\n\n`hf_lineage.train_svd`: co-occurrence counts over {counter.tokens:,} words "
                f"(window {config.window}{', dynamic' if config.dynamic_window else ''}), PPMI with context "
                f"distribution smoothing {config.cds:g}{shift}, randomized SVD to {config.vector_size} dimensions "
                f"(eigenvalue weighting {config.eig:g}{', w+c' if config.add_context_vectors else ''}) in "
                f"{finished - started:.1f} s.\n")
        save_final(model, tokenizer, out, card, datasets=corpus_files(corpus))
        (out / "train_results.json").write_text(json.dumps(model.train_results, indent=2))
    return model, tokenizer


@dataclass
class SvdTrainingArguments:
    """What ``pretrain_svd`` trains from: a pre-training run's corpus, vocabulary, config and output folder, as
    ``hf-lineage pretrain svd`` decides them (``SvdObjective.cpu_trainer_arguments``)."""

    train_files: list[str]  # plain text files, checked to exist and hold words
    output_dir: str
    tokenizer: object  # the word-level tokenizer: the run's --tokenizer, or one trained on train_files
    config_fields: dict  # LineageSvdConfig fields: the named size's and --set's
    seed: int = 0  # seeds the randomized SVD
    overwrite_output_dir: bool = False  # delete what output_dir holds first (once the settings are checked)


def pretrain_svd(args: SvdTrainingArguments) -> str:
    """``train_svd`` on a pre-training run's arguments; returns the output directory."""
    LineageSvdConfig(**{**args.config_fields, "vocab_size": len(args.tokenizer)})  # before anything is written
    if args.overwrite_output_dir and Path(args.output_dir).exists():
        shutil.rmtree(args.output_dir)
    model, _ = train_svd(args.train_files, tokenizer=args.tokenizer, seed=args.seed, output_dir=args.output_dir,
                         **args.config_fields)
    results = model.train_results
    print(f"svd: {results['raw_words']:,} words counted, {results['nonzero_ppmi']:,} positive PPMI entries, "
          f"{model.config.vector_size} dimensions in {results['train_runtime']:.1f} s")
    return args.output_dir
