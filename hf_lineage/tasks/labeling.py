"""Sequence labeling (NER, POS tagging) for every family: a tag per word, predicted on the word's first token (its
last for a left-to-right model such as GPT, which has read the whole word only there).

Every family's ``AutoModelForTokenClassification`` is fine-tuned the same way. Words come pre-split (CoNLL-2003 or
CoNLL-U, recognised by name or, as for CoNLL-2003's ``train.txt``, by content; or a ``tokens`` column); the
tokenizer encodes them with ``is_split_into_words=True`` and each word's tag is put on its first sub-token, -100
(ignored) on the rest and on special tokens, as transformers' ``run_ner.py`` does.
BERT's WordPiece and GPT's BPE split words into sub-tokens (``word_ids()`` says which); the word-level tokenizers of
NNLM and word2vec, and ELMo's character tokenizer, give one token per word.

Metrics: ``--metric seqeval`` is entity-level precision/recall/F1 over IOB tags (CoNLL-2003's NER; the reader
converts the files' IOB1 to IOB2), ``--metric accuracy`` is per-word accuracy (POS tags), and the default ``auto``
picks seqeval when every tag is ``O`` or starts with ``B-``/``I-``/``E-``/``S-``, accuracy otherwise. seqeval also
reports per-word accuracy.

``--do_predict`` writes ``predictions.conll``: one ``word gold predicted`` line per word (gold ``_`` when the test
data has no tags), a blank line between sentences. A word cut off by ``--max_seq_length`` gets the tag ``O`` (or the
first label when there is no ``O``) and is counted in ``predict_words_truncated``.

Example::

    python recipes/sequence_labeling.py --model_name_or_path out/bert --train_file conll2003/eng.train \\
        --validation_file conll2003/eng.testa --test_file conll2003/eng.testb --do_train --do_eval --do_predict \\
        --output_dir ft/bert-ner
"""

from __future__ import annotations

import logging
import os
import re

import numpy as np
from tokenizers import pre_tokenizers
from transformers import AutoModelForTokenClassification, DataCollatorForTokenClassification, Trainer, TrainingArguments

from .. import metrics as lineage_metrics
from . import training
from .recipe_arguments import parse_arguments
from .splits import build_label_maps, load_splits
from .training import RecipeTrainerMixin, family_of, family_rules, logits_of

logger = logging.getLogger(__name__)

TASK = "sequence_labeling"
IOB_TAG = re.compile(r"^(O|[BIES]-.+)$")


class LabelingTrainer(RecipeTrainerMixin, Trainer):
    pass


def choose_metric(labels: list[str], requested: str) -> str:
    """``seqeval`` for IOB-style tag sets, ``accuracy`` otherwise (or what was requested)."""
    if requested != "auto":
        return requested
    looks_iob = all(IOB_TAG.match(t) for t in labels) and any(t != "O" for t in labels)
    return "seqeval" if looks_iob else "accuracy"


def word_ids(encoding, i: int) -> list[int | None]:
    """The word index of every token of example ``i`` (None for special tokens). Fast tokenizers know it (every
    family's, ELMo's included); a slow tokenizer here is a word-level one (``LineageElmoTokenizer`` given directly),
    one token per word, so the non-special tokens are the words in order."""
    if encoding.is_fast:
        return encoding.word_ids(i)
    ids, word = [], 0
    for special in encoding["special_tokens_mask"][i]:
        ids.append(None if special else word)
        word += 0 if special else 1
    return ids


def words_as_in_running_text(tokenizer, sentences: list[list[str]]) -> list[list[str]]:
    """Pre-split words, each with the space it has in running text where the tokenizer needs it to know the word.

    A byte-level BPE (GPT's) marks a word's leading space in its tokens (``Ġcat``); pre-split words reach its
    pre-tokenizer one by one, so without this every word would be encoded in the in-word forms the model saw only
    inside words (``c`` ``at``). transformers' GPT-2 and RoBERTa tokenizers need ``add_prefix_space=True`` for such
    input for the same reason. Other tokenizers get the words unchanged."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    pre_tokenizer = getattr(backend, "pre_tokenizer", None)
    if not isinstance(pre_tokenizer, pre_tokenizers.ByteLevel) or pre_tokenizer.add_prefix_space:
        return sentences
    return [[" " + word for word in words] for words in sentences]


def tokenize_and_align(examples, tokenizer, label2id, max_length, last_token: bool = False):
    """Encode pre-split words; ``labels`` holds each word's tag id on one of its tokens and -100 elsewhere, and
    ``first_tokens`` the position of that token (-1 for a word that was cut off or has no tokens). The token is the
    word's first (transformers' convention, for models that read in both directions), or with ``last_token`` its
    last: a left-to-right model (GPT) has read the whole word only there ("run" of "running" says nothing of
    "-ning")."""
    encoding = tokenizer(words_as_in_running_text(tokenizer, examples["tokens"]), is_split_into_words=True,
                         truncation=True, max_length=max_length,
                         return_special_tokens_mask=not tokenizer.is_fast)
    all_labels, all_first = [], []
    for i, words in enumerate(examples["tokens"]):
        tags = examples["tags"][i] if "tags" in examples else None
        positions = word_ids(encoding, i)
        labels, first = [-100] * len(positions), [-1] * len(words)
        for position, word in enumerate(positions):
            if word is not None and (first[word] < 0 or last_token):
                first[word] = position
        for word, position in enumerate(first):
            if position >= 0 and tags is not None:
                labels[position] = label2id[tags[word]]
        all_labels.append(labels)
        all_first.append(first)
    encoding.pop("special_tokens_mask", None)
    if "tags" in examples:
        encoding["labels"] = all_labels
    encoding["first_tokens"] = all_first
    return encoding


def reads_left_to_right(config) -> bool:
    """A unidirectional model (GPT, NNLM) labels a word at its last token; the others at the first."""
    return family_rules(config).labels_last_token


def word_predictions(logits, first_tokens, labels, fallback="O") -> tuple[list[list[str]], int]:
    """Per-word predicted tags of every example, read at each word's labelled token; words without one get
    ``fallback``. Returns the tags and how many words fell back."""
    best = np.asarray(logits).argmax(-1)  # (N, T)
    out, missing = [], 0
    for row, first in zip(best, first_tokens):
        tags = []
        for position in first:
            if position < 0 or position >= len(row):
                tags.append(fallback)
                missing += 1
            else:
                tags.append(labels[int(row[position])])
        out.append(tags)
    return out, missing


def make_compute_metrics(labels: list[str], metric_name: str):
    seqeval = lineage_metrics.load("seqeval") if metric_name == "seqeval" else None
    accuracy = lineage_metrics.load("accuracy")

    def compute_metrics(prediction):
        best = np.asarray(logits_of(prediction.predictions)).argmax(-1)
        gold_ids = prediction.label_ids
        predicted, gold = [], []
        for row, row_gold in zip(best, gold_ids):
            keep = row_gold != -100
            predicted.append([labels[i] for i in row[keep]])
            gold.append([labels[i] for i in row_gold[keep]])
        if seqeval is not None:
            scores = seqeval.compute(predictions=predicted, references=gold)
            return {"precision": scores["overall_precision"], "recall": scores["overall_recall"],
                    "f1": scores["overall_f1"], "accuracy": scores["overall_accuracy"]}
        flat_predicted = [tag for row in predicted for tag in row]
        flat_gold = [tag for row in gold for tag in row]
        ids = {name: i for i, name in enumerate(labels)}
        return accuracy.compute(predictions=[ids[t] for t in flat_predicted], references=[ids[t] for t in flat_gold])

    return compute_metrics


def main(argv=None) -> dict:
    """Run the recipe on a command line (default ``sys.argv[1:]``); returns the metrics of ``all_results.json``.

    >>> main(["--model_name_or_path", "out/bert", "--train_file", "eng.train", "--do_train",
    ...       "--output_dir", "ft"])  # doctest: +SKIP
    """
    return run(*parse_arguments(argv, TrainingArguments))


def run(model_args, data_args, training_args, callbacks=None) -> dict:
    """The recipe on parsed arguments (``ModelArguments``, ``DataTrainingArguments``, ``TrainingArguments``);
    ``callbacks`` are extra ``TrainerCallback``s."""
    training.start(training_args)
    # Everything that can be wrong with the input is found here, before the Trainer creates the output directory.
    splits = load_splits(TASK, data_args, training_args)
    config = training.checked_config(model_args, AutoModelForTokenClassification, TASK)
    labels, label2id = build_label_maps(splits, "tags", config)
    metric_name = choose_metric(labels, data_args.metric)
    config = training.task_config(model_args, config, id2label=dict(enumerate(labels)), label2id=label2id)
    model, tokenizer = training.load_model(model_args, AutoModelForTokenClassification, config)
    max_length = training.sequence_length_limit(data_args.max_seq_length, tokenizer, config)
    logger.info("%s (%s) for %s with %d labels, metric %s", model_args.model_name_or_path, family_of(config), TASK,
                len(labels), metric_name)

    encoded = training.encode_splits(splits, tokenize_and_align, dict(
        tokenizer=tokenizer, label2id=label2id, max_length=max_length, last_token=reads_left_to_right(config)),
        data_args)
    card = training.card_info(TASK, model_args, data_args, config, splits, AutoModelForTokenClassification,
                              metric=metric_name, max_seq_length=max_length, freeze_base=model_args.freeze_base,
                              labels=" ".join(labels))
    trainer = training.make_trainer(LabelingTrainer, model, tokenizer, training_args, encoded,
                                    DataCollatorForTokenClassification(tokenizer), card,
                                    compute_metrics=make_compute_metrics(labels, metric_name), callbacks=callbacks)

    def write_predictions(trainer, test_dataset):
        test = splits["test"].dataset
        has_gold = "tags" in test.column_names
        output = training.predict(trainer, test_dataset, scored=has_gold)
        fallback = "O" if "O" in label2id else labels[0]
        predicted, missing = word_predictions(logits_of(output.predictions), test_dataset["first_tokens"], labels,
                                              fallback)
        if trainer.is_world_process_zero():
            with open(os.path.join(training_args.output_dir, "predictions.conll"), "w", encoding="utf-8") as f:
                for i, (words, tags) in enumerate(zip(test["tokens"], predicted)):
                    gold = test["tags"][i] if has_gold else ["_"] * len(words)
                    f.writelines(f"{w} {g} {p}\n" for w, g, p in zip(words, gold, tags))
                    f.write("\n")
        return {**output.metrics, "predict_words_truncated": missing}

    return training.train_evaluate_predict(trainer, encoded, write_predictions)
