"""Configuration of lineage GloVe: count-based word vectors fitted by weighted least squares to the logarithm of
windowed co-occurrence counts, as Pennington, Socher and Manning (2014, "GloVe: Global Vectors for Word
Representation") train them.

Field names follow the paper's (``x_max``, ``alpha``) and the svd and word2vec configs where they share one
(``vector_size``, ``window``, ``min_count``, ``epochs``, ``add_context_vectors``). The model type is
``lineage-glove``.
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
class LineageGloveConfig(RegisteredPipelinesMixin, NamedSizesMixin, CheckedSizesMixin, TaskHeadConfigMixin,
                         PreTrainedConfig):
    r"""
    Named configurations::

        >>> from hf_lineage import LineageGloveConfig
        >>> LineageGloveConfig.from_named("pennington2014", vocab_size=30000)   # the paper's 300-d vectors
        >>> LineageGloveConfig.from_named("tiny", vocab_size=100)

    The vectors minimise J = Σ_ij f(X_ij) (w_i·w̃_j + b_i + b̃_j − log X_ij)² over the non-zero counts X_ij, with
    f(x) = (x / x_max)^alpha below x_max and 1 above, by AdaGrad; the saved vectors are W + W̃ (``add_context_vectors``).
    """

    model_type = "lineage-glove"
    # Cited in model cards (not a field: never written to config.json).
    paper = ("Pennington, Socher and Manning (2014), GloVe: Global Vectors for Word Representation. EMNLP 2014, "
             "1532-1543. https://aclanthology.org/D14-1162/")
    keys_to_ignore_at_inference: ClassVar[list[str]] = ["past_key_values", "cache"]
    named_sizes: ClassVar[dict] = {
        # For tests and laptops: a handful of dimensions, every word kept, few iterations.
        "tiny": dict(vector_size=16, window=2, min_count=1, epochs=25),
        # Pennington et al. (2014), section 4.2: a symmetric context window of 10 words weighted 1/d, x_max 100,
        # α 3/4, AdaGrad from 0.05, 100 iterations for 300 dimensions (50 below 300), W + W̃ as the vectors; the
        # released glove.c's vocab_min_count of 5.
        "pennington2014": dict(vector_size=300, window=10, harmonic_window=True, min_count=5, x_max=100.0,
                               alpha=0.75, learning_rate=0.05, epochs=100, add_context_vectors=True),
    }

    vocab_size: int = 30000
    vector_size: int = 300
    # Largest distance between a word and a context word counted (windows stop at the end of a line).
    window: int = 10
    # The paper's "decreasing weighting function": a context word at distance d counts 1/d (False: 1).
    harmonic_window: bool = True
    # Words seen fewer times are dropped from the corpus before windows are taken (as glove.c's vocab_min_count).
    min_count: int = 5
    # The weighting function f(x) = (x / x_max)^alpha for x < x_max, else 1.
    x_max: float | int = 100.0
    alpha: float | int = 0.75
    # AdaGrad's initial learning rate, and the passes over the non-zero counts.
    learning_rate: float | int = 0.05
    epochs: int = 100
    # "W + W̃": the saved vectors are the sum of the word and context vectors (False: W alone).
    add_context_vectors: bool = True
    # Downstream: keep the vectors fixed (feature-based use) or fine-tune them with the task.
    freeze_vectors: bool = False

    # The word-level tokenizer's specials: <pad>=0 <unk>=1 <s>=2 </s>=3.
    pad_token_id: int | None = 0
    bos_token_id: int | None = 2
    eos_token_id: int | list[int] | None = 3
    tie_word_embeddings: bool = False

    def check_sizes(self):
        """Reject settings the vectors cannot be trained with, with a ValueError that names the field."""
        for name in ("vocab_size", "vector_size", "window", "epochs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)}")
        if self.min_count < 0:
            raise ValueError(f"min_count must be >= 0, got {self.min_count}")
        if not self.x_max > 0:
            raise ValueError(f"x_max (the count where the weighting reaches 1) must be > 0, got {self.x_max}")
        if not 0 < self.alpha <= 1:
            raise ValueError(f"alpha (the weighting exponent) must be in (0, 1], got {self.alpha}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")
        check_task_fields(self)


__all__ = ["LineageGloveConfig"]
