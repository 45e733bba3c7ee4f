"""Word-vector benchmarks computed as gensim computes them: ``evaluate_word_analogies`` (``questions-words.txt``,
the C tool's ``compute-accuracy``) and ``evaluate_word_pairs`` (WordSim-353, SimLex-999)."""

from __future__ import annotations

import logging
import os

import numpy as np

logger = logging.getLogger(__name__)

# Rows of the (questions, vocabulary) score matrix computed per matrix product in evaluate_word_analogies:
# 2**24 float32 scores = 64 MB at a time, whatever the vocabulary size.
_ANALOGY_SCORE_ELEMENTS = 2**24


class EvaluationMixin:
    """The benchmarks of ``WordVectors`` (which provides ``index_to_key``, ``vectors``, ``norms``, ``fill_norms``,
    ``_scores`` and ``_restricted_end``)."""

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

    def evaluate_word_analogies(self, analogies: str | os.PathLike, restrict_vocab: int = 300000,
                                case_insensitive: bool = True, dummy4unknown: bool = False):
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

    def evaluate_word_pairs(self, pairs: str | os.PathLike, delimiter: str = "\t", encoding: str = "utf8",
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
