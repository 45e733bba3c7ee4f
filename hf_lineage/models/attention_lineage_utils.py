"""Attention of the lineage Transformers (BERT, GPT): the implementation a config picks (eager, sdpa or any
registered in transformers), the eager one, and the masks transformers' builders make for it.

This file is copied next to a saved model with the modeling files that import it (transformers follows same-folder
``from .x import`` lines), so it imports only torch, transformers and same-folder siblings.
"""

import torch
import torch.nn.functional as F
from torch.fx._symbolic_trace import is_fx_symbolic_tracing
from transformers.masking_utils import create_bidirectional_mask, create_causal_mask
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS


def attention_implementation(config) -> str:
    """``config._attn_implementation`` as the lineage Transformers read it: "sdpa" (the default), "eager", or any
    implementation registered in transformers' ``ALL_ATTENTION_FUNCTIONS`` ("flex_attention", "flash_attention_2",
    a kernel from the Hub ...); an unknown name is refused by name instead of silently running another path."""
    implementation = getattr(config, "_attn_implementation", None) or "sdpa"
    if implementation != "eager" and implementation not in ALL_ATTENTION_FUNCTIONS:
        raise ValueError(
            f"{config.model_type} runs attn_implementation 'sdpa' (the default), 'eager' or one registered in "
            f"transformers' ALL_ATTENTION_FUNCTIONS ({', '.join(sorted(ALL_ATTENTION_FUNCTIONS))}), not "
            f"{implementation!r}"
        )
    return implementation


def eager_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Attention computed here, (B, nh, T, hs) query and (B, nh, S, hs) key/value -> (B, T, nh, hs) and the
    attention probabilities (B, nh, T, S): the "eager" entry of the attention interface (transformers'
    ``eager_attention_forward`` pattern). ``attention_mask`` is what transformers' mask builders make: additive
    (0 / dtype minimum) for eager, boolean (True where allowed) for sdpa, or None."""
    scaling = query.size(-1) ** -0.5 if scaling is None else scaling
    scores = (query @ key.transpose(-2, -1)) * scaling  # (B, nh, T, S)
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + attention_mask
    weights = scores.softmax(dim=-1)
    output = F.dropout(weights, p=dropout, training=module.training) @ value
    return output.transpose(1, 2).contiguous(), weights


def attention_interface(config, output_attentions=False):
    """The attention function for ``config._attn_implementation``: ours for "eager" (and whenever the weights are
    asked for: the fused kernels do not return them), else transformers' (sdpa, flex, flash, Hub kernels)."""
    implementation = attention_implementation(config)
    if implementation == "eager" or output_attentions:
        return eager_attention_forward
    return ALL_ATTENTION_FUNCTIONS[implementation]


def is_traced() -> bool:
    """Whether this forward is being compiled, exported or traced: then no Python branch may read tensor values
    (the graph would break, or export fail on a data-dependent guard)."""
    return torch.compiler.is_compiling() or torch.jit.is_tracing() or is_fx_symbolic_tracing()


def causal_mask(config, inputs_embeds, attention_mask, cache, position_ids=None):
    """The causal (decoder) self-attention mask for ``config._attn_implementation``, made by transformers'
    ``create_causal_mask``: tensor operations only (no branch on the mask's values, so ``torch.export`` and
    ``torch.compile`` trace it), None where SDPA's ``is_causal`` is right, and sized to a static cache's length.
    ``attention_mask`` is (B, past + T) over cached and new tokens, a 4-D mask already in the implementation's form
    (passed on as it is, as transformers' models do: e.g. a shared prefix with several continuations), or None.
    ``position_ids`` are the caller's, if any: with no 2-D mask and no cache, positions that restart within a row mark
    packed sequences (transformers' padding-free batches), and each token then attends only within its own."""
    # The cache 4th, positionally: its keyword is past_key_values before transformers 5.24, cache from it.
    return create_causal_mask(config, inputs_embeds, attention_mask, cache, position_ids=position_ids)


def bidirectional_mask(config, inputs_embeds, attention_mask, encoder_hidden_states=None):
    """The padding mask of an encoder's self-attention (or, with ``encoder_hidden_states``, of cross-attention over
    the encoder's states) for ``config._attn_implementation``, made by transformers' ``create_bidirectional_mask``."""
    return create_bidirectional_mask(config, inputs_embeds, attention_mask, encoder_hidden_states)


def split_fused_projection(module, state_dict, prefix, *args, fused: str):
    """A ``load_state_dict`` pre-hook of a self-attention module: a state dict in the saved layout, with query, key
    and value as one fused matrix ``fused`` (q, k, v rows stacked: BERT's ``qkv``, GPT's ``c_attn``), is split into
    the three ``nn.Linear`` the module holds. ``from_pretrained`` splits it by the weight conversions it applies;
    ``load_state_dict`` applies none, and it is what Trainer restores a checkpoint with (``load_best_model_at_end``,
    ``resume_from_checkpoint``): without this the attention projections were left as they were. Registered with
    ``functools.partial(split_fused_projection, fused=...)``, which pickles (a closure would not)."""
    for kind in ("weight", "bias"):
        key = f"{prefix}{fused}.{kind}"
        if key in state_dict:
            for name, part in zip(("query", "key", "value"), state_dict.pop(key).chunk(3, dim=0)):
                state_dict[f"{prefix}{name}.{kind}"] = part
