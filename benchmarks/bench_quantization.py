"""Dynamic int8 quantization benchmark (not a test): for each family, a classifier fine-tuned on SST-2, float
against int8 in the same process: size on disk, median CPU latency at batch 1 and batch 32, dev accuracy.

1. Fine-tune each family's pretrained model (``--pretrained FAMILY=FOLDER``; by default the lineage run's tiny
   models under ``--stages``, ``pretrain-<family>/model``) on the first ``--train`` SST-2 training sentences for
   ``--epochs`` with the classification recipe (``hf_lineage.tasks.classification.run``).
2. Quantize the saved classifier with ``quantize_folder`` (what ``hf-lineage quantize`` runs) and reload it with
   ``load_quantized``, so the timed int8 model is the one a user gets from disk.
3. Size on disk: the float ``model.safetensors`` against the int8 ``quantized_model.pt``. Latency: one dev sentence
   of median length (batch 1) and the first 32 dev sentences padded together (batch 32); ``--runs`` timed forward
   passes of each after a warm-up, float and int8 alternating, medians reported. Score: accuracy on the 872 SST-2
   dev sentences, and the share of sentences on which both models predict the same label.
4. Speed at larger widths (BERT and GPT only; ``--widths``): the same classifier architecture with the hidden size
   and depth replaced, random weights (a kernel's time does not depend on the values), the same real batches.

Prints the tables, the CPU model (``lscpu``), torch's version and thread count; ``--write-json`` saves the numbers
and ``--plot`` the figure of docs/quantization.md. Single-threaded by default (``--threads``)::

    OMP_NUM_THREADS=1 python benchmarks/bench_quantization.py --plot docs/figures/quantization/quantization.png
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
sys.path.insert(0, str(REPO))

import hf_lineage  # noqa: E402,F401  (registers the families)
from hf_lineage.compression.prune_heads_recipe import encode  # noqa: E402
from hf_lineage.compression.quantization import (  # noqa: E402
    load_float_model,
    load_quantized,
    quantize_dynamic_int8,
    quantize_folder,
    quantized_modules,
)
from hf_lineage.tasks import classification  # noqa: E402
from hf_lineage.tasks.recipe_arguments import DataTrainingArguments, ModelArguments  # noqa: E402
from hf_lineage.tasks.splits import load_splits  # noqa: E402

FAMILIES = ["bert", "gpt", "nnlm", "word2vec", "elmo"]
# (label, hidden size, layers, heads, feed-forward size)
WIDTHS = {"256x4": (256, 4, 4, 1024), "768x12 (base)": (768, 12, 12, 3072)}


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or "unknown"


def write_sst2_subset(n: int, folder: Path) -> str:
    path = folder / f"sst2_train_{n}.tsv"
    with open(DATA / "glue_sst2" / "train.tsv", encoding="utf-8") as f:
        lines = [next(f) for _ in range(n + 1)]
    path.write_text("".join(lines), encoding="utf-8")
    return str(path)


def finetune(base: str, out: Path, train_file: str, args) -> float:
    from transformers import TrainingArguments

    training_args = TrainingArguments(
        output_dir=str(out), do_train=True, do_eval=False, num_train_epochs=args.epochs,
        learning_rate=args.learning_rate, per_device_train_batch_size=32, save_strategy="no", report_to="none",
        disable_tqdm=True, log_level="error", seed=0, use_cpu=True)
    data_args = DataTrainingArguments(train_file=train_file, max_seq_length=128)
    start = time.perf_counter()
    classification.run(ModelArguments(model_name_or_path=base), data_args, training_args)
    return time.perf_counter() - start


def dev_batches(folder: Path, config):
    """The dev set encoded as the recipe encodes it, and its collator."""
    from transformers import AutoTokenizer, TrainingArguments

    data_args = DataTrainingArguments(validation_file=str(DATA / "glue_sst2" / "dev.tsv"), max_seq_length=128)
    splits = load_splits("classification", data_args,
                         TrainingArguments(output_dir="/tmp/unused", do_train=False, do_eval=True, report_to="none"))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    encoded, collator = encode(splits, tokenizer, config, data_args, pairs=False)
    return encoded["validation"], collator


def without_labels(batch):
    return {k: v for k, v in batch.items() if k != "labels"}


def predictions(model, dataset, collator, batch_size=64):
    out = []
    with torch.no_grad():
        for start in range(0, len(dataset), batch_size):
            batch = collator([dataset[i] for i in range(start, min(start + batch_size, len(dataset)))])
            out.append(model(**without_labels(batch)).logits.argmax(-1))
    return torch.cat(out)


def timing_batches(dataset, collator):
    lengths = [len(row["input_ids"]) for row in dataset]
    median_row = sorted(range(len(lengths)), key=lambda i: lengths[i])[len(lengths) // 2]
    one = without_labels(collator([dataset[median_row]]))
    many = without_labels(collator([dataset[i] for i in range(32)]))
    return {1: one, 32: many}


def latencies(models: dict, batches: dict, runs: int) -> dict:
    """{(name, batch size): median milliseconds} over ``runs`` timed calls, the models alternating run by run."""
    times = {(name, size): [] for name in models for size in batches}
    with torch.no_grad():
        for size, batch in batches.items():
            for model in models.values():
                model(**batch)  # warm-up: first-call allocations and weight packing
            for _ in range(runs):
                for name, model in models.items():
                    start = time.perf_counter()
                    model(**batch)
                    times[(name, size)].append(time.perf_counter() - start)
    return {key: 1000 * statistics.median(values) for key, values in times.items()}


def folder_weights_bytes(folder: Path) -> int:
    return sum((folder / name).stat().st_size for name in ("model.safetensors", "quantized_model.pt")
               if (folder / name).is_file())


def bench_family(family: str, base: str, work: Path, train_file: str, args) -> dict:
    slug = family.replace(" ", "-")
    ft, int8 = work / f"ft-{slug}", work / f"int8-{slug}"
    train_seconds = None
    if not (ft / "model.safetensors").is_file() or args.retrain:
        train_seconds = finetune(base, ft, train_file, args)
    if int8.exists():
        import shutil

        shutil.rmtree(int8)
    start = time.perf_counter()
    quantize_folder(ft, int8)
    quantize_seconds = time.perf_counter() - start
    float_model, int8_model = load_float_model(ft), load_quantized(int8)
    dataset, collator = dev_batches(ft, float_model.config)
    gold = torch.tensor(dataset["labels"])
    float_pred, int8_pred = predictions(float_model, dataset, collator), predictions(int8_model, dataset, collator)
    timed = latencies({"float": float_model, "int8": int8_model}, timing_batches(dataset, collator), args.runs)
    return {
        "family": family, "base": base, "architecture": type(float_model).__name__,
        "quantized_layers": len(quantized_modules(int8_model)),
        "parameters": sum(p.numel() for p in float_model.parameters()),
        "float_bytes": folder_weights_bytes(ft), "int8_bytes": folder_weights_bytes(int8),
        "float_accuracy": float((float_pred == gold).float().mean()),
        "int8_accuracy": float((int8_pred == gold).float().mean()),
        "agreement": float((float_pred == int8_pred).float().mean()),
        **{f"{name}_ms_b{size}": ms for (name, size), ms in timed.items()},
        "train_seconds": train_seconds, "quantize_seconds": quantize_seconds,
    }


def scratch_base(family: str, base: str, work: Path, label: str) -> str:
    """A randomly initialised model of ``family`` at width ``label``, with the pretrained model's tokenizer and
    config otherwise: what ``--score-widths`` fine-tunes from scratch."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    hidden, layers, heads, intermediate = WIDTHS[label]
    folder = work / f"scratch-{family}-{label.split()[0]}"
    config = AutoConfig.from_pretrained(base)
    config.hidden_size, config.num_hidden_layers = hidden, layers
    config.num_attention_heads, config.intermediate_size = heads, intermediate
    torch.manual_seed(0)
    AutoModel.from_config(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(base).save_pretrained(folder)
    return str(folder)


def bench_width(family: str, work: Path, label: str, sizes, args) -> dict:
    """Latency only: the fine-tuned classifier's architecture at another width, random weights, real batches."""
    hidden, layers, heads, intermediate = sizes
    ft = work / f"ft-{family}"
    config = copy.deepcopy(load_float_model(ft).config)
    config.hidden_size, config.num_hidden_layers = hidden, layers
    config.num_attention_heads, config.intermediate_size = heads, intermediate
    dataset, collator = dev_batches(ft, config)
    torch.manual_seed(0)
    model_class = type(load_float_model(ft))
    float_model = model_class(config).eval()
    int8_model = quantize_dynamic_int8(float_model)
    timed = latencies({"float": float_model, "int8": int8_model}, timing_batches(dataset, collator), args.runs)
    return {"family": family, "width": label, "parameters": sum(p.numel() for p in float_model.parameters()),
            **{f"{name}_ms_b{size}": ms for (name, size), ms in timed.items()}}


def family_table(rows) -> str:
    lines = ["| family | parameters | size float → int8 (MB) | size ratio | latency b1 float → int8 (ms) "
             "| speed-up b1 | latency b32 float → int8 (ms) | speed-up b32 | dev accuracy float → int8 | change (points) "
             "| same prediction |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['family']} | {r['parameters'] / 1e6:.2f} M "
            f"| {r['float_bytes'] / 1e6:.2f} → {r['int8_bytes'] / 1e6:.2f} "
            f"| {r['float_bytes'] / r['int8_bytes']:.2f}× | {r['float_ms_b1']:.2f} → {r['int8_ms_b1']:.2f} "
            f"| {r['float_ms_b1'] / r['int8_ms_b1']:.2f}× | {r['float_ms_b32']:.1f} → {r['int8_ms_b32']:.1f} "
            f"| {r['float_ms_b32'] / r['int8_ms_b32']:.2f}× | {r['float_accuracy']:.3f} → {r['int8_accuracy']:.3f} "
            f"| {100 * (r['int8_accuracy'] - r['float_accuracy']):+.1f} | {r['agreement']:.3f} |")
    return "\n".join(lines)


def width_table(rows) -> str:
    lines = ["| model | width × layers | parameters | latency b1 float → int8 (ms) | speed-up b1 "
             "| latency b32 float → int8 (ms) | speed-up b32 |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['family']} | {r['width']} | {r['parameters'] / 1e6:.1f} M "
                     f"| {r['float_ms_b1']:.2f} → {r['int8_ms_b1']:.2f} | {r['float_ms_b1'] / r['int8_ms_b1']:.2f}× "
                     f"| {r['float_ms_b32']:.1f} → {r['int8_ms_b32']:.1f} "
                     f"| {r['float_ms_b32'] / r['int8_ms_b32']:.2f}× |")
    return "\n".join(lines)


def plot(rows, width_rows, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    labels = [r["family"] for r in rows] + [f"{r['family']} {r['width'].split()[0]} (random)"
                                             for r in width_rows]
    every = rows + width_rows
    b1 = [r["float_ms_b1"] / r["int8_ms_b1"] for r in every]
    b32 = [r["float_ms_b32"] / r["int8_ms_b32"] for r in every]
    x = np.arange(len(labels))
    fig, (speed, score) = plt.subplots(1, 2, figsize=(12, 4.4), gridspec_kw={"width_ratios": [2, 1]})
    speed.bar(x - 0.2, b1, 0.4, label="batch 1")
    speed.bar(x + 0.2, b32, 0.4, label="batch 32")
    speed.axhline(1.0, color="black", linewidth=0.8)
    speed.axhline(1.5, color="tab:red", linestyle="--", linewidth=0.8, label="goal 1.5×")
    speed.set_xticks(x, labels, rotation=35, ha="right", fontsize=8)
    speed.set_ylabel("speed-up (float time / int8 time)")
    speed.set_title("CPU latency, one thread (\"random\": speed only, random weights)", fontsize=10)
    speed.legend(fontsize=8)
    fx = np.arange(len(rows))
    score.bar(fx - 0.2, [r["float_accuracy"] for r in rows], 0.4, label="float")
    score.bar(fx + 0.2, [r["int8_accuracy"] for r in rows], 0.4, label="int8")
    score.set_xticks(fx, [r["family"] for r in rows], rotation=30, ha="right")
    score.set_ylim(0.45, max(0.6, max(r["float_accuracy"] for r in rows) + 0.05))
    score.set_ylabel("SST-2 dev accuracy")
    score.set_title("score")
    score.legend(fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--families", nargs="+", default=FAMILIES)
    parser.add_argument("--stages", default="/tmp/ldef/lineage_report/stages",
                        help="a lineage run's stages folder, holding pretrain-<family>/model")
    parser.add_argument("--pretrained", nargs="*", default=[], metavar="FAMILY=FOLDER",
                        help="pretrained model per family, instead of the one under --stages")
    parser.add_argument("--work-dir", default="/tmp/hf_lineage_bench_quantization")
    parser.add_argument("--train", type=int, default=8000, help="SST-2 training sentences")
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--retrain", action="store_true", help="fine-tune again even if --work-dir has the model")
    parser.add_argument("--runs", type=int, default=7, help="timed forward passes per model and batch (median)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--widths", nargs="*", default=list(WIDTHS), choices=list(WIDTHS))
    parser.add_argument("--score-widths", nargs="*", default=[], choices=list(WIDTHS),
                        help="also fine-tune BERT and GPT at these widths from random weights (slow: minutes each) "
                             "and score them like the families")
    parser.add_argument("--score-epochs", type=float, default=2.0, help="epochs of the --score-widths runs")
    parser.add_argument("--score-learning-rate", type=float, default=3e-4)
    parser.add_argument("--write-json", help="save the numbers here")
    parser.add_argument("--plot", help="save the figure here (PNG)")
    parser.add_argument("--from-json", nargs="+", metavar="JSON",
                        help="run nothing: merge these --write-json files (their rows in order) into the tables and "
                             "--plot")
    args = parser.parse_args(argv)
    if args.from_json:
        runs = [json.loads(Path(path).read_text(encoding="utf-8")) for path in args.from_json]
        rows = [row for run in runs for row in run["families"]]
        width_rows = [row for run in runs for row in run["widths"]]
        for run in runs:
            print(run["machine"])
        print(family_table(rows) + "\n\n" + width_table(width_rows))
        if args.plot:
            plot(rows, width_rows, args.plot)
        return
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    torch.set_num_threads(args.threads)
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    train_file = write_sst2_subset(args.train, work)
    given = dict(item.split("=", 1) for item in args.pretrained)
    started = time.perf_counter()
    rows = []
    for family in args.families:
        base = given.get(family) or os.path.join(args.stages, f"pretrain-{family}", "model")
        if not os.path.isdir(base):
            print(f"{family}: no pretrained model at {base}; skipped", file=sys.stderr)
            continue
        rows.append(bench_family(family, base, work, train_file, args))
        print(f"{family}: done ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    for family in [f for f in ("bert", "gpt") if f in args.families]:
        for label in args.score_widths:
            base = given.get(family) or os.path.join(args.stages, f"pretrain-{family}", "model")
            name = f"{family} {label.split()[0]}"
            scratch_args = argparse.Namespace(**{**vars(args), "epochs": args.score_epochs,
                                                 "learning_rate": args.score_learning_rate})
            reuse = (work / f"ft-{name.replace(' ', '-')}" / "model.safetensors").is_file() and not args.retrain
            start = None if reuse else scratch_base(family, base, work, label)
            rows.append(bench_family(name, start, work, train_file, scratch_args))
            print(f"{name}: done ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    width_rows = [bench_width(family, work, label, WIDTHS[label], args)
                  for family in ("bert", "gpt") if any(r["family"] == family for r in rows) for label in args.widths]
    machine = {"cpu": cpu_model(), "torch": torch.__version__, "threads": torch.get_num_threads(),
               "engine": torch.backends.quantized.engine, "date": datetime.date.today().isoformat(),
               "seconds": round(time.perf_counter() - started), "train": args.train, "epochs": args.epochs,
               "runs": args.runs}
    print(f"CPU: {machine['cpu']}; torch {machine['torch']} ({machine['engine']}), {machine['threads']} thread(s); "
          f"{machine['date']}; {machine['seconds']} s")
    print(f"\nFine-tuned on SST-2 (first {args.train:,} training sentences, {args.epochs:g} epoch(s) at learning rate "
          f"{args.learning_rate:g}" + (f"; the {', '.join(args.score_widths)} rows from random weights, "
                                       f"{args.score_epochs:g} epoch(s) at {args.score_learning_rate:g}"
                                       if args.score_widths else "") + "), scored on the 872 dev sentences:\n")
    print(family_table(rows))
    if width_rows:
        print("\nLatency at larger widths (random weights, the same SST-2 batches):\n")
        print(width_table(width_rows))
    if args.write_json:
        Path(args.write_json).write_text(json.dumps({"machine": machine, "families": rows, "widths": width_rows},
                                                    indent=2) + "\n", encoding="utf-8")
    if args.plot:
        plot(rows, width_rows, args.plot)


if __name__ == "__main__":
    main()
