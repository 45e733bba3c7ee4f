"""The task data of a run: its splits read from local files (``hf_lineage.data.readers.read_file``) or the Hub
(``--dataset_name``), put in the task's columns, cut to ``--max_*_samples``, and the label set.

Each task sees the same columns, whatever the source: ``tokens``/``tags`` (sequence labeling), ``sentence`` and
``label`` (classification), ``sentence1``/``sentence2``/``label`` (sentence pairs), ``source``/``target``
(generation). Tables and Hub datasets are mapped onto these from the usual names (``text``, ``ner_tags``,
``question1``, ``premise``, ``translation``, ``document``/``summary``, ...) or from ``--text_column_name`` and its
siblings. Labels are kept as names (strings); the label set comes from the training data (any names, any number);
a validation or test label outside it is an error that names the file and the label.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import datasets

from ..data.readers import DataFormatError, read_file
from .recipe_arguments import DataTrainingArguments


@dataclass
class Split:
    """One split of the task data, with where it came from (for messages and the model card)."""

    dataset: datasets.Dataset
    source: str  # a file path, or "dataset_name[/config] split"


def read_data_file(path: str, task: str, data_args: DataTrainingArguments) -> datasets.Dataset:
    """A local file of ``task`` data, read with the options the command line gives the readers (a path that is not
    a file names parallel text only for generation)."""
    languages = None
    if task == "generation" and data_args.source_lang:
        languages = (data_args.source_lang, data_args.target_lang)
    return read_file(path, conllu_column=data_args.conllu_column, conll_tag_column=data_args.conll_tag_column,
                     trec_labels=data_args.trec_labels, languages=languages)


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
        raise ValueError(f"Unknown task {task!r}: standardize knows sequence_labeling, classification, sentence_pairs "
                         "and generation (question answering and intent and slots read their own columns)")
    return datasets.Dataset.from_dict(columns)


def wanted_splits(data_args: DataTrainingArguments, training_args) -> list[tuple]:
    """(split, file, --max_*_samples, flag, file option) of each split the run needs: ``train`` for --do_train,
    ``validation`` for --do_eval, ``test`` for --do_predict."""
    return [(split, file, limit, flag, option) for split, needed, file, limit, flag, option in (
        ("train", training_args.do_train, data_args.train_file, data_args.max_train_samples, "--do_train",
         "--train_file"),
        ("validation", training_args.do_eval, data_args.validation_file, data_args.max_eval_samples, "--do_eval",
         "--validation_file"),
        ("test", training_args.do_predict, data_args.test_file, data_args.max_predict_samples, "--do_predict",
         "--test_file"),
    ) if needed]


def hub_split(hub, split: str, data_args: DataTrainingArguments, flag: str, option: str):
    """(source, dataset) of ``split`` of the Hub dataset ``hub`` (``--dataset_name``), or why the run has no data."""
    if hub is None:
        raise ValueError(f"{flag} needs {option} or --dataset_name")
    if split not in hub:
        raise ValueError(f"{flag}: the dataset {data_args.dataset_name!r} has no {split!r} split "
                         f"(it has {list(hub)}); pass {option}")
    return "/".join(filter(None, [data_args.dataset_name, data_args.dataset_config_name])) + f" {split}", hub[split]


def load_splits(task: str, data_args: DataTrainingArguments, training_args, standardized=None) -> dict[str, Split]:
    """The splits the run needs (``wanted_splits``), read, standardized and cut to ``--max_*_samples``.
    ``standardized(dataset, source)`` replaces ``standardize`` for a task whose columns need its own arguments
    (multiple choice)."""
    standardized = standardized or (lambda dataset, source: standardize(dataset, task, data_args, source))
    hub = None
    if data_args.dataset_name is not None:
        hub = datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name)
    splits = {}
    for split, file, limit, flag, option in wanted_splits(data_args, training_args):
        if file is not None:
            source, dataset = file, read_data_file(file, task, data_args)
        else:
            source, dataset = hub_split(hub, split, data_args, flag, option)
        dataset = standardized(dataset, source)
        if limit is not None and task == "generation" and split != "train":
            # Generation is scored per distinct input against all its references (an E2E MR has several rows):
            # keep every row of the first N inputs, not the first N rows.
            kept = set(list(dict.fromkeys(dataset["source"]))[:limit])
            dataset = dataset.select([i for i, s in enumerate(dataset["source"]) if s in kept])
        elif limit is not None:
            dataset = dataset.select(range(min(limit, len(dataset))))
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
