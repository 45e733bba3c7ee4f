"""What every lineage model is built on: the common ``PreTrainedModel`` base, the question-answering models' mixin,
and what every forward does at its two ends: check its inputs, and return a tuple or a ``ModelOutput``.

This file is copied next to a saved model with the modeling files that import it (transformers follows same-folder
``from .x import`` lines), so it imports only torch, transformers and same-folder siblings.
"""

import contextlib
import functools
import os
import sys

import torch
from transformers import PreTrainedModel
from transformers.utils import ModelOutput

from .card_lineage_utils import keep_lineage_card, model_card
from .pruning_lineage_utils import HeadPruningMixin


class LineagePreTrainedModel(HeadPruningMixin, PreTrainedModel):
    """Base of every family's ``PreTrainedModel``.

    What it adds to transformers' base is what makes a saved folder self-sufficient: ``save_pretrained`` writes an
    ``auto_map`` for *every* Auto class of the family (not only the one the saved class was registered under), so
    ``AutoModelForMaskedLM.from_pretrained(folder, trust_remote_code=True)`` works on a folder saved from the
    pre-training model, and it writes a model card when the folder has none, which ``push_to_hub`` uploads in place of
    transformers' generic card (``card_lineage_utils``). ``prune_heads`` comes from ``HeadPruningMixin``
    (``pruning_lineage_utils``).

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


def output_flags_from_config(forward):
    """For a forward under transformers' ``capture_outputs``, which takes ``output_attentions``,
    ``output_hidden_states`` and ``return_dict`` from the call's keywords and falls back on the config only where one
    is absent: a head passes them on as its caller gave them, None meaning "as the config says", so the None ones are
    dropped here, before ``capture_outputs`` reads them."""

    @functools.wraps(forward)
    def with_flags(self, *args, **kwargs):
        for name in ("output_attentions", "output_hidden_states", "return_dict"):
            if name in kwargs and kwargs[name] is None:
                del kwargs[name]
        return forward(self, *args, **kwargs)

    return with_flags


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


def check_attention_mask(attention_mask: torch.Tensor | None, shape: torch.Size, past_length=0,
                         over_cache: bool = False) -> None:
    """``attention_mask`` is (B, T) over the input tokens or, with ``over_cache``, (B, past + T) over the cached and
    new tokens; or 4-D, (B or 1, 1 or heads, T, keys), a mask already in the form the attention takes (transformers'
    convention: its mask builders pass a 4-D mask on as it is), boolean (True where a query may attend to a key) or
    additive float (0 there, a large negative number elsewhere). A 4-D mask of integers is refused: added to the
    scores, its 1s would mask nothing."""
    if attention_mask is None:
        return
    if attention_mask.dim() == 4:
        if attention_mask.dtype != torch.bool and not attention_mask.is_floating_point():
            raise ValueError(
                f"A 4-D attention_mask goes to the attention as it is: give it as booleans (True where a query may "
                f"attend to a key) or as an additive float mask (0 there, a large negative number elsewhere), not "
                f"{attention_mask.dtype}"
            )
        if attention_mask.shape[0] not in (1, shape[0]) or attention_mask.shape[2] != shape[1]:
            raise ValueError(
                f"A 4-D attention_mask has shape (batch or 1, 1 or heads, query length, key length); got "
                f"{tuple(attention_mask.shape)} for input_ids of shape {tuple(shape)}"
            )
        return
    # Over the cache: past + T is compared only where past_length is a Python int (compiled with a static cache it is
    # a tensor, which no Python branch reads).
    if over_cache and attention_mask.dim() == 2 and attention_mask.shape[0] == shape[0] and (
        not isinstance(past_length, int) or attention_mask.shape[1] == past_length + shape[1]
    ):
        return
    check_same_shape(attention_mask, shape, "attention_mask", "input_ids")


def mask_over_cache(attention_mask: torch.Tensor | None, length: int, past_length) -> torch.Tensor | None:
    """A 2-D mask over the ``length`` new tokens only, given with a cache, extended over the cached tokens (they were
    real tokens); any other mask as it is. Only where ``past_length`` is a Python int: compiled with a static cache
    it is a tensor, no Python branch reads it, and generate() gives a mask over every token there."""
    if (attention_mask is not None and attention_mask.dim() == 2 and attention_mask.shape[1] == length
            and isinstance(past_length, int) and past_length):
        return torch.nn.functional.pad(attention_mask, (past_length, 0), value=1)
    return attention_mask


def check_same_shape(tensor: torch.Tensor | None, reference_shape: torch.Size, name: str, reference_name: str) -> None:
    if tensor is not None and tensor.shape != reference_shape:
        raise ValueError(
            f"{name} has shape {tuple(tensor.shape)} but {reference_name} has shape {tuple(reference_shape)}"
        )


def config_flag(value, default):
    return default if value is None else value


def tuple_or_dict(output: ModelOutput, return_dict, config):
    return output if config_flag(return_dict, config.return_dict) else output.to_tuple()


# CPU autocast runs an LSTM in its lower precision, which oneDNN computes only on a CPU with native support for it
# (bf16: AVX512-BF16 or AMX; fp16: AVX512-FP16 or AMX-FP16). Elsewhere (AMD before Zen 4, Intel before Cooper Lake) it
# cannot even build the kernel ("could not create a primitive descriptor for the LSTM forward propagation
# primitive"), so the LSTMs step out of autocast there and run in float32; the rest of the model stays under it.
_CPU_LSTM_PROBES = {torch.bfloat16: "_is_mkldnn_bf16_supported", torch.float16: "_is_mkldnn_fp16_supported"}


@functools.cache
def cpu_lstm_runs_in(dtype: torch.dtype) -> bool:
    """Whether this CPU's oneDNN runs an LSTM in ``dtype`` (float32 always)."""
    probe = _CPU_LSTM_PROBES.get(dtype)
    if probe is None:
        return True
    try:
        return bool(getattr(torch.ops.mkldnn, probe)())
    except (AttributeError, RuntimeError):
        return False


def lstm_autocast(x: torch.Tensor, state=None):
    """``(context, x, state)`` to run an LSTM on input ``x`` from ``state`` (a tuple of tensors, or None) in: as they
    are, unless CPU autocast would give the LSTM a precision this CPU cannot run it in (``cpu_lstm_runs_in``); then
    autocast off around the LSTM, and ``x`` and ``state`` in float32::

        context, x, state = lstm_autocast(x, state)
        with context:
            out, state = self.lstm(x, state)
    """
    if (x.device.type != "cpu" or not torch.is_autocast_enabled("cpu")
            or cpu_lstm_runs_in(torch.get_autocast_dtype("cpu"))):
        return contextlib.nullcontext(), x, state
    return (torch.autocast("cpu", enabled=False), x.float(),
            None if state is None else tuple(tensor.float() for tensor in state))
