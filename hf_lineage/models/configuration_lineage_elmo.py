"""Configuration of lineage ELMo (Peters et al., 2018, "Deep contextualized word representations").

Field names map one to one onto the ``options.json`` that bilm-tf (the authors' code) and AllenNLP ship with the
published weights; ``hf_lineage.convert.allennlp_elmo`` reads that file into this config:

=================================  ==============================================
options.json                       LineageElmoConfig
=================================  ==============================================
char_cnn.embedding.dim             char_embedding_size
char_cnn.filters                   char_cnn_filters
char_cnn.activation                char_cnn_activation
char_cnn.n_highway                 n_highway
char_cnn.max_characters_per_token  max_characters_per_token
char_cnn.n_characters              n_characters (262: 261 ids + AllenNLP's padding row 0)
lstm.dim                           lstm_cell_size
lstm.projection_dim                projection_size
lstm.n_layers                      num_lstm_layers
lstm.cell_clip / lstm.proj_clip    cell_clip / proj_clip
lstm.use_skip_connections          use_skip_connections
dropout                            dropout
n_tokens_vocab                     vocab_size
=================================  ==============================================

The model type is ``lineage-elmo``.
"""

from dataclasses import field
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

# The character CNN of every published ELMo: 2048 filters of widths 1-7 (bilm-tf's options.json).
PUBLISHED_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]

SOFTMAX_TYPES = ("full", "sampled", "adaptive")


@strict
class LineageElmoConfig(RegisteredPipelinesMixin, NamedSizesMixin, CheckedSizesMixin, TaskHeadConfigMixin,
                        PreTrainedConfig):
    r"""
    The published models are available by name::

        >>> from hf_lineage import LineageElmoConfig
        >>> LineageElmoConfig.from_named("original")      # 4096-cell LSTMs projected to 512, 2 highway layers
        >>> LineageElmoConfig.from_named("small")         # 1024 / 128, 1 highway layer
        >>> LineageElmoConfig.from_named("tiny", vocab_size=1000)

    A word's representation comes from its characters (``use_char_inputs=True``, the paper's model) or from a word
    embedding table (bilm-tf's word-input option, used for the PTB benchmark). Each direction has its own stack of
    ``num_lstm_layers`` LSTMs with ``lstm_cell_size`` cells whose output is projected to ``projection_size``; the
    cell state is clipped to ±``cell_clip`` and the projected output to ±``proj_clip`` (None: no clipping, which lets
    the model use PyTorch's fused LSTM). ``use_skip_connections`` adds each layer's input to its output from the
    second layer on. With ``stateful`` (AllenNLP's behaviour; off by default) ``LineageElmoModel`` starts row b of
    each batch from the LSTM states that row b of the previous batch ended with.

    ``softmax_type`` is "full", "sampled" (Jean et al. 2015's sampled softmax with ``num_sampled`` log-uniform
    negatives, as bilm-tf trained; the full softmax is used at evaluation) or "adaptive" (Grave et al. 2017, with
    ``adaptive_cutoffs``). Both need a vocabulary sorted by decreasing frequency, as this package's tokenizers are.

    ``num_output_representations`` scalar mixes (softmax-normalised layer weights × γ, optionally over
    layer-normalised layers) are returned by ``LineageElmoModel``, followed by ``scalar_mix_dropout``. With
    ``freeze_bilm`` (the default, the paper's feature-based use) the biLM's weights are frozen and it runs in eval
    mode; only the mixes and the task model train.
    """

    model_type = "lineage-elmo"
    # Cited in model cards (not a field: never written to config.json).
    paper = ("Peters et al. (2018), Deep contextualized word representations. NAACL 2018. "
             "https://arxiv.org/abs/1802.05365")
    # Trainer leaves these out of the predictions it gathers at evaluation (the cache: both of its names).
    keys_to_ignore_at_inference: ClassVar[list[str]] = ["hidden_states", "backward_logits", "past_key_values",
                                                        "cache"]
    named_sizes: ClassVar[dict] = {
        # For tests and laptops: every code path (char CNN, highway, projection, clipping, residual) in ~100k weights.
        "tiny": dict(char_embedding_size=8, char_cnn_filters=[[1, 8], [2, 8], [3, 16]], n_highway=1,
                     lstm_cell_size=64, projection_size=16),
        # The published "small" model (13.6M parameters): LSTM 1024 cells projected to 128, one highway layer.
        "small": dict(lstm_cell_size=1024, projection_size=128, n_highway=1),
        # The published "medium" model (28.0M): 2048 / 256, one highway layer.
        "medium": dict(lstm_cell_size=2048, projection_size=256, n_highway=1),
        # The paper's model (93.6M): 4096 / 512, two highway layers, 2048 character filters.
        "original": dict(lstm_cell_size=4096, projection_size=512, n_highway=2),
    }

    # Softmax vocabulary (the 1B Word Benchmark's 793,471 words for the published models).
    vocab_size: int = 793471
    # Token layer: characters -> CNN -> highway -> projection, or (use_char_inputs=False) a word embedding.
    use_char_inputs: bool = True
    n_characters: int = 262
    max_characters_per_token: int = 50
    char_embedding_size: int = 16
    char_cnn_filters: list[list[int]] = field(default_factory=lambda: [list(f) for f in PUBLISHED_FILTERS])
    char_cnn_activation: str = "relu"
    n_highway: int = 2
    # biLSTM: one stack per direction.
    lstm_cell_size: int = 4096
    projection_size: int = 512
    num_lstm_layers: int = 2
    cell_clip: float | int | None = 3.0
    proj_clip: float | int | None = 3.0
    use_skip_connections: bool = True
    # LineageElmoModel carries each row's LSTM state (both directions) from one batch to the next, as AllenNLP's
    # Elmo and bilm-tf do; off for training (features would depend on what ran before). load_allennlp_elmo sets it.
    stateful: bool = False
    # Dropout on every LSTM layer's input and on the top layer's output while the biLM trains (bilm-tf's 0.1).
    dropout: float | int = 0.1
    # Softmax shared by both directions.
    softmax_type: str = "full"
    num_sampled: int = 8192
    adaptive_cutoffs: list[int] = field(default_factory=lambda: [20000, 100000])
    adaptive_div_value: float | int = 4.0
    # Scalar mixes (section 3.2).
    num_output_representations: int = 1
    do_layer_norm: bool = False
    scalar_mix_dropout: float | int = 0.5
    # Feature-based use: the biLM is frozen and the scalar mix + task model train.
    freeze_bilm: bool = True
    # Word ids of the tokenizer this package builds (<pad>=0, <UNK>=1, <S>=2, </S>=3).
    pad_token_id: int | None = 0
    bos_token_id: int | None = 2
    eos_token_id: int | list[int] | None = 3
    # The word-input embedding and the softmax may share weights (bilm-tf's share_embedding_softmax).
    tie_word_embeddings: bool = False
    use_cache: bool = True

    @property
    def output_size(self) -> int:
        """Width of every layer ELMo returns: forward and backward projections side by side."""
        return 2 * self.projection_size

    def check_sizes(self):
        """Reject sizes the model cannot be built with, with a ValueError that names the field."""
        for name in ("vocab_size", "n_characters", "max_characters_per_token", "char_embedding_size",
                     "lstm_cell_size", "projection_size", "num_lstm_layers", "num_output_representations",
                     "num_sampled"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)}")
        if self.n_highway < 0:
            raise ValueError(f"n_highway must be >= 0, got {self.n_highway}")
        if self.projection_size > self.lstm_cell_size:
            raise ValueError(f"projection_size ({self.projection_size}) must not exceed lstm_cell_size "
                             f"({self.lstm_cell_size}); equal sizes mean no projection")
        if self.use_char_inputs:
            if not self.char_cnn_filters or any(len(f) != 2 or min(f) < 1 for f in self.char_cnn_filters):
                raise ValueError(f"char_cnn_filters must be a non-empty list of [width, count] pairs of positive "
                                 f"integers, got {self.char_cnn_filters}")
            widest = max(w for w, _ in self.char_cnn_filters)
            if widest > self.max_characters_per_token:
                raise ValueError(f"char_cnn_filters has width {widest} > max_characters_per_token "
                                 f"({self.max_characters_per_token})")
            if self.max_characters_per_token < 3:
                raise ValueError("max_characters_per_token must be >= 3 (begin-of-word, a byte, end-of-word), got "
                                 f"{self.max_characters_per_token}")
            if self.n_characters < 262:
                raise ValueError(f"n_characters must be >= 262 (256 bytes, 5 markers, padding), got "
                                 f"{self.n_characters}")
        if self.char_cnn_activation not in ("relu", "tanh"):
            raise ValueError(f"char_cnn_activation must be 'relu' or 'tanh', got {self.char_cnn_activation!r}")
        for name in ("cell_clip", "proj_clip"):
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive or None (no clipping), got {getattr(self, name)}")
        for name in ("dropout", "scalar_mix_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        if self.softmax_type not in SOFTMAX_TYPES:
            raise ValueError(f"softmax_type must be one of {SOFTMAX_TYPES}, got {self.softmax_type!r}")
        if self.softmax_type == "adaptive":
            cutoffs = self.adaptive_cutoffs
            if not cutoffs or sorted(set(cutoffs)) != list(cutoffs) or cutoffs[0] < 1 or cutoffs[-1] >= self.vocab_size:
                raise ValueError(f"adaptive_cutoffs must be increasing integers in [1, vocab_size={self.vocab_size}), "
                                 f"got {cutoffs}")
            if self.adaptive_div_value <= 0:
                raise ValueError(f"adaptive_div_value must be positive, got {self.adaptive_div_value}")
        if self.tie_word_embeddings and (self.use_char_inputs or self.softmax_type == "adaptive"):
            raise ValueError("tie_word_embeddings needs word inputs (use_char_inputs=False) and a full or sampled "
                             "softmax: only then are the input embedding and the softmax both (vocab, projection)")
        check_task_fields(self)


__all__ = ["LineageElmoConfig"]
