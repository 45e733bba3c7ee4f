"""Lineage NNLM (Bengio et al., 2003): the neural probabilistic language model, the first model to learn word
vectors and a language model together.

The paper's equation (1), for the word after position t::

    x = (C(w_t), C(w_{t-1}), ..., C(w_{t-n+2}))      the n − 1 previous words' feature vectors, concatenated
    y = b + W·x + U·tanh(d + H·x)                    unnormalised log-probabilities of the next word
    P(w_{t+1} = i | context) = softmax(y)_i

Read top to bottom: the shared pieces, the bare model (table C, the context windows, the tanh layer), the causal LM.
Where the code's names meet the paper's: ``word_embeddings`` is C, ``hidden`` is (H, d), ``lm_head`` holds U and W
side by side — its weight is ``[U W]`` (V × (h + (n−1)·m)), its bias b — so the output is one matrix product
over ``[tanh(d + H·x), x]`` instead of two. Every position of a sequence is computed at once: the context windows
are built with padding and ``unfold`` (no loop over positions).

Before the first word of a sequence, and in place of left padding, the context holds the vector of
``config.context_start_token_id`` (``</s>`` by default: the pre-training stream has ``</s>`` after every line, so
"after ``</s>``" is where every training sentence starts).
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init
from transformers.generation import GenerationMixin
from transformers.modeling_outputs import CausalLMOutput
from transformers.utils import ModelOutput

from .configuration_lineage_nnlm import LineageNNLMConfig
from .loss_lineage_utils import vocabulary_cross_entropy
from .modeling_lineage_static import (
    StaticVectorsForIntentAndSlots,
    StaticVectorsForMultipleChoice,
    StaticVectorsForQuestionAnswering,
    StaticVectorsForSequenceClassification,
    StaticVectorsForTokenClassification,
    init_task_weights,
)
from .modeling_lineage_utils import (
    LineagePreTrainedModel,
    check_ids_in_range,
    check_same_shape,
    config_flag,
    tuple_or_dict,
)

# Auto class -> class name. The registry registers these and save_pretrained writes them into auto_map.
AUTO_CLASSES = {
    "AutoModel": "LineageNNLMModel",
    "AutoModelForPreTraining": "LineageNNLMForCausalLM",
    "AutoModelForCausalLM": "LineageNNLMForCausalLM",
    "AutoModelForTokenClassification": "LineageNNLMForTokenClassification",
    "AutoModelForSequenceClassification": "LineageNNLMForSequenceClassification",
    "AutoModelForQuestionAnswering": "LineageNNLMForQuestionAnswering",
    "AutoModelForMultipleChoice": "LineageNNLMForMultipleChoice",
}

# hf_lineage's own Auto classes (transformers has none for the task) -> class name: the registry registers these
# with ``hf_lineage.AutoModelForIntentAndSlots`` and save_pretrained writes them into auto_map.
LINEAGE_AUTO_CLASSES = {"AutoModelForIntentAndSlots": "LineageNNLMForIntentAndSlots"}


@dataclass
class LineageNNLMModelOutput(ModelOutput):
    """Output of the bare model, for every position t of the input.

    ``last_hidden_state`` (B, T, h): the hidden units tanh(d + H·x) (an empty last axis when h = 0).
    ``context_features`` (B, T, (n−1)·m): x, the feature vectors of words t, t−1, ..., t−n+2, most recent first.
    ``hidden_states`` (with ``output_hidden_states``): ``(x, tanh(d + H·x))``, the input layer and the hidden
    layer as transformers' BERT returns its embeddings and layers (``(x,)`` when h = 0). ``attentions`` is always
    None: the NNLM has no attention.
    """

    last_hidden_state: torch.Tensor | None = None
    context_features: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


class LineageNNLMPreTrainedModel(LineagePreTrainedModel):
    """Owns the config class and the initialisation: C and every weight matrix N(0, ``initializer_range``), biases
    zero (the paper does not give its initialisation). The downstream task encoders' modules (LSTMs) are
    initialised by ``init_task_weights``."""

    config_class = LineageNNLMConfig
    config: LineageNNLMConfig
    base_model_prefix = "nnlm"
    _no_split_modules = []

    def _init_weights(self, module):
        if init_task_weights(module):
            return
        std = self.config.initializer_range
        # transformers.initialization skips tensors already loaded from a checkpoint.
        if isinstance(module, (nn.Linear, nn.Conv1d)):
            init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=std)


class LineageNNLMModel(LineageNNLMPreTrainedModel):
    """The bare NNLM: table C, the context window of every position, and the tanh hidden layer.

    Returns, for every position t, the hidden units and the concatenated context x (``LineageNNLMModelOutput``).
    ``get_input_embeddings()`` is table C, the word vectors the downstream task models start from.

    Example::

        >>> model = LineageNNLMModel(LineageNNLMConfig.from_named("tiny", vocab_size=1000))
        >>> out = model(torch.tensor([[5, 6, 7]]))
        >>> out.last_hidden_state.shape, out.context_features.shape   # (B, T, h), (B, T, (n−1)·m)
        (torch.Size([1, 3, 32]), torch.Size([1, 3, 48]))
    """

    def __init__(self, config):
        super().__init__(config)
        n1, m, h = config.context_size, config.embedding_size, config.hidden_size
        self.word_embeddings = nn.Embedding(config.vocab_size, m)  # table C, one m-vector per word
        self.embedding_dropout = nn.Dropout(config.embedding_dropout)
        # H and d; h = 0 is the paper's network without a hidden layer (the direct connections carry everything).
        self.hidden = nn.Linear(n1 * m, h) if h > 0 else None
        self.hidden_dropout = nn.Dropout(config.hidden_dropout)
        self.post_init()

    def get_input_embeddings(self):
        return self.word_embeddings

    def set_input_embeddings(self, value):
        self.word_embeddings = value

    def check_inputs(self, input_ids, attention_mask):
        if input_ids is None:
            raise ValueError("input_ids are required (the NNLM looks its inputs up in table C)")
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must have shape (batch, sequence), got {tuple(input_ids.shape)}")
        check_ids_in_range(input_ids, self.config.vocab_size, "input_ids", "vocab_size")
        check_same_shape(attention_mask, input_ids.shape, "attention_mask", "input_ids")

    def context_windows(self, input_ids, attention_mask=None):
        """(B, T) ids → (B, T, n−1) ids: row t holds words t, t−1, ..., t−n+2 (most recent first, as in the paper's
        x). Positions before the sequence start, and padding (``attention_mask`` 0), hold the context-start word."""
        start = self.config.context_start_token_id
        if attention_mask is not None:
            input_ids = input_ids.masked_fill(attention_mask == 0, start)
        n1, T = self.config.context_size, input_ids.shape[1]
        padded = F.pad(input_ids, (n1 - 1, 0), value=start)  # (B, n−2 + T): n−2 start words in front
        # Column k is word t − k: slices rather than ``unfold``, which torch.export cannot trace for T < n − 1.
        return torch.stack([padded[:, n1 - 1 - k : n1 - 1 - k + T] for k in range(n1)], dim=-1)  # (B, T, n−1)

    def features(self, windows):
        """(..., n−1) context ids → x (..., (n−1)·m) and the hidden units tanh(d + H·x) (..., h) (None if h = 0)."""
        x = self.word_embeddings(windows).flatten(-2)  # (..., n−1, m) -> (..., (n−1)·m)
        x = self.embedding_dropout(x)
        hidden = None
        if self.hidden is not None:
            hidden = self.hidden_dropout(torch.tanh(self.hidden(x)))  # (..., h)
        return x, hidden

    def forward(self, input_ids=None, attention_mask=None, return_dict=None, output_hidden_states=None,
                output_attentions=None, **kwargs):
        self.check_inputs(input_ids, attention_mask)
        x, hidden = self.features(self.context_windows(input_ids, attention_mask))
        hidden_states = layer_outputs(x, hidden) if config_flag(output_hidden_states,
                                                                self.config.output_hidden_states) else None
        if hidden is None:
            hidden = x.new_zeros(*x.shape[:-1], 0)  # (B, T, 0): no hidden layer
        output = LineageNNLMModelOutput(last_hidden_state=hidden, context_features=x, hidden_states=hidden_states)
        return tuple_or_dict(output, return_dict, self.config)


def layer_outputs(x, hidden):
    """``hidden_states``: the input layer x and, when there is one, the hidden layer."""
    return (x,) if hidden is None else (x, hidden)


def shift_labels(labels):
    """Labels of a causal LM are its inputs: position t predicts word t+1, the last position predicts nothing."""
    return F.pad(labels[..., 1:], (0, 1), value=-100)


class LineageNNLMForCausalLM(LineageNNLMPreTrainedModel, GenerationMixin):
    """The NNLM with its softmax output layer: P(w_{t+1} | w_t, ..., w_{t−n+2}) at every position t.

    ``labels`` follow transformers' convention (``labels = input_ids``, shifted inside; -100 = not predicted);
    ``shift_labels`` (transformers' name for labels already aligned with the positions, e.g. from Trainer under
    context parallelism) are used as given instead. ``logits`` is (B, T, V), with or without labels (or the last
    ``logits_to_keep`` positions without), as every transformers causal LM. ``sparse_logits=True`` with labels
    computes the (N, V) output layer, the bulk of the work, only at the N positions that predict a label:
    ``logits`` is then (N, V), rows in the order of ``shift_labels(labels) != -100``, and the loss the same
    (pre-training passes it: ``NNLMObjective.forward_kwargs``).

    ``output_hidden_states=True`` returns the bare model's layers ``(x, tanh(d + H·x))`` at every position, whatever
    ``logits_to_keep`` or ``sparse_logits`` keep (``attentions``: None, there is no attention).

    Generation needs no cache: the next word depends on the last n − 1 words only, so each step feeds just those.

    Example::

        >>> model = LineageNNLMForCausalLM(LineageNNLMConfig.from_named("tiny", vocab_size=1000))
        >>> model(input_ids, labels=input_ids).loss.backward()
        >>> model.generate(prompt_ids, max_new_tokens=20, do_sample=True, top_k=40)
    """

    def __init__(self, config):
        super().__init__(config)
        self.nnlm = LineageNNLMModel(config)
        n_features = config.hidden_size + (config.context_size * config.embedding_size
                                           if config.direct_connections else 0)
        # weight [U W] (V, h + (n−1)·m), bias b: y = b + U·a + W·x as one matrix product over [a, x].
        self.lm_head = nn.Linear(n_features, config.vocab_size)
        self.post_init()

    def get_output_embeddings(self):
        return self.lm_head

    def set_output_embeddings(self, new_embeddings):
        self.lm_head = new_embeddings

    def output_features(self, x, hidden):
        """What ``lm_head`` multiplies: [a, x] with direct connections, a alone without, x alone when h = 0."""
        if hidden is None:
            return x
        return torch.cat([hidden, x], dim=-1) if self.config.direct_connections else hidden

    def forward(self, input_ids=None, attention_mask=None, labels=None, return_dict=None, logits_to_keep=0,
                sparse_logits=False, output_hidden_states=None, output_attentions=None, **kwargs):
        self.nnlm.check_inputs(input_ids, attention_mask)
        windows = self.nnlm.context_windows(input_ids, attention_mask)  # (B, T, n−1)
        targets = kwargs.get("shift_labels")
        if targets is None and labels is not None:
            check_same_shape(labels, input_ids.shape, "labels", "input_ids")
            targets = shift_labels(labels)  # (B, T): the word position t predicts
        if targets is not None:
            check_same_shape(targets, input_ids.shape, "shift_labels", "input_ids")
        positions = None  # what the output layer reads: every position, those with a label, or the last few
        if targets is not None and sparse_logits:
            # Only positions with a label need the (N, V) output layer, the bulk of the computation.
            positions = targets != -100  # (B, T)
            targets = targets[positions]  # (N,)
        elif targets is None and logits_to_keep:
            positions = (slice(None), slice(-logits_to_keep, None))  # generation needs the last distribution only
        hidden_states = None
        if config_flag(output_hidden_states, self.config.output_hidden_states):
            # Every position's layers, as transformers' causal LMs return them whatever logits_to_keep says.
            x, hidden = self.nnlm.features(windows)
            hidden_states = layer_outputs(x, hidden)
            if positions is not None:
                x, hidden = x[positions], None if hidden is None else hidden[positions]
        else:
            x, hidden = self.nnlm.features(windows if positions is None else windows[positions])
        logits = self.lm_head(self.output_features(x, hidden))  # (..., V)
        loss = None
        if targets is not None:
            loss = vocabulary_cross_entropy(logits, targets, kwargs.get("num_items_in_batch"))
        output = CausalLMOutput(loss=loss, logits=logits, hidden_states=hidden_states)
        return tuple_or_dict(output, return_dict, self.config)

    @classmethod
    def _supports_default_dynamic_cache(cls):
        return False  # nothing to cache: each step recomputes from the last n − 1 words

    def prepare_inputs_for_generation(self, input_ids, attention_mask=None, **kwargs):
        """Feed only the last n − 1 words (and their mask): all the next word depends on."""
        n1 = self.config.context_size
        inputs = {"input_ids": input_ids[:, -n1:], "logits_to_keep": 1}
        if attention_mask is not None:
            inputs["attention_mask"] = attention_mask[:, -n1:]
        for key in ("return_dict", "output_attentions", "output_hidden_states"):
            if key in kwargs:
                inputs[key] = kwargs[key]
        return inputs


# Downstream task models: table C as the first layer (frozen or fine-tuned, ``config.freeze_vectors``) of a task
# encoder and classifier, shared with word2vec (see modeling_lineage_static.py). Generation uses the NNLM itself.


# Copied from hf_lineage.models.modeling_lineage_word2vec.LineageWord2VecForTokenClassification with Word2Vec->NNLM
class LineageNNLMForTokenClassification(StaticVectorsForTokenClassification, LineageNNLMPreTrainedModel):
    """Word vectors → BiLSTM (``config.task_*``) → a label per token (NER, POS)."""

    base_model_class = LineageNNLMModel


# Copied from hf_lineage.models.modeling_lineage_word2vec.LineageWord2VecForSequenceClassification with Word2Vec->NNLM
class LineageNNLMForSequenceClassification(StaticVectorsForSequenceClassification, LineageNNLMPreTrainedModel):
    """Word vectors → BiLSTM → max-pool → a label per sentence, or per sentence pair (``token_type_ids``)."""

    base_model_class = LineageNNLMModel



# Copied from hf_lineage.models.modeling_lineage_word2vec.LineageWord2VecForQuestionAnswering with Word2Vec->NNLM
class LineageNNLMForQuestionAnswering(StaticVectorsForQuestionAnswering, LineageNNLMPreTrainedModel):
    """Input vectors → BiLSTM over question and passage → start/end logits (extractive QA)."""

    base_model_class = LineageNNLMModel


class LineageNNLMForMultipleChoice(StaticVectorsForMultipleChoice, LineageNNLMPreTrainedModel):
    """Word vectors (table C) → BiLSTM over each (context, choice) pair → one score per choice, a softmax over the choices
    (a cloze, SWAG)."""

    base_model_class = LineageNNLMModel


# Copied from hf_lineage.models.modeling_lineage_word2vec.LineageWord2VecForIntentAndSlots with Word2Vec->NNLM
class LineageNNLMForIntentAndSlots(StaticVectorsForIntentAndSlots, LineageNNLMPreTrainedModel):
    """Word vectors → BiLSTM → an intent per utterance (max-pooled states) and a slot tag per word, trained on the
    sum of both losses (joint intent classification and slot filling)."""

    base_model_class = LineageNNLMModel


__all__ = ["LineageNNLMPreTrainedModel", "LineageNNLMModelOutput", *dict.fromkeys(AUTO_CLASSES.values()),
           "LineageNNLMForIntentAndSlots"]
