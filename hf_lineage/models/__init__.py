"""Configuration and modeling files of every family, one flat folder.

Each ``configuration_lineage_<family>.py`` / ``modeling_lineage_<family>.py`` pair is self-contained (it imports
only torch, transformers and same-folder siblings) because ``save_pretrained`` copies it next to the weights for
``trust_remote_code`` loading.

The public names below are read from their files on first use (PEP 562): ``import hf_lineage.models`` imports no
configuration or modeling file (nor torch); ``from hf_lineage.models import LineageBertModel`` imports
``modeling_lineage_bert`` then.
"""

import importlib

# Where each public name lives (the file in this folder).
_PUBLIC = {
    "configuration_lineage_bert": ["LineageBertConfig"],
    "modeling_lineage_bert": [
        "LineageBertForCausalLM", "LineageBertForMaskedLM", "LineageBertForMultipleChoice",
        "LineageBertForNextSentencePrediction", "LineageBertForPreTraining", "LineageBertForQuestionAnswering",
        "LineageBertForSequenceClassification", "LineageBertForTokenClassification", "LineageBertModel",
        "LineageBertPreTrainedModel", "LineageBertForIntentAndSlots"],
    "configuration_lineage_gpt": ["LineageGPTConfig"],
    "modeling_lineage_gpt": [
        "LineageGPTForCausalLM", "LineageGPTForMultipleChoice", "LineageGPTForQuestionAnswering",
        "LineageGPTForSequenceClassification", "LineageGPTForTokenClassification", "LineageGPTModel",
        "LineageGPTPreTrainedModel", "LineageGPTTaskOutput", "LineageGPTForIntentAndSlots"],
    "configuration_lineage_nnlm": ["LineageNNLMConfig"],
    "modeling_lineage_nnlm": [
        "LineageNNLMForCausalLM", "LineageNNLMModel", "LineageNNLMModelOutput", "LineageNNLMPreTrainedModel",
        "LineageNNLMForIntentAndSlots"],
    "configuration_lineage_word2vec": ["LineageWord2VecConfig"],
    "modeling_lineage_word2vec": [
        "LineageWord2VecForPreTraining", "LineageWord2VecModel", "LineageWord2VecPreTrainedModel",
        "LineageWord2VecPreTrainingOutput", "LineageWord2VecForIntentAndSlots"],
    "configuration_lineage_elmo": ["LineageElmoConfig"],
    "modeling_lineage_elmo": [
        "LineageElmoForCausalLM", "LineageElmoForPreTraining", "LineageElmoModel", "LineageElmoModelOutput",
        "LineageElmoPreTrainedModel", "LineageElmoPreTrainingOutput", "LineageElmoForIntentAndSlots"],
    "tokenization_lineage_elmo": ["LineageElmoTokenizer", "LineageElmoTokenizerFast"],
    "configuration_lineage_svd": ["LineageSvdConfig"],
    "modeling_lineage_svd": ["LineageSvdModel", "LineageSvdPreTrainedModel", "LineageSvdForIntentAndSlots"],
    "configuration_lineage_glove": ["LineageGloveConfig"],
    "modeling_lineage_glove": ["LineageGloveModel", "LineageGlovePreTrainedModel", "LineageGloveForIntentAndSlots"],
    "cache_lineage_utils": ["LSTMStateCache"],
    # Joint intent classification and slot filling, every family (hf_lineage.AutoModelForIntentAndSlots picks by
    # config).
    "modeling_lineage_intent_and_slots": ["IntentAndSlotsOutput"],
}
_MODULE_OF = {name: module for module, names in _PUBLIC.items() for name in names}

__all__ = list(_MODULE_OF)


def __getattr__(name):
    if name in _MODULE_OF:
        value = getattr(importlib.import_module(f".{_MODULE_OF[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_MODULE_OF})
