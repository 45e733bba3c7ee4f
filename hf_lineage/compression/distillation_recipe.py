"""The distillation recipe (``recipes/distillation.py``): a fine-tuned teacher (any lineage classifier or tagger the
task recipes wrote) trains a student on the same task data, plus unlabelled text where given
(``hf_lineage.compression.distillation``).

The student (``--student``):

==============================  =====================================================================================
``bert-layers:N``               the teacher (a lineage BERT) with N of its layers, every k-th down from the top,
                                its embeddings and head (DistilBERT's initialisation)
``bilstm:PATH``                 the task head of the static-vector or ELMo checkpoint PATH: its word features → a
                                BiLSTM → classifier (Tang et al. 2019); ``bilstm-FAMILY:`` (``bilstm-word2vec:``,
                                ``bilstm-elmo:``, ...) also checks the family. ``--student_hidden_size`` sets the BiLSTM's
                                width per direction
``PATH`` (or                    any checkpoint whose family can do the task: a pretraining folder gets a new head; a
``--model_name_or_path``)       fine-tuned one must have the teacher's labels, in the teacher's order
==============================  =====================================================================================

The teacher's logits are computed once, before training, on the training data and the augmentation text, with the
teacher's own tokenizer; for sequence labeling they are kept per word (each word's labelled token) and put on the
student's token of the same word, so teacher and student need not share a tokenizer. The loss is
``α · T² · KL + (1 − α) · CE`` (``--alpha_soft``, ``--temperature``); augmentation rows (``--augmentation_file``:
one sentence a line; sentence pairs: two tab-separated sentences; sequence labeling: words separated by spaces)
have no gold label and get only the KL term.

Same data flags as the task recipes (``--train_file``, ``--validation_file``, ``--test_file``, ``--dataset_name``,
column options) and ``--task classification|sentence_pairs|sequence_labeling``. Everything that can be wrong with
the input is found before the output directory is written. Besides the task recipe's files (the student model and
tokenizer, ``all_results.json``, the model card, predictions) it writes ``distillation.json``: the teacher's and the
student's validation scores on the same examples, the share kept, and both parameter counts.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from dataclasses import dataclass, field

import datasets
import numpy as np
import torch
from transformers import (
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    DataCollatorForTokenClassification,
    TrainingArguments,
)

from ..tasks import classification, labeling, training
from ..tasks.recipe_arguments import DataTrainingArguments, ModelArguments, parse_arguments as parse_task_arguments
from ..tasks.splits import load_splits
from ..tasks.training import (RecipeTrainerMixin, family_of, freeze_base_model, freeze_overrides, load_config,
                              load_tokenizer, sequence_length_limit)
from .distillation import (
    TEACHER_LOGITS,
    TEACHER_POSITIONS,
    DistillationCollator,
    DistillationTrainer,
    bert_student,
    count_parameters,
    spaced_layers,
    static_model_types,
    static_student,
)

logger = logging.getLogger(__name__)

DISTILLATION_TASKS = ("classification", "sentence_pairs", "sequence_labeling")
BILSTM_SPEC = re.compile(r"^bilstm(?:-([a-z0-9]+))?:(.+)$")
LAYERS_SPEC = re.compile(r"^bert-layers:(\d+)$")


@dataclass
class DistillationArguments:
    teacher_model_name_or_path: str = field(
        default=None, metadata={"help": "the fine-tuned teacher: a folder written by a task recipe (required)"})
    student: str | None = field(
        default=None, metadata={"help": "bert-layers:N | bilstm:PATH (bilstm-word2vec:, -nnlm:, -elmo:) | PATH "
                                        "(default: --model_name_or_path)"})
    task: str = field(default="classification",
                      metadata={"help": "classification | sentence_pairs | sequence_labeling"})
    temperature: float = field(default=2.0, metadata={"help": "softmax temperature T of both models' logits"})
    alpha_soft: float = field(default=0.5, metadata={"help": "weight α of the soft (KL) term; 1 − α on the labels"})
    augmentation_file: str | None = field(
        default=None, metadata={"help": "unlabelled text, one example a line, trained on the soft targets only"})
    max_augmentation_samples: int | None = field(default=None, metadata={"help": "use its first N lines"})
    student_hidden_size: int | None = field(
        default=None, metadata={"help": "bilstm students: the task encoder's size per direction"})
    teacher_batch_size: int = field(default=64, metadata={"help": "batch size of the teacher's pass over the data"})

    def __post_init__(self):
        if self.task not in DISTILLATION_TASKS:
            raise ValueError(f"--task must be one of {', '.join(DISTILLATION_TASKS)}, got {self.task!r}")
        if self.temperature <= 0:
            raise ValueError(f"--temperature must be positive, got {self.temperature}")
        if not 0.0 <= self.alpha_soft <= 1.0:
            raise ValueError(f"--alpha_soft must be in [0, 1], got {self.alpha_soft}")
        if self.student_hidden_size is not None and self.student_hidden_size < 1:
            raise ValueError(f"--student_hidden_size must be positive, got {self.student_hidden_size}")


def parse_arguments(argv=None):
    """(ModelArguments, DataTrainingArguments, TrainingArguments, DistillationArguments). ``--model_name_or_path``
    is optional here: it names the student when ``--student`` does not."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not any(a == "--model_name_or_path" or a.startswith("--model_name_or_path=") for a in argv):
        argv += ["--model_name_or_path", ""]
    return parse_task_arguments(argv, dataclass_types=(ModelArguments, DataTrainingArguments, TrainingArguments,
                                                       DistillationArguments))


# --------------------------------------------------------------------------- checks


def ordered_labels(config) -> list[str]:
    return [name for _, name in sorted((config.id2label or {}).items(), key=lambda kv: int(kv[0]))]


def is_fine_tuned(config) -> bool:
    labels = ordered_labels(config)
    return bool(labels) and not all(re.fullmatch(r"LABEL_\d+", n) for n in labels)


def check_data_labels(splits, column: str, labels: list[str], teacher_path: str) -> None:
    known = set(labels)
    for split in splits.values():
        if column not in split.dataset.column_names:
            continue
        values = split.dataset[column]
        flat = {t for row in values for t in row} if column == "tags" else set(values)
        unknown = sorted(v for v in flat - known if v is not None)
        if unknown:
            raise ValueError(f"{split.source}: labels {unknown} are not among the teacher's ({teacher_path}): "
                             f"{', '.join(labels)}")


def teacher_labels(teacher_config, teacher_path: str, splits, column: str) -> list[str]:
    """The teacher's label names in id order; the data must have no others, and labels to train on."""
    if not is_fine_tuned(teacher_config):
        raise ValueError(f"the teacher {teacher_path} has no label names (id2label): it must be a model fine-tuned "
                         "for the task, as the task recipes save one")
    labels = ordered_labels(teacher_config)
    check_data_labels(splits, column, labels, teacher_path)
    if "train" in splits and column not in splits["train"].dataset.column_names:
        raise ValueError(f"{splits['train'].source}: the training data has no labels ({column!r} column)")
    return labels


def read_augmentation(path: str, task: str, limit: int | None) -> datasets.Dataset:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"--augmentation_file {path}: no such file")
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    if limit is not None:
        lines = lines[:limit]
    if not lines:
        raise ValueError(f"--augmentation_file {path}: no text in it")
    if task == "sequence_labeling":
        return datasets.Dataset.from_dict({"tokens": [line.split() for line in lines]})
    if task == "sentence_pairs":
        pairs = [line.split("\t") for line in lines]
        bad = next((i for i, p in enumerate(pairs) if len(p) != 2), None)
        if bad is not None:
            raise ValueError(f"--augmentation_file {path}: line {bad + 1} is not two tab-separated sentences")
        return datasets.Dataset.from_dict({"sentence1": [p[0] for p in pairs], "sentence2": [p[1] for p in pairs]})
    return datasets.Dataset.from_dict({"sentence": lines})


@dataclass
class StudentPlan:
    kind: str  # "layers" | "bilstm" | "checkpoint"
    path: str | None = None
    num_layers: int | None = None


def plan_student(spec: str, teacher_config, auto_class, task: str, teacher_path: str, model_args) -> StudentPlan:
    """What ``--student`` asks for, checked against the teacher before anything is built."""
    layers = LAYERS_SPEC.match(spec)
    if layers:
        n = int(layers.group(1))
        if teacher_config.model_type != "lineage-bert":
            raise ValueError(f"--student {spec}: a layer-subset student needs a lineage-bert teacher; "
                             f"{teacher_path} is {teacher_config.model_type!r}")
        total = teacher_config.num_hidden_layers
        if not 1 <= n < total:
            raise ValueError(f"--student {spec}: the teacher has {total} layers; a student keeps 1 to {total - 1}")
        return StudentPlan("layers", num_layers=n)
    bilstm = BILSTM_SPEC.match(spec)
    path = bilstm.group(2) if bilstm else spec
    if not os.path.isdir(path) and (bilstm or os.path.sep in path or path.startswith(".")):
        raise FileNotFoundError(f"--student {spec}: no model folder {path}")
    config = training.checked_config(model_args, auto_class, task, path)
    if bilstm:
        family = bilstm.group(1)
        wanted = (f"lineage-{family}",) if family else static_model_types()
        if config.model_type not in wanted:
            raise ValueError(f"--student {spec}: {path} is a {config.model_type!r} model, not "
                             f"{' or '.join(repr(w) for w in wanted)}")
        return StudentPlan("bilstm", path=path)
    if is_fine_tuned(config):
        theirs, ours = ordered_labels(config), ordered_labels(teacher_config)
        if theirs != ours:
            how = "in another order" if sorted(theirs) == sorted(ours) else "a different label set"
            raise ValueError(f"the student {path} has labels {theirs} and the teacher {teacher_path} {ours}: "
                             f"{how}; the student's head must predict the teacher's labels")
    return StudentPlan("checkpoint", path=path)


# --------------------------------------------------------------------------- encoding


def encoder_for(task: str, config, tokenizer, max_length: int, label2id: dict):
    """(function, kwargs, collator) that encode the task's columns for a model as its task recipe does."""
    if task == "sequence_labeling":
        return (labeling.tokenize_and_align,
                dict(tokenizer=tokenizer, label2id=label2id, max_length=max_length,
                     last_token=labeling.reads_left_to_right(config)),
                DataCollatorForTokenClassification(tokenizer))
    function, collator = classification.encoding_for(config, tokenizer)
    return (function, dict(tokenizer=tokenizer, label2id=label2id, max_length=max_length,
                           pairs=task == "sentence_pairs"), collator)


def encode(dataset, task, config, tokenizer, max_length, label2id, desc):
    function, kwargs, collator = encoder_for(task, config, tokenizer, max_length, label2id)
    encoded = dataset.map(function, batched=True, remove_columns=dataset.column_names, fn_kwargs=kwargs, desc=desc)
    return encoded, collator


def teacher_predictions(teacher, encoded, collator, tokenizer, batch_size: int, device) -> list:
    """The teacher's logits on every example: (C,) per example, or for token classification (words, C) per example,
    each word's row read at its labelled token (zeros for a word cut off by the teacher's length limit)."""
    token_level = "first_tokens" in encoded.column_names
    inputs = [c for c in encoded.column_names if c in (tokenizer.model_input_names + ["token_type_ids"])]
    loader = torch.utils.data.DataLoader(encoded.select_columns(inputs), batch_size=batch_size, collate_fn=collator)
    teacher.to(device).eval()
    firsts = encoded["first_tokens"] if token_level else None
    out, start = [], 0
    with torch.no_grad():
        for batch in loader:
            logits = teacher(**{k: v.to(device) for k, v in batch.items()}).logits.float().cpu()
            if not token_level:
                out.extend(logits.numpy().tolist())
            else:
                for i in range(logits.shape[0]):
                    first = firsts[start + i]
                    rows = np.zeros((len(first), logits.shape[-1]), dtype=np.float32)
                    for word, position in enumerate(first):
                        if 0 <= position < logits.shape[1]:
                            rows[word] = logits[i, position].numpy()
                    out.append(rows.tolist())
            start += logits.shape[0]
    return out


def with_teacher_columns(encoded, logits, teacher_first_tokens=None):
    """``encoded`` (the student's encoding) with the teacher's logits; for token classification also the student's
    position of each word that both encodings kept (-1 for the others)."""
    encoded = encoded.add_column(TEACHER_LOGITS, logits)
    if teacher_first_tokens is None:
        return encoded
    positions = [[s if s >= 0 and t >= 0 else -1 for s, t in zip(student, teacher)]
                 for student, teacher in zip(encoded["first_tokens"], teacher_first_tokens)]
    return encoded.add_column(TEACHER_POSITIONS, positions)


def without_labels(encoded):
    """Unlabelled rows in the labelled rows' columns: label -100 (per token for token classification)."""
    if "first_tokens" in encoded.column_names:
        return encoded.add_column("labels", [[-100] * len(ids) for ids in encoded["input_ids"]])
    return encoded.add_column("labels", [-100] * len(encoded))


class DistillationRecipeTrainer(RecipeTrainerMixin, DistillationTrainer):
    pass


# --------------------------------------------------------------------------- the recipe


def check_arguments(model_args, training_args, distill_args) -> tuple[str, str]:
    """(the teacher's path, the student's spec), after the checks that need no file read."""
    teacher_path = distill_args.teacher_model_name_or_path
    if not teacher_path:
        raise ValueError("--teacher_model_name_or_path is required: the fine-tuned model that teaches")
    spec = distill_args.student or model_args.model_name_or_path
    if not spec:
        raise ValueError("name the student: --student bert-layers:N | bilstm:PATH | PATH (or --model_name_or_path)")
    if distill_args.student and model_args.model_name_or_path and model_args.model_name_or_path != spec:
        raise ValueError(f"--student {distill_args.student} and --model_name_or_path {model_args.model_name_or_path} "
                         "both name a student: give one")
    if model_args.config_name or model_args.tokenizer_name:
        raise ValueError("--config_name / --tokenizer_name: teacher and student each use their own")
    if os.path.sep in teacher_path and not os.path.isdir(teacher_path):
        raise FileNotFoundError(f"--teacher_model_name_or_path {teacher_path}: no such folder")
    if distill_args.augmentation_file and not training_args.do_train:
        raise ValueError("--augmentation_file is training data: it needs --do_train")
    return teacher_path, spec


def load_student(plan: StudentPlan, teacher, teacher_tokenizer, auto_class, labels, model_args, distill_args):
    """(student, its tokenizer) as ``plan`` says: the teacher's layers, a BiLSTM head, or a checkpoint with a head
    for the teacher's labels; ``--freeze_base`` as the task recipes apply it."""
    if plan.kind == "layers":
        return bert_student(teacher, plan.num_layers), teacher_tokenizer
    student_config = load_config(model_args, path=plan.path)
    overrides = freeze_overrides(student_config, model_args.freeze_base)
    if distill_args.student_hidden_size is not None:
        overrides["task_hidden_size"] = distill_args.student_hidden_size
    if plan.kind == "bilstm":
        student = static_student(plan.path, auto_class, dict(enumerate(labels)), model_args.hub_kwargs(), **overrides)
    else:
        student = auto_class.from_pretrained(plan.path, id2label=dict(enumerate(labels)),
                                             label2id={name: i for i, name in enumerate(labels)}, **overrides,
                                             **model_args.hub_kwargs())
    if not overrides:
        freeze_base_model(student, model_args.freeze_base)
    return student, load_tokenizer(model_args, path=plan.path)


def soft_targets(teacher, tokenizer, max_length, datasets_by_name, task, label2id, batch_size, device):
    """The teacher's logits on each (non-test) dataset, with its own tokenizer; for sequence labeling also each
    word's position in the teacher's encoding."""
    soft, firsts = {}, {}
    for name, dataset in datasets_by_name.items():
        encoded, collator = encode(dataset, task, teacher.config, tokenizer, max_length, label2id,
                                   f"Teacher encoding of {name}")
        soft[name] = teacher_predictions(teacher, encoded, collator, tokenizer, batch_size, device)
        if task == "sequence_labeling":
            firsts[name] = encoded["first_tokens"]
    return soft, firsts


def student_datasets(splits, augmentation, soft, teacher_firsts, task, config, tokenizer, max_length, label2id):
    """(every split in the student's encoding, the student's collator): the training split with the teacher's soft
    targets, followed by the augmentation rows, which have the soft targets only."""
    encoded = {}
    for name, split in splits.items():
        encoded[name], collator = encode(split.dataset, task, config, tokenizer, max_length, label2id,
                                         f"Tokenizing {name}")
    if "train" in encoded:
        train = with_teacher_columns(encoded["train"], soft["train"], teacher_firsts.get("train"))
        if augmentation is not None:
            extra, _ = encode(augmentation, task, config, tokenizer, max_length, label2id,
                              "Tokenizing the augmentation text")
            extra = with_teacher_columns(without_labels(extra), soft["augmentation"],
                                         teacher_firsts.get("augmentation"))
            train = datasets.concatenate_datasets([train, extra.cast(train.features)])
        encoded["train"] = train
    return encoded, collator


def run(model_args, data_args, training_args, distill_args, callbacks=None) -> dict:
    training.start(training_args)
    task = distill_args.task
    auto_class = AutoModelForTokenClassification if task == "sequence_labeling" else AutoModelForSequenceClassification
    column = "tags" if task == "sequence_labeling" else "label"

    # Everything that can be wrong with the input is found here, before the Trainer creates the output directory.
    teacher_path, spec = check_arguments(model_args, training_args, distill_args)
    splits = load_splits(task, data_args, training_args)
    teacher_config = training.checked_config(model_args, auto_class, task, teacher_path)
    labels = teacher_labels(teacher_config, teacher_path, splits, column)
    label2id = {name: i for i, name in enumerate(labels)}
    augmentation = None
    if distill_args.augmentation_file:
        augmentation = read_augmentation(distill_args.augmentation_file, task, distill_args.max_augmentation_samples)
    plan = plan_student(spec, teacher_config, auto_class, task, teacher_path, model_args)
    if plan.kind != "bilstm" and distill_args.student_hidden_size is not None:
        raise ValueError("--student_hidden_size sets a bilstm student's width; this student is " + plan.kind)

    teacher_tokenizer = load_tokenizer(model_args, path=teacher_path)
    teacher = auto_class.from_pretrained(teacher_path, **model_args.hub_kwargs())
    student, student_tokenizer = load_student(plan, teacher, teacher_tokenizer, auto_class, labels, model_args,
                                              distill_args)
    if task != "sequence_labeling" and classification.uses_gpt_transformations(student.config):
        raise ValueError("a lineage-gpt student needs GPT's task tokens, which this recipe does not add; distil into "
                         "a BERT or BiLSTM student")
    teacher_length = sequence_length_limit(data_args.max_seq_length, teacher_tokenizer, teacher.config)
    student_length = sequence_length_limit(data_args.max_seq_length, student_tokenizer, student.config)
    logger.info("distilling %s (%s, %d parameters) into %s (%s, %d parameters) for %s: T=%s, alpha_soft=%s",
                teacher_path, family_of(teacher.config), count_parameters(teacher), spec, family_of(student.config),
                count_parameters(student), task, distill_args.temperature, distill_args.alpha_soft)

    # The teacher's soft targets, once, with its own tokenizer.
    scored = {name: split.dataset for name, split in splits.items() if name != "test"}
    if augmentation is not None:
        scored["augmentation"] = augmentation
    soft, teacher_firsts = soft_targets(teacher, teacher_tokenizer, teacher_length, scored, task, label2id,
                                        distill_args.teacher_batch_size, training_args.device)
    teacher_parameters = count_parameters(teacher)
    teacher.to("cpu")
    del teacher

    encoded, student_collator = student_datasets(splits, augmentation, soft, teacher_firsts, task, student.config,
                                                 student_tokenizer, student_length, label2id)
    collator = DistillationCollator(student_collator, len(labels), getattr(student_tokenizer, "padding_side", "right"))
    if task == "sequence_labeling":
        compute_metrics = labeling.make_compute_metrics(labels, labeling.choose_metric(labels, data_args.metric))
    else:
        compute_metrics = classification.make_compute_metrics(len(labels))

    augmentation_examples = 0 if augmentation is None else len(augmentation)
    card = training.card_info(
        task, model_args, data_args, student.config, splits, auto_class, teacher=teacher_path, student=spec,
        temperature=distill_args.temperature, alpha_soft=distill_args.alpha_soft,
        augmentation_file=distill_args.augmentation_file, augmentation_examples=augmentation_examples,
        max_seq_length=student_length, labels=" ".join(labels))
    card["base_model"] = plan.path or teacher_path
    trainer = training.make_trainer(
        DistillationRecipeTrainer, student, student_tokenizer, training_args, encoded, collator, card,
        compute_metrics=compute_metrics, callbacks=callbacks, temperature=distill_args.temperature,
        alpha_soft=distill_args.alpha_soft)
    results = training.train_evaluate_predict(trainer, encoded, lambda trainer, test: training.predict(
        trainer, test).metrics)

    summary = {"teacher": teacher_path, "student": spec, "task": task, "temperature": distill_args.temperature,
               "alpha_soft": distill_args.alpha_soft, "teacher_parameters": teacher_parameters,
               "student_parameters": count_parameters(student), "augmentation_examples": augmentation_examples}
    if plan.kind == "layers":
        summary["teacher_layers_kept"] = spaced_layers(teacher_config.num_hidden_layers, plan.num_layers)
    if "validation" in soft and training_args.do_eval:
        add_teacher_eval(summary, results, encoded["validation"], soft["validation"], teacher_firsts.get("validation"),
                         labels, task, compute_metrics)
    if trainer.is_world_process_zero():
        with open(os.path.join(training_args.output_dir, "distillation.json"), "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2)
    return results


def add_teacher_eval(summary, results, validation, logits, teacher_firsts, labels, task, compute_metrics) -> None:
    """The teacher scored by the same metric on the same examples, at the student's labelled positions, next to the
    student's score and the share of it the student kept (``summary``; ``results`` gets ``eval_teacher_<metric>``)."""
    teacher_logits = teacher_on_student_positions(validation, logits, teacher_firsts, len(labels))
    gold = pad_labels(validation["labels"]) if task == "sequence_labeling" else np.asarray(validation["labels"])
    teacher_scores = compute_metrics(_Prediction(teacher_logits, gold))
    summary["teacher_eval"] = teacher_scores
    summary["student_eval"] = {k.removeprefix("eval_"): v for k, v in results.items() if k.startswith("eval_")}
    key = "f1" if task == "sequence_labeling" and "precision" in teacher_scores else "accuracy"
    summary["metric"] = key
    summary["kept"] = summary["student_eval"][key] / teacher_scores[key] if teacher_scores[key] else None
    results["eval_teacher_" + key] = teacher_scores[key]


@dataclass
class _Prediction:  # what compute_metrics reads of transformers' EvalPrediction
    predictions: np.ndarray
    label_ids: np.ndarray


def pad_labels(rows) -> np.ndarray:
    width = max(len(r) for r in rows)
    return np.array([list(r) + [-100] * (width - len(r)) for r in rows])


def teacher_on_student_positions(encoded, logits, teacher_firsts, num_labels) -> np.ndarray:
    if teacher_firsts is None:
        return np.asarray(logits, dtype=np.float32)
    width = max(len(ids) for ids in encoded["input_ids"])
    out = np.zeros((len(encoded), width, num_labels), dtype=np.float32)
    # A word the teacher cut off has no prediction of its own: it scores as the teacher's first label there.
    for i, (student_first, teacher_first, rows) in enumerate(zip(encoded["first_tokens"], teacher_firsts, logits)):
        for s, t, row in zip(student_first, teacher_first, rows):
            if s >= 0 and t >= 0:
                out[i, s] = row
    return out
