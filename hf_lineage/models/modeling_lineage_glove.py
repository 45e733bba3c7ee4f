"""Lineage GloVe (Pennington, Socher and Manning, 2014): word vectors fitted by weighted least squares to the logarithm
of windowed co-occurrence counts — the count-based model set against word2vec's window predictions.

The vectors are trained outside the engine: ``hf_lineage.train_glove`` counts (the co-occurrence counter svd uses,
``hf_lineage.word_vector_trainers.cooccurrence``), fits W, W̃ and the biases by AdaGrad over the non-zero counts
(``word_vector_trainers/glove.py``) and writes W + W̃ into ``LineageGloveModel``. The model is then a table of word vectors like
word2vec's input vectors and svd's, with the same downstream task heads (``modeling_lineage_static.py``).

=========================================  ==========================================================
here                                       what it is
=========================================  ==========================================================
``word_vectors.weight``                    W + W̃ (W alone without ``add_context_vectors``), one row per token
=========================================  ==========================================================
"""

import torch
from torch import nn
from transformers import initialization as init
from transformers.generation import GenerationMixin
from transformers.modeling_outputs import BaseModelOutput

from .configuration_lineage_glove import LineageGloveConfig
from .modeling_lineage_static import (
    StaticVectorsForCausalLM,
    StaticVectorsForIntentAndSlots,
    StaticVectorsForMultipleChoice,
    StaticVectorsForQuestionAnswering,
    StaticVectorsForSequenceClassification,
    StaticVectorsForTokenClassification,
    init_task_weights,
)
from .modeling_lineage_utils import LineagePreTrainedModel, check_ids_in_range, config_flag, tuple_or_dict

# Auto class -> class name. The registry registers these and save_pretrained writes them into auto_map.
AUTO_CLASSES = {
    "AutoModel": "LineageGloveModel",
    # What pre-training produced is the vectors themselves (no output layer is trained), so a saved folder loads
    # the same way as every other family's pre-training model.
    "AutoModelForPreTraining": "LineageGloveModel",
    "AutoModelForTokenClassification": "LineageGloveForTokenClassification",
    "AutoModelForSequenceClassification": "LineageGloveForSequenceClassification",
    "AutoModelForQuestionAnswering": "LineageGloveForQuestionAnswering",
    "AutoModelForMultipleChoice": "LineageGloveForMultipleChoice",
    "AutoModelForCausalLM": "LineageGloveForCausalLM",
}

# hf_lineage's own Auto classes (transformers has none for the task) -> class name: the registry registers these
# with ``hf_lineage.AutoModelForIntentAndSlots`` and save_pretrained writes them into auto_map.
LINEAGE_AUTO_CLASSES = {"AutoModelForIntentAndSlots": "LineageGloveForIntentAndSlots"}


class LineageGlovePreTrainedModel(LineagePreTrainedModel):
    """Owns the config class and the init of a model built from a config (a from-scratch baseline): word2vec's,
    vectors uniform in [-0.5/d, 0.5/d), and an empty spectrum. ``train_svd`` replaces every row with the
    factorisation's (zero for a word it never saw in a window: the specials, words under ``min_count``)."""

    config_class = LineageGloveConfig
    config: LineageGloveConfig
    base_model_prefix = "glove"
    _no_split_modules = []

    @torch.no_grad()
    def _init_weights(self, module):
        if init_task_weights(module):  # the downstream task encoders' LSTMs
            return
        # Initialise at the nn.Embedding itself (for custom-code models transformers skips modules that hold no
        # parameter of their own). transformers' `init` functions skip tensors that from_pretrained loaded, so the
        # vectors of a saved model survive; only missing weights (a new task head's) are initialised.
        if isinstance(module, nn.Embedding):  # the word vectors: the only embedding table
            half_width = 0.5 / self.config.vector_size
            init.uniform_(module.weight, -half_width, half_width)
        elif isinstance(module, (nn.Linear, nn.Conv1d)):  # the downstream task models' layers
            super()._init_weights(module)


class LineageGloveModel(LineageGlovePreTrainedModel):
    """The word vectors: ``forward(input_ids)`` looks them up.

    Example::

        >>> import hf_lineage
        >>> from transformers import AutoModel
        >>> model = AutoModel.from_pretrained("out/glove")              # doctest: +SKIP
        >>> vectors = model(input_ids).last_hidden_state              # (B, T, vector_size)  # doctest: +SKIP
    """

    def __init__(self, config):
        super().__init__(config)
        self.word_vectors = nn.Embedding(config.vocab_size, config.vector_size)
        self.post_init()

    # Copied from hf_lineage.models.modeling_lineage_svd.LineageSvdModel.get_input_embeddings
    def get_input_embeddings(self):
        return self.word_vectors

    # Copied from hf_lineage.models.modeling_lineage_svd.LineageSvdModel.set_input_embeddings
    def set_input_embeddings(self, value):
        self.word_vectors = value

    # Copied from hf_lineage.models.modeling_lineage_svd.LineageSvdModel.forward
    def forward(self, input_ids, attention_mask=None, output_hidden_states=None, return_dict=None, **kwargs):
        """``last_hidden_state`` (B, T, vector_size): each token's vector. Static vectors have no context, so
        ``attention_mask`` changes nothing (padding positions get the padding token's vector, zero)."""
        if input_ids is None or input_ids.dim() < 1:
            raise ValueError("input_ids must be a (batch, sequence) tensor of token ids")
        check_ids_in_range(input_ids, self.config.vocab_size, "input_ids", "vocab_size")
        vectors = self.word_vectors(input_ids)  # (B, T, d)
        # One layer: the vectors (static vectors have no attention either: ``attentions`` stays None).
        hidden_states = (vectors,) if config_flag(output_hidden_states, self.config.output_hidden_states) else None
        output = BaseModelOutput(last_hidden_state=vectors, hidden_states=hidden_states)
        return tuple_or_dict(output, return_dict, self.config)


# Downstream task models: the vectors as the first layer (frozen or fine-tuned, ``config.freeze_vectors``) of a
# task encoder and classifier, shared with NNLM, word2vec and ELMo (see modeling_lineage_static.py).


# Copied from hf_lineage.models.modeling_lineage_word2vec.LineageWord2VecForTokenClassification with Word2Vec->Glove
class LineageGloveForTokenClassification(StaticVectorsForTokenClassification, LineageGlovePreTrainedModel):
    """Word vectors → BiLSTM (``config.task_*``) → a label per token (NER, POS)."""

    base_model_class = LineageGloveModel


# Copied from hf_lineage.models.modeling_lineage_word2vec.LineageWord2VecForSequenceClassification with Word2Vec->Glove
class LineageGloveForSequenceClassification(StaticVectorsForSequenceClassification, LineageGlovePreTrainedModel):
    """Word vectors → BiLSTM → max-pool → a label per sentence, or per sentence pair (``token_type_ids``)."""

    base_model_class = LineageGloveModel


# Copied from hf_lineage.models.modeling_lineage_word2vec.LineageWord2VecForCausalLM with Word2Vec->Glove
class LineageGloveForCausalLM(StaticVectorsForCausalLM, LineageGlovePreTrainedModel, GenerationMixin):
    """Word vectors → left-to-right LSTM → softmax over the vocabulary: static vectors have no language model of
    their own, so this is how they serve generation tasks."""

    base_model_class = LineageGloveModel



# Copied from hf_lineage.models.modeling_lineage_word2vec.LineageWord2VecForQuestionAnswering with Word2Vec->Glove
class LineageGloveForQuestionAnswering(StaticVectorsForQuestionAnswering, LineageGlovePreTrainedModel):
    """Input vectors → BiLSTM over question and passage → start/end logits (extractive QA)."""

    base_model_class = LineageGloveModel


class LineageGloveForMultipleChoice(StaticVectorsForMultipleChoice, LineageGlovePreTrainedModel):
    """GloVe vectors → BiLSTM over each (context, choice) pair → one score per choice, a softmax over the choices
    (a cloze, SWAG)."""

    base_model_class = LineageGloveModel


# Copied from hf_lineage.models.modeling_lineage_word2vec.LineageWord2VecForIntentAndSlots with Word2Vec->Glove
class LineageGloveForIntentAndSlots(StaticVectorsForIntentAndSlots, LineageGlovePreTrainedModel):
    """Word vectors → BiLSTM → an intent per utterance (max-pooled states) and a slot tag per word, trained on the
    sum of both losses (joint intent classification and slot filling)."""

    base_model_class = LineageGloveModel


__all__ = ["LineageGlovePreTrainedModel", *dict.fromkeys(AUTO_CLASSES.values()),
           "LineageGloveForIntentAndSlots"]
