"""Lineage GPT (Radford et al., 2018): a decoder-only, post-LayerNorm Transformer pre-trained as a left-to-right
language model, then fine-tuned with input transformations and an auxiliary language-model loss.

Read top to bottom: attention, MLP, block, the model, the causal LM, then the fine-tuning heads of section 3.3.
Parameter names follow transformers' ``OpenAIGPTModel`` (``tokens_embed``, ``positions_embed``, ``h.N.attn.c_attn``,
``ln_1``, ``mlp.c_fc`` ...), with ``nn.Linear`` where transformers keeps OpenAI's ``Conv1D`` (the same matmul with
the weight stored transposed); ``hf_lineage.convert`` transposes between the two.

The fine-tuning input transformations (``<s> x <e>``, ``<s> premise $ hypothesis <e>``, both orders for similarity,
one sequence per option for multiple choice) are built by ``hf_lineage.data.gpt_tasks``; the heads here read the
final state of the extract token ``<e>``, i.e. of the last non-padding token of each sequence.

Where this differs from transformers' ``OpenAIGPTLMHeadModel`` in what it computes: with *left* padding, positions
count from each row's first real token (transformers counts from the first pad), so a batched, left-padded prompt
generates what it would alone; right padding gives identical results. The language-model loss is computed by
``vocabulary_cross_entropy`` (same value and gradient as ``F.cross_entropy``, without its (B·T, V) temporaries).
"""

from dataclasses import dataclass

import functools

import torch
import torch.nn.functional as F
from torch import nn
from transformers.activations import ACT2FN
from transformers.cache_utils import DynamicCache, EncoderDecoderCache
from transformers.conversion_mapping import register_checkpoint_conversion_mapping
from transformers.core_model_loading import Chunk, WeightConverter
from transformers.generation import GenerationMixin
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutputWithPastAndCrossAttentions,
    CausalLMOutputWithCrossAttentions,
    QuestionAnsweringModelOutput,
)
from transformers.utils import ModelOutput

from .attention_lineage_utils import (attention_interface, bidirectional_mask, causal_mask, is_traced,
                                      split_fused_projection)
from .cache_lineage_utils import cache_argument, output_cache, with_cache
from .configuration_lineage_gpt import LineageGPTConfig
from .heads_lineage_utils import classifier_dropout, masked_mean, pair_features
from .loss_lineage_utils import cross_entropy, sequence_classification_loss, span_loss, vocabulary_cross_entropy
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
    tuple_or_dict,
)
from .pruning_lineage_utils import pruned_head_index, pruned_linear

# Auto class -> class name. The registry registers these and save_pretrained writes them into auto_map.
AUTO_CLASSES = {
    "AutoModel": "LineageGPTModel",
    "AutoModelForPreTraining": "LineageGPTForCausalLM",
    "AutoModelForCausalLM": "LineageGPTForCausalLM",
    "AutoModelForSequenceClassification": "LineageGPTForSequenceClassification",
    "AutoModelForMultipleChoice": "LineageGPTForMultipleChoice",
    "AutoModelForTokenClassification": "LineageGPTForTokenClassification",
    "AutoModelForQuestionAnswering": "LineageGPTForQuestionAnswering",
}

# hf_lineage's own Auto classes (transformers has none for the task) -> class name: the registry registers these
# with ``hf_lineage.AutoModelForIntentAndSlots`` and save_pretrained writes them into auto_map.
LINEAGE_AUTO_CLASSES = {"AutoModelForIntentAndSlots": "LineageGPTForIntentAndSlots"}


# Folders saved before query, key and value were split (and transformers' OpenAI GPT) hold them fused as
# ``attn.c_attn`` (q, k, v stacked along the output dimension). Loading splits it; ``save_pretrained`` fuses it again,
# so a folder saved now still loads with older hf_lineage releases and the code shipped beside older checkpoints.
WEIGHT_CONVERSIONS = [
    WeightConverter(
        source_patterns="attn.c_attn",
        target_patterns=["attn.query", "attn.key", "attn.value"],
        operations=[Chunk(dim=0)],
    ),
]
register_checkpoint_conversion_mapping(LineageGPTConfig.model_type, WEIGHT_CONVERSIONS, overwrite=True)


class LineageGPTAttention(nn.Module):
    """Masked multi-head self-attention (or cross-attention over an encoder's states) and its output projection.

    Self-attention projects with three ``nn.Linear``, ``query``, ``key`` and ``value`` (transformers' OpenAI GPT
    fuses them into ``c_attn``; ``hf_lineage.convert`` and loading an older folder split it, saving fuses it
    again: see ``WEIGHT_CONVERSIONS``), so PEFT can adapt the query and value alone. Cross-attention (only with
    ``add_cross_attention``) projects the query from the decoder (``q_attn``) and the key/value pair from the encoder
    (``c_attn``). The attention itself is the function ``config._attn_implementation`` names.
    """

    def __init__(self, config, layer_idx, is_cross_attention=False):
        super().__init__()
        self.config = config  # read at every call: set_attn_implementation() changes config._attn_implementation
        self.num_heads = config.num_attention_heads  # fewer once heads are pruned
        self.head_size = config.hidden_size // config.num_attention_heads
        self.scaling = self.head_size**-0.5
        self.pruned_heads = set()  # original head numbers
        self.layer_idx = layer_idx
        self.is_cross_attention = is_cross_attention
        self.is_causal = not is_cross_attention  # read by the sdpa and flex interfaces
        C = config.hidden_size
        if is_cross_attention:
            self.q_attn = nn.Linear(C, C)
            self.c_attn = nn.Linear(C, 2 * C)
        else:
            self.query = nn.Linear(C, C)
            self.key = nn.Linear(C, C)
            self.value = nn.Linear(C, C)
            # a state dict in the saved layout (``c_attn``) also loads through load_state_dict, as Trainer loads one
            self.register_load_state_dict_pre_hook(functools.partial(split_fused_projection, fused="c_attn"))
        self.c_proj = nn.Linear(C, C)
        self.attn_dropout = config.attention_probs_dropout_prob
        self.resid_dropout = nn.Dropout(config.hidden_dropout_prob)

    # Copied from hf_lineage.models.modeling_lineage_bert.LineageBertAttention._heads
    def _heads(self, x):  # (B, T, nh * hs) -> (B, nh, T, hs)
        return x.view(*x.shape[:2], self.num_heads, self.head_size).transpose(1, 2)

    # Copied from hf_lineage.models.modeling_lineage_bert.LineageBertAttention.prune_heads with self.dense->self.c_proj
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
        self.c_proj = pruned_linear(self.c_proj, index, dim=1)
        self.num_heads -= len(heads)
        self.pruned_heads |= heads

    def forward(self, hidden_states, mask=None, encoder_hidden_states=None, cache=None, output_attentions=False):
        B, T, C = hidden_states.shape
        A = self.num_heads * self.head_size  # C unless heads were pruned
        if A == 0:  # every head of this layer pruned: only the output projection's bias is left
            y = hidden_states.new_zeros(B, T, 0)
            return self.resid_dropout(self.c_proj(y)), (hidden_states.new_zeros(B, 0, T, T) if output_attentions else None)
        if self.is_cross_attention:
            q = self._heads(self.q_attn(hidden_states))
            cross_cache = cache if isinstance(cache, EncoderDecoderCache) else None
            if cross_cache is not None and cross_cache.is_updated.get(self.layer_idx):
                # The encoder's keys/values do not change while decoding: computed once, then reused.
                layer = cross_cache.cross_attention_cache.layers[self.layer_idx]
                k, v = layer.keys, layer.values
            else:
                k, v = map(self._heads, self.c_attn(encoder_hidden_states).split(C, dim=-1))
                if cross_cache is not None:
                    k, v = cross_cache.cross_attention_cache.update(k, v, self.layer_idx)
                    cross_cache.is_updated[self.layer_idx] = True
        else:
            q = self._heads(self.query(hidden_states))  # each (B, nh, T, hs)
            k = self._heads(self.key(hidden_states))
            v = self._heads(self.value(hidden_states))
            if cache is not None:
                self_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
                k, v = self_cache.update(k, v, self.layer_idx)  # (B, nh, past + T, hs)
        attend = attention_interface(self.config, output_attentions)
        y, weights = attend(self, q, k, v, mask, dropout=self.attn_dropout if self.training else 0.0,
                            scaling=self.scaling)
        y = y.reshape(B, T, A)  # (B, T, nh, hs): all head outputs side by side
        return self.resid_dropout(self.c_proj(y)), (weights if output_attentions else None)


class LineageGPTMLP(nn.Module):
    """Position-wise feed-forward network: C -> intermediate_size -> C with GELU between."""

    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = ACT2FN[config.hidden_act]
        self.c_proj = nn.Linear(config.intermediate_size, config.hidden_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states):
        return self.dropout(self.c_proj(self.act(self.c_fc(hidden_states))))


class LineageGPTBlock(GradientCheckpointingLayer):
    """One Transformer decoder block, post-LayerNorm as in the paper (and the original Transformer):
    x = LN(x + attn(x)); [x = LN(x + cross_attn(x, encoder))]; x = LN(x + mlp(x)).

    GPT-2 later moved LayerNorm to the input of each sub-block (pre-LN); GPT-1 normalises after the residual sum.
    A ``GradientCheckpointingLayer``: under ``gradient_checkpointing_enable()`` (``activation_checkpointing_enable()``
    from transformers 5.24) each block is recomputed in the backward pass instead of storing its activations.
    """

    def __init__(self, config, layer_idx):
        super().__init__()
        C = config.hidden_size
        self.attn = LineageGPTAttention(config, layer_idx)
        self.ln_1 = nn.LayerNorm(C, eps=config.layer_norm_eps)
        if config.add_cross_attention:
            self.crossattention = LineageGPTAttention(config, layer_idx, is_cross_attention=True)
            self.ln_cross_attn = nn.LayerNorm(C, eps=config.layer_norm_eps)
        self.mlp = LineageGPTMLP(config)
        self.ln_2 = nn.LayerNorm(C, eps=config.layer_norm_eps)

    def forward(self, hidden_states, mask=None, encoder_hidden_states=None, encoder_mask=None, cache=None,
                output_attentions=False):
        a, self_weights = self.attn(hidden_states, mask, cache=cache, output_attentions=output_attentions)
        hidden_states = self.ln_1(hidden_states + a)
        cross_weights = None
        if encoder_hidden_states is not None:
            if not hasattr(self, "crossattention"):
                raise ValueError("encoder_hidden_states given but the config has add_cross_attention=False")
            c, cross_weights = self.crossattention(
                hidden_states, encoder_mask, encoder_hidden_states, cache, output_attentions
            )
            hidden_states = self.ln_cross_attn(hidden_states + c)
        hidden_states = self.ln_2(hidden_states + self.mlp(hidden_states))
        return hidden_states, self_weights, cross_weights


class LineageGPTPreTrainedModel(LineagePreTrainedModel):
    """Owns the config class and the init: N(0, 0.02) weights (section 4.1), zero biases, unit LayerNorms —
    transformers' default ``_init_weights`` with ``initializer_range=0.02``."""

    config_class = LineageGPTConfig
    config: LineageGPTConfig
    base_model_prefix = "transformer"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_flex_attn = True
    _supports_flash_attn = True
    _supports_attention_backend = True
    _can_compile_fullgraph = True
    _no_split_modules = ["LineageGPTBlock"]

    # Copied from hf_lineage.models.modeling_lineage_bert.LineageBertPreTrainedModel._can_set_attn_implementation
    @classmethod
    def _can_set_attn_implementation(cls) -> bool:
        # The attention modules read config._attn_implementation ("sdpa" or "eager") at every call, so
        # set_attn_implementation() takes effect at once (transformers' source heuristic cannot see that).
        return True


class LineageGPTModel(LineageGPTPreTrainedModel):
    """The bare decoder: token + learned position embeddings -> dropout -> N post-LN blocks. No final LayerNorm
    (every block already ends with one).

    Returns ``last_hidden_state`` (B, T, C), the ``DynamicCache`` when ``use_cache``, and every layer's
    input plus the last output as ``hidden_states`` when asked for.
    """

    def __init__(self, config):
        super().__init__(config)
        self.tokens_embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.positions_embed = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.drop = nn.Dropout(config.embedding_dropout_prob)
        self.h = nn.ModuleList([LineageGPTBlock(config, i) for i in range(config.num_hidden_layers)])
        if config.pruned_heads:  # a pruned checkpoint: build its smaller matrices before the weights load
            self._prune_heads(config.pruned_heads)
        self.post_init()

    # Copied from hf_lineage.models.modeling_lineage_bert.LineageBertModel._prune_heads with self.encoder.layer->self.h, .attention.->.attn.
    def _prune_heads(self, heads_to_prune):
        """``{layer: heads}``: see ``LineagePreTrainedModel.prune_heads``, which also records them in the config."""
        for layer, heads in heads_to_prune.items():
            self.h[int(layer)].attn.prune_heads(set(heads))

    def get_input_embeddings(self):
        return self.tokens_embed

    def set_input_embeddings(self, value):
        self.tokens_embed = value

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
                f"Sequence length {past_length + shape[1]} exceeds the context, max_position_embeddings="
                f"{config.max_position_embeddings}; truncate the input (tokenizer(..., truncation=True))"
            )
        if input_ids is not None:
            check_ids_in_range(input_ids, config.vocab_size, "input_ids", "vocab_size")
        if token_type_ids is not None:
            check_same_shape(token_type_ids, shape, "token_type_ids", "input_ids")
            check_ids_in_range(token_type_ids, config.vocab_size, "token_type_ids", "vocab_size")
        # During generation the mask covers the cached tokens too: (B, past + T).
        check_attention_mask(attention_mask, shape, past_length, over_cache=True)
        return shape

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
        return_dict=None,
        cache=None,
        **kwargs,
    ):
        config = self.config
        past_key_values = cache_argument(cache, past_key_values)  # `cache` from transformers >= 5.24
        output_attentions = config_flag(output_attentions, config.output_attentions)
        output_hidden_states = config_flag(output_hidden_states, config.output_hidden_states)
        return_dict = config_flag(return_dict, config.return_dict)
        use_cache = config_flag(use_cache, config.use_cache) and not self.training
        if use_cache and past_key_values is None:
            past_key_values = (
                EncoderDecoderCache(DynamicCache(config=config), DynamicCache(config=config))
                if encoder_hidden_states is not None
                else DynamicCache(config=config)
            )
        cache = past_key_values if use_cache or past_key_values is not None else None
        past_length = cache.get_seq_length() if cache is not None else 0
        if torch.is_tensor(past_length) and not is_traced():
            # A static cache's length is a tensor: read once, eagerly. Compiled it stays one (no host sync, no
            # recompilation as it grows), and what reads it is written for either.
            past_length = int(past_length)

        B, T = self._check_inputs(input_ids, inputs_embeds, attention_mask, token_type_ids, position_ids,
                                  past_length)
        device = input_ids.device if input_ids is not None else inputs_embeds.device
        attention_mask = mask_over_cache(attention_mask, T, past_length)  # a mask over the new tokens only

        given_positions = position_ids
        if position_ids is None:
            # ``arange + past_length`` rather than ``arange(past_length, ...)``: a static cache's past_length is a
            # tensor, which torch.compile traces in a sum but not as arange's bound.
            position_ids = (torch.arange(T, device=device) + past_length)[None]  # (1, T)
            if attention_mask is not None and attention_mask.dim() == 2:
                # Left padding (batched generation): count positions from each row's first real token, so a padded
                # prompt gets the position embeddings it would get alone. Right padding (or none) changes nothing.
                first_real = attention_mask.int().argmax(dim=-1, keepdim=True)  # (B, 1)
                position_ids = (position_ids - first_real).clamp(min=0)  # (B, T)
        if inputs_embeds is None:
            inputs_embeds = self.tokens_embed(input_ids)
        # Masks as tensor operations, in the form the attention implementation takes (transformers' builders).
        self_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
        mask = causal_mask(config, inputs_embeds, attention_mask, self_cache, given_positions)
        encoder_mask = None
        if encoder_hidden_states is not None and encoder_attention_mask is not None:
            encoder_mask = bidirectional_mask(config, inputs_embeds, encoder_attention_mask, encoder_hidden_states)
        hidden_states = inputs_embeds + self.positions_embed(position_ids)  # (B, T, C)
        if token_type_ids is not None:
            # As in transformers' OpenAI GPT: "token types" (e.g. a segment marker) are looked up in the token table.
            hidden_states = hidden_states + self.tokens_embed(token_type_ids)
        hidden_states = self.drop(hidden_states)

        all_hidden, all_self, all_cross = [], [], []
        for block in self.h:
            if output_hidden_states:
                all_hidden.append(hidden_states)
            # Positional: what may need gradients (checkpointing re-runs the block with these); by keyword: the rest.
            hidden_states, w_self, w_cross = block(
                hidden_states, mask, encoder_hidden_states, encoder_mask, cache=cache,
                output_attentions=output_attentions,
            )
            all_self.append(w_self)
            all_cross.append(w_cross)
        if output_hidden_states:
            all_hidden.append(hidden_states)

        output = BaseModelOutputWithPastAndCrossAttentions(
            last_hidden_state=hidden_states,
            **with_cache(cache if use_cache else None),
            hidden_states=tuple(all_hidden) if output_hidden_states else None,
            attentions=tuple(all_self) if output_attentions else None,
            cross_attentions=tuple(all_cross) if output_attentions and encoder_hidden_states is not None else None,
        )
        return output if return_dict else output.to_tuple()


def shift_labels(labels):
    """Labels of a causal LM are its inputs: position t predicts token t+1, the last position predicts nothing.
    Shifting the labels (not the logits) keeps the (B, T, V) logits contiguous: no copy of the largest tensor."""
    return F.pad(labels[..., 1:], (0, 1), value=-100)


class LineageGPTForCausalLM(LineageGPTPreTrainedModel, GenerationMixin):
    """GPT with its language-model head, the output layer tied to the token embedding (pre-training, generation,
    the decoder of ``transformers.EncoderDecoderModel``).

    Example::

        >>> model = LineageGPTForCausalLM(LineageGPTConfig.from_named("tiny", vocab_size=1000))
        >>> model(input_ids, labels=input_ids).loss.backward()      # labels are shifted inside
        >>> model.generate(prompt_ids, max_new_tokens=20, do_sample=True, top_k=40)
    """

    _tied_weights_keys = {"lm_head.weight": "transformer.tokens_embed.weight"}

    def __init__(self, config):
        super().__init__(config)
        self.transformer = LineageGPTModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_output_embeddings(self):
        return self.lm_head

    def set_output_embeddings(self, new_embeddings):
        self.lm_head = new_embeddings

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, encoder_hidden_states=None, encoder_attention_mask=None, labels=None,
                past_key_values=None, use_cache=None, output_attentions=None, output_hidden_states=None,
                return_dict=None, logits_to_keep=0, cache=None, **kwargs):
        outputs = self.transformer(
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, encoder_hidden_states,
            encoder_attention_mask, cache=cache_argument(cache, past_key_values),
            use_cache=False if labels is not None or kwargs.get("shift_labels") is not None else use_cache,
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
        )
        hidden_states = outputs.last_hidden_state
        if logits_to_keep:
            # Generation needs only the last position's distribution: skip the vocabulary matmul elsewhere.
            hidden_states = hidden_states[:, -logits_to_keep:]
        logits = self.lm_head(hidden_states)  # (B, T, V)
        loss = None
        # transformers' ``shift_labels`` (Trainer passes them under context parallelism): labels already aligned
        # with the logits, used as they are; otherwise ``labels`` are the inputs, shifted here.
        targets = kwargs.get("shift_labels")
        if targets is None and labels is not None:
            check_same_shape(labels, logits.shape[:2], "labels", "the logits (use logits_to_keep=0 with labels)")
            targets = shift_labels(labels)
        if targets is not None:
            check_same_shape(targets, logits.shape[:2], "shift_labels", "the logits (use logits_to_keep=0)")
            loss = vocabulary_cross_entropy(logits, targets, kwargs.get("num_items_in_batch"))
        output = CausalLMOutputWithCrossAttentions(
            loss=loss, logits=logits, **with_cache(output_cache(outputs)),
            hidden_states=outputs.hidden_states, attentions=outputs.attentions,
            cross_attentions=outputs.cross_attentions,
        )
        return tuple_or_dict(output, return_dict, self.config)

    def _validate_generated_length(self, generation_config, input_ids_length, has_default_max_length):
        """Refuse, before generating anything, a prompt or a requested length that does not fit the context
        (the position table has ``max_position_embeddings`` rows)."""
        super()._validate_generated_length(generation_config, input_ids_length, has_default_max_length)
        context = self.config.max_position_embeddings
        if input_ids_length > context:
            raise ValueError(
                f"The prompt has {input_ids_length} tokens but the model's context is {context} tokens "
                f"(max_position_embeddings); truncate the prompt"
            )
        if generation_config.max_length > context:
            new = generation_config.max_length - input_ids_length
            raise ValueError(
                f"The prompt ({input_ids_length} tokens) + max_new_tokens ({new}) = {generation_config.max_length} "
                f"tokens exceeds the model's context of {context} tokens (max_position_embeddings); ask for at most "
                f"{context - input_ids_length} new tokens"
            )


# --------------------------------------------------------------------------- fine-tuning (section 3.2 and 3.3)


@dataclass
class LineageGPTTaskOutput(ModelOutput):
    """Output of the fine-tuning heads.

    In training (``model.training``) ``loss`` is the paper's L3 = task loss + λ · ``lm_loss`` (λ =
    ``config.lm_loss_weight``), what fine-tuning optimises (section 3.2); in evaluation (``model.eval()``) it is the
    task loss alone, so that Trainer's ``eval_loss`` is the task's (comparable with other families' and with the
    cross-entropy of ``logits``), not inflated by the LM term. ``lm_loss`` is the auxiliary language-model loss on
    the task's own input, reported in both modes (None when λ = 0 or no labels were given).
    """

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    lm_loss: torch.Tensor | None = None


class LineageGPTForFineTuning(LineageGPTPreTrainedModel):
    """What the three task heads share: the model, the tied LM head for the auxiliary loss, and reading the state
    of the extract token."""

    _tied_weights_keys = {"lm_head.weight": "transformer.tokens_embed.weight"}
    # The losses are means over the micro-batch, so Trainer must scale them for gradient accumulation itself.
    accepts_loss_kwargs = False

    def __init__(self, config):
        super().__init__(config)
        self.transformer = LineageGPTModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.dropout = classifier_dropout(config)

    def get_output_embeddings(self):
        return self.lm_head

    def set_output_embeddings(self, new_embeddings):
        self.lm_head = new_embeddings

    def _extract(self, hidden_states, input_ids, attention_mask):
        """The final state of each sequence's extract token ``<e>``: its last non-padding token. (N, T, C) -> (N, C).

        Padding is read from ``attention_mask``, else from ``input_ids == pad_token_id``; with neither, the last
        position is taken.
        """
        N, T = hidden_states.shape[:2]
        if attention_mask is not None:
            real = attention_mask.bool()
        elif input_ids is not None and self.config.pad_token_id is not None:
            real = input_ids != self.config.pad_token_id
        else:
            return hidden_states[:, -1]
        # Rightmost real position (handles left and right padding): the largest index where ``real`` is True.
        last = (torch.arange(T, device=hidden_states.device) * real).argmax(dim=-1)  # (N,)
        return hidden_states[torch.arange(N, device=hidden_states.device), last]

    def _lm_loss(self, hidden_states, input_ids, attention_mask):
        """The auxiliary objective L1 on the task input, padding ignored; the vocabulary projection runs only at
        positions that predict a real token."""
        if input_ids is None or self.config.lm_loss_weight == 0:
            return None
        labels = input_ids if attention_mask is None else input_ids.masked_fill(attention_mask == 0, -100)
        labels = shift_labels(labels)  # (N, T)
        predicting = labels != -100
        return vocabulary_cross_entropy(self.lm_head(hidden_states[predicting]), labels[predicting])  # (n, V)

    def _loss(self, task_loss, hidden_states, input_ids, attention_mask):
        """(loss, lm_loss): in training L3 = L2 + λ · L1 (section 3.2), in evaluation L2 (see LineageGPTTaskOutput)."""
        if task_loss is None:
            return None, None
        lm_loss = self._lm_loss(hidden_states, input_ids, attention_mask)
        if lm_loss is None or not self.training:
            return task_loss, lm_loss
        return task_loss + self.config.lm_loss_weight * lm_loss, lm_loss


def _flatten_choices(x):  # (B, n, T, ...) -> (B * n, T, ...)
    return None if x is None else x.reshape(-1, *x.shape[2:])


def _other_order(input_ids, attention_mask, delimiter_id):
    """For (B, T) pairs ``<s> a $ b <e>``, the positions that read them as ``<s> b $ a <e>``: a (B, T) index into
    the sequence (``x.gather(1, index)``). Padding, on either side, stays where it is; ``a`` ends at its first
    ``$``."""
    B, T = input_ids.shape
    real = torch.ones_like(input_ids, dtype=torch.bool) if attention_mask is None else attention_mask.bool()
    positions = torch.arange(T, device=input_ids.device).expand(B, T)
    start = torch.where(real, positions, T).amin(-1, keepdim=True)  # <s>
    end = torch.where(real, positions, -1).amax(-1, keepdim=True)  # <e>
    inside = (positions > start) & (positions < end)
    delimiters = (input_ids == delimiter_id) & inside
    if not delimiters.any(-1).all():
        raise ValueError(f"pair_task='similarity' reads each sequence as <s> a $ b <e>, but a sequence has no "
                         f"delimiter (id {delimiter_id}) between its first and last token")
    delimiter = torch.where(delimiters, positions, T).amin(-1, keepdim=True)
    k, b_length = positions - start - 1, end - delimiter - 1  # k: offset after <s>; b comes first, then $, then a
    source = torch.where(k < b_length, delimiter + 1 + k, torch.where(k == b_length, delimiter, k - b_length + start))
    return torch.where(inside, source, positions)


class LineageGPTForSequenceClassification(TransformerLayersTaskModel, LineageGPTForFineTuning):
    """Classification, entailment and similarity (section 3.3): a linear layer W_y on the final state of ``<e>``.

    ``input_ids`` of shape (B, T) hold one sequence per example (``<s> x <e>``, ``<s> premise $ hypothesis <e>``).
    Shape (B, 2, T) holds a similarity pair in both orders (``<s> a $ b <e>``, ``<s> b $ a <e>``): the two
    representations are summed before W_y, so the prediction does not depend on the order. With
    ``config.pair_task == "similarity"`` a (B, T) pair ``<s> a $ b <e>`` is read in both orders the same way.

    With ``config.pair_encoding == "siamese"`` a pair is read in both orders too, but each order gives the mean of
    its states before ``$``, which a causal model computed from ``<s> a`` alone (the other from ``<s> b``): u and
    v, classified from ``[u, v, |u − v|, u * v]`` (Reimers & Gurevych 2019) by ``pair_classifier``.

    With ``config.task_head == "scalar_mix"`` the head is the one every family shares in the lineage's frozen
    regime (``TransformerLayersTaskModel``): a scalar mix of the L + 1 hidden states → task encoder (a BiLSTM) →
    max-pool → classifier, without the auxiliary LM loss. A pair (``pair_task`` set, ``pair_encoding="siamese"`` or
    both orders given) is read as the siamese path reads it: in both orders, each order's states before ``$``
    (``<s> a`` and ``<s> b``, each computed from its own text alone) pooled to u and v, classified from
    ``[u, v, |u − v|, u * v]``.
    """

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        if config.task_head == "scalar_mix":
            self._build_task_model(config)
            self._build_sentence_classifiers(config)
            self.post_init()
            return
        # P(y | x) = softmax(h W_y): no bias in the paper (nor in transformers' OpenAIGPTForSequenceClassification).
        self.classifier = nn.Linear(config.hidden_size, config.num_labels, bias=False)
        if config.pair_encoding == "siamese":
            self.pair_classifier = nn.Linear(4 * config.hidden_size, config.num_labels)
        self.post_init()

    def _first_text(self, input_ids, attention_mask):
        """(N, T) -> (N, T) bool: the positions from ``<s>`` up to the first ``$``, whose states have seen only the
        first text (causal attention)."""
        N, T = input_ids.shape
        real = torch.ones_like(input_ids, dtype=torch.bool) if attention_mask is None else attention_mask.bool()
        positions = torch.arange(T, device=input_ids.device).expand(N, T)
        start = torch.where(real, positions, T).amin(-1, keepdim=True)
        delimiters = (input_ids == self.config.delimiter_token_id) & real & (positions > start)
        delimiter = torch.where(delimiters, positions, T).amin(-1, keepdim=True)
        return (positions >= start) & (positions < delimiter) & real

    def _first_text_mean(self, hidden_states, input_ids, attention_mask):
        """(N, T, C) -> (N, C): the mean of the states of ``_first_text``."""
        return masked_mean(hidden_states, self._first_text(input_ids, attention_mask))

    def _shared_head_output(self, input_ids, attention_mask, token_type_ids, position_ids, labels, return_dict):
        """``task_head="scalar_mix"``: the static families' sentence classifier over the mixed hidden states."""
        if input_ids is None:
            raise ValueError("task_head='scalar_mix' reads input_ids, not inputs_embeds")
        config = self.config
        pairs = input_ids.dim() == 3 or config.pair_task is not None or config.pair_encoding == "siamese"
        if not pairs:
            features, mask = self._encode(input_ids, attention_mask,
                                          {"token_type_ids": token_type_ids, "position_ids": position_ids})
            return self._sentence_classifier_output(self._sentence_vector(features, mask), None, labels, return_dict)
        if config.delimiter_token_id is None:
            raise ValueError("task_head='scalar_mix' reads a pair <s> a $ b <e> from input_ids and needs "
                             "config.delimiter_token_id (the id of $)")
        if input_ids.dim() == 2:  # one order given: add the other, as the siamese path does
            index = _other_order(input_ids, attention_mask, config.delimiter_token_id)
            both = lambda x, swap: None if x is None else torch.stack([x, x.gather(1, index) if swap else x], 1)  # noqa: E731
            input_ids, token_type_ids = both(input_ids, True), both(token_type_ids, True)
            attention_mask, position_ids = both(attention_mask, False), both(position_ids, False)
        input_ids, attention_mask, token_type_ids, position_ids = map(
            _flatten_choices, (input_ids, attention_mask, token_type_ids, position_ids))  # (B * 2, T): a b, b a
        real = torch.ones_like(input_ids, dtype=torch.bool) if attention_mask is None else attention_mask.bool()
        features = self.token_features(input_ids, real, token_type_ids=token_type_ids, position_ids=position_ids)
        first = self._first_text(input_ids, attention_mask)  # <s> a, then <s> b: each seen on its own
        if self.feature_norm is not None:
            features = self.feature_norm(features, first)
        texts = self._sentence_vector(features, first).view(-1, 2, self.encoder.output_size)
        return self._sentence_classifier_output(texts[:, 0], texts[:, 1], labels, return_dict)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, output_attentions=None, output_hidden_states=None,
                return_dict=None, **kwargs):
        if self.config.task_head == "scalar_mix":
            return self._shared_head_output(input_ids, attention_mask, token_type_ids, position_ids, labels,
                                            return_dict)
        siamese = self.config.pair_encoding == "siamese"
        if siamese and (input_ids is None or self.config.delimiter_token_id is None):
            raise ValueError("pair_encoding='siamese' reads pairs <s> a $ b <e> from input_ids and needs "
                             "config.delimiter_token_id (the id of $)")
        if (siamese or self.config.pair_task == "similarity") and input_ids is not None and input_ids.dim() == 2:
            # One sequence per pair (what a tokenizer or pipeline gives): add the other order, as if from
            # format_similarity, so the prediction does not depend on which text came first.
            index = _other_order(input_ids, attention_mask, self.config.delimiter_token_id)
            both = lambda x, swap: None if x is None else torch.stack([x, x.gather(1, index) if swap else x], 1)  # noqa: E731
            input_ids, token_type_ids = both(input_ids, True), both(token_type_ids, True)
            attention_mask, position_ids = both(attention_mask, False), both(position_ids, False)
        reference = input_ids if input_ids is not None else inputs_embeds
        orders = None
        if reference is not None and reference.dim() == (3 if input_ids is not None else 4):
            orders = reference.shape[1]  # similarity: (B, orders, T)
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds = map(
                _flatten_choices, (input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds)
            )
        outputs = self.transformer(
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, use_cache=False,
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
        )
        hidden_states = outputs.last_hidden_state  # (N, T, C)
        if siamese:
            texts = self._first_text_mean(hidden_states, input_ids, attention_mask)  # (B * 2, C)
            texts = texts.view(-1, orders, texts.shape[-1])
            u, v = texts[:, 0], texts[:, 1]  # (B, C) each: <s> a, <s> b
            logits = self.pair_classifier(self.dropout(pair_features(u, v)))
        else:
            pooled = self._extract(hidden_states, input_ids, attention_mask)  # (N, C)
            if orders is not None:
                pooled = pooled.view(-1, orders, pooled.shape[-1]).sum(dim=1)  # (B, C): both orders, added
            logits = self.classifier(self.dropout(pooled))  # (B, num_labels)
        task_loss = None if labels is None else sequence_classification_loss(self.config, logits, labels)
        loss, lm_loss = self._loss(task_loss, hidden_states, input_ids, attention_mask)
        output = LineageGPTTaskOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states,
                                      attentions=outputs.attentions, lm_loss=lm_loss)
        return tuple_or_dict(output, return_dict, self.config)


class LineageGPTForMultipleChoice(LineageGPTForFineTuning):
    """Multiple choice (section 3.3): each option is its own sequence ``<s> context $ answer <e>``, scored by a
    linear layer on the state of ``<e>``; the scores are normalised with a softmax over the options.

    Inputs have shape (B, num_choices, T); ``logits`` (B, num_choices).
    """

    def __init__(self, config):
        super().__init__(config)
        self.classifier = nn.Linear(config.hidden_size, 1)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, output_attentions=None, output_hidden_states=None,
                return_dict=None, **kwargs):
        reference = input_ids if input_ids is not None else inputs_embeds
        if reference is None or reference.dim() < 3:
            raise ValueError("multiple-choice inputs must have shape (batch, num_choices, sequence)")
        num_choices = reference.shape[1]
        input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds = map(
            _flatten_choices, (input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds)
        )
        outputs = self.transformer(
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, use_cache=False,
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
        )
        hidden_states = outputs.last_hidden_state  # (B * num_choices, T, C)
        pooled = self._extract(hidden_states, input_ids, attention_mask)  # (B * num_choices, C)
        logits = self.classifier(self.dropout(pooled)).view(-1, num_choices)  # (B, num_choices)
        task_loss = None if labels is None else cross_entropy(logits, labels.view(-1))
        loss, lm_loss = self._loss(task_loss, hidden_states, input_ids, attention_mask)
        output = LineageGPTTaskOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states,
                                      attentions=outputs.attentions, lm_loss=lm_loss)
        return tuple_or_dict(output, return_dict, self.config)


class LineageGPTForTokenClassification(TransformerLayersTaskModel, LineageGPTForFineTuning):
    """Per-token classifier (NER, POS) on the final states, with the same auxiliary LM loss. The model is causal:
    a token's label is predicted from that token and the ones before it.

    With ``config.task_head == "scalar_mix"``: the head every family shares in the lineage's frozen regime, a scalar
    mix of the L + 1 hidden states → task encoder (a BiLSTM, which reads the later tokens too) → a label per token
    (``TransformerLayersTaskModel``), without the auxiliary LM loss."""

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        if config.task_head == "scalar_mix":
            self._build_task_model(config)
            self._build_token_classifier(config)
        else:
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
            return self._token_classifier_output(features, mask, labels, None, return_dict)
        outputs = self.transformer(
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, use_cache=False,
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
        )
        hidden_states = outputs.last_hidden_state
        logits = self.classifier(self.dropout(hidden_states))  # (B, T, num_labels)
        task_loss = None
        if labels is not None:
            check_same_shape(labels, logits.shape[:2], "labels", "input_ids")
            task_loss = cross_entropy(logits, labels)
        loss, lm_loss = self._loss(task_loss, hidden_states, input_ids, attention_mask)
        output = LineageGPTTaskOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states,
                                      attentions=outputs.attentions, lm_loss=lm_loss)
        return tuple_or_dict(output, return_dict, self.config)


@dataclass
class LineageGPTQuestionAnsweringOutput(QuestionAnsweringModelOutput):
    """transformers' ``QuestionAnsweringModelOutput`` plus the auxiliary LM loss (see ``LineageGPTTaskOutput``)."""

    lm_loss: torch.Tensor | None = None


class LineageGPTForQuestionAnswering(QuestionAnsweringPipelineMixin, LineageGPTForFineTuning):
    """Extractive QA (SQuAD) in the paper's style of input transformation: ``<s> question $ passage <e>``, start and
    end logits from a linear layer on every final state (``qa_outputs``, as transformers' BertForQuestionAnswering).

    The model is causal, so the question must come first: then every passage token's state has read the question.
    ``start_positions`` / ``end_positions`` (B,) give the loss of transformers' QA heads (mean of the two
    cross-entropies, positions outside the input ignored) plus, in training, λ · the auxiliary LM loss (section 3.2)."""

    def __init__(self, config):
        super().__init__(config)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, start_positions=None, end_positions=None, output_attentions=None,
                output_hidden_states=None, return_dict=None, **kwargs):
        outputs = self.transformer(
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, use_cache=False,
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
        )
        hidden_states = outputs.last_hidden_state  # (B, T, C)
        start_logits, end_logits = self.qa_outputs(self.dropout(hidden_states)).unbind(dim=-1)  # (B, T) each
        task_loss = None
        if start_positions is not None and end_positions is not None:
            task_loss = span_loss(start_logits, end_logits, start_positions, end_positions)
        loss, lm_loss = self._loss(task_loss, hidden_states, input_ids, attention_mask)
        output = LineageGPTQuestionAnsweringOutput(
            loss=loss, start_logits=start_logits, end_logits=end_logits, hidden_states=outputs.hidden_states,
            attentions=outputs.attentions, lm_loss=lm_loss)
        return tuple_or_dict(output, return_dict, self.config)


class LineageGPTForIntentAndSlots(LineageGPTForFineTuning):
    """Joint intent classification and slot filling (Chen et al. 2019's recipe on GPT's fine-tuning heads): the
    intent from the final state of the extract token ``<e>`` (the last real token: the only one that has read the
    whole utterance), a slot tag from every token's final state, trained on intent CE + ``config.slot_loss_weight``
    · slot CE, plus the auxiliary LM loss (``lm_loss_weight``) as GPT's other heads.

    The model is causal: label each word at its *last* sub-token (the first has not seen the rest of the word) and
    give the others -100. ``config.intent_labels`` names the intents; the slot tags are ``config.id2label``."""

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.intent_names = intent_labels_of(config)
        self.intent_classifier = nn.Linear(config.hidden_size, len(self.intent_names))
        self.slot_classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, intent_labels=None, slot_labels=None, output_attentions=None,
                output_hidden_states=None, return_dict=None, **kwargs):
        outputs = self.transformer(
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, use_cache=False,
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
        )
        hidden_states = outputs.last_hidden_state  # (B, T, C)
        pooled = self._extract(hidden_states, input_ids, attention_mask)  # (B, C): <e>
        intent_logits = self.intent_classifier(self.dropout(pooled))  # (B, num_intents)
        slot_logits = self.slot_classifier(self.dropout(hidden_states))  # (B, T, num_labels)
        task_loss, intent_loss, slot_loss = intent_and_slots_loss(self.config, intent_logits, slot_logits,
                                                                  intent_labels, slot_labels)
        loss, lm_loss = self._loss(task_loss, hidden_states, input_ids, attention_mask)
        output = IntentAndSlotsOutput(loss=loss, intent_logits=intent_logits, slot_logits=slot_logits,
                                      intent_loss=intent_loss, slot_loss=slot_loss, lm_loss=lm_loss,
                                      hidden_states=outputs.hidden_states, attentions=outputs.attentions)
        return tuple_or_dict(output, return_dict, self.config)


__all__ = ["LineageGPTPreTrainedModel", "LineageGPTTaskOutput", "LineageGPTQuestionAnsweringOutput",
           *dict.fromkeys(AUTO_CLASSES.values()), "LineageGPTForIntentAndSlots"]
