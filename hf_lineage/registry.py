"""Registration of every family with transformers' Auto* classes — the one place a family is plugged in.

A family is a (configuration module, modeling module) pair. The modeling module's ``AUTO_CLASSES`` table maps an
Auto class name to the family's class for it; registration reads that table, and so does ``save_pretrained`` when
it writes ``auto_map``, so adding a family is one line in ``FAMILIES``.
"""

import importlib
from collections import OrderedDict

import transformers
from transformers import AutoConfig, AutoTokenizer, PreTrainedTokenizerFast
from transformers.models.auto.auto_factory import _BaseAutoModelClass, _LazyAutoMapping

# family name -> (configuration module, config class name, modeling module)
FAMILIES = {
    "gpt": ("configuration_lineage_gpt", "LineageGPTConfig", "modeling_lineage_gpt"),
    "bert": ("configuration_lineage_bert", "LineageBertConfig", "modeling_lineage_bert"),
    "nnlm": ("configuration_lineage_nnlm", "LineageNNLMConfig", "modeling_lineage_nnlm"),
    "word2vec": ("configuration_lineage_word2vec", "LineageWord2VecConfig", "modeling_lineage_word2vec"),
    "elmo": ("configuration_lineage_elmo", "LineageElmoConfig", "modeling_lineage_elmo"),
    "svd": ("configuration_lineage_svd", "LineageSvdConfig", "modeling_lineage_svd"),
}

# family -> (tokenizer module, class name) for a family whose tokenizer is its own class (ELMo's gives character
# ids too) rather than a `tokenizers` pipeline in PreTrainedTokenizerFast.
TOKENIZERS = {
    "elmo": ("tokenization_lineage_elmo", "LineageElmoTokenizer"),
}


class AutoModelForIntentAndSlots(_BaseAutoModelClass):
    """The Auto class of the joint intent-classification and slot-filling heads (``<Family>ForIntentAndSlots``),
    which transformers has no Auto class for: ``from_pretrained`` / ``from_config`` build the family's class, as
    transformers' own Auto classes do, for every lineage family (each modeling module's ``LINEAGE_AUTO_CLASSES``).

    A saved head's ``config.json`` names its class under this name in ``auto_map``, and its modeling files are
    saved with it, so without hf_lineage ``transformers.dynamic_module_utils.get_class_from_dynamic_module(
    config.auto_map["AutoModelForIntentAndSlots"], folder)`` gives the class (trust_remote_code)."""

    _model_mapping = _LazyAutoMapping(OrderedDict(), OrderedDict())


# hf_lineage's own Auto classes, by the names the modeling modules' LINEAGE_AUTO_CLASSES tables use.
LINEAGE_AUTO_CLASSES = {"AutoModelForIntentAndSlots": AutoModelForIntentAndSlots}


def intent_and_slots_model_class(config):
    """The ``*ForIntentAndSlots`` class of a config's family (a ValueError for a config of another library)."""
    if type(config) not in AutoModelForIntentAndSlots._model_mapping:
        raise ValueError(f"{type(config).__name__} ({getattr(config, 'model_type', '?')}) is not a lineage family: no "
                         "joint intent-and-slots head")
    return AutoModelForIntentAndSlots._model_mapping[type(config)]


def family_classes(family: str):
    """(config class, modeling module) of a family, e.g. ``family_classes("bert")``."""
    if family not in FAMILIES:
        raise ValueError(f"Unknown family {family!r}; known families: {', '.join(sorted(FAMILIES))}")
    config_module, config_name, modeling_module = FAMILIES[family]
    config_class = getattr(importlib.import_module(f"hf_lineage.models.{config_module}"), config_name)
    return config_class, importlib.import_module(f"hf_lineage.models.{modeling_module}")


def register_family(family: str) -> None:
    config_class, modeling = family_classes(family)
    AutoConfig.register(config_class.model_type, config_class, exist_ok=True)
    config_class.register_for_auto_class("AutoConfig")
    for auto_name, class_name in modeling.AUTO_CLASSES.items():
        model_class = getattr(modeling, class_name)
        getattr(transformers, auto_name).register(config_class, model_class, exist_ok=True)
        # Marks the class as custom code so save_pretrained copies the modeling files next to the weights.
        model_class.register_for_auto_class(auto_name)
    for auto_name, class_name in getattr(modeling, "LINEAGE_AUTO_CLASSES", {}).items():
        model_class = getattr(modeling, class_name)
        LINEAGE_AUTO_CLASSES[auto_name].register(config_class, model_class, exist_ok=True)
        # register_for_auto_class accepts only transformers' own names; save_pretrained reads this attribute to
        # copy the modeling files and name the class in auto_map.
        model_class._auto_class = auto_name
    if family in TOKENIZERS:
        module_name, class_name = TOKENIZERS[family]
        tokenizer_class = getattr(importlib.import_module(f"hf_lineage.models.{module_name}"), class_name)
        AutoTokenizer.register(config_class, slow_tokenizer_class=tokenizer_class, exist_ok=True)
        # save_pretrained copies the tokenizer's file and names it in auto_map, for trust_remote_code.
        tokenizer_class.register_for_auto_class("AutoTokenizer")
        return
    # Our tokenizers are plain `tokenizers` pipelines in the generic fast class, so a saved folder loads anywhere.
    AutoTokenizer.register(config_class, tokenizer_class=PreTrainedTokenizerFast, exist_ok=True)


def register_all() -> None:
    for family in FAMILIES:
        register_family(family)
