"""The pretrained checkpoints shipped inside the package: one Hugging Face folder per family, pretrained once on the
whole WikiText-2 training text under one equal compute budget (``hf-lineage checkpoints build``; each folder's
``README.md`` is its model card: data, license, command, budget, words seen, loss curve, validation perplexity, seed).

    >>> import hf_lineage
    >>> from transformers import AutoModel
    >>> model = AutoModel.from_pretrained(hf_lineage.checkpoints.path("bert"))    # doctest: +SKIP

``hf-lineage lineage`` fine-tunes these by default (``--pretrain`` pretrains anew). The folders are data: weights,
config, tokenizer, card, generation config and ``pretraining.json``, and no code. They load through the model types
``import hf_lineage`` registers; saving or pushing a loaded model writes the code from ``hf_lineage.models`` and the
``auto_map`` naming it, so that copy loads with ``trust_remote_code`` alone. This module only finds the folders (every
registered family ships one) and imports only the registry; ``hf_lineage.shipping`` (above the lineage) pretrains them
(``shipping.build``) and is ``hf-lineage checkpoints`` (``shipping.cli``).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..registry import FAMILIES as _REGISTERED

HERE = Path(__file__).resolve().parent
# Every family ships a checkpoint, in the registry's (lineage) order: the count-based root first.
FAMILIES = tuple(_REGISTERED)


def path(family: str) -> Path:
    """The shipped checkpoint folder of ``family`` (``svd``, ``nnlm``, ``word2vec``, ``elmo``, ``gpt``, ``bert``),
    ready for ``Auto*.from_pretrained`` (after ``import hf_lineage``) and ``push_to_hub``.

        >>> hf_lineage.checkpoints.path("gpt").name
        'gpt'
    """
    if family not in FAMILIES:
        raise ValueError(f"no shipped checkpoint for {family!r}; shipped: {', '.join(FAMILIES)}")
    folder = HERE / family
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"the shipped {family} checkpoint is missing from {folder} (a broken install?); "
                                "`hf-lineage checkpoints build` rebuilds it")
    return folder


def available() -> list[str]:
    """The families whose checkpoint is installed."""
    return [family for family in FAMILIES if (HERE / family / "config.json").is_file()]


def training_record(family: str) -> dict:
    """How the shipped ``family`` checkpoint was pretrained (``pretraining.json``: command, budget, words seen,
    validation loss and perplexity, loss curve, seed, machine), as the lineage report shows it."""
    return json.loads((path(family) / "pretraining.json").read_text())
