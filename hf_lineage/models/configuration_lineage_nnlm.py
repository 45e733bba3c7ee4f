"""Configuration of lineage NNLM (Bengio, Ducharme, Vincent and Jauvin, 2003, "A Neural Probabilistic Language
Model", JMLR 3:1137-1155).

The paper's symbols, and the fields that hold them:

==========  ======================  ===================================================================
paper       field                   meaning
==========  ======================  ===================================================================
|V|         ``vocab_size``          words in the vocabulary (Brown: 16,383 after merging rare words)
n − 1       ``context_size``        previous words the next word is predicted from (n = 5: 4 words)
m           ``embedding_size``      size of a word's feature vector, a row of the shared table C
h           ``hidden_size``         tanh hidden units; 0 = no hidden layer (the paper's h = 0 rows)
W ≠ 0       ``direct_connections``  a linear map W from the concatenated features straight to the output
==========  ======================  ===================================================================

The model type is ``lineage-nnlm``.
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
class LineageNNLMConfig(RegisteredPipelinesMixin, NamedSizesMixin, CheckedSizesMixin, TaskHeadConfigMixin,
                        PreTrainedConfig):
    r"""
    The rows of the paper's Brown table are available by name (Table 1 of Bengio et al. 2003, JMLR; the paper's
    test perplexities in the comments)::

        >>> from hf_lineage import LineageNNLMConfig
        >>> LineageNNLMConfig.from_named("mlp1", vocab_size=16383)   # n = 5, h = 50, m = 60, direct connections
        >>> LineageNNLMConfig.from_named("tiny", vocab_size=1000)

    The model computes the paper's equation (1), ``y = b + W·x + U·tanh(d + H·x)``, with x the feature vectors
    C(w) of the ``context_size`` previous words, most recent first. Before the first word of a sequence (and in
    place of left padding) the context holds ``context_start_token_id``: by default ``</s>``, the separator the
    pre-training stream puts after every line, so a prompt begins the way every training sentence did.

    ``freeze_vectors`` concerns the downstream task models: table C is their first layer, frozen or fine-tuned.
    """

    model_type = "lineage-nnlm"
    # Cited in model cards (not a field: never written to config.json).
    paper = ("Bengio, Ducharme, Vincent and Jauvin (2003), A Neural Probabilistic Language Model. Journal of "
             "Machine Learning Research 3:1137-1155. https://www.jmlr.org/papers/v3/bengio03a.html")
    named_sizes: ClassVar[dict] = {
        # For tests and laptops: every code path (hidden layer and direct connections), a few thousand weights.
        "tiny": dict(context_size=3, embedding_size=16, hidden_size=32, direct_connections=True),
        # Table 1 of the paper (Brown corpus), the single networks (the "mix" rows average a network with a trigram).
        # n = 5, h = 50, m = 60, direct connections: test perplexity 268.
        "mlp1": dict(context_size=4, embedding_size=60, hidden_size=50, direct_connections=True),
        # n = 5, h = 0 (no hidden layer), m = 60, direct connections: 310.
        "mlp3": dict(context_size=4, embedding_size=60, hidden_size=0, direct_connections=True),
        # n = 5, h = 50, m = 30, direct connections: 279.
        "mlp5": dict(context_size=4, embedding_size=30, hidden_size=50, direct_connections=True),
        # n = 3, h = 50, m = 30, direct connections: 293.
        "mlp7": dict(context_size=2, embedding_size=30, hidden_size=50, direct_connections=True),
        # n = 5, h = 100, m = 30, no direct connections: 276 (252 mixed with the trigram, MLP10, the paper's best).
        "mlp9": dict(context_size=4, embedding_size=30, hidden_size=100, direct_connections=False),
    }

    # The paper's Brown vocabulary: words seen at most 3 times merged into one symbol.
    vocab_size: int = 16383
    context_size: int = 4
    embedding_size: int = 60
    hidden_size: int = 50
    direct_connections: bool = True
    # The paper used no dropout (it predates it); dropout on the concatenated features x and on the tanh units
    # is what a modern re-implementation adds on a corpus as small as Brown.
    embedding_dropout: float | int = 0.0
    hidden_dropout: float | int = 0.0
    # Standard deviation of the normal initialisation of C and of every weight matrix (biases start at zero).
    initializer_range: float = 0.02
    # The word whose vector C fills the context before the first word of a sequence and in place of left padding.
    context_start_token_id: int = 3
    # Freezes table C in the downstream task models (a frozen first layer instead of a fine-tuned one).
    freeze_vectors: bool = False
    # The word-level tokenizer's specials: <pad>=0 <unk>=1 <s>=2 </s>=3.
    pad_token_id: int | None = 0
    bos_token_id: int | None = 2
    eos_token_id: int | list[int] | None = 3
    # The output layer's rows have h + (n − 1)·m weights ([U W]), not m: there is nothing to tie C to.
    tie_word_embeddings: bool = False

    def check_sizes(self):
        """Reject sizes the model cannot be built with, with a ValueError that names the field."""
        for name in ("vocab_size", "context_size", "embedding_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)}")
        if self.hidden_size < 0:
            raise ValueError(f"hidden_size must be >= 0 (0 = no hidden layer), got {self.hidden_size}")
        if self.hidden_size == 0 and not self.direct_connections:
            raise ValueError(
                "hidden_size=0 needs direct_connections=True: with neither a hidden layer nor direct connections "
                "the output would not depend on the context"
            )
        for name in ("embedding_dropout", "hidden_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        if self.initializer_range <= 0:
            raise ValueError(f"initializer_range must be positive, got {self.initializer_range}")
        if not 0 <= self.context_start_token_id < self.vocab_size:
            raise ValueError(
                f"context_start_token_id must be a token id in [0, vocab_size={self.vocab_size}), "
                f"got {self.context_start_token_id}"
            )
        if self.tie_word_embeddings:
            raise ValueError(
                "tie_word_embeddings=True is not supported: the NNLM's output layer [U W] has rows of size "
                "hidden_size + context_size * embedding_size, not embedding_size"
            )
        check_task_fields(self)


__all__ = ["LineageNNLMConfig"]
