"""Static word vectors with the API users know from gensim's ``KeyedVectors``.

``WordVectors`` holds the words (index order), their vectors as one float32 numpy matrix (N, d) and, optionally,
their corpus counts. It reads them from any saved lineage model with a word-level vocabulary (word2vec, NNLM),
from the word2vec C tool's text and binary files, or from a gensim ``Word2Vec`` / ``KeyedVectors``, and answers the
usual questions — nearest neighbours, analogies, similarity benchmarks — with gensim's semantics, so numbers
computed here and with gensim agree::

    >>> from hf_lineage import WordVectors
    >>> wv = WordVectors.from_pretrained("out/word2vec")                 # doctest: +SKIP
    >>> wv.most_similar(positive=["king", "woman"], negative=["man"], topn=1)  # doctest: +SKIP
    [('queen', 0.71...)]
    >>> from gensim.test.utils import datapath                             # doctest: +SKIP
    >>> score, sections = wv.evaluate_word_analogies(datapath("questions-words.txt"))  # doctest: +SKIP
    >>> wv.save_word2vec_format("vectors.bin", binary=True)               # doctest: +SKIP

Where this differs from gensim, on purpose: keys are words (strings) only; a word missing from the vocabulary
raises ``WordNotInVocabularyError`` (a ``KeyError``, as gensim raises, whose message names the word) everywhere,
including ``n_similarity``; ``most_similar_cosmul`` honours ``restrict_vocab`` (gensim 4.4 ignores it); an
analogy file without questions is a ValueError (gensim divides by zero); files written by ``save_word2vec_format``
keep the index order (gensim re-sorts by count) and use ``%.9g``, which round-trips float32 exactly; malformed
files raise ValueError naming the file and line (gensim reads a truncated text file's header count of lines and
ignores extra ones).
"""

from __future__ import annotations

import logging
import mmap
import os
import warnings
from collections.abc import Iterable, Sequence

import numpy as np

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike

# Rows of the (questions, vocabulary) score matrix computed per matrix product in evaluate_word_analogies:
# 2**24 float32 scores = 64 MB at a time, whatever the vocabulary size.
_ANALOGY_SCORE_ELEMENTS = 2**24
# Lines parsed per numpy conversion when reading the text format.
_TEXT_BATCH_LINES = 8192


class WordNotInVocabularyError(KeyError):
    """A word that the vectors do not contain. A ``KeyError`` (what gensim raises, so ``except KeyError`` code keeps
    working) whose message names the word; the word is in ``.word``."""

    def __init__(self, word, vocabulary_size: int):
        super().__init__(f"word {word!r} is not in the vocabulary ({vocabulary_size} words)")
        self.word = word

    def __str__(self):  # KeyError's own __str__ would print the message in quotes
        return self.args[0]


class WordVectors:
    """Words and their vectors: a read-mostly table with gensim's ``KeyedVectors`` query API.

    Args:
        keys: the words, in index order (row ``i`` of ``vectors`` is ``keys[i]``); unique strings.
        vectors: array-like of shape (len(keys), vector_size); stored as a C-contiguous float32 numpy array.
        counts: optional corpus count of each word, same order.

    Attributes: ``index_to_key`` (list of words), ``key_to_index`` (dict word -> row), ``vectors`` (N, d) float32,
    ``counts`` (N,) int64 or None, ``vector_size`` (d).

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

    # ------------------------------------------------------------------ similarity queries

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

    # ------------------------------------------------------------------ evaluation

    def _evaluation_vocab(self, restrict_vocab: int | None, case_insensitive: bool):
        """gensim's ``ok_vocab``: the first ``restrict_vocab`` words (upper-cased when ``case_insensitive``, the
        first, most frequent, case variant winning) mapped to their rows; the number ``end`` of words searched; and
        ``canonical`` (end,): for each searched row, the row its folded form maps to (itself, or its first case
        variant), so that comparing rows is comparing folded words."""
        end = self._restricted_end(restrict_vocab)
        folded = [k.upper() for k in self.index_to_key[:end]] if case_insensitive else self.index_to_key[:end]
        ok_vocab: dict[str, int] = {}
        for index, word in enumerate(folded):
            ok_vocab.setdefault(word, index)
        canonical = np.array([ok_vocab[word] for word in folded], dtype=np.int64)
        return ok_vocab, end, canonical

    def evaluate_word_analogies(self, analogies: PathLike, restrict_vocab: int = 300000, case_insensitive: bool = True,
                                dummy4unknown: bool = False):
        """Accuracy on an analogy test set in the ``questions-words.txt`` format (``: section`` lines, then lines of
        four words ``a b c d`` meaning a : b :: c : d), like the C tool's ``compute-accuracy`` and gensim.

        Each question is answered by 3CosAdd (``most_similar(positive=[b, c], negative=[a])`` over the first
        ``restrict_vocab`` words) and counts as correct when the best of the top 5 answers that is not a question
        word is ``d``. Questions with a word outside the first ``restrict_vocab`` words are skipped, or counted
        wrong with ``dummy4unknown``. Words are compared upper-cased when ``case_insensitive``. Questions are
        answered a batch at a time with one matrix product, not one at a time.

        Returns ``(accuracy, sections)``: ``sections`` is a list of ``{"section": name, "correct": [(a, b, c, d),
        ...], "incorrect": [...]}``, one per section of the file, then a last one named ``"Total accuracy"``.

        Example:
            >>> from gensim.test.utils import datapath  # doctest: +SKIP
            >>> accuracy, sections = wv.evaluate_word_analogies(datapath("questions-words.txt"))  # doctest: +SKIP
            >>> {s["section"]: len(s["correct"]) for s in sections}  # doctest: +SKIP
        """
        ok_vocab, end, canonical = self._evaluation_vocab(restrict_vocab, case_insensitive)
        sections = []
        questions = []  # (section, (a, b, c, d), answerable) in file order
        with open(analogies, "rb") as f:
            for line_no, raw in enumerate(f, start=1):
                line = raw.decode("utf8")
                if line.startswith(": "):
                    sections.append({"section": line.lstrip(": ").strip(), "correct": [], "incorrect": []})
                    continue
                if not sections:
                    raise ValueError(f"{analogies}: line {line_no} comes before any ': section' header line.")
                words = [w.upper() for w in line.split()] if case_insensitive else line.split()
                if len(words) != 4:
                    logger.info("skipping invalid line %d of %s", line_no, analogies)
                    continue
                questions.append((sections[-1], tuple(words), all(w in ok_vocab for w in words)))
        if not questions:
            raise ValueError(f"{analogies}: no analogy questions (lines of four words) found.")

        rows = np.array([[ok_vocab[w] for w in words] for _, words, ok in questions if ok],
                        dtype=np.int64).reshape(-1, 4)
        answers = iter(self._answer_analogies(rows, end, canonical))
        oov = 0
        for section, words, answerable in questions:
            if answerable:
                section["correct" if next(answers) else "incorrect"].append(words)
            else:
                oov += 1
                if dummy4unknown:  # counted as wrong; otherwise left out of the evaluation
                    section["incorrect"].append(words)

        total = {"section": "Total accuracy",
                 "correct": [q for s in sections for q in s["correct"]],
                 "incorrect": [q for s in sections for q in s["incorrect"]]}
        for section in sections + [total]:
            n_right, n_all = len(section["correct"]), len(section["correct"]) + len(section["incorrect"])
            if n_all:
                logger.info("%s: %.1f%% (%d/%d)", section["section"], 100.0 * n_right / n_all, n_right, n_all)
        logger.info("quadruplets with out-of-vocabulary words: %.1f%%", 100.0 * oov / len(questions))
        n_all = len(total["correct"]) + len(total["incorrect"])
        return (len(total["correct"]) / n_all if n_all else 0.0), sections + [total]

    def _answer_analogies(self, rows: np.ndarray, end: int, canonical: np.ndarray) -> np.ndarray:
        """For question rows (Q, 4) of (a, b, c, expected) indices: whether 3CosAdd gets ``expected``, (Q,) bool.

        Mirrors gensim's answer step: the query is unit(unit(b) + unit(c) - unit(a)); the five best of the first
        ``end`` words other than a, b, c are walked in order and the first whose folded form (``canonical``) is not
        a question word is the prediction (if none qualifies, the last one walked is)."""
        self.fill_norms()

        def unit(rows):  # unit-length vectors of the given rows, (q, d) float32
            return self.vectors[rows] / self.norms[rows, None]

        correct = np.zeros(len(rows), dtype=bool)
        chunk = max(1, _ANALOGY_SCORE_ELEMENTS // end)
        for start in range(0, len(rows), chunk):
            a, b, c, expected = rows[start : start + chunk].T  # each (q,)
            queries = (unit(b) + unit(c)) - unit(a)  # (q, d) float32, summed in gensim's order
            queries = queries.astype(np.float64) / 3
            queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
            scores = self._scores(queries, end)  # (q, end)
            q = np.arange(len(a))
            for column in (a, b, c):  # the question words themselves are never answers
                scores[q, column] = -np.inf
            # The 5 best, best first: 5 argmax passes are ~10x faster than an argpartition of the whole row.
            k = min(5, end)
            top = np.empty((len(a), k), dtype=np.int64)
            real = np.empty((len(a), k), dtype=bool)  # False only when fewer than k candidates exist
            for j in range(k):
                top[:, j] = scores.argmax(axis=1)
                real[:, j] = np.isfinite(scores[q, top[:, j]])
                scores[q, top[:, j]] = -np.inf
            folded = canonical[top]  # (q, k)
            acceptable = real & (folded != a[:, None]) & (folded != b[:, None]) & (folded != c[:, None])
            n_real = real.sum(axis=1)
            first_ok = np.where(acceptable.any(axis=1), acceptable.argmax(axis=1), n_real - 1)
            predicted = np.where(n_real > 0, folded[q, np.maximum(first_ok, 0)], -1)
            correct[start : start + chunk] = predicted == expected
        return correct

    def evaluate_word_pairs(self, pairs: PathLike, delimiter: str = "\t", encoding: str = "utf8",
                            restrict_vocab: int = 300000, case_insensitive: bool = True, dummy4unknown: bool = False):
        """Correlation of the model's cosine similarities with human judgements, for a file of ``word1 word2 score``
        lines (``wordsim353.tsv``, SimLex-999 format; ``#`` lines are comments), as gensim computes it.

        Pairs with a word outside the first ``restrict_vocab`` words are skipped, or given similarity 0 with
        ``dummy4unknown``. Returns ``(pearson, spearman, oov_ratio)``: scipy's results (``statistic, pvalue``) and the
        percentage of pairs with an unknown word.

        Example:
            >>> from gensim.test.utils import datapath  # doctest: +SKIP
            >>> pearson, spearman, oov = wv.evaluate_word_pairs(datapath("wordsim353.tsv"))  # doctest: +SKIP
            >>> spearman.statistic  # doctest: +SKIP
        """
        from scipy import stats

        ok_vocab, _, _ = self._evaluation_vocab(restrict_vocab, case_insensitive)
        gold, index_pairs, unknown = [], [], []  # unknown: positions of dummy (0.0) model similarities
        oov = 0
        with open(pairs, encoding=encoding) as f:
            for line_no, line in enumerate(f):
                if not line or line.startswith("#"):
                    continue
                parts = [w.upper() for w in line.split(delimiter)] if case_insensitive else line.split(delimiter)
                try:
                    a, b, score = parts
                    score = float(score)
                except ValueError:
                    logger.info("skipping invalid line %d of %s", line_no + 1, pairs)
                    continue
                if a not in ok_vocab or b not in ok_vocab:
                    oov += 1
                    if dummy4unknown:
                        unknown.append(len(gold))
                        gold.append(score)
                        index_pairs.append((0, 0))
                    continue
                gold.append(score)
                index_pairs.append((ok_vocab[a], ok_vocab[b]))
        if not gold:
            raise ValueError(f"No valid similarity judgements found in {pairs}: either the format is invalid or "
                             f"every pair has a word outside the vocabulary of {self!r}.")
        self.fill_norms()
        index_pairs = np.array(index_pairs, dtype=np.int64)
        unit = self.vectors[index_pairs] / self.norms[index_pairs][..., None]  # (P, 2, d)
        model = np.einsum("pd,pd->p", unit[:, 0], unit[:, 1]).astype(np.float64)  # (P,)
        model[unknown] = 0.0
        spearman = stats.spearmanr(gold, model)
        pearson = stats.pearsonr(gold, model)
        oov_ratio = float(oov) / (len(gold) if dummy4unknown else len(gold) + oov) * 100  # as gensim rounds
        logger.info("Pearson %.4f, Spearman %.4f against %s; pairs with unknown words: %.1f%%",
                    pearson[0], spearman[0], pairs, oov_ratio)
        return pearson, spearman, oov_ratio

    # ------------------------------------------------------------------ word2vec C tool formats

    def save_word2vec_format(self, path: PathLike, binary: bool = False, write_header: bool = True,
                             fvocab: PathLike | None = None) -> None:
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
        bad = next((k for k in self.index_to_key if not k or len(k.split()) != 1 or k.split()[0] != k), None)
        if bad is not None:
            raise ValueError(f"word {bad!r} is empty or contains whitespace, which the word2vec format uses as the "
                             "separator: it cannot be saved in this format.")
        if fvocab is not None:
            if self.counts is None:
                raise ValueError("fvocab asks for the word counts, but these vectors have none (counts=None).")
            with open(fvocab, "w", encoding="utf8") as f:
                f.writelines(f"{key} {count}\n" for key, count in zip(self.index_to_key, self.counts.tolist()))
        with open(path, "wb") as f:
            if write_header:
                f.write(f"{len(self)} {self.vector_size}\n".encode("utf8"))
            if binary:
                little_endian = self.vectors.astype("<f4", copy=False)
                for start in range(0, len(self), _TEXT_BATCH_LINES):
                    f.write(b"".join(key.encode("utf8") + b" " + row.tobytes() + b"\n" for key, row in
                                     zip(self.index_to_key[start : start + _TEXT_BATCH_LINES],
                                         little_endian[start : start + _TEXT_BATCH_LINES])))
            else:
                row_format = " ".join(["%.9g"] * self.vector_size)
                for start in range(0, len(self), _TEXT_BATCH_LINES):
                    rows = self.vectors[start : start + _TEXT_BATCH_LINES].tolist()
                    f.write("".join(f"{key} {row_format % tuple(row)}\n" for key, row in
                                    zip(self.index_to_key[start : start + _TEXT_BATCH_LINES], rows)).encode("utf8"))

    @classmethod
    def load_word2vec_format(cls, path: PathLike, binary: bool = False, limit: int | None = None,
                             encoding: str = "utf8", unicode_errors: str = "strict", no_header: bool = False,
                             fvocab: PathLike | None = None) -> "WordVectors":
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
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be a positive number of words; got {limit}.")
        if no_header and binary:
            raise ValueError("no_header is only possible with the text format: a binary file needs its header.")
        with open(path, "rb") as f:
            if no_header:
                count, size = None, None
            else:
                count, size = _read_header(f.readline(), path)
            if count is not None and limit is not None:
                count = min(count, limit)
            if binary:
                keys, vectors = _read_binary(f, path, count, size, limit is not None, encoding, unicode_errors)
            else:
                keys, vectors = _read_text(f, path, count, size, limit, encoding, unicode_errors)
        keep = _first_occurrences(keys, path)
        if keep is not None:
            keys, vectors = [keys[i] for i in keep], vectors[keep]
        if not keys:
            raise ValueError(f"{path}: the file holds no vectors (empty vocabulary).")
        counts = None if fvocab is None else _read_counts(fvocab, keys, unicode_errors)
        return cls(keys, vectors, counts)

    # ------------------------------------------------------------------ lineage models and gensim

    @classmethod
    def from_pretrained(cls, path_or_model, tokenizer=None) -> "WordVectors":
        """The input embeddings of a lineage model with a word-level vocabulary (word2vec, NNLM) as word vectors.

        ``path_or_model``: a saved folder (model + tokenizer, loaded with AutoModel / AutoTokenizer) or a model
        object, which then needs ``tokenizer``. The words are the tokenizer's vocabulary in id order without its
        special tokens (``<pad> <unk> <s> </s>``); the vectors are the matching rows of
        ``model.get_input_embeddings().weight``; counts come from the tokenizer when it stores them
        (``train_wordlevel_tokenizer`` does). A subword tokenizer (WordPiece, BPE) raises ValueError: its pieces
        are not words.

        Example:
            >>> wv = WordVectors.from_pretrained("out/word2vec")  # doctest: +SKIP
            >>> wv = WordVectors.from_pretrained(model, tokenizer=tok)  # doctest: +SKIP
        """
        from transformers import AutoModel, AutoTokenizer

        from .tokenization.trainers import WORD_COUNTS_KEY, word_counts

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
        words = [(w, i) for w, i in vocab if i not in specials]
        if not words:
            raise ValueError("the tokenizer's vocabulary is empty once its special tokens are removed: no words.")
        counts = None
        if tokenizer.init_kwargs.get(WORD_COUNTS_KEY) is not None:
            by_word = word_counts(tokenizer)
            counts = [by_word.get(w, 0) for w, _ in words]
        return cls([w for w, _ in words], weight[[i for _, i in words]], counts)

    @classmethod
    def from_gensim(cls, model) -> "WordVectors":
        """A copy of a gensim ``Word2Vec`` (its ``.wv``) or ``KeyedVectors``: same words, order and vectors, and
        the counts when gensim has them (``get_vecattr(word, "count")``).

        Example:
            >>> from gensim.models import Word2Vec  # doctest: +SKIP
            >>> wv = WordVectors.from_gensim(Word2Vec(sentences, vector_size=100, min_count=5))  # doctest: +SKIP
        """
        kv = getattr(model, "wv", model)
        if not hasattr(kv, "index_to_key") or not hasattr(kv, "vectors"):
            raise ValueError(f"expected a gensim Word2Vec or KeyedVectors, got {type(model).__name__}.")
        counts = None
        if "count" in getattr(kv, "expandos", {}):
            counts = [kv.get_vecattr(key, "count") for key in kv.index_to_key]
        return cls(list(kv.index_to_key), np.array(kv.vectors[: len(kv.index_to_key)], dtype=np.float32), counts)

    def to_gensim(self):
        """A gensim ``KeyedVectors`` with the same words, order, vectors (copied) and counts (as ``"count"``).

        Example:
            >>> kv = wv.to_gensim()  # doctest: +SKIP
            >>> kv.most_similar("cat")  # doctest: +SKIP
        """
        from gensim.models import KeyedVectors  # a dev dependency only: imported when asked for

        kv = KeyedVectors(self.vector_size, count=0, dtype=np.float32)
        kv.index_to_key = list(self.index_to_key)
        kv.key_to_index = dict(self.key_to_index)
        kv.next_index = len(self)
        kv.vectors = self.vectors.copy()
        if self.counts is not None:
            kv.expandos["count"] = self.counts.copy()
        return kv


def _unit(vector: np.ndarray) -> np.ndarray:
    """``vector`` scaled to unit length, computed in float64 and returned in its own dtype (zero stays zero)."""
    norm = np.linalg.norm(vector.astype(np.float64))
    return (vector / norm).astype(vector.dtype) if norm > 0 else vector


def _check_word_level(tokenizer, source) -> None:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    kind = type(backend.model).__name__ if backend is not None else type(tokenizer).__name__
    if kind != "WordLevel":
        raise ValueError(f"{source}: the tokenizer is a {kind} tokenizer, not a word-level one, so its vocabulary "
                         "holds subword pieces rather than words; WordVectors needs a word-level vocabulary (the "
                         "word2vec and NNLM families).")


def _read_header(line: bytes, path) -> tuple[int, int]:
    parts = line.split()
    try:
        count, size = (int(p) for p in parts)
        if count < 0 or size < 1:
            raise ValueError
    except ValueError:
        raise ValueError(f"{path}: line 1 should be the header '<count> <dimensions>' (two positive integers); got "
                         f"{line[:80]!r}. Pass no_header=True for a text file without one.") from None
    return count, size


def _read_text(f, path, count, size, limit, encoding, unicode_errors) -> tuple[list[str], np.ndarray]:
    """Text records: lines of ``word v1 ... vd``, converted a batch of lines at a time by one numpy call."""
    keys: list[str] = []
    blocks: list[np.ndarray] = []
    batch: list[list[bytes]] = []  # split lines waiting for conversion
    batch_lines: list[int] = []  # their line numbers, for error messages
    wanted = count if count is not None else limit  # records to read (None: all)

    def flush():
        try:
            blocks.append(np.array([v for parts in batch for v in parts[1:]], dtype=np.float32).reshape(-1, size))
        except ValueError:  # find the line, for the message
            for line_no, parts in zip(batch_lines, batch):
                try:
                    np.array(parts[1:], dtype=np.float32)
                except ValueError:
                    raise ValueError(f"{path}: line {line_no}: non-numeric value in the vector of "
                                     f"{parts[0][:80]!r}.") from None
            raise
        batch.clear()
        batch_lines.clear()

    line_no = 1 if count is not None else 0  # the header is line 1
    for line_no, line in enumerate(f, start=line_no + 1):
        parts = line.split()
        if wanted is not None and len(keys) == wanted:
            if limit is not None:
                break
            if parts:
                raise ValueError(f"{path}: line {line_no}: more records than the {count} the header announces.")
            continue  # trailing blank lines
        if not parts:
            if count is None:
                continue  # blank lines are tolerated in a header-less file
            raise ValueError(f"{path}: line {line_no}: empty line where vector {len(keys) + 1} of {count} "
                             "was expected.")
        if size is None:  # header-less file: the first line gives the dimensions
            size = len(parts) - 1
            if size < 1:
                raise ValueError(f"{path}: line {line_no}: a word with no vector values.")
        if len(parts) != size + 1:
            raise ValueError(f"{path}: line {line_no}: {len(parts) - 1} values for {parts[0][:80]!r}, "
                             f"expected {size}.")
        try:
            keys.append(parts[0].decode(encoding, errors=unicode_errors))
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: line {line_no}: word is not valid {encoding} ({e.reason}); pass "
                             "unicode_errors='ignore' or 'replace' for files cut mid-character by the C tool."
                             ) from None
        batch.append(parts)
        batch_lines.append(line_no)
        if len(batch) == _TEXT_BATCH_LINES:
            flush()
    if batch:
        flush()
    if count is not None and len(keys) < count:
        raise ValueError(f"{path}: the header announces {count} vectors but the file ends after {len(keys)} "
                         f"(line {line_no}); is it truncated, or binary (binary=True)?")
    vectors = np.concatenate(blocks) if blocks else np.zeros((0, size or 1), dtype=np.float32)
    return keys, vectors


def _read_binary(f, path, count, size, limited, encoding, unicode_errors) -> tuple[list[str], np.ndarray]:
    """Binary records: ``word``, a space, ``size`` little-endian float32, optionally a newline (the C tool writes
    one, gensim does not); each vector is copied straight from the (memory-mapped) file with ``np.frombuffer``."""
    record_bytes = 4 * size
    keys: list[str] = []
    vectors = np.empty((count, size), dtype=np.float32)
    header_end = f.tell()
    f.seek(0, os.SEEK_END)
    file_size = f.tell()
    if file_size == header_end:
        if count:
            raise ValueError(f"{path}: the header announces {count} vectors but the file ends after it.")
        return keys, vectors
    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        pos = header_end
        for i in range(count):
            while buf[pos : pos + 1] in (b"\n", b"\r"):  # the newline ending the previous record
                pos += 1
            space = buf.find(b" ", pos, pos + 10_000)
            if space < 0:
                where = "the file ends" if pos >= file_size else "no word ends within 10,000 bytes"
                raise ValueError(f"{path}: record {i + 1} of {count} (byte offset {pos}): {where}; the file is "
                                 "truncated, not binary (binary=False?), or the header count is wrong.")
            if space + 1 + record_bytes > file_size:
                raise ValueError(f"{path}: record {i + 1} of {count} (byte offset {pos}) is truncated: "
                                 f"{file_size - space - 1} bytes left for a {record_bytes}-byte vector.")
            try:
                keys.append(buf[pos:space].decode(encoding, errors=unicode_errors))
            except UnicodeDecodeError as e:
                raise ValueError(f"{path}: record {i + 1} (byte offset {pos}): word is not valid {encoding} "
                                 f"({e.reason}); pass unicode_errors='ignore' or 'replace'.") from None
            vectors[i] = np.frombuffer(buf, dtype="<f4", count=size, offset=space + 1)
            pos = space + 1 + record_bytes
        if not limited and buf[pos:file_size].strip():
            raise ValueError(f"{path}: more data after the {count} records the header announces (byte offset "
                             f"{pos}); is the header count wrong?")
    return keys, vectors


def _read_counts(fvocab, keys: list[str], unicode_errors: str) -> list[int]:
    """The counts of ``keys`` from a ``word count`` per line file."""
    counts = {}
    with open(fvocab, encoding="utf8", errors=unicode_errors) as f:
        for line_no, line in enumerate(f, start=1):
            parts = line.split()
            if not parts:
                continue
            try:
                word, count = parts
                counts.setdefault(word, int(count))
            except ValueError:
                raise ValueError(f"{fvocab}: line {line_no} should be 'word count'; got {line[:80]!r}.") from None
    missing = [k for k in keys if k not in counts]
    if missing:
        raise ValueError(f"{fvocab}: no count for {len(missing)} word(s) of the vectors file, e.g. {missing[:5]}.")
    return [counts[k] for k in keys]


def _first_occurrences(keys: list[str], path) -> list[int] | None:
    """Indices keeping each word's first record, or None when no word repeats (gensim keeps the first, too)."""
    seen: dict[str, int] = {}
    keep = [i for i, key in enumerate(keys) if seen.setdefault(key, i) == i]
    if len(keep) == len(keys):
        return None
    duplicated = sorted({keys[i] for i in set(range(len(keys))) - set(keep)})
    warnings.warn(f"{path}: {len(keys) - len(keep)} duplicate word(s) ({', '.join(map(repr, duplicated[:5]))}"
                  f"{', ...' if len(duplicated) > 5 else ''}); keeping the first vector of each.", stacklevel=3)
    return keep
