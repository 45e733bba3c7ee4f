"""GPT's task-specific input transformations (Radford et al., 2018, section 3.3 and figure 1).

GPT fine-tunes without task-specific architectures: structured inputs are turned into token sequences the
pre-trained model can read, framed by a start token ``<s>`` and an extract token ``<e>`` whose final state the
classifier reads, with a delimiter ``$`` between the parts:

==================  ==========================================================================
classification      ``<s> text <e>``
entailment          ``<s> premise $ hypothesis <e>``
similarity          ``<s> a $ b <e>`` and ``<s> b $ a <e>`` (both orders; the heads sum the two states)
multiple choice     ``<s> context $ answer_k <e>`` for each answer k (softmax over the answers)
==================  ==========================================================================

Example::

    >>> ids = add_gpt_task_tokens(tokenizer, model)     # adds <s> $ <e>, resizes the embeddings
    >>> format_entailment(tokenizer, "A man sleeps.", "A person rests.")["input_ids"]
    [<s>, ...premise..., $, ...hypothesis..., <e>]
    >>> batch = DataCollatorForGPTTasks(tokenizer.pad_token_id)([{**example, "label": 1}, ...])
    >>> set_gpt_task_template(tokenizer)                  # tokenizer(premise, hypothesis) gives the same ids
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

# The paper's names for its three added tokens, as they appear in the tokenizer.
GPT_TASK_TOKENS = {"start": "<s>", "delimiter": "$", "extract": "<e>"}


def add_gpt_task_tokens(tokenizer, model=None) -> dict[str, int]:
    """Add ``<s>``, ``$`` and ``<e>`` to ``tokenizer`` as special tokens (never split, skipped when decoding with
    ``skip_special_tokens``) and resize ``model``'s token embeddings (and the tied LM head) to the new vocabulary;
    the new rows are learned during fine-tuning. Returns their ids: ``{"start": .., "delimiter": .., "extract": ..}``.

    Calling it again changes nothing. A token already in the vocabulary (byte-level BPE has ``$``) keeps its id.
    """
    tokenizer.add_special_tokens({"extra_special_tokens": list(GPT_TASK_TOKENS.values())},
                                 replace_extra_special_tokens=False)
    if model is not None and model.get_input_embeddings().num_embeddings < len(tokenizer):
        model.resize_token_embeddings(len(tokenizer))
    return task_token_ids(tokenizer)


def task_token_ids(tokenizer) -> dict[str, int]:
    """Ids of ``<s>``, ``$`` and ``<e>``; a ValueError if ``add_gpt_task_tokens`` was not called."""
    ids = {role: tokenizer.convert_tokens_to_ids(token) for role, token in GPT_TASK_TOKENS.items()}
    if any(i is None or i == tokenizer.unk_token_id for i in ids.values()):
        raise ValueError("The tokenizer lacks GPT's task tokens <s> $ <e>: call add_gpt_task_tokens(tokenizer, model)")
    return ids


def set_gpt_task_template(tokenizer) -> None:
    """Make the tokenizer apply the transformation itself: ``tokenizer(x)`` gives ``<s> x <e>`` and
    ``tokenizer(a, b)`` ``<s> a $ b <e>`` (a ``TemplateProcessing`` post-processor; ``add_special_tokens=False``
    still gives the bare text). It is saved with the tokenizer, so a fine-tuned folder used through
    ``pipeline("text-classification")`` — ``"text"`` or ``{"text": a, "text_pair": b}`` — reads its input as it was
    fine-tuned; a similarity model reads the other order itself (``LineageGPTConfig.pair_task``). Fast tokenizers
    only; call ``add_gpt_task_tokens`` first."""
    from tokenizers import processors

    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"{type(tokenizer).__name__} is not a fast (tokenizers) tokenizer: GPT's task template is a "
                         "tokenizers post-processor")
    ids = task_token_ids(tokenizer)
    # Templates read a piece starting with "$" as a sequence, so the delimiter goes in under another name.
    special = [{"id": f"[{role}]", "ids": [ids[role]], "tokens": [token]} for role, token in GPT_TASK_TOKENS.items()]
    tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="[start] $A [extract]", pair="[start] $A [delimiter] $B [extract]", special_tokens=special)


def _ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def _sequence(tokenizer, parts: list[str], max_length: int | None) -> list[int]:
    """``<s> part_1 $ part_2 ... <e>``, cutting the longest part from its end until it fits ``max_length``."""
    special = task_token_ids(tokenizer)
    pieces = [_ids(tokenizer, p) for p in parts]
    if max_length is not None:
        budget = max_length - len(pieces) - 1  # <s>, the delimiters and <e>
        if budget < len(pieces):
            raise ValueError(f"max_length={max_length} leaves no room for the text of {len(pieces)} part(s)")
        while sum(map(len, pieces)) > budget:
            max(pieces, key=len).pop()  # one token at a time from the end of the longest part
    ids = [special["start"]]
    for i, piece in enumerate(pieces):
        if i:
            ids.append(special["delimiter"])
        ids.extend(piece)
    return ids + [special["extract"]]


def format_classification(tokenizer, text: str, max_length: int | None = None) -> dict[str, list[int]]:
    """``<s> text <e>``."""
    ids = _sequence(tokenizer, [text], max_length)
    return {"input_ids": ids, "attention_mask": [1] * len(ids)}


def format_entailment(tokenizer, premise: str, hypothesis: str, max_length: int | None = None) -> dict:
    """``<s> premise $ hypothesis <e>``."""
    ids = _sequence(tokenizer, [premise, hypothesis], max_length)
    return {"input_ids": ids, "attention_mask": [1] * len(ids)}


def format_similarity(tokenizer, text_a: str, text_b: str, max_length: int | None = None) -> dict:
    """Both orders, ``[<s> a $ b <e>, <s> b $ a <e>]``: similarity has no inherent order, so the model reads both
    and ``LineageGPTForSequenceClassification`` sums the two representations (inputs of shape (B, 2, T))."""
    rows = [_sequence(tokenizer, [text_a, text_b], max_length), _sequence(tokenizer, [text_b, text_a], max_length)]
    return {"input_ids": rows, "attention_mask": [[1] * len(r) for r in rows]}


def format_multiple_choice(tokenizer, context: str, choices: list[str], max_length: int | None = None) -> dict:
    """One sequence per answer, ``<s> context $ answer_k <e>`` (the paper's [z; q; $; a_k]: put the question in
    ``context``); ``LineageGPTForMultipleChoice`` takes them as (B, num_choices, T)."""
    rows = [_sequence(tokenizer, [context, choice], max_length) for choice in choices]
    return {"input_ids": rows, "attention_mask": [[1] * len(r) for r in rows]}


@dataclass
class DataCollatorForGPTTasks:
    """Right-pads formatted examples into tensors: (B, T) for classification/entailment, (B, n, T) for similarity
    (n = 2 orders) and multiple choice (n options). ``label``/``labels`` become ``labels``: one per example, or
    one per token (token classification, padded with -100)."""

    pad_token_id: int = 0

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        nested = isinstance(examples[0]["input_ids"][0], list)
        rows = [r for e in examples for r in (e["input_ids"] if nested else [e["input_ids"]])]
        T = max(len(r) for r in rows)
        input_ids = torch.full((len(rows), T), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros(len(rows), T, dtype=torch.long)
        for i, row in enumerate(rows):
            input_ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
            attention_mask[i, : len(row)] = 1
        shape = (len(examples), -1, T) if nested else (len(examples), T)
        batch = {"input_ids": input_ids.view(shape), "attention_mask": attention_mask.view(shape)}
        labels = [e.get("labels", e.get("label")) for e in examples]
        if labels[0] is not None:
            if isinstance(labels[0], (list, tuple)):  # per-token labels
                padded = torch.full((len(labels), T), -100, dtype=torch.long)
                for i, row in enumerate(labels):
                    padded[i, : len(row)] = torch.tensor(row, dtype=torch.long)
                batch["labels"] = padded
            else:
                batch["labels"] = torch.tensor(labels)
        return batch
