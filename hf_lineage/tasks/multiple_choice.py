"""Multiple choice (SWAG, a cloze) for every family: a context and N choices, one of them right; each choice is
scored, and a softmax over an example's scores picks one (accuracy). Each family reads a (context, choice) pair the
way its paper fed such input to the pretrained model:

==========  =========================================================================================================
family      input, one sequence per choice (``AutoModelForMultipleChoice``, inputs (B, N, T), logits (B, N))
==========  =========================================================================================================
GPT         the paper's input transformation (section 3.3): ``<s> context $ choice <e>``, each scored by a linear
            layer on the final state of ``<e>``, a softmax over the choices (``LineageGPTForMultipleChoice``)
BERT        ``[CLS] context [SEP] choice [SEP]`` with segment ids, a linear layer on the pooled ``[CLS]`` (as BERT's
            SWAG setup)
NNLM,       the family's features → task encoder (a BiLSTM by default); the context and the choice (``token_type_ids``)
word2vec,   each encoded on its own and max-pooled, scored from ``[u, v, |u − v|, u * v]``: the sentence-pair head
svd, ELMo   with one score per choice (``StaticVectorsForMultipleChoice``, ``modeling_lineage_static.py``)
==========  =========================================================================================================

The data is transformers' ``run_swag.py`` layout: a context column (``sent1``, else ``context``), an optional
question column (``sent2``: the start every choice continues, put before each choice as run_swag does), the choice
columns (``ending0``, ``ending1``, ...; or one list column ``choices``) and ``label``, the index of the right choice.
``--context_column``, ``--question_column`` and ``--choice_columns`` name others. Every example has the same
number of choices (a missing choice is an error naming the example), and a label outside ``0 .. N-1`` is an error;
both are found before anything is built, so a failed run leaves no output directory.

The embedded sample, ``hf_lineage/samples/cloze`` (a cloze over UD English EWT: a sentence with one content word
blanked, the word and three distractors of its part of speech and frequency band), is in this layout; its
baselines are ``hf_lineage.experiments.baselines.majority_position``, ``most_frequent_choice`` and ``edge_word_choice``.
``--do_predict`` writes ``predictions.tsv`` (index, context, the choices, gold label when known, predicted index).
"""

from __future__ import annotations

import csv
import logging
import os
import re
from dataclasses import dataclass, field
from typing import Optional

import datasets
import numpy as np
import torch
from transformers import AutoModelForMultipleChoice, Trainer, TrainingArguments

from .. import metrics as lineage_metrics
from ..data.gpt_tasks import DataCollatorForGPTTasks
from . import recipe_arguments, training
from .recipe_arguments import DataTrainingArguments, ModelArguments
from .splits import Split
from .splits import load_splits as shared_load_splits
from .training import RecipeTrainerMixin, family_of, family_rules, logits_of

logger = logging.getLogger(__name__)

TASK = "multiple_choice"
CONTEXT_COLUMNS = ("sent1", "context")  # run_swag.py's, then the plain name
QUESTION_COLUMNS = ("sent2",)  # SWAG: the start of every ending
CHOICE_COLUMN = re.compile(r"ending(\d+)")  # ending0, ending1, ...
LABEL_COLUMNS = ("label", "labels")


@dataclass
class MultipleChoiceArguments:
    """What multiple choice adds to the data arguments (``--label_column_name`` names the label column)."""

    context_column: Optional[str] = field(
        default=None, metadata={"help": "Column with the context (default: 'sent1' as SWAG, else 'context')."})
    question_column: Optional[str] = field(
        default=None, metadata={"help": "Column with a start every choice continues, put before each choice "
                                        "(default: 'sent2' when the data has it, as SWAG; otherwise none)."})
    choice_columns: Optional[list[str]] = field(
        default=None, metadata={"help": "Columns with the choices, in order (default: ending0, ending1, ... as SWAG; "
                                        "else one list column 'choices')."})


ARGUMENTS = (ModelArguments, DataTrainingArguments, MultipleChoiceArguments, TrainingArguments)


class MultipleChoiceTrainer(RecipeTrainerMixin, Trainer):
    pass


# --------------------------------------------------------------------------- data


def _column(names, given, candidates, what, where, required=True):
    if given is not None:
        if given not in names:
            raise ValueError(f"{where}: no column {given!r} ({what}); the columns are {names}")
        return given
    found = next((c for c in candidates if c in names), None)
    if found is None and required:
        raise ValueError(f"{where}: no {what} column; expected one of {list(candidates)} (or name it with an "
                         f"option), found {names}")
    return found


def choice_columns(names, mc_args: MultipleChoiceArguments, where: str) -> list[str]:
    """The choice columns in order: ``--choice_columns``, else ``ending0``, ``ending1``, ... (by number), else
    ``["choices"]`` (one list column)."""
    if mc_args.choice_columns:
        missing = [c for c in mc_args.choice_columns if c not in names]
        if missing:
            raise ValueError(f"{where}: no column {missing[0]!r} (--choice_columns); the columns are {names}")
        return list(mc_args.choice_columns)
    endings = sorted((int(m.group(1)), c) for c in names if (m := CHOICE_COLUMN.fullmatch(c)))
    if endings:
        return [c for _, c in endings]
    if "choices" in names:
        return ["choices"]
    raise ValueError(f"{where}: no choice columns; expected ending0, ending1, ... (as SWAG), a list column "
                     f"'choices', or --choice_columns; found {names}")


def standardize(dataset: datasets.Dataset, mc_args: MultipleChoiceArguments, data_args: DataTrainingArguments,
                where: str) -> datasets.Dataset:
    """``context``, ``choices`` (a list, the question column before each) and ``label`` (an int, when the data has
    labels), every example with the same number of choices and a label that indexes one."""
    names = dataset.column_names
    context = _column(names, mc_args.context_column, CONTEXT_COLUMNS, "context", where)
    question = _column(names, mc_args.question_column, QUESTION_COLUMNS, "question", where, required=False)
    columns = choice_columns(names, mc_args, where)
    label = _column(names, data_args.label_column_name, LABEL_COLUMNS, "label", where, required=False)
    rows = []
    for i, example in enumerate(dataset):
        if columns == ["choices"] and isinstance(example["choices"], (list, tuple)):
            choices = list(example["choices"])
        else:
            choices = [example[c] for c in columns]
        if any(c is None or str(c).strip() == "" for c in choices):
            empty = next(k for k, c in enumerate(choices) if c is None or str(c).strip() == "")
            raise ValueError(f"{where}: example {i} has no text for choice {empty} "
                             f"({columns[empty] if len(columns) > 1 else 'choices'}); every example needs all its "
                             "choices (ragged choices)")
        start = "" if question is None or example[question] is None else str(example[question]).strip()
        rows.append({"context": "" if example[context] is None else str(example[context]),
                     "choices": [f"{start} {c}".strip() if start else str(c) for c in choices],
                     "label": None if label is None else example[label]})
    counts = sorted({len(r["choices"]) for r in rows})
    if len(counts) > 1:
        i = next(i for i, r in enumerate(rows) if len(r["choices"]) != len(rows[0]["choices"]))
        raise ValueError(f"{where}: example 0 has {len(rows[0]['choices'])} choices but example {i} has "
                         f"{len(rows[i]['choices'])} (ragged choices): every example needs the same number")
    if counts and counts[0] < 2:
        raise ValueError(f"{where}: multiple choice needs at least two choices per example, found {counts[0]}")
    out = {"context": [r["context"] for r in rows], "choices": [r["choices"] for r in rows]}
    if label is not None and any(r["label"] is not None for r in rows):
        out["label"] = [_label(r["label"], len(r["choices"]), i, where) for i, r in enumerate(rows)]
    return datasets.Dataset.from_dict(out)


def _label(value, num_choices: int, i: int, where: str) -> int:
    try:
        index = int(value)
        if index != float(value):
            raise ValueError
    except (TypeError, ValueError):
        raise ValueError(f"{where}: example {i} has label {value!r}; a label is the index of the right choice "
                         f"(0 to {num_choices - 1})") from None
    if not 0 <= index < num_choices:
        raise ValueError(f"{where}: example {i} has label {index}, but there are {num_choices} choices "
                         f"(labels 0 to {num_choices - 1})")
    return index


def load_splits(mc_args, data_args, training_args) -> dict[str, Split]:
    """The splits the run needs, read (a local file or ``--dataset_name``), standardized, cut to ``--max_*_samples``,
    every split with the same number of choices."""
    splits = shared_load_splits(TASK, data_args, training_args,
                                standardized=lambda dataset, source: standardize(dataset, mc_args, data_args, source))
    sizes = {name: len(split.dataset[0]["choices"]) for name, split in splits.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"the splits have different numbers of choices ({sizes}): a model scores a fixed number")
    if "train" in splits and "label" not in splits["train"].dataset.column_names:
        raise ValueError(f"{splits['train'].source}: the training data has no labels ('label' column)")
    if "validation" in splits and "label" not in splits["validation"].dataset.column_names:
        raise ValueError(f"{splits['validation'].source}: --do_eval needs labels ('label' column)")
    return splits


# --------------------------------------------------------------------------- encoding


def encode_batch(examples, tokenizer, max_length, gpt):
    """Each (context, choice) pair tokenized as the family reads a pair (GPT: ``<s> context $ choice <e>`` by its
    task template; the others with ``token_type_ids``), grouped back into one list of N sequences per example."""
    n = len(examples["choices"][0])
    contexts = [context for context in examples["context"] for _ in range(n)]
    choices = [choice for row in examples["choices"] for choice in row]
    encoding = tokenizer(contexts, choices, truncation=True, max_length=max_length,
                         return_token_type_ids=None if gpt else True)
    grouped = {name: [values[i: i + n] for i in range(0, len(values), n)] for name, values in encoding.items()}
    if "label" in examples:
        grouped["labels"] = examples["label"]
    return grouped


@dataclass
class DataCollatorForMultipleChoice:
    """Pads every choice of a batch with the tokenizer (so ELMo's ``char_ids`` are padded too) and shapes each input
    (B, N, ...): the flat (B * N, ...) tensors reshaped, whatever their trailing dimensions."""

    tokenizer: object

    def __call__(self, features):
        n = len(features[0]["input_ids"])
        flat = [{name: values[k] for name, values in f.items() if name != "labels"} for f in features for k in range(n)]
        batch = self.tokenizer.pad(flat, return_tensors="pt")
        batch = {name: value.view(len(features), n, *value.shape[1:]) for name, value in batch.items()}
        if "labels" in features[0]:
            batch["labels"] = torch.tensor([f["labels"] for f in features], dtype=torch.long)
        return batch


def make_compute_metrics():
    accuracy = lineage_metrics.load("accuracy")

    def compute_metrics(prediction):
        predicted = np.asarray(logits_of(prediction.predictions)).argmax(-1)
        return accuracy.compute(predictions=predicted, references=prediction.label_ids)

    return compute_metrics


# --------------------------------------------------------------------------- the run


def main(argv=None) -> dict:
    """Run the recipe on a command line (default ``sys.argv[1:]``); returns the metrics of ``all_results.json``."""
    return run(*recipe_arguments.parse_arguments(argv, dataclass_types=ARGUMENTS))


def run(model_args: ModelArguments, data_args: DataTrainingArguments, mc_args: MultipleChoiceArguments,
        training_args: TrainingArguments, callbacks=None) -> dict:
    """The recipe on parsed arguments (``ARGUMENTS``); ``callbacks`` are extra ``TrainerCallback``s."""
    training.start(training_args)
    # Everything that can be wrong with the input is found here, before the Trainer creates the output directory.
    splits = load_splits(mc_args, data_args, training_args)
    config = training.checked_config(model_args, AutoModelForMultipleChoice, TASK)
    if model_args.task_head == "scalar_mix":
        raise ValueError("--task_head scalar_mix: multiple choice has the papers' heads only (GPT: a linear layer on "
                         "<e>; BERT: on [CLS]); freeze the Transformer with --freeze_base instead")
    num_choices = len(next(iter(splits.values())).dataset[0]["choices"])
    config = training.task_config(model_args, config)
    gpt = bool(family_rules(config).task_tokens)
    model, tokenizer = training.load_model(model_args, AutoModelForMultipleChoice, config, gpt_task_tokens=gpt)
    max_length = training.sequence_length_limit(data_args.max_seq_length, tokenizer, config)
    logger.info("%s (%s) for multiple choice with %d choices", model_args.model_name_or_path, family_of(config),
                num_choices)

    encoded = training.encode_splits(splits, encode_batch, dict(tokenizer=tokenizer, max_length=max_length, gpt=gpt),
                                     data_args, "GPT input transformation of" if gpt else "Tokenizing")
    collator = DataCollatorForGPTTasks(tokenizer.pad_token_id) if gpt else DataCollatorForMultipleChoice(tokenizer)
    card = training.card_info(TASK, model_args, data_args, config, splits, AutoModelForMultipleChoice,
                              max_seq_length=max_length, freeze_base=model_args.freeze_base, choices=num_choices)
    trainer = training.make_trainer(MultipleChoiceTrainer, model, tokenizer, training_args, encoded, collator, card,
                                    compute_metrics=make_compute_metrics(), callbacks=callbacks)

    def write_predictions(trainer, test_dataset):
        test = splits["test"].dataset
        has_gold = "label" in test.column_names
        output = training.predict(trainer, test_dataset, scored=has_gold)
        predicted = np.asarray(logits_of(output.predictions)).argmax(-1)
        if trainer.is_world_process_zero():
            with open(os.path.join(training_args.output_dir, "predictions.tsv"), "w", encoding="utf-8",
                      newline="") as f:
                writer = csv.writer(f, delimiter="\t", lineterminator="\n")
                writer.writerow(["index", "context", *(f"choice{k}" for k in range(num_choices)), "label",
                                 "prediction"])
                for i, row in enumerate(test):
                    writer.writerow([i, row["context"], *row["choices"], row["label"] if has_gold else "",
                                     int(predicted[i])])
        return output.metrics

    return training.train_evaluate_predict(trainer, encoded, write_predictions)
