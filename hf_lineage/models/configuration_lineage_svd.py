"""Configuration of lineage SVD: count-based word vectors, windowed co-occurrence counts → positive pointwise mutual
information (PPMI) → truncated SVD, as Levy, Goldberg and Dagan (2015, "Improving Distributional Similarity with
Lessons Learned from Word Embeddings") tuned it.

Field names follow the paper's hyperparameters (``cds``, ``neg``, ``eig``, ``w+c`` as ``add_context_vectors``,
``dyn`` as ``dynamic_window``) and word2vec's config where the two share one (``vector_size``, ``window``,
``min_count``). The model type is ``lineage-svd``.
"""

from typing import ClassVar

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig

from .configuration_lineage_utils import (
    CheckedSizesMixin,
    NamedSizesMixin,
    RegisteredPipelinesMixin,
    TaskHeadConfigMixin,
    check_task_fields,
)


@strict
class LineageSvdConfig(RegisteredPipelinesMixin, NamedSizesMixin, CheckedSizesMixin, TaskHeadConfigMixin,
                       PreTrainedConfig):
    r"""
    Named configurations::

        >>> from hf_lineage import LineageSvdConfig
        >>> LineageSvdConfig.from_named("levy2015", vocab_size=30000)   # the paper's recommended SVD settings
        >>> LineageSvdConfig.from_named("tiny", vocab_size=100)

    The word vectors are the rows of U·Σ^eig of the truncated SVD U·Σ·Vᵀ of the (shifted) PPMI matrix,
    plus V·Σ^eig (the context vectors) with ``add_context_vectors``. PPMI uses the smoothed context distribution
    P_α(c) = #(c)^cds / Σ #(c')^cds and is shifted by log ``neg`` before negative values are clipped at 0.
    """

    model_type = "lineage-svd"
    # Cited in model cards (not a field: never written to config.json).
    paper = ("Levy, Goldberg and Dagan (2015), Improving Distributional Similarity with Lessons Learned from "
             "Word Embeddings. TACL 3:211-225. https://aclanthology.org/Q15-1016/")
    keys_to_ignore_at_inference: ClassVar[list[str]] = ["past_key_values", "cache"]
    named_sizes: ClassVar[dict] = {
        # For tests and laptops: a handful of dimensions, every word kept.
        "tiny": dict(vector_size=16, window=2, min_count=1),
        # Levy et al. (2015), section 7 ("practical recommendations") and their experiments: 500 dimensions, context
        # distribution smoothing 0.75, no shift for SVD (neg 1), symmetric eigenvalue weighting (eig 0.5) and w+c;
        # word2vec's dynamic window of 5.
        "levy2015": dict(vector_size=500, window=5, dynamic_window=True, min_count=5, cds=0.75, neg=1, eig=0.5,
                         add_context_vectors=True),
    }

    vocab_size: int = 30000
    vector_size: int = 300
    # Largest distance between a word and a context word counted (windows stop at the end of a line).
    window: int = 5
    # word2vec's dynamic window in expectation: a context word at distance δ counts (window − δ + 1) / window
    # instead of 1 ("dyn" in the paper).
    dynamic_window: bool = True
    # Words seen fewer times are dropped from the corpus before windows are taken (as word2vec and gensim do).
    min_count: int = 5
    # Context distribution smoothing exponent α (1 turns it off).
    cds: float | int = 0.75
    # Shifted PPMI: max(PMI − log neg, 0) (1: no shift).
    neg: float | int = 1
    # Eigenvalue weighting p: word vectors U·Σ^p (1: the SVD's own, 0: U alone).
    eig: float | int = 0.5
    # "w+c": add the context vectors V·Σ^p to the word vectors.
    add_context_vectors: bool = False
    # Randomized SVD (Halko et al. 2011, scikit-learn's randomized_svd): power iterations and extra random vectors.
    svd_iterations: int = 5
    svd_oversamples: int = 10
    # Downstream: keep the vectors fixed (feature-based use) or fine-tune them with the task.
    freeze_vectors: bool = False

    # The word-level tokenizer's specials: <pad>=0 <unk>=1 <s>=2 </s>=3.
    pad_token_id: int | None = 0
    bos_token_id: int | None = 2
    eos_token_id: int | list[int] | None = 3
    tie_word_embeddings: bool = False

    def check_sizes(self):
        """Reject settings the vectors cannot be computed with, with a ValueError that names the field."""
        for name in ("vocab_size", "vector_size", "window", "svd_iterations"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)}")
        if self.min_count < 0:
            raise ValueError(f"min_count must be >= 0, got {self.min_count}")
        if not 0 < self.cds <= 1:
            raise ValueError(f"cds (the context distribution smoothing exponent) must be in (0, 1], got {self.cds}")
        if not self.neg >= 1:
            raise ValueError(f"neg (the PMI shift log neg) must be >= 1 (1: no shift), got {self.neg}")
        if not 0 <= self.eig <= 1:
            raise ValueError(f"eig (the eigenvalue weighting exponent) must be in [0, 1], got {self.eig}")
        if self.svd_oversamples < 0:
            raise ValueError(f"svd_oversamples must be >= 0, got {self.svd_oversamples}")
        check_task_fields(self)


__all__ = ["LineageSvdConfig"]
