"""Lineage BERT (Devlin et al., 2018): a post-LayerNorm Transformer encoder pre-trained with masked LM + NSP.

Read top to bottom: embeddings, attention, layer, encoder, pooler, the pre-training heads, then the task heads.
Parameter names follow transformers' BERT (``attention.query`` where transformers has ``attention.self.query``, ...;
``hf_lineage.convert`` maps the names). Query, key and value are three Linears, projected with one matmul on their
concatenated weights while nothing is attached to them (``fused_projections``); saved folders hold them fused.

The MLM heads return logits of transformers' shape, (batch, length, vocab), with or without labels. Pre-training
opts into the fast path with ``sparse_logits=True``: the MLM output projection — a hidden × vocab matmul, the
largest in a small BERT — is then applied only to the ~15 % of positions that carry a label, and the logits have
shape (num_masked, vocab), rows in the order of ``labels != -100`` (the loss is the same either way).
"""

import copy
import functools
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache, DynamicCache, EncoderDecoderCache
from transformers.conversion_mapping import register_checkpoint_conversion_mapping
from transformers.core_model_loading import Chunk, WeightConverter
from transformers.generation import GenerationMixin
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutputWithPoolingAndCrossAttentions,
    CausalLMOutputWithCrossAttentions,
    MaskedLMOutput,
    MultipleChoiceModelOutput,
    NextSentencePredictorOutput,
    QuestionAnsweringModelOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)
from transformers.utils import ModelOutput, logging
from transformers.utils.output_capturing import OutputRecorder, capture_outputs

from .attention_lineage_utils import (
    attention_implementation,
    attention_interface,
    bidirectional_mask,
    causal_mask,
    is_traced,
    split_fused_projection,
)
from .cache_lineage_utils import cache_argument, output_cache, with_cache
from .configuration_lineage_bert import LineageBertConfig
from .heads_lineage_utils import classifier_dropout, masked_mean, pair_features
from .loss_lineage_utils import cross_entropy, sequence_classification_loss
from .modeling_lineage_intent_and_slots import IntentAndSlotsOutput, intent_and_slots_loss, intent_labels_of
from .modeling_lineage_static import TransformerLayersTaskModel
from .modeling_lineage_utils import (
    LineagePreTrainedModel,
    QuestionAnsweringPipelineMixin,
    check_attention_mask,
    check_ids_in_range,
    check_same_shape,
    config_flag,
    mask_over_cache,
    output_flags_from_config,
    tuple_or_dict,
)
from .pruning_lineage_utils import pruned_head_index, pruned_linear

logger = logging.get_logger(__name__)

# Auto class -> class name. The registry registers these and save_pretrained writes them into auto_map.
AUTO_CLASSES = {
    "AutoModel": "LineageBertModel",
    "AutoModelForPreTraining": "LineageBertForPreTraining",
    "AutoModelForMaskedLM": "LineageBertForMaskedLM",
    "AutoModelForCausalLM": "LineageBertForCausalLM",
    "AutoModelForNextSentencePrediction": "LineageBertForNextSentencePrediction",
    "AutoModelForSequenceClassification": "LineageBertForSequenceClassification",
    "AutoModelForTokenClassification": "LineageBertForTokenClassification",
    "AutoModelForMultipleChoice": "LineageBertForMultipleChoice",
    "AutoModelForQuestionAnswering": "LineageBertForQuestionAnswering",
}

# hf_lineage's own Auto classes (transformers has none for the task) -> class name: the registry registers these
# with ``hf_lineage.AutoModelForIntentAndSlots`` and save_pretrained writes them into auto_map.
LINEAGE_AUTO_CLASSES = {"AutoModelForIntentAndSlots": "LineageBertForIntentAndSlots"}


# Folders saved before self-attention's query, key and value were split hold them as one fused matrix, ``qkv`` (q, k, v
# stacked along the output dimension). Loading splits it; ``save_pretrained`` fuses it again, so a folder saved now
# still loads with older hf_lineage releases and with the modeling code shipped beside older checkpoints. The
# lookbehind keeps the rule off cross-attention, whose key/value pair is one module in memory as on disk
# (``key_value``, as GPT's ``c_attn``): a rule that only some configurations could use would be checked against
# checkpoints without it (transformers' ``test_reverse_loading_mapping`` requires every rule to apply).
WEIGHT_CONVERSIONS = [
    WeightConverter(
        source_patterns="(?<!cross)attention.qkv",
        target_patterns=["(?<!cross)attention.query", "(?<!cross)attention.key", "(?<!cross)attention.value"],
        operations=[Chunk(dim=0)],
    ),
]
register_checkpoint_conversion_mapping(LineageBertConfig.model_type, WEIGHT_CONVERSIONS, overwrite=True)


class LineageBertEmbeddings(nn.Module):
    """Token + segment + position embeddings, summed, then LayerNorm and dropout (paper, section 3)."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids=None, token_type_ids=None, position_ids=None, inputs_embeds=None, past_length=0):
        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)
        B, T = inputs_embeds.shape[:2]
        if position_ids is None:
            # ``arange + past_length``: a static cache's past_length is a tensor, which torch.compile traces in a sum
            # but not as arange's bound.
            position_ids = torch.arange(T, device=inputs_embeds.device) + past_length  # (T,)
        if token_type_ids is None:
            # Every token in segment A: one (T,) lookup broadcast over the batch. Through the module, not its
            # weight, so accelerate's offload hooks bring the table to the device.
            token_type_ids = torch.zeros_like(position_ids)
        segment = self.token_type_embeddings(token_type_ids)
        embeddings = inputs_embeds + segment + self.position_embeddings(position_ids)  # (B, T, C)
        return self.dropout(self.LayerNorm(embeddings))


class LineageBertUnpadded:
    """Where the real tokens of a padded (B, T) batch are, so the encoder can skip the padding.

    The position-wise work (q/k/v and output projections, feed-forward, LayerNorms) runs on the N real tokens
    packed as (N, C), sequence after sequence; a batch whose lengths spread from 30 to 128 tokens is about a third
    padding, and that share of every matmul is saved. Attention either runs within each sequence on its packed tokens (on
    CPU) or gets the (B, T) layout back, padded with zeros and masked.
    """

    def __init__(self, attention_mask):
        self.real = attention_mask.bool()
        self.batch, self.length = self.real.shape
        self.index = self.real.reshape(-1).nonzero().squeeze(1)  # (N,) flat positions of the real tokens

    @functools.cached_property
    def lengths(self) -> list[int]:
        """Real tokens per sequence, how the packed rows split: read back to the host only where attention runs one
        sequence at a time (the CPU), so a GPU does not wait for it."""
        return self.real.sum(1).tolist()

    def gather(self, x):  # (B, T, ...) -> (N, ...)
        return x.reshape(self.batch * self.length, *x.shape[2:]).index_select(0, self.index)

    def scatter(self, x):  # (N, ...) -> (B, T, ...), zeros at the padding
        padded = x.new_zeros(self.batch * self.length, *x.shape[1:]).index_copy(0, self.index, x)
        return padded.view(self.batch, self.length, *x.shape[1:])


def _is_plain_linear(module) -> bool:
    """Whether calling ``module`` is exactly ``F.linear(x, module.weight, module.bias)``, so that a fused projection
    may read its weight instead of calling it: an ``nn.Linear`` itself (not a subclass: PEFT's LoRA layers, quantized
    or parametrized Linears), with no hook of torch's on it or on every module (forward, pre-forward, backward:
    DeepSpeed, pruning masks, user hooks), its ``forward`` not replaced (accelerate's offload and device hooks set
    ``_hf_hook`` and wrap ``forward``) and its weight not on the meta device (offloaded)."""
    return (
        type(module) is nn.Linear
        and not (module._forward_hooks or module._forward_pre_hooks or module._backward_hooks
                 or module._backward_pre_hooks)
        and "forward" not in module.__dict__
        and not hasattr(module, "_hf_hook")
        and not module.weight.is_meta
    )


def _global_module_hooks() -> bool:
    """Whether hooks are registered for every module (``torch.nn.modules.module.register_module_forward_hook`` and
    its kin): they must see the three projections called one by one."""
    hooks = nn.modules.module
    return bool(getattr(hooks, "_global_forward_hooks", None) or getattr(hooks, "_global_forward_pre_hooks", None)
                or getattr(hooks, "_global_backward_hooks", None)
                or getattr(hooks, "_global_backward_pre_hooks", None))


def fused_projections(x, *linears):
    """``tuple(linear(x) for linear in linears)``, as one matmul on the concatenated weights when the Linears allow
    it (``_is_plain_linear``; same dtype, device and bias presence), which on CPU saves about a tenth of BERT-base's
    step over three matmuls (docs/benchmarks.md). The weights are concatenated at every call, inside the autograd
    graph, so each original parameter gets its own gradient and nothing is cached that an optimizer step, a weight
    load or ``prune_heads`` could leave stale. Not fused, each Linear is called as a module: PEFT's adapters,
    accelerate's offload hooks, user hooks, and graphs being compiled, exported or traced (their graphs stay as
    transformers' BERT's; an inductor fuses by itself) all see the three calls."""
    first = linears[0]
    weight, bias = first.weight, first.bias
    if (is_traced() or not all(_is_plain_linear(linear) for linear in linears) or _global_module_hooks()
            or any(linear.weight.dtype != weight.dtype or linear.weight.device != weight.device
                   or (linear.bias is None) != (bias is None) for linear in linears)):
        return tuple(linear(x) for linear in linears)
    fused_weight = torch.cat([linear.weight for linear in linears])  # (sum of outputs, C): rows of q, then k, ...
    fused_bias = None if bias is None else torch.cat([linear.bias for linear in linears])
    return F.linear(x, fused_weight, fused_bias).split([linear.out_features for linear in linears], dim=-1)


class LineageBertAttention(nn.Module):
    """Multi-head attention with its output projection, residual connection and LayerNorm (post-LN).

    Self-attention's query, key and value are three ``nn.Linear`` named as in transformers' BERT (``query``,
    ``key``, ``value``), so PEFT's ``LoraConfig(target_modules=["query", "value"])`` finds them; folders saved before
    they were split hold one fused ``qkv`` matrix, which loading splits (``WEIGHT_CONVERSIONS``). Cross-attention
    (only with ``add_cross_attention``) projects the query from the decoder (``query``) and the key/value pair from
    the encoder with one module (``key_value``, as saved since the first release; GPT's ``c_attn``).
    The attention itself is the function ``config._attn_implementation`` names (sdpa, eager, flex, flash ...).
    """

    # Devices where an unpadded batch attends one sequence at a time (measured faster on CPU); elsewhere it is padded
    # back for one masked kernel call, which a GPU runs better than many small ones.
    per_sequence_devices = ("cpu",)

    def __init__(self, config, layer_idx, is_cross_attention=False):
        super().__init__()
        self.config = config  # read at every call: set_attn_implementation() changes config._attn_implementation
        self.num_heads = config.num_attention_heads  # fewer once heads are pruned
        self.head_size = config.hidden_size // config.num_attention_heads
        self.scaling = self.head_size**-0.5
        self.pruned_heads = set()  # original head numbers
        self.layer_idx = layer_idx
        self.is_cross_attention = is_cross_attention
        self.is_causal = config.is_decoder and not is_cross_attention  # read by the sdpa and flex interfaces
        C = config.hidden_size
        self.query = nn.Linear(C, C)
        if is_cross_attention:
            self.key_value = nn.Linear(C, 2 * C)
        else:
            self.key = nn.Linear(C, C)
            self.value = nn.Linear(C, C)
            # a state dict in the saved layout (``qkv``) also loads through load_state_dict, as Trainer loads one
            self.register_load_state_dict_pre_hook(functools.partial(split_fused_projection, fused="qkv"))
        self.attn_dropout = config.attention_probs_dropout_prob
        self.dense = nn.Linear(C, C)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.LayerNorm = nn.LayerNorm(C, eps=config.layer_norm_eps)

    def _heads(self, x):  # (B, T, nh * hs) -> (B, nh, T, hs)
        return x.view(*x.shape[:2], self.num_heads, self.head_size).transpose(1, 2)

    def prune_heads(self, heads):
        """Remove self-attention ``heads`` (original numbers): their q, k, v rows and output-projection columns."""
        if self.is_cross_attention:
            raise ValueError("only self-attention heads can be pruned")
        heads, index = pruned_head_index(heads, self.num_heads, self.head_size, self.pruned_heads)
        if not heads:
            return
        self.query = pruned_linear(self.query, index)
        self.key = pruned_linear(self.key, index)
        self.value = pruned_linear(self.value, index)
        self.dense = pruned_linear(self.dense, index, dim=1)
        self.num_heads -= len(heads)
        self.pruned_heads |= heads

    def forward(self, hidden_states, mask=None, encoder_hidden_states=None, cache=None, output_attentions=False,
                unpadded=None):
        # hidden_states: (B, T, C), or (N, C) real tokens only when ``unpadded`` says where they sit in (B, T)
        B, T = (unpadded.batch, unpadded.length) if unpadded is not None else hidden_states.shape[:2]
        A = self.num_heads * self.head_size  # C unless heads were pruned
        if A == 0:  # every head of this layer pruned: only the output projection's bias is left
            y = hidden_states.new_zeros(*hidden_states.shape[:-1], 0)
            return self.LayerNorm(hidden_states + self.dropout(self.dense(y))), (hidden_states.new_zeros(B, 0, T, T) if output_attentions else None)
        if self.is_cross_attention:
            q = self._heads(self.query(hidden_states))
            # A self-attention cache alone (a DynamicCache, as assisted decoding builds) holds no encoder keys: they
            # are computed again at every step then.
            cross_cache = cache if isinstance(cache, EncoderDecoderCache) else None
            if cross_cache is not None and cross_cache.is_updated.get(self.layer_idx):
                # The encoder's keys/values do not change while decoding: computed once, then reused.
                layer = cross_cache.cross_attention_cache.layers[self.layer_idx]
                k, v = layer.keys, layer.values
            else:
                k, v = map(self._heads, self.key_value(encoder_hidden_states).chunk(2, dim=-1))  # each (B, nh, S, hs)
                if cross_cache is not None:
                    k, v = cross_cache.cross_attention_cache.update(k, v, self.layer_idx)
                    cross_cache.is_updated[self.layer_idx] = True
        else:
            q, k, v = fused_projections(hidden_states, self.query, self.key, self.value)  # one matmul when plain
            if unpadded is not None and q.device.type in self.per_sequence_devices and not output_attentions:
                y = self._attend_within_each_sequence(q, k, v, unpadded.lengths)  # (N, A)
                return self.LayerNorm(hidden_states + self.dropout(self.dense(y))), None
            if unpadded is not None:  # (N, A) -> (B, T, A) for masked attention
                q, k, v = unpadded.scatter(q), unpadded.scatter(k), unpadded.scatter(v)
            q, k, v = self._heads(q), self._heads(k), self._heads(v)  # each (B, nh, T, hs)
            if cache is not None:
                self_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
                k, v = self_cache.update(k, v, self.layer_idx)  # (B, nh, past + T, hs)
        attend = attention_interface(self.config, output_attentions)
        y, weights = attend(self, q, k, v, mask, dropout=self.attn_dropout if self.training else 0.0,
                            scaling=self.scaling)
        y = y.reshape(B, T, A)  # (B, T, nh, hs): all head outputs side by side
        if unpadded is not None:
            y = unpadded.gather(y)  # back to the real tokens: (N, A)
        return self.LayerNorm(hidden_states + self.dropout(self.dense(y))), (weights if output_attentions else None)

    def _attend_within_each_sequence(self, q, k, v, lengths):
        """Attention over packed tokens, (N, A) each -> (N, A), one sequence at a time: no padding, no mask.

        On CPU this beats the masked kernel over the padded batch, which computes every padded query and key: for
        8 sequences of 30-128 tokens, forward + backward per layer, SDPA 17.8 ms against 25.5 ms padded under bf16
        autocast (docs/benchmarks.md).

        "sdpa" calls SDPA with 4-D inputs, which takes its flash kernel (3-D inputs take the math kernel, whose
        checks for fully masked rows pass over every score three more times), in float32 also under bf16 autocast
        (as the math kernel computed; the flash kernel is slower in bf16 on CPU). With attention dropout, which the
        CPU flash kernel lacks, and for "eager", each sequence is softmax(q k^T / sqrt(hs)) v computed here, the
        softmax in float32. Few kernels per sequence (on a busy 2-core machine every kernel waits for both threads):
        the heads of every sequence are views, and one copy at the end brings them back to (N, A).
        """
        nh, hs = self.num_heads, self.head_size
        dropout = self.attn_dropout if self.training else 0.0
        dtype = q.dtype
        with torch.autocast(q.device.type, enabled=False):
            if attention_implementation(self.config) == "sdpa" and not dropout:
                q, k, v = (x.float().view(-1, nh, hs).transpose(0, 1) for x in (q, k, v))  # (nh, N, hs) each
                outputs = [
                    F.scaled_dot_product_attention(q_i[None], k_i[None], v_i[None], scale=self.scaling)[0]
                    for q_i, k_i, v_i in zip(q.split(lengths, 1), k.split(lengths, 1), v.split(lengths, 1))
                ]
            else:
                q, k, v = (x.view(-1, nh, hs).transpose(0, 1) for x in (q * self.scaling, k, v))
                outputs = []
                for q_i, k_i, v_i in zip(q.split(lengths, 1), k.split(lengths, 1), v.split(lengths, 1)):
                    weights = torch.matmul(q_i, k_i.transpose(1, 2)).softmax(-1, dtype=torch.float32).to(dtype)
                    if dropout:
                        weights = F.dropout(weights, dropout, training=True)
                    outputs.append(torch.matmul(weights, v_i))  # (nh, T_i, hs)
            return torch.cat(outputs, 1).transpose(0, 1).reshape(-1, nh * hs).to(dtype)  # (N, A)


class LineageBertIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = ACT2FN[config.hidden_act]

    def forward(self, hidden_states):
        return self.act(self.dense(hidden_states))


class LineageBertOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden_states, residual):
        return self.LayerNorm(residual + self.dropout(self.dense(hidden_states)))


class LineageBertLayer(GradientCheckpointingLayer):
    """Self-attention, (decoder only) cross-attention, then the position-wise feed-forward network.

    A ``GradientCheckpointingLayer``: under ``gradient_checkpointing_enable()`` (``activation_checkpointing_enable()``
    from transformers 5.24) transformers recomputes each layer in the backward pass instead of storing its
    activations; tensors that need gradients are passed positionally, the rest by keyword."""

    def __init__(self, config, layer_idx):
        super().__init__()
        self.attention = LineageBertAttention(config, layer_idx)
        if config.add_cross_attention:
            self.crossattention = LineageBertAttention(config, layer_idx, is_cross_attention=True)
        self.intermediate = LineageBertIntermediate(config)
        self.output = LineageBertOutput(config)

    def forward(self, hidden_states, mask=None, encoder_hidden_states=None, encoder_mask=None, cache=None,
                output_attentions=False, unpadded=None):
        # hidden_states: (B, T, C); with ``unpadded``, the real tokens (N, C), or (B, T, C) with zeros at the padding
        # while hidden states are recorded (the hooks read each layer's input and output, see LineageBertEncoder),
        # packed here and unpacked on return.
        padded_io = unpadded is not None and hidden_states.dim() == 3
        if padded_io:
            hidden_states = unpadded.gather(hidden_states)
        hidden_states, self_weights = self.attention(hidden_states, mask, cache=cache,
                                                     output_attentions=output_attentions, unpadded=unpadded)
        cross_weights = None
        if encoder_hidden_states is not None:
            if not hasattr(self, "crossattention"):
                raise ValueError("encoder_hidden_states given but the config has add_cross_attention=False")
            hidden_states, cross_weights = self.crossattention(
                hidden_states, encoder_mask, encoder_hidden_states, cache, output_attentions
            )
        hidden_states = self.output(self.intermediate(hidden_states), hidden_states)
        return unpadded.scatter(hidden_states) if padded_io else hidden_states, self_weights, cross_weights


class LineageBertEncoder(nn.Module):
    """The stack of layers. Hidden states and attention weights are not collected here: ``capture_outputs`` records
    them with hooks on the layers and the attention modules (``LineageBertPreTrainedModel._can_record_outputs``)."""

    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([LineageBertLayer(config, i) for i in range(config.num_hidden_layers)])

    def forward(self, hidden_states, mask, encoder_hidden_states=None, encoder_mask=None, cache=None,
                output_attentions=False, output_hidden_states=False, unpadded=None):
        # hidden_states: (B, T, C). With ``unpadded`` the layers work on the N real tokens, (N, C), packed once here;
        # while hidden states are recorded every layer takes and returns (B, T, C) instead (zeros at the padding, as
        # the callers get them), so what the hooks read has the batch's shape.
        if unpadded is not None:
            hidden_states = unpadded.gather(hidden_states)
            if output_hidden_states:
                hidden_states = unpadded.scatter(hidden_states)
        for layer in self.layer:
            # Positional: what may need gradients (checkpointing re-runs the layer with these); by keyword: the rest.
            hidden_states, _, _ = layer(
                hidden_states, mask, encoder_hidden_states, encoder_mask, cache=cache,
                output_attentions=output_attentions, unpadded=unpadded,
            )
        if unpadded is not None and hidden_states.dim() == 2:
            hidden_states = unpadded.scatter(hidden_states)
        return hidden_states


class LineageBertPooler(nn.Module):
    """tanh(W · h[CLS]): the sentence representation the NSP and classification heads read."""

    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states):
        return torch.tanh(self.dense(hidden_states[:, 0]))


class LineageBertLMPredictionHead(nn.Module):
    """dense → activation → LayerNorm → decoder tied to the word embeddings, plus an output-only bias."""

    def __init__(self, config):
        super().__init__()
        self.transform_dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACT2FN[config.hidden_act]
        self.transform_LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden_states):  # (..., C) -> (..., V)
        hidden_states = self.transform_LayerNorm(self.act(self.transform_dense(hidden_states)))
        # The decoder called as a module (not F.linear on its weight): accelerate's offload hooks run on the call.
        return self.decoder(hidden_states) + self.bias

    def set_decoder(self, decoder):
        """Replace the output layer (``resize_token_embeddings`` does, with a resized copy), keeping the output bias
        the same length: its first rows are kept, new rows start at the mean of the old ones (what transformers'
        ``mean_resizing`` does for an output bias), and a decoder with a bias of its own brings that bias."""
        self.decoder = decoder
        if decoder.bias is not None:
            self.bias = decoder.bias
            decoder.bias = None  # one output bias: ``self.bias``
            return
        n, old = decoder.weight.shape[0], self.bias
        if n != old.shape[0]:
            with torch.no_grad():
                bias = old.new_full((n,), float(old.float().mean()) if old.numel() else 0.0)
                bias[: min(n, old.shape[0])] = old[: min(n, old.shape[0])]
            self.bias = nn.Parameter(bias, requires_grad=old.requires_grad)


class LineageBertPreTrainedModel(LineagePreTrainedModel):
    config_class = LineageBertConfig
    config: LineageBertConfig
    base_model_prefix = "bert"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_flex_attn = True
    _supports_flash_attn = True
    _supports_attention_backend = True
    _can_compile_fullgraph = True
    _no_split_modules = ["LineageBertEmbeddings", "LineageBertLayer"]
    # What ``capture_outputs`` (on ``LineageBertModel.forward``) records when asked, as transformers' BERT does: each
    # layer's input and output, the self- and the cross-attention weights (one class, told apart by module name).
    _can_record_outputs = {
        "hidden_states": LineageBertLayer,
        "attentions": OutputRecorder(LineageBertAttention, index=1, layer_name="attention"),
        "cross_attentions": OutputRecorder(LineageBertAttention, index=1, layer_name="crossattention"),
    }

    @classmethod
    def _can_set_attn_implementation(cls) -> bool:
        # The attention modules read config._attn_implementation ("sdpa" or "eager") at every call, so
        # set_attn_implementation() takes effect at once (transformers' source heuristic cannot see that).
        return True

    @torch.no_grad()
    def _init_weights(self, module):
        """BERT's init: N(0, 0.02) weights, zero biases, unit LayerNorms, and the zero MLM output bias."""
        super()._init_weights(module)
        if isinstance(module, LineageBertLMPredictionHead):
            init.zeros_(module.bias)


class LineageBertModel(LineageBertPreTrainedModel):
    """The bare encoder (or, with ``is_decoder``, decoder): embeddings → N layers → pooler.

    Returns ``last_hidden_state`` (B, T, C) and ``pooler_output`` (B, C); ``hidden_states`` holds the
    embedding output and every layer's output when asked for.
    """

    def __init__(self, config, add_pooling_layer=True):
        super().__init__(config)
        self.embeddings = LineageBertEmbeddings(config)
        self.encoder = LineageBertEncoder(config)
        self.pooler = LineageBertPooler(config) if add_pooling_layer else None
        if config.pruned_heads:  # a pruned checkpoint: build its smaller matrices before the weights load
            self._prune_heads(config.pruned_heads)
        self.post_init()

    def _prune_heads(self, heads_to_prune):
        """``{layer: heads}``: see ``LineagePreTrainedModel.prune_heads``, which also records them in the config."""
        for layer, heads in heads_to_prune.items():
            self.encoder.layer[int(layer)].attention.prune_heads(set(heads))

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value):
        self.embeddings.word_embeddings = value

    def _check_inputs(self, input_ids, inputs_embeds, attention_mask, token_type_ids, position_ids, past_length):
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("Pass exactly one of input_ids or inputs_embeds")
        shape = input_ids.shape if input_ids is not None else inputs_embeds.shape[:-1]
        if len(shape) != 2:
            raise ValueError(f"input_ids must have shape (batch, sequence), got {tuple(shape)}")
        config = self.config
        if position_ids is not None:
            # Their values, not the length: packed sequences restart their positions within one row.
            check_ids_in_range(position_ids, config.max_position_embeddings, "position_ids", "max_position_embeddings")
        elif isinstance(past_length, int) and past_length + shape[1] > config.max_position_embeddings:
            # (Compiled with a static cache, past_length is a tensor: no Python branch reads it.)
            raise ValueError(
                f"Sequence length {past_length + shape[1]} exceeds max_position_embeddings="
                f"{config.max_position_embeddings}; truncate the input (tokenizer(..., truncation=True))"
            )
        if input_ids is not None:
            check_ids_in_range(input_ids, config.vocab_size, "input_ids", "vocab_size")
        if token_type_ids is not None:
            check_same_shape(token_type_ids, shape, "token_type_ids", "input_ids")
            check_ids_in_range(token_type_ids, config.type_vocab_size, "token_type_ids", "type_vocab_size")
        # A decoder's mask may cover the cached tokens too: (B, past + T).
        check_attention_mask(attention_mask, shape, past_length, over_cache=config.is_decoder)
        return shape

    def _unpadding(self, attention_mask):
        """``LineageBertUnpadded`` for a padded batch where skipping the padding is safe, else None: an encoder with
        ``unpad_inputs``, the eager or sdpa implementation, run eagerly. Compiled, exported or traced, the padded
        (B, T) layout stays: the split by sequence lengths would depend on the mask's values."""
        config = self.config
        if (attention_mask is None or attention_mask.dim() != 2 or config.is_decoder or not config.unpad_inputs
                or is_traced() or attention_implementation(config) not in ("eager", "sdpa")):
            return None
        return None if bool(attention_mask.all()) else LineageBertUnpadded(attention_mask)

    @output_flags_from_config
    @capture_outputs
    def forward(
        self,
        input_ids=None,
        attention_mask=None,
        token_type_ids=None,
        position_ids=None,
        inputs_embeds=None,
        encoder_hidden_states=None,
        encoder_attention_mask=None,
        past_key_values=None,
        use_cache=None,
        output_attentions=None,
        output_hidden_states=None,
        cache=None,
        **kwargs,
    ):
        # ``capture_outputs`` fills hidden_states, attentions and cross_attentions in the output when they are asked
        # for (``output_hidden_states`` may also be a list of indices: those states only), and makes it a tuple
        # where ``return_dict`` is False.
        config = self.config
        past_key_values = cache_argument(cache, past_key_values)  # `cache` from transformers >= 5.24
        output_attentions = config_flag(output_attentions, config.output_attentions)
        output_hidden_states = config_flag(output_hidden_states, config.output_hidden_states)
        use_cache = config.is_decoder and config_flag(use_cache, config.use_cache) and not self.training
        if use_cache and past_key_values is None:
            past_key_values = (
                EncoderDecoderCache(DynamicCache(config=config), DynamicCache(config=config))
                if encoder_hidden_states is not None
                else DynamicCache(config=config)
            )
        cache = past_key_values if (use_cache or past_key_values is not None) and config.is_decoder else None
        past_length = cache.get_seq_length() if cache is not None else 0
        if torch.is_tensor(past_length) and not is_traced():
            # A static cache's length is a tensor: read once, eagerly. Compiled it stays one (no host sync, no
            # recompilation as it grows), and what reads it is written for either.
            past_length = int(past_length)

        B, T = self._check_inputs(input_ids, inputs_embeds, attention_mask, token_type_ids, position_ids,
                                  past_length)
        if config.is_decoder:
            attention_mask = mask_over_cache(attention_mask, T, past_length)  # a mask over the new tokens only

        hidden_states = self.embeddings(input_ids, token_type_ids, position_ids, inputs_embeds, past_length)
        # An encoder skips the padding (see LineageBertUnpadded); its outputs there are zeros. A decoder keeps the
        # (B, T) layout its cache and causal mask are written for.
        unpadded = self._unpadding(attention_mask)
        # Masks as tensor operations, in the form the attention implementation takes (transformers' builders);
        # none where every layer attends within each unpadded sequence (the CPU) and reads no mask.
        if config.is_decoder:
            self_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
            mask = causal_mask(config, hidden_states, attention_mask, self_cache, position_ids)
        elif (unpadded is not None and hidden_states.device.type in LineageBertAttention.per_sequence_devices
              and not output_attentions):
            mask = None
        else:
            mask = bidirectional_mask(config, hidden_states, attention_mask)
        encoder_mask = None
        if encoder_hidden_states is not None and encoder_attention_mask is not None:
            encoder_mask = bidirectional_mask(config, hidden_states, encoder_attention_mask, encoder_hidden_states)
        sequence_output = self.encoder(
            hidden_states, mask, encoder_hidden_states, encoder_mask, cache, output_attentions, output_hidden_states,
            unpadded,
        )
        pooled_output = self.pooler(sequence_output) if self.pooler is not None else None
        return BaseModelOutputWithPoolingAndCrossAttentions(
            last_hidden_state=sequence_output, pooler_output=pooled_output, **with_cache(cache if use_cache else None)
        )


@dataclass
class LineageBertForPreTrainingOutput(ModelOutput):
    """Output of ``LineageBertForPreTraining``.

    ``loss`` is MLM loss + NSP loss (the MLM loss alone when ``config.next_sentence_prediction`` is off).
    ``prediction_logits`` is (B, T, V), as in transformers; with labels and ``sparse_logits=True`` it is
    (num_masked, V) — only the labelled positions, in the order of ``labels != -100``.
    """

    loss: torch.Tensor | None = None
    mlm_loss: torch.Tensor | None = None
    nsp_loss: torch.Tensor | None = None
    prediction_logits: torch.Tensor | None = None
    seq_relationship_logits: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


def _masked_lm(head, sequence_output, labels, num_items_in_batch=None, sparse_logits=False):
    """Logits and loss of the MLM head. Logits are (B, T, V); with labels and ``sparse_logits`` the vocabulary
    projection runs only where there are labels and the logits are (num_masked, V) (the fast pre-training path:
    the loss is the same, the largest matmul shrinks to the labelled ~15 %)."""
    if labels is None:
        return head(sequence_output), None
    check_same_shape(labels, sequence_output.shape[:2], "labels", "input_ids")
    if not sparse_logits:
        logits = head(sequence_output)  # (B, T, V)
        return logits, cross_entropy(logits, labels, num_items_in_batch)
    masked = labels != -100  # (B, T)
    logits = head(sequence_output[masked])  # (num_masked, V)
    return logits, cross_entropy(logits, labels[masked], num_items_in_batch)


class LineageBertForPreTraining(LineageBertPreTrainedModel):
    """BERT with both pre-training heads: masked LM (tied to the input embeddings) and next sentence prediction.

    Example::

        >>> model = LineageBertForPreTraining(LineageBertConfig.from_named("tiny"))
        >>> out = model(input_ids, token_type_ids=segments, labels=mlm_labels, next_sentence_label=is_random)
        >>> out.loss.backward()
        >>> model(..., labels=mlm_labels, sparse_logits=True).prediction_logits   # (num_masked, V): the fast path
    """

    accepts_loss_kwargs = False  # NSP is a per-batch mean under Trainer (only the engine passes sequence counts)
    _tied_weights_keys = {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight"}

    def __init__(self, config):
        super().__init__(config)
        self.bert = LineageBertModel(config)
        self.cls = nn.Module()
        self.cls.predictions = LineageBertLMPredictionHead(config)
        self.cls.seq_relationship = nn.Linear(config.hidden_size, 2)
        self.post_init()

    def get_output_embeddings(self):
        return self.cls.predictions.decoder

    def set_output_embeddings(self, new_embeddings):
        self.cls.predictions.set_decoder(new_embeddings)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, next_sentence_label=None, output_attentions=None,
                output_hidden_states=None, return_dict=None, sparse_logits=False, **kwargs):
        outputs = self.bert(
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
        )
        prediction_logits, mlm_loss = _masked_lm(
            self.cls.predictions, outputs.last_hidden_state, labels, kwargs.get("num_items_in_batch"), sparse_logits
        )
        seq_relationship_logits = self.cls.seq_relationship(outputs.pooler_output)  # (B, 2)
        # ``num_sequences_in_batch`` plays for NSP the part ``num_items_in_batch`` plays for MLM: the loss is a
        # sum divided by the count over the whole (accumulated, all-process) batch, so any split of a batch
        # gives the same gradient.
        # A model pre-trained without NSP (``config.next_sentence_prediction`` False) never trains the head.
        nsp_loss = None if next_sentence_label is None or not self.config.next_sentence_prediction else cross_entropy(
            seq_relationship_logits, next_sentence_label.view(-1), kwargs.get("num_sequences_in_batch")
        )
        losses = [x for x in (mlm_loss, nsp_loss) if x is not None]
        output = LineageBertForPreTrainingOutput(
            loss=sum(losses) if losses else None,
            mlm_loss=mlm_loss,
            nsp_loss=nsp_loss,
            prediction_logits=prediction_logits,
            seq_relationship_logits=seq_relationship_logits,
            hidden_states=outputs.hidden_states,
            attentions=outputs.attentions,
        )
        return tuple_or_dict(output, return_dict, self.config)


class LineageBertForMaskedLM(LineageBertPreTrainedModel):
    """BERT with the masked-LM head only (what ``pipeline("fill-mask")`` uses). ``logits`` are (B, T, V); pass
    ``sparse_logits=True`` with labels for (num_masked, V) logits at the labelled positions only (faster training)."""

    _tied_weights_keys = {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight"}

    def __init__(self, config):
        super().__init__(config)
        self.bert = LineageBertModel(config, add_pooling_layer=False)
        self.cls = nn.Module()
        self.cls.predictions = LineageBertLMPredictionHead(config)
        self.post_init()

    def get_output_embeddings(self):
        return self.cls.predictions.decoder

    def set_output_embeddings(self, new_embeddings):
        self.cls.predictions.set_decoder(new_embeddings)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, output_attentions=None, output_hidden_states=None,
                return_dict=None, sparse_logits=False, **kwargs):
        outputs = self.bert(
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
        )
        logits, loss = _masked_lm(
            self.cls.predictions, outputs.last_hidden_state, labels, kwargs.get("num_items_in_batch"), sparse_logits
        )
        output = MaskedLMOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states,
                                attentions=outputs.attentions)
        return tuple_or_dict(output, return_dict, self.config)


class LineageBertForCausalLM(LineageBertPreTrainedModel, GenerationMixin):
    """BERT as a left-to-right LM: the decoder of ``transformers.EncoderDecoderModel`` (BERT2BERT).

    A left-to-right LM needs ``is_decoder=True`` (and ``add_cross_attention=True`` inside an encoder–decoder, which
    ``EncoderDecoderModel.from_encoder_decoder_configs`` sets for you). A config without it (a BERT checkpoint
    loaded with ``AutoModelForCausalLM``, as transformers' ``run_clm.py`` does) gets a warning, as transformers'
    ``BertLMHeadModel`` gives, and the model's copy of it gets ``is_decoder=True`` — where ``BertLMHeadModel`` would
    go on attending both ways, so that position t would see the token it is trained to predict.
    """

    _tied_weights_keys = {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight"}

    def __init__(self, config):
        if not config.is_decoder:
            logger.warning("If you want to use `LineageBertForCausalLM` as a standalone, add `is_decoder=True.` "
                           "(set on the model's copy of the config: the model attends left to right)")
            # A copy: the config passed in may build other heads too (transformers' tests build every head of the
            # family from one config), and those stay encoders.
            config = copy.deepcopy(config)
            config.is_decoder = True
        super().__init__(config)
        self.bert = LineageBertModel(config, add_pooling_layer=False)
        self.cls = nn.Module()
        self.cls.predictions = LineageBertLMPredictionHead(config)
        self.post_init()

    # Copied from hf_lineage.models.modeling_lineage_bert.LineageBertForMaskedLM.get_output_embeddings
    def get_output_embeddings(self):
        return self.cls.predictions.decoder

    # Copied from hf_lineage.models.modeling_lineage_bert.LineageBertForMaskedLM.set_output_embeddings
    def set_output_embeddings(self, new_embeddings):
        self.cls.predictions.set_decoder(new_embeddings)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, encoder_hidden_states=None, encoder_attention_mask=None, labels=None,
                past_key_values=None, use_cache=None, output_attentions=None, output_hidden_states=None,
                return_dict=None, logits_to_keep=0, cache=None, **kwargs):
        outputs = self.bert(
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, encoder_hidden_states,
            encoder_attention_mask, cache=cache_argument(cache, past_key_values),
            use_cache=False if labels is not None or kwargs.get("shift_labels") is not None else use_cache,
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
        )
        hidden_states = outputs.last_hidden_state
        if logits_to_keep:
            # Generation needs only the last position's distribution: skip the vocabulary matmul elsewhere.
            hidden_states = hidden_states[:, -logits_to_keep:]
        logits = self.cls.predictions(hidden_states)
        loss = None
        shifted = kwargs.get("shift_labels")
        if shifted is not None:
            # Labels already aligned with the logits (transformers' ``shift_labels``, e.g. under context parallelism)
            check_same_shape(shifted, logits.shape[:2], "shift_labels", "the logits (use logits_to_keep=0)")
            loss = cross_entropy(logits, shifted, kwargs.get("num_items_in_batch"))
        elif labels is not None:  # labels are the inputs: predict token t+1 from tokens ..t
            loss = cross_entropy(logits[:, :-1], labels[:, 1:], kwargs.get("num_items_in_batch"))
        output = CausalLMOutputWithCrossAttentions(
            loss=loss, logits=logits, **with_cache(output_cache(outputs)),
            hidden_states=outputs.hidden_states, attentions=outputs.attentions,
            cross_attentions=outputs.cross_attentions,
        )
        return tuple_or_dict(output, return_dict, self.config)


class LineageBertForNextSentencePrediction(LineageBertPreTrainedModel):
    """The NSP head alone: label 0 means segment B follows segment A, 1 means B is random."""

    accepts_loss_kwargs = False  # a per-batch mean loss: Trainer scales it under accumulation (see the base class)

    def __init__(self, config):
        super().__init__(config)
        self.bert = LineageBertModel(config)
        self.cls = nn.Module()
        self.cls.seq_relationship = nn.Linear(config.hidden_size, 2)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, output_attentions=None, output_hidden_states=None,
                return_dict=None, **kwargs):
        outputs = self.bert(
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
        )
        logits = self.cls.seq_relationship(outputs.pooler_output)
        loss = None if labels is None else cross_entropy(logits, labels.view(-1))
        output = NextSentencePredictorOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states,
                                             attentions=outputs.attentions)
        return tuple_or_dict(output, return_dict, self.config)


def _packed(input_ids, keep):
    """The tokens where ``keep`` (B, T) is True moved to the front of each row, in order: (ids, mask), (B, T')."""
    order = torch.sort((~keep).to(torch.int8), dim=1, stable=True).indices  # kept positions first
    order = order[:, : max(1, int(keep.sum(dim=1).max()))]
    return input_ids.gather(1, order), keep.gather(1, order)


def _pair_sentences(input_ids, attention_mask, token_type_ids):
    """A pair ``[CLS] a [SEP] b [SEP]`` (``token_type_ids`` 1 on b) as its two sentences, ``[CLS] a [SEP]`` and
    ``[CLS] b [SEP]``, each packed to the front of its rows: ((ids, mask), (ids, mask))."""
    real = torch.ones_like(input_ids, dtype=torch.bool) if attention_mask is None else attention_mask.bool()
    second = token_type_ids.bool() & real
    positions = torch.arange(input_ids.shape[1], device=input_ids.device)
    first_token = positions == torch.where(real, positions, input_ids.shape[1]).amin(-1, keepdim=True)  # [CLS]
    return _packed(input_ids, real & ~second), _packed(input_ids, second | first_token)


class LineageBertForSequenceClassification(TransformerLayersTaskModel, LineageBertPreTrainedModel):
    """Classifier on the pooled [CLS] representation; sentence pairs go in as segments A and B.

    With ``config.pair_encoding == "siamese"`` a pair (``token_type_ids`` marking segment B) is instead read as two
    sentences, ``[CLS] a [SEP]`` and ``[CLS] b [SEP]``, each encoded on its own and mean-pooled to u and v; the
    classifier reads ``[u, v, |u − v|, u * v]`` (Reimers & Gurevych 2019). A 2-layer BERT pretrained for a minute
    does not learn to compare two sentences through [CLS] from a thousand pairs; it does this way.

    With ``config.task_head == "scalar_mix"`` the head is the one every family shares in the lineage's frozen
    regime (``TransformerLayersTaskModel``): a scalar mix of the L + 1 hidden states → task encoder (a BiLSTM) →
    max-pool → classifier; a pair's sentences ``[CLS] a [SEP]`` and ``[CLS] b [SEP]`` are encoded on their own,
    whatever ``pair_encoding`` says, and classified from ``[u, v, |u − v|, u * v]``.
    """

    accepts_loss_kwargs = False  # a per-batch mean loss: Trainer scales it under accumulation (see the base class)

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        if config.task_head == "scalar_mix":
            self.bert = LineageBertModel(config, add_pooling_layer=False)  # the mix reads every layer, not [CLS]
            self._build_task_model(config)
            self._build_sentence_classifiers(config)
            self.post_init()
            return
        self.bert = LineageBertModel(config)
        self.dropout = classifier_dropout(config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        if config.pair_encoding == "siamese":
            self.pair_classifier = nn.Linear(4 * config.hidden_size, config.num_labels)
        self.post_init()

    def _mean_pooled(self, input_ids, mask):  # (B, T) -> (B, C): the mean of the real tokens' final states
        return masked_mean(self.bert(input_ids, mask.long(), return_dict=True).last_hidden_state, mask)

    def _siamese_logits(self, input_ids, attention_mask, token_type_ids):
        first, second = _pair_sentences(input_ids, attention_mask, token_type_ids)
        u, v = self._mean_pooled(*first), self._mean_pooled(*second)  # [CLS] a [SEP], [CLS] b [SEP]
        return self.pair_classifier(self.dropout(pair_features(u, v)))

    def _shared_head_output(self, input_ids, attention_mask, token_type_ids, position_ids, labels, return_dict):
        """``task_head="scalar_mix"``: the static families' sentence classifier over the mixed hidden states."""
        if input_ids is None:
            raise ValueError("task_head='scalar_mix' reads input_ids, not inputs_embeds")
        if token_type_ids is not None and bool(token_type_ids.any()):
            check_same_shape(token_type_ids, input_ids.shape, "token_type_ids", "input_ids")
            (ids_a, mask_a), (ids_b, mask_b) = _pair_sentences(input_ids, attention_mask, token_type_ids)
            # Both sentences in one batch of 2B rows: one Transformer call, one standardisation, one BiLSTM call.
            T = max(ids_a.shape[1], ids_b.shape[1])
            pad = lambda x, value: F.pad(x, (0, T - x.shape[1]), value=value)  # noqa: E731
            ids = torch.cat([pad(ids_a, self.config.pad_token_id or 0), pad(ids_b, self.config.pad_token_id or 0)])
            features, mask = self._encode(ids, torch.cat([pad(mask_a, False), pad(mask_b, False)]), {})
            u, v = self._sentence_vector(features, mask).chunk(2)  # (B, H) each, each sentence read alone
        else:
            kwargs = {"token_type_ids": token_type_ids, "position_ids": position_ids}
            features, mask = self._encode(input_ids, attention_mask, kwargs)
            u, v = self._sentence_vector(features, mask), None
        return self._sentence_classifier_output(u, v, labels, return_dict)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, output_attentions=None, output_hidden_states=None,
                return_dict=None, **kwargs):
        if self.config.task_head == "scalar_mix":
            return self._shared_head_output(input_ids, attention_mask, token_type_ids, position_ids, labels,
                                            return_dict)
        # The segment ids' values are read (a host sync, a branch torch.export cannot trace) only where they matter.
        if self.config.pair_encoding == "siamese" and token_type_ids is not None and bool(token_type_ids.any()):
            if input_ids is None:
                raise ValueError("pair_encoding='siamese' reads input_ids (to split the pair), not inputs_embeds")
            check_same_shape(token_type_ids, input_ids.shape, "token_type_ids", "input_ids")
            logits = self._siamese_logits(input_ids, attention_mask, token_type_ids)  # (B, num_labels)
            outputs = BaseModelOutputWithPoolingAndCrossAttentions()  # two encodings: no single sequence's states
        else:
            outputs = self.bert(
                input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
                output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
            )
            logits = self.classifier(self.dropout(outputs.pooler_output))  # (B, num_labels)
        loss = None if labels is None else sequence_classification_loss(self.config, logits, labels)
        output = SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states,
                                          attentions=outputs.attentions)
        return tuple_or_dict(output, return_dict, self.config)


class LineageBertForTokenClassification(TransformerLayersTaskModel, LineageBertPreTrainedModel):
    """Per-token classifier (NER, POS); label the first sub-token of each word and give the others -100.

    With ``config.task_head == "scalar_mix"``: the head every family shares in the lineage's frozen regime, a scalar
    mix of the L + 1 hidden states → task encoder (a BiLSTM) → a label per token (``TransformerLayersTaskModel``)."""

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.bert = LineageBertModel(config, add_pooling_layer=False)
        if config.task_head == "scalar_mix":
            self._build_task_model(config)
            self._build_token_classifier(config)
        else:
            self.dropout = classifier_dropout(config)
            self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, output_attentions=None, output_hidden_states=None,
                return_dict=None, **kwargs):
        if self.config.task_head == "scalar_mix":
            if input_ids is None:
                raise ValueError("task_head='scalar_mix' reads input_ids, not inputs_embeds")
            features, mask = self._encode(input_ids, attention_mask,
                                          {"token_type_ids": token_type_ids, "position_ids": position_ids})
            return self._token_classifier_output(features, mask, labels, kwargs.get("num_items_in_batch"),
                                                 return_dict)
        outputs = self.bert(
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
        )
        logits = self.classifier(self.dropout(outputs.last_hidden_state))  # (B, T, num_labels)
        loss = None
        if labels is not None:
            check_same_shape(labels, logits.shape[:2], "labels", "input_ids")
            loss = cross_entropy(logits, labels, kwargs.get("num_items_in_batch"))
        output = TokenClassifierOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states,
                                       attentions=outputs.attentions)
        return tuple_or_dict(output, return_dict, self.config)


class LineageBertForMultipleChoice(LineageBertPreTrainedModel):
    """Scores each (context, option) sequence with a linear layer on [CLS]; softmax over the options.

    Inputs have shape (B, num_choices, T).
    """

    accepts_loss_kwargs = False  # a per-batch mean loss: Trainer scales it under accumulation (see the base class)

    def __init__(self, config):
        super().__init__(config)
        self.bert = LineageBertModel(config)
        self.dropout = classifier_dropout(config)
        self.classifier = nn.Linear(config.hidden_size, 1)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, output_attentions=None, output_hidden_states=None,
                return_dict=None, **kwargs):
        reference = input_ids if input_ids is not None else inputs_embeds
        if reference is None or reference.dim() < 3:
            raise ValueError("multiple-choice inputs must have shape (batch, num_choices, sequence)")
        num_choices = reference.shape[1]

        def flat(x):  # (B, num_choices, T, ...) -> (B * num_choices, T, ...)
            return None if x is None else x.reshape(-1, *x.shape[2:])

        outputs = self.bert(
            flat(input_ids), flat(attention_mask), flat(token_type_ids), flat(position_ids), flat(inputs_embeds),
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
        )
        logits = self.classifier(self.dropout(outputs.pooler_output)).view(-1, num_choices)  # (B, num_choices)
        loss = None if labels is None else cross_entropy(logits, labels.view(-1))
        output = MultipleChoiceModelOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states,
                                           attentions=outputs.attentions)
        return tuple_or_dict(output, return_dict, self.config)


class LineageBertForQuestionAnswering(QuestionAnsweringPipelineMixin, LineageBertPreTrainedModel):
    """Extractive QA (SQuAD): start and end logits for every token."""

    accepts_loss_kwargs = False  # a per-batch mean loss: Trainer scales it under accumulation (see the base class)

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.bert = LineageBertModel(config, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, start_positions=None, end_positions=None, output_attentions=None,
                output_hidden_states=None, return_dict=None, **kwargs):
        outputs = self.bert(
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
        )
        start_logits, end_logits = self.qa_outputs(outputs.last_hidden_state).unbind(dim=-1)  # (B, T) each
        loss = None
        if start_positions is not None and end_positions is not None:
            # Answers outside the (truncated) input are clamped to T and ignored, as in transformers.
            T = start_logits.size(1)
            start = start_positions.view(-1).clamp(0, T)
            end = end_positions.view(-1).clamp(0, T)
            loss = (F.cross_entropy(start_logits.float(), start, ignore_index=T)
                    + F.cross_entropy(end_logits.float(), end, ignore_index=T)) / 2
        output = QuestionAnsweringModelOutput(loss=loss, start_logits=start_logits, end_logits=end_logits,
                                              hidden_states=outputs.hidden_states, attentions=outputs.attentions)
        return tuple_or_dict(output, return_dict, self.config)


class LineageBertForIntentAndSlots(LineageBertPreTrainedModel):
    """Joint intent classification and slot filling (Chen, Zhuo & Wang 2019): the intent from the pooled [CLS]
    state, a slot tag from every token's final state (label a word's first sub-token, -100 on the others, as the
    paper does), trained on intent CE + ``config.slot_loss_weight`` · slot CE.

    ``config.intent_labels`` names the intents (``intent_logits`` (B, len(intent_labels))); the slot tags are
    ``config.id2label`` (``slot_logits`` (B, T, num_labels)).

    Example::

        >>> model = hf_lineage.AutoModelForIntentAndSlots.from_pretrained("ft/bert-atis")  # doctest: +SKIP
        >>> out = model(**tokenizer(["show flights to boston"], return_tensors="pt"))  # doctest: +SKIP
        >>> model.config.intent_labels[out.intent_logits.argmax(-1)[0]]  # doctest: +SKIP
        'atis_flight'
    """

    accepts_loss_kwargs = False  # a per-batch mean loss: Trainer scales it under accumulation (see the base class)

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.intent_names = intent_labels_of(config)
        self.bert = LineageBertModel(config)
        self.dropout = classifier_dropout(config)
        self.intent_classifier = nn.Linear(config.hidden_size, len(self.intent_names))
        self.slot_classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, intent_labels=None, slot_labels=None, output_attentions=None,
                output_hidden_states=None, return_dict=None, **kwargs):
        outputs = self.bert(
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
        )
        intent_logits = self.intent_classifier(self.dropout(outputs.pooler_output))  # (B, num_intents)
        slot_logits = self.slot_classifier(self.dropout(outputs.last_hidden_state))  # (B, T, num_labels)
        loss, intent_loss, slot_loss = intent_and_slots_loss(self.config, intent_logits, slot_logits, intent_labels,
                                                             slot_labels)
        output = IntentAndSlotsOutput(loss=loss, intent_logits=intent_logits, slot_logits=slot_logits,
                                      intent_loss=intent_loss, slot_loss=slot_loss,
                                      hidden_states=outputs.hidden_states, attentions=outputs.attentions)
        return tuple_or_dict(output, return_dict, self.config)


__all__ = ["LineageBertPreTrainedModel", *AUTO_CLASSES.values(), "LineageBertForIntentAndSlots"]
