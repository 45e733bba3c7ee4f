"""``hf-lineage lineage``: the history of NLP pretraining as one reproducible experiment.

Every requested family (NNLM → word2vec → ELMo → GPT → BERT) is pretrained on the same corpus with the same budget
by the shared engine (``hf_lineage.pretrain``), then fine-tuned on the four task types by the recipes' own code
(``hf_lineage.tasks``), and the numbers go into ``report.md``, ``results.json`` and PNG plots (``report.py``).

    hf-lineage lineage                                   # the default: embedded samples, tiny models, ~12 min on CPU
    hf-lineage lineage --scale small --corpus wiki.train.tokens --validation-corpus wiki.valid.tokens
    accelerate launch -m hf_lineage.lineage --scale base --dataset-name wikitext --dataset-config wikitext-103-raw-v1

The budget is the same for every family: ``--budget-words`` corpus words seen (the default: the scale's number of
passes over the corpus; one pass shows every family every word once, whatever its tokenizer) or ``--budget-seconds``
of training each. Each family is then used three ways on the understanding tasks (sequence labeling,
classification, sentence pairs): **frozen** (its pretrained network fixed, a task model on top, as static vectors and
ELMo were used), **finetuned** (every weight trained, as GPT and BERT are), and **scratch** (the same architecture
untrained: does pretraining help on small labelled data?). The main table shows each family the way its paper used
it (``MAIN_VARIANT``).

Every stage (one task's data, one pretraining, one fine-tuning) runs in its own folder under
``<output-dir>/stages/`` and records ``stage.json`` when it ends: a re-run with the same settings reuses finished stages, a stage that fails is recorded
with its error (in the table and the report) and the rest continue.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

FAMILY_ORDER = ("nnlm", "word2vec", "elmo", "gpt", "bert")
VARIANTS = ("frozen", "finetuned", "scratch")
SAMPLES = Path(__file__).resolve().parent / "samples"

# How each paper used its pretrained model downstream: static vectors and ELMo as fixed features under a task model
# (ELMo: "we freeze the weights of the biLM"), GPT and BERT fine-tuned end to end. The main table shows these cells.
MAIN_VARIANT = {"nnlm": "frozen", "word2vec": "frozen", "elmo": "frozen", "gpt": "finetuned", "bert": "finetuned"}
# Generation needs the language model itself to learn the output format, so there the LMs (ELMo's forward LM, GPT,
# BERT2BERT) are fine-tuned; the static-vector families keep fixed vectors under their own LSTM decoder.
GENERATION_VARIANT = {"nnlm": "frozen", "word2vec": "frozen", "elmo": "finetuned", "gpt": "finetuned",
                      "bert": "finetuned"}


@dataclass(frozen=True)
class TaskSpec:
    kind: str  # the recipe's task name
    dataset: str  # what the embedded sample is, for the report
    metric: str  # the score the table shows
    understanding: bool  # counted for the claims about understanding tasks


TASKS = {
    "labeling": TaskSpec("sequence_labeling", "UD English EWT, UPOS tags", "accuracy", True),
    "classification": TaskSpec("classification", "UD English EWT, genre of a sentence (5 classes)", "accuracy", True),
    "pairs": TaskSpec("sentence_pairs", "E2E NLG references: paraphrase or not", "accuracy", True),
    "generation": TaskSpec("generation", "E2E NLG: meaning representation to text", "bleu", False),
}
SAMPLE_FILES = {"labeling": "jsonl", "classification": "jsonl", "pairs": "jsonl", "generation": "csv"}


@dataclass(frozen=True)
class Scale:
    """Everything a scale fixes. ``families``: family → (named config, config overrides, pretraining overrides)."""

    families: dict
    epochs: float  # the default budget: passes over the corpus
    corpus_words: int | None  # words of the embedded corpus sample used (None: all of it)
    vocab_size: int
    max_seq_length: int
    batch_size: int
    task_train: int  # labelled training examples per task ("small labelled data")
    task_validation: int
    finetune_epochs: float
    finetune_batch_size: int
    finetune_learning_rate: dict  # family → learning rate when the pretrained network is trained
    head_learning_rate: float  # when only the task layers train (frozen)
    max_target_length: int
    mixed_precision: str = "no"


# Tiny: representations of ~64 dimensions for every family, learning rates raised for few steps (the papers' rates
# are for millions of steps). Small and base follow the papers more closely and expect a real corpus and a GPU: base
# is the papers' sizes (BERT base, GPT, ELMo original, 300-d word2vec) except NNLM, widened to 512 dimensions
# because its paper's 30-100 would be no comparison.
SCALES = {
    "tiny": Scale(
        families={
            "nnlm": ("tiny", {"embedding_size": 64, "hidden_size": 128, "context_size": 4}, {}),
            "word2vec": ("tiny", {"vector_size": 64, "window": 5, "negative": 5, "min_count": 2}, {}),
            # No cell/projection clipping: the LSTMs then run fused (bilm-tf's clipping needs a per-step loop).
            "elmo": ("tiny", {"lstm_cell_size": 128, "projection_size": 32, "cell_clip": None, "proj_clip": None},
                     {}),
            "gpt": ("tiny", {}, {"learning_rate": 1e-3, "warmup_ratio": 0.05}),
            "bert": ("tiny", {}, {"learning_rate": 1e-3, "warmup_ratio": 0.05}),
        },
        epochs=1.0, corpus_words=200_000, vocab_size=8000, max_seq_length=64, batch_size=32,
        # Fine-tuning: the task models of the static families and ELMo (LSTMs trained from scratch on top) need a
        # larger step than the pretrained Transformers for a few hundred updates to reach a useful model.
        task_train=1000, task_validation=300, finetune_epochs=3.0, finetune_batch_size=32,
        finetune_learning_rate={"nnlm": 1e-2, "word2vec": 1e-2, "elmo": 1e-2, "gpt": 1e-3, "bert": 1e-3},
        head_learning_rate=1e-2, max_target_length=48,
    ),
    "small": Scale(
        families={
            "nnlm": ("mlp1", {"embedding_size": 256, "hidden_size": 512}, {}),
            "word2vec": ("gensim", {"vector_size": 256}, {}),
            "elmo": ("small", {"projection_size": 128, "cell_clip": None, "proj_clip": None}, {}),
            "gpt": ("tiny", {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
                             "intermediate_size": 1024}, {"learning_rate": 5e-4, "warmup_ratio": 0.02}),
            "bert": ("tiny", {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
                              "intermediate_size": 1024}, {"learning_rate": 5e-4, "warmup_ratio": 0.02}),
        },
        epochs=3.0, corpus_words=None, vocab_size=30000, max_seq_length=128, batch_size=64,
        task_train=3000, task_validation=600, finetune_epochs=3.0, finetune_batch_size=32,
        finetune_learning_rate={"nnlm": 1e-3, "word2vec": 1e-3, "elmo": 1e-3, "gpt": 1e-4, "bert": 1e-4},
        head_learning_rate=1e-3, max_target_length=64, mixed_precision="bf16",
    ),
    "base": Scale(
        families={
            "nnlm": ("mlp1", {"embedding_size": 512, "hidden_size": 1024, "context_size": 5}, {}),
            "word2vec": ("mikolov2013", {}, {}),
            "elmo": ("original", {}, {}),
            "gpt": ("gpt", {}, {}),
            "bert": ("base", {}, {}),
        },
        epochs=10.0, corpus_words=None, vocab_size=30000, max_seq_length=128, batch_size=64,
        task_train=3000, task_validation=600, finetune_epochs=3.0, finetune_batch_size=32,
        finetune_learning_rate={"nnlm": 1e-3, "word2vec": 1e-3, "elmo": 1e-3, "gpt": 6.25e-5, "bert": 5e-5},
        head_learning_rate=1e-3, max_target_length=64, mixed_precision="bf16",
    ),
}
SCALES["base"] = Scale(**{**asdict(SCALES["base"]), "epochs": 1.0})  # a real corpus is large: one pass by default


@dataclass
class LineageArguments:
    """Every option of ``hf-lineage lineage`` (``None``: the scale's default)."""

    output_dir: str = "lineage_report"
    scale: str = "tiny"
    families: list[str] = field(default_factory=lambda: list(FAMILY_ORDER))
    tasks: list[str] = field(default_factory=lambda: list(TASKS))
    variants: list[str] = field(default_factory=lambda: list(VARIANTS))
    corpus: list[str] | None = None
    validation_corpus: list[str] | None = None
    dataset_name: str | None = None
    dataset_config: str | None = None
    text_column: str = "text"
    budget_words: int | None = None
    budget_seconds: float | None = None
    task_data: dict = field(default_factory=dict)  # task → {"train": path, "validation": path} (local files)
    task_train: int | None = None
    task_validation: int | None = None
    finetune_epochs: float | None = None
    mixed_precision: str | None = None
    seed: int = 0
    rerun: bool = False  # ignore finished stages
    keep_finetuned_models: bool = False


class LineageError(ValueError):
    """Bad input found before any stage runs; the message names the problem."""


# --------------------------------------------------------------------------- checks and inputs


def check_arguments(args: LineageArguments) -> Scale:
    if args.scale not in SCALES:
        raise LineageError(f"--scale must be one of {', '.join(SCALES)}, got {args.scale!r}")
    for name, given, known in (("--families", args.families, FAMILY_ORDER), ("--tasks", args.tasks, TASKS),
                               ("--variants", args.variants, VARIANTS)):
        unknown = [g for g in given if g not in known]
        if unknown or not given:
            raise LineageError(f"{name}: unknown {unknown} (choose from {', '.join(known)})" if unknown
                               else f"{name} is empty")
    if args.corpus and args.dataset_name:
        raise LineageError("give --corpus or --dataset-name, not both")
    for path in (args.corpus or []) + (args.validation_corpus or []):
        if not os.path.isfile(path):
            raise LineageError(f"corpus file {path}: no such file")
    if args.budget_words is not None and args.budget_seconds is not None:
        raise LineageError("give --budget-words or --budget-seconds, not both")
    if (args.budget_words is not None and args.budget_words <= 0) or (
            args.budget_seconds is not None and args.budget_seconds <= 0):
        raise LineageError("the budget must be positive")
    for task, files in args.task_data.items():
        if task not in TASKS:
            raise LineageError(f"--task-data: unknown task {task!r} (tasks: {', '.join(TASKS)})")
        for split in ("train", "validation"):
            if not os.path.isfile(files.get(split) or ""):
                raise LineageError(f"--task-data {task}: {split} file {files.get(split)!r}: no such file")
    if not args.corpus and not args.dataset_name and not (SAMPLES / "corpus.train.txt").is_file():
        raise LineageError(f"the embedded corpus sample is missing from {SAMPLES} (a broken install?)")
    return SCALES[args.scale]


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
            ext = SAMPLE_FILES[task]
            files[task] = {"train": str(SAMPLES / f"{task}.train.{ext}"),
                           "validation": str(SAMPLES / f"{task}.validation.{ext}"), "source": "embedded sample"}
    return files


# --------------------------------------------------------------------------- stages


def process_state():
    """Accelerate's view of the processes (a singleton the engine and Trainer share). ``AcceleratorState`` reads
    ``ACCELERATE_USE_CPU`` but ``PartialState`` does not: made first without it, two CPU processes launched by
    ``accelerate launch`` would each think they were alone and the engine would rightly refuse to train."""
    from accelerate import PartialState
    from accelerate.utils import parse_flag_from_env

    return PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU"))


class Stages:
    """Runs stages in order, each in ``stages/<name>/`` with a ``stage.json`` saying how it ended; reuses one that
    finished with the same spec, records one that failed and goes on. Under ``accelerate launch`` every process
    runs every stage (they train together); only the main process writes the records."""

    def __init__(self, root: Path, total: int, rerun: bool):
        self.root, self.total, self.rerun, self.done = root, total, rerun, 0
        self.state = process_state()

    def folder(self, name: str) -> Path:
        return self.root / "stages" / name

    def run(self, name: str, spec: dict, work) -> dict:
        """``work(folder)`` returns the stage's result dict; returns the record (status, error, result...)."""
        self.done += 1
        spec = json.loads(json.dumps(spec))  # as stage.json holds it (tuples become lists)
        folder, where = self.folder(name), f"[{self.done}/{self.total}] {name}"
        record_path = folder / "stage.json"
        if record_path.is_file() and not self.rerun:
            record = json.loads(record_path.read_text())
            if record.get("status") == "ok" and record.get("spec") == spec:
                self.print(f"{where}: finished before, reused")
                return {**record, "reused": True}
        self.state.wait_for_everyone()
        if self.state.is_main_process and folder.exists():
            shutil.rmtree(folder)  # a failed, unfinished or differently-specified earlier attempt
        self.state.wait_for_everyone()
        self.print(f"{where}: running")
        started = time.time()
        try:
            result = work(folder)
            record = {"status": "ok", "error": None, "result": result}
        except Exception as error:  # noqa: BLE001 - a failed stage is reported and the rest continue
            message = f"{type(error).__name__}: {error}".strip().splitlines()[0][:300]
            record = {"status": "failed", "error": message, "result": {}}
            rank = self.state.process_index
            trace = folder / ("error.txt" if rank == 0 else f"error.process{rank}.txt")
            folder.mkdir(parents=True, exist_ok=True)
            trace.write_text(traceback.format_exc())
            on = f" on process {rank}" if self.state.num_processes > 1 else ""
            print(f"hf-lineage lineage {where}: FAILED{on} ({message}); the traceback is in {trace}", flush=True)
        if self.state.num_processes > 1:
            # Every process must record the same outcome, or they would part ways at the next stage's barriers.
            from accelerate.utils import gather_object

            errors = [e for e in gather_object([record["error"]]) if e]
            if errors and record["status"] == "ok":
                record = {"status": "failed", "error": f"on another process: {errors[0]}", "result": {}}
        record.update(spec=spec, seconds=round(time.time() - started, 2), reused=False)
        if self.state.is_main_process:
            folder.mkdir(parents=True, exist_ok=True)
            partial = folder / "stage.json.partial"
            partial.write_text(json.dumps(record, indent=2))
            partial.rename(record_path)
        if record["status"] == "ok":
            self.print(f"{where}: done in {record['seconds']:.1f} s{summary(record['result'])}")
        self.state.wait_for_everyone()
        return record

    def print(self, message: str) -> None:
        if self.state.is_main_process:
            print(f"hf-lineage lineage {message}", flush=True)


def summary(result: dict) -> str:
    if "score" in result and result["score"] is not None:
        return f": {result['metric']} {result['score']:.4f}"
    if "validation_examples" in result:
        return f": {result['train_examples']} training, {result['validation_examples']} validation examples"
    if (result.get("validation") or {}).get("perplexity") is not None:
        return f": validation perplexity {result['validation']['perplexity']:.1f}"
    if result.get("final_train_loss") is not None:
        return f": final train loss {result['final_train_loss']:.4f}"
    return ""


# --------------------------------------------------------------------------- pretraining

# What each family's losses are (the train loss is what it optimises, the validation loss what its perplexity is of).
OBJECTIVE_NAMES = {"nnlm": "next word from the n-1 previous (causal LM)",
                   "word2vec": "skip-gram/CBOW, negative sampling",
                   "elmo": "forward + backward LM (train: sum, validation: mean)", "gpt": "causal LM",
                   "bert": "masked LM + NSP (validation: masked LM)"}


def count_parameters(model_dir: Path) -> int:
    from safetensors import safe_open

    total = 0
    for path in model_dir.glob("*.safetensors"):
        with safe_open(str(path), framework="pt") as f:
            for name in f.keys():
                total += math.prod(f.get_slice(name).get_shape())
    return total


def pretrain_family(family: str, scale: Scale, args: LineageArguments, corpus: dict, folder: Path) -> dict:
    """One family's pretraining stage: the engine (or word2vec's CPU trainer) on the shared corpus and budget."""
    from ..pretrain import PretrainArguments, pretrain

    config, overrides, training = scale.families[family]
    model_dir = folder / "model"
    run = PretrainArguments(
        family=family, output_dir=str(model_dir), config=config, overrides=dict(overrides), train_file=corpus["train"],
        validation_file=corpus["validation"] or None, vocab_size=scale.vocab_size, seed=args.seed, report_to="none",
        mixed_precision=args.mixed_precision or scale.mixed_precision, log_every=5, max_eval_batches=50, **training)
    if family != "word2vec":  # word2vec reads whole sentences; its batch is the engine path's alone
        run.max_seq_length, run.per_device_batch_size = scale.max_seq_length, scale.batch_size
    budget_epochs = (args.budget_words / corpus["train_words"]) if args.budget_words else scale.epochs
    if family == "word2vec":
        # word2vec's trainer (like the C tool and gensim) runs whole epochs with its learning rate decaying over
        # them all: the budget in words becomes the nearest whole number of passes, a budget in seconds the number of
        # passes a first pass says fit in it.
        epochs = max(1, round(budget_epochs))
        if args.budget_seconds:
            run.overrides["epochs"] = 1
            pretrain(PretrainArguments(**{**asdict(run), "output_dir": str(folder / "probe")}))
            one_pass = json.loads((folder / "probe" / "train_results.json").read_text())["train_runtime"]
            epochs = max(1, int(args.budget_seconds / max(one_pass, 1e-3)))
            shutil.rmtree(folder / "probe")
        run.overrides["epochs"] = epochs
    elif args.budget_seconds:
        run.max_train_seconds = args.budget_seconds
    else:
        run.num_epochs = budget_epochs
    pretrain(run)
    process_state().wait_for_everyone()  # the main process writes the model and its numbers
    trained = json.loads((model_dir / "train_results.json").read_text())
    return pretraining_result(family, config, trained, corpus["train_words"], model_dir)


def pretraining_result(family: str, config: str, trained: dict, corpus_words: int, model_dir: Path) -> dict:
    """The numbers the report needs from ``train_results.json`` (the engine's or word2vec's CPU trainer's)."""
    from ..objectives import objective_class

    result = {"config": config, "objective": OBJECTIVE_NAMES[family], "parameters": count_parameters(model_dir),
              "model": str(model_dir), "validation": {}, "curve": [], "eval_curve": []}
    if "log_history" not in trained:  # word2vec's CPU trainer: whole passes, no loss (as the C tool and gensim)
        return {**result, "steps": None, "words_seen": trained["epochs"] * corpus_words,
                "tokens_seen": trained["raw_words"], "train_seconds": trained["train_runtime"],
                "final_train_loss": None}
    # The engine: one pass over the corpus is ``steps_per_epoch`` steps, so words seen = corpus words × passes.
    words_per_step = corpus_words / trained["steps_per_epoch"]
    loss_key = objective_class(family).perplexity_of  # the loss its perplexity is exp of
    for entry in trained["log_history"]:
        point = {"step": entry["step"], "words_seen": round(entry["step"] * words_per_step)}
        if "train_loss" in entry:
            result["curve"].append({**point, "seconds": entry["seconds"], "train_loss": entry["train_loss"]})
        elif f"eval_{loss_key}" in entry:
            loss = entry[f"eval_{loss_key}"]
            result["eval_curve"].append({**point, "loss": loss, "perplexity": math.exp(min(loss, 50))})
    if trained["eval"]:
        if loss_key is None:  # word2vec (on the engine): a validation loss of its objective, no perplexity
            result["validation"] = {"loss": trained["eval"].get("loss")}
        else:
            loss = trained["eval"][loss_key]
            result["validation"] = {"loss": loss, "perplexity": math.exp(min(loss, 50))}
    return {**result, "steps": trained["step"], "words_seen": round(trained["step"] * words_per_step),
            "tokens_seen": trained["tokens_seen"], "train_seconds": trained["train_runtime"],
            "final_train_loss": result["curve"][-1]["train_loss"] if result["curve"] else None}


# --------------------------------------------------------------------------- fine-tuning


def untrained_copy(pretrained: Path, target: Path, seed: int) -> Path:
    """The pretrained model's architecture and tokenizer with freshly initialised weights (the "scratch" baseline)."""
    import torch
    from transformers import AutoConfig, AutoModelForPreTraining, AutoTokenizer

    torch.manual_seed(seed)
    config = AutoConfig.from_pretrained(pretrained)
    model = AutoModelForPreTraining.from_config(config)
    if hasattr(model, "word_counts"):  # word2vec keeps the corpus counts: they are data, not learned weights
        model.word_counts.copy_(AutoModelForPreTraining.from_pretrained(pretrained).word_counts)
    model.save_pretrained(target)
    AutoTokenizer.from_pretrained(pretrained).save_pretrained(target)
    return target


def finetune(family: str, task: str, variant: str, pretrained: Path, files: dict, scale: Scale,
             args: LineageArguments, folder: Path) -> dict:
    """One fine-tuning stage with the recipes' own ``run`` (the code behind ``recipes/<task>.py``)."""
    from transformers import Seq2SeqTrainingArguments, TrainingArguments

    from ..tasks import classification, generation, labeling
    from ..tasks.common import DataTrainingArguments, ModelArguments

    spec, state = TASKS[task], process_state()
    base = pretrained
    if variant == "scratch":  # written once (main process), read by every process
        base = folder / "untrained"
        if state.is_main_process:
            untrained_copy(pretrained, base, args.seed)
        state.wait_for_everyone()
    model_args = ModelArguments(model_name_or_path=str(base), freeze_base=variant == "frozen")
    data_args = DataTrainingArguments(
        train_file=files["train"], validation_file=files["validation"], max_seq_length=128,
        metric="accuracy" if task == "labeling" else "auto",
        # Paraphrase is symmetric: GPT's similarity transformation (both orders, summed), as its paper did for MRPC.
        pair_task="similarity" if task == "pairs" else None, max_target_length=scale.max_target_length)
    mixed_precision = args.mixed_precision or scale.mixed_precision
    arguments_class = Seq2SeqTrainingArguments if spec.kind == "generation" else TrainingArguments
    training_args = arguments_class(
        output_dir=str(folder / "model"), do_train=True, do_eval=True, seed=args.seed,
        num_train_epochs=args.finetune_epochs or scale.finetune_epochs,
        learning_rate=scale.head_learning_rate if variant == "frozen" else scale.finetune_learning_rate[family],
        per_device_train_batch_size=scale.finetune_batch_size, per_device_eval_batch_size=64, save_strategy="no",
        report_to="none", logging_steps=10, log_level="warning", bf16=mixed_precision == "bf16",
        fp16=mixed_precision == "fp16", **({"predict_with_generate": True} if spec.kind == "generation" else {}))
    if spec.kind == "sequence_labeling":
        metrics = labeling.run(model_args, data_args, training_args)
    elif spec.kind == "generation":
        metrics = generation.run(model_args, data_args, training_args)
    else:
        metrics = classification.run(model_args, data_args, training_args, pairs=spec.kind == "sentence_pairs")
    state.wait_for_everyone()
    if state.is_main_process:
        if variant == "scratch":
            shutil.rmtree(folder / "untrained", ignore_errors=True)
        if not args.keep_finetuned_models:  # the numbers are what the report needs; weights are large at real scale
            for weights in (folder / "model").glob("*.safetensors"):
                weights.unlink()
    key = f"eval_{spec.metric}"
    if key not in metrics:
        raise RuntimeError(f"the recipe reported no {key} (it reported {sorted(metrics)})")
    return {"score": metrics[key], "metric": spec.metric, "train_seconds": metrics.get("train_runtime"),
            "train_examples": metrics.get("train_samples"), "validation_examples": metrics.get("eval_samples"),
            "metrics": {k: v for k, v in metrics.items() if k.startswith("eval_") and isinstance(v, (int, float))}}


# --------------------------------------------------------------------------- the experiment


def read_task_file(task: str, path: str):
    """A task file read and put in the task's columns by the recipes' own readers."""
    from ..tasks.common import DataTrainingArguments, read_data_file, standardize

    kind = TASKS[task].kind
    return standardize(read_data_file(path, kind, DataTrainingArguments()), kind, DataTrainingArguments(), path)


def prepare_task_data(task: str, files: dict, n_train: int, n_validation: int, folder: Path) -> dict:
    """The task's data stage: the first ``n_train`` training and ``n_validation`` validation examples, standardized
    by the recipe's own readers and written as JSON lines (what every fine-tuning stage of the task then reads).

    Two adjustments keep the subsets usable: generation validation is cut back to a whole source (an E2E meaning
    representation is scored against all its references), and for labelled tasks the first training example of any
    label the validation subset has but the training subset lacks is added (the recipes refuse labels never seen in
    training; a rare tag would otherwise end the run)."""
    kind = TASKS[task].kind
    train, validation = read_task_file(task, files["train"]), read_task_file(task, files["validation"])
    rows = min(n_validation, len(validation))
    if kind == "generation":
        while 0 < rows < len(validation) and validation["source"][rows - 1] == validation["source"][rows]:
            rows -= 1
        rows = rows or min(n_validation, len(validation))
    validation = validation.select(range(rows))
    chosen = list(range(min(n_train, len(train))))
    label_column = {"sequence_labeling": "tags", "generation": None}.get(kind, "label")
    added = 0
    if label_column:
        def labels(row):
            return set(row) if kind == "sequence_labeling" else {row}

        have = set().union(*(labels(train[label_column][i]) for i in chosen))
        wanted = set().union(*(labels(v) for v in validation[label_column])) - have
        for i in range(len(chosen), len(train)):
            new = labels(train[label_column][i]) & wanted
            if new:
                chosen.append(i)
                wanted -= new
                added += 1
    train = train.select(chosen)
    paths = {"train": folder / "train.jsonl", "validation": folder / "validation.jsonl"}
    if process_state().is_main_process:
        folder.mkdir(parents=True, exist_ok=True)
        for split, data in (("train", train), ("validation", validation)):
            with open(paths[split], "w", encoding="utf-8") as f:
                for row in data:
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
    if kind == "sequence_labeling":
        units = sum(len(tokens) for tokens in validation["tokens"])  # per-word accuracy
    elif kind == "generation":
        units = len(set(validation["source"]))  # each source is generated and scored once
    else:
        units = len(validation)
    return {"train": str(paths["train"]), "validation": str(paths["validation"]), "train_examples": len(train),
            "validation_examples": len(validation), "validation_units": units, "added_for_labels": added}


def describe_budget(args: LineageArguments, scale: Scale, corpus_words: int) -> dict:
    if args.budget_seconds:
        return {"kind": "seconds", "seconds": args.budget_seconds, "words": None, "epochs": None,
                "description": f"{args.budget_seconds:g} s of pretraining per family (word2vec: the whole passes "
                               "that fit)"}
    words = args.budget_words or round(scale.epochs * corpus_words)
    epochs = words / corpus_words
    return {"kind": "words", "words": words, "seconds": None, "epochs": epochs,
            "description": f"{epochs:.3g} pass(es) over the corpus ({words:,} corpus words) per family "
                           "(word2vec: the nearest whole number of passes, at least one)"}


def machine() -> str:
    import torch

    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return (f"{platform.machine()}, {os.cpu_count()} CPU cores, {device}, torch {torch.__version__}, "
            f"{int(os.environ.get('WORLD_SIZE', '1'))} process(es)")


def run_lineage(args: LineageArguments, command: str = "hf-lineage lineage") -> dict:
    """The whole experiment; returns the results (also written to ``<output_dir>/results.json``)."""
    from .. import __version__
    from . import report
    scale = check_arguments(args)
    started = time.time()
    out = Path(args.output_dir)
    families = [f for f in FAMILY_ORDER if f in args.families]
    tasks = [t for t in TASKS if t in args.tasks]
    with process_state().main_process_first():  # the main process writes the corpus files, the others read them
        corpus = prepare_corpus(args, scale, out / "data")
    files = task_files(args)
    cells = [(t, f, v) for t in tasks for f in families for v in cell_variants(t, f, args.variants)]
    stages = Stages(out, len(tasks) + len(families) + len(cells), args.rerun)
    budget = describe_budget(args, scale, corpus["train_words"])
    corpus_spec = {"train": corpus["train"], "validation": corpus["validation"], "words": corpus["train_words"]}

    task_data = {}
    n_train, n_validation = args.task_train or scale.task_train, args.task_validation or scale.task_validation
    for task in tasks:
        spec = {"task": task, "files": files[task], "train": n_train, "validation": n_validation}
        record = stages.run(f"data-{task}", spec, lambda folder, task=task: prepare_task_data(
            task, files[task], n_train, n_validation, folder))
        task_data[task] = {"status": record["status"], "error": record["error"], "seconds": record["seconds"],
                           **record["result"]}

    pretraining = {}
    for family in families:
        spec = {"family": family, "scale": asdict(scale)["families"][family], "corpus": corpus_spec,
                "budget": budget, "seed": args.seed, "vocab_size": scale.vocab_size,
                "max_seq_length": scale.max_seq_length, "batch_size": scale.batch_size,
                "mixed_precision": args.mixed_precision or scale.mixed_precision}
        record = stages.run(f"pretrain-{family}", spec,
                            lambda folder, family=family: pretrain_family(family, scale, args, corpus, folder))
        pretraining[family] = {"status": record["status"], "error": record["error"], "reused": record["reused"],
                               "seconds": record["seconds"], **record["result"]}

    finetuning = []
    for task, family, variant in cells:
        main = variant == (MAIN_VARIANT[family] if TASKS[task].understanding else GENERATION_VARIANT[family])
        entry = {"family": family, "task": task, "variant": variant, "main": main, "metric": TASKS[task].metric,
                 "score": None}
        if task_data[task]["status"] != "ok":  # the cell cannot run: its data is unreadable
            stages.done += 1
            finetuning.append({**entry, "status": "failed", "error": f"task data: {task_data[task]['error']}",
                               "reused": False, "seconds": None})
            continue
        if pretraining[family]["status"] != "ok":
            stages.done += 1
            finetuning.append({**entry, "status": "skipped", "error": f"pretraining {family} failed",
                               "reused": False, "seconds": None})
            continue
        data = {"train": task_data[task]["train"], "validation": task_data[task]["validation"]}
        spec = {**entry, "pretrained": pretraining[family]["model"], "data": files[task], "scale": asdict(scale),
                "task_train": n_train, "task_validation": n_validation, "finetune_epochs": args.finetune_epochs,
                "seed": args.seed, "mixed_precision": args.mixed_precision}
        record = stages.run(
            f"{task}-{family}-{variant}", spec,
            lambda folder, task=task, family=family, variant=variant, data=data: finetune(
                family, task, variant, Path(pretraining[family]["model"]), data, scale, args, folder))
        finetuning.append({**entry, "status": record["status"], "error": record["error"], "reused": record["reused"],
                           "seconds": record["seconds"], **record["result"]})

    task_info = {task: {"kind": TASKS[task].kind, "dataset": TASKS[task].dataset, "source": files[task]["source"],
                        "metric": TASKS[task].metric, "understanding": TASKS[task].understanding,
                        **{key: task_data[task].get(key) for key in (
                            "train_examples", "validation_examples", "validation_units", "added_for_labels")}}
                 for task in tasks}
    results = {
        "version": __version__, "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": command, "machine": machine(), "scale": args.scale, "seed": args.seed, "budget": budget,
        "corpus": {"name": corpus["name"], "train_words": corpus["train_words"],
                   "validation_words": corpus["validation_words"], "license": corpus["license"]},
        "families": families, "tasks": task_info, "pretraining": pretraining, "finetuning": finetuning,
        "main_variant": {f: MAIN_VARIANT[f] for f in families},
        "notes": notes(args, scale),
    }
    if stages.state.is_main_process:
        results["claims"] = report.evaluate_claims(results)
        results["plots"] = report.write_plots(results, out)
        results["seconds_total"] = round(time.time() - started, 1)  # this invocation
        results["stage_seconds"] = round(sum(stage["seconds"] or 0 for stage in [
            *task_data.values(), *pretraining.values(), *finetuning]), 1)  # when each stage ran, reused or not
        report.write_report(results, out)
        partial = out / "results.json.partial"
        partial.write_text(json.dumps(results, indent=2))
        partial.rename(out / "results.json")
        stages.print(f"finished in {results['seconds_total']:.0f} s: {out / 'report.md'}")
    stages.state.wait_for_everyone()
    return results


def cell_variants(task: str, family: str, variants: list[str]) -> list[str]:
    """The variants run for a (task, family): on understanding tasks the requested ones and always the main table's,
    on generation the family's own."""
    if not TASKS[task].understanding:
        return [GENERATION_VARIANT[family]]
    return [v for v in VARIANTS if v in variants or v == MAIN_VARIANT[family]]


def notes(args: LineageArguments, scale: Scale) -> list[str]:
    lines = [
        "Main table: each family used the way its paper did — static vectors and ELMo frozen under a task model "
        "(a BiLSTM), GPT and BERT fine-tuned end to end; on generation the language models (ELMo's forward LM, GPT, "
        "BERT2BERT) are fine-tuned and the static vectors stay fixed under an LSTM decoder.",
        "Frozen GPT and BERT are probed by their own linear heads; frozen static vectors and ELMo get a BiLSTM "
        "task encoder, as their papers used them.",
        f"Fine-tuning: {args.task_train or scale.task_train} labelled training examples per task, "
        f"{args.finetune_epochs or scale.finetune_epochs:g} epochs, batch {scale.finetune_batch_size}; learning "
        f"rates {scale.finetune_learning_rate} (frozen: {scale.head_learning_rate}).",
    ]
    tuned = {f: training for f, (_, _, training) in scale.families.items() if training and f in args.families}
    if tuned:
        lines.append(f"Pretraining optimiser settings changed from the papers' for this scale: {tuned}.")
    return lines


# --------------------------------------------------------------------------- command line


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="hf-lineage lineage", description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--output-dir", default="lineage_report", help="where the report, results and stages go (default: %(default)s)")
    add("--scale", default="tiny", choices=list(SCALES),
        help="model sizes, corpus share, budget and task sizes (tiny: minutes on a CPU; small, base: a GPU)")
    add("--families", nargs="+", default=list(FAMILY_ORDER), metavar="FAMILY",
        help=f"families to run (default: all: {' '.join(FAMILY_ORDER)})")
    add("--tasks", nargs="+", default=list(TASKS), metavar="TASK", help=f"task types (default: {' '.join(TASKS)})")
    add("--variants", nargs="+", default=list(VARIANTS), metavar="VARIANT",
        help="how the understanding tasks use each family: frozen, finetuned, scratch (default: all three; the "
             "main table's variant always runs)")
    add("--corpus", nargs="+", metavar="FILE", help="pretraining text file(s) instead of the embedded sample")
    add("--validation-corpus", nargs="+", metavar="FILE", help="held-out text for the pretraining perplexities")
    add("--dataset-name", help="a datasets Hub corpus instead (online), e.g. wikitext")
    add("--dataset-config", help="its configuration, e.g. wikitext-103-raw-v1")
    add("--text-column", default="text")
    add("--budget-words", type=int, help="corpus words each family pretrains on (default: the scale's passes)")
    add("--budget-seconds", type=float, help="seconds of pretraining each family gets, instead of a word budget")
    add("--task-data", nargs=3, action="append", default=[], metavar=("TASK", "TRAIN", "VALIDATION"),
        help="local files for a task instead of its embedded sample, in a format its recipe reads (repeatable)")
    add("--task-train", type=int, help="labelled training examples per task (default: the scale's)")
    add("--task-validation", type=int, help="validation examples per task (default: the scale's)")
    add("--finetune-epochs", type=float, help="fine-tuning epochs (default: the scale's)")
    add("--mixed-precision", choices=["no", "bf16", "fp16"], help="default: the scale's")
    add("--seed", type=int, default=0)
    add("--rerun", action="store_true", help="run every stage again instead of reusing finished ones")
    add("--keep-finetuned-models", action="store_true", help="keep the fine-tuned weights (deleted by default)")
    return parser


def arguments_from_namespace(namespace: dict) -> LineageArguments:
    values = {k: v for k, v in namespace.items() if k not in ("command", "func")}
    values["task_data"] = {task: {"train": train, "validation": validation}
                           for task, train, validation in values.get("task_data") or []}
    return LineageArguments(**values)


def run_namespace(namespace: dict) -> int:
    """``hf-lineage lineage``: bad arguments exit with 2 before anything is written; a failed stage makes the exit
    status 1 after the report is written."""
    from ..pretrain import end_processes

    given = sys.argv[2:] if sys.argv[1:2] == ["lineage"] else sys.argv[1:]  # hf-lineage lineage / python -m
    try:
        args = arguments_from_namespace(namespace)
        results = run_lineage(args, command=" ".join(["hf-lineage lineage", *given]))
    except LineageError as error:
        print(f"hf-lineage lineage: error: {error}", file=sys.stderr)
        return 2
    finally:
        end_processes()
    failed = [s for s in [*results["pretraining"].values(), *results["finetuning"]] if s["status"] == "failed"]
    if failed and process_state().is_main_process:
        print(f"hf-lineage lineage: {len(failed)} stage(s) failed; see the report", file=sys.stderr)
    return 1 if failed else 0


def main(argv=None) -> int:
    return run_namespace(vars(build_parser().parse_args(argv)))
