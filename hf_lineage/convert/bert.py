"""transformers' BERT <-> lineage BERT.

The two models hold the same numbers under different names (query/key/value are ``attention.query`` where
transformers has ``attention.self.query``, ...); no structural difference. Lineage folders saved on disk hold
query/key/value fused (see ``modeling_lineage_bert.WEIGHT_CONVERSIONS``), but the models' state dicts do not.
"""

import re

import transformers

from ..models import configuration_lineage_bert, modeling_lineage_bert
from .common import load_converted

# transformers class name -> lineage class name
CLASS_PAIRS = {
    "BertModel": "LineageBertModel",
    "BertForPreTraining": "LineageBertForPreTraining",
    "BertForMaskedLM": "LineageBertForMaskedLM",
    "BertLMHeadModel": "LineageBertForCausalLM",
    "BertForNextSentencePrediction": "LineageBertForNextSentencePrediction",
    "BertForSequenceClassification": "LineageBertForSequenceClassification",
    "BertForTokenClassification": "LineageBertForTokenClassification",
    "BertForMultipleChoice": "LineageBertForMultipleChoice",
    "BertForQuestionAnswering": "LineageBertForQuestionAnswering",
}

# Plain renames, transformers name -> lineage name (regex on the full parameter name).
_RENAMES = [
    (r"\.attention\.output\.dense\.", ".attention.dense."),
    (r"\.attention\.output\.LayerNorm\.", ".attention.LayerNorm."),
    (r"\.crossattention\.output\.dense\.", ".crossattention.dense."),
    (r"\.crossattention\.output\.LayerNorm\.", ".crossattention.LayerNorm."),
    (r"\.crossattention\.self\.query\.", ".crossattention.query."),
    (r"\.crossattention\.self\.key\.", ".crossattention.key."),
    (r"\.crossattention\.self\.value\.", ".crossattention.value."),
    (r"\.attention\.self\.query\.", ".attention.query."),
    (r"\.attention\.self\.key\.", ".attention.key."),
    (r"\.attention\.self\.value\.", ".attention.value."),
    (r"cls\.predictions\.transform\.dense\.", "cls.predictions.transform_dense."),
    (r"cls\.predictions\.transform\.LayerNorm\.", "cls.predictions.transform_LayerNorm."),
]
# Present in transformers' state dicts but not ours: tied copies and constant buffers.
_DROPPED = re.compile(r"(cls\.predictions\.decoder\.bias|embeddings\.position_ids|embeddings\.token_type_ids)$")


def _config_to(target_class, source_config):
    fields = {f for f in target_class.__dataclass_fields__}
    values = {k: v for k, v in source_config.to_dict().items() if k in fields and k not in ("model_type", "architectures", "transformers_version", "auto_map")}
    return target_class(**values)


def _hf_to_lineage(state_dict):
    out = {}
    for name, tensor in state_dict.items():
        if _DROPPED.search(name):
            continue
        for pattern, replacement in _RENAMES:
            name = re.sub(pattern, replacement, name)
        out[name] = tensor
    return out


def _lineage_to_hf(state_dict):
    out = {}
    for name, tensor in state_dict.items():
        for pattern, replacement in _RENAMES:
            # invert the rename: the replacement is a literal name, the pattern an escaped one
            name = name.replace(replacement, pattern.replace("\\", ""))
        out[name] = tensor
    if "cls.predictions.bias" in out:
        out["cls.predictions.decoder.bias"] = out["cls.predictions.bias"]
    return out


def _load(model, state_dict):
    # The decoder weight is tied to the word embeddings; everything else must be accounted for.
    return load_converted(model, state_dict, r"(decoder\.weight|decoder\.bias|position_ids|token_type_ids)$")


def from_transformers(model):
    lineage_class = getattr(modeling_lineage_bert, CLASS_PAIRS[type(model).__name__])
    config = _config_to(configuration_lineage_bert.LineageBertConfig, model.config)
    lineage = lineage_class(config)
    return _load(lineage, _hf_to_lineage(model.state_dict()))


def to_transformers(model):
    hf_name = {v: k for k, v in CLASS_PAIRS.items()}[type(model).__name__]
    if getattr(model.config, "pair_encoding", "cross") == "siamese":
        raise ValueError("this model reads sentence pairs siamese (pair_encoding='siamese', a pair_classifier on "
                         "[u, v, |u-v|, u*v]); transformers' BERT classifies a pair as one sequence from [CLS]")
    config = _config_to(transformers.BertConfig, model.config)
    hf_model = getattr(transformers, hf_name)(config)
    return _load(hf_model, _lineage_to_hf(model.state_dict()))
