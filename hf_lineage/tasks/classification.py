"""Classification of single sentences (SST-2; TREC questions, coarse or fine classes by ``--trec_labels``) and of
sentence pairs (MRPC paraphrase, RTE entailment) for every family, each the way its paper fed such input to the
pretrained model:

==========  =========================================================================================================
family      input
==========  =========================================================================================================
BERT        ``[CLS] a [SEP]`` / ``[CLS] a [SEP] b [SEP]`` with segment ids; the classifier reads the pooled ``[CLS]``
GPT         the paper's input transformations (section 3.3): ``<s> a <e>``; entailment ``<s> a $ b <e>``; similarity
            both orders ``<s> a $ b <e>`` and ``<s> b $ a <e>``, representations summed. ``<s> $ <e>`` are added to
            the tokenizer and the embeddings (``add_gpt_task_tokens``); the auxiliary LM loss (λ = 0.5) is on.
NNLM,       word vectors → the family's task encoder (a BiLSTM by default) → max pooling → classifier; a pair is
word2vec,   marked with ``token_type_ids`` and each sentence is encoded on its own (``[u, v, |u − v|, u * v]``,
ELMo        ``modeling_lineage_static.py``)
==========  =========================================================================================================

``--pair_encoding siamese`` reads a GPT or BERT pair as the other families do instead: each sentence encoded on its
own, mean-pooled, classified from ``[u, v, |u − v|, u * v]`` (Reimers & Gurevych 2019); it is saved in the config,
so pipelines read pairs the same way.

For GPT pairs, ``--pair_task entailment|similarity`` chooses the transformation. Unset, it follows the data's name
(the dataset name or the file paths): MRPC, QQP and STS are similarity tasks, anything else (RTE, MNLI, QNLI, SNLI,
your own data) is treated as entailment, the order-sensitive choice. The GPT tokenizer saved with the model applies
the transformation itself and a similarity model reads the other order itself, so ``pipeline("text-classification",
model=output_dir)`` on ``"text"`` or ``{"text": a, "text_pair": b}`` predicts what ``predictions.tsv`` says.

Labels are the training data's label names, any number of them (at least two). Metrics: ``accuracy``, ``macro_f1``,
and with two classes ``f1``, the F1 of the second label in sorted order (``1`` in GLUE, whose ``0``/``1`` labels mean
not-paraphrase/paraphrase and negative/positive; ``not_entailment`` for RTE, whose labels are names).
``--do_predict`` writes ``predictions.tsv`` (index, text, gold label when known, predicted label).
"""

from __future__ import annotations

import csv
import logging
import os
import re

import numpy as np
from transformers import AutoModelForSequenceClassification, DataCollatorWithPadding, Trainer, TrainingArguments

from .. import metrics as lineage_metrics
from ..data.gpt_tasks import DataCollatorForGPTTasks, task_token_ids
from . import training
from .recipe_arguments import parse_arguments
from .splits import Split, build_label_maps, load_splits
from .training import RecipeTrainerMixin, family_of, family_rules, logits_of

logger = logging.getLogger(__name__)

# Sentence-pair datasets whose relation is symmetric: GPT reads them in both orders.
SIMILARITY_DATASETS = re.compile(r"mrpc|qqp|sts", re.IGNORECASE)


class ClassificationTrainer(RecipeTrainerMixin, Trainer):
    pass


def default_pair_task(data_args) -> str:
    names = " ".join(filter(None, [data_args.dataset_name, data_args.dataset_config_name, data_args.train_file,
                                   data_args.validation_file, data_args.test_file]))
    return "similarity" if SIMILARITY_DATASETS.search(names) else "entailment"


def pair_encoding_override(config, pair_encoding: str | None) -> dict:
    """``--pair_encoding`` as a config override for GPT and BERT, whose sequence classifiers read a pair either way.
    The other families always encode each sentence on its own: 'siamese' changes nothing there, 'cross' is refused."""
    if pair_encoding is None:
        return {}
    if hasattr(config, "pair_encoding"):
        return {"pair_encoding": pair_encoding}
    if pair_encoding == "cross":
        raise ValueError(f"--pair_encoding cross: a {family_of(config)!r} model reads each sentence of a pair on its "
                         "own (siamese); only GPT and BERT read a pair as one sequence")
    return {}


def uses_gpt_transformations(config) -> bool:
    """GPT's task input transformations: start, delimiter and extract tokens around the input (its registry entry's
    ``task_tokens``)."""
    return family_rules(config).task_tokens


def one_sentence_of_each_pair(split: Split, which: str) -> Split:
    """A pair split as single sentences: ``which`` ("first" or "second") of each pair, under ``sentence``."""
    keep, drop = ("sentence1", "sentence2") if which == "first" else ("sentence2", "sentence1")
    dataset = split.dataset.remove_columns(drop).rename_column(keep, "sentence")
    return Split(dataset=dataset, source=f"{split.source} ({which} sentence only)")


def encode_batch(examples, tokenizer, label2id, max_length, pairs):
    """Tokenize sentences (or pairs: with ``token_type_ids``, which BERT's segments and the static-vector heads
    read) and map label names to ids."""
    texts = (examples["sentence1"], examples["sentence2"]) if pairs else (examples["sentence"],)
    encoding = tokenizer(*texts, truncation=True, max_length=max_length,
                         return_token_type_ids=True if pairs else None)
    if "label" in examples:
        encoding["labels"] = [label2id[name] for name in examples["label"]]
    return encoding


def encode_gpt(examples, tokenizer, label2id, max_length, pairs):
    """GPT's input transformation, ``<s> a <e>`` or ``<s> a $ b <e>``, made by the tokenizer itself
    (``set_gpt_task_template``), so the saved tokenizer makes the same sequences in pipelines. A similarity model
    adds the other order itself (``config.pair_task``)."""
    texts = (examples["sentence1"], examples["sentence2"]) if pairs else (examples["sentence"],)
    encoding = tokenizer(*texts, truncation=True, max_length=max_length)
    if "label" in examples:
        encoding["labels"] = [label2id[name] for name in examples["label"]]
    return encoding


def encoding_for(config, tokenizer):
    """(the function that encodes a batch, the collator) for ``config``'s family: GPT's input transformation, or
    plain tokenizing. The distillation and head-pruning recipes encode with it too."""
    if uses_gpt_transformations(config):
        return encode_gpt, DataCollatorForGPTTasks(tokenizer.pad_token_id)
    return encode_batch, DataCollatorWithPadding(tokenizer)


def make_compute_metrics(num_labels: int):
    accuracy, f1 = lineage_metrics.load("accuracy"), lineage_metrics.load("f1")

    def compute_metrics(prediction):
        predicted = np.asarray(logits_of(prediction.predictions)).argmax(-1)
        gold = prediction.label_ids
        scores = accuracy.compute(predictions=predicted, references=gold)
        scores["macro_f1"] = f1.compute(predictions=predicted, references=gold, average="macro",
                                        labels=list(range(num_labels)))["f1"]
        if num_labels == 2:
            scores["f1"] = f1.compute(predictions=predicted, references=gold, average="binary", pos_label=1)["f1"]
        return scores

    return compute_metrics


def main(argv=None, pairs: bool = False) -> dict:
    """Run the recipe on a command line (default ``sys.argv[1:]``); ``pairs=True`` for sentence pairs. Returns the
    metrics of ``all_results.json``.

    >>> main(["--model_name_or_path", "out/gpt", "--train_file", "sst2/train.tsv", "--do_train",
    ...       "--output_dir", "ft"])  # doctest: +SKIP
    """
    return run(*parse_arguments(argv, TrainingArguments), pairs=pairs)


def run(model_args, data_args, training_args, pairs: bool = False, callbacks=None) -> dict:
    """The recipe on parsed arguments (``ModelArguments``, ``DataTrainingArguments``, ``TrainingArguments``);
    ``callbacks`` are extra ``TrainerCallback``s."""
    task = "sentence_pairs" if pairs else "classification"
    training.start(training_args)
    # Everything that can be wrong with the input is found here, before the Trainer creates the output directory.
    if data_args.partial_input and not pairs:
        raise ValueError("--partial_input keeps one sentence of each pair: it is for sentence pairs "
                         "(recipes/sentence_pairs.py)")
    splits = load_splits(task, data_args, training_args)
    if data_args.partial_input:
        splits = {name: one_sentence_of_each_pair(split, data_args.partial_input) for name, split in splits.items()}
        pairs = False  # from here on, single sentences
    config = training.checked_config(model_args, AutoModelForSequenceClassification, task)
    labels, label2id = build_label_maps(splits, "label", config)
    if len(labels) < 2:
        raise ValueError(f"{splits['train'].source}: only one label ({labels[0]!r}) in the training data; "
                         "classification needs at least two")
    config = training.task_config(model_args, config, id2label=dict(enumerate(labels)), label2id=label2id,
                                  **pair_encoding_override(config, data_args.pair_encoding if pairs else None))
    gpt = uses_gpt_transformations(config)
    model, tokenizer = training.load_model(model_args, AutoModelForSequenceClassification, config,
                                           gpt_task_tokens=gpt)
    pair_task = (data_args.pair_task or default_pair_task(data_args)) if pairs else None
    if gpt:
        model.config.delimiter_token_id = task_token_ids(tokenizer)["delimiter"]
        model.config.pair_task = pair_task  # "similarity": the model reads each pair in both orders
    max_length = training.sequence_length_limit(data_args.max_seq_length, tokenizer, config)
    logger.info("%s (%s) for %s with %d labels%s", model_args.model_name_or_path, family_of(config), task,
                len(labels), f", GPT {pair_task} transformation" if gpt and pairs else "")

    encode, collator = encoding_for(config, tokenizer)
    encoded = training.encode_splits(splits, encode, dict(tokenizer=tokenizer, label2id=label2id,
                                                          max_length=max_length, pairs=pairs),
                                     data_args, "GPT input transformation of" if gpt else "Tokenizing")
    settings = {"max_seq_length": max_length, "freeze_base": model_args.freeze_base, "labels": " ".join(labels)}
    if data_args.partial_input:
        settings["partial_input"] = f"{data_args.partial_input} sentence of each pair only"
    if gpt and pairs:
        settings["pair_task"] = pair_task
    card = training.card_info(task, model_args, data_args, config, splits, AutoModelForSequenceClassification,
                              **settings)
    trainer = training.make_trainer(ClassificationTrainer, model, tokenizer, training_args, encoded, collator, card,
                                    compute_metrics=make_compute_metrics(len(labels)), callbacks=callbacks)

    def write_predictions(trainer, test_dataset):
        test = splits["test"].dataset
        has_gold = "label" in test.column_names
        output = training.predict(trainer, test_dataset, scored=has_gold)
        predicted = np.asarray(logits_of(output.predictions)).argmax(-1)
        if trainer.is_world_process_zero():
            text_columns = ["sentence1", "sentence2"] if pairs else ["sentence"]
            with open(os.path.join(training_args.output_dir, "predictions.tsv"), "w", encoding="utf-8",
                      newline="") as f:
                writer = csv.writer(f, delimiter="\t", lineterminator="\n")
                writer.writerow(["index", *text_columns, "label", "prediction"])
                for i, row in enumerate(test):
                    gold = row["label"] if has_gold else ""
                    writer.writerow([i, *(row[c] for c in text_columns), gold, labels[int(predicted[i])]])
        return output.metrics

    return training.train_evaluate_predict(trainer, encoded, write_predictions)


def run_pairs(model_args, data_args, training_args, callbacks=None) -> dict:
    """``run`` for sentence pairs (``recipes/sentence_pairs.py``)."""
    return run(model_args, data_args, training_args, pairs=True, callbacks=callbacks)
