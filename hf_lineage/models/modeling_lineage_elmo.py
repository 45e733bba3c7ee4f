"""Lineage ELMo (Peters et al., 2018): a character-CNN bidirectional language model whose layers, mixed by learned
scalar weights, are the "deep contextualized word representations" fed to a task's own model.

Read top to bottom: the character encoder (character embedding → convolutions of widths 1-7 → max over the word →
highway layers → projection), one LSTM layer with a projected, clipped state, the biLM (a stack of such layers per
direction, residual connections from the second layer on), the scalar mix, the model that returns every layer and
the mixes, the softmax shared by both directions, and the language models: forward + backward for pre-training,
forward only for generation.

The computation is bilm-tf's (the authors' TensorFlow code) and AllenNLP's, so their published ``weights.hdf5``
load with ``hf_lineage.convert.allennlp_elmo`` and give the same layers:

* LSTM step: ``c = f ⊙ c + i ⊙ g``, ``c`` clipped to ±``cell_clip``; ``h = W_hr (o ⊙ tanh c)``, clipped to
  ±``proj_clip`` — TensorFlow's ``LSTMCell(num_proj, cell_clip, proj_clip)``. Without clipping this is exactly
  PyTorch's ``nn.LSTM(proj_size=...)``, which runs fused; with clipping the same weights run one step at a time.
* Highway: ``g = σ(W_carry x + b_carry)``, ``x ← g ⊙ relu(W_transform x + b_transform) + (1 − g) ⊙ x`` (bilm-tf's
  names: its "carry" weights compute the gate of the transform).
* Each direction reads the sentence on its own: the forward LSTM left to right, the backward LSTM right to left from
  the last real word, both from the same token layer; the layer outputs are concatenated [forward; backward].

Differences from AllenNLP, on purpose: the LSTM state starts at zero for every batch unless ``config.stateful``
(AllenNLP's ``ElmoLstm`` always carries each row's state over from the previous batch, so its outputs depend on
what was run before; ``load_allennlp_elmo`` turns ``stateful`` on, and then AllenNLP's published test outputs are
reproduced batch after batch); ``do_layer_norm`` normalises each token's vector (AllenNLP normalises over all
unmasked elements of the batch, so a sentence's features depend on the other sentences of its batch); the sentence
markers ``<S>``/``</S>`` are added by the tokenizer and kept in the outputs (AllenNLP adds and strips them inside
the model). The pre-training loss is the sum of the two directions' mean losses (the paper's joint log likelihood;
bilm-tf minimises their average).
"""

import math
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init
from transformers.generation import GenerationMixin
from transformers.modeling_outputs import CausalLMOutputWithPast
from transformers.utils import ModelOutput

from .cache_lineage_utils import LSTMStateCache, LSTMStateGenerationMixin, with_cache
from .configuration_lineage_elmo import LineageElmoConfig
from .loss_lineage_utils import vocabulary_cross_entropy
from .modeling_lineage_static import (
    ScalarMix,
    StaticVectorsForIntentAndSlots,
    StaticVectorsForMultipleChoice,
    StaticVectorsForQuestionAnswering,
    StaticVectorsForSequenceClassification,
    StaticVectorsForTokenClassification,
    StaticVectorsTaskModel,
    init_task_weights,
)
from .modeling_lineage_utils import (
    LineagePreTrainedModel,
    check_ids_in_range,
    check_same_shape,
    config_flag,
    lstm_autocast,
    tuple_or_dict,
)

# Auto class -> class name. The registry registers these and save_pretrained writes them into auto_map.
AUTO_CLASSES = {
    "AutoModel": "LineageElmoModel",
    "AutoModelForPreTraining": "LineageElmoForPreTraining",
    "AutoModelForCausalLM": "LineageElmoForCausalLM",
    "AutoModelForTokenClassification": "LineageElmoForTokenClassification",
    "AutoModelForSequenceClassification": "LineageElmoForSequenceClassification",
    "AutoModelForQuestionAnswering": "LineageElmoForQuestionAnswering",
    "AutoModelForMultipleChoice": "LineageElmoForMultipleChoice",
}

# hf_lineage's own Auto classes (transformers has none for the task) -> class name: the registry registers these
# with ``hf_lineage.AutoModelForIntentAndSlots`` and save_pretrained writes them into auto_map.
LINEAGE_AUTO_CLASSES = {"AutoModelForIntentAndSlots": "LineageElmoForIntentAndSlots"}


def init_as(module, weight, bias=0.0):
    """Declare a layer's initialisation where it is built (``_init_weights`` applies it, and leaves weights loaded
    from a checkpoint alone): ``weight`` is ("normal", std) or ("uniform", bound); ``bias`` a constant."""
    module.elmo_init = (weight, bias)
    return module


# --------------------------------------------------------------------------- token layer


class LineageElmoHighway(nn.Module):
    """One highway layer (Srivastava et al. 2015) in bilm-tf's form:
    ``g = σ(carry(x))``; ``x ← g ⊙ relu(transform(x)) + (1 − g) ⊙ x``. The gate's bias starts at −2, so a new
    layer mostly passes its input through."""

    def __init__(self, size):
        super().__init__()
        self.carry = init_as(nn.Linear(size, size), ("normal", math.sqrt(1.0 / size)), bias=-2.0)
        self.transform = init_as(nn.Linear(size, size), ("normal", math.sqrt(1.0 / size)))

    def forward(self, x):
        gate = torch.sigmoid(self.carry(x))
        return gate * F.relu(self.transform(x)) + (1.0 - gate) * x


class LineageElmoCharacterEncoder(nn.Module):
    """A word's characters → its context-independent vector: (N, max_characters_per_token) ids → (N, P).

    Character embedding (row 0 is the all-zero padding row) → one convolution per filter width over the characters
    → max over positions → activation → highway layers → linear projection to the LSTM's input size (skipped when
    the filters already add up to it, as in bilm-tf). Initialisation is bilm-tf's: embeddings U(−1, 1);
    convolutions U(±0.05) before ReLU (Kim et al. 2015), N(0, 1/(width·E)) before tanh; projection N(0, 1/n).
    """

    def __init__(self, config):
        super().__init__()
        E = config.char_embedding_size
        self.char_embedding = init_as(nn.Embedding(config.n_characters, E, padding_idx=0), ("uniform", 1.0))
        relu = config.char_cnn_activation == "relu"
        self.convs = nn.ModuleList(
            init_as(nn.Conv1d(E, count, kernel_size=width), ("uniform", 0.05) if relu else
                    ("normal", math.sqrt(1.0 / (width * E))))
            for width, count in config.char_cnn_filters
        )
        self.activation = F.relu if relu else torch.tanh
        n_filters = sum(count for _, count in config.char_cnn_filters)
        self.highways = nn.ModuleList(LineageElmoHighway(n_filters) for _ in range(config.n_highway))
        self.projection = None
        if n_filters != config.projection_size:
            self.projection = init_as(nn.Linear(n_filters, config.projection_size),
                                      ("normal", math.sqrt(1.0 / n_filters)))

    def forward(self, char_ids):
        return self.words_from_characters(self.char_embedding(char_ids))

    def words_from_characters(self, x):
        """(N, chars, E) character vectors → (N, P): everything after the embedding (what checkpointing recomputes;
        its input needs a gradient, which the ids before the embedding cannot have)."""
        x = x.transpose(1, 2)  # (N, E, chars): Conv1d convolves over the last axis
        # Max over positions, then the activation (bilm-tf's order; both are monotone, so either order is equal).
        x = torch.cat([self.activation(conv(x).amax(dim=-1)) for conv in self.convs], dim=-1)  # (N, n_filters)
        for highway in self.highways:
            x = highway(x)
        return x if self.projection is None else self.projection(x)  # (N, P)


# --------------------------------------------------------------------------- LSTM with projection and clipping


class LineageElmoLSTMLayer(nn.LSTM):
    """One layer of one direction: an LSTM with ``lstm_cell_size`` cells whose output is projected to
    ``projection_size`` (no projection when they are equal), cell state clipped to ±``cell_clip`` and projected
    output to ±``proj_clip``.

    It is an ``nn.LSTM`` (``weight_ih_l0`` (4C, I), ``weight_hh_l0`` (4C, P), ``bias_ih_l0``, ``bias_hh_l0``,
    ``weight_hr_l0`` (P, C); gates in the order input, forget, cell, output). Without clipping it runs as one
    (fused kernels); clipping sits inside the recurrence, so with it the same weights run an explicit loop over
    time steps.
    """

    def __init__(self, input_size, config):
        C, P = config.lstm_cell_size, config.projection_size
        super().__init__(input_size, C, batch_first=True, proj_size=P if P < C else 0)
        self.cell_clip, self.proj_clip = config.cell_clip, config.proj_clip

    @property
    def fused(self) -> bool:
        return self.cell_clip is None and self.proj_clip is None

    def forward(self, x, state=None, lengths=None):
        """(B, T, I) inputs and an optional (h (B, P), c (B, C)) start state → (B, T, P) outputs, final state.

        Without ``lengths`` the final state is the one after position T − 1. With (B,) ``lengths`` (right padding)
        it is each row's state after its last real position — what a later batch continues from — and a row of
        length 0 keeps its start state; outputs at padded positions are then meaningless.
        """
        B, T, _ = x.shape
        if lengths is not None and bool((lengths == T).all()):
            lengths = None  # no padding: the state after the last position is every row's
        if state is None and lengths is not None:
            state = (x.new_zeros(B, self.proj_size or self.hidden_size), x.new_zeros(B, self.hidden_size))
        if not self.fused:
            return self.clipped_loop(x, state, lengths)
        start = None if state is None else (state[0][None], state[1][None])
        # float32 where autocast's precision cannot run an LSTM on this CPU
        precision, x, start = lstm_autocast(x, start)
        if lengths is None:
            with precision:
                out, (h, c) = super().forward(x, start)
            return out, (h[0], c[0])
        # Packing makes the fused kernel stop each row at its length (pack_padded_sequence needs lengths >= 1).
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.clamp(min=1).cpu(), batch_first=True,
                                                   enforce_sorted=False)
        with precision:
            out, (h, c) = super().forward(packed, start)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T)
        empty = (lengths == 0)[:, None]
        return out, (torch.where(empty, state[0], h[0]), torch.where(empty, state[1], c[0]))

    def clipped_loop(self, x, state=None, lengths=None):
        B, T, _ = x.shape
        C = self.hidden_size
        P = self.proj_size or C
        # The input part of every gate for all time steps in one matmul; only the recurrent part is sequential.
        gates_x = F.linear(x, self.weight_ih_l0, self.bias_ih_l0 + self.bias_hh_l0)  # (B, T, 4C)
        if state is None:
            h, c = x.new_zeros(B, P), x.new_zeros(B, C)
        else:
            h, c = state
        w_hh = self.weight_hh_l0.t()  # (P, 4C)
        w_hr = self.weight_hr_l0.t() if self.proj_size else None  # (C, P)
        # With lengths, each row's final state is taken at its last real position (a row of length 0 keeps its
        # start state); the recurrence itself runs on through the padding, as without lengths.
        last = None if lengths is None else (lengths - 1)[:, None]  # (B, 1)
        final_h, final_c = h, c
        outputs = []
        for t in range(T):
            i, f, g, o = torch.addmm(gates_x[:, t], h, w_hh).chunk(4, dim=1)  # each (B, C)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            if self.cell_clip is not None:
                c = c.clamp(-self.cell_clip, self.cell_clip)
            h = torch.sigmoid(o) * torch.tanh(c)
            if w_hr is not None:
                h = h @ w_hr  # (B, P)
            if self.proj_clip is not None:
                h = h.clamp(-self.proj_clip, self.proj_clip)
            if last is not None:
                final_h, final_c = torch.where(last == t, h, final_h), torch.where(last == t, c, final_c)
            outputs.append(h)
        return torch.stack(outputs, dim=1), (h, c) if last is None else (final_h, final_c)  # (B, T, P)


def run_layer(layer, inputs, h=None, c=None, lengths=None):
    """One LSTM layer with flat arguments and outputs (what gradient checkpointing passes through)."""
    out, (h, c) = layer(inputs, None if h is None else (h, c), lengths)
    return out, h, c


def reverse_padded(x, lengths):
    """Reverse each row's first ``lengths[b]`` positions, leaving the padding after them in place: (B, T, ...) →
    (B, T, ...). Applied twice it is the identity. The backward LSTM runs over the reversed rows, so it starts at
    each sentence's last real word and the padding comes after everything real."""
    T = x.shape[1]
    positions = torch.arange(T, device=x.device)[None]  # (1, T)
    index = torch.where(positions < lengths[:, None], lengths[:, None] - 1 - positions, positions)  # (B, T)
    return x.gather(1, index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x))


class LineageElmoBiLM(nn.Module):
    """The biLM below the softmax: token layer → a stack of ``num_lstm_layers`` LSTM layers per direction.

    ``forward`` returns the token layer (B, T, P), for each requested direction every layer's output (B, T, P) (a
    language model asks only for the direction it needs) and, with ``final_states``, each direction's state
    (h (L, B, P), c (L, B, C)) at each row's last real token. Padding must be on the right.

    Each direction may start from a given state: the forward stack at each row's first token, the backward stack
    at its last real token (it reads the row right to left, as AllenNLP's and bilm-tf's backward LSTMs do).
    """

    def __init__(self, config):
        super().__init__()
        self.config = config
        if config.use_char_inputs:
            self.char_encoder = LineageElmoCharacterEncoder(config)
        else:
            self.word_embeddings = init_as(nn.Embedding(config.vocab_size, config.projection_size),
                                           ("normal", 1.0 / math.sqrt(config.projection_size)))
        P = config.projection_size
        self.forward_layers = nn.ModuleList(LineageElmoLSTMLayer(P, config) for _ in range(config.num_lstm_layers))
        self.backward_layers = nn.ModuleList(LineageElmoLSTMLayer(P, config) for _ in range(config.num_lstm_layers))
        self.dropout = nn.Dropout(config.dropout)
        # Set by transformers' gradient_checkpointing_enable: the character CNN's activations (every filter at
        # every character: most of the biLM's memory in training) and each LSTM layer's (its gates at every step)
        # are recomputed in the backward pass instead of kept.
        self.gradient_checkpointing = False

    def token_layer(self, input_ids, char_ids, mask):
        """Context-independent vectors (B, T, P); padded positions are zeros and cost no CNN work."""
        if not self.config.use_char_inputs:
            return self.word_embeddings(input_ids) * mask[..., None]
        B, T, chars = char_ids.shape
        if torch.compiler.is_compiling():
            # Compiled or exported: every position through the CNN, padding zeroed after — selecting the real
            # tokens gives a shape that depends on the mask's values, which a graph with dynamic shapes cannot hold.
            return self.encode_characters(char_ids.reshape(-1, chars)).view(B, T, -1) * mask[..., None]
        flat_mask = mask.reshape(-1)
        real = self.encode_characters(char_ids.reshape(-1, chars)[flat_mask])  # (n_real, P): only real tokens
        out = real.new_zeros(B * T, real.shape[-1])
        out[flat_mask] = real
        return out.view(B, T, -1)

    def checkpointing(self) -> bool:
        return self.gradient_checkpointing and self.training and torch.is_grad_enabled()

    def encode_characters(self, char_ids):
        if self.checkpointing():
            encoder = self.char_encoder
            return self._gradient_checkpointing_func(encoder.words_from_characters, encoder.char_embedding(char_ids))
        return self.char_encoder(char_ids)

    def run_direction(self, layers, x, state=None, lengths=None):
        """Run a stack over (B, T, P) inputs: bilm-tf's dropout on each layer's input, the residual connection
        (adding the dropped-out input) from the second layer on. Returns each layer's output and the final state
        (h (L, B, P), c (L, B, C)): at each row's last real position when ``lengths`` are given."""
        outputs, hs, cs = [], [], []
        for k, layer in enumerate(layers):
            inputs = self.dropout(x)
            start = None if state is None else (state[0][k], state[1][k])
            if self.checkpointing():
                # Flat tensors in and out: the re-entrant checkpoint passes only tensors through.
                x, h, c = self._gradient_checkpointing_func(run_layer, layer, inputs, *(start or (None, None)),
                                                            lengths)
            else:
                x, (h, c) = layer(inputs, start, lengths)
            if k > 0 and self.config.use_skip_connections:
                x = x + inputs
            outputs.append(x)
            hs.append(h)
            cs.append(c)
        return outputs, (torch.stack(hs), torch.stack(cs))

    def forward(self, input_ids, char_ids, mask, directions=("forward", "backward"), forward_state=None,
                backward_state=None, final_states=False):
        token = self.token_layer(input_ids, char_ids, mask)  # (B, T, P)
        lengths = mask.sum(dim=1)
        # The per-row final states cost the fused LSTM a packed sequence: only computed when someone needs them.
        state_lengths = lengths if final_states else None
        result, states = {}, {}
        if "forward" in directions:
            result["forward"], states["forward"] = self.run_direction(self.forward_layers, token, forward_state,
                                                                      state_lengths)
        if "backward" in directions:
            reversed_outputs, states["backward"] = self.run_direction(
                self.backward_layers, reverse_padded(token, lengths), backward_state, state_lengths)
            result["backward"] = [reverse_padded(x, lengths) for x in reversed_outputs]
        return token, result, states


# --------------------------------------------------------------------------- scalar mix


# ELMo_k = γ Σ_j s_j h_{k,j}, s = softmax(w) (equation 1 of the paper), over the L + 1 layers: the one scalar mix of
# the shared downstream module, which the Transformers' shared head (task_head="scalar_mix") uses too. Its weights
# keep their names (scalar_parameters, gamma) in ELMo's checkpoints; init_task_weights initialises it.
LineageElmoScalarMix = ScalarMix


# --------------------------------------------------------------------------- the model


class LineageElmoPreTrainedModel(LineagePreTrainedModel):
    """Owns the config class and bilm-tf's initialisation (each layer declares its own with ``init_as``; LSTM
    weights are Glorot-uniform over TensorFlow's stacked [input; state] kernel with forget-gate bias 1, TensorFlow's
    ``forget_bias``); scalar mixes start with equal weights and γ = 1."""

    config_class = LineageElmoConfig
    config: LineageElmoConfig
    base_model_prefix = "elmo"
    main_input_name = "input_ids"
    _no_split_modules = ["LineageElmoBiLM"]
    supports_gradient_checkpointing = True  # the biLM's LSTM layers (LineageElmoBiLM.gradient_checkpointing)
    # The word → characters table of the language-model heads is not part of the base model.
    _keys_to_ignore_on_load_unexpected = [r"vocabulary_char_ids"]

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        loaded = super().from_pretrained(*args, **kwargs)
        model = loaded[0] if isinstance(loaded, tuple) else loaded  # (model, info) with output_loading_info=True
        # Loading hands back parameters with requires_grad=True: freeze what the model froze when it was built.
        for module in model.modules():
            if isinstance(module, LineageElmoModel):
                module.set_bilm_trainable(module.bilm_trainable)
            if isinstance(module, LineageElmoLanguageModel):
                module.elmo.scalar_mixes.requires_grad_(False)
        return loaded

    @torch.no_grad()
    def _init_weights(self, module):
        # The biLM's own LSTMs first: the shared task-model init below would take any nn.LSTM for a task encoder's.
        if isinstance(module, LineageElmoLSTMLayer):
            C, I = module.hidden_size, module.input_size
            P = module.proj_size or C
            bound = math.sqrt(6.0 / (I + P + 4 * C))  # Glorot over TensorFlow's (I + P, 4C) kernel
            init.uniform_(module.weight_ih_l0, -bound, bound)
            init.uniform_(module.weight_hh_l0, -bound, bound)
            if module.proj_size:
                init.uniform_(module.weight_hr_l0, -math.sqrt(6.0 / (C + P)), math.sqrt(6.0 / (C + P)))
            init.zeros_(module.bias_hh_l0)
            init.zeros_(module.bias_ih_l0)
            if not getattr(module.bias_ih_l0, "_is_hf_initialized", False):
                module.bias_ih_l0[C : 2 * C].fill_(1.0)  # TensorFlow's forget_bias: remember by default
            return
        if init_task_weights(module):
            return
        if hasattr(module, "elmo_init"):  # declared with init_as where the layer is built
            (kind, scale), bias = module.elmo_init
            if kind == "normal":
                init.normal_(module.weight, 0.0, scale)
            else:
                init.uniform_(module.weight, -scale, scale)
            if getattr(module, "bias", None) is not None:
                init.constant_(module.bias, bias)
            if getattr(module, "padding_idx", None) is not None and not getattr(module.weight, "_is_hf_initialized",
                                                                                False):
                module.weight[module.padding_idx].zero_()  # padded positions have no characters
        elif isinstance(module, LineageElmoLanguageModel):
            init.zeros_(module.vocabulary_char_ids)  # filled from the tokenizer by set_vocabulary_characters
        else:
            super()._init_weights(module)  # the task model's classifier and convolutions


@dataclass
class LineageElmoModelOutput(ModelOutput):
    """Output of ``LineageElmoModel``.

    ``last_hidden_state`` (B, T, 2P): the top biLSTM layer, [forward; backward].
    ``hidden_states``: all L + 1 layers, each (B, T, 2P); layer 0 is the token layer duplicated ([x; x]) to the
    biLSTM's width, as in the paper. Always returned: they are what ELMo is.
    ``elmo_representations``: the ``num_output_representations`` scalar mixes, each (B, T, 2P), after
    ``scalar_mix_dropout``.
    Padded positions are zeros everywhere.
    ``forward_state``, ``backward_state``: each direction's LSTM state (h (L, B, P), c (L, B, C)) at each row's last
    real token, to start the next batch from; returned when the model is ``stateful``, was given states, or was
    asked (``return_state=True``).
    """

    last_hidden_state: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    elmo_representations: tuple[torch.Tensor, ...] | None = None
    forward_state: tuple[torch.Tensor, torch.Tensor] | None = None
    backward_state: tuple[torch.Tensor, torch.Tensor] | None = None


def bilm_layers(token, outputs, mask):
    """The biLM's L + 1 layers, each (B, T, 2P) with zeros at padding: the token layer duplicated to the biLSTM's
    width (as in the paper), then each layer's [forward; backward]."""
    keep = mask[..., None].to(token.dtype)
    layers = [torch.cat([token, token], dim=-1)]
    return layers + [torch.cat([f, b], dim=-1) * keep for f, b in zip(outputs["forward"], outputs["backward"])]


def check_elmo_inputs(config, input_ids, char_ids, attention_mask):
    """Validate the inputs of every ELMo model; returns the (B, T) bool mask. Raises ValueError naming the problem."""
    if config.use_char_inputs:
        if char_ids is None:
            raise ValueError("char_ids (batch, sequence, max_characters_per_token) are required: tokenize with "
                             "ELMo's tokenizer (LineageElmoTokenizerFast, as AutoTokenizer loads it, or "
                             "LineageElmoTokenizer), which returns them with the input_ids")
        if char_ids.dim() != 3 or char_ids.shape[-1] != config.max_characters_per_token:
            raise ValueError(f"char_ids must have shape (batch, sequence, {config.max_characters_per_token}), got "
                             f"{tuple(char_ids.shape)}")
        check_ids_in_range(char_ids, config.n_characters, "char_ids", "n_characters")
        shape = char_ids.shape[:2]
        if input_ids is not None:
            check_same_shape(input_ids, shape, "input_ids", "char_ids[..., 0]")
    else:
        if input_ids is None:
            raise ValueError("input_ids are required (the config has use_char_inputs=False)")
        shape = input_ids.shape
    if len(shape) != 2:
        raise ValueError(f"input_ids must have shape (batch, sequence), got {tuple(shape)}")
    if input_ids is not None:
        check_ids_in_range(input_ids, config.vocab_size, "input_ids", "vocab_size")
    if shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"Empty input: shape {tuple(shape)}; every batch needs at least one token")
    if attention_mask is None:
        if config.use_char_inputs:  # a position whose characters are all 0 is padding (the tokenizer's convention)
            return (char_ids != 0).any(dim=-1)
        return torch.ones(shape, dtype=torch.bool, device=input_ids.device)
    check_same_shape(attention_mask, shape, "attention_mask", "input_ids")
    mask = attention_mask.bool()
    # Right-padded: no real token after a padded one, i.e. the mask equals its running product along the row.
    right_padded = (mask.long().cumprod(dim=1) == mask.long()).all()
    message = ("ELMo needs right padding (each row's real tokens first): the backward LSTM starts at the last real "
               "token. Use padding_side='right'.")
    if torch.compiler.is_compiling():  # reading the answer back would break the graph: a device assertion instead
        torch._assert_async(right_padded, message)
    elif not bool(right_padded):
        raise ValueError(message)
    return mask


def check_lstm_state(config, state, batch_size, name):
    """A given (h (L, B, P), c (L, B, C)) state of one direction, or None (zeros). Raises ValueError naming the
    problem."""
    if state is None:
        return None
    L, P, C = config.num_lstm_layers, config.projection_size, config.lstm_cell_size
    pair = isinstance(state, (tuple, list)) and len(state) == 2 and all(torch.is_tensor(x) for x in state)
    got = [tuple(x.shape) for x in state] if pair else type(state).__name__
    if got != [(L, batch_size, P), (L, batch_size, C)]:
        raise ValueError(f"{name} must be a tuple (h, c) with h (layers, batch, projection_size) = {(L, batch_size, P)}"
                         f" and c (layers, batch, lstm_cell_size) = {(L, batch_size, C)}; got {got}")
    return tuple(state)


def rows_of(state, batch_size):
    """(L, S, D) carried state → (L, batch_size, D): its first rows, or zeros after them for rows it never had."""
    if state.shape[1] >= batch_size:
        return state[:, :batch_size]
    return torch.cat([state, state.new_zeros(state.shape[0], batch_size - state.shape[1], state.shape[2])], dim=1)


class LineageElmoModel(LineageElmoPreTrainedModel):
    """ELMo's features: every biLM layer and ``num_output_representations`` learned scalar mixes of them.

    With ``config.freeze_bilm`` (the default; the paper's feature-based use) the biLM's weights do not train and it
    runs in eval mode without building a graph; the scalar mixes train with the task.

    LSTM states: each call may start from given states — ``forward_state`` / ``backward_state``, each (h (L, B, P),
    c (L, B, C)); the forward stack starts from it at each row's first token, the backward stack at its last real
    token — and returns the states each row ends with (at its last real token, not after its padding). With
    ``config.stateful`` (AllenNLP's ``Elmo``; ``load_allennlp_elmo`` turns it on) the model keeps them itself: row b
    of a batch starts from the states row b of the previous batch ended with (zeros for a row no batch had yet), a
    row with no tokens keeps its states, and rows beyond a smaller batch keep theirs for later batches.
    ``reset_states()`` forgets them.

    Example::

        >>> tokenizer = AutoTokenizer.from_pretrained("elmo-small")                  # doctest: +SKIP
        >>> model = AutoModel.from_pretrained("elmo-small")                            # doctest: +SKIP
        >>> out = model(**tokenizer(["the bank of the river"], return_tensors="pt"))   # doctest: +SKIP
        >>> out.elmo_representations[0].shape     # (B, T, 2P); T counts <S> and </S>    # doctest: +SKIP
        torch.Size([1, 7, 256])
    """

    def __init__(self, config):
        super().__init__(config)
        self.bilm = LineageElmoBiLM(config)
        L = config.num_lstm_layers + 1
        self.scalar_mixes = nn.ModuleList(
            LineageElmoScalarMix(L, config.do_layer_norm) for _ in range(config.num_output_representations)
        )
        self.dropout = nn.Dropout(config.scalar_mix_dropout)
        # {"forward": (h, c), "backward": (h, c)} carried between batches when config.stateful; not a checkpoint's.
        self.lstm_states = None
        self.post_init()
        self.set_bilm_trainable(not config.freeze_bilm)

    def reset_states(self, rows=None):
        """Forget the carried LSTM states (``config.stateful``): all of them, or those of the rows where the (B,)
        bool mask ``rows`` is True (those rows then start the next batch from zeros)."""
        if rows is None or self.lstm_states is None:
            self.lstm_states = None
            return
        h = self.lstm_states["forward"][0]  # (L, rows carried, P)
        rows = torch.as_tensor(rows, dtype=torch.bool, device=h.device)
        if rows.dim() != 1 or rows.numel() != h.shape[1]:
            raise ValueError(f"rows must be a (batch,) bool mask over the {h.shape[1]} carried rows, got shape "
                             f"{tuple(rows.shape)}")
        keep = ~rows[None, :, None]
        self.lstm_states = {d: (h * keep, c * keep) for d, (h, c) in self.lstm_states.items()}

    def carried_states(self, batch_size, like):
        """The stored states for a batch of ``batch_size`` rows (row b continues row b; rows no batch had yet
        start from zeros), in ``like``'s dtype and on its device; (None, None) before the first batch."""
        if self.lstm_states is None:
            return None, None
        return [tuple(rows_of(x, batch_size).to(like) for x in self.lstm_states[direction])
                for direction in ("forward", "backward")]

    def store_states(self, states):
        """Keep a batch's final states for the next one; rows beyond this batch keep what they had."""
        new = {}
        for direction, (h, c) in states.items():
            if self.lstm_states is not None:
                old_h, old_c = self.lstm_states[direction]
                h = torch.cat([h, old_h[:, h.shape[1]:].to(h)], dim=1)
                c = torch.cat([c, old_c[:, c.shape[1]:].to(c)], dim=1)
            new[direction] = (h.detach(), c.detach())  # the next batch does not backpropagate into this one
        self.lstm_states = new

    def set_bilm_trainable(self, trainable: bool):
        """Freeze (False) or unfreeze the biLM; a frozen biLM runs in eval mode and under ``no_grad``."""
        self.bilm_trainable = trainable
        self.bilm.requires_grad_(trainable)
        self.train(self.training)

    def train(self, mode=True):
        super().train(mode)
        if not getattr(self, "bilm_trainable", True):
            self.bilm.eval()  # frozen features are deterministic: no dropout inside the biLM
        return self

    def get_input_embeddings(self):
        bilm = self.bilm
        return bilm.char_encoder.char_embedding if self.config.use_char_inputs else bilm.word_embeddings

    def set_input_embeddings(self, value):
        if self.config.use_char_inputs:
            self.bilm.char_encoder.char_embedding = value
        else:
            self.bilm.word_embeddings = value

    def layers(self, input_ids=None, char_ids=None, attention_mask=None):
        """The L + 1 layers, each (B, T, 2P) with zeros at padding, and the (B, T) bool mask."""
        layers, mask, _ = self.layers_and_states(input_ids, char_ids, attention_mask)
        return layers, mask

    def layers_and_states(self, input_ids=None, char_ids=None, attention_mask=None, forward_state=None,
                          backward_state=None, return_state=False):
        """``layers`` and each direction's final LSTM state (None unless stateful, given states or asked)."""
        mask = check_elmo_inputs(self.config, input_ids, char_ids, attention_mask)
        given = forward_state is not None or backward_state is not None
        if given:
            forward_state = check_lstm_state(self.config, forward_state, mask.shape[0], "forward_state")
            backward_state = check_lstm_state(self.config, backward_state, mask.shape[0], "backward_state")
        elif self.config.stateful:
            forward_state, backward_state = self.carried_states(mask.shape[0], like=next(self.bilm.parameters()))
        want_states = return_state or given or self.config.stateful
        with nullcontext() if self.bilm_trainable else torch.no_grad():
            token, outputs, states = self.bilm(input_ids, char_ids, mask, forward_state=forward_state,
                                               backward_state=backward_state, final_states=want_states)
        if self.config.stateful:
            self.store_states(states)
        return bilm_layers(token, outputs, mask), mask, (states if want_states else None)

    def forward(self, input_ids=None, char_ids=None, attention_mask=None, return_dict=None, forward_state=None,
                backward_state=None, return_state=None, **kwargs):
        layers, mask, states = self.layers_and_states(input_ids, char_ids, attention_mask, forward_state,
                                                      backward_state, bool(return_state))
        mixes = tuple(self.dropout(mix(layers)) * mask[..., None] for mix in self.scalar_mixes)
        states = states or {}
        output = LineageElmoModelOutput(last_hidden_state=layers[-1], hidden_states=tuple(layers),
                                        elmo_representations=mixes, forward_state=states.get("forward"),
                                        backward_state=states.get("backward"))
        return tuple_or_dict(output, return_dict, self.config)


# --------------------------------------------------------------------------- downstream features


class LineageElmoTaskModel(StaticVectorsTaskModel):
    """ELMo's part of the shared downstream heads (``modeling_lineage_static``): the features are the first scalar
    mix of the biLM's layers, and ``freeze_bilm`` freezes the biLM (the mix always trains with the task).

    The task encoder's ``task_dropout`` is the dropout on these features (AllenNLP's recipes put 0.5 there)."""

    base_model_class = LineageElmoModel
    freeze_flag = "freeze_bilm"

    def feature_size(self) -> int:
        return self.config.output_size

    def frozen_parameters(self):
        return self.features_model.bilm.parameters()

    def _apply_freezing(self):
        self.features_model.set_bilm_trainable(not self.features_frozen)

    def token_features(self, input_ids, attention_mask, char_ids=None, **kwargs):
        """biLM + one scalar mix: (B, T) word ids and (B, T, chars) character ids → (B, T, 2P)."""
        elmo = self.features_model
        memo = self.frozen_layers_memo
        if memo is None or not self.features_frozen or self.config.stateful:  # stateful: a sentence's layers vary
            layers, mask = elmo.layers(input_ids, char_ids, attention_mask)
        else:
            mask = check_elmo_inputs(self.config, input_ids, char_ids, attention_mask)

            def run(rows):
                pick = (lambda tensor: None if tensor is None else tensor[rows])
                return elmo.layers(pick(input_ids), pick(char_ids), mask[rows])[0]

            layers = memo.layers(run, mask, [key for key in (input_ids, char_ids) if key is not None], elmo.bilm)
        return elmo.scalar_mixes[0](layers) * mask[..., None]


# --------------------------------------------------------------------------- language models


class LineageElmoSoftmax(nn.Module):
    """The softmax over the word vocabulary, shared by both directions: full, sampled (training only; the full
    softmax evaluates) or adaptive. Works on the positions that predict something: (N, P) states, (N,) targets."""

    def __init__(self, config):
        super().__init__()
        self.kind = config.softmax_type
        self.num_sampled = min(config.num_sampled, config.vocab_size)
        P, V = config.projection_size, config.vocab_size
        if self.kind == "adaptive":
            self.decoder = None
            self.adaptive = nn.AdaptiveLogSoftmaxWithLoss(P, V, list(config.adaptive_cutoffs),
                                                          div_value=float(config.adaptive_div_value))
            for layer in self.adaptive.modules():
                if isinstance(layer, nn.Linear):
                    init_as(layer, ("normal", 1.0 / math.sqrt(layer.in_features)))
        else:
            # bilm-tf: W ~ N(0, 1/P), b = 0.
            self.decoder = init_as(nn.Linear(P, V), ("normal", 1.0 / math.sqrt(P)))

    def logits(self, hidden):
        """(..., P) → (..., V) scores whose softmax is the model's distribution (log-probabilities when adaptive)."""
        if self.kind == "adaptive":
            return self.adaptive.log_prob(hidden.reshape(-1, hidden.shape[-1])).view(*hidden.shape[:-1], -1)
        return self.decoder(hidden)

    def loss_sum(self, hidden, targets):
        """Summed negative log-likelihood of (N,) targets given (N, P) states."""
        if self.kind == "adaptive":
            return -self.adaptive(hidden, targets).output.sum()
        if self.kind == "sampled" and self.training:
            return self.sampled_loss_sum(hidden, targets)
        return vocabulary_cross_entropy(self.decoder(hidden), targets, 1)

    def sampled_loss_sum(self, hidden, targets):
        """Sampled softmax (Jean et al. 2015), as TensorFlow's ``sampled_softmax_loss`` that bilm-tf trained with:
        ``num_sampled`` negatives shared by the batch, drawn from the log-uniform (Zipf) distribution over ids
        ranked by frequency, every logit corrected by −log(expected count), accidental hits removed."""
        V, S = self.decoder.out_features, self.num_sampled
        u = torch.rand(S, device=hidden.device)
        samples = (torch.exp(u * math.log(V + 1.0)) - 1.0).long().clamp_(0, V - 1)  # (S,)

        def log_expected_count(ids):  # P(k) = log((k + 2) / (k + 1)) / log(V + 1), drawn S times
            ids = ids.float()
            return torch.log(S * torch.log((ids + 2.0) / (ids + 1.0)) / math.log(V + 1.0))

        weight, bias = self.decoder.weight, self.decoder.bias
        true_logits = (hidden * weight[targets]).sum(-1) + bias[targets] - log_expected_count(targets)  # (N,)
        sampled = hidden @ weight[samples].t() + bias[samples] - log_expected_count(samples)  # (N, S)
        sampled = sampled.masked_fill(samples[None] == targets[:, None], float("-inf"))
        logits = torch.cat([true_logits[:, None], sampled], dim=1).float()  # the true word is class 0
        return (torch.logsumexp(logits, dim=1) - logits[:, 0]).sum()


@dataclass
class LineageElmoPreTrainingOutput(ModelOutput):
    """``loss`` = forward LM loss + backward LM loss (each a mean over the predicted tokens); ``logits`` (B, T, V)
    of the forward LM (position t scores token t + 1) and ``backward_logits`` (position t scores token t − 1),
    returned in eval mode or without labels (training skips the (B, T, V) tensors where the softmax allows).
    ``hidden_states`` (with ``output_hidden_states``): the biLM's L + 1 layers as ``LineageElmoModel`` returns them,
    each (B, T, 2P). There is no attention (no ``attentions``)."""

    loss: torch.Tensor | None = None
    forward_loss: torch.Tensor | None = None
    backward_loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    backward_logits: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None


def forward_targets(labels):
    """Position t of the forward LM predicts token t + 1; the last position predicts nothing."""
    return F.pad(labels[..., 1:], (0, 1), value=-100)


def backward_targets(labels, attention_mask=None):
    """Position t of the backward LM predicts token t − 1; the first position predicts nothing, nor does padding
    (with right padding, the first padded position would otherwise "predict" the last word)."""
    targets = F.pad(labels[..., :-1], (1, 0), value=-100)
    return targets if attention_mask is None else targets.masked_fill(attention_mask == 0, -100)


class LineageElmoLanguageModel(LineageElmoPreTrainedModel):
    """What the two language models share: the biLM (under ``elmo``, so task heads load it), the softmax, and the
    word → characters table that turns word ids back into characters (for generation and word-id-only input)."""

    # Word inputs only (the config refuses tying otherwise): bilm-tf's share_embedding_softmax.
    _tied_weights_keys = {"softmax.decoder.weight": "elmo.bilm.word_embeddings.weight"}

    def __init__(self, config):
        super().__init__(config)
        self.elmo = LineageElmoModel(config)
        self.elmo.set_bilm_trainable(True)
        # The mixes are not part of the language model; frozen, they stay out of optimisers and DDP's bookkeeping.
        self.elmo.scalar_mixes.requires_grad_(False)
        self.softmax = LineageElmoSoftmax(config)
        self.register_buffer(
            "vocabulary_char_ids", torch.zeros(config.vocab_size, config.max_characters_per_token, dtype=torch.int16)
        )

    def get_output_embeddings(self):
        return self.softmax.decoder

    def set_output_embeddings(self, new_embeddings):
        self.softmax.decoder = new_embeddings

    def set_vocabulary_characters(self, tokenizer_or_table):
        """Store every vocabulary word's character ids, from ELMo's tokenizer (either class) or a (V, chars) table, so
        the model can read word ids alone (generation)."""
        table = tokenizer_or_table
        if hasattr(table, "vocabulary_char_ids"):
            table = table.vocabulary_char_ids()
        table = torch.as_tensor(table, dtype=torch.int16)
        if table.shape != self.vocabulary_char_ids.shape:
            raise ValueError(f"The character table has shape {tuple(table.shape)}, the model needs "
                             f"{tuple(self.vocabulary_char_ids.shape)} (vocab_size, max_characters_per_token)")
        self.vocabulary_char_ids.copy_(table)

    def _char_ids(self, input_ids, char_ids):
        if char_ids is not None or not self.config.use_char_inputs:
            return char_ids
        if input_ids is None:
            raise ValueError("Give input_ids (and char_ids)")
        if not bool(self.vocabulary_char_ids.any()):
            raise ValueError("char_ids are required: this model has no word → characters table (call "
                             "model.set_vocabulary_characters(tokenizer) to read word ids alone)")
        check_ids_in_range(input_ids, self.config.vocab_size, "input_ids", "vocab_size")
        return self.vocabulary_char_ids[input_ids].long()  # (B, T, chars)

    def _direction_loss(self, states, targets):
        """Summed loss of one direction: the softmax runs only where a token is predicted."""
        predicting = targets != -100
        return self.softmax.loss_sum(states[predicting], targets[predicting])


class LineageElmoForPreTraining(LineageElmoLanguageModel):
    """The biLM as pre-trained: forward LM + backward LM over the same token layer and softmax, losses summed.

    ``labels`` are the input ids with -100 at padding (as the pre-training collator makes them); the model shifts
    them itself, one way per direction.

    Example::

        >>> config = LineageElmoConfig.from_named("tiny", vocab_size=len(tokenizer))          # doctest: +SKIP
        >>> model = LineageElmoForPreTraining(config)                                          # doctest: +SKIP
        >>> batch = tokenizer(["the cat sat", "a dog"], padding=True, return_tensors="pt")     # doctest: +SKIP
        >>> labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)        # doctest: +SKIP
        >>> model(**batch, labels=labels).loss.backward()                                      # doctest: +SKIP
    """

    def __init__(self, config):
        super().__init__(config)
        self.post_init()

    def forward(self, input_ids=None, char_ids=None, attention_mask=None, labels=None, return_dict=None,
                num_items_in_batch=None, output_hidden_states=None, output_attentions=None, **kwargs):
        config = self.config
        char_ids = self._char_ids(input_ids, char_ids)
        mask = check_elmo_inputs(config, input_ids, char_ids, attention_mask)
        token, outputs, _ = self.elmo.bilm(input_ids, char_ids, mask)
        hidden_states = None
        if config_flag(output_hidden_states, config.output_hidden_states):
            hidden_states = tuple(bilm_layers(token, outputs, mask))
        # bilm-tf's dropout on the top layer's output, before the softmax.
        top_forward = self.elmo.bilm.dropout(outputs["forward"][-1])  # (B, T, P)
        top_backward = self.elmo.bilm.dropout(outputs["backward"][-1])

        loss = forward_loss = backward_loss = None
        if labels is not None:
            check_same_shape(labels, mask.shape, "labels", "input_ids")
            check_ids_in_range(labels[labels != -100], config.vocab_size, "labels", "vocab_size")
            fwd, bwd = forward_targets(labels), backward_targets(labels, mask)
            count = (fwd != -100).sum() if num_items_in_batch is None else num_items_in_batch
            if torch.is_tensor(count):
                count = count.to(top_forward.device)
            forward_loss = self._direction_loss(top_forward, fwd) / count
            backward_loss = self._direction_loss(top_backward, bwd) / count
            loss = forward_loss + backward_loss
        logits = backward_logits = None
        if labels is None or not self.training:
            logits, backward_logits = self.softmax.logits(top_forward), self.softmax.logits(top_backward)
        output = LineageElmoPreTrainingOutput(loss=loss, forward_loss=forward_loss, backward_loss=backward_loss,
                                              logits=logits, backward_logits=backward_logits,
                                              hidden_states=hidden_states)
        return tuple_or_dict(output, return_dict, config)


class LineageElmoForCausalLM(LSTMStateGenerationMixin, LineageElmoLanguageModel, GenerationMixin):
    """The forward LM alone: only the forward LSTM stack runs. It generates (word ids come back to characters
    through the table set by ``set_vocabulary_characters``) carrying the LSTM state in an ``LSTMStateCache`` — h
    (L, B, P) and c (L, B, C) — so each step reads one word; a caller can carry the same state across consecutive
    segments of a stream (truncated backpropagation through time: ``cache=out.cache.detach()``; with transformers
    older than 5.24 the argument and the output field are called ``past_key_values``). A tuple ``(h, c)`` is
    accepted as the state too.

    Batched generation needs prompts of equal length (the LSTM reads padding as input, so it cannot be padded on
    the left).

    A prompt is continued, not ended: the tokenizer marks a sentence ``<S> … </S>`` (what pre-training reads), so
    ``generate`` drops the ``</S>`` of prompts that are such whole sentences — ``generate(**tokenizer(["the cat"]))``
    and the text-generation pipeline continue "the cat", as ``<S> the cat`` does. A prompt ending in ``</S>``
    without starting with ``<S>`` (the ``source </S>`` prompts of the generation tasks) is kept as it is.

    Example::

        >>> model.set_vocabulary_characters(tokenizer)                                          # doctest: +SKIP
        >>> out = model.generate(**tokenizer(["the cat"], return_tensors="pt"), max_new_tokens=10)  # doctest: +SKIP
    """

    def __init__(self, config):
        super().__init__(config)
        self.post_init()

    def generate(self, inputs=None, *args, **kwargs):
        ids = kwargs.get("input_ids") if inputs is None else inputs
        if self._is_whole_sentence_prompt(ids, kwargs.get("attention_mask")):
            # Drop the end-of-sentence marker (and its character ids and mask column): generation continues the
            # sentence instead of starting a new one after it.
            if inputs is None:
                kwargs["input_ids"] = ids[:, :-1]
            else:
                inputs = ids[:, :-1]
            for key in ("attention_mask", "char_ids"):
                if kwargs.get(key) is not None:
                    kwargs[key] = kwargs[key][:, :-1]
        return super().generate(inputs, *args, **kwargs)

    def _is_whole_sentence_prompt(self, input_ids, attention_mask):
        """Every row is ``<S> … </S>`` with no padding, as the tokenizer marks a sentence by default."""
        bos, eos = self.config.bos_token_id, self.config.eos_token_id
        if not torch.is_tensor(input_ids) or input_ids.dim() != 2 or input_ids.shape[1] < 3 or None in (bos, eos):
            return False
        if attention_mask is not None and not bool(attention_mask.bool().all()):
            return False  # right-padded rows of unequal length: generate cannot continue them either way
        eos = torch.as_tensor(eos if isinstance(eos, list) else [eos], device=input_ids.device)
        return bool((input_ids[:, 0] == bos).all()) and bool(torch.isin(input_ids[:, -1], eos).all())

    def forward(self, input_ids=None, char_ids=None, attention_mask=None, labels=None, past_key_values=None,
                use_cache=None, return_dict=None, logits_to_keep=0, num_items_in_batch=None, cache=None,
                output_hidden_states=None, output_attentions=None, **kwargs):
        config = self.config
        use_cache = config_flag(use_cache, config.use_cache)
        state = LSTMStateCache.from_arguments(cache, past_key_values)
        char_ids = self._char_ids(input_ids, char_ids)
        mask = check_elmo_inputs(config, input_ids, char_ids, attention_mask)
        if state is not None and not bool(mask.all()):
            raise ValueError("An LSTM state (cache) can only continue unpadded rows")
        token, outputs, states = self.elmo.bilm(input_ids, char_ids, mask, directions=("forward",),
                                            forward_state=None if state is None else (state.h, state.c),
                                            # A padded row's state at its last real token, not after its padding;
                                            # training skips that work (the fused LSTM would need a packed
                                            # sequence) and returns the state after the last position.
                                            final_states=use_cache and not self.training)
        hidden = self.elmo.bilm.dropout(outputs["forward"][-1])  # (B, T, P)
        hidden_states = None
        if config_flag(output_hidden_states, config.output_hidden_states):
            # The forward LM's L + 1 layers, each (B, T, P): the token layer, then each LSTM layer.
            keep = mask[..., None].to(token.dtype)
            hidden_states = (token, *(x * keep for x in outputs["forward"]))
        loss = None
        # transformers' ``shift_labels`` (labels already aligned with the positions) are used as given.
        targets = kwargs.get("shift_labels")
        if targets is None and labels is not None:
            check_same_shape(labels, mask.shape, "labels", "input_ids")
            targets = forward_targets(labels)
        if targets is not None:
            check_same_shape(targets, mask.shape, "shift_labels", "input_ids")
            check_ids_in_range(targets[targets != -100], config.vocab_size, "labels", "vocab_size")
            count = (targets != -100).sum() if num_items_in_batch is None else num_items_in_batch
            if torch.is_tensor(count):
                count = count.to(hidden.device)
            loss = self._direction_loss(hidden, targets) / count
        logits = None
        if targets is None or not self.training:
            # Generation needs only the last position's distribution: skip the vocabulary matmul elsewhere.
            logits = self.softmax.logits(hidden[:, -logits_to_keep:] if logits_to_keep else hidden)
        if use_cache:
            h, c = states["forward"]  # (L, B, P), (L, B, C)
            state = LSTMStateCache.advanced(state, h, c, mask.shape[1])
        output = CausalLMOutputWithPast(loss=loss, logits=logits, hidden_states=hidden_states,
                                        **with_cache(state if use_cache else None))
        return tuple_or_dict(output, return_dict, config)


# --------------------------------------------------------------------------- downstream task models


class LineageElmoForTokenClassification(LineageElmoTaskModel, StaticVectorsForTokenClassification,
                                        LineageElmoPreTrainedModel):
    """The paper's feature-based use for tagging (NER, POS): scalar mix of the biLM's layers → BiLSTM
    (``config.task_*``) → a label per word. The biLM is frozen unless ``freeze_bilm=False``."""


class LineageElmoForSequenceClassification(LineageElmoTaskModel, StaticVectorsForSequenceClassification,
                                           LineageElmoPreTrainedModel):
    """Scalar mix → BiLSTM → max-pool → a label per sentence, or per sentence pair (``token_type_ids``: each
    sentence encoded on its own, classified from ``[u, v, |u − v|, u * v]``)."""



class LineageElmoForQuestionAnswering(LineageElmoTaskModel, StaticVectorsForQuestionAnswering,
                                      LineageElmoPreTrainedModel):
    """Scalar mix of the biLM's layers over ``<S> question </S> <S> passage </S>`` → BiLSTM → start/end logits
    (extractive QA; ``token_type_ids`` mark the passage). The biLM is frozen unless ``freeze_bilm=False``."""


class LineageElmoForMultipleChoice(LineageElmoTaskModel, StaticVectorsForMultipleChoice, LineageElmoPreTrainedModel):
    """Multiple choice (a cloze, SWAG): scalar mix → BiLSTM over each (context, choice) pair, each part max-pooled →
    one score per choice from ``[u, v, |u − v|, u * v]``, a softmax over the choices. The biLM is frozen unless
    ``freeze_bilm=False``."""


class LineageElmoForIntentAndSlots(LineageElmoTaskModel, StaticVectorsForIntentAndSlots, LineageElmoPreTrainedModel):
    """Joint intent classification and slot filling: scalar mix → BiLSTM → an intent (max-pooled states) and a
    slot tag per word, trained on the sum of both losses. The biLM is frozen unless ``freeze_bilm=False``."""


__all__ = ["LineageElmoPreTrainedModel", "LineageElmoModelOutput", "LineageElmoPreTrainingOutput",
           "LineageElmoTaskModel", *dict.fromkeys(AUTO_CLASSES.values()),
           "LineageElmoForIntentAndSlots"]
