"""Configuration of lineage GPT (Radford et al., 2018, "Improving Language Understanding by Generative Pre-Training").

Field names follow this package's BERT (and transformers' ``BertConfig``) so the two Transformers read alike and
``EncoderDecoderModel`` finds the names it expects; ``hf_lineage.convert`` maps them to and from transformers'
``OpenAIGPTConfig`` (``n_embd``, ``n_layer``, ``afn``, ...). The model type is ``lineage-gpt``.
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
class LineageGPTConfig(RegisteredPipelinesMixin, NamedSizesMixin, CheckedSizesMixin, TaskHeadConfigMixin,
                       PreTrainedConfig):
    r"""
    The paper's model is available by name::

        >>> from hf_lineage import LineageGPTConfig
        >>> LineageGPTConfig.from_named("gpt")            # 12 layers, 768 hidden, 12 heads, 3072 FFN, context 512
        >>> LineageGPTConfig.from_named("tiny", vocab_size=1000)

    ``lm_loss_weight`` is the paper's λ: in training, fine-tuning heads add λ · (language-model loss) to the task
    loss when they are given labels (0 turns the auxiliary objective off); in evaluation their ``loss`` is the task
    loss alone and ``lm_loss`` comes separately. ``add_cross_attention`` gives every block a
    cross-attention sub-layer, so the model can be the decoder of ``transformers.EncoderDecoderModel``.
    """

    model_type = "lineage-gpt"
    # Cited in model cards (not a field: never written to config.json).
    paper = ("Radford et al. (2018), Improving Language Understanding by Generative Pre-Training. "
             "https://cdn.openai.com/research-covers/language-unsupervised/language_understanding_paper.pdf")
    # Trainer leaves these out of the predictions it gathers at evaluation.
    keys_to_ignore_at_inference: ClassVar[list[str]] = ["past_key_values", "cache", "lm_loss"]
    named_sizes: ClassVar[dict] = {
        # For tests and laptops: every code path, a few hundred thousand weights (plus the vocabulary).
        "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256),
        # Section 4.1: 12 layers, 768-dimensional states, 12 heads, 3072-dimensional FFN, 512-token context.
        "gpt": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                    max_position_embeddings=512),
    }

    # The paper's BPE had 40,000 merges; transformers' port of the released model has 40,478 tokens.
    vocab_size: int = 40478
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    # OpenAI's code computes GELU with the tanh approximation; "gelu_pytorch_tanh" is that formula, fused.
    hidden_act: str = "gelu_pytorch_tanh"
    # "Residual, embedding, and attention dropouts with a rate of 0.1" (section 4.1).
    hidden_dropout_prob: float | int = 0.1
    embedding_dropout_prob: float | int = 0.1
    attention_probs_dropout_prob: float | int = 0.1
    # Dropout before the task classifier (0.1 in the paper); None means hidden_dropout_prob.
    classifier_dropout: float | int | None = None
    max_position_embeddings: int = 512
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-5
    # λ of section 3.2: L3 = L2 (task) + λ · L1 (language modelling on the task's own text).
    lm_loss_weight: float | int = 0.5
    # Section 3.3's similarity transformation: with pair_task="similarity" the sequence classifier reads a pair
    # given as one sequence <s> a $ b <e> (what a tokenizer and pipelines make) in both orders itself, adding
    # <s> b $ a <e>; delimiter_token_id is the id of $. "entailment" (or None) reads the sequence as given.
    pair_task: str | None = None
    delimiter_token_id: int | None = None
    # "cross": the paper's transformations above, one sequence per pair. "siamese" (Reimers & Gurevych 2019): each
    # text encoded on its own and mean-pooled to u and v, the classifier reading [u, v, |u - v|, u * v]; the pair
    # still arrives as <s> a $ b <e> and is read in both orders, whose states before $ have seen one text only.
    pair_encoding: str = "cross"
    # The token and sequence classifiers' head: "linear", the paper's (a linear layer on the last layer); or
    # "scalar_mix", the head every family gets in the lineage's frozen regime: a learned scalar mix of the L + 1
    # hidden states (ELMo's equation 1) → the static families' task encoder (the ``task_*`` fields, as theirs) →
    # classifier, each sentence of a pair read on its own. A frozen base then runs without dropout or gradients.
    task_head: str = "linear"
    # GPT is always a causal decoder; the flag exists because EncoderDecoderModel reads and sets it.
    is_decoder: bool = True
    add_cross_attention: bool = False
    use_cache: bool = True
    # Special ids match the BPE tokenizer this package trains (<pad>=0, <unk>=1, <|endoftext|>=2).
    pad_token_id: int | None = 0
    bos_token_id: int | None = 2
    eos_token_id: int | list[int] | None = 2
    tie_word_embeddings: bool = True
    # Attention heads removed by ``prune_heads``: layer -> head indices (the original numbering). The model is built
    # without them, so a pruned checkpoint loads into its smaller matrices.
    pruned_heads: dict | None = None

    def check_sizes(self):
        """Reject sizes the model cannot be built with, with a ValueError that names the field."""
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                     "max_position_embeddings"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)}")
        if self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) is not a multiple of num_attention_heads "
                f"({self.num_attention_heads})"
            )
        for name in ("hidden_dropout_prob", "embedding_dropout_prob", "attention_probs_dropout_prob"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        check_transformer_fields(self)
        check_pruned_heads(self)
        check_pair_encoding(self)
        check_task_head(self)
        if self.pair_task not in (None, "entailment", "similarity"):
            raise ValueError(f"pair_task must be 'entailment', 'similarity' or None, got {self.pair_task!r}")
        if self.pair_task == "similarity" and self.delimiter_token_id is None:
            raise ValueError("pair_task='similarity' needs delimiter_token_id, the id of the delimiter $ that "
                             "separates the two texts")
        if self.lm_loss_weight < 0:
            raise ValueError(f"lm_loss_weight (the paper's λ) must be >= 0, got {self.lm_loss_weight}")
        if not self.is_decoder:
            raise ValueError("is_decoder=False is not supported: lineage-gpt is a causal (decoder-only) model")


__all__ = ["LineageGPTConfig"]
