"""Lineage word2vec (Mikolov et al., 2013): input vectors and output vectors, trained by skip-gram or CBOW with
negative sampling and/or hierarchical softmax.

Read top to bottom: the PreTrainedModel base (the C tool's init), the bare model (the input vectors: what users
keep), and the pre-training model (plus the output vectors, the inner-node vectors of the Huffman tree and the
vocabulary counts).

The names of the matrices, against gensim's and the C tool's:

=========================================  ================  =======================================
here                                       gensim            what it is
=========================================  ================  =======================================
``word2vec.input_vectors.weight``          ``wv.vectors``    syn0, the word vectors
``output_vectors.weight``                  ``syn1neg``       output vectors for negative sampling
``inner_node_vectors.weight``              ``syn1``          one vector per inner node of the tree
``word_counts``                            ``wv`` "count"    corpus count of each word
=========================================  ================  =======================================

This module computes the loss of a batch of training items built by
``hf_lineage.word_vector_trainers.word2vec_sampling`` (the engine path, for GPUs and many processes). The C tool's
sequential Hogwild SGD on CPU is ``hf_lineage.train_word2vec`` (``hf_lineage.word_vector_trainers.word2vec_kernels``);
both write the same weights.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init
from transformers.generation import GenerationMixin
from transformers.modeling_outputs import BaseModelOutput
from transformers.utils import ModelOutput

from .configuration_lineage_word2vec import LineageWord2VecConfig
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
    "AutoModel": "LineageWord2VecModel",
    "AutoModelForPreTraining": "LineageWord2VecForPreTraining",
    "AutoModelForTokenClassification": "LineageWord2VecForTokenClassification",
    "AutoModelForSequenceClassification": "LineageWord2VecForSequenceClassification",
    "AutoModelForQuestionAnswering": "LineageWord2VecForQuestionAnswering",
    "AutoModelForMultipleChoice": "LineageWord2VecForMultipleChoice",
    "AutoModelForCausalLM": "LineageWord2VecForCausalLM",
}

# hf_lineage's own Auto classes (transformers has none for the task) -> class name: the registry registers these
# with ``hf_lineage.AutoModelForIntentAndSlots`` and save_pretrained writes them into auto_map.
LINEAGE_AUTO_CLASSES = {"AutoModelForIntentAndSlots": "LineageWord2VecForIntentAndSlots"}


class LineageWord2VecPreTrainedModel(LineagePreTrainedModel):
    """Owns the config class and the C tool's init: input vectors uniform in [-0.5/d, 0.5/d), output and
    inner-node vectors zero (``InitNet`` in word2vec.c; gensim does the same)."""

    config_class = LineageWord2VecConfig
    config: LineageWord2VecConfig
    base_model_prefix = "word2vec"
    _no_split_modules = []

    @torch.no_grad()
    def _init_weights(self, module):
        if init_task_weights(module):  # the downstream task encoders' LSTMs
            return
        # Initialise at the nn.Embedding itself: for custom-code models transformers skips modules that hold no
        # parameter of their own. Its `init` functions skip tensors that from_pretrained loaded, so only missing
        # ones change.
        if isinstance(module, nn.Embedding):
            if module is self.get_input_embeddings():
                half_width = 0.5 / self.config.vector_size
                init.uniform_(module.weight, -half_width, half_width)
            else:  # output vectors (syn1neg) and inner-node vectors (syn1) start at zero
                init.zeros_(module.weight)
        elif isinstance(module, LineageWord2VecForPreTraining):
            init.zeros_(module.word_counts)
        elif isinstance(module, (nn.Linear, nn.Conv1d)):  # the downstream task models' layers
            super()._init_weights(module)


class LineageWord2VecModel(LineageWord2VecPreTrainedModel):
    """The word vectors: ``forward(input_ids)`` looks them up.

    Example::

        >>> import hf_lineage
        >>> from transformers import AutoModel
        >>> model = AutoModel.from_pretrained("out/word2vec")  # doctest: +SKIP
        >>> vectors = model(input_ids).last_hidden_state       # (B, T, vector_size)  # doctest: +SKIP
    """

    def __init__(self, config):
        super().__init__(config)
        self.input_vectors = nn.Embedding(config.vocab_size, config.vector_size)
        self.post_init()

    def get_input_embeddings(self):
        return self.input_vectors

    def set_input_embeddings(self, value):
        self.input_vectors = value

    def forward(self, input_ids, attention_mask=None, output_hidden_states=None, return_dict=None, **kwargs):
        """``last_hidden_state`` (B, T, vector_size): each token's vector. Static vectors have no context, so
        ``attention_mask`` changes nothing (padding positions get the padding token's vector)."""
        if input_ids is None or input_ids.dim() < 1:
            raise ValueError("input_ids must be a (batch, sequence) tensor of token ids")
        check_ids_in_range(input_ids, self.config.vocab_size, "input_ids", "vocab_size")
        vectors = self.input_vectors(input_ids)  # (B, T, d)
        # One layer: the vectors (static vectors have no attention either: ``attentions`` stays None).
        hidden_states = (vectors,) if config_flag(output_hidden_states, self.config.output_hidden_states) else None
        output = BaseModelOutput(last_hidden_state=vectors, hidden_states=hidden_states)
        return tuple_or_dict(output, return_dict, self.config)


@dataclass
class LineageWord2VecPreTrainingOutput(ModelOutput):
    """``loss``: the summed loss of the batch divided by ``num_items_in_batch`` (the number of training items in
    the whole accumulated batch; the batch's own item count without it). ``item_losses`` (N,): each item's loss —
    an item is one (context word → centre word) prediction in skip-gram, one (window → centre word) in CBOW."""

    loss: torch.FloatTensor | None = None
    item_losses: torch.FloatTensor | None = None


class LineageWord2VecForPreTraining(LineageWord2VecPreTrainedModel):
    """Input vectors (``self.word2vec``) plus the output layers the config asks for: ``output_vectors`` for
    negative sampling, ``inner_node_vectors`` for hierarchical softmax, and the vocabulary counts.

    ``forward`` takes one batch of training items from
    ``hf_lineage.word_vector_trainers.word2vec_sampling.DataCollatorForWord2Vec``:

    * ``input_ids`` (N, C) with ``attention_mask`` (N, C): the words whose input vectors make the hidden vector
      h — one context word in skip-gram (C = 1), the window's context words in CBOW (their sum, or mean with
      ``cbow_mean``);
    * ``labels`` (N,): the word to predict (the centre word);
    * ``negatives`` (N, k): noise words (negative sampling); one equal to the label is skipped, as in the C tool;
    * ``hs_points``, ``hs_codes``, ``hs_mask`` (N, L): the label's path in the Huffman tree (hierarchical softmax).

    The loss of an item is the C tool's: −log σ(h·u_label) − Σ log σ(−h·u_noise) for negative sampling, and
    −Σ_nodes log σ((1 − 2·code)·h·v_node) along the path for hierarchical softmax (their sum when both are on).

    ``word_counts`` (V,) is a persistent buffer rather than a config list: it is data that grows with the
    vocabulary (config.json stays readable), it travels with the weights into safetensors, and the Huffman tree
    and the noise distribution are computed from it, so a saved model can be trained further exactly. Words with
    count 0 — the tokenizer's specials — are never trained: they are dropped from sentences as gensim drops
    out-of-vocabulary words, never drawn as noise and have no Huffman code.
    """

    def __init__(self, config):
        super().__init__(config)
        self.word2vec = LineageWord2VecModel(config)
        V, d = config.vocab_size, config.vector_size
        self.output_vectors = nn.Embedding(V, d) if config.negative > 0 else None
        # gensim's syn1 shape: V rows, of which a tree over V words uses V - 1 (so gensim's matrices copy over).
        self.inner_node_vectors = nn.Embedding(V, d) if config.hs else None
        self.register_buffer("word_counts", torch.zeros(V, dtype=torch.long), persistent=True)
        self.post_init()

    def get_input_embeddings(self):
        return self.word2vec.input_vectors

    def set_input_embeddings(self, value):
        self.word2vec.input_vectors = value

    def forward(self, input_ids, labels, attention_mask=None, negatives=None, hs_points=None, hs_codes=None,
                hs_mask=None, num_items_in_batch=None, return_dict=None, **kwargs):
        config = self.config
        if input_ids.dim() == 1:
            input_ids = input_ids[:, None]
        if input_ids.dim() != 2 or labels.shape != input_ids.shape[:1]:
            raise ValueError(
                f"input_ids must be (N, C) and labels (N,), got {tuple(input_ids.shape)} and {tuple(labels.shape)}"
            )
        V = config.vocab_size
        check_ids_in_range(input_ids, V, "input_ids", "vocab_size")
        check_ids_in_range(labels, V, "labels", "vocab_size")
        if config.negative > 0 and negatives is None:
            raise ValueError("config.negative > 0 but no negatives were given (build batches with "
                             "DataCollatorForWord2Vec)")
        if config.hs and hs_points is None:
            raise ValueError("config.hs is True but no hs_points/hs_codes/hs_mask were given")

        # The hidden vector h: one input vector (skip-gram) or the window's sum / mean (CBOW).
        vectors = self.word2vec.input_vectors(input_ids)  # (N, C, d)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        mask = attention_mask.to(vectors.dtype)[..., None]  # (N, C, 1)
        h = (vectors * mask).sum(1)  # (N, d)
        if config.architecture == "cbow" and config.cbow_mean:
            h = h / mask.sum(1).clamp(min=1)

        item_losses = h.new_zeros(h.shape[0], dtype=torch.float32)  # (N,)
        if config.negative > 0:
            check_ids_in_range(negatives, V, "negatives", "vocab_size")
            targets = torch.cat([labels[:, None], negatives], dim=1)  # (N, 1 + k)
            logits = torch.einsum("nd,nkd->nk", h, self.output_vectors(targets)).float()  # (N, 1 + k)
            # +1: the label should score high; -1: the noise words low. Noise equal to the label is skipped.
            sign = torch.full_like(logits, -1.0)
            sign[:, 0] = 1.0
            keep = torch.ones_like(logits, dtype=torch.bool)
            keep[:, 1:] = negatives != labels[:, None]
            item_losses = item_losses - (F.logsigmoid(sign * logits) * keep).sum(1)
        if config.hs:
            check_ids_in_range(hs_points, V, "hs_points", "vocab_size")
            logits = torch.einsum("nd,nld->nl", h, self.inner_node_vectors(hs_points)).float()  # (N, L)
            # The C tool trains σ(h·v) towards 1 - code at each node of the path.
            sign = 1.0 - 2.0 * hs_codes.float()
            item_losses = item_losses - (F.logsigmoid(sign * logits) * hs_mask.float()).sum(1)

        divisor = item_losses.shape[0] if num_items_in_batch is None else num_items_in_batch
        if torch.is_tensor(divisor):
            divisor = divisor.to(item_losses.device)
        loss = item_losses.sum() / divisor
        output = LineageWord2VecPreTrainingOutput(loss=loss, item_losses=item_losses)
        return tuple_or_dict(output, return_dict, config)


# Downstream task models: the vectors as the first layer (frozen or fine-tuned, ``config.freeze_vectors``) of a
# task encoder and classifier, shared with NNLM (see modeling_lineage_static.py).


class LineageWord2VecForTokenClassification(StaticVectorsForTokenClassification, LineageWord2VecPreTrainedModel):
    """Word vectors → BiLSTM (``config.task_*``) → a label per token (NER, POS)."""

    base_model_class = LineageWord2VecModel


class LineageWord2VecForSequenceClassification(StaticVectorsForSequenceClassification, LineageWord2VecPreTrainedModel):
    """Word vectors → BiLSTM → max-pool → a label per sentence, or per sentence pair (``token_type_ids``)."""

    base_model_class = LineageWord2VecModel


class LineageWord2VecForCausalLM(StaticVectorsForCausalLM, LineageWord2VecPreTrainedModel, GenerationMixin):
    """Word vectors → left-to-right LSTM → softmax over the vocabulary: static vectors have no language model of
    their own, so this is how they serve generation tasks."""

    base_model_class = LineageWord2VecModel



class LineageWord2VecForQuestionAnswering(StaticVectorsForQuestionAnswering, LineageWord2VecPreTrainedModel):
    """Input vectors → BiLSTM over question and passage → start/end logits (extractive QA)."""

    base_model_class = LineageWord2VecModel


class LineageWord2VecForMultipleChoice(StaticVectorsForMultipleChoice, LineageWord2VecPreTrainedModel):
    """Word vectors → BiLSTM over each (context, choice) pair → one score per choice, a softmax over the choices
    (a cloze, SWAG)."""

    base_model_class = LineageWord2VecModel


class LineageWord2VecForIntentAndSlots(StaticVectorsForIntentAndSlots, LineageWord2VecPreTrainedModel):
    """Word vectors → BiLSTM → an intent per utterance (max-pooled states) and a slot tag per word, trained on the
    sum of both losses (joint intent classification and slot filling)."""

    base_model_class = LineageWord2VecModel


__all__ = ["LineageWord2VecPreTrainedModel", "LineageWord2VecPreTrainingOutput", *dict.fromkeys(AUTO_CLASSES.values()),
           "LineageWord2VecForIntentAndSlots"]
