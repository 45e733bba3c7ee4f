"""Count-based word vectors on arrays (Levy, Goldberg and Dagan, 2015): windowed co-occurrence counts, (shifted)
PPMI with context distribution smoothing, and the truncated SVD the vectors come from. The counts are GloVe's too
(``glove.py`` beside this module), weighted 1/d by distance as Pennington et al. (2014) weight them.

Everything is sparse: the counts are a ``scipy.sparse`` matrix accumulated chunk by chunk as the corpus streams in
(``CooccurrenceCounter``), PPMI is computed on its non-zero entries only, and the SVD is scikit-learn's randomized
SVD (Halko et al. 2011), which needs only products with the sparse matrix. No V × V dense matrix is ever built.
``train_svd`` (``svd.py`` beside this module) runs them on a text corpus.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def window_weights(window: int, dynamic_window: bool, harmonic: bool = False) -> np.ndarray:
    """Weight of a context word at distance 1..window: 1, word2vec's dynamic window in expectation (a window
    drawn uniformly from 1..window reaches distance δ with probability (window − δ + 1) / window), or GloVe's 1/δ
    (``harmonic``: "word pairs that are d words apart contribute 1/d to the total count", Pennington et al. 2014).

    >>> window_weights(3, True).tolist()
    [1.0, 0.6666666666666666, 0.3333333333333333]
    >>> window_weights(4, False, harmonic=True).tolist()
    [1.0, 0.5, 0.3333333333333333, 0.25]
    """
    distances = np.arange(1, window + 1)
    if harmonic and dynamic_window:
        raise ValueError("a window is either dynamic (word2vec's) or harmonic (GloVe's 1/d), not both")
    if harmonic:
        return 1.0 / distances
    return (window - distances + 1) / window if dynamic_window else np.ones(window)


class CooccurrenceCounter:
    """Accumulates the symmetric co-occurrence counts #(w, c) of a corpus given as chunks of token ids.

    ``add(ids, starts)`` takes one chunk: ``ids`` the token ids of its sentences end to end, ``starts`` each
    sentence's offset plus the end (``encode_corpus``'s format). Words with ``keep[id]`` False are removed before
    windows are taken (as word2vec drops rare words), and windows do not cross sentences. ``counts`` is the V × V
    ``csr_matrix`` of (weighted) counts so far, ``tokens`` the number of tokens counted.

    Example::

        >>> counter = CooccurrenceCounter(vocab_size=5, window=1, dynamic_window=False)
        >>> counter.add(np.array([1, 2, 3]), np.array([0, 3]))
        >>> counter.counts.toarray()[2].tolist()   # word 2 saw 1 and 3 once each
        [0.0, 1.0, 0.0, 1.0, 0.0]
    """

    def __init__(self, vocab_size: int, window: int, dynamic_window: bool, keep: np.ndarray | None = None,
                 harmonic: bool = False):
        self.vocab_size = vocab_size
        self.weights = window_weights(window, dynamic_window, harmonic)
        self.keep = keep
        # Partial sums of the chunks so far, merged like a binary counter (a new sum absorbs every partial no larger
        # than itself), so a long corpus costs O(n log n) in the non-zero counts, not a full sum per chunk.
        self.partial_sums = [sp.csr_matrix((vocab_size, vocab_size), dtype=np.float64)]
        self.tokens = 0

    @property
    def counts(self) -> sp.csr_matrix:
        if len(self.partial_sums) > 1:
            self.partial_sums = [sum(self.partial_sums[1:], self.partial_sums[0])]
        return self.partial_sums[0]

    def add(self, ids: np.ndarray, starts: np.ndarray) -> None:
        ids = np.asarray(ids, dtype=np.int64)
        sentence = np.repeat(np.arange(len(starts) - 1), np.diff(starts))  # (N,) the sentence of each token
        if self.keep is not None:
            kept = self.keep[ids]
            ids, sentence = ids[kept], sentence[kept]
        self.tokens += len(ids)
        rows, cols, values = [], [], []
        for distance, weight in enumerate(self.weights, start=1):
            same = sentence[:-distance] == sentence[distance:]  # pairs inside one sentence
            left, right = ids[:-distance][same], ids[distance:][same]
            # Each pair counts both ways: c is in w's window and w in c's.
            rows += [left, right]
            cols += [right, left]
            values.append(np.full(2 * len(left), weight))
        chunk = sp.coo_matrix((np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))),
                              shape=(self.vocab_size, self.vocab_size)).tocsr()  # tocsr sums duplicate pairs
        while self.partial_sums and self.partial_sums[-1].nnz <= chunk.nnz:
            chunk = chunk + self.partial_sums.pop()
        self.partial_sums.append(chunk)


def ppmi(counts: sp.spmatrix, cds: float = 0.75, neg: float = 1.0) -> sp.csr_matrix:
    """Shifted positive PMI with context distribution smoothing, on the non-zero counts only:

        PMI_α(w, c) = log( #(w, c) · Σ_c' #(c')^α / (#(w) · #(c)^α) ),   SPPMI = max(PMI_α − log neg, 0)

    with #(w) the row sums and #(c) the column sums of ``counts`` (Levy et al. 2015, equations 3 and 8; the total
    #(·,·) cancels). A pair never seen has PMI −∞ and stays 0.

    >>> ppmi(sp.csr_matrix(np.array([[0., 2.], [2., 1.]])), cds=1.0).toarray().round(4).tolist()
    [[0.0, 0.5108], [0.5108, 0.0]]
    """
    counts = sp.csr_matrix(counts, dtype=np.float64, copy=True)  # a copy: the result shares its index arrays
    counts.sum_duplicates()
    counts.eliminate_zeros()
    word_totals = np.asarray(counts.sum(axis=1)).ravel()
    smoothed_contexts = np.asarray(counts.sum(axis=0)).ravel() ** cds
    rows = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))
    pmi = np.log(counts.data * smoothed_contexts.sum() / (word_totals[rows] * smoothed_contexts[counts.indices]))
    values = np.maximum(pmi - np.log(neg), 0.0)
    matrix = sp.csr_matrix((values, counts.indices, counts.indptr), shape=counts.shape)
    matrix.eliminate_zeros()
    return matrix


def factorize(matrix: sp.spmatrix, dimensions: int, eig: float = 0.5, add_context_vectors: bool = False,
              n_iter: int = 5, n_oversamples: int = 10, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(word vectors (V, d) float32, singular values (d,)): the rank-``dimensions`` SVD U·Σ·Vᵀ of ``matrix`` by
    scikit-learn's ``randomized_svd`` (signs fixed by ``svd_flip``, so a seed gives the same vectors), weighted as
    U·Σ^eig, plus V·Σ^eig with ``add_context_vectors`` (Levy et al.'s "w+c")."""
    empty_rows, empty_columns = matrix.getnnz(axis=1) == 0, matrix.getnnz(axis=0) == 0
    rank = np.count_nonzero(~empty_rows)
    if dimensions > rank:
        raise ValueError(f"vector_size={dimensions} is larger than the {rank} words with a positive PPMI entry: "
                         "the matrix has no more dimensions to give. Lower vector_size, or give more text or a lower "
                         "min_count.")
    from sklearn.utils.extmath import randomized_svd  # scikit-learn loads in ~1 s: only when factorising

    u, sigma, vt = randomized_svd(matrix, n_components=dimensions, n_oversamples=n_oversamples, n_iter=n_iter,
                                  random_state=seed)
    # A word without co-occurrences (a special token, a word only ever alone on its line) has an all-zero row:
    # its U row is exactly 0, where the randomized SVD leaves rounding noise (likewise V's rows, empty columns).
    u[empty_rows] = 0
    weight = sigma ** eig
    vectors = u * weight
    if add_context_vectors:
        v = vt.T
        v[empty_columns] = 0
        vectors = vectors + v * weight
    return vectors.astype(np.float32), sigma
