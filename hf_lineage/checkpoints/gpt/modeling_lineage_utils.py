"""Modeling pieces shared by every lineage family: the common PreTrainedModel base, input checks, losses.

This file is copied next to a saved model together with the family's modeling file (transformers follows
same-folder ``from .x import`` lines), so it imports only torch, transformers and same-folder siblings.
"""

import os
import sys
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.fx._symbolic_trace import is_fx_symbolic_tracing
from transformers import PreTrainedModel
from transformers.masking_utils import create_bidirectional_mask, create_causal_mask
from transformers.modeling_outputs import CausalLMOutputWithPast
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.utils import ModelOutput

from .card_lineage_utils import keep_lineage_card, model_card
from .configuration_lineage_utils import check_pruned_heads


class LineagePreTrainedModel(PreTrainedModel):
    """Base of every family's ``PreTrainedModel``.

    What it adds to transformers' base is what makes a saved folder self-sufficient: ``save_pretrained`` writes an
    ``auto_map`` for *every* Auto class of the family (not only the one the saved class was registered under), so
    ``AutoModelForMaskedLM.from_pretrained(folder, trust_remote_code=True)`` works on a folder saved from the
    pre-training model, and it writes a model card when the folder has none, which ``push_to_hub`` uploads in place of
    transformers' generic card (``card_lineage_utils``).

    Losses: heads whose loss is a sum over labelled items divided by ``num_items_in_batch`` (token-level heads) take
    it from Trainer or the engine, so gradient accumulation equals one big batch. Heads whose loss is a per-batch
    mean set ``accepts_loss_kwargs = False``: otherwise their ``**kwargs`` forward makes Trainer believe the loss is
    already normalised over the accumulated batch and skip dividing it by the accumulation steps.

    A family's modeling module declares ``AUTO_CLASSES = {"AutoModel": "LineageBertModel", ...}``; the package's
    registry reads the same table to register the classes, so the table is the single source of truth.
    """

    def save_pretrained(self, save_directory, *args, **kwargs):
        module = sys.modules[type(self).__module__]
        module_file = module.__name__.rsplit(".", 1)[-1]
        auto_classes = getattr(module, "AUTO_CLASSES", {})
        if auto_classes:
            auto_map = dict(getattr(self.config, "auto_map", None) or {})
            auto_map.update({auto: f"{module_file}.{name}" for auto, name in auto_classes.items()})
            config_module = sys.modules[type(self.config).__module__].__name__.rsplit(".", 1)[-1]
            auto_map["AutoConfig"] = f"{config_module}.{type(self.config).__name__}"
            self.config.auto_map = auto_map
        super().save_pretrained(save_directory, *args, **kwargs)
        card = os.path.join(save_directory, "README.md")
        if not os.path.exists(card):
            with open(card, "w", encoding="utf-8") as f:
                f.write(model_card(self))

    def _upload_modified_files(self, working_dir, repo_id, *args, **kwargs):
        # push_to_hub's last step before the upload, after it wrote its own card over ours (in every transformers 5).
        keep_lineage_card(os.path.join(working_dir, "README.md"), self, repo_id)
        return super()._upload_modified_files(working_dir, repo_id, *args, **kwargs)

    def prune_heads(self, heads_to_prune: dict[int, list[int]]) -> None:
        """Remove attention heads, ``{layer: [head, ...]}`` in the original numbering (as transformers 4.x's
        ``prune_heads``): their rows of the query, key and value projections and their columns of the output
        projection go, so the model is smaller and faster. The heads are added to ``config.pruned_heads``, which
        ``from_pretrained`` reads to build the pruned shapes; pruning a head twice is a no-op."""
        if not hasattr(self.base_model, "_prune_heads"):
            raise NotImplementedError(f"{type(self).__name__} has no attention heads to prune")
        pruned = {int(layer): set(heads) for layer, heads in (self.config.pruned_heads or {}).items()}
        for layer, heads in heads_to_prune.items():
            pruned.setdefault(int(layer), set()).update(int(head) for head in heads)
        previous, self.config.pruned_heads = self.config.pruned_heads, pruned
        try:
            check_pruned_heads(self.config)  # validates and normalises before anything is cut
        except ValueError:
            self.config.pruned_heads = previous
            raise
        self.base_model._prune_heads({int(layer): set(heads) for layer, heads in heads_to_prune.items()})


class QuestionAnsweringPipelineMixin:
    """Mixed into every family's ``*ForQuestionAnswering``: ``save_pretrained`` names the question-answering
    pipeline in the saved ``config.json`` (``custom_pipelines``) and puts its file next to the weights, however the
    model was made (a recipe, ``from_pretrained``/``from_config`` and a user's own Trainer, ...), so
    ``pipeline("question-answering", model=folder, trust_remote_code=True)`` works on the folder, or its Hub copy,
    without hf_lineage (transformers 5 has no such pipeline of its own).

    The file travels the way transformers moves custom code: the ``from .pipeline_lineage_question_answering``
    line below is a same-folder import, which ``save_pretrained`` follows when it copies the modeling files and
    ``trust_remote_code`` loading follows when it fetches them. It is imported here, on saving, rather than at the
    top, so loading a model does not import transformers' pipelines.

    The entry is in the config only while it is written: left in a model's config in memory, it would make
    ``pipeline("question-answering", model=model_object)`` ask for ``trust_remote_code`` and a folder to load the
    code from."""

    def save_pretrained(self, save_directory, *args, **kwargs):
        from .pipeline_lineage_question_answering import custom_pipelines_with_question_answering

        had, previous = hasattr(self.config, "custom_pipelines"), getattr(self.config, "custom_pipelines", None)
        self.config.custom_pipelines = custom_pipelines_with_question_answering(previous)
        try:
            return super().save_pretrained(save_directory, *args, **kwargs)
        finally:
            if had:
                self.config.custom_pipelines = previous
            else:
                del self.config.custom_pipelines


def pruned_head_index(heads: set, num_heads: int, head_size: int, already_pruned: set) -> tuple[set, torch.Tensor]:
    """The heads of ``heads`` not yet pruned, and the (kept) positions of a layer's concatenated head outputs once
    they are gone. Head numbers are the original ones; the layer's current heads are those not in ``already_pruned``,
    in order."""
    heads = set(heads) - already_pruned
    current = [head for head in range(num_heads + len(already_pruned)) if head not in already_pruned]
    index = [i * head_size + j for i, head in enumerate(current) if head not in heads for j in range(head_size)]
    # On the CPU explicitly: from_pretrained builds the model under a meta-device context.
    return heads, torch.tensor(index, dtype=torch.long, device="cpu")


def pruned_linear(layer: nn.Linear, index: torch.Tensor, dim: int = 0) -> nn.Linear:
    """A copy of ``layer`` keeping only ``index`` along ``dim`` of its weight (0: outputs, 1: inputs), with the
    layer's dtype, device and requires_grad (transformers' ``prune_linear_layer`` makes a float32 layer)."""
    index = index.to(layer.weight.device)
    new = nn.Linear(1, 1, bias=layer.bias is not None, device="meta")  # shapes and values come from ``layer``
    new.in_features, new.out_features = (layer.in_features, len(index)) if dim == 0 else (len(index), layer.out_features)
    requires_grad = layer.weight.requires_grad
    new.weight = nn.Parameter(layer.weight.detach().index_select(dim, index).clone(), requires_grad=requires_grad)
    if layer.bias is not None:
        bias = layer.bias.detach() if dim == 1 else layer.bias.detach()[index]
        new.bias = nn.Parameter(bias.clone(), requires_grad=requires_grad)
    return new


def check_ids_in_range(ids: torch.Tensor, upper: int, name: str, config_field: str) -> None:
    """Raise a ValueError naming the problem instead of an index error from inside ``nn.Embedding``.

    On a GPU (and under ``torch.compile``) the check is an asynchronous device assertion with the same message:
    reading the minimum and maximum back to the host would stop the CPU from queueing work ahead of the GPU at every
    forward pass (and break the compiled graph)."""
    if ids.numel() == 0:
        return
    if ids.device.type != "cpu" or torch.compiler.is_compiling():
        torch._assert_async(((ids >= 0) & (ids < upper)).all(),
                            f"{name} contains ids outside [0, {upper}) given by config.{config_field}={upper}")
        return
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi >= upper:
        bad = hi if hi >= upper else lo
        raise ValueError(f"{name} contains {bad}, outside [0, {upper}) given by config.{config_field}={upper}")


def check_same_shape(tensor: torch.Tensor | None, reference_shape: torch.Size, name: str, reference_name: str) -> None:
    if tensor is not None and tensor.shape != reference_shape:
        raise ValueError(
            f"{name} has shape {tuple(tensor.shape)} but {reference_name} has shape {tuple(reference_shape)}"
        )


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor, num_items_in_batch=None) -> torch.Tensor:
    """Token-level cross entropy ignoring -100, in float32.

    With ``num_items_in_batch`` (passed by Trainer under gradient accumulation) the sum is divided by the number of
    labelled tokens in the whole accumulated batch, so accumulation gives the same gradient as one big batch.
    """
    logits = logits.reshape(-1, logits.size(-1)).float()
    labels = labels.reshape(-1).to(logits.device)
    if num_items_in_batch is None:
        return F.cross_entropy(logits, labels, ignore_index=-100)
    loss = F.cross_entropy(logits, labels, ignore_index=-100, reduction="sum")
    if torch.is_tensor(num_items_in_batch):
        num_items_in_batch = num_items_in_batch.to(loss.device)
    return loss / num_items_in_batch


class _VocabularyCrossEntropy(torch.autograd.Function):
    """Mean (or sum / ``divisor``) token cross entropy of (N, V) logits, computed in float32 a block of rows at a
    time. ``F.cross_entropy`` materialises three more (N, V) tensors — float32 log-probabilities kept for the
    backward pass, zeros for the NLL gradient and the log-softmax gradient (plus a float32 copy of bf16 logits
    under autocast); for a language model's (B·T, vocabulary) logits those are the largest tensors of a training
    step. Here the forward keeps only a log-sum-exp per row and the backward writes softmax − one-hot straight
    into the one gradient tensor it returns, a block of rows at a time: each block (1 MB of float32) stays in the
    CPU's cache between the fused softmax and the scaling, where whole-tensor passes would each go to memory
    (``benchmarks/bench_vocabulary_loss.py``)."""

    ROW_BLOCK_ELEMENTS = 2**18

    @staticmethod
    def forward(ctx, logits, labels, divisor):
        N, V = logits.shape
        rows = max(1, _VocabularyCrossEntropy.ROW_BLOCK_ELEMENTS // V)
        valid = labels != -100
        target = labels.masked_fill(~valid, 0)
        lse = torch.empty(N, dtype=torch.float32, device=logits.device)
        for s in range(0, N, rows):
            lse[s : s + rows] = torch.logsumexp(logits[s : s + rows].float(), dim=-1)
        picked = logits.gather(1, target[:, None]).squeeze(1).float()  # logit of the right token, (N,)
        ctx.save_for_backward(logits, target, valid, torch.as_tensor(divisor, device=logits.device))
        return ((lse - picked) * valid).sum() / divisor

    @staticmethod
    def backward(ctx, grad_loss):
        logits, target, valid, divisor = ctx.saved_tensors
        N, V = logits.shape
        rows = max(1, _VocabularyCrossEntropy.ROW_BLOCK_ELEMENTS // V)
        scale = (grad_loss / divisor) * valid  # (N,): 0 for ignored rows
        grad = torch.empty_like(logits)
        in_place = grad.dtype == torch.float32
        for s in range(0, N, rows):
            block = logits[s : s + rows]
            if in_place:  # the softmax written into the gradient's own rows
                p = torch.ops.aten._softmax.out(block, -1, False, out=grad[s : s + rows])
            else:
                p = torch.softmax(block, dim=-1, dtype=torch.float32)  # (rows, V)
            p.mul_(scale[s : s + rows, None])
            p[torch.arange(p.shape[0], device=p.device), target[s : s + rows]] -= scale[s : s + rows]
            if not in_place:
                grad[s : s + rows] = p
        return grad, None, None


def vocabulary_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, num_items_in_batch=None) -> torch.Tensor:
    """``cross_entropy`` (-100 ignored, float32 maths, ``num_items_in_batch`` as there) for logits over a large
    vocabulary; same value and gradient on every device.

    The path is picked by device. On the CPU, ``_VocabularyCrossEntropy``: a block of rows at a time, without the
    (N, V) temporaries of ``F.cross_entropy``. Anywhere else (CUDA), ``F.cross_entropy`` itself: its fused kernels
    take the whole (N, V) tensor in a few launches, where the CPU path's small blocks would launch thousands of
    kernels a step (about 25,000 for GPT's 8,192 × 40,478 logits) and leave the GPU waiting on them (issue 33).
    Under ``torch.compile`` too: the compiler fuses ``F.cross_entropy`` itself.
    """
    if logits.device.type != "cpu" or torch.compiler.is_compiling():
        return cross_entropy(logits, labels, num_items_in_batch)
    logits = logits.reshape(-1, logits.size(-1))
    labels = labels.reshape(-1).to(logits.device)
    divisor = (labels != -100).sum() if num_items_in_batch is None else num_items_in_batch
    return _VocabularyCrossEntropy.apply(logits, labels, divisor)


def sequence_classification_loss(config, logits, labels):
    """Regression (1 label), single-label or multi-label classification, chosen as transformers does."""
    if config.problem_type is None:
        if config.num_labels == 1:
            config.problem_type = "regression"
        elif labels.dtype in (torch.long, torch.int):
            config.problem_type = "single_label_classification"
        else:
            config.problem_type = "multi_label_classification"
    if config.problem_type == "regression":
        return F.mse_loss(logits.squeeze(-1).float(), labels.squeeze(-1).float())
    if config.problem_type == "single_label_classification":
        if labels.numel() and (int(labels.max()) >= config.num_labels or int(labels.min()) < -100):
            raise ValueError(f"labels contain {int(labels.max())}, but the model has num_labels={config.num_labels}")
        return cross_entropy(logits, labels.view(-1))
    return F.binary_cross_entropy_with_logits(logits.float(), labels.float())


def span_loss(start_logits, end_logits, start_positions, end_positions):
    """Extractive QA's loss as transformers' BertForQuestionAnswering computes it: the mean of the start and end
    cross-entropies over (B, T) logits. Positions outside the (truncated) input are clamped to T and ignored."""
    T = start_logits.size(1)
    start = start_positions.view(-1).clamp(0, T)
    end = end_positions.view(-1).clamp(0, T)
    return (F.cross_entropy(start_logits.float(), start, ignore_index=T)
            + F.cross_entropy(end_logits.float(), end, ignore_index=T)) / 2


def attention_implementation(config) -> str:
    """``config._attn_implementation`` as the lineage Transformers read it: "sdpa" (the default), "eager", or any
    implementation registered in transformers' ``ALL_ATTENTION_FUNCTIONS`` ("flex_attention", "flash_attention_2",
    a kernel from the Hub ...); an unknown name is refused by name instead of silently running another path."""
    implementation = getattr(config, "_attn_implementation", None) or "sdpa"
    if implementation != "eager" and implementation not in ALL_ATTENTION_FUNCTIONS:
        raise ValueError(
            f"{config.model_type} runs attn_implementation 'sdpa' (the default), 'eager' or one registered in "
            f"transformers' ALL_ATTENTION_FUNCTIONS ({', '.join(sorted(ALL_ATTENTION_FUNCTIONS))}), not "
            f"{implementation!r}"
        )
    return implementation


def eager_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Attention computed here, (B, nh, T, hs) query and (B, nh, S, hs) key/value -> (B, T, nh, hs) and the
    attention probabilities (B, nh, T, S): the "eager" entry of the attention interface (transformers'
    ``eager_attention_forward`` pattern). ``attention_mask`` is what transformers' mask builders make: additive
    (0 / dtype minimum) for eager, boolean (True where allowed) for sdpa, or None."""
    scaling = query.size(-1) ** -0.5 if scaling is None else scaling
    scores = (query @ key.transpose(-2, -1)) * scaling  # (B, nh, T, S)
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + attention_mask
    weights = scores.softmax(dim=-1)
    output = F.dropout(weights, p=dropout, training=module.training) @ value
    return output.transpose(1, 2).contiguous(), weights


def attention_interface(config, output_attentions=False):
    """The attention function for ``config._attn_implementation``: ours for "eager" (and whenever the weights are
    asked for: the fused kernels do not return them), else transformers' (sdpa, flex, flash, Hub kernels)."""
    implementation = attention_implementation(config)
    if implementation == "eager" or output_attentions:
        return eager_attention_forward
    return ALL_ATTENTION_FUNCTIONS[implementation]


def is_traced() -> bool:
    """Whether this forward is being compiled, exported or traced: then no Python branch may read tensor values
    (the graph would break, or export fail on a data-dependent guard)."""
    return torch.compiler.is_compiling() or torch.jit.is_tracing() or is_fx_symbolic_tracing()


def causal_mask(config, inputs_embeds, attention_mask, cache):
    """The causal (decoder) self-attention mask for ``config._attn_implementation``, made by transformers'
    ``create_causal_mask``: tensor operations only (no branch on the mask's values, so ``torch.export`` and
    ``torch.compile`` trace it), None where SDPA's ``is_causal`` is right, and sized to a static cache's length.
    ``attention_mask`` is (B, past + T) over cached and new tokens, or None."""
    return create_causal_mask(config, inputs_embeds, attention_mask, cache)  # 4th positional: the cache's old/new name


def bidirectional_mask(config, inputs_embeds, attention_mask, encoder_hidden_states=None):
    """The padding mask of an encoder's self-attention (or, with ``encoder_hidden_states``, of cross-attention over
    the encoder's states) for ``config._attn_implementation``, made by transformers' ``create_bidirectional_mask``."""
    return create_bidirectional_mask(config, inputs_embeds, attention_mask, encoder_hidden_states)


def masked_mean(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, T, C), (B, T) -> (B, C): the mean of the states where ``mask`` is true (zeros for a row with none)."""
    weights = mask.unsqueeze(-1).to(states.dtype)
    return (states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1)


def pair_features(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """(B, C), (B, C) -> (B, 4C): ``[u, v, |u − v|, u * v]``, what a siamese pair classifier reads of two sentence
    vectors (Conneau et al. 2017; Reimers & Gurevych 2019)."""
    return torch.cat([u, v, (u - v).abs(), u * v], dim=-1)


def classifier_dropout(config) -> nn.Dropout:
    """Dropout before a task classifier: ``config.classifier_dropout``, else the hidden dropout."""
    return nn.Dropout(config.classifier_dropout if config.classifier_dropout is not None
                      else config.hidden_dropout_prob)


# --------------------------------------------------------------------------- caches across transformers versions

# transformers 5.24 renamed the cache, as a forward argument and as an output field, from ``past_key_values`` to
# ``cache`` (the old name is deprecated until 5.40); earlier releases know only ``past_key_values``. generate() hands the
# cache to forward under the installed version's name and reads it back from the output under that name, so every
# lineage forward accepts both names (``cache_argument``) and returns the cache under the installed one
# (``CACHE_FIELD``). Without this, generation under 5.24 silently started a new cache at every step.
CACHE_FIELD = "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"


def cache_argument(cache, past_key_values):
    """The cache a forward was given, under either name: ``cache`` (transformers >= 5.24) or ``past_key_values``
    (older transformers, and code written for them). Where the installed transformers names it ``cache``, the old
    name still works with transformers' own deprecation warning (its models warn the same way; generate() and
    EncoderDecoderModel pass ``cache`` there, so only code written for the old name sees it)."""
    if cache is not None and past_key_values is not None:
        raise ValueError("Pass the cache once, as `cache` or as `past_key_values` (its name before transformers "
                         "5.24), not both")
    if past_key_values is not None and CACHE_FIELD == "cache":
        warnings.warn("`past_key_values` is deprecated since transformers 5.24 for lineage models. Use `cache` "
                      "instead.", FutureWarning, stacklevel=3)
    return past_key_values if cache is None else cache


def with_cache(cache) -> dict:
    """``{CACHE_FIELD: cache}``: keyword arguments that put a cache into any transformers output class."""
    return {CACHE_FIELD: cache}


def output_cache(output: ModelOutput):
    """The cache in a transformers output (None when there is none), whatever the installed version calls it."""
    return output.get(CACHE_FIELD)


class LSTMStateCache:
    """The state a stack of LSTMs carries from one call to the next: ``h`` (L, B, H) and ``c`` (L, B, C), and how
    many input positions it has read.

    Recurrent models have no attention keys and values to put in a ``DynamicCache``; like transformers' own
    recurrent models (``MambaCache``, ``xLSTMCache``) they carry their state in a class of their own, which
    ``generate`` passes from step to step as it passes any cache. The models update it in place, as a
    ``DynamicCache`` is updated. What generation calls on it:

    - ``get_seq_length()``: positions read so far; the model's ``prepare_inputs_for_generation`` feeds only the
      input positions after them.
    - ``reorder_cache(beam_idx)``: beam search keeps the states of the beams it keeps.

    Carrying the state across consecutive segments of a stream (truncated backpropagation through time)::

        >>> out = model(input_ids=segment_1, use_cache=True)                                   # doctest: +SKIP
        >>> out = model(input_ids=segment_2, cache=out.cache.detach(), use_cache=True)        # doctest: +SKIP
    """

    is_compileable = False

    def __init__(self, h: torch.Tensor, c: torch.Tensor, seen_tokens: int = 0):
        if h.dim() != 3 or c.dim() != 3 or h.shape[:2] != c.shape[:2]:
            raise ValueError(f"An LSTM state is h (layers, batch, hidden) and c (layers, batch, cell) with the same "
                             f"layers and batch; got h {tuple(h.shape)} and c {tuple(c.shape)}")
        self.h, self.c, self.seen_tokens = h, c, seen_tokens

    @classmethod
    def from_arguments(cls, cache, past_key_values):
        """The state a forward was given under either name (see ``cache_argument``), as an ``LSTMStateCache``."""
        return cls.from_state(cache_argument(cache, past_key_values))

    @classmethod
    def from_state(cls, state):
        """Accepts an ``LSTMStateCache`` as it is, or a tuple ``(h, c)`` (what these models returned before)."""
        if state is None or isinstance(state, cls):
            return state
        if isinstance(state, (tuple, list)) and len(state) == 2 and all(torch.is_tensor(s) for s in state):
            return cls(*state)
        raise ValueError(f"Expected an LSTMStateCache or a tuple (h, c) of tensors as the LSTM state, got "
                         f"{type(state).__name__}")

    @property
    def batch_size(self) -> int:
        return self.h.shape[1]

    def update(self, h: torch.Tensor, c: torch.Tensor, num_positions: int) -> "LSTMStateCache":
        """The state after ``num_positions`` more input positions: h (L, B, H) and c (L, B, C)."""
        self.h, self.c = h, c
        self.seen_tokens += num_positions
        return self

    @classmethod
    def advanced(cls, state, h: torch.Tensor, c: torch.Tensor, num_positions: int) -> "LSTMStateCache":
        """``state`` updated in place (as a ``DynamicCache`` is), or a new state when there was none."""
        return cls(h, c, num_positions) if state is None else state.update(h, c, num_positions)

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.seen_tokens

    @property
    def is_linear(self) -> list[bool]:
        # transformers >= 5.24 slices the prompt by get_seq_length() only for caches with a sequence axis; a
        # recurrent state has none (the model's prepare_inputs_for_generation does the slicing).
        return [True] * self.h.shape[0]

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self.h = self.h.index_select(1, beam_idx.to(self.h.device))
        self.c = self.c.index_select(1, beam_idx.to(self.c.device))

    def detach(self) -> "LSTMStateCache":
        """A copy cut from the autograd graph: carry the state between training segments, not their graph."""
        return LSTMStateCache(self.h.detach(), self.c.detach(), self.seen_tokens)

    def __repr__(self):
        return (f"LSTMStateCache(layers={self.h.shape[0]}, batch={self.batch_size}, hidden={self.h.shape[2]}, "
                f"cell={self.c.shape[2]}, seen_tokens={self.seen_tokens})")


class LSTMStateGenerationMixin:
    """What ``generate`` needs from a language model that carries an ``LSTMStateCache`` (ELMo's forward LM,
    the static-vector families' LSTM LM). Comes before ``GenerationMixin`` in the bases."""

    # A recurrent state cannot be rewound to an earlier position: generate() refuses assisted decoding.
    _is_stateful = True

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the state is an LSTM's (h, c), not attention keys and values: the forward builds it

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, cache=None,
                                      **kwargs):
        """After the first step only the positions the state has not read (one new token per row), with a mask of
        ones (a row that already ended gets padding from generate(); its state runs on harmlessly and its output
        is thrown away). Other inputs (e.g. ELMo's char_ids) are dropped: new words come as ids alone."""
        state = LSTMStateCache.from_arguments(cache, past_key_values)
        inputs = {"logits_to_keep": 1, "use_cache": kwargs.get("use_cache", True)}
        for key in ("return_dict", "output_attentions", "output_hidden_states"):
            if key in kwargs:
                inputs[key] = kwargs[key]
        if state is None:
            inputs.update(input_ids=input_ids, attention_mask=attention_mask)
        else:
            new = input_ids[:, state.get_seq_length():]
            inputs.update(input_ids=new, attention_mask=torch.ones_like(new), **with_cache(state))
        return inputs


def config_flag(value, default):
    return default if value is None else value


def tuple_or_dict(output: ModelOutput, return_dict, config):
    return output if config_flag(return_dict, config.return_dict) else output.to_tuple()
