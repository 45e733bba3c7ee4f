"""Downstream task models for the families whose features feed a task model of its own: NNLM and word2vec (static
word vectors) and ELMo (a scalar mix of biLM layers); and GPT and BERT with ``task_head="scalar_mix"`` (a scalar
mix of their hidden states: ``TransformerLayersTaskModel``), so that a frozen cell trains the same head in every family.

DESIGN: "static vectors feed tasks the two ways the seed describes: as the frozen first layer, or fine-tuned". A
task model here is

    word features (B, T, D) → task encoder (a BiLSTM by default) → classifier

and the same two heads serve every such family:

* ``StaticVectorsForTokenClassification``: a label per token (NER, POS);
* ``StaticVectorsForSequenceClassification``: a label per sentence, or per sentence pair when ``token_type_ids``
  mark a second segment. Each sentence is encoded on its own and the classifier sees ``[u, v, |u − v|, u * v]``
  (Conneau et al., 2017, InferSent), the usual way to compare two sentences encoded by a recurrent model;
* ``StaticVectorsForIntentAndSlots``: an intent per utterance and a slot tag per token, one encoder for both
  (joint intent classification and slot filling);
* ``StaticVectorsForMultipleChoice``: one score per choice, a softmax over the choices: each (context, choice)
  pair is read as the sentence-pair classifier reads it, ``[u, v, |u − v|, u * v]`` → a linear layer to one score;
* ``StaticVectorsForCausalLM``: generation for a family that has no language model of its own (word2vec): the
  vectors under a left-to-right LSTM language model (the ``task_*`` sizes; always unidirectional).

A family plugs in with two lines per head::

    class LineageWord2VecForTokenClassification(StaticVectorsForTokenClassification, LineageWord2VecPreTrainedModel):
        base_model_class = LineageWord2VecModel

The head builds ``base_model_class(config)`` under the family's ``base_model_prefix`` (so ``from_pretrained`` on a
pre-training checkpoint loads the pretrained vectors into it) and asks ``token_features`` for the word features:
by default the base model's input embeddings (NNLM's table C, word2vec's input vectors). ELMo overrides
``token_features`` (biLM + scalar mix) and names another flag and module to freeze.

Config fields read (validated by ``configuration_lineage_utils.check_task_fields``): ``task_encoder``
("bilstm" | "lstm" | "cnn" | "none"), ``task_hidden_size`` (per direction), ``task_num_layers``, ``task_dropout``,
``num_labels``, ``task_feature_norm`` ("batch": ``FeatureStandardizer``; "none") and the freeze flag named by
``freeze_flag`` (``freeze_vectors`` for static vectors).

This file is copied next to a saved model with the family's modeling file, so it imports only torch, transformers
and same-folder siblings.
"""

import math
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init
from transformers.modeling_outputs import (
    CausalLMOutput,
    CausalLMOutputWithPast,
    MultipleChoiceModelOutput,
    QuestionAnsweringModelOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)
from transformers.utils import logging

from .cache_lineage_utils import LSTMStateCache, LSTMStateGenerationMixin, with_cache
from .heads_lineage_utils import pair_features
from .loss_lineage_utils import cross_entropy, sequence_classification_loss, span_loss
from .modeling_lineage_intent_and_slots import IntentAndSlotsOutput, intent_and_slots_loss, intent_labels_of
from .modeling_lineage_utils import (QuestionAnsweringPipelineMixin, check_ids_in_range, config_flag, lstm_autocast,
                                    tuple_or_dict)


logger = logging.get_logger(__name__)


def init_task_weights(module: nn.Module) -> bool:
    """Initialise a task-encoder module the way PyTorch does (uniform ±1/√hidden for LSTMs, and the forget gates'
    bias at 1 so the cell state passes through at the start, Jozefowicz et al. 2015). Returns whether ``module``
    was one of ours; a family's ``_init_weights`` calls this first and returns when it is True.

    Going through ``transformers.initialization`` leaves weights loaded from a checkpoint untouched."""
    if isinstance(module, FeatureStandardizer):  # running statistics start as "standardise nothing"
        init.zeros_(module.running_mean)
        init.ones_(module.running_var)
        return True
    if isinstance(module, ScalarMix):  # equal weights on every layer, γ = 1
        init.zeros_(module.scalar_parameters)
        init.ones_(module.gamma)
        return True
    if not isinstance(module, nn.LSTM):
        return False
    bound = 1.0 / math.sqrt(module.hidden_size)
    for name, param in module.named_parameters():
        init.uniform_(param, -bound, bound)
        if name.startswith("bias_ih"):
            with torch.no_grad():
                if not getattr(param, "_is_hf_initialized", False):
                    param[module.hidden_size : 2 * module.hidden_size].fill_(1.0)  # gate order: i, f, g, o
    return True


def right_aligned(features: torch.Tensor, mask: torch.Tensor):
    """Move each row's selected positions to the front, keeping their order: (B, T, D), (B, T) bool → the same
    shapes with every row's ``mask`` positions first, and the (B, T) permutation used. Gives each sentence of a
    pair its own right-padded sequence, and lets left-padded input through the packed LSTM."""
    order = torch.argsort((~mask).to(torch.int8), dim=1, stable=True)  # (B, T): selected positions first
    return features.gather(1, order[..., None].expand_as(features)), mask.gather(1, order), order


class ScalarMix(nn.Module):
    """γ Σ_j s_j h_j, s = softmax(w) (ELMo's equation 1, Peters et al. 2018), over a model's L + 1 layers, each
    (B, T, D): the features of ELMo's heads (its biLM's layers) and of the Transformers' shared head
    (``task_head="scalar_mix"``: the embedding output and every layer's output). With ``do_layer_norm`` each layer
    is first layer-normalised per token (no learned gain or bias)."""

    def __init__(self, num_layers, do_layer_norm=False):
        super().__init__()
        self.scalar_parameters = nn.Parameter(torch.zeros(num_layers))  # w: equal weights to start with
        self.gamma = nn.Parameter(torch.ones(()))
        self.do_layer_norm = do_layer_norm

    def forward(self, layers):
        if len(layers) != len(self.scalar_parameters):
            raise ValueError(f"The scalar mix has {len(self.scalar_parameters)} weights, got {len(layers)} layers")
        weights = torch.softmax(self.scalar_parameters, dim=0)  # (L + 1,)
        if self.do_layer_norm:
            layers = [F.layer_norm(x, x.shape[-1:], eps=1e-12) for x in layers]
        return self.gamma * torch.einsum("l,l...->...", weights.to(layers[0].dtype), torch.stack(layers))


class FeatureStandardizer(nn.Module):
    """Each feature dimension standardised over the batch's real tokens: batch normalisation without a learned gain
    or bias (Ioffe & Szegedy 2015), with running statistics at evaluation and padding left at zero and out of the
    statistics. (B, T, D) features and a (B, T) mask → the same shape.

    Why: frozen pretrained features can be on a tiny scale (NNLM's table C after a short pretraining: norms near
    0.3, against word2vec's 5) or share one large direction (a briefly trained biLM's states differ by a few
    percent from token to token). An LSTM reading them as they come learns nothing, or learns the dropout noise
    and collapses to one class at evaluation; standardised, the differences between tokens are on the scale its
    initialisation expects. Trainable features lose nothing: the task encoder's input weights absorb any scale."""

    def __init__(self, size: int, momentum: float = 0.1, eps: float = 1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(size))
        self.register_buffer("running_var", torch.ones(size))

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        real = features[mask]  # (N, D): the real tokens only
        # One real token has no variance to estimate: it is scaled by the running statistics, as at evaluation.
        batch_statistics = self.training and real.shape[0] > 1
        standardized = F.batch_norm(real.float(), self.running_mean, self.running_var, training=batch_statistics,
                                    momentum=self.momentum, eps=self.eps)
        out = features.new_zeros(features.shape)
        out[mask] = standardized.to(features.dtype)
        return out


class TaskEncoder(nn.Module):
    """(B, T, D) word features and a (B, T) mask → (B, T, ``output_size``) contextual features; padded positions
    come out as zeros. ``config.task_encoder`` picks a BiLSTM (default), a left-to-right LSTM, a stack of width-3
    convolutions with ReLU (Collobert et al. 2011's window approach), or nothing (the features themselves)."""

    def __init__(self, config, input_size: int):
        super().__init__()
        self.kind = config.task_encoder
        hidden, layers = config.task_hidden_size, config.task_num_layers
        self.dropout = nn.Dropout(config.task_dropout)
        if self.kind in ("bilstm", "lstm"):
            bidirectional = self.kind == "bilstm"
            self.lstm = nn.LSTM(input_size, hidden, num_layers=layers, batch_first=True, bidirectional=bidirectional,
                                dropout=config.task_dropout if layers > 1 else 0.0)
            self.output_size = hidden * (2 if bidirectional else 1)
        elif self.kind == "cnn":
            sizes = [input_size] + [hidden] * layers
            self.convs = nn.ModuleList(nn.Conv1d(i, o, kernel_size=3, padding=1) for i, o in zip(sizes, sizes[1:]))
            self.output_size = hidden
        elif self.kind == "none":
            self.output_size = input_size
        else:  # the config validates this; a hand-edited config.json may not have been
            raise ValueError(f"Unknown task_encoder {self.kind!r}")

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.encode(features, mask)[0]

    def encode(self, features: torch.Tensor, mask: torch.Tensor, state=None):
        """``forward``, plus the LSTM's state: it starts from ``state`` ((h, c), each (L·directions, B, H); zeros
        when None) and comes back as each row's (h, c) after its last real position (None for the other
        encoders). Rows must be right-padded; a row with no real position keeps the state it was given."""
        x = self.dropout(features) * mask[..., None]  # (B, T, D)
        final = None
        if self.kind in ("bilstm", "lstm"):
            lengths = mask.sum(dim=1)
            # A packed sequence runs each row for its own length, so the backward LSTM starts at the last real word
            # and not in the padding, and the final state is the last real word's. Packing needs right padding
            # and lengths ≥ 1 on the CPU.
            # float32 where autocast's precision cannot run an LSTM on this CPU
            precision, x, start = lstm_autocast(x, state)
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths.clamp(min=1).cpu(), batch_first=True,
                                                       enforce_sorted=False)
            with precision:
                out, final = self.lstm(packed, start)
            x, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=features.shape[1])
            if state is not None:
                empty = (lengths == 0)[None, :, None]  # (1, B, 1)
                final = tuple(torch.where(empty, old, new) for old, new in zip(state, final))
        elif self.kind == "cnn":
            x = x.transpose(1, 2)  # (B, D, T): Conv1d convolves over the last axis
            for conv in self.convs:
                # Re-zero the padding before each layer so it never leaks into real positions at sequence ends.
                x = torch.relu(conv(x)) * mask[:, None, :]
            x = x.transpose(1, 2)
        return self.dropout(x) * mask[..., None], final  # (B, T, output_size)


def max_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Max over the real positions: (B, T, H), (B, T) → (B, H). An empty row gives zeros."""
    filled = states.masked_fill(~mask[..., None], torch.finfo(states.dtype).min)
    return torch.where(mask.any(dim=1, keepdim=True), filled.max(dim=1).values, torch.zeros_like(filled[:, 0]))


class StaticVectorsTaskModel:
    """What both heads share: the base model under ``base_model_prefix``, the features, freezing, the encoder.

    A mixin: it comes first in the bases of a family's head, before the family's ``PreTrainedModel``."""

    base_model_class: ClassVar[type]  # set by the family, e.g. LineageWord2VecModel
    # Config flag that freezes the features, and what it freezes (``frozen_parameters``).
    freeze_flag: ClassVar[str] = "freeze_vectors"

    def _build_task_model(self, config):
        setattr(self, self.base_model_prefix, self.base_model_class(config))
        self._build_feature_norm(config)
        self.encoder = TaskEncoder(config, self.feature_size())

    def _build_feature_norm(self, config):
        # A head saved before task_feature_norm existed loads with running statistics 0 and 1 (they are missing
        # from its weights): at evaluation it standardises nothing, and predicts as it did.
        standardize = config.task_feature_norm == "batch"
        self.feature_norm = FeatureStandardizer(self.feature_size()) if standardize else None

    @property
    def features_model(self) -> nn.Module:
        return getattr(self, self.base_model_prefix)

    def feature_size(self) -> int:
        return self.features_model.get_input_embeddings().embedding_dim

    @property
    def features_frozen(self) -> bool:
        return bool(getattr(self.config, self.freeze_flag))

    def frozen_parameters(self):
        return self.features_model.get_input_embeddings().parameters()

    # Set by ``remember_frozen_layers``: the frozen network's layers per sentence (``LayersMemo``); None: none.
    frozen_layers_memo = None

    def remember_frozen_layers(self, max_bytes: int = 2 << 30, folder=None):
        """Compute a frozen network's layers for each sentence once and build later batches from them (the same
        sentences every epoch: only the head trains). Only for families whose features come from a network (ELMo,
        GPT and BERT with the scalar-mix head); word-vector features are a table look-up already. ``max_bytes``
        bounds what is kept in memory (past it, sentences are computed as without it); ``folder`` keeps them on
        disk too, under the network's fingerprint, for later runs on the same weights. See
        ``feature_memo_lineage_utils``."""
        from .feature_memo_lineage_utils import LayersMemo

        self.frozen_layers_memo = LayersMemo(max_bytes, folder)

    def _apply_freezing(self):
        # requires_grad is what optimisers and parameter counts look at; token_features also detaches, so frozen
        # features get no gradient whatever a loader does to the Parameters.
        for param in self.frozen_parameters():
            param.requires_grad_(not self.features_frozen)

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        # Loading puts new Parameters (requires_grad=True) in place of the ones __init__ froze.
        loaded = super().from_pretrained(*args, **kwargs)
        # (model, loading_info) with output_loading_info=True
        (loaded[0] if isinstance(loaded, tuple) else loaded)._apply_freezing()
        return loaded

    def token_features(self, input_ids, attention_mask, **kwargs) -> torch.Tensor:
        """(B, T) word ids → (B, T, D) features; families with other features override this."""
        embeddings = self.features_model.get_input_embeddings()
        check_ids_in_range(input_ids, embeddings.num_embeddings, "input_ids", "vocab_size")
        features = embeddings(input_ids)
        return features.detach() if self.features_frozen else features

    def _encode(self, input_ids, attention_mask, kwargs, char_ids=None):
        # ``char_ids`` (ELMo's character ids, (B, T, chars)) is a named argument of every head's ``forward``, not one
        # of its ``**kwargs``: Trainer (``remove_unused_columns``) keeps only the dataset columns ``forward`` names,
        # so transformers' example scripts would drop it. Families whose features are word vectors ignore it.
        if input_ids is None:
            raise ValueError("input_ids are required")
        if char_ids is not None:
            kwargs = {**kwargs, "char_ids": char_ids}
        mask = torch.ones_like(input_ids, dtype=torch.bool) if attention_mask is None else attention_mask.bool()
        features = self.token_features(input_ids=input_ids, attention_mask=mask, **kwargs)  # (B, T, D)
        if self.feature_norm is not None:
            features = self.feature_norm(features, mask)
        return features, mask

    # What the token and sequence classifiers do with the features: shared with the Transformers' "scalar_mix"
    # heads (``TransformerLayersTaskModel``), so that every family's frozen cell trains the same head.

    def _build_token_classifier(self, config):
        self.classifier = nn.Linear(self.encoder.output_size, config.num_labels)

    def _token_classifier_output(self, features, mask, labels, num_items_in_batch, return_dict,
                                 output_hidden_states=None):
        """(B, T, D) features → task encoder → a label per token (``TokenClassifierOutput``)."""
        states, _ = _encode_in_place(self.encoder, features, mask)  # (B, T, H)
        hidden_states = self._hidden_states(features, states, output_hidden_states)
        logits = self.classifier(states)  # (B, T, num_labels)
        loss = None
        if labels is not None:
            if labels.shape != mask.shape:
                raise ValueError(f"labels has shape {tuple(labels.shape)}, input_ids {tuple(mask.shape)}")
            valid = labels[labels != -100]
            if valid.numel() and (int(valid.min()) < 0 or int(valid.max()) >= self.num_labels):
                raise ValueError(f"labels contain {int(valid.max())}, but the model has num_labels={self.num_labels}")
            loss = cross_entropy(logits, labels, num_items_in_batch)
        output = TokenClassifierOutput(loss=loss, logits=logits, hidden_states=hidden_states)
        return tuple_or_dict(output, return_dict, self.config)

    def _build_sentence_classifiers(self, config):
        self.dropout = nn.Dropout(config.task_dropout)
        # One layer reads a sentence vector u, the other a pair's [u, v, |u − v|, u * v]; a model trains only the
        # one its task uses.
        self.classifier = nn.Linear(self.encoder.output_size, config.num_labels)
        self.pair_classifier = nn.Linear(4 * self.encoder.output_size, config.num_labels)

    def _sentence_vector(self, features, mask):
        """Each row's real tokens → task encoder → max over them: (B, T, D), (B, T) → (B, H)."""
        features, mask, _ = right_aligned(features, mask)
        return max_pool(self.encoder(features, mask), mask)  # (B, H)

    def _sentence_vector_and_states(self, features, mask):
        """``_sentence_vector`` and the task encoder's states at their tokens' positions (zeros elsewhere)."""
        aligned, aligned_mask, order = right_aligned(features, mask)
        states = self.encoder(aligned, aligned_mask)  # (B, T, H), real tokens first
        return max_pool(states, aligned_mask), torch.zeros_like(states).scatter(1, order[..., None].expand_as(states),
                                                                               states)

    def _hidden_states(self, features, states, output_hidden_states):
        """``hidden_states`` of a task head, when asked (argument or ``config.output_hidden_states``): its two
        layers, the word features the task encoder reads (B, T, D) and the task encoder's states (B, T, H), as
        transformers' BERT returns its embeddings and layers. There are no attentions (``attentions`` is None)."""
        return (features, states) if config_flag(output_hidden_states, self.config.output_hidden_states) else None

    def _sentence_classifier_output(self, u, v, labels, return_dict, hidden_states=None):
        """Sentence vectors u (and v for a pair: None for single sentences), (B, H) → ``SequenceClassifierOutput``."""
        if v is None:
            logits = self.classifier(self.dropout(u))  # (B, num_labels)
        else:
            logits = self.pair_classifier(self.dropout(pair_features(u, v)))
        loss = None if labels is None else sequence_classification_loss(self.config, logits, labels)
        output = SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=hidden_states)
        return tuple_or_dict(output, return_dict, self.config)


def _encode_in_place(encoder, features, mask, state=None):
    """Run the task encoder on each row's real tokens (moved to the front, as packing needs) and put every state
    back at its token's position: right- and left-padded rows give the same states at their real tokens. Returns
    the states and, for an LSTM, its final (h, c) (see ``TaskEncoder.encode``)."""
    aligned, aligned_mask, order = right_aligned(features, mask)
    aligned, final = encoder.encode(aligned, aligned_mask, state)  # (B, T, H), real tokens first
    return torch.zeros_like(aligned).scatter(1, order[..., None].expand_as(aligned), aligned), final


class TransformerLayersTaskModel(StaticVectorsTaskModel):
    """The Transformers' shared head (GPT's and BERT's token and sequence classifiers with
    ``config.task_head == "scalar_mix"``): the features are a learned scalar mix (``ScalarMix``, ELMo's equation 1)
    of the Transformer's L + 1 hidden states, the embedding output and every layer's, and then the static families'
    code runs as it is: ``FeatureStandardizer`` → ``TaskEncoder`` → classifier, max-pooled sentences and
    ``[u, v, |u − v|, u * v]`` for pairs, the same ``task_*`` fields. So in the lineage's frozen regime every family
    trains the same head over its features, and the comparison is between representations, not heads.

    A mixin, first in the bases of the family's head (before its ``PreTrainedModel``): the head builds its
    Transformer under ``base_model_prefix`` itself (so a pretraining checkpoint's weights load into it) and calls
    ``_build_task_model`` only when ``task_head == "scalar_mix"``; with "linear" nothing here is built or run.

    There is no freeze flag: the Transformer is frozen from outside (``--freeze_base`` turns off its parameters'
    gradients), and it is frozen when none of its parameters requires a gradient."""

    def _build_task_model(self, config):
        self.scalar_mix = ScalarMix(config.num_hidden_layers + 1)
        self._build_feature_norm(config)
        self.encoder = TaskEncoder(config, self.feature_size())

    @torch.no_grad()
    def _init_weights(self, module):
        if init_task_weights(module):  # the task encoder, the standardiser and the mix as the static families'
            return
        super()._init_weights(module)

    def feature_size(self) -> int:
        return self.config.hidden_size

    @property
    def features_frozen(self) -> bool:
        return not any(param.requires_grad for param in self.features_model.parameters())

    def frozen_parameters(self):
        return self.features_model.parameters()

    def _apply_freezing(self):
        pass  # frozen from outside (requires_grad), see the class docstring

    def hidden_layers(self, input_ids, attention_mask, **kwargs) -> tuple:
        """The Transformer's L + 1 hidden states, each (B, T, C), for (B, T) ids and a (B, T) bool mask."""
        base = self.features_model
        kwargs = {name: value for name, value in kwargs.items() if value is not None}

        def run(rows=None):
            pick = (lambda tensor: tensor) if rows is None else (lambda tensor: tensor[rows])
            return base(pick(input_ids), attention_mask=pick(attention_mask).long(), use_cache=False,
                        output_hidden_states=True, return_dict=True,
                        **{name: pick(value) for name, value in kwargs.items()}).hidden_states

        if not self.features_frozen:
            return run()
        # A frozen Transformer is a fixed feature extractor, as ELMo's frozen biLM: no dropout inside it (the same
        # features at every epoch, the mix and the task encoder learn what it gives) and no gradient (no
        # activations kept for a backward pass: far cheaper than fine-tuning).
        training = base.training
        base.eval()
        try:
            with torch.no_grad():
                memo = self.frozen_layers_memo
                if memo is None or set(kwargs) - {"token_type_ids"}:
                    return run()
                return memo.layers(run, attention_mask, [input_ids, *kwargs.values()], base)
        finally:
            base.train(training)

    def token_features(self, input_ids, attention_mask, **kwargs) -> torch.Tensor:
        """The scalar mix of the hidden states: (B, T) ids → (B, T, C), zeros at padding."""
        layers = self.hidden_layers(input_ids, attention_mask, **kwargs)
        return self.scalar_mix(layers) * attention_mask[..., None]


class StaticVectorsForTokenClassification(StaticVectorsTaskModel):
    """A label per token: features → task encoder → dropout → linear. ``labels`` (B, T) with -100 where no label
    (padding, non-first sub-tokens); the loss is the mean over labelled tokens, or their sum over
    ``num_items_in_batch`` when Trainer accumulates gradients.

    Example::

        >>> model = AutoModelForTokenClassification.from_pretrained("my-word2vec", num_labels=9)  # doctest: +SKIP
        >>> model(**tokenizer(["EU rejects German call"], return_tensors="pt")).logits.shape  # doctest: +SKIP
        torch.Size([1, 4, 9])
    """

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self._build_task_model(config)
        self._build_token_classifier(config)
        self.post_init()
        self._apply_freezing()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, labels=None, return_dict=None,
                num_items_in_batch=None, char_ids=None, output_hidden_states=None, output_attentions=None, **kwargs):
        features, mask = self._encode(input_ids, attention_mask, kwargs, char_ids)
        return self._token_classifier_output(features, mask, labels, num_items_in_batch, return_dict,
                                             output_hidden_states)


class StaticVectorsForSequenceClassification(StaticVectorsTaskModel):
    """A label per sentence or sentence pair: each sentence → task encoder → max over its positions (Conneau et
    al. 2017 found max-pooled BiLSTM states the best sentence encoding) → dropout → linear.

    Pairs come as one tokenized sequence with ``token_type_ids`` 0 for the first sentence and 1 for the second
    (what ``tokenizer(a, b, return_token_type_ids=True)`` gives); each sentence is encoded on its own and the
    classifier reads ``[u, v, |u − v|, u * v]``. Without ``token_type_ids`` the input is one sentence. The config's
    ``problem_type`` chooses regression / single- / multi-label loss as in transformers.

    Example::

        >>> model = AutoModelForSequenceClassification.from_pretrained("my-nnlm", num_labels=2)  # doctest: +SKIP
        >>> batch = tokenizer(["a man is eating"], ["someone eats"], return_token_type_ids=True,
        ...                   return_tensors="pt")  # doctest: +SKIP
        >>> model(**batch).logits.shape  # doctest: +SKIP
        torch.Size([1, 2])
    """

    # The loss is a per-batch mean: Trainer must divide it by the accumulation steps itself (see LineagePreTrainedModel).
    accepts_loss_kwargs = False

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self._build_task_model(config)
        self._build_sentence_classifiers(config)
        self.post_init()
        self._apply_freezing()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, labels=None, return_dict=None,
                char_ids=None, output_hidden_states=None, output_attentions=None, **kwargs):
        features, mask = self._encode(input_ids, attention_mask, kwargs, char_ids)
        if token_type_ids is not None and bool((token_type_ids.bool() & mask).any()):
            if token_type_ids.shape != input_ids.shape:
                raise ValueError(f"token_type_ids has shape {tuple(token_type_ids.shape)}, "
                                 f"input_ids {tuple(input_ids.shape)}")
            second = token_type_ids.bool() & mask
            u, first_states = self._sentence_vector_and_states(features, mask & ~second)
            v, second_states = self._sentence_vector_and_states(features, second)
            states = first_states + second_states  # each sentence's states at its own positions
        else:
            (u, states), v = self._sentence_vector_and_states(features, mask), None
        hidden_states = self._hidden_states(features, states, output_hidden_states)
        return self._sentence_classifier_output(u, v, labels, return_dict, hidden_states)



class StaticVectorsForMultipleChoice(StaticVectorsTaskModel):
    """Multiple choice (SWAG, a cloze): each choice is a (context, choice) pair, read as the sentence-pair classifier
    reads a pair — ``token_type_ids`` 1 on the choice, each part encoded on its own and max-pooled to u and v — and
    scored by one linear layer on ``[u, v, |u − v|, u * v]``; the scores of an example's choices are normalised with
    a softmax (cross-entropy against ``labels``, the index of the right choice). Without ``token_type_ids`` each
    choice is one sequence, scored from its own max-pooled states.

    Inputs have shape (B, num_choices, T) (ELMo's ``char_ids`` (B, num_choices, T, chars)); ``logits`` (B,
    num_choices), as transformers' ``AutoModelForMultipleChoice`` heads take and return them.

    Example::

        >>> model = AutoModelForMultipleChoice.from_pretrained("my-word2vec")  # doctest: +SKIP
        >>> batch = tokenizer(["she ___ home ."] * 2, ["went", "blue"], return_token_type_ids=True,
        ...                   return_tensors="pt")  # doctest: +SKIP
        >>> model(**{k: v[None] for k, v in batch.items()}).logits.shape  # doctest: +SKIP
        torch.Size([1, 2])
    """

    accepts_loss_kwargs = False  # a per-batch mean loss: Trainer scales it under accumulation

    def __init__(self, config):
        super().__init__(config)
        self._build_task_model(config)
        self.dropout = nn.Dropout(config.task_dropout)
        self.classifier = nn.Linear(self.encoder.output_size, 1)
        self.pair_classifier = nn.Linear(4 * self.encoder.output_size, 1)
        self.post_init()
        self._apply_freezing()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, labels=None, return_dict=None,
                char_ids=None, output_hidden_states=None, output_attentions=None, **kwargs):
        if input_ids is None or input_ids.dim() != 3:
            raise ValueError("multiple-choice inputs must have shape (batch, num_choices, sequence)")
        num_choices = input_ids.shape[1]
        flat = lambda x: None if x is None else x.reshape(-1, *x.shape[2:])  # noqa: E731  (B * choices, ...)
        input_ids, attention_mask, token_type_ids, char_ids = map(flat, (input_ids, attention_mask, token_type_ids,
                                                                         char_ids))
        features, mask = self._encode(input_ids, attention_mask, kwargs, char_ids)
        if token_type_ids is not None and bool((token_type_ids.bool() & mask).any()):
            second = token_type_ids.bool() & mask
            u, first_states = self._sentence_vector_and_states(features, mask & ~second)
            v, second_states = self._sentence_vector_and_states(features, second)
            states = first_states + second_states
            scores = self.pair_classifier(self.dropout(pair_features(u, v)))
        else:
            u, states = self._sentence_vector_and_states(features, mask)
            scores = self.classifier(self.dropout(u))
        logits = scores.view(-1, num_choices)  # (B, num_choices)
        loss = None
        if labels is not None:
            outside = labels[(labels < 0) | (labels >= num_choices)]
            if outside.numel():
                raise ValueError(f"labels contain {int(outside[0])}, but there are {num_choices} choices (a label is "
                                 "the index of the right one, from 0)")
            loss = cross_entropy(logits, labels.view(-1))
        output = MultipleChoiceModelOutput(loss=loss, logits=logits,
                                           hidden_states=self._hidden_states(features, states, output_hidden_states))
        return tuple_or_dict(output, return_dict, self.config)


class StaticVectorsForQuestionAnswering(QuestionAnsweringPipelineMixin, StaticVectorsTaskModel):
    """Extractive QA (SQuAD): a span head over the family's features. The question and the passage come as one
    sequence (``tokenizer(question, passage, return_token_type_ids=True)``: ``token_type_ids`` 0 for the question,
    1 for the passage); the task encoder (a BiLSTM by default) reads the whole of it, so each passage state has seen
    the question, and the question's states are max-pooled to q. Each position's start and end logits come from
    ``qa_outputs`` on ``[h_t, q, h_t * q]`` — the product is the cheapest way to let a position score its match
    with the question (BiDAF, Seo et al. 2017, builds its attention on it). Without ``token_type_ids`` q pools the
    whole sequence.

    ``start_positions`` / ``end_positions`` (B,) give transformers' QA loss (mean of the start and end
    cross-entropies, positions outside the input ignored); logits are (B, T) as transformers' QA heads return."""

    accepts_loss_kwargs = False  # a per-batch mean loss: Trainer scales it under accumulation

    def __init__(self, config):
        super().__init__(config)
        self._build_task_model(config)
        self.dropout = nn.Dropout(config.task_dropout)
        self.qa_outputs = nn.Linear(3 * self.encoder.output_size, 2)
        self.post_init()
        self._apply_freezing()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, start_positions=None,
                end_positions=None, return_dict=None, char_ids=None, output_hidden_states=None,
                output_attentions=None, **kwargs):
        features, mask = self._encode(input_ids, attention_mask, kwargs, char_ids)
        states, _ = _encode_in_place(self.encoder, features, mask)  # (B, T, H)
        question = mask
        if token_type_ids is not None:
            if token_type_ids.shape != input_ids.shape:
                raise ValueError(f"token_type_ids has shape {tuple(token_type_ids.shape)}, "
                                 f"input_ids {tuple(input_ids.shape)}")
            question = mask & ~token_type_ids.bool()
        q = max_pool(states, question)[:, None].expand_as(states)  # (B, T, H)
        logits = self.qa_outputs(self.dropout(torch.cat([states, q, states * q], dim=-1)))  # (B, T, 2)
        start_logits, end_logits = logits.unbind(dim=-1)
        loss = None
        if start_positions is not None and end_positions is not None:
            loss = span_loss(start_logits, end_logits, start_positions, end_positions)
        output = QuestionAnsweringModelOutput(loss=loss, start_logits=start_logits, end_logits=end_logits,
                                              hidden_states=self._hidden_states(features, states,
                                                                                output_hidden_states))
        return tuple_or_dict(output, return_dict, self.config)


class StaticVectorsForIntentAndSlots(StaticVectorsTaskModel):
    """Joint intent classification and slot filling (Chen et al. 2019, with the task encoder in BERT's place, as
    the recurrent joint models before it: Liu & Lane 2016): features → task encoder, then

    * slots: each token's state → linear → ``slot_logits`` (B, T, ``num_labels``), as the token classifier;
    * intent: max over the utterance's states (as the sentence classifier) → dropout → linear → ``intent_logits``
      (B, ``len(config.intent_labels)``).

    ``intent_labels`` (B,) and ``slot_labels`` (B, T, -100 where no tag) give ``loss`` = intent CE +
    ``config.slot_loss_weight`` · slot CE (``modeling_lineage_intent_and_slots``)."""

    accepts_loss_kwargs = False  # a per-batch mean loss: Trainer scales it under accumulation

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.intent_names = intent_labels_of(config)
        self._build_task_model(config)
        self.dropout = nn.Dropout(config.task_dropout)
        self.intent_classifier = nn.Linear(self.encoder.output_size, len(self.intent_names))
        self.slot_classifier = nn.Linear(self.encoder.output_size, config.num_labels)
        self.post_init()
        self._apply_freezing()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, intent_labels=None, slot_labels=None,
                return_dict=None, char_ids=None, output_hidden_states=None, output_attentions=None, **kwargs):
        kwargs.pop("num_items_in_batch", None)
        features, mask = self._encode(input_ids, attention_mask, kwargs, char_ids)
        states, _ = _encode_in_place(self.encoder, features, mask)  # (B, T, H)
        slot_logits = self.slot_classifier(states)  # (B, T, num_labels)
        intent_logits = self.intent_classifier(self.dropout(max_pool(states, mask)))  # (B, num_intents)
        loss, intent_loss, slot_loss = intent_and_slots_loss(self.config, intent_logits, slot_logits, intent_labels,
                                                             slot_labels)
        output = IntentAndSlotsOutput(loss=loss, intent_logits=intent_logits, slot_logits=slot_logits,
                                      intent_loss=intent_loss, slot_loss=slot_loss,
                                      hidden_states=self._hidden_states(features, states, output_hidden_states))
        return tuple_or_dict(output, return_dict, self.config)


class StaticVectorsForCausalLM(LSTMStateGenerationMixin, StaticVectorsTaskModel):
    """A left-to-right LSTM language model on top of the vectors, so a static-vector family can generate: features
    → LSTM (``task_hidden_size`` × ``task_num_layers``, unidirectional whatever ``task_encoder`` says) → dropout →
    linear over the vocabulary. ``labels = input_ids`` as in every transformers causal LM (shifted inside).

    With ``use_cache`` (generation turns it on) the LSTM's state comes back as an ``LSTMStateCache`` and a later call
    continues from it (``cache=...``; ``past_key_values=...`` with transformers older than 5.24), so generation
    reads one word per step. Left-padded prompts are fine: each row's state is taken at its last real word.
    An untrained head generates random text, and a pre-training checkpoint (word2vec's, svd's) has none: loaded
    from one, the head is freshly initialised, ``config.output_head_trained`` is set to False, ``from_pretrained``
    warns, and ``generate`` refuses until the head has been trained — the first backward pass that reaches the
    logits sets the flag True, and ``save_pretrained`` writes it — or the user sets the flag True.

    A family combines it with ``GenerationMixin``::

        class LineageWord2VecForCausalLM(StaticVectorsForCausalLM, LineageWord2VecPreTrainedModel, GenerationMixin):
            base_model_class = LineageWord2VecModel
    """

    def __init__(self, config):
        super().__init__(config)
        setattr(self, self.base_model_prefix, self.base_model_class(config))
        # No batch standardisation here: a batch's statistics would let each position see the later words.
        self.feature_norm = None
        self.encoder = TaskEncoder(_unidirectional(config), self.feature_size())
        self.lm_head = nn.Linear(self.encoder.output_size, self.features_model.get_input_embeddings().num_embeddings)
        self.post_init()
        self._apply_freezing()

    def get_output_embeddings(self):
        return self.lm_head

    # Weights the language-model head adds to the family's base model: missing from a pre-training checkpoint.
    head_prefixes = ("lm_head.", "encoder.")

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        model, info = super().from_pretrained(*args, **{**kwargs, "output_loading_info": True})
        if any(key.startswith(cls.head_prefixes) for key in info["missing_keys"]):
            model.config.output_head_trained = False  # freshly initialised: untrained whatever the config said
        if getattr(model.config, "output_head_trained", None) is False:
            logger.warning(
                f"{cls.__name__}: the language-model head (lm_head and its LSTM) of this checkpoint has never been "
                "trained (a pre-training checkpoint has none: it was freshly initialised), so it would generate "
                "random text. Fine-tune it on text first (e.g. Trainer with labels=input_ids); generate() refuses "
                "until then, or until you set model.config.output_head_trained = True.")
        return (model, info) if kwargs.get("output_loading_info") else model

    def watch_head_training(self, logits):
        """While the head is untrained, a backward pass that reaches ``logits`` marks it trained. (A hook on the
        output tensor rather than on ``lm_head.weight``: it still fires after ``lm_head`` has been replaced, e.g.
        by ``resize_token_embeddings``.)"""
        if getattr(self.config, "output_head_trained", None) is False and logits.requires_grad:
            logits.register_hook(self._mark_head_trained)

    def _mark_head_trained(self, grad):
        self.config.output_head_trained = True

    def generate(self, *args, **kwargs):
        if getattr(self.config, "output_head_trained", None) is False:
            raise ValueError(
                f"{type(self).__name__}.generate: the language-model head has never been trained (it was freshly "
                "initialised when loaded from a checkpoint without one), so it would generate random text. Fine-tune "
                "it first (any backward pass through its logits marks it trained), or set "
                "model.config.output_head_trained = True to generate from it anyway.")
        return super().generate(*args, **kwargs)

    def forward(self, input_ids=None, attention_mask=None, labels=None, return_dict=None, num_items_in_batch=None,
                past_key_values=None, use_cache=None, logits_to_keep=0, cache=None, sparse_logits=False,
                output_hidden_states=None, output_attentions=None, **kwargs):
        for name in ("cache_position", "position_ids", "token_type_ids"):
            kwargs.pop(name, None)  # generation bookkeeping this model has no use for
        if labels is not None and labels.shape != input_ids.shape:
            raise ValueError(f"labels has shape {tuple(labels.shape)}, input_ids {tuple(input_ids.shape)}")
        # transformers' ``shift_labels``: labels already aligned with the positions (position t's target), as given.
        shifted = kwargs.pop("shift_labels", None)
        if shifted is not None and shifted.shape != input_ids.shape:
            raise ValueError(f"shift_labels has shape {tuple(shifted.shape)}, input_ids {tuple(input_ids.shape)}")
        state = LSTMStateCache.from_arguments(cache, past_key_values)
        if state is not None and state.batch_size != input_ids.shape[0]:
            raise ValueError(f"The LSTM state (cache) is for {state.batch_size} rows, input_ids has "
                             f"{input_ids.shape[0]}")
        features, mask = self._encode(input_ids, attention_mask, kwargs)
        states, final = _encode_in_place(self.encoder, features, mask, None if state is None else (state.h, state.c))
        hidden_states = self._hidden_states(features, states, output_hidden_states)  # every position's
        if labels is None and shifted is None:
            if logits_to_keep:
                states = states[:, -logits_to_keep:]  # generation needs only the last position's distribution
            new_state = LSTMStateCache.advanced(state, *final, input_ids.shape[1]) if use_cache else None
            logits = self.lm_head(states)  # (B, T, V)
            self.watch_head_training(logits)
            output = CausalLMOutputWithPast(logits=logits, hidden_states=hidden_states, **with_cache(new_state))
            return tuple_or_dict(output, return_dict, self.config)
        # Position t predicts token t + 1. Logits are (B, T, V), as every transformers causal LM returns them (the
        # example scripts and Trainer's metrics index them so). The vocabulary layer is most of the cost, so
        # ``sparse_logits=True`` runs it only where a token is predicted (a generation target is often half the
        # sequence): logits are then (N, V), those positions in order, as NNLM's. The loss is the same either way.
        # (B, T): position t's target; the last position predicts nothing.
        targets = shifted if shifted is not None else F.pad(labels[:, 1:], (0, 1), value=-100)
        predicting = targets != -100
        if sparse_logits:
            logits = self.lm_head(states[predicting])  # (N, V)
            loss = cross_entropy(logits, targets[predicting], num_items_in_batch)
        else:
            logits = self.lm_head(states)  # (B, T, V)
            loss = cross_entropy(logits[predicting], targets[predicting], num_items_in_batch)
        self.watch_head_training(logits)
        output = CausalLMOutput(loss=loss, logits=logits, hidden_states=hidden_states)
        return tuple_or_dict(output, return_dict, self.config)


class _unidirectional:
    """The config seen through ``task_encoder="lstm"``."""

    def __init__(self, config):
        self._config = config
        self.task_encoder = "lstm"

    def __getattr__(self, name):
        return getattr(self._config, name)
