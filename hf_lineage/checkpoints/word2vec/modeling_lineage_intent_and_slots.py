"""What every family's joint intent-classification and slot-filling head (``<Family>ForIntentAndSlots``) shares:
its output, its label maps and its loss (Chen, Zhuo & Wang 2019, *BERT for Joint Intent Classification and Slot
Filling*, arXiv:1902.10909).

One model reads an utterance once and gives a label for the whole of it (the intent, e.g. ``atis_flight``) and a
BIO tag per word (the slots, e.g. ``B-fromloc.city_name``); it is trained on the sum of the two cross-entropies.

Label maps, both in the config so ``save_pretrained`` / ``from_pretrained`` keep them:

* slots: transformers' own ``id2label`` / ``label2id`` (``num_labels`` = number of slot tags), as a token
  classifier has them;
* intents: ``config.intent_labels``, the intent names in id order (``intent_logits.argmax(-1)`` indexes it).

``config.slot_loss_weight`` (default 1) weighs the slot loss: loss = intent CE + weight · slot CE.

This file is copied next to a saved model with the family's modeling file, so it imports only torch, transformers
and same-folder siblings.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from transformers.utils import ModelOutput


@dataclass
class IntentAndSlotsOutput(ModelOutput):
    """Output of the ``*ForIntentAndSlots`` heads.

    ``intent_logits`` (B, num_intents); ``slot_logits`` (B, T, num_slot_tags), one row per token (a word's tag is
    read at the token its family labels: the first sub-token for BERT, the last for GPT, the one token of a
    word-level tokenizer). ``loss`` = ``intent_loss`` + ``slot_loss_weight`` · ``slot_loss`` (+ GPT's auxiliary
    ``lm_loss`` · ``lm_loss_weight`` in training, as its other fine-tuning heads), given labels."""

    loss: torch.Tensor | None = None
    intent_logits: torch.Tensor | None = None
    slot_logits: torch.Tensor | None = None
    intent_loss: torch.Tensor | None = None
    slot_loss: torch.Tensor | None = None
    lm_loss: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


# What Trainer must leave out of the predictions it gathers (scalars and per-layer states).
INTENT_AND_SLOTS_LOSS_KEYS = ["intent_loss", "slot_loss", "lm_loss", "hidden_states", "attentions"]


def intent_labels_of(config) -> list[str]:
    """The intent names in id order (``config.intent_labels``), with a clear error when a config has none."""
    names = getattr(config, "intent_labels", None)
    if not names:
        raise ValueError("An intent-and-slots model needs config.intent_labels, the intent names in id order (e.g. "
                         "from_pretrained(path, ...) then config.intent_labels = ['atis_flight', ...]); the slot tags "
                         "are config.id2label")
    if len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"config.intent_labels must be distinct non-empty names, got {names!r}")
    return list(names)


def intent_and_slots_loss(config, intent_logits, slot_logits, intent_labels=None, slot_labels=None):
    """(loss, intent_loss, slot_loss): intent CE (mean over the batch) + ``slot_loss_weight`` · slot CE (mean over
    the labelled tokens, -100 ignored). Either label may be None (its loss is then None and left out of the sum);
    both None gives (None, None, None)."""
    intent_loss = slot_loss = None
    if intent_labels is not None:
        intent_labels = intent_labels.view(-1).to(intent_logits.device)
        if intent_labels.shape[0] != intent_logits.shape[0]:
            raise ValueError(f"intent_labels has {intent_labels.shape[0]} items for a batch of "
                             f"{intent_logits.shape[0]}")
        check_label_range(intent_labels, intent_logits.shape[-1], "intent_labels", "len(config.intent_labels)")
        intent_loss = F.cross_entropy(intent_logits.float(), intent_labels)
    if slot_labels is not None:
        if slot_labels.shape != slot_logits.shape[:2]:
            raise ValueError(f"slot_labels has shape {tuple(slot_labels.shape)}, the tokens "
                             f"{tuple(slot_logits.shape[:2])}")
        slot_labels = slot_labels.to(slot_logits.device)
        check_label_range(slot_labels, slot_logits.shape[-1], "slot_labels", "num_labels")
        labelled = slot_labels != -100
        if bool(labelled.any()):
            slot_loss = F.cross_entropy(slot_logits[labelled].float(), slot_labels[labelled])
        else:  # no word left to tag (all cut off): nothing to learn, and a gradient of zero
            slot_loss = slot_logits.sum() * 0.0
    parts = [part for part in (intent_loss, None if slot_loss is None else _weight(config) * slot_loss)
             if part is not None]
    loss = sum(parts[1:], parts[0]) if parts else None
    return loss, intent_loss, slot_loss


def _weight(config) -> float:
    weight = getattr(config, "slot_loss_weight", None)
    return 1.0 if weight is None else float(weight)


def check_label_range(labels: torch.Tensor, upper: int, name: str, config_field: str) -> None:
    valid = labels[labels != -100]
    if valid.numel() and (int(valid.min()) < 0 or int(valid.max()) >= upper):
        raise ValueError(f"{name} contain {int(valid.max()) if int(valid.max()) >= upper else int(valid.min())}, "
                         f"but the model has {config_field}={upper}")


__all__ = ["INTENT_AND_SLOTS_LOSS_KEYS", "IntentAndSlotsOutput", "intent_and_slots_loss", "intent_labels_of"]
