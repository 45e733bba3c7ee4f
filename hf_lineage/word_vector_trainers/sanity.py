"""The check every CPU trainer of static word vectors runs after each epoch: its matrices finite and of sane size.

A diverged run (a learning rate far too high, or an instability the trainer should not have) used to train on and
save a folder of garbage without a word: largest |vector| 4.6 × 10¹⁷, analogies 0 %, similarity correlations NaN.
Now the trainer stops after the first epoch that fails this check, with one line naming the epoch and what it found,
before anything is written (the trainers create their output folder only once training has finished).
"""

from __future__ import annotations

import numpy as np

# A trained vector's Euclidean norm stays within tens (CBOW, 5 epochs over WikiText-2 × 11, 22 M words: the longest
# input vector 32; the diverged runs of issue 59: 10¹⁷ to 10³⁷); past ±6 a word2vec dot product sits on the flat end
# of the sigmoid, so training itself does not push norms far beyond. A norm past this bound means the run diverged.
MAX_SANE_NORM = 1e3
_ROWS_AT_ONCE = 1 << 14  # the norms in blocks of at most 40 MB in float64, not a copy of a (3 M × 300) matrix


class DivergedError(ValueError):
    """A trainer's vectors stopped being finite or grew past ``MAX_SANE_NORM``; the message says where and why."""


def row_norms(matrix: np.ndarray) -> np.ndarray:
    """Each row's Euclidean norm in float64 (inf or NaN where the row is not finite or overflows float32)."""
    norms = np.empty(len(matrix), dtype=np.float64)
    for start in range(0, len(matrix), _ROWS_AT_ONCE):
        block = matrix[start:start + _ROWS_AT_ONCE].astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            norms[start:start + _ROWS_AT_ONCE] = np.sqrt(np.einsum("ij,ij->i", block, block))
    return norms


def check_vectors(trainer: str, epoch: int, epochs: int, advice: str, matrices: dict) -> None:
    """Raise ``DivergedError`` when a matrix of ``matrices`` (name → (rows, dim) array, e.g. ``{"input vectors":
    syn0}``) holds a non-finite value or a row longer than ``MAX_SANE_NORM`` after epoch ``epoch`` of ``epochs``.

        >>> check_vectors("word2vec", 1, 5, "lower alpha", {"input vectors": np.ones((3, 4), np.float32)})
        >>> check_vectors("word2vec", 2, 5, "lower alpha", {"input vectors": np.full((3, 4), 1e20, np.float32)})
        Traceback (most recent call last):
        ...
        hf_lineage.word_vector_trainers.sanity.DivergedError: word2vec diverged in epoch 2 of 5: input vectors: 3 of 3 \
rows longer than 1e+03 (largest norm 2e+20); nothing was saved. lower alpha
    """
    found = []
    for name, matrix in matrices.items():
        if matrix.size == 0:
            continue
        norms = row_norms(matrix)
        finite = np.isfinite(norms)
        broken = int((~finite).sum())
        huge = int((norms[finite] > MAX_SANE_NORM).sum())
        if broken or huge:
            parts = [f"{broken} of {len(norms)} rows not finite"] if broken else []
            if huge:
                parts.append(f"{huge} of {len(norms)} rows longer than {MAX_SANE_NORM:.0e} (largest norm "
                             f"{norms[finite].max():.2g})")
            found.append(f"{name}: {', '.join(parts)}")
    if found:
        raise DivergedError(f"{trainer} diverged in epoch {epoch} of {epochs}: {'; '.join(found)}; nothing was "
                            f"saved. {advice}")
