"""Modeling pieces shared by every lineage family: the common PreTrainedModel base, input checks, losses.

This file is copied next to a saved model together with the family's modeling file (transformers follows
same-folder ``from .x import`` lines), so it imports only torch, transformers and same-folder siblings.
"""

import os
import sys

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel

# Cited in model cards, one line per family.
PAPERS = {
    "lineage-bert": "Devlin et al. (2018), BERT: Pre-training of Deep Bidirectional Transformers for Language "
    "Understanding. https://arxiv.org/abs/1810.04805",
}


class LineagePreTrainedModel(PreTrainedModel):
    """Base of every family's ``PreTrainedModel``.

    What it adds to transformers' base is what makes a saved folder self-sufficient: ``save_pretrained`` writes an
    ``auto_map`` for *every* Auto class of the family (not only the one the saved class was registered under), so
    ``AutoModelForMaskedLM.from_pretrained(folder, trust_remote_code=True)`` works on a folder saved from the
    pre-training model, and it writes a model card when the folder has none.

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


def model_card(model) -> str:
    """A short model card: what the model is, its sizes, and how to load it with or without hf_lineage."""
    config = model.config
    sizes = {
        k: v
        for k, v in config.to_diff_dict().items()
        if isinstance(v, (int, float, str, bool)) and not k.startswith("_") and k not in ("transformers_version",)
    }
    rows = "\n".join(f"| `{k}` | `{v}` |" for k, v in sorted(sizes.items()))
    base = getattr(config, "_name_or_path", "") or "trained from scratch"
    n_params = sum(p.numel() for p in model.parameters())
    return f"""---
library_name: transformers
tags:
- hf-lineage
- {config.model_type}
---

# {type(model).__name__}

A `{config.model_type}` model from [hf_lineage](https://pypi.org/project/hf-lineage/): the lineage of NLP
pretraining as Hugging Face models. {n_params:,} parameters. Base model: {base}.

Paper: {PAPERS.get(config.model_type, "see the hf_lineage documentation")}

## Use

```python
# with hf_lineage installed
import hf_lineage
from transformers import AutoModel, AutoTokenizer
model = AutoModel.from_pretrained("<this folder or repo>")

# without it: the modeling code ships with the weights
model = AutoModel.from_pretrained("<this folder or repo>", trust_remote_code=True)
```

## Configuration

| field | value |
|---|---|
{rows}
"""


def check_ids_in_range(ids: torch.Tensor, upper: int, name: str, config_field: str) -> None:
    """Raise a ValueError naming the problem instead of an index error from inside ``nn.Embedding``."""
    if ids.numel() == 0:
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
