"""``train_word2vec``: word2vec trained on CPU as the C tool and gensim do, from text to a saved model.

    hf-lineage pretrain word2vec --train-file corpus.txt --output-dir out/w2v --config gensim   # no GPU: this trainer

The glue around the numba trainer: read the corpus, build or take the word-level tokenizer, encode the corpus to
token-id arrays, build the config and ``LineageWord2VecForPreTraining``, and hand the model's weight matrices and
the vocabulary's tables (``word2vec_sampling``) to ``word2vec_kernels.train_hogwild``, which trains them in place.
Without a tokenizer given, the vocabulary is counted and the corpus encoded in the same pass over the text
(``read_and_encode_corpus``).
``pretrain_word2vec`` is the same trainer run by ``hf-lineage pretrain word2vec`` (``--backend cpu``, or ``auto``
without a GPU), on its own typed arguments (``Word2VecTrainingArguments``, which word2vec's objective builds from the
command line's). PPMI-SVD reads its corpus with the same ``read_corpus`` and ``encode_corpus``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path

import numpy as np
import torch
from tokenizers import pre_tokenizers

from ..models import LineageWord2VecConfig, LineageWord2VecForPreTraining
from ..folders.pretrained import corpus_files, save_final
from ..tokenization import train_wordlevel_tokenizer
from ..tokenization.trainers import (
    WORD_COUNTS_KEY,
    WORDLEVEL_SPECIALS,
    plain_wordlevel_vocabulary,
    whitespace_words,
    wordlevel_tokenizer_from_counts,
)
from .word2vec_kernels import first_seen_ids, train_hogwild
from .word2vec_sampling import check_vocabulary, sampling_tables, sentence_starts, trainable_counts

# Skip-gram with negative sampling: pWord2Vec's shared-negatives kernel (True) or word2vec.c's pair-by-pair one.
SHARED_NEGATIVES_DEFAULT = True


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


def read_corpus(corpus, tokenizer=None, min_count: int = 1):
    """The corpus's lines (a function returning a fresh iterator over them) and the word-level tokenizer to read
    them with: ``tokenizer``, or one trained on the corpus keeping words seen ``min_count`` times. word2vec's and
    PPMI-SVD's trainers both start here. A corpus without words is a ValueError naming it."""
    files, lines = _read_lines(corpus)
    if tokenizer is None:
        if not any(line.strip() for line in lines()):
            raise _empty_corpus(files)
        tokenizer = train_wordlevel_tokenizer(files=files, iterator=None if files else lines(), min_count=min_count)
    return lines, tokenizer


def _empty_corpus(files) -> ValueError:
    return ValueError(f"The corpus is empty: {', '.join(files) if files else 'it'} holds no words")


def read_and_encode_corpus(corpus, tokenizer=None, min_count: int = 1) -> tuple[object, np.ndarray, np.ndarray]:
    """(tokenizer, token ids int32, sentence starts int64) of ``corpus``: ``read_corpus`` then ``encode_corpus``,
    the same three, but without a tokenizer given the vocabulary is counted in the same pass over the text as the
    words are encoded, instead of a pass of its own. Each word gets a provisional id when first seen (files: in a
    numba pass over their bytes, ``first_seen_ids``, where it splits as the tokenizer would), the counts are the
    provisional ids' bincount, from which ``wordlevel_tokenizer_from_counts`` builds ``train_wordlevel_tokenizer``'s
    tokenizer, and one array look-up turns provisional ids into its ids."""
    files, lines = _read_lines(corpus)
    if tokenizer is not None:
        return tokenizer, *encode_corpus(tokenizer, lines())
    first_seen = (_first_seen_in_files(files) if files else None) or _first_seen_in_lines(lines())
    words, corpus_ids, lengths, resplit = first_seen
    if len(corpus_ids) == 0:
        raise _empty_corpus(files)
    counts = np.bincount(corpus_ids, minlength=len(words)).tolist()
    tokenizer = wordlevel_tokenizer_from_counts(dict(zip(words, counts)), min_count=min_count)
    vocabulary, unknown, _ = plain_wordlevel_vocabulary(tokenizer)
    token_ids = np.fromiter(map(vocabulary.get, words, repeat(unknown)), dtype=np.int32, count=len(words))
    corpus_ids = token_ids[corpus_ids]  # provisional ids -> the tokenizer's
    if not resplit:
        return tokenizer, corpus_ids, sentence_starts(lengths)
    encoded = np.split(corpus_ids, np.cumsum(lengths)[:-1])
    for i, line in resplit:  # "a<s>b": the tokenizer splits it, as encode_corpus does
        encoded[i] = np.asarray(tokenizer.backend_tokenizer.encode(line, add_special_tokens=False).ids, dtype=np.int32)
    return tokenizer, *_laid_end_to_end(encoded)


# The tokenizer's added tokens (train_wordlevel_tokenizer's specials), and what in a text could make the tokenizer
# split it where first_seen_ids does not: non-ASCII whitespace (as Python and the pre-tokenizer define it), and an
# added token's text inside a word.
_ADDED = tuple(WORDLEVEL_SPECIALS.values())
_NON_ASCII_SPACE = re.compile("[" + "".join(chr(c) for c in range(128, 0x3001) if chr(c).isspace()) + "]")  # to U+3000
_CHECKED_BYTES = 1 << 24
_ADDED_INSIDE_A_WORD = re.compile("[^\t\n\x0b\x0c\r ](?:{0})|(?:{0})[^\t\n\x0b\x0c\r ]".format(
    "|".join(map(re.escape, _ADDED))))


def _first_seen_in_files(files: list[str]):
    """(words by provisional id, provisional ids, words per non-empty line, no lines to re-split) of text files,
    by ``first_seen_ids`` over their bytes; None for a text it could split otherwise than the tokenizer (then the
    line-by-line pass reads it, and raises on invalid UTF-8 as reading always did)."""
    data = b"\n".join(Path(path).read_bytes() for path in files)  # a file's last line ends where the next begins
    start = 0
    while start < len(data):  # checked in pieces of whole lines, so the text is never held twice
        end = data.find(b"\n", start + _CHECKED_BYTES) + 1 or len(data)
        try:
            text = data[start:end].decode("utf-8")
        except UnicodeDecodeError:
            return None
        if ((not text.isascii() and _NON_ASCII_SPACE.search(text))
                or (any(token in text for token in _ADDED) and _ADDED_INSIDE_A_WORD.search(text))):
            return None
        start = end
    ids, lengths, spans = first_seen_ids(np.frombuffer(data, dtype=np.uint8))
    return [data[start:end].decode("utf-8") for start, end in spans.tolist()], ids, lengths, []


def _first_seen_in_lines(lines: Iterable[str]):
    """``_first_seen_in_files``'s four for lines of text, in Python: (line index, line) to re-split for each line
    with an added token inside a word."""
    first_seen = defaultdict()  # word -> provisional id: the number of distinct words seen before it
    first_seen.default_factory = first_seen.__len__
    provisional = first_seen.__getitem__
    split = pre_tokenizers.WhitespaceSplit()
    needs_tokenizer = _added_token_inside_a_word(_ADDED)
    encoded, resplit = [], []
    for line in lines:
        words = whitespace_words(line, split)
        if not words:
            continue
        if needs_tokenizer(line, words):
            resplit.append((len(encoded), line))
        encoded.append(np.fromiter(map(provisional, words), dtype=np.int32, count=len(words)))
    corpus_ids = np.concatenate(encoded) if encoded else np.zeros(0, dtype=np.int32)
    return list(first_seen), corpus_ids, [len(ids) for ids in encoded], resplit


def encode_corpus(tokenizer, lines: Iterable[str], batch_lines: int = 10_000) -> tuple[np.ndarray, np.ndarray]:
    """(token ids int32, sentence starts int64): one sentence per non-empty line, cut at MAX_SENTENCE_WORDS.

    A plain whitespace word-level tokenizer (``train_wordlevel_tokenizer``'s) encodes by dictionary look-ups, about
    five times faster than its Rust ``encode_batch`` here (which also builds offsets and masks nobody reads); a line
    holding an added token's text inside a word, or any other tokenizer, goes through the tokenizer itself."""
    backend = tokenizer.backend_tokenizer
    plain = plain_wordlevel_vocabulary(backend)
    encoded = _looked_up(backend, plain, lines) if plain else _tokenized(backend, lines, batch_lines)
    return _laid_end_to_end(list(encoded))


def _laid_end_to_end(encoded: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(token ids, sentence starts) of the lines' ids, each line cut at MAX_SENTENCE_WORDS (``sentence_starts``)."""
    corpus = np.concatenate(encoded) if encoded else np.zeros(0, dtype=np.int32)
    return corpus, sentence_starts([len(ids) for ids in encoded])


def _added_token_inside_a_word(added: tuple[str, ...]) -> Callable[[str, list[str]], bool]:
    """Whether a line (and its whitespace words) holds an added token's text inside a word ("a<s>b"), which the
    tokenizer splits off and a look-up of the word would not."""
    if not added:
        return lambda line, words: False
    holds_added = re.compile("|".join(map(re.escape, added))).search
    return lambda line, words: holds_added(line) is not None and any(
        token in word and word != token for word in words for token in added)


def _looked_up(backend, plain, lines: Iterable[str]):
    """Each non-empty line's ids by vocabulary look-up (``plain_wordlevel_vocabulary``'s tokenizers)."""
    vocabulary, unknown, added = plain
    needs_tokenizer = _added_token_inside_a_word(added)
    for line in lines:
        words = whitespace_words(line)
        if not words:
            continue
        if needs_tokenizer(line, words):
            yield np.asarray(backend.encode(line, add_special_tokens=False).ids, dtype=np.int32)  # "a<s>b" splits
        else:
            yield np.fromiter(map(vocabulary.get, words, repeat(unknown)), dtype=np.int32, count=len(words))


def _tokenized(backend, lines: Iterable[str], batch_lines: int):
    """Each non-empty line's ids by the tokenizer, ``batch_lines`` lines per ``encode_batch``."""
    def encoded(batch):
        return (np.asarray(e.ids, dtype=np.int32) for e in backend.encode_batch(batch, add_special_tokens=False))

    batch = []
    for line in lines:  # streamed: a large corpus is never held as text
        if line.strip():
            batch.append(line)
            if len(batch) == batch_lines:
                yield from encoded(batch)
                batch = []
    yield from encoded(batch)


def train_word2vec(corpus, tokenizer=None, workers: int | None = None, seed: int = 1, output_dir=None,
                   config=None, shared_negatives: bool | None = None, **config_fields):
    """Train word2vec on CPU as the C tool and gensim do; returns ``(LineageWord2VecForPreTraining, tokenizer)``.

    ``corpus``: a text file path (one sentence per line, whitespace-tokenized), a list of paths, or an iterable of
    lines or of token lists (gensim's format). ``tokenizer``: a word-level tokenizer (default: one is built with
    ``train_wordlevel_tokenizer(min_count=...)``). ``workers``: threads (default: the CPUs this process may use).
    ``config``: a config or a named config ("gensim", "mikolov2013", "tiny"); keyword arguments set config fields
    (``architecture``, ``vector_size``, ``window``, ``negative``, ``hs``, ``sample``, ``epochs`` ...).
    ``shared_negatives``: how skip-gram with negative sampling trains (``train_hogwild``): True, pWord2Vec's
    window-at-a-time kernel (one set of noise words per centre word's window, small matrix products); False,
    word2vec.c's pair-by-pair algorithm; None (default): ``SHARED_NEGATIVES_DEFAULT``.
    With ``output_dir`` the model, the tokenizer and ``train_results.json`` are written there
    (``AutoModel.from_pretrained(output_dir)`` loads them).

    Example::

        >>> from hf_lineage import train_word2vec
        >>> model, tokenizer = train_word2vec("corpus.txt", architecture="skipgram", vector_size=100,
        ...                                   window=5, negative=5, epochs=5, workers=2)   # doctest: +SKIP
        >>> model.train_results["effective_words_per_second"]                               # doctest: +SKIP
    """
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
    tokenizer, corpus_ids, starts = read_and_encode_corpus(corpus, tokenizer, min_count)
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
    results = train_word2vec_arrays(model, corpus_ids, starts, workers=workers, seed=seed,
                                    shared_negatives=shared_negatives)
    results["preparation_seconds"] = results.pop("started") - started
    model.train_results = results
    if output_dir is not None:
        out = Path(output_dir)
        out.mkdir(parents=True, exist_ok=True)
        card = (f"\n## Training\n\n`hf_lineage.train_word2vec` (CPU, {workers} workers): {results['epochs']} epochs "
                f"over {results['raw_words'] // results['epochs']:,} words, "
                f"{results['effective_words_per_second']:,.0f} effective words/s.\n")
        save_final(model, tokenizer, out, card, datasets=corpus_files(corpus))
        (out / "train_results.json").write_text(json.dumps(results, indent=2))
    return model, tokenizer


def train_word2vec_arrays(model, corpus_ids: np.ndarray, starts: np.ndarray, workers: int = 1, seed: int = 1,
                          log_every: float = 10.0, shared_negatives: bool | None = None) -> dict:
    """Train ``model`` (a ``LineageWord2VecForPreTraining`` whose ``word_counts`` are set) in place on an encoded
    corpus; returns the training numbers. The kernels write straight into the model's weight tensors."""
    config = model.config
    counts = model.word_counts.numpy()
    check_vocabulary(counts, config.min_count)
    syn0 = model.word2vec.input_vectors.weight.data.numpy()
    empty = np.zeros((1, syn0.shape[1]), dtype=np.float32)
    syn1neg = model.output_vectors.weight.data.numpy() if config.negative > 0 else empty
    syn1 = model.inner_node_vectors.weight.data.numpy() if config.hs else empty
    return train_hogwild(
        corpus_ids, starts, syn0, syn1neg, syn1, sampling_tables(counts, config.sample, config.ns_exponent, config.hs),
        skipgram=config.architecture == "skipgram", cbow_mean=config.cbow_mean, window=config.window,
        negative=config.negative, hs=config.hs, alpha=config.alpha, min_alpha=config.min_alpha,
        epochs=config.epochs, workers=workers, seed=seed, log_every=log_every,
        shared_negatives=SHARED_NEGATIVES_DEFAULT if shared_negatives is None else shared_negatives,
    )


@dataclass
class Word2VecTrainingArguments:
    """What ``pretrain_word2vec`` trains from: a pre-training run's corpus, vocabulary, config and output folder, as
    ``hf-lineage pretrain word2vec`` decides them (``Word2VecObjective.cpu_trainer_arguments``)."""

    train_files: list[str]  # plain text files, checked to exist and hold words
    output_dir: str
    tokenizer: object  # the word-level tokenizer: the run's --tokenizer, or one trained on train_files
    config_fields: dict  # LineageWord2VecConfig fields: the named size's, --set's and --num-epochs' epochs
    seed: int = 1
    overwrite_output_dir: bool = False  # delete what output_dir holds first (once the settings are checked)
    # The engine's validation loss of the trained (model, tokenizer), for comparison (--validation-file); None: none.
    validation: Callable[[object, object], dict] | None = None


def pretrain_word2vec(args: Word2VecTrainingArguments) -> str:
    """``train_word2vec`` on a pre-training run's arguments; returns the output directory, which then also holds the
    validation loss (``train_results.json``'s ``eval``) when ``args.validation`` is given."""
    # Before anything is written: the settings must make a valid config.
    LineageWord2VecConfig(**{**args.config_fields, "vocab_size": len(args.tokenizer)})
    if args.overwrite_output_dir and Path(args.output_dir).exists():
        shutil.rmtree(args.output_dir)
    model, tokenizer = train_word2vec(args.train_files, tokenizer=args.tokenizer, seed=args.seed,
                                      output_dir=args.output_dir, **args.config_fields)
    results = Path(args.output_dir) / "train_results.json"
    data = json.loads(results.read_text())
    if args.validation is not None:
        data["eval"] = args.validation(model, tokenizer)
        results.write_text(json.dumps(data, indent=2))
        print(f"word2vec (cpu backend): validation loss {data['eval']['loss']:.4f}")
    print(f"word2vec (cpu backend): {data['effective_words_per_second']:,.0f} effective words/s, "
          f"{data['words_per_second']:,.0f} raw words/s")
    return args.output_dir
