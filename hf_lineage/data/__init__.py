"""Pretraining data pieces (BERT: masked-LM collator and next-sentence pairs)."""

from .masked_lm import DataCollatorForMaskedLM, mask_tokens
from .next_sentence import (
    create_next_sentence_examples,
    documents_from_text,
    next_sentence_dataset,
    next_sentence_examples_from_ids,
    truncate_seq_pair,
)

__all__ = [
    "DataCollatorForMaskedLM",
    "create_next_sentence_examples",
    "documents_from_text",
    "mask_tokens",
    "next_sentence_dataset",
    "next_sentence_examples_from_ids",
    "truncate_seq_pair",
]
