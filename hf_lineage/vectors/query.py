"""Nearest neighbours and similarities, with gensim's names and semantics: ``most_similar`` (3CosAdd, the word2vec
C tool's ``distance`` and ``word-analogy``), ``most_similar_cosmul`` (3CosMul), ``similar_by_word`` /
``similar_by_vector``, ``similarity``, ``distance``, ``n_similarity``, ``doesnt_match``."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import numpy as np

logger = logging.getLogger(__name__)


class QueryMixin:
    """The similarity queries of ``WordVectors`` (which provides ``vectors``, ``norms``, ``get_index``,
    ``get_vector``, ``_scores`` and ``_restricted_end``)."""

    def _vector_of(self, item) -> np.ndarray:
        """A query vector given as an array: checked for its size, as float32."""
        vector = np.asarray(item, dtype=np.float32)
        if vector.shape != (self.vector_size,):
            raise ValueError(f"query vector has shape {vector.shape}, expected ({self.vector_size},).")
        return vector

    def _weighted_terms(self, positive, negative) -> list[tuple[object, float]]:
        """gensim's argument forms: a word, a vector, a list of words/vectors/(word or vector, weight) pairs, or a
        2-D array of vectors; positive terms weigh +1 and negative ones -1 unless a pair gives the weight."""
        terms = []
        for items, sign in ((positive, 1.0), (negative, -1.0)):
            if items is None:
                continue
            if isinstance(items, str) or (isinstance(items, np.ndarray) and items.ndim == 1):
                items = [items]
            for item in items:
                if isinstance(item, tuple) and len(item) == 2 and not isinstance(item[1], str):
                    terms.append((item[0], float(item[1])))
                elif isinstance(item, (str, np.ndarray)):
                    terms.append((item, sign))
                else:
                    raise TypeError(f"expected a word, a vector or a (word or vector, weight) pair; got {item!r}.")
        return terms

    def _top(self, dists: np.ndarray, topn: int, exclude: Sequence[int]) -> list[tuple[str, float]]:
        """The ``topn`` best (word, score) pairs, best first, skipping the rows in ``exclude`` (the query words)."""
        k = min(topn + len(exclude), dists.size)
        best = np.argpartition(-dists, k - 1)[:k] if k < dists.size else np.arange(dists.size)
        best = best[np.argsort(-dists[best], kind="stable")]
        excluded = set(exclude)
        return [(self.index_to_key[i], float(dists[i])) for i in best if i not in excluded][:topn]

    def most_similar(self, positive=None, negative=None, topn: int | None = 10, restrict_vocab: int | None = None):
        """The ``topn`` words closest by cosine to the mean of the unit-length ``positive`` vectors minus the
        ``negative`` ones (the word2vec C tool's ``distance`` and ``word-analogy``), query words left out.

        ``positive`` / ``negative``: a word, a vector, or a list of words, vectors or (word or vector, weight)
        pairs. ``restrict_vocab=n`` searches only the first n words. ``topn=None`` returns the similarity to every
        (searched) word as a numpy array instead. A missing word raises ``WordNotInVocabularyError`` (a KeyError).

        Example:
            >>> wv.most_similar(positive=["king", "woman"], negative=["man"], topn=3)  # doctest: +SKIP
            [('queen', 0.71), ('monarch', 0.62), ('princess', 0.59)]
            >>> wv.most_similar("cat")  # doctest: +SKIP
        """
        if topn is not None and topn < 1:
            return []
        terms = self._weighted_terms(positive, negative)
        if not terms:
            raise ValueError("cannot compute similarity with no input: give at least one positive or negative word.")
        self.fill_norms()
        mean = np.zeros(self.vector_size, dtype=np.float32)
        total_weight, query_rows = 0.0, []
        for item, weight in terms:
            if isinstance(item, str):
                index = self.get_index(item)
                query_rows.append(index)
                vector = self.vectors[index] / self.norms[index]
            else:
                vector = self._vector_of(item)
            mean += np.float64(weight) * vector
            total_weight += abs(weight)
        mean = mean / total_weight
        mean = (mean / max(np.linalg.norm(mean), np.finfo(np.float64).tiny)).astype(np.float32)
        dists = self._scores(mean[None, :], self._restricted_end(restrict_vocab))[0]
        if topn is None:
            return dists
        return self._top(dists, topn, query_rows)

    def similar_by_word(self, word: str, topn: int | None = 10, restrict_vocab: int | None = None):
        """Words closest to ``word``: ``most_similar(positive=[word], ...)``.

        Example:
            >>> wv.similar_by_word("paris", topn=5)  # doctest: +SKIP
        """
        return self.most_similar(positive=[word], topn=topn, restrict_vocab=restrict_vocab)

    similar_by_key = similar_by_word

    def similar_by_vector(self, vector, topn: int | None = 10, restrict_vocab: int | None = None):
        """Words closest to a (d,) vector (no word is left out).

        Example:
            >>> wv.similar_by_vector(wv["king"] - wv["man"] + wv["woman"], topn=3)  # doctest: +SKIP
        """
        return self.most_similar(positive=[self._vector_of(vector)], topn=topn, restrict_vocab=restrict_vocab)

    def most_similar_cosmul(self, positive=None, negative=None, topn: int | None = 10,
                            restrict_vocab: int | None = None):
        """Levy & Goldberg's (2014) 3CosMul: the words maximising the product of the positive cosines divided by the
        product of the negative ones (cosines shifted to [0, 1], +1e-6 in the denominator, as gensim does). Words
        are unit-normalised; vectors are used as given. ``topn=None`` returns all scores.

        Example:
            >>> wv.most_similar_cosmul(positive=["king", "woman"], negative=["man"], topn=1)  # doctest: +SKIP
            [('queen', 0.93)]
        """
        if topn is not None and topn < 1:
            return []
        positive = [positive] if isinstance(positive, (str, np.ndarray)) and np.ndim(positive) <= 1 else positive
        negative = [negative] if isinstance(negative, (str, np.ndarray)) and np.ndim(negative) <= 1 else negative
        positive, negative = list(positive or []), list(negative or [])
        if not positive:
            raise ValueError("cannot compute similarity with no input: most_similar_cosmul needs a positive word.")
        query_rows = [self.get_index(w) for w in positive + negative if isinstance(w, str)]
        terms = np.stack([self.get_vector(w, norm=True) if isinstance(w, str) else self._vector_of(w)
                          for w in positive + negative])  # (P + N, d)
        end = self._restricted_end(restrict_vocab)
        self.fill_norms()
        cosines = (1 + (terms @ self.vectors[:end].T) / self.norms[:end]) / 2  # (P + N, end), in [0, 1]
        dists = np.prod(cosines[: len(positive)], axis=0) / (np.prod(cosines[len(positive):], axis=0) + 0.000001)
        if topn is None:
            return dists
        return self._top(dists, topn, sorted(set(query_rows)))

    def similarity(self, w1: str, w2: str) -> float:
        """Cosine similarity of two words.

        Example:
            >>> wv.similarity("cat", "dog")  # doctest: +SKIP
            0.76
        """
        v1, v2 = self.get_vector(w1), self.get_vector(w2)
        return float(np.dot(_unit(v1), _unit(v2)))

    def distance(self, w1: str, w2: str) -> float:
        """Cosine distance, ``1 - similarity(w1, w2)``.

        Example:
            >>> wv.distance("cat", "car")  # doctest: +SKIP
        """
        return 1 - self.similarity(w1, w2)

    def n_similarity(self, ws1: Sequence[str], ws2: Sequence[str]) -> float:
        """Cosine similarity between the means of two lists of words (raw, not normalised, vectors, as gensim).

        Example:
            >>> wv.n_similarity(["sushi", "shop"], ["japanese", "restaurant"])  # doctest: +SKIP
        """
        if not len(ws1) or not len(ws2):
            raise ValueError("n_similarity needs two non-empty lists of words.")
        mean1, mean2 = self[list(ws1)].mean(axis=0), self[list(ws2)].mean(axis=0)
        return float(np.dot(_unit(mean1), _unit(mean2)))

    def doesnt_match(self, words: Iterable[str]) -> str:
        """The word furthest from the mean of the unit-length vectors of ``words``; unknown words are ignored with a
        warning, as in gensim.

        Example:
            >>> wv.doesnt_match(["breakfast", "cereal", "dinner", "lunch"])  # doctest: +SKIP
            'cereal'
        """
        words = list(words)
        used = [w for w in words if w in self]
        if len(used) != len(words):
            logger.warning("ignoring words not in the vocabulary: %s", sorted(set(words) - set(used)))
        if not used:
            raise ValueError("cannot select a word from an empty list: none of the words is in the vocabulary.")
        vectors = np.stack([self.get_vector(w, norm=True) for w in used])  # (n, d)
        centroid = _unit(vectors.mean(axis=0))
        return sorted(zip(vectors @ centroid, used), reverse=True)[-1][1]


def _unit(vector: np.ndarray) -> np.ndarray:
    """``vector`` scaled to unit length, computed in float64 and returned in its own dtype (zero stays zero)."""
    norm = np.linalg.norm(vector.astype(np.float64))
    return (vector / norm).astype(vector.dtype) if norm > 0 else vector
