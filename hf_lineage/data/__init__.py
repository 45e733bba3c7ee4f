"""Pretraining data pieces: BERT's masked-LM collator and next-sentence pairs, packing into blocks."""

from .masked_lm import DataCollatorForMaskedLM, mask_tokens
from .packing import pack_into_blocks
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
    "pack_into_blocks",
    "truncate_seq_pair",
]
