"""BERT masked-LM masking, as in the paper and Google's ``create_pretraining_data.py``.

Per sequence the original script predicts

    num_to_predict = min(max_predictions_per_seq, max(1, round(num_tokens * masked_lm_prob)))

positions, where ``num_tokens`` is the length of the (unpadded) sequence *including* [CLS]/[SEP]
-- we keep exactly that formula.  The positions are drawn uniformly without replacement from the
eligible ones (never special tokens, never padding).  Of the chosen positions 80 % become [MASK],
10 % a random token, 10 % stay unchanged; ``labels`` hold the original id there and -100 elsewhere.

With whole-word masking the shuffled units are words; the budget still counts *tokens* and a word
that would overflow it is skipped (not truncated), as in the original.  The 80/10/10 decision is
then made per token, also as in the original.

Two deliberate differences from the original script:

* the random replacement is drawn from the non-special vocabulary (the original drew from the whole
  vocab, [CLS]/[SEP]/[PAD] included);
* ``max_predictions_per_seq`` defaults to ``None`` (no cap).  Google used 20 for 128-token
  sequences and 80 for 512-token sequences; pass those to reproduce it exactly.

Reproducibility: each example may carry an integer ``"mask_seed"``; its masking is then drawn from a
private ``torch.Generator`` seeded with it, so it is independent of batch composition, order,
padding and the number of processes.  Note ``Trainer`` drops columns its model does not accept, so
use ``TrainingArguments(remove_unused_columns=False)`` to keep ``mask_seed`` / ``word_ids``.
A fixed ``mask_seed`` gives *static* masking (as original BERT, which instead duplicated the data
``dupe_factor`` times); derive it from (epoch, index) for fresh masks every epoch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

IGNORE_INDEX = -100
# Feature columns that only steer the masking and never reach the model.
HELPER_COLUMNS = ("word_ids", "special_tokens_mask", "mask_seed", "seed")


def _as_long(x: Any) -> torch.Tensor:
    # Sets / ranges are not accepted by torch.as_tensor directly.
    if isinstance(x, (set, frozenset, range)):
        x = sorted(x)
    return torch.as_tensor(x, dtype=torch.long)


def mask_tokens(
    input_ids: Sequence[int] | torch.Tensor,
    *,
    special_ids: Iterable[int] | torch.Tensor,
    mask_id: int,
    vocab_ids_for_random: Sequence[int] | torch.Tensor,
    generator: torch.Generator | None = None,
    mlm_probability: float = 0.15,
    max_predictions_per_seq: int | None = None,
    mask_replace_prob: float = 0.8,
    random_replace_prob: float = 0.1,
    word_ids: Sequence[int | None] | torch.Tensor | None = None,
    attention_mask: Sequence[int] | torch.Tensor | None = None,
    special_tokens_mask: Sequence[int] | torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mask one sequence BERT-style; return ``(masked_input_ids, labels)`` as 1-D long tensors.

    ``word_ids`` enables whole-word masking: consecutive eligible tokens sharing a word id form one
    unit (``None`` / negative ids are never grouped).  ``attention_mask`` zeros mark padding (not
    eligible, not counted in ``num_tokens``); ``special_tokens_mask`` ones mark extra positions
    that must never be chosen.

    The random draws (one permutation, then ``k`` uniforms and ``k`` vocab indices) depend only on
    the unpadded sequence, so the same generator state always gives the same masking.

    >>> g = torch.Generator().manual_seed(0)
    >>> ids, labels = mask_tokens([2, 10, 11, 12, 13, 3], special_ids={0, 1, 2, 3, 4}, mask_id=4,
    ...                           vocab_ids_for_random=range(5, 20), generator=g)
    >>> int((labels != -100).sum())  # max(1, round(6 * 0.15)) = 1
    1
    """
    ids = _as_long(input_ids)
    n = ids.numel()
    pad = torch.zeros(n, dtype=torch.bool) if attention_mask is None else _as_long(attention_mask) == 0
    eligible = ~pad & ~torch.isin(ids, _as_long(special_ids))
    if special_tokens_mask is not None:
        eligible &= _as_long(special_tokens_mask) == 0

    num_tokens = int((~pad).sum())
    num_to_predict = max(1, int(round(num_tokens * mlm_probability)))  # round-half-even as py2/py3 round
    if max_predictions_per_seq is not None:
        num_to_predict = min(max_predictions_per_seq, num_to_predict)

    # Units: each eligible token starts a new unit unless it continues the previous token's word.
    starts = eligible.clone()
    if word_ids is not None:
        w = torch.tensor([-1 if x is None else int(x) for x in word_ids], dtype=torch.long)
        same_word = torch.zeros(n, dtype=torch.bool)
        same_word[1:] = (w[1:] == w[:-1]) & (w[1:] >= 0) & eligible[:-1]
        starts &= ~same_word
    unit_of = torch.cumsum(starts.long(), 0) - 1  # unit index of each eligible token
    positions = eligible.nonzero().squeeze(1)
    n_units = int(starts.sum())

    order = torch.randperm(n_units, generator=generator)  # uniform shuffle of candidate units
    if word_ids is None:
        chosen_units = order[:num_to_predict]
    else:
        # Greedy over the shuffled words, skipping any that would exceed the token budget.
        # This is a loop over words (not tokens) and stops as soon as the budget is met.
        lengths = torch.bincount(unit_of[positions], minlength=n_units)[order].tolist()
        keep, used = [], 0
        for j, length in enumerate(lengths):
            if used >= num_to_predict:
                break
            if used + length <= num_to_predict:
                keep.append(j)
                used += length
        chosen_units = order[keep]
    chosen = torch.zeros(n, dtype=torch.bool)
    chosen[positions] = torch.isin(unit_of[positions], chosen_units)

    labels = torch.full_like(ids, IGNORE_INDEX)
    labels[chosen] = ids[chosen]

    # 80/10/10 per chosen token: one uniform decides [MASK] / random / keep.
    idx = chosen.nonzero().squeeze(1)
    k = idx.numel()
    u = torch.rand(k, generator=generator)
    vocab = _as_long(vocab_ids_for_random)
    random_tokens = vocab[torch.randint(len(vocab), (k,), generator=generator)]
    out = ids.clone()
    to_mask = u < mask_replace_prob
    to_random = ~to_mask & (u < mask_replace_prob + random_replace_prob)
    out[idx[to_mask]] = mask_id
    out[idx[to_random]] = random_tokens[to_random]
    return out, labels


@dataclass
class DataCollatorForMaskedLM:
    """Pad a list of BERT features and apply BERT masking; usable by ``Trainer`` and ``DataLoader``.

    Features are dicts with ``input_ids`` and optionally ``token_type_ids``, ``attention_mask``,
    ``next_sentence_label`` (passed through), ``word_ids`` (whole-word grouping),
    ``special_tokens_mask`` and ``mask_seed`` (per-example RNG seed).  Helper columns are dropped.

    Output: ``input_ids``, ``attention_mask``, ``labels`` (-100 where not predicted),
    ``token_type_ids`` (if any feature has them), ``next_sentence_label`` (if present); all long.

    >>> collator = DataCollatorForMaskedLM(tokenizer, seed=0)              # doctest: +SKIP
    >>> batch = collator([{"input_ids": [2, 10, 11, 3], "mask_seed": 7}])  # doctest: +SKIP
    >>> sorted(batch)                                                      # doctest: +SKIP
    ['attention_mask', 'input_ids', 'labels']

    Without ``mask_seed`` the collator's own generator is used (seeded by ``seed``; offset by the
    worker id inside ``DataLoader`` workers so that workers differ), else the global torch RNG.
    """

    tokenizer: Any
    mlm_probability: float = 0.15
    max_predictions_per_seq: int | None = None
    mask_replace_prob: float = 0.8
    random_replace_prob: float = 0.1
    whole_word_mask: bool = False
    pad_to_multiple_of: int | None = None
    seed: int | None = None
    return_tensors: str = "pt"
    _generator: torch.Generator | None = field(default=None, init=False, repr=False)

    def __post_init__(self):
        if self.tokenizer.mask_token_id is None or self.tokenizer.pad_token_id is None:
            raise ValueError("The tokenizer needs a mask token and a pad token for masked-LM collation.")
        if not 0 <= self.mlm_probability <= 1:
            raise ValueError("mlm_probability must be in [0, 1].")
        if min(self.mask_replace_prob, self.random_replace_prob) < 0 or self.mask_replace_prob + self.random_replace_prob > 1:
            raise ValueError("mask_replace_prob and random_replace_prob must be >= 0 and sum to <= 1.")
        if self.return_tensors != "pt":
            raise ValueError("Only return_tensors='pt' is supported.")
        vocab_size = len(self.tokenizer)
        self._special_ids = _as_long(sorted(set(self.tokenizer.all_special_ids)))
        all_ids = torch.arange(vocab_size)
        self._random_ids = all_ids[~torch.isin(all_ids, self._special_ids)]
        if self.whole_word_mask:
            # Lookup table: is this vocab entry a WordPiece continuation ("##xx")?
            tokens = self.tokenizer.convert_ids_to_tokens(list(range(vocab_size)))
            self._is_continuation = torch.tensor([t is not None and t.startswith("##") for t in tokens])

    def _shared_generator(self) -> torch.Generator | None:
        if self.seed is None:
            return None  # global torch RNG
        if self._generator is None:
            info = torch.utils.data.get_worker_info()
            self._generator = torch.Generator().manual_seed(self.seed + (info.id if info is not None else 0))
        return self._generator

    def _word_ids(self, feature: dict, ids: torch.Tensor) -> Any:
        if not self.whole_word_mask:
            return None
        if feature.get("word_ids") is not None:
            return feature["word_ids"]
        # "##" fallback: a continuation piece gets the word id of the token before it.
        cont = self._is_continuation[ids.clamp(0, len(self._is_continuation) - 1)]
        return torch.cumsum((~cont).long(), 0)

    def mask_example(self, feature: dict) -> tuple[torch.Tensor, torch.Tensor]:
        """Mask one feature; returns unpadded ``(input_ids, labels)``."""
        ids = _as_long(feature["input_ids"])
        seed = feature.get("mask_seed")
        generator = torch.Generator().manual_seed(int(seed)) if seed is not None else self._shared_generator()
        return mask_tokens(
            ids,
            special_ids=self._special_ids,
            mask_id=self.tokenizer.mask_token_id,
            vocab_ids_for_random=self._random_ids,
            generator=generator,
            mlm_probability=self.mlm_probability,
            max_predictions_per_seq=self.max_predictions_per_seq,
            mask_replace_prob=self.mask_replace_prob,
            random_replace_prob=self.random_replace_prob,
            word_ids=self._word_ids(feature, ids),
            attention_mask=feature.get("attention_mask"),
            special_tokens_mask=feature.get("special_tokens_mask"),
        )

    def __call__(self, features: list[dict]) -> dict[str, torch.Tensor]:
        masked = [self.mask_example(f) for f in features]
        attention = [
            _as_long(f["attention_mask"]) if f.get("attention_mask") is not None else torch.ones(len(ids), dtype=torch.long)
            for f, (ids, _) in zip(features, masked)
        ]
        max_len = max(len(ids) for ids, _ in masked)
        if self.pad_to_multiple_of:
            max_len = math.ceil(max_len / self.pad_to_multiple_of) * self.pad_to_multiple_of
        left = getattr(self.tokenizer, "padding_side", "right") == "left"

        def pad(rows: list[torch.Tensor], value: int) -> torch.Tensor:
            out = torch.full((len(rows), max_len), value, dtype=torch.long)
            for i, row in enumerate(rows):
                if left:
                    out[i, max_len - len(row):] = row
                else:
                    out[i, : len(row)] = row
            return out

        batch = {
            "input_ids": pad([ids for ids, _ in masked], self.tokenizer.pad_token_id),
            "attention_mask": pad(attention, 0),
            "labels": pad([labels for _, labels in masked], IGNORE_INDEX),
        }
        if any(f.get("token_type_ids") is not None for f in features):
            batch["token_type_ids"] = pad(
                [_as_long(f.get("token_type_ids", [0] * len(ids))) for f, (ids, _) in zip(features, masked)], 0
            )
        if any("next_sentence_label" in f for f in features):
            batch["next_sentence_label"] = _as_long([int(f["next_sentence_label"]) for f in features])
        return batch
