"""Configuration and modeling files of every family, one flat folder.

Each ``configuration_lineage_<family>.py`` / ``modeling_lineage_<family>.py`` pair is self-contained (it imports
only torch, transformers and same-folder siblings) because ``save_pretrained`` copies it next to the weights for
``trust_remote_code`` loading.
"""

from .configuration_lineage_bert import LineageBertConfig
from .modeling_lineage_bert import (
    LineageBertForCausalLM,
    LineageBertForMaskedLM,
    LineageBertForMultipleChoice,
    LineageBertForNextSentencePrediction,
    LineageBertForPreTraining,
    LineageBertForQuestionAnswering,
    LineageBertForSequenceClassification,
    LineageBertForTokenClassification,
    LineageBertModel,
    LineageBertPreTrainedModel,
)
from .configuration_lineage_gpt import LineageGPTConfig
from .modeling_lineage_gpt import (
    LineageGPTForCausalLM,
    LineageGPTForMultipleChoice,
    LineageGPTForSequenceClassification,
    LineageGPTForTokenClassification,
    LineageGPTModel,
    LineageGPTPreTrainedModel,
    LineageGPTTaskOutput,
)

__all__ = ["LineageBertConfig", "LineageBertForCausalLM", "LineageBertForMaskedLM", "LineageBertForMultipleChoice", "LineageBertForNextSentencePrediction", "LineageBertForPreTraining", "LineageBertForQuestionAnswering", "LineageBertForSequenceClassification", "LineageBertForTokenClassification", "LineageBertModel", "LineageBertPreTrainedModel", "LineageGPTConfig", "LineageGPTForCausalLM", "LineageGPTForMultipleChoice", "LineageGPTForSequenceClassification", "LineageGPTForTokenClassification", "LineageGPTModel", "LineageGPTPreTrainedModel", "LineageGPTTaskOutput"]
