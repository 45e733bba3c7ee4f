"""Fine-tuning recipes for the task types of the lineage, for every family, as a library.

``TASKS`` is the one table of them, name → ``Task``: the recipe scripts (``recipes/<name>.py``), ``hf-lineage finetune
NAME`` and the lineage experiment's fine-tuning stage all dispatch through it.

======================  ==========================  ==================================================================
task                    module                      what it fine-tunes for
======================  ==========================  ==================================================================
``sequence_labeling``   ``labeling``                NER, POS: a tag per word (seqeval entity F1 / accuracy)
``classification``      ``classification``          a label per sentence (SST-2, TREC): accuracy, macro-F1
``sentence_pairs``      ``classification``          a label per sentence pair (MRPC, RTE): accuracy, macro-F1, F1
``generation``          ``generation``              translation (Multi30k), data-to-text (E2E): sacreBLEU, ROUGE
``question_answering``  ``question_answering``      extractive QA (SQuAD 1.1/2.0): exact match, F1, shortcut checks
``intent_and_slots``    ``intent_and_slots``        an intent per utterance and a BIO slot tag per word, one model
                                                    (ATIS, SNIPS): intent accuracy, slot F1, exact match
``multiple_choice``     ``multiple_choice``         one of N choices per context (SWAG, the embedded cloze): accuracy
======================  ==========================  ==================================================================

Each task's ``run(*arguments, callbacks=None)`` (its argument dataclasses as ``Task.arguments`` lists them) and
``Task.main(argv)`` (a command line, as the script takes it) return the metrics written to ``all_results.json``.
What they share, in the order a run meets it: ``command_line`` (``run_cli``, ``--help`` at once),
``recipe_arguments`` (the argument dataclasses, ``parse_arguments``), ``splits`` (the splits in the task's columns,
label maps; the file formats themselves are read by ``hf_lineage.data.readers``) and ``training`` (the run's
skeleton: a model that can do the task, ``--freeze_base``, encoding, the Trainer and its model card,
train/evaluate/predict). The distillation and head-pruning recipes
(``hf_lineage.compression``) build on the same pieces.

Example::

    >>> from hf_lineage.tasks import TASKS
    >>> TASKS["classification"].main(["--model_name_or_path", "out/gpt", "--train_file", "sst2/train.tsv",
    ...                               "--validation_file", "sst2/dev.tsv", "--do_train", "--do_eval",
    ...                               "--output_dir", "ft/gpt-sst2"])["eval_accuracy"]  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from typing import Callable

from .command_line import asks_for_help, print_help, run_cli


class _Reference:
    """A ``Task`` field given as a ``"module:name"`` string (or a tuple of them), imported on first read, as the
    registry's families name their classes: the table itself imports no recipe, transformers' model classes nor torch,
    so ``hf-lineage finetune --help`` lists the tasks from it at once. A field given an object keeps it
    (``dataclasses.replace(task, run=...)``); a relative module is one of this package's."""

    def __set_name__(self, owner, name):
        self.name = f"_{name}"

    def __get__(self, task, owner=None):
        if task is None:
            return self
        value = task.__dict__[self.name]
        if isinstance(value, str) or (isinstance(value, tuple) and any(isinstance(v, str) for v in value)):
            value = tuple(map(_load, value)) if isinstance(value, tuple) else _load(value)
            task.__dict__[self.name] = value
        return value

    def __set__(self, task, value):
        if isinstance(value, _Reference):  # the field's "default": not given
            raise TypeError(f"Task needs {self.name[1:]}")
        task.__dict__[self.name] = value


def _load(reference):
    if not isinstance(reference, str):
        return reference
    module, name = reference.split(":")
    return getattr(importlib.import_module(module, __name__), name)


@dataclass(frozen=True)
class Task:
    """One fine-tuning task: how its command line is parsed, which model it needs, and the code that runs it. The last
    three are given as ``"module:name"`` references and imported when first read (``_Reference``)."""

    name: str  # as ``recipes/<name>.py`` and ``hf-lineage finetune <name>`` call it
    description: str  # one line, for ``hf-lineage finetune --help``
    # The Auto class a checkpoint's family needs for the task (generation: or an encoder, below).
    auto_class: type = field(default=_Reference(), repr=False)
    # The dataclasses HfArgumentParser fills, in the order ``run`` takes them, training's last.
    arguments: tuple = field(default=_Reference(), repr=False)
    run: Callable = field(default=_Reference(), repr=False)  # run(*arguments, callbacks=None) -> all_results.json's

    def parse(self, argv=None) -> tuple:
        """The task's argument dataclasses from ``argv`` (default ``sys.argv[1:]``) or one ``.json`` file. ``--help``
        prints the options and exits, from a kept copy of the text once it has been made (``command_line``)."""
        argv = sys.argv[1:] if argv is None else list(argv)
        if asks_for_help(argv):
            print_help(self.name, self._format_help)
        from .recipe_arguments import parse_arguments

        return parse_arguments(argv, dataclass_types=self.arguments)

    def _format_help(self) -> str:
        from transformers import HfArgumentParser

        return HfArgumentParser(self.arguments).format_help()

    def main(self, argv=None) -> dict:
        """The task on a command line, as ``recipes/<name>.py`` takes it; returns the metrics."""
        arguments = self.parse(argv)  # first: --help needs neither the recipe's module nor torch
        return self.run(*arguments)


_ARGUMENTS = (".recipe_arguments:ModelArguments", ".recipe_arguments:DataTrainingArguments",
              "transformers:TrainingArguments")

TASKS = {task.name: task for task in [
    Task("sequence_labeling", "a tag per word: NER (seqeval F1), POS (accuracy)",
         "transformers:AutoModelForTokenClassification", _ARGUMENTS, ".labeling:run"),
    Task("classification", "a label per sentence (SST-2, TREC): accuracy, macro-F1",
         "transformers:AutoModelForSequenceClassification", _ARGUMENTS, ".classification:run"),
    Task("sentence_pairs", "a label per sentence pair (MRPC, RTE): accuracy, macro-F1, F1",
         "transformers:AutoModelForSequenceClassification", _ARGUMENTS, ".classification:run_pairs"),
    # A family without a causal LM (BERT) generates as the encoder of an EncoderDecoderModel.
    Task("generation", "translation, data-to-text (Multi30k, E2E): sacreBLEU, ROUGE",
         "transformers:AutoModelForCausalLM", (*_ARGUMENTS[:2], "transformers:Seq2SeqTrainingArguments"),
         ".generation:run"),
    Task("question_answering", "extractive QA (SQuAD 1.1/2.0): exact match, F1, shortcut checks",
         "transformers:AutoModelForQuestionAnswering", ".question_answering:ARGUMENTS", ".question_answering:run"),
    Task("intent_and_slots", "an intent per utterance and a slot tag per word (ATIS, SNIPS)",
         "..registry:AutoModelForIntentAndSlots", _ARGUMENTS, ".intent_and_slots:run"),
    Task("multiple_choice", "one of N choices per context (SWAG, a cloze): accuracy",
         "transformers:AutoModelForMultipleChoice", ".multiple_choice:ARGUMENTS", ".multiple_choice:run"),
]}

# The shared pieces, imported on first use (PEP 562): they import transformers' TrainingArguments and datasets.
_LAZY = {"DataTrainingArguments": "recipe_arguments", "ModelArguments": "recipe_arguments",
         "parse_arguments": "recipe_arguments", "read_data_file": "splits",
         "standardize": "splits"}


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_LAZY})


__all__ = ["TASKS", "DataTrainingArguments", "ModelArguments", "Task", "parse_arguments", "read_data_file", "run_cli",
           "standardize"]
