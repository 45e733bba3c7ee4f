"""``WordVectors``: the words, their vectors and counts, looked up as gensim's ``KeyedVectors`` looks them up.

The class holds the table and its lookups; what users do with it comes from one mixin per use (``query``,
``evaluation``, ``formats``, ``conversion``), each written against the attributes set here (``index_to_key``,
``key_to_index``, ``vectors``, ``counts``, ``norms``) and the two primitives every search shares (``_scores``,
``_restricted_end``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .conversion import ConversionMixin
from .evaluation import EvaluationMixin
from .formats import Word2VecFormatMixin
from .query import QueryMixin


class WordNotInVocabularyError(KeyError):
    """A word that the vectors do not contain. A ``KeyError`` (what gensim raises, so ``except KeyError`` code keeps
    working) whose message names the word; the word is in ``.word``."""

    def __init__(self, word, vocabulary_size: int):
        super().__init__(f"word {word!r} is not in the vocabulary ({vocabulary_size} words)")
        self.word = word

    def __str__(self):  # KeyError's own __str__ would print the message in quotes
        return self.args[0]


class WordVectors(QueryMixin, EvaluationMixin, Word2VecFormatMixin, ConversionMixin):
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
