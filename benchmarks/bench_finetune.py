"""Fine-tuning benchmark (not a test): one small pretrained model per family, fine-tuned on SST-2 and CoNLL-2003
with the recipes, validation scores and times in one table.

1. Pre-train each family's "tiny" config on WikiText-2 (``wiki.train.tokens``) with ``hf-lineage pretrain <family>``,
   the same budget for every family: ``--max-steps`` optimiser steps of ``--per-device-batch-size`` sequences of
   ``--max-seq-length`` tokens (word2vec's trainer runs whole epochs: one), a tokenizer of ``--vocab-size`` trained on
   the same text.
2. Fine-tune each on SST-2 (``--sst2-train`` first training sentences, the full dev set) and CoNLL-2003 NER
   (``--conll-train`` first training sentences, the full eng.testa), --epochs epochs or ``--time-budget`` seconds of
   training, whichever ends first, same learning rate and batch size for every family.
3. Print a table (SST-2 accuracy, CoNLL-2003 entity F1, training seconds) and, with ``--write-docs``, append it to
   docs/benchmarks.md.

Families whose task heads are not registered yet are listed as skipped. Run it under the benchmark lock::

    flock /tmp/hf_lineage_bench.lock python benchmarks/bench_finetune.py --write-docs
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch
import transformers
from transformers import TrainerCallback, TrainingArguments

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
sys.path.insert(0, str(REPO))

import hf_lineage  # noqa: E402,F401  (registers the families)
from hf_lineage.registry import FAMILIES, family_classes  # noqa: E402
from hf_lineage.tasks import classification, labeling  # noqa: E402
from hf_lineage.tasks.recipe_arguments import DataTrainingArguments, ModelArguments  # noqa: E402


class TimeBudget(TrainerCallback):
    """Stop training once ``seconds`` of training have passed (checked after every optimiser step)."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if time.perf_counter() - self.start > self.seconds:
            control.should_training_stop = True


def has_head(family: str, auto_class) -> bool:
    config_class, _ = family_classes(family)
    return config_class in auto_class._model_mapping


def pretrain(family: str, out: Path, args) -> float:
    if (out / "config.json").exists():
        print(f"{family}: reusing {out}")
        return float("nan")
    command = [sys.executable, "-m", "hf_lineage.cli", "pretrain", family, "--config", "tiny", "--train-file",
               str(DATA / "wikitext-2" / "wiki.train.tokens"), "--output-dir", str(out), "--vocab-size",
               str(args.vocab_size), "--seed", "0"]
    if family == "word2vec":
        command += ["--num-epochs", "1"]
    else:
        command += ["--max-steps", str(args.max_steps), "--per-device-batch-size", str(args.batch_size),
                    "--max-seq-length", str(args.max_seq_length)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"pretraining {family} failed:\n{result.stderr[-3000:]}")
    return time.perf_counter() - start


def write_sst2_subset(n: int, folder: Path) -> str:
    path = folder / f"sst2_train_{n}.tsv"
    with open(DATA / "glue_sst2" / "train.tsv", encoding="utf-8") as f:
        lines = [next(f) for _ in range(n + 1)]
    path.write_text("".join(lines), encoding="utf-8")
    return str(path)


def write_conll_subset(n: int, folder: Path) -> str:
    path = folder / f"eng.train.{n}"
    sentences, current = 0, []
    with open(DATA / "conll2003" / "eng.train", encoding="utf-8") as f:
        for line in f:
            current.append(line)
            if not line.strip():
                sentences += 1
                if sentences >= n:
                    break
    path.write_text("".join(current), encoding="utf-8")
    return str(path)


def finetune(task: str, base: str, out: Path, files: dict, args) -> dict:
    training_args = TrainingArguments(
        output_dir=str(out), do_train=True, do_eval=True, num_train_epochs=args.epochs, learning_rate=args.learning_rate,
        per_device_train_batch_size=32, per_device_eval_batch_size=64, save_strategy="no", report_to="none",
        disable_tqdm=True, log_level="error", seed=0, logging_steps=50)
    model_args = ModelArguments(model_name_or_path=base)
    data_args = DataTrainingArguments(train_file=files["train"], validation_file=files["validation"],
                                      max_seq_length=128)
    callbacks = [TimeBudget(args.time_budget)]
    if task == "sst2":
        return classification.run(model_args, data_args, training_args, callbacks=callbacks)
    return labeling.run(model_args, data_args, training_args, callbacks=callbacks)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--families", nargs="+", default=[f for f in ("nnlm", "word2vec", "elmo", "gpt", "bert")
                                                         if f in FAMILIES])
    parser.add_argument("--work-dir", default="/tmp/hf_lineage_bench_finetune")
    parser.add_argument("--max-steps", type=int, default=300, help="pre-training optimiser steps")
    parser.add_argument("--batch-size", type=int, default=32, help="pre-training sequences per step")
    parser.add_argument("--max-seq-length", type=int, default=64, help="pre-training sequence length")
    parser.add_argument("--vocab-size", type=int, default=10000)
    parser.add_argument("--sst2-train", type=int, default=4000, help="SST-2 training sentences")
    parser.add_argument("--conll-train", type=int, default=2000, help="CoNLL-2003 training sentences")
    parser.add_argument("--time-budget", type=float, default=120.0, help="seconds of training per fine-tuning run")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--epochs", type=float, default=1.0, help="fine-tuning epochs (the time budget may stop it first)")
    parser.add_argument("--write-docs", action="store_true", help="append the table to docs/benchmarks.md")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    files = {
        "sst2": {"train": write_sst2_subset(args.sst2_train, work),
                 "validation": str(DATA / "glue_sst2" / "dev.tsv")},
        "conll": {"train": write_conll_subset(args.conll_train, work),
                  "validation": str(DATA / "conll2003" / "eng.testa")},
    }
    heads = {"sst2": transformers.AutoModelForSequenceClassification,
             "conll": transformers.AutoModelForTokenClassification}
    rows, skipped = [], []
    for family in args.families:
        if not any(has_head(family, head) for head in heads.values()):
            skipped.append(f"{family} (no task heads yet)")
            continue
        base = work / "pretrained" / family
        pretrain_seconds = pretrain(family, base, args)
        row = {"family": family, "pretrain_s": pretrain_seconds,
               "parameters": sum(p.numel() for p in transformers.AutoModel.from_pretrained(base).parameters())}
        for task in ("sst2", "conll"):
            if not has_head(family, heads[task]):
                skipped.append(f"{family} {task} (no {heads[task].__name__} class yet)")
                continue
            start = time.perf_counter()
            results = finetune(task, str(base), work / "finetuned" / f"{family}-{task}", files[task], args)
            row[f"{task}_s"] = time.perf_counter() - start
            row[f"{task}_train_s"] = results["train_runtime"]
            row[f"{task}_steps"] = round(results["epoch"] * 1000) / 1000
            row[f"{task}_score"] = results["eval_accuracy"] if task == "sst2" else results["eval_f1"]
            print(family, task, json.dumps({k: v for k, v in results.items() if k.startswith("eval_")}))
        rows.append(row)

    def cell(row, key, fmt):
        return format(row[key], fmt) if key in row else "—"

    table = ["| family | params (base) | pre-train s | SST-2 dev accuracy | SST-2 train s (epochs) | "
             "CoNLL-2003 testa entity F1 | CoNLL train s (epochs) |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        table.append(f"| {row['family']} | {row['parameters']:,} | {cell(row, 'pretrain_s', '.0f')} | "
                     f"{cell(row, 'sst2_score', '.3f')} | {cell(row, 'sst2_train_s', '.0f')} "
                     f"({cell(row, 'sst2_steps', '.2f')}) | {cell(row, 'conll_score', '.3f')} | "
                     f"{cell(row, 'conll_train_s', '.0f')} ({cell(row, 'conll_steps', '.2f')}) |")
    command = "flock /tmp/hf_lineage_bench.lock python benchmarks/bench_finetune.py " + " ".join(argv or sys.argv[1:])
    setup = (f"Pre-training: the `tiny` config of each family on WikiText-2 train, `hf-lineage pretrain` with "
             f"{args.max_steps} steps × {args.batch_size} sequences × {args.max_seq_length} tokens (word2vec: one "
             f"epoch), {args.vocab_size:,}-token vocabulary. Fine-tuning: the recipes, the first {args.sst2_train:,} "
             f"SST-2 training sentences / {args.conll_train:,} CoNLL-2003 training sentences, {args.epochs:g} epoch(s) or "
             f"{args.time_budget:.0f} s of training (whichever ends first; epochs shows how far it got), batch 32, "
             f"learning rate {args.learning_rate}, every parameter fine-tuned (ELMo: the family default, frozen "
             f"biLM). Scores on the full SST-2 dev set and CoNLL-2003 eng.testa.")
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores, torch {torch.__version__}"
    text = "\n".join(table)
    print(text)
    if skipped:
        print("skipped:", "; ".join(skipped))
    if args.write_docs:
        with open(REPO / "docs" / "benchmarks.md", "a", encoding="utf-8") as f:
            f.write(f"\n## Fine-tuning recipes: one small pretrained model per family (bench_finetune.py)\n\n"
                    f"Machine: {machine} (shared with other jobs: times are indicative). Command: `{command}`.\n\n"
                    f"{setup}\n\n{text}\n")
            if skipped:
                f.write(f"\nNot run (heads not available when measured): {'; '.join(skipped)}.\n")


if __name__ == "__main__":
    main()
