"""Pretraining data pieces: BERT's masked-LM collator and next-sentence pairs, packing into blocks, causal-LM
batches; GPT's fine-tuning input transformations."""

from .causal_lm import DataCollatorForCausalLM
from .gpt_tasks import (
    DataCollatorForGPTTasks,
    add_gpt_task_tokens,
    format_classification,
    format_entailment,
    format_multiple_choice,
    format_similarity,
    set_gpt_task_template,
)
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
    "DataCollatorForCausalLM",
    "DataCollatorForGPTTasks",
    "DataCollatorForMaskedLM",
    "add_gpt_task_tokens",
    "create_next_sentence_examples",
    "documents_from_text",
    "format_classification",
    "format_entailment",
    "format_multiple_choice",
    "format_similarity",
    "mask_tokens",
    "next_sentence_dataset",
    "next_sentence_examples_from_ids",
    "pack_into_blocks",
    "set_gpt_task_template",
    "truncate_seq_pair",
]
