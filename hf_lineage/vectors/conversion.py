"""Word vectors from a lineage model's input embeddings (``from_pretrained``) and to and from gensim
(``from_gensim``, ``to_gensim``).

Functions of plain words and arrays: each returns or takes ``(keys, vectors, counts)``, which the ``WordVectors``
methods of the same names turn into or take from a ``WordVectors``, so this module needs nothing of ``word_vectors``.
"""

from __future__ import annotations

import os

import numpy as np


def from_pretrained(path_or_model, tokenizer=None) -> tuple[list[str], np.ndarray, list[int] | None]:
    """``(keys, vectors, counts)`` of a lineage model's input embeddings (see ``WordVectors.from_pretrained``)."""
    from transformers import AutoModel, AutoTokenizer

    from ..tokenization.trainers import WORD_COUNTS_KEY, word_counts

    if isinstance(tokenizer, (str, os.PathLike)):
        tokenizer = AutoTokenizer.from_pretrained(tokenizer)
    if isinstance(path_or_model, (str, os.PathLike)):
        if tokenizer is None:
            tokenizer = AutoTokenizer.from_pretrained(path_or_model)
        _check_word_level(tokenizer, path_or_model)  # before loading a model that may be large
        model = AutoModel.from_pretrained(path_or_model)
    else:
        model = path_or_model
        if tokenizer is None:
            raise ValueError("WordVectors.from_pretrained(model) needs the model's tokenizer: pass tokenizer=.")
        _check_word_level(tokenizer, type(model).__name__)
    embeddings = model.get_input_embeddings()
    if embeddings is None:
        raise ValueError(f"{type(model).__name__} has no input embeddings (get_input_embeddings() is None).")
    weight = embeddings.weight.detach().float().cpu().numpy()  # (rows, d)
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    if vocab[-1][1] >= weight.shape[0]:
        raise ValueError(f"the tokenizer has id {vocab[-1][1]} ({vocab[-1][0]!r}) but the model's input "
                         f"embeddings have only {weight.shape[0]} rows: they do not belong together.")
    specials = set(tokenizer.all_special_ids)
    # An all-zero vector carries nothing (svd's, for a word never seen in a window: the factorisation knows
    # nothing of it) and has no direction for a cosine: such a word is left out, as if outside the vocabulary.
    empty = set(np.flatnonzero(~weight.any(axis=1)).tolist())
    words = [(w, i) for w, i in vocab if i not in specials and i not in empty]
    if not words:
        raise ValueError("the tokenizer's vocabulary is empty once its special tokens are removed: no words.")
    counts = None
    if tokenizer.init_kwargs.get(WORD_COUNTS_KEY) is not None:
        by_word = word_counts(tokenizer)
        counts = [by_word.get(w, 0) for w, _ in words]
    return [w for w, _ in words], weight[[i for _, i in words]], counts

def from_gensim(model) -> tuple[list[str], np.ndarray, list[int] | None]:
    """``(keys, vectors, counts)`` of a gensim ``Word2Vec`` (its ``.wv``) or ``KeyedVectors``."""
    kv = getattr(model, "wv", model)
    if not hasattr(kv, "index_to_key") or not hasattr(kv, "vectors"):
        raise ValueError(f"expected a gensim Word2Vec or KeyedVectors, got {type(model).__name__}.")
    counts = None
    if "count" in getattr(kv, "expandos", {}):
        counts = [kv.get_vecattr(key, "count") for key in kv.index_to_key]
    return list(kv.index_to_key), np.array(kv.vectors[: len(kv.index_to_key)], dtype=np.float32), counts


def to_gensim(keys: list[str], vectors: np.ndarray, counts: np.ndarray | None = None):
    """A gensim ``KeyedVectors`` holding copies of ``keys``, ``vectors`` (N, d) and ``counts`` (as ``"count"``)."""
    from gensim.models import KeyedVectors  # a dev dependency only: imported when asked for

    kv = KeyedVectors(vectors.shape[1], count=0, dtype=np.float32)
    kv.index_to_key = list(keys)
    kv.key_to_index = {key: i for i, key in enumerate(kv.index_to_key)}
    kv.next_index = len(keys)
    kv.vectors = vectors.copy()
    if counts is not None:
        kv.expandos["count"] = counts.copy()
    return kv


def _check_word_level(tokenizer, source) -> None:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    kind = type(backend.model).__name__ if backend is not None else type(tokenizer).__name__
    if kind != "WordLevel":
        raise ValueError(f"{source}: the tokenizer is a {kind} tokenizer, not a word-level one, so its vocabulary "
                         "holds subword pieces rather than words; WordVectors needs a word-level vocabulary (the "
                         "word2vec, NNLM and svd families).")
