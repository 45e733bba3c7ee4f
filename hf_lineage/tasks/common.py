"""What the four fine-tuning recipes share: their arguments, reading the data, label maps, loading a model that can
do the task, ``--freeze_base``, the model card and the error handling of the scripts.

The recipes follow transformers' example scripts (``run_ner.py``, ``run_glue.py``, ``run_translation.py``): three
argument dataclasses parsed by ``HfArgumentParser`` (``ModelArguments``, ``DataTrainingArguments`` and transformers'
``TrainingArguments`` / ``Seq2SeqTrainingArguments``), data from the Hub (``--dataset_name``) or local files
(``--train_file``/``--validation_file``/``--test_file``), a ``Trainer``.

Local files: the format is chosen by the file name, then by its header, then by its first lines.

==========================================  ====================================================================
file                                        read as
==========================================  ====================================================================
``*.conllu``                                CoNLL-U (Universal Dependencies): FORM and UPOS (``--conllu_column``)
``*.conll``, ``eng.*``, ``deu.*``           CoNLL-2003: word and NER tag (IOB1 converted to IOB2;
                                            ``--conll_tag_column 1`` for POS)
``*.tsv`` with GLUE's header                GLUE TSV (SST-2, MRPC with its byte-order mark, RTE, ...)
``*.csv`` with ``mr`` and ``ref`` columns   E2E NLG (one row per reference)
other ``*.csv``/``*.tsv``/``*.json(l)``     a table, read as transformers' examples read it
any other name, by content                  CoNLL-U; CoNLL-2003 (``-DOCSTART-`` or IOB tags in the last column,
                                            e.g. ``train.txt``); TREC (``COARSE:fine question`` lines,
                                            ``train_5500.label``; ``--trec_labels coarse|fine``)
``PREFIX`` with ``--source_lang de``        parallel text ``PREFIX.de`` / ``PREFIX.en`` (Multi30k), as
and ``--target_lang en``                    ``--train_file data/train --source_lang de --target_lang en``
==========================================  ====================================================================

Each task then sees the same columns, whatever the source: ``tokens``/``tags`` (sequence labeling), ``sentence`` and
``label`` (classification), ``sentence1``/``sentence2``/``label`` (sentence pairs), ``source``/``target``
(generation). Tables and Hub datasets are mapped onto these from the usual names (``text``, ``ner_tags``,
``question1``, ``premise``, ``translation``, ``document``/``summary``, ...) or from ``--text_column_name`` and its
siblings. Labels are kept as names (strings); the label set comes from the training data (any names, any number);
a validation or test label outside it is an error that names the file and the label.

Everything that can go wrong with the input (a missing or empty file, a malformed line, an unknown label, a model
whose family cannot do the task) is checked before the Trainer is built, so a failed run leaves no output
directory behind; the scripts print the message and exit with status 2 (``run_cli``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import datasets
import transformers
from transformers import AutoConfig, AutoTokenizer, HfArgumentParser, TrainingArguments

from ..data.readers import (
    GLUE_COLUMNS,
    DataFormatError,
    read_conll2003,
    read_conllu,
    read_e2e_csv,
    read_glue_tsv,
    read_parallel_text,
    read_table,
    read_trec,
    sniff_format,
)

logger = logging.getLogger(__name__)

TASKS = ("sequence_labeling", "classification", "sentence_pairs", "generation")
# What each task calls itself in messages and model cards.
TASK_NAMES = {
    "sequence_labeling": "sequence labeling",
    "classification": "classification",
    "sentence_pairs": "sentence-pair classification",
    "generation": "generation",
}
# The config flag that freezes a family's pretrained features in its own task heads (NNLM and word2vec: the vectors;
# ELMo: the biLM). Families without one (BERT, GPT) are frozen by turning off the gradients of ``model.base_model``.
FREEZE_FLAGS = ("freeze_vectors", "freeze_bilm")


# --------------------------------------------------------------------------- arguments


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
    cache_dir: Optional[str] = field(default=None, metadata={"help": "Where Hub downloads are stored."})
    model_revision: str = field(default="main", metadata={"help": "Branch, tag or commit of a Hub model."})
    token: Optional[str] = field(default=None, metadata={"help": "Hub token (default: the stored login)."})
    trust_remote_code: bool = field(
        default=False, metadata={"help": "Allow a Hub checkpoint's own code (not needed with hf_lineage installed)."}
    )

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
        for name in ("max_seq_length", "max_source_length", "max_target_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} must be a positive integer, got {getattr(self, name)}")
        if (self.source_lang is None) != (self.target_lang is None):
            raise ValueError("Give both --source_lang and --target_lang, or neither")


def parse_arguments(argv=None, training_arguments_class=TrainingArguments):
    """(ModelArguments, DataTrainingArguments, training arguments) from ``argv`` (default ``sys.argv[1:]``), or from
    a single ``.json`` file argument as transformers' examples accept.

    A bare ``--freeze_base`` means ``--freeze_base true``. Example::

        >>> model_args, data_args, training_args = parse_arguments(
        ...     ["--model_name_or_path", "out/bert", "--train_file", "train.tsv", "--output_dir", "ft", "--do_train"])
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, training_arguments_class))
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


# --------------------------------------------------------------------------- data


@dataclass
class Split:
    """One split of the task data, with where it came from (for messages and the model card)."""

    dataset: datasets.Dataset
    source: str  # a file path, or "dataset_name[/config] split"


def read_data_file(path: str, task: str, data_args: DataTrainingArguments) -> datasets.Dataset:
    """Read a local file by its name and header (table in the module docstring)."""
    if task == "generation" and data_args.source_lang and not os.path.isfile(path):
        source, target = f"{path}.{data_args.source_lang}", f"{path}.{data_args.target_lang}"
        if os.path.isfile(source):
            return read_parallel_text(source, target)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    if os.path.getsize(path) == 0:
        raise DataFormatError(path, None, "empty file")
    name, suffix = Path(path).name.lower(), Path(path).suffix.lower()
    if suffix == ".conllu":
        return read_conllu(path, column=data_args.conllu_column)
    if suffix == ".conll" or name.startswith(("eng.", "deu.")):
        return read_conll2003(path, tag_column=data_args.conll_tag_column)
    if suffix in (".tsv", ".csv"):
        with open(path, encoding="utf-8-sig") as f:
            header = f.readline().rstrip("\r\n")
        if suffix == ".tsv" and any(column in GLUE_COLUMNS for column in header.split("\t")):
            return read_glue_tsv(path)
        if suffix == ".csv" and {"mr", "ref"} <= {c.strip().strip('"') for c in header.split(",")}:
            return read_e2e_csv(path)
    if suffix in (".tsv", ".csv", ".json", ".jsonl"):
        return read_table(path)
    # Other names (CoNLL-2003 comes as train.txt, TREC as train_5500.label): the first lines say what it is.
    sniffed = sniff_format(path)
    if sniffed == "conllu":
        return read_conllu(path, column=data_args.conllu_column)
    if sniffed == "conll2003":
        return read_conll2003(path, tag_column=data_args.conll_tag_column)
    if sniffed == "trec":
        return read_trec(path, labels=data_args.trec_labels)
    raise DataFormatError(
        path, None, f"unknown format {suffix or name!r}, and the first lines are not CoNLL-2003, CoNLL-U or TREC: "
                    "expected .conll/eng.* (CoNLL-2003), .conllu, .tsv (GLUE), .csv (E2E or a table), .json/.jsonl, "
                    "or a parallel-text prefix with --source_lang/--target_lang")


# Column names each task reads, in order of preference, when no --*_column option names one.
COLUMN_CANDIDATES = {
    "tokens": ("tokens", "words", "sentence"),
    "tags": ("tags", "ner_tags", "pos_tags", "upos", "labels", "label"),
    "sentence": ("sentence", "text"),
    "sentence1": ("sentence1", "question1", "premise", "question", "text1", "text_a"),
    "sentence2": ("sentence2", "question2", "hypothesis", "sentence", "text2", "text_b"),
    "label": ("label", "labels"),
    "source": ("source", "mr", "document", "article", "input", "src"),
    "target": ("target", "ref", "summary", "highlights", "output", "tgt"),
}


def _pick(dataset, wanted: str, given: str | None, where: str, required: bool = True):
    names = dataset.column_names
    if given is not None:
        if given not in names:
            raise ValueError(f"{where}: no column {given!r}; the columns are {names}")
        return given
    for candidate in COLUMN_CANDIDATES[wanted]:
        if candidate in names:
            return candidate
    if required:
        raise ValueError(f"{where}: no {wanted} column; expected one of {list(COLUMN_CANDIDATES[wanted])} "
                         f"(or name it with an option), found {names}")
    return None


def _label_names(dataset, column):
    """A column's values as label names: ClassLabel ids become their names; ints become '0', '1', ...; the Hub's
    -1 for 'no label' (GLUE test sets) becomes None."""
    feature = dataset.features[column]
    inner = getattr(feature, "feature", None)  # Sequence / List of ClassLabel for tag lists
    class_label = feature if isinstance(feature, datasets.ClassLabel) else inner
    names = class_label.names if isinstance(class_label, datasets.ClassLabel) else None

    def name(value):
        if value is None or (names is not None and value == -1):
            return None
        return names[value] if names is not None else str(value)

    return name


def standardize(dataset: datasets.Dataset, task: str, data_args: DataTrainingArguments, where: str):
    """Rename/convert the columns of ``dataset`` to the task's own (see the module docstring) and drop the rest."""
    if task == "sequence_labeling":
        tokens = _pick(dataset, "tokens", data_args.text_column_name, where)
        tags = _pick(dataset, "tags", data_args.label_column_name, where, required=False)
        name = _label_names(dataset, tags) if tags else None
        columns = {"tokens": [list(map(str, row)) for row in dataset[tokens]]}
        if tags:
            columns["tags"] = [[name(t) for t in row] for row in dataset[tags]]
            for i, (words, row) in enumerate(zip(columns["tokens"], columns["tags"])):
                if len(words) != len(row):
                    raise ValueError(f"{where}: example {i} has {len(words)} tokens but {len(row)} tags")
    elif task in ("classification", "sentence_pairs"):
        if task == "classification":
            texts = {"sentence": _pick(dataset, "sentence", data_args.text_column_name, where)}
        else:
            first = _pick(dataset, "sentence1", data_args.text_column_name, where)
            second = _pick(dataset, "sentence2", data_args.text_pair_column_name, where)
            texts = {"sentence1": first, "sentence2": second}
        label = _pick(dataset, "label", data_args.label_column_name, where, required=False)
        columns = {ours: ["" if t is None else str(t) for t in dataset[theirs]] for ours, theirs in texts.items()}
        if label:
            name = _label_names(dataset, label)
            labels = [name(v) for v in dataset[label]]
            if any(v is not None for v in labels):
                columns["label"] = labels
    elif task == "generation":
        if "translation" in dataset.column_names and data_args.source_lang and data_args.source_column is None:
            pairs = dataset["translation"]
            columns = {"source": [p[data_args.source_lang] for p in pairs],
                       "target": [p[data_args.target_lang] for p in pairs]}
        else:
            source = _pick(dataset, "source", data_args.source_column, where)
            target = _pick(dataset, "target", data_args.target_column, where, required=False)
            columns = {"source": [str(s) for s in dataset[source]]}
            if target:
                columns["target"] = [str(t) for t in dataset[target]]
    else:
        raise ValueError(f"Unknown task {task!r}; tasks: {TASKS}")
    return datasets.Dataset.from_dict(columns)


def load_splits(task: str, data_args: DataTrainingArguments, training_args) -> dict[str, Split]:
    """The splits the run needs (``train`` for --do_train, ``validation`` for --do_eval, ``test`` for --do_predict),
    read, standardized and cut to ``--max_*_samples``."""
    wanted = {"train": training_args.do_train, "validation": training_args.do_eval, "test": training_args.do_predict}
    files = {"train": data_args.train_file, "validation": data_args.validation_file, "test": data_args.test_file}
    limits = {"train": data_args.max_train_samples, "validation": data_args.max_eval_samples,
              "test": data_args.max_predict_samples}
    hub = None
    if data_args.dataset_name is not None:
        hub = datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name)
    splits = {}
    for split, needed in wanted.items():
        if not needed:
            continue
        flag = {"train": "--do_train", "validation": "--do_eval", "test": "--do_predict"}[split]
        option = {"train": "--train_file", "validation": "--validation_file", "test": "--test_file"}[split]
        if files[split] is not None:
            source = files[split]
            dataset = read_data_file(source, task, data_args)
        elif hub is not None:
            source = "/".join(filter(None, [data_args.dataset_name, data_args.dataset_config_name])) + f" {split}"
            if split not in hub:
                raise ValueError(f"{flag}: the dataset {data_args.dataset_name!r} has no {split!r} split "
                                 f"(it has {list(hub)}); pass {option}")
            dataset = hub[split]
        else:
            raise ValueError(f"{flag} needs {option} or --dataset_name")
        dataset = standardize(dataset, task, data_args, source)
        if limits[split] is not None and task == "generation" and split != "train":
            # Generation is scored per distinct input against all its references (an E2E MR has several rows):
            # keep every row of the first N inputs, not the first N rows.
            kept = set(list(dict.fromkeys(dataset["source"]))[:limits[split]])
            dataset = dataset.select([i for i, s in enumerate(dataset["source"]) if s in kept])
        elif limits[split] is not None:
            dataset = dataset.select(range(min(limits[split], len(dataset))))
        if len(dataset) == 0:
            raise DataFormatError(source, None, "no examples")
        splits[split] = Split(dataset, source)
    return splits


# --------------------------------------------------------------------------- labels


def _sorted_labels(names) -> list[str]:
    names = set(names)
    if all(re.fullmatch(r"-?\d+", n) for n in names):
        return sorted(names, key=int)  # "2" before "10"
    return sorted(names)


def _column_labels(split: Split, column: str) -> list:
    values = split.dataset[column]
    return [t for row in values for t in row] if column == "tags" else values


def build_label_maps(splits: dict[str, Split], column: str, config) -> tuple[list[str], dict[str, int]]:
    """The label names in id order. From the training split (any names, any number; numeric names sorted as numbers)
    — or, without training, from a fine-tuned checkpoint's ``config.id2label``. Keeps the checkpoint's order when
    it already knows every training label. Then checks every other split: a label the model does not know is an
    error naming the file and the label."""
    known = getattr(config, "id2label", None) or {}
    checkpoint_labels = [name for _, name in sorted(known.items(), key=lambda kv: int(kv[0]))]
    fine_tuned = bool(checkpoint_labels) and not all(re.fullmatch(r"LABEL_\d+", n) for n in checkpoint_labels)
    if "train" in splits:
        split = splits["train"]
        if column not in split.dataset.column_names:
            raise ValueError(f"{split.source}: the training data has no labels ({column!r} column)")
        names = _column_labels(split, column)
        if any(n is None or n == "" for n in names):
            index = next(i for i, n in enumerate(names) if n is None or n == "")
            raise ValueError(f"{split.source}: an example has no label (item {index})")
        labels = _sorted_labels(names)
        if fine_tuned and set(labels) <= set(checkpoint_labels):
            labels = checkpoint_labels
    elif fine_tuned:
        labels = checkpoint_labels
    else:
        raise ValueError("Without --do_train the model must be a fine-tuned checkpoint whose config names its labels "
                         "(id2label); this one has none")
    label2id = {name: i for i, name in enumerate(labels)}
    for name, split in splits.items():
        if name == "train" or column not in split.dataset.column_names:
            continue
        for value in _column_labels(split, column):
            if value is not None and value not in label2id:
                raise ValueError(f"{split.source}: label {value!r} does not occur in the training data; "
                                 f"known labels: {', '.join(labels)}")
    return labels, label2id


# --------------------------------------------------------------------------- model


def family_of(config) -> str:
    return config.model_type.removeprefix("lineage-")


def load_config(model_args: ModelArguments, path: str | None = None, **overrides):
    path = path or model_args.config_name or model_args.model_name_or_path
    try:
        return AutoConfig.from_pretrained(path, **model_args.hub_kwargs(), **overrides)
    except OSError as error:
        raise ValueError(f"Cannot load a model config from {path!r}: {error}") from None


def require_auto_class(config, auto_class, task: str, path: str) -> None:
    """A clear error for a checkpoint whose family has no class for the task (before anything is built)."""
    if type(config) not in auto_class._model_mapping:
        raise ValueError(
            f"{path} is a {family_of(config)!r} model (model_type {config.model_type!r}), a model that cannot do "
            f"{TASK_NAMES.get(task, task)}: its family has no {auto_class.__name__} class"
        )


def load_tokenizer(model_args: ModelArguments, path: str | None = None):
    path = path or model_args.tokenizer_name or model_args.model_name_or_path
    try:
        return AutoTokenizer.from_pretrained(path, **model_args.hub_kwargs())
    except OSError as error:
        raise ValueError(f"Cannot load a tokenizer from {path!r}: {error}") from None


def freeze_overrides(config, freeze_base: bool | None) -> dict:
    """Config overrides for ``--freeze_base`` in families whose task heads read a freeze flag."""
    flag = next((f for f in FREEZE_FLAGS if hasattr(config, f)), None)
    return {flag: freeze_base} if flag is not None and freeze_base is not None else {}


def freeze_base_model(model, freeze_base: bool | None) -> None:
    """``--freeze_base`` for the models without a freeze flag: turn off the gradients of the pretrained part
    (``model.base_model``; an encoder-decoder's encoder). The task layers keep training."""
    if not freeze_base:
        return
    base = model.encoder if isinstance(model, transformers.EncoderDecoderModel) else model.base_model
    if base is model:
        raise ValueError(f"--freeze_base: cannot tell the pretrained part of {type(model).__name__} from its task "
                         "layers (no base_model_prefix)")
    for param in base.parameters():
        param.requires_grad_(False)


def parameter_counts(model) -> dict[str, int]:
    params = list(model.parameters())
    return {"parameters": sum(p.numel() for p in params),
            "trainable_parameters": sum(p.numel() for p in params if p.requires_grad)}


def sequence_length_limit(requested: int, tokenizer, config) -> int:
    """``requested``, capped by the tokenizer's and the model's position limits (NNLM, word2vec and ELMo have none)."""
    limits = [requested, getattr(tokenizer, "model_max_length", None) or requested]
    positions = getattr(config, "max_position_embeddings", None)
    if positions:
        limits.append(positions)
    return int(min(limits))


# --------------------------------------------------------------------------- outputs


class RecipeTrainerMixin:
    """What the recipes add to Trainer (a mixin, before the Trainer class in the bases):

    * hf_lineage's model card (base model, data, metrics, how it was trained) as README.md, in place of Trainer's
      own: ``trainer.create_model_card()`` after training, and ``push_to_hub`` uploads the same card;
    * every input the tokenizer makes reaches the model: Trainer drops dataset columns that are not named arguments
      of ``forward``, but ELMo's heads take ``char_ids`` through ``**kwargs``."""

    card_info: dict | None = None

    def _set_signature_columns_if_needed(self):
        super()._set_signature_columns_if_needed()
        names = getattr(self.processing_class, "model_input_names", None) or []
        self._signature_columns += [name for name in names if name not in self._signature_columns]

    def create_model_card(self, **kwargs):
        if not self.is_world_process_zero():
            return
        info = self.card_info or {}
        path = os.path.join(self.args.output_dir, "README.md")
        results = {}
        results_file = os.path.join(self.args.output_dir, "all_results.json")
        if os.path.exists(results_file):
            with open(results_file, encoding="utf-8") as f:
                results = json.load(f)
        with open(path, "w", encoding="utf-8") as f:
            f.write(model_card(info, results, self.args))


def model_card(info: dict, results: dict, args) -> str:
    """Markdown with a YAML header: base model, family, task, data, the run's metrics, training settings, use."""
    from ..models.modeling_lineage_utils import PAPERS

    base = info.get("base_model", "")
    model_type = info.get("model_type", "")
    task = info.get("task", "")
    tags = ["hf-lineage", model_type, task.replace("_", "-")]
    header = ["---", "library_name: transformers", "tags:", *[f"- {t}" for t in tags if t]]
    if base and not os.path.isdir(base):
        header.append(f"base_model: {base}")
    if info.get("dataset_name"):
        header += ["datasets:", f"- {info['dataset_name']}"]
    header.append("---")
    data_rows = "\n".join(f"| {split} | `{split_info['source']}` | {split_info['examples']:,} |"
                          for split, split_info in info.get("data", {}).items())
    metric_rows = "\n".join(f"| `{k}` | {v:.4f} |" if isinstance(v, float) else f"| `{k}` | {v} |"
                            for k, v in sorted(results.items()) if "runtime" not in k and "per_second" not in k)
    settings = {
        "learning_rate": args.learning_rate, "num_train_epochs": args.num_train_epochs,
        "max_steps": args.max_steps, "per_device_train_batch_size": args.per_device_train_batch_size,
        "seed": args.seed, **info.get("settings", {}),
    }
    setting_rows = "\n".join(f"| `{k}` | `{v}` |" for k, v in settings.items())
    auto_class = info.get("auto_class", "AutoModel")
    return "\n".join(header) + f"""

# {Path(args.output_dir).name}

A `{model_type}` model fine-tuned for {TASK_NAMES.get(task, task)} with hf_lineage's `recipes/{task}.py`
recipe. Base model: `{base}`.

Paper: {PAPERS.get(model_type, "see the hf_lineage documentation")}

## Data

| split | data | examples |
|---|---|---|
{data_rows}

## Results

| metric | value |
|---|---|
{metric_rows}

## Training

| setting | value |
|---|---|
{setting_rows}

## Use

```python
import hf_lineage  # registers the lineage families (or pass trust_remote_code=True without it)
from transformers import {auto_class}, AutoTokenizer
model = {auto_class}.from_pretrained("<this folder or repo>")
tokenizer = AutoTokenizer.from_pretrained("<this folder or repo>")
```
"""


def card_data(splits: dict[str, Split], data_args: DataTrainingArguments) -> dict:
    return {"data": {name: {"source": split.source, "examples": len(split.dataset)} for name, split in splits.items()},
            "dataset_name": data_args.dataset_name}


def train_evaluate_predict(trainer, training_args, model_args, train_dataset, eval_dataset, test_dataset,
                           write_predictions=None, save_tokenizers=()):
    """The end of every recipe: train (resuming if asked), save model + tokenizer, evaluate, predict, write
    all_results.json and the model card, push if asked. ``write_predictions(trainer, test_dataset)`` returns the
    prediction metrics after writing its files. Returns every metric, keyed like all_results.json."""
    results = {}
    if training_args.do_train:
        outcome = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
        metrics = dict(outcome.metrics, train_samples=len(train_dataset), **parameter_counts(trainer.model))
        trainer.save_model()  # the model and its tokenizer (processing_class)
        for subfolder, tokenizer in save_tokenizers:
            if trainer.is_world_process_zero():
                tokenizer.save_pretrained(os.path.join(training_args.output_dir, subfolder))
        trainer.log_metrics("train", metrics)
        trainer.save_metrics("train", metrics)
        trainer.save_state()
        results.update(metrics)
    if training_args.do_eval:
        metrics = trainer.evaluate(eval_dataset=eval_dataset)
        metrics["eval_samples"] = len(eval_dataset)
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)
        results.update(metrics)
    if training_args.do_predict:
        metrics = write_predictions(trainer, test_dataset)
        metrics["predict_samples"] = len(test_dataset)
        trainer.log_metrics("predict", metrics)
        trainer.save_metrics("predict", metrics)
        results.update(metrics)
    trainer.create_model_card()
    if training_args.push_to_hub:
        trainer.push_to_hub()
    return results


# --------------------------------------------------------------------------- scripts


def run_cli(main, argv=None) -> int:
    """Run a recipe's ``main(argv)``: bad input (a ValueError, a missing file) or a Hub that cannot be reached
    prints one ``error: ...`` line on stderr and exits with status 2, as argparse does for a bad option; anything
    else is a bug and keeps its traceback."""
    try:
        main(argv)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        if not is_hub_error(error):
            raise
        # No network, offline mode or no token: one line, not the HTTP client's hundred-line traceback.
        print(f"error: the Hugging Face Hub could not be reached ({type(error).__name__}: "
              f"{str(error).splitlines()[0] if str(error) else 'no details'}). --push_to_hub and Hub ids need the "
              "network and a token (`hf auth login`); HF_HUB_OFFLINE=1 forbids it.", file=sys.stderr)
        return 2
    return 0


# The packages a failed Hub call raises from: huggingface_hub itself and the HTTP clients it has used.
HUB_ERROR_MODULES = ("huggingface_hub", "httpx", "httpx2", "httpcore", "httpcore2", "requests", "urllib3")


def is_hub_error(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) is a failed call to the Hugging Face Hub."""
    while error is not None:
        if type(error).__module__.split(".")[0] in HUB_ERROR_MODULES:
            return True
        error = error.__cause__ or error.__context__
    return False


def setup_logging(training_args) -> None:
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                        handlers=[logging.StreamHandler(sys.stdout)])
    level = training_args.get_process_log_level()
    logger.setLevel(level)
    logging.getLogger("hf_lineage").setLevel(level)
    datasets.utils.logging.set_verbosity(level)
    transformers.utils.logging.set_verbosity(level)
