"""transformers' OpenAI GPT <-> lineage GPT.

Parameter names are the same (lineage GPT kept transformers' ``tokens_embed``, ``ln_1``, ``mlp.c_fc`` ...) except
self-attention's projection: transformers' one fused ``h.N.attn.c_attn`` is lineage's ``h.N.attn.query``, ``key`` and
``value`` (split on the way in, concatenated on the way out).
The differences: transformers keeps OpenAI's ``Conv1D`` layers, whose weight is stored (in, out), where lineage GPT
has ``nn.Linear`` (out, in), so the block weights are transposed; the task heads have other names
(``score`` and ``multiple_choice_head.summary`` are lineage's ``classifier``); and the config fields are renamed.

Sizes transformers' class cannot express are refused: an MLP width other than 4 × hidden, cross-attention, an
activation it does not have.
"""

import re

import torch
import transformers

from ..models import configuration_lineage_gpt, modeling_lineage_gpt
from .common import load_converted

# transformers class name -> lineage class name
CLASS_PAIRS = {
    "OpenAIGPTModel": "LineageGPTModel",
    "OpenAIGPTLMHeadModel": "LineageGPTForCausalLM",
    "OpenAIGPTDoubleHeadsModel": "LineageGPTForMultipleChoice",
    "OpenAIGPTForSequenceClassification": "LineageGPTForSequenceClassification",
}

# transformers' Conv1D layers, (in, out) weights.
_CONV1D = re.compile(r"h\.\d+\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight$")
# transformers name -> lineage name
_RENAMES = {"score.": "classifier.", "multiple_choice_head.summary.": "classifier."}

# (transformers OpenAIGPTConfig field, lineage field)
_FIELDS = [
    ("vocab_size", "vocab_size"), ("n_positions", "max_position_embeddings"), ("n_embd", "hidden_size"),
    ("n_layer", "num_hidden_layers"), ("n_head", "num_attention_heads"), ("resid_pdrop", "hidden_dropout_prob"),
    ("embd_pdrop", "embedding_dropout_prob"), ("attn_pdrop", "attention_probs_dropout_prob"),
    ("layer_norm_epsilon", "layer_norm_eps"), ("initializer_range", "initializer_range"),
    ("pad_token_id", "pad_token_id"), ("bos_token_id", "bos_token_id"), ("eos_token_id", "eos_token_id"),
    ("id2label", "id2label"), ("label2id", "label2id"), ("problem_type", "problem_type"),
]
# transformers' OpenAI GPT calls the tanh-approximated GELU of OpenAI's code "gelu".
_ACTIVATIONS = {"gelu": "gelu_pytorch_tanh", "relu": "relu", "silu": "silu", "swish": "swish"}
_HF_ACTIVATIONS = {"gelu_pytorch_tanh": "gelu", "gelu_new": "gelu", "relu": "relu", "silu": "silu", "swish": "swish"}


def _lineage_config(hf_config):
    hf = hf_config.to_dict()
    if hf.get("afn") not in _ACTIVATIONS:
        raise ValueError(f"Unsupported OpenAI GPT activation afn={hf.get('afn')!r}; supported: {list(_ACTIVATIONS)}")
    values = {ours: hf[theirs] for theirs, ours in _FIELDS if theirs in hf}
    return configuration_lineage_gpt.LineageGPTConfig(
        **values, hidden_act=_ACTIVATIONS[hf["afn"]], intermediate_size=4 * hf["n_embd"],
        classifier_dropout=hf.get("summary_first_dropout"),
    )


def _hf_config(config):
    if getattr(config, "pair_encoding", "cross") == "siamese":
        raise ValueError("this model reads sentence pairs siamese (pair_encoding='siamese', a pair_classifier on "
                         "[u, v, |u-v|, u*v]); transformers' OpenAI GPT classifies a pair as one sequence")
    if config.add_cross_attention:
        raise ValueError("transformers' OpenAI GPT has no cross-attention; this lineage GPT has add_cross_attention")
    if config.intermediate_size != 4 * config.hidden_size:
        raise ValueError(f"transformers' OpenAI GPT needs intermediate_size = 4 × hidden_size "
                         f"({4 * config.hidden_size}), got {config.intermediate_size}")
    afn = _HF_ACTIVATIONS.get(config.hidden_act)
    if afn is None:
        raise ValueError(f"transformers' OpenAI GPT has no activation for hidden_act={config.hidden_act!r}")
    ours = config.to_dict()
    values = {theirs: ours[name] for theirs, name in _FIELDS if name in ours}
    dropout = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
    return transformers.OpenAIGPTConfig(**values, afn=afn, summary_first_dropout=dropout)


_FUSED = ".attn.c_attn."  # transformers' fused q/k/v projection
_SPLIT = [".attn.query.", ".attn.key.", ".attn.value."]  # lineage's


def _hf_to_lineage(state_dict):
    out = {}
    for name, tensor in state_dict.items():
        if _CONV1D.search(name):
            tensor = tensor.t().contiguous()
        for theirs, ours in _RENAMES.items():
            if name.startswith(theirs):
                name = ours + name[len(theirs):]
        if _FUSED in name:  # (3C, C) after the transpose, or the (3C,) bias: q, k, v stacked
            for piece, part in zip(_SPLIT, tensor.chunk(3, dim=0)):
                out[name.replace(_FUSED, piece)] = part.contiguous()
            continue
        out[name] = tensor
    return out


def _lineage_to_hf(state_dict, hf_class_name):
    head = {"OpenAIGPTForSequenceClassification": "score.",
            "OpenAIGPTDoubleHeadsModel": "multiple_choice_head.summary."}.get(hf_class_name)
    out = {}
    for name, tensor in state_dict.items():
        if _SPLIT[0] in name:
            tensor = torch.cat([state_dict[name.replace(_SPLIT[0], piece)] for piece in _SPLIT], dim=0)
            name = name.replace(_SPLIT[0], _FUSED)
        elif any(piece in name for piece in _SPLIT[1:]):
            continue  # concatenated with the query above
        if _CONV1D.search(name):
            tensor = tensor.t().contiguous()
        if name.startswith("classifier."):
            name = head + name[len("classifier."):]
        out[name] = tensor
    return out


def _load(model, state_dict):
    # The LM head is tied to the token embedding; transformers' sequence classifier has no LM head at all.
    return load_converted(model, state_dict, r"^lm_head\.weight$")


def from_transformers(model):
    lineage_class = getattr(modeling_lineage_gpt, CLASS_PAIRS[type(model).__name__])
    if type(model).__name__ == "OpenAIGPTDoubleHeadsModel":
        c = model.config
        if (c.summary_type not in ("cls_index", "last") or not c.summary_use_proj or c.summary_activation
                or not c.summary_proj_to_labels):
            raise ValueError("Only the default multiple-choice summary (a linear layer on the classification "
                             "token) maps to LineageGPTForMultipleChoice")
    lineage = lineage_class(_lineage_config(model.config))
    with torch.no_grad():
        return _load(lineage, _hf_to_lineage(model.state_dict()))


def to_transformers(model):
    hf_name = {v: k for k, v in CLASS_PAIRS.items()}[type(model).__name__]
    hf_model = getattr(transformers, hf_name)(_hf_config(model.config))
    with torch.no_grad():
        return _load(hf_model, _lineage_to_hf(model.state_dict(), hf_name))
