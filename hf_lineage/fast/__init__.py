"""Fast CPU trainers written with numba (kept out of ``hf_lineage.models``, whose files ship with the weights)."""

from .word2vec_cpu import train_word2vec

__all__ = ["train_word2vec"]
