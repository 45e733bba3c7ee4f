"""``WordVectors``: the words, their vectors and counts, looked up as gensim's ``KeyedVectors`` looks them up.

The class holds the table and its lookups. Searches and benchmarks come from two mixins (``query``, ``evaluation``)
written against the attributes set here (``index_to_key``, ``key_to_index``, ``vectors``, ``counts``, ``norms``) and
the two primitives every search shares (``_scores``, ``_restricted_end``). Files and other libraries (``formats``,
``conversion``) are functions of plain words and arrays that the methods here call: those modules never import this
one, so the package has no import circle.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from . import conversion, formats
from .evaluation import EvaluationMixin
from .query import QueryMixin


class WordNotInVocabularyError(KeyError):
    """A word that the vectors do not contain. A ``KeyError`` (what gensim raises, so ``except KeyError`` code keeps
    working) whose message names the word; the word is in ``.word``."""

    def __init__(self, word, vocabulary_size: int):
        super().__init__(f"word {word!r} is not in the vocabulary ({vocabulary_size} words)")
        self.word = word

    def __str__(self):  # KeyError's own __str__ would print the message in quotes
        return self.args[0]


class WordVectors(QueryMixin, EvaluationMixin):
    """Words and their vectors: a read-mostly table with gensim's ``KeyedVectors`` API.

    Args:
        keys: the words, in index order (row ``i`` of ``vectors`` is ``keys[i]``); unique strings.
        vectors: array-like of shape (len(keys), vector_size); stored as a C-contiguous float32 numpy array.
        counts: optional corpus count of each word, same order.

    Attributes: ``index_to_key`` (list of words), ``key_to_index`` (dict word -> row), ``vectors`` (N, d) float32,
    ``counts`` (N,) int64 or None, ``vector_size`` (d).

    Methods, by what they are for: nearest neighbours and similarities (``most_similar``, ``similar_by_word``,
    ``similar_by_vector``, ``most_similar_cosmul``, ``similarity``, ``distance``, ``n_similarity``,
    ``doesnt_match``; ``query.py``), benchmarks (``evaluate_word_analogies``, ``evaluate_word_pairs``;
    ``evaluation.py``), the word2vec C tool's files (``save_word2vec_format``, ``load_word2vec_format``;
    ``formats.py``), lineage models and gensim (``from_pretrained``, ``from_gensim``, ``to_gensim``;
    ``conversion.py``).

    After changing ``vectors`` in place, call ``fill_norms(force=True)``: the row norms are cached, as in gensim.

    Example:
        >>> import numpy as np
        >>> wv = WordVectors(["cat", "dog", "car"], np.array([[1, 0], [0.9, 0.1], [0, 1]]), counts=[5, 4, 1])
        >>> wv["cat"], "dog" in wv, len(wv), wv.vector_size
        (array([1., 0.], dtype=float32), True, 3, 2)
        >>> wv.most_similar("cat", topn=1)[0][0]
        'dog'
    """

    def __init__(self, keys: Sequence[str], vectors, counts: Sequence[int] | None = None):
        keys = list(keys)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if not keys:
            raise ValueError("WordVectors needs at least one word: the vocabulary is empty.")
        if vectors.ndim != 2 or vectors.shape[0] != len(keys):
            raise ValueError(f"vectors must have shape (len(keys), vector_size) = ({len(keys)}, d); "
                             f"got {vectors.shape}.")
        if vectors.shape[1] == 0:
            raise ValueError("vectors have 0 dimensions (vector_size = 0).")
        bad = next((k for k in keys if not isinstance(k, str)), None)
        if bad is not None:
            raise ValueError(f"keys must be strings (words); got {bad!r} of type {type(bad).__name__}.")
        key_to_index = {}
        for i, key in enumerate(keys):
            if key_to_index.setdefault(key, i) != i:
                raise ValueError(f"duplicate key {key!r} at indices {key_to_index[key]} and {i}.")
        if counts is not None:
            counts = np.asarray(counts, dtype=np.int64)
            if counts.shape != (len(keys),):
                raise ValueError(f"counts must have one entry per key ({len(keys)}); got shape {counts.shape}.")
        self.index_to_key = keys
        self.key_to_index = key_to_index
        self.vectors = vectors
        self.counts = counts
        self.norms = None  # (N,) float32 row norms, computed on first use

    # ------------------------------------------------------------------ container protocol

    @property
    def vector_size(self) -> int:
        return self.vectors.shape[1]

    def __len__(self) -> int:
        return len(self.index_to_key)

    def __contains__(self, key) -> bool:
        return key in self.key_to_index

    def __getitem__(self, key_or_keys):
        """``wv["cat"]`` is a (d,) vector, ``wv[["cat", "dog"]]`` a (2, d) matrix."""
        if isinstance(key_or_keys, str):
            return self.get_vector(key_or_keys)
        return np.vstack([self.get_vector(key) for key in key_or_keys])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(<{len(self)} words>, vector_size={self.vector_size})"

    def get_index(self, key: str) -> int:
        """Row of ``key`` in ``vectors``; raises ``WordNotInVocabularyError`` (a ``KeyError``) for an unknown word.

        Example:
            >>> wv.get_index("cat")  # doctest: +SKIP
            0
        """
        try:
            return self.key_to_index[key]
        except (KeyError, TypeError):  # TypeError: unhashable key such as a list
            raise WordNotInVocabularyError(key, len(self)) from None

    def get_vector(self, key: str, norm: bool = False) -> np.ndarray:
        """The (d,) vector of ``key``, L2-normalised when ``norm`` (a read-only view, as in gensim).

        Example:
            >>> wv.get_vector("cat", norm=True)  # doctest: +SKIP
        """
        index = self.get_index(key)
        if norm:
            self.fill_norms()
            result = self.vectors[index] / self.norms[index]
        else:
            result = self.vectors[index]
        result.setflags(write=False)  # writing through it would silently invalidate the cached norms
        return result

    def fill_norms(self, force: bool = False) -> None:
        """Computes (or, with ``force``, recomputes after in-place edits of ``vectors``) the cached row norms."""
        if self.norms is None or force:
            self.norms = np.linalg.norm(self.vectors, axis=1)

    def get_normed_vectors(self) -> np.ndarray:
        """All vectors scaled to unit length, (N, d) float32.

        Example:
            >>> unit = wv.get_normed_vectors()  # doctest: +SKIP
        """
        self.fill_norms()
        return self.vectors / self.norms[:, None]

    # ------------------------------------------------------------------ files, models and gensim

    @classmethod
    def load_word2vec_format(cls, path: str | os.PathLike, binary: bool = False, limit: int | None = None,
                             encoding: str = "utf8", unicode_errors: str = "strict", no_header: bool = False,
                             fvocab: str | os.PathLike | None = None) -> WordVectors:
        """Reads vectors in the word2vec C tool's text or binary format (files from the C tool, gensim, fastText's
        ``.vec``, or ``save_word2vec_format``); ``limit`` reads only the first ``limit`` words; ``no_header`` reads
        a text file without the ``"<count> <dimensions>"`` line (GloVe). The format stores no counts: ``counts``
        is None unless ``fvocab`` names a ``word count`` file (the C tool's ``-save-vocab``) holding every word.
        A word appearing twice keeps its first vector, with a warning, as in gensim.

        A malformed file raises ValueError naming the file and the line (binary: the record and byte offset): a
        bad header, a wrong number of values, a non-numeric value, fewer or more records than the header says, a
        truncated binary record.

        Example:
            >>> wv = WordVectors.load_word2vec_format("GoogleNews-vectors-negative300.bin", binary=True,
            ...                                       limit=200000)  # doctest: +SKIP
        """
        return cls(*formats.load_word2vec_format(path, binary, limit, encoding, unicode_errors, no_header, fvocab))

    def save_word2vec_format(self, path: str | os.PathLike, binary: bool = False, write_header: bool = True,
                             fvocab: str | os.PathLike | None = None) -> None:
        """Writes the vectors in the word2vec C tool's format, loadable by the C tool, gensim's
        ``KeyedVectors.load_word2vec_format`` and ``WordVectors.load_word2vec_format``.

        A ``"<count> <dimensions>"`` header line (left out with ``write_header=False``, the GloVe layout), then one
        record per word in index order: text, ``word v1 v2 ... vd`` with ``%.9g`` (exact for float32); binary,
        ``word``, a space, d little-endian float32 and a newline, as ``word2vec.c`` writes them. Words containing
        whitespace cannot be stored in this format and raise ValueError. ``fvocab``: also write the counts, one
        ``word count`` line per word (the C tool's ``-save-vocab`` file; needs ``counts``).

        Example:
            >>> wv.save_word2vec_format("vectors.bin", binary=True)  # doctest: +SKIP
            >>> gensim.models.KeyedVectors.load_word2vec_format("vectors.bin", binary=True)  # doctest: +SKIP
        """
        formats.save_word2vec_format(path, self.index_to_key, self.vectors, self.counts, binary, write_header, fvocab)

    @classmethod
    def from_pretrained(cls, path_or_model, tokenizer=None) -> WordVectors:
        """The input embeddings of a lineage model with a word-level vocabulary (word2vec, NNLM, svd) as word
        vectors.

        ``path_or_model``: a saved folder (model + tokenizer, loaded with AutoModel / AutoTokenizer) or a model
        object, which then needs ``tokenizer``. The words are the tokenizer's vocabulary in id order without its
        special tokens (``<pad> <unk> <s> </s>``) and words whose vector is all zeros; the vectors are the matching
        rows of ``model.get_input_embeddings().weight``; counts come from the tokenizer when it stores them
        (``train_wordlevel_tokenizer`` does). A subword tokenizer (WordPiece, BPE) raises ValueError: its pieces
        are not words.

        Example:
            >>> wv = WordVectors.from_pretrained("out/word2vec")  # doctest: +SKIP
            >>> wv = WordVectors.from_pretrained(model, tokenizer=tok)  # doctest: +SKIP
        """
        return cls(*conversion.from_pretrained(path_or_model, tokenizer))

    @classmethod
    def from_gensim(cls, model) -> WordVectors:
        """A copy of a gensim ``Word2Vec`` (its ``.wv``) or ``KeyedVectors``: same words, order and vectors, and
        the counts when gensim has them (``get_vecattr(word, "count")``).

        Example:
            >>> from gensim.models import Word2Vec  # doctest: +SKIP
            >>> wv = WordVectors.from_gensim(Word2Vec(sentences, vector_size=100, min_count=5))  # doctest: +SKIP
        """
        return cls(*conversion.from_gensim(model))

    def to_gensim(self):
        """A gensim ``KeyedVectors`` with the same words, order, vectors (copied) and counts (as ``"count"``).

        Example:
            >>> kv = wv.to_gensim()  # doctest: +SKIP
            >>> kv.most_similar("cat")  # doctest: +SKIP
        """
        return conversion.to_gensim(self.index_to_key, self.vectors, self.counts)

    # ------------------------------------------------------------------ what every search shares

    def _scores(self, queries: np.ndarray, end: int) -> np.ndarray:
        """Cosine similarity of unit-length ``queries`` (Q, d) with the first ``end`` words: (Q, end) float32,
        computed as gensim does (dot with the raw vectors, divided by their norms)."""
        self.fill_norms()
        return (queries @ self.vectors[:end].T) / self.norms[:end]  # (Q, end)

    def _restricted_end(self, restrict_vocab: int | None) -> int:
        if restrict_vocab is None or restrict_vocab == 0:
            return len(self)
        if restrict_vocab < 0:
            raise ValueError(f"restrict_vocab must be a positive number of words; got {restrict_vocab}.")
        return min(int(restrict_vocab), len(self))
