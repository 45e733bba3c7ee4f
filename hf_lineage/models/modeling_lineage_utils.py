"""What every lineage model is built on: the common ``PreTrainedModel`` base, the question-answering models' mixin,
and what every forward does at its two ends: check its inputs, and return a tuple or a ``ModelOutput``.

This file is copied next to a saved model with the modeling files that import it (transformers follows same-folder
``from .x import`` lines), so it imports only torch, transformers and same-folder siblings.
"""

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


def config_flag(value, default):
    return default if value is None else value


def tuple_or_dict(output: ModelOutput, return_dict, config):
    return output if config_flag(return_dict, config.return_dict) else output.to_tuple()
