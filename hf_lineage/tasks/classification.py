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
from transformers import (
    AutoModelForSequenceClassification,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
    set_seed,
)

from .. import metrics as lineage_metrics
from ..data.gpt_tasks import DataCollatorForGPTTasks, add_gpt_task_tokens, set_gpt_task_template
from .arguments import check_actions, parse_arguments
from .data import Split, build_label_maps, load_splits
from .training import (
    RecipeTrainerMixin,
    card_data,
    family_of,
    freeze_base_model,
    freeze_overrides,
    load_config,
    load_tokenizer,
    require_auto_class,
    sequence_length_limit,
    setup_logging,
    train_evaluate_predict,
)

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
    return config.model_type == "lineage-gpt"


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


def make_compute_metrics(num_labels: int):
    accuracy, f1 = lineage_metrics.load("accuracy"), lineage_metrics.load("f1")

    def compute_metrics(prediction):
        logits = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
        predicted = np.asarray(logits).argmax(-1)
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
    check_actions(training_args)
    setup_logging(training_args)
    set_seed(training_args.seed)

    # Everything that can be wrong with the input is found here, before the Trainer creates the output directory.
    if data_args.partial_input and not pairs:
        raise ValueError("--partial_input keeps one sentence of each pair: it is for sentence pairs "
                         "(recipes/sentence_pairs.py)")
    splits = load_splits(task, data_args, training_args)
    if data_args.partial_input:
        splits = {name: one_sentence_of_each_pair(split, data_args.partial_input) for name, split in splits.items()}
        pairs = False  # from here on, single sentences
    config = load_config(model_args)
    path = model_args.model_name_or_path
    require_auto_class(config, AutoModelForSequenceClassification, task, path)
    labels, label2id = build_label_maps(splits, "label", config)
    if len(labels) < 2:
        raise ValueError(f"{splits['train'].source}: only one label ({labels[0]!r}) in the training data; "
                         "classification needs at least two")
    freeze = freeze_overrides(config, model_args.freeze_base)
    config = load_config(model_args, id2label=dict(enumerate(labels)), label2id=label2id, **freeze,
                         **pair_encoding_override(config, data_args.pair_encoding if pairs else None))
    tokenizer = load_tokenizer(model_args)
    model = AutoModelForSequenceClassification.from_pretrained(path, config=config, **model_args.hub_kwargs())
    gpt = uses_gpt_transformations(config)
    pair_task = (data_args.pair_task or default_pair_task(data_args)) if pairs else None
    if gpt:
        task_ids = add_gpt_task_tokens(tokenizer, model)  # <s> $ <e>: new embedding rows, learned in fine-tuning
        set_gpt_task_template(tokenizer)  # saved with the model: pipelines then read input as it was fine-tuned
        model.config.delimiter_token_id = task_ids["delimiter"]
        model.config.pair_task = pair_task  # "similarity": the model reads each pair in both orders
    if not freeze:
        freeze_base_model(model, model_args.freeze_base)
    max_length = sequence_length_limit(data_args.max_seq_length, tokenizer, config)
    logger.info("%s (%s) for %s with %d labels%s", path, family_of(config), task, len(labels),
                f", GPT {pair_task} transformation" if gpt and pairs else "")

    encoded = {}
    for name, split in splits.items():
        if gpt:
            encoded[name] = split.dataset.map(
                encode_gpt, batched=True, remove_columns=split.dataset.column_names,
                num_proc=data_args.preprocessing_num_workers, desc=f"GPT input transformation of {name}",
                fn_kwargs=dict(tokenizer=tokenizer, label2id=label2id, max_length=max_length, pairs=pairs))
        else:
            encoded[name] = split.dataset.map(
                encode_batch, batched=True, remove_columns=split.dataset.column_names,
                num_proc=data_args.preprocessing_num_workers, desc=f"Tokenizing {name}",
                fn_kwargs=dict(tokenizer=tokenizer, label2id=label2id, max_length=max_length, pairs=pairs))
    collator = DataCollatorForGPTTasks(tokenizer.pad_token_id) if gpt else DataCollatorWithPadding(tokenizer)

    trainer = ClassificationTrainer(
        model=model,
        args=training_args,
        train_dataset=encoded.get("train"),
        eval_dataset=encoded.get("validation"),
        processing_class=tokenizer,
        data_collator=collator,
        compute_metrics=make_compute_metrics(len(labels)),
        callbacks=callbacks,
    )
    settings = {"max_seq_length": max_length, "freeze_base": model_args.freeze_base, "labels": " ".join(labels)}
    if data_args.partial_input:
        settings["partial_input"] = f"{data_args.partial_input} sentence of each pair only"
    if gpt and pairs:
        settings["pair_task"] = pair_task
    trainer.card_info = {"base_model": path, "model_type": config.model_type, "task": task,
                         "auto_class": "AutoModelForSequenceClassification", **card_data(splits, data_args),
                         "settings": settings}

    def write_predictions(trainer, test_dataset):
        test = splits["test"].dataset
        has_gold = "label" in test.column_names
        if not has_gold:
            trainer.compute_metrics = None  # nothing to score against
        output = trainer.predict(test_dataset, metric_key_prefix="predict")
        logits = output.predictions[0] if isinstance(output.predictions, tuple) else output.predictions
        predicted = np.asarray(logits).argmax(-1)
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

    return train_evaluate_predict(trainer, training_args, model_args, encoded.get("train"),
                                  encoded.get("validation"), encoded.get("test"), write_predictions)
