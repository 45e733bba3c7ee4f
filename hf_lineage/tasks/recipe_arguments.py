"""The recipes' arguments, as transformers' example scripts have it (``run_ner.py``, ``run_glue.py``,
``run_translation.py``): three argument dataclasses parsed by ``HfArgumentParser`` — ``ModelArguments``,
``DataTrainingArguments`` and transformers' ``TrainingArguments`` / ``Seq2SeqTrainingArguments`` (``run_cli``, which
runs a recipe's ``main`` and turns bad input into one ``error: ...`` line, lives in ``command_line``).

Everything that can go wrong with the input (a missing or empty file, a malformed line, an unknown label, a model
whose family cannot do the task) is checked before the Trainer is built, so a failed run leaves no output
directory behind.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Optional

from transformers import HfArgumentParser, TrainingArguments

from ..models.configuration_lineage_utils import PAIR_ENCODINGS, TASK_HEADS
from .command_line import is_hub_error, run_cli  # noqa: F401 (their address before command_line)

# What each task calls itself in messages and model cards.
TASK_NAMES = {
    "sequence_labeling": "sequence labeling",
    "classification": "classification",
    "sentence_pairs": "sentence-pair classification",
    "generation": "generation",
    "question_answering": "extractive question answering",
    "multiple_choice": "multiple choice",
}


@dataclass
class ModelArguments:
    """Which model to fine-tune, and how much of it."""

    model_name_or_path: str = field(
        metadata={"help": "A lineage checkpoint: a local folder (e.g. from `hf-lineage pretrain`) or a Hub id."}
    )
    config_name: Optional[str] = field(default=None, metadata={"help": "Config to use instead of the model's."})
    tokenizer_name: Optional[str] = field(
        default=None, metadata={"help": "Tokenizer to use instead of the one saved with the model."}
    )
    decoder_model_name_or_path: Optional[str] = field(
        default=None,
        metadata={"help": "generation only: the decoder of an encoder-decoder (e.g. a lineage GPT checkpoint under a "
                          "BERT encoder). Default for an encoder (BERT): a BERT decoder from the same checkpoint."},
    )
    freeze_base: Optional[bool] = field(
        default=None,
        metadata={"help": "Train only the task layers on frozen pretrained features (the paper's 'feature-based' use) "
                          "instead of fine-tuning everything. `--freeze_base` or `--freeze_base true|false`; unset: "
                          "the family's default (ELMo frozen, as in the paper; every other family fine-tuned)."},
    )
    cache_frozen_features: bool = field(
        default=False,
        metadata={"help": "With a frozen base whose features come from a network (ELMo, and GPT and BERT with "
                          "--task_head scalar_mix): compute each sentence's layers once and reuse them every epoch, "
                          "and in later runs on the same weights from $HF_LINEAGE_CACHE/frozen-layers (at most 2 GiB "
                          "in memory; the head trains as before, only the frozen forward passes are saved)."},
    )
    task_head: Optional[str] = field(
        default=None,
        metadata={"help": "GPT and BERT, token and sequence classification: 'linear' (the papers' linear layer on the "
                          "last layer) or 'scalar_mix' (a learned scalar mix of all layers → the BiLSTM head of the "
                          "static-vector families and ELMo, each sentence of a pair read on its own: the lineage's "
                          "frozen cells). Default: the model config's (linear)."},
    )
    cache_dir: Optional[str] = field(default=None, metadata={"help": "Where Hub downloads are stored."})
    model_revision: str = field(default="main", metadata={"help": "Branch, tag or commit of a Hub model."})
    token: Optional[str] = field(default=None, metadata={"help": "Hub token (default: the stored login)."})
    trust_remote_code: bool = field(
        default=False, metadata={"help": "Allow a Hub checkpoint's own code (not needed with hf_lineage installed)."}
    )

    def __post_init__(self):
        if self.task_head not in (None, *TASK_HEADS):
            raise ValueError(f"--task_head must be one of {', '.join(TASK_HEADS)}, got {self.task_head!r}")

    def hub_kwargs(self) -> dict:
        return dict(cache_dir=self.cache_dir, revision=self.model_revision, token=self.token,
                    trust_remote_code=self.trust_remote_code)


@dataclass
class DataTrainingArguments:
    """Which data, and how it is cut to length. Task-specific fields say which recipe reads them."""

    dataset_name: Optional[str] = field(default=None, metadata={"help": "A dataset on the Hub (needs network)."})
    dataset_config_name: Optional[str] = field(default=None, metadata={"help": "Its configuration, e.g. 'sst2'."})
    train_file: Optional[str] = field(default=None, metadata={"help": "Training data (formats: see the docs)."})
    validation_file: Optional[str] = field(default=None, metadata={"help": "Evaluation data, same format."})
    test_file: Optional[str] = field(default=None, metadata={"help": "Prediction data, same format."})
    text_column_name: Optional[str] = field(
        default=None, metadata={"help": "Column with the text (classification) or the word list (labeling)."}
    )
    text_pair_column_name: Optional[str] = field(
        default=None, metadata={"help": "sentence pairs: column with the second sentence."}
    )
    label_column_name: Optional[str] = field(
        default=None, metadata={"help": "Column with the label (classification) or the tag list (labeling)."}
    )
    source_column: Optional[str] = field(default=None, metadata={"help": "generation: column with the input."})
    target_column: Optional[str] = field(default=None, metadata={"help": "generation: column with the output."})
    source_lang: Optional[str] = field(
        default=None, metadata={"help": "generation: source language; reads PREFIX.<source_lang> for a file PREFIX, "
                                        "or the 'translation' column's key."}
    )
    target_lang: Optional[str] = field(default=None, metadata={"help": "generation: target language, likewise."})
    conll_tag_column: int = field(
        default=3, metadata={"help": "sequence labeling, CoNLL-2003 files: 3 = NER (default), 2 = chunk, 1 = POS."}
    )
    conllu_column: str = field(default="upos", metadata={"help": "sequence labeling, CoNLL-U files: tag column."})
    trec_labels: str = field(
        default="coarse",
        metadata={"help": "classification, TREC files: 'coarse' (6 classes, e.g. DESC) or 'fine' (50, e.g. "
                          "DESC:manner)."},
    )
    metric: str = field(
        default="auto",
        metadata={"help": "sequence labeling: 'seqeval' (entity F1 over IOB tags), 'accuracy' (per token) or 'auto' "
                          "(seqeval when every tag is O or starts with B-/I-/E-/S-, else accuracy)."},
    )
    pair_task: Optional[str] = field(
        default=None,
        metadata={"help": "sentence pairs with GPT: 'entailment' (<s> a $ b <e>) or 'similarity' (both orders, "
                          "summed). Default by dataset name: MRPC/QQP/STS → similarity; otherwise entailment."},
    )
    pair_encoding: Optional[str] = field(
        default=None,
        metadata={"help": "sentence pairs with GPT or BERT: 'cross' (the papers' one sequence per pair, classified "
                          "from [CLS] / <e>) or 'siamese' (each sentence encoded on its own and mean-pooled, "
                          "[u, v, |u-v|, u*v], as the static-vector families and ELMo always read pairs). Default: "
                          "the model config's (cross)."},
    )
    partial_input: Optional[str] = field(
        default=None,
        metadata={"help": "sentence pairs: train and evaluate on one sentence of each pair only, 'first' or 'second' "
                          "(a partial-input baseline, Poliak et al. 2018; Gururangan et al. 2018). Far above the "
                          "majority class, the labels can be read from one sentence: the data has a cue, and a pair "
                          "model's score does not show it compares the sentences."},
    )
    max_seq_length: int = field(default=128, metadata={"help": "Longest input in tokens (labeling, classification)."})
    max_source_length: int = field(default=128, metadata={"help": "generation: longest input in tokens."})
    max_target_length: int = field(
        default=64, metadata={"help": "generation: longest output in tokens, for training and generation."}
    )
    max_train_samples: Optional[int] = field(default=None, metadata={"help": "Use the first N training examples."})
    max_eval_samples: Optional[int] = field(
        default=None, metadata={"help": "Use the first N evaluation examples (generation: the first N distinct "
                                        "inputs, each with all its references, e.g. N E2E meaning representations)."}
    )
    max_predict_samples: Optional[int] = field(
        default=None, metadata={"help": "Use the first N test examples (generation: distinct inputs, likewise)."}
    )
    preprocessing_num_workers: Optional[int] = field(default=None, metadata={"help": "Processes for tokenizing."})

    def __post_init__(self):
        if self.metric not in ("auto", "seqeval", "accuracy"):
            raise ValueError(f"--metric must be 'auto', 'seqeval' or 'accuracy', got {self.metric!r}")
        if self.trec_labels not in ("coarse", "fine"):
            raise ValueError(f"--trec_labels must be 'coarse' or 'fine', got {self.trec_labels!r}")
        if self.pair_task not in (None, "entailment", "similarity"):
            raise ValueError(f"--pair_task must be 'entailment' or 'similarity', got {self.pair_task!r}")
        if self.pair_encoding not in (None, *PAIR_ENCODINGS):
            raise ValueError(f"--pair_encoding must be one of {', '.join(PAIR_ENCODINGS)}, got {self.pair_encoding!r}")
        if self.partial_input not in (None, "first", "second"):
            raise ValueError(f"--partial_input must be 'first' or 'second', got {self.partial_input!r}")
        for name in ("max_seq_length", "max_source_length", "max_target_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} must be a positive integer, got {getattr(self, name)}")
        if (self.source_lang is None) != (self.target_lang is None):
            raise ValueError("Give both --source_lang and --target_lang, or neither")


def parse_arguments(argv=None, training_arguments_class=TrainingArguments, dataclass_types=None):
    """(ModelArguments, DataTrainingArguments, training arguments) from ``argv`` (default ``sys.argv[1:]``), or from
    a single ``.json`` file argument as transformers' examples accept; ``dataclass_types`` parses other dataclasses
    instead (a task's own, as ``hf_lineage.tasks.TASKS`` lists them).

    A bare ``--freeze_base`` means ``--freeze_base true``. Example::

        >>> model_args, data_args, training_args = parse_arguments(
        ...     ["--model_name_or_path", "out/bert", "--train_file", "train.tsv", "--output_dir", "ft", "--do_train"])
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = HfArgumentParser(dataclass_types or (ModelArguments, DataTrainingArguments, training_arguments_class))
    if len(argv) == 1 and argv[0].endswith(".json"):
        return parser.parse_json_file(json_file=os.path.abspath(argv[0]))
    for i, arg in enumerate(argv):
        # HfArgumentParser wants a value for an Optional[bool]; a bare flag is the natural way to say "yes".
        if arg == "--freeze_base" and (i + 1 == len(argv) or argv[i + 1].startswith("--")):
            argv[i] = "--freeze_base=true"
    return parser.parse_args_into_dataclasses(args=argv)


def check_actions(training_args) -> None:
    if not (training_args.do_train or training_args.do_eval or training_args.do_predict):
        raise ValueError("Nothing to do: pass at least one of --do_train, --do_eval, --do_predict")
