"""The data every stage reads: the pretraining corpus (local files, a Hub dataset or the embedded WikiText-2 sample) and
each task's training subsets, dev split and validation set, written once into the stage's folder."""

from __future__ import annotations

import json
from pathlib import Path

from ..experiments.stages import process_state
from .settings import SAMPLE_PATHS, SAMPLES, TASKS, LineageArguments, Scale


def count_words(paths) -> int:
    words = 0
    for path in paths:
        with open(path, encoding="utf-8") as f:
            words += sum(len(line.split()) for line in f)
    return words


def prepare_corpus(args: LineageArguments, scale: Scale, data_dir: Path) -> dict:
    """The corpus every family pretrains on: local files, a Hub dataset (written to files once, so every family
    reads the very same text), or the embedded WikiText-2 sample cut to the scale's size at an article boundary."""
    if args.corpus:
        train, validation = list(args.corpus), list(args.validation_corpus or [])
        name, license_ = ", ".join(args.corpus), "as its source states"
    elif args.dataset_name:
        import datasets

        train, validation = [str(data_dir / "corpus.train.txt")], [str(data_dir / "corpus.validation.txt")]
        loaded = datasets.load_dataset(args.dataset_name, args.dataset_config)
        for split, path in (("train", train[0]), ("validation", validation[0])):
            if split in loaded and not Path(path).exists():
                partial = Path(path + ".partial")
                with open(partial, "w", encoding="utf-8") as f:
                    for row in loaded[split]:
                        f.write(str(row[args.text_column]).rstrip("\n") + "\n")
                partial.rename(path)
        validation = [p for p in validation if Path(p).exists()]
        name = f"{args.dataset_name} ({args.dataset_config})" if args.dataset_config else args.dataset_name
        license_ = "as its Hub card states"
    else:
        train, validation = [str(data_dir / "corpus.train.txt")], [str(SAMPLES / "corpus.validation.txt")]
        cut_corpus(SAMPLES / "corpus.train.txt", Path(train[0]), scale.corpus_words)
        name, license_ = "WikiText-2 sample embedded in hf_lineage (Merity et al., 2016)", "CC BY-SA"
    return {"name": name, "license": license_, "train": train, "validation": validation,
            "train_words": count_words(train), "validation_words": count_words(validation)}


def cut_corpus(source: Path, target: Path, words: int | None) -> None:
    """The first whole articles of a WikiText-format file (`` = Title = `` lines start articles) up to ``words``."""
    if target.exists():
        return
    kept, total = [], 0
    with open(source, encoding="utf-8") as f:
        for line in f:
            is_title = line.startswith(" = ") and not line.startswith(" = = ")
            if words is not None and is_title and total >= words:
                break
            kept.append(line)
            total += len(line.split())
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_text("".join(kept), encoding="utf-8")
    partial.rename(target)


def task_files(args: LineageArguments) -> dict:
    """Each requested task's train and validation files: ``--task-data``'s, or the embedded samples."""
    files = {}
    for task in args.tasks:
        if task in args.task_data:
            files[task] = dict(args.task_data[task], source=args.task_data[task]["train"])
        else:
            train, validation = SAMPLE_PATHS[task]
            files[task] = {"train": str(train), "validation": str(validation), "source": "embedded sample"}
    return files


def read_task_file(task: str, path: str):
    """A task file read and put in the task's columns by the recipes' own readers."""
    kind = TASKS[task].kind
    if kind == "question_answering":  # SQuAD JSON or flat rows → id, question, context, answers
        from ..tasks.question_answering import QuestionAnsweringArguments, read_qa_file, standardize_qa

        return standardize_qa(read_qa_file(path), path, QuestionAnsweringArguments())
    if kind == "intent_and_slots":  # JSON lines or an ATIS/SNIPS seq.in/seq.out/label folder → words, slots, intent
        from ..data.readers import read_intent_and_slots

        return read_intent_and_slots(path)
    if kind == "multiple_choice":  # SWAG's columns or the cloze's → context, choices, label
        from ..tasks import DataTrainingArguments, read_data_file
        from ..tasks.multiple_choice import MultipleChoiceArguments, standardize as standardize_choices

        return standardize_choices(read_data_file(path, kind, DataTrainingArguments()), MultipleChoiceArguments(),
                                   DataTrainingArguments(), path)
    from ..tasks import DataTrainingArguments, read_data_file, standardize

    return standardize(read_data_file(path, kind, DataTrainingArguments()), kind, DataTrainingArguments(), path)


# The columns holding a task's labels: every label the evaluated data has must occur in a training subset (the recipes
# refuse one that does not). Generation and QA have none (any text or span may be an answer).
LABEL_COLUMNS = {"sequence_labeling": ("tags",), "classification": ("label",), "sentence_pairs": ("label",),
                 "intent_and_slots": ("intent", "slots"), "question_answering": (), "generation": (),
                 "multiple_choice": ()}
# Columns that hold one label per word rather than one per example.
WORD_LABEL_COLUMNS = ("tags", "slots")


def prepare_task_data(task: str, files: dict, sizes: list[int], n_validation: int | None, n_dev: int,
                      folder: Path) -> dict:
    """The task's data stage, written once as JSON lines that every fine-tuning stage of the task then reads:

    - ``dev``: the last ``n_dev`` examples of the training file (generation: whole meaning representations), for
      early stopping and the best checkpoint; never the validation data, and disjoint from every training subset;
    - ``train-<n>`` for each labelled-set size ``n``: the first ``n`` examples of the rest (nested: the 100 are among
      the 300), so a learning curve adds data without changing what was already there. For labelled tasks the first
      later example of any label the validation set or the dev split has but the subset lacks is added (the
      recipes refuse labels never seen in training), and recorded;
    - ``validation``: the first ``n_validation`` examples of the validation file (None: all), cut back to whole
      meaning representations for generation (each is scored against all its references).
    """
    kind = TASKS[task].kind
    train, validation = read_task_file(task, files["train"]), read_task_file(task, files["validation"])
    validation = validation.select(range(_whole_sources(validation, n_validation or len(validation), kind)))
    pool_size = _whole_sources(train, max(len(train) - n_dev, 0), kind)
    if pool_size < 1 or pool_size >= len(train):
        raise ValueError(f"{files['train']}: {len(train)} training examples cannot give {n_dev} dev examples and a "
                         "training set")
    dev, pool = train.select(range(pool_size, len(train))), train.select(range(pool_size))
    # a label only the dev split has (and no training example) cannot be learned: the recipes refuse it
    paths, subsets = {}, {}
    for size in sorted(set(sizes)):
        chosen, added = _subset_covering_labels(pool, [validation, dev], min(size, len(pool)), LABEL_COLUMNS[kind])
        subsets[size] = {"examples": len(chosen), "added_for_labels": added, "capped": size > len(pool)}
        paths[f"train-{size}"] = (folder / f"train-{size}.jsonl", pool.select(chosen))
    paths["dev"], paths["validation"] = (folder / "dev.jsonl", dev), (folder / "validation.jsonl", validation)
    if process_state().is_main_process:
        folder.mkdir(parents=True, exist_ok=True)
        for path, data in paths.values():
            with open(path, "w", encoding="utf-8") as f:
                for row in data:
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
    if kind == "sequence_labeling":
        units = sum(len(tokens) for tokens in validation["tokens"])  # per-word accuracy
    elif kind == "generation":
        units = len(set(validation["source"]))  # each source is generated and scored once
    else:
        units = len(validation)
    return {"files": {name: str(path) for name, (path, _) in paths.items()}, "subsets": subsets,
            "dev_examples": len(dev), "pool_examples": len(pool), "validation_examples": len(validation),
            "validation_units": units}


def _whole_sources(data, rows: int, kind: str) -> int:
    """``rows`` moved back to the start of a meaning representation (generation), so none is split in two."""
    if kind != "generation":
        return min(rows, len(data))
    rows = min(rows, len(data))
    while 0 < rows < len(data) and data["source"][rows - 1] == data["source"][rows]:
        rows -= 1
    return rows


def _subset_covering_labels(pool, evaluated: list, size: int, label_columns) -> tuple[list[int], int]:
    """The first ``size`` rows of ``pool``, plus, for each label of ``label_columns`` that the ``evaluated`` data has
    and those rows lack, the first later row that has it; (row indices, rows added)."""
    chosen = list(range(size))
    if not label_columns:
        return chosen, 0

    def label_sets(data) -> list[set]:  # each row's (column, label) pairs; columns read once (datasets 3: lists)
        columns = {column: list(data[column]) for column in label_columns}
        rows = [set() for _ in range(len(data))]
        for column, values in columns.items():
            for found, value in zip(rows, values):
                found |= {(column, v) for v in value} if column in WORD_LABEL_COLUMNS else {(column, value)}
        return rows

    pool_labels = label_sets(pool)
    have = set().union(*(pool_labels[i] for i in chosen))
    wanted = set().union(*(found for data in evaluated for found in label_sets(data))) - have
    added = 0
    for i in range(size, len(pool)):
        if not wanted:
            break
        new = pool_labels[i] & wanted
        if new:
            chosen.append(i)
            wanted -= new
            added += 1
    return chosen, added
