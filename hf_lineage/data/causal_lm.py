"""Batching for causal language models (GPT's pre-training, and any left-to-right LM).

The model shifts the labels itself (position t predicts token t+1), so ``labels`` are the inputs, with -100 where
nothing is to be predicted (padding).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class DataCollatorForCausalLM:
    """Stacks examples ``{"input_ids": [...]}`` into ``input_ids`` and ``labels`` (B, T).

    Packed blocks (``pack_into_blocks``) all have the same length and need no ``attention_mask``; rows of unequal
    length are right-padded with ``pad_token_id`` (label -100) and get an ``attention_mask``. Only ``input_ids`` is
    read: other columns (the engine's ``mask_seed``) are dropped.

    >>> DataCollatorForCausalLM(pad_token_id=0)([{"input_ids": [5, 6, 7]}, {"input_ids": [8]}])["labels"]
    tensor([[   5,    6,    7],
            [   8, -100, -100]])
    """

    pad_token_id: int = 0

    def __call__(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        rows = [list(e["input_ids"]) for e in examples]
        T = max(len(r) for r in rows)
        input_ids = torch.full((len(rows), T), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros(len(rows), T, dtype=torch.long)
        for i, row in enumerate(rows):
            input_ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
            attention_mask[i, : len(row)] = 1
        batch = {"input_ids": input_ids, "labels": input_ids.masked_fill(attention_mask == 0, -100)}
        if not bool(attention_mask.all()):
            batch["attention_mask"] = attention_mask
        return batch
