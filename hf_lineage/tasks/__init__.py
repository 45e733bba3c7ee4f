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
What they share, in the order a run meets it: ``recipe_arguments`` (the argument dataclasses, ``parse_arguments``,
``run_cli``), ``splits`` (the splits in the task's columns, label maps; the file formats themselves are read by
``hf_lineage.data.readers``) and ``training`` (the run's skeleton: a model that can do the task, ``--freeze_base``,
encoding, the Trainer and its model card, train/evaluate/predict). The distillation and head-pruning recipes
(``hf_lineage.compression``) build on the same pieces.

Example::

    >>> from hf_lineage.tasks import TASKS
    >>> TASKS["classification"].main(["--model_name_or_path", "out/gpt", "--train_file", "sst2/train.tsv",
    ...                               "--validation_file", "sst2/dev.tsv", "--do_train", "--do_eval",
    ...                               "--output_dir", "ft/gpt-sst2"])["eval_accuracy"]  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from transformers import (
    AutoModelForCausalLM,
    AutoModelForMultipleChoice,
    AutoModelForQuestionAnswering,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    Seq2SeqTrainingArguments,
    TrainingArguments,
)

from ..registry import AutoModelForIntentAndSlots
from . import classification, generation, intent_and_slots, labeling, multiple_choice, question_answering
from .recipe_arguments import DataTrainingArguments, ModelArguments, parse_arguments, run_cli
from .splits import read_data_file, standardize


@dataclass(frozen=True)
class Task:
    """One fine-tuning task: how its command line is parsed, which model it needs, and the code that runs it."""

    name: str  # as ``recipes/<name>.py`` and ``hf-lineage finetune <name>`` call it
    description: str  # one line, for ``hf-lineage finetune --help``
    auto_class: type  # the Auto class a checkpoint's family needs for the task (generation: or an encoder, below)
    arguments: tuple  # the dataclasses HfArgumentParser fills, in the order ``run`` takes them, training's last
    run: Callable  # run(*arguments, callbacks=None) -> the metrics of all_results.json

    def parse(self, argv=None) -> tuple:
        """The task's argument dataclasses from ``argv`` (default ``sys.argv[1:]``) or one ``.json`` file."""
        return parse_arguments(argv, dataclass_types=self.arguments)

    def main(self, argv=None) -> dict:
        """The task on a command line, as ``recipes/<name>.py`` takes it; returns the metrics."""
        return self.run(*self.parse(argv))


_ARGUMENTS = (ModelArguments, DataTrainingArguments, TrainingArguments)

TASKS = {task.name: task for task in [
    Task("sequence_labeling", "a tag per word: NER (seqeval F1), POS (accuracy)",
         AutoModelForTokenClassification, _ARGUMENTS, labeling.run),
    Task("classification", "a label per sentence (SST-2, TREC): accuracy, macro-F1",
         AutoModelForSequenceClassification, _ARGUMENTS, classification.run),
    Task("sentence_pairs", "a label per sentence pair (MRPC, RTE): accuracy, macro-F1, F1",
         AutoModelForSequenceClassification, _ARGUMENTS, classification.run_pairs),
    # A family without a causal LM (BERT) generates as the encoder of an EncoderDecoderModel.
    Task("generation", "translation, data-to-text (Multi30k, E2E): sacreBLEU, ROUGE",
         AutoModelForCausalLM, (ModelArguments, DataTrainingArguments, Seq2SeqTrainingArguments), generation.run),
    Task("question_answering", "extractive QA (SQuAD 1.1/2.0): exact match, F1, shortcut checks",
         AutoModelForQuestionAnswering, question_answering.ARGUMENTS, question_answering.run),
    Task("intent_and_slots", "an intent per utterance and a slot tag per word (ATIS, SNIPS)",
         AutoModelForIntentAndSlots, _ARGUMENTS, intent_and_slots.run),
    Task("multiple_choice", "one of N choices per context (SWAG, a cloze): accuracy",
         AutoModelForMultipleChoice, multiple_choice.ARGUMENTS, multiple_choice.run),
]}

__all__ = ["TASKS", "DataTrainingArguments", "ModelArguments", "Task", "parse_arguments", "read_data_file", "run_cli",
           "standardize"]
