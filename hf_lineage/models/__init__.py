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
    LineageGPTForQuestionAnswering,
    LineageGPTForSequenceClassification,
    LineageGPTForTokenClassification,
    LineageGPTModel,
    LineageGPTPreTrainedModel,
    LineageGPTTaskOutput,
)
from .configuration_lineage_nnlm import LineageNNLMConfig
from .modeling_lineage_nnlm import (
    LineageNNLMForCausalLM,
    LineageNNLMModel,
    LineageNNLMModelOutput,
    LineageNNLMPreTrainedModel,
)
from .configuration_lineage_word2vec import LineageWord2VecConfig
from .modeling_lineage_word2vec import (
    LineageWord2VecForPreTraining,
    LineageWord2VecModel,
    LineageWord2VecPreTrainedModel,
    LineageWord2VecPreTrainingOutput,
)
from .configuration_lineage_elmo import LineageElmoConfig
from .modeling_lineage_elmo import (
    LineageElmoForCausalLM,
    LineageElmoForPreTraining,
    LineageElmoModel,
    LineageElmoModelOutput,
    LineageElmoPreTrainedModel,
    LineageElmoPreTrainingOutput,
)
from .configuration_lineage_svd import LineageSvdConfig
from .modeling_lineage_svd import LineageSvdModel, LineageSvdPreTrainedModel
from .configuration_lineage_glove import LineageGloveConfig
from .modeling_lineage_glove import LineageGloveModel, LineageGlovePreTrainedModel
from .cache_lineage_utils import LSTMStateCache
from .tokenization_lineage_elmo import LineageElmoTokenizer, LineageElmoTokenizerFast

__all__ = ["LineageBertConfig", "LineageBertForCausalLM", "LineageBertForMaskedLM", "LineageBertForMultipleChoice", "LineageBertForNextSentencePrediction", "LineageBertForPreTraining", "LineageBertForQuestionAnswering", "LineageBertForSequenceClassification", "LineageBertForTokenClassification", "LineageBertModel", "LineageBertPreTrainedModel", "LineageGPTConfig", "LineageGPTForCausalLM", "LineageGPTForMultipleChoice", "LineageGPTForQuestionAnswering", "LineageGPTForSequenceClassification", "LineageGPTForTokenClassification", "LineageGPTModel", "LineageGPTPreTrainedModel", "LineageGPTTaskOutput", "LineageNNLMConfig", "LineageNNLMForCausalLM", "LineageNNLMModel", "LineageNNLMModelOutput", "LineageNNLMPreTrainedModel", "LineageWord2VecConfig", "LineageWord2VecForPreTraining", "LineageWord2VecModel", "LineageWord2VecPreTrainedModel", "LineageWord2VecPreTrainingOutput", "LineageElmoConfig", "LineageElmoForCausalLM", "LineageElmoForPreTraining", "LineageElmoModel", "LineageElmoModelOutput", "LineageElmoPreTrainedModel", "LineageElmoPreTrainingOutput", "LineageElmoTokenizer", "LineageElmoTokenizerFast", "LineageSvdConfig", "LineageSvdModel", "LineageSvdPreTrainedModel", "LineageGloveConfig", "LineageGloveModel", "LineageGlovePreTrainedModel", "LSTMStateCache"]

# Joint intent classification and slot filling, every family (hf_lineage.AutoModelForIntentAndSlots picks by config).
from .modeling_lineage_bert import LineageBertForIntentAndSlots  # noqa: E402
from .modeling_lineage_elmo import LineageElmoForIntentAndSlots  # noqa: E402
from .modeling_lineage_glove import LineageGloveForIntentAndSlots  # noqa: E402
from .modeling_lineage_gpt import LineageGPTForIntentAndSlots  # noqa: E402
from .modeling_lineage_intent_and_slots import IntentAndSlotsOutput  # noqa: E402
from .modeling_lineage_nnlm import LineageNNLMForIntentAndSlots  # noqa: E402
from .modeling_lineage_svd import LineageSvdForIntentAndSlots  # noqa: E402
from .modeling_lineage_word2vec import LineageWord2VecForIntentAndSlots  # noqa: E402

__all__ += ["IntentAndSlotsOutput", "LineageBertForIntentAndSlots", "LineageElmoForIntentAndSlots",
            "LineageGloveForIntentAndSlots", "LineageGPTForIntentAndSlots", "LineageNNLMForIntentAndSlots", "LineageSvdForIntentAndSlots",
            "LineageWord2VecForIntentAndSlots"]
