"""Configuration of lineage BERT (Devlin et al., 2018).

Field names follow transformers' ``BertConfig`` so that checkpoints and habits carry over; the model type is
``lineage-bert`` so it never collides with transformers' own ``bert``.
"""

from typing import ClassVar

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig

from .configuration_lineage_utils import (
    CheckedSizesMixin,
    NamedSizesMixin,
    RegisteredPipelinesMixin,
    TaskHeadConfigMixin,
    check_pair_encoding,
    check_pruned_heads,
    check_task_head,
    check_transformer_fields,
)


@strict
class LineageBertConfig(RegisteredPipelinesMixin, NamedSizesMixin, CheckedSizesMixin, TaskHeadConfigMixin,
                        PreTrainedConfig):
    r"""
    Sizes of the paper's models are available by name::

        >>> from hf_lineage import LineageBertConfig
        >>> LineageBertConfig.from_named("base")          # 12 layers, 768 hidden, 12 heads, 3072 FFN
        >>> LineageBertConfig.from_named("tiny", vocab_size=1000)

    ``is_decoder`` turns on the causal mask (and the KV cache); ``add_cross_attention`` adds cross-attention so
    the model can be the decoder of ``transformers.EncoderDecoderModel``.
    """

    model_type = "lineage-bert"
    # Cited in model cards (not a field: never written to config.json).
    paper = ("Devlin et al. (2018), BERT: Pre-training of Deep Bidirectional Transformers for Language "
             "Understanding. https://arxiv.org/abs/1810.04805")
    # Trainer leaves the cache (a decoder's or the LSTM language model's, under either name) out of predictions.
    keys_to_ignore_at_inference: ClassVar[list[str]] = ["past_key_values", "cache"]
    named_sizes: ClassVar[dict] = {
        # For tests and laptops: every code path, a few hundred thousand weights.
        "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256),
        "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
        "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
    }

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float | int = 0.1
    attention_probs_dropout_prob: float | int = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    classifier_dropout: float | int | None = None
    is_decoder: bool = False
    add_cross_attention: bool = False
    use_cache: bool = True
    # Special ids match the WordPiece tokenizer this package trains ([PAD]=0 ... [MASK]=4); set them explicitly
    # when the vocabulary comes from elsewhere (Google's vocab has [PAD]=0, [CLS]=101, [SEP]=102, [MASK]=103).
    pad_token_id: int | None = 0
    bos_token_id: int | None = None
    eos_token_id: int | list[int] | None = None
    tie_word_embeddings: bool = True
    # Attention heads removed by ``prune_heads``: layer -> head indices (the original numbering). The model is built
    # without them, so a pruned checkpoint loads into its smaller matrices.
    pruned_heads: dict | None = None
    # How ``LineageBertForSequenceClassification`` reads a sentence pair (segments A and B): "cross", the paper's
    # one sequence [CLS] a [SEP] b [SEP] classified from [CLS]; or "siamese" (Reimers & Gurevych 2019,
    # Sentence-BERT): each sentence encoded on its own, mean-pooled to u and v, classified from
    # [u, v, |u - v|, u * v] as the static-vector families do. Single sentences are read the same way by both.
    pair_encoding: str = "cross"
    # The token and sequence classifiers' head: "linear", the paper's (a linear layer on the last layer); or
    # "scalar_mix", the head every family gets in the lineage's frozen regime: a learned scalar mix of the L + 1
    # hidden states (ELMo's equation 1) → the static families' task encoder (the ``task_*`` fields, as theirs) →
    # classifier, each sentence of a pair read on its own. A frozen base then runs without dropout or gradients.
    task_head: str = "linear"
    # Skip the padding: with an attention_mask that has padding, the encoder runs its matmuls on the real tokens
    # only (the outputs at padded positions are then zeros, where transformers' BERT leaves values nothing should
    # read). False keeps the padded layout throughout.
    unpad_inputs: bool = True
    # Whether pre-training trained the next-sentence-prediction head (``hf-lineage pretrain bert
    # --no-next-sentence-prediction``: Devlin et al.'s "No NSP" ablation, masked LM only). Off, the head stays (the
    # checkpoint keeps its layout) but untrained, and ``LineageBertForPreTraining`` adds no NSP loss.
    next_sentence_prediction: bool = True

    def check_sizes(self):
        """Reject sizes the model cannot be built with, with a ValueError that names the field."""
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                     "max_position_embeddings", "type_vocab_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)}")
        if self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) is not a multiple of num_attention_heads "
                f"({self.num_attention_heads})"
            )
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        check_transformer_fields(self)
        check_pruned_heads(self)
        check_pair_encoding(self)
        check_task_head(self)
        if self.add_cross_attention and not self.is_decoder:
            raise ValueError("add_cross_attention=True needs is_decoder=True (cross-attention exists only in decoders)")


__all__ = ["LineageBertConfig"]
