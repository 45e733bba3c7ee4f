"""Pretraining data pieces: BERT's masked-LM collator and next-sentence pairs, packing into blocks, causal-LM
batches; GPT's fine-tuning input transformations.

The names below are imported from their modules on first use (PEP 562): the collators import torch, and importing
one light module of this folder (``languages``, ``readers``) runs this file first."""

import importlib

# Where each public name lives (the module in this folder).
_PUBLIC = {
    "causal_lm": ["DataCollatorForCausalLM"],
    "gpt_tasks": ["DataCollatorForGPTTasks", "add_gpt_task_tokens", "format_classification", "format_entailment",
                  "format_multiple_choice", "format_similarity", "set_gpt_task_template"],
    "masked_lm": ["DataCollatorForMaskedLM", "mask_tokens"],
    "packing": ["pack_into_blocks"],
    "next_sentence": ["create_next_sentence_examples", "documents_from_text", "next_sentence_dataset",
                      "next_sentence_examples_from_ids", "truncate_seq_pair"],
}
_MODULE_OF = {name: module for module, names in _PUBLIC.items() for name in names}


def __getattr__(name):
    if name in _MODULE_OF:
        value = getattr(importlib.import_module(f".{_MODULE_OF[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_MODULE_OF})


__all__ = sorted(_MODULE_OF)
