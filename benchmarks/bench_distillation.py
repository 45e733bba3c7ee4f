"""Task-distillation benchmark (not a test): a fine-tuned lineage BERT teaches smaller students on two task types,
and each student's validation score and CPU throughput are set against the teacher's.

Tasks (``../shared/data``; validation = the official dev sets, test splits are never read):

* SST-2 sentence classification: the first ``--sst2-train`` labelled training sentences; the next
  ``--sst2-augment`` training sentences, labels dropped, are the students' unlabelled augmentation text.
* UD English EWT part-of-speech tagging (UPOS, per-word accuracy): the whole training set.

Models, per task:

1. teacher: the pretrained lineage BERT ``--bert`` fine-tuned with the task recipe (classification.py,
   sequence_labeling.py);
2. ``bert-layers:1``: DistilBERT's student, the teacher's top layer with its embeddings and head, distilled;
3. ``bilstm-word2vec``: word2vec vectors (``--word2vec``) → BiLSTM (``--bilstm-hidden`` per direction) → classifier,
   distilled (Tang et al. 2019), with the augmentation text on SST-2;
4. the same BiLSTM trained on the gold labels only (``--alpha_soft 0``, no augmentation): what the teacher adds.

Distillation: ``--temperature`` and ``--alpha-soft`` as given, the teacher's learning rate for BERT students and the
project's word2vec fine-tuning rate for the BiLSTMs, the same epochs for all.

Throughput: examples/s of the model's forward pass over the whole dev set, pre-tokenized (each model's own
tokenizer) in batches of ``--batch-size``, one thread (``torch.set_num_threads(1)``, OMP_NUM_THREADS=1), a warm-up
pass then ``--repeats`` timed runs of ``--passes`` passes each, taken round-robin over the models in this one
process; the median run counts. Tokenization is not timed.

    OMP_NUM_THREADS=1 python benchmarks/bench_distillation.py --json distillation.json \\
        --plot docs/figures/distillation.png
"""

from __future__ import annotations

import argparse
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
from hf_lineage.compression import distillation_recipe  # noqa: E402
from hf_lineage.tasks import classification, labeling  # noqa: E402

STAGES = Path("/tmp/ldef/lineage_report/stages")
GOAL_KEPT, GOAL_SPEEDUP = 0.97, 3.0


def cpu_model_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return platform.processor() or "unknown"


def common(args, learning_rate) -> list[str]:
    return ["--do_train", "--do_eval", "--num_train_epochs", str(args.epochs), "--per_device_train_batch_size", "32",
            "--per_device_eval_batch_size", "64", "--learning_rate", str(learning_rate),
            "--report_to", "none", "--save_strategy", "no", "--eval_strategy", "no", "--disable_tqdm", "true",
            "--log_level", "error", "--use_cpu", "true", "--seed", str(args.seed), "--max_seq_length", "128"]


def task_files(args, out: Path) -> dict:
    sst2 = DATA / "glue_sst2"
    rows = (sst2 / "train.tsv").read_text(encoding="utf-8").splitlines()[1:]
    augmentation = out / "sst2-augmentation.txt"
    extra = rows[args.sst2_train:args.sst2_train + args.sst2_augment]
    augmentation.write_text("".join(r.rsplit("\t", 1)[0] + "\n" for r in extra), encoding="utf-8")
    ewt = DATA / "ud_english_ewt"
    return {
        "sst2": {"task": "classification", "metric": "accuracy",
                 "data": ["--train_file", str(sst2 / "train.tsv"), "--validation_file", str(sst2 / "dev.tsv"),
                          "--max_train_samples", str(args.sst2_train)],
                 "augmentation": str(augmentation), "validation": str(sst2 / "dev.tsv")},
        "pos": {"task": "sequence_labeling", "metric": "accuracy",
                "data": ["--train_file", str(ewt / "en_ewt-ud-train.conllu"),
                         "--validation_file", str(ewt / "en_ewt-ud-dev.conllu")]
                + (["--max_train_samples", str(args.pos_train)] if args.pos_train else []),
                "augmentation": None, "validation": str(ewt / "en_ewt-ud-dev.conllu")},
    }


def done(folder: Path) -> bool:
    return (folder / "all_results.json").exists()


def run_task(name: str, spec: dict, args, out: Path) -> list[dict]:
    """Train the teacher and the students of one task; returns a row per model (score, parameters, folder)."""
    rows = []
    teacher = out / f"{name}-teacher"
    start = time.perf_counter()
    if not (args.reuse and done(teacher)):
        argv = ["--model_name_or_path", args.bert, *spec["data"], "--output_dir", str(teacher),
                *common(args, args.bert_lr)]
        if spec["task"] == "sequence_labeling":
            labeling.main(argv)
        else:
            classification.main(argv, pairs=False)
    result = json.loads((teacher / "all_results.json").read_text())
    rows.append({"task": name, "model": "teacher: lineage-bert", "folder": str(teacher),
                 "score": result[f"eval_{spec['metric']}"], "train_s": time.perf_counter() - start})
    students = [
        ("bert-layers:1 (distilled)", "bert-layers:1", args.bert_lr, args.alpha_soft, spec["augmentation"], None),
        (f"bilstm-word2vec h{args.bilstm_hidden} (distilled)", f"bilstm-word2vec:{args.word2vec}", args.bilstm_lr,
         args.alpha_soft, spec["augmentation"], args.bilstm_hidden),
        (f"bilstm-word2vec h{args.bilstm_hidden} (gold labels only)", f"bilstm-word2vec:{args.word2vec}",
         args.bilstm_lr, 0.0, None, args.bilstm_hidden),
    ]
    for i, (label, student, lr, alpha, augmentation, hidden) in enumerate(students):
        folder = out / f"{name}-student{i + 1}"
        start = time.perf_counter()
        if not (args.reuse and done(folder)):
            argv = ["--task", spec["task"], "--teacher_model_name_or_path", str(teacher), "--student", student,
                    "--temperature", str(args.temperature), "--alpha_soft", str(alpha), *spec["data"],
                    "--output_dir", str(folder), *common(args, lr)]
            if augmentation:
                argv += ["--augmentation_file", augmentation]
            if hidden:
                argv += ["--student_hidden_size", str(hidden)]
            distillation_recipe.run(*distillation_recipe.parse_arguments(argv))
        result = json.loads((folder / "all_results.json").read_text())
        rows.append({"task": name, "model": label, "folder": str(folder), "score": result[f"eval_{spec['metric']}"],
                     "train_s": time.perf_counter() - start, "alpha_soft": alpha,
                     "augmentation": bool(augmentation)})
    return rows


def dev_batches(task: str, validation: str, tokenizer, config, batch_size: int) -> list[dict]:
    from hf_lineage.data.readers import read_file

    dataset = read_file(validation)
    if task == "sequence_labeling":
        words = [list(map(str, w)) for w in dataset["tokens"]]
        encode = lambda chunk: tokenizer(labeling.words_as_in_running_text(tokenizer, chunk), is_split_into_words=True,
                                         truncation=True, max_length=128, padding=True, return_tensors="pt")
    else:
        words = [str(s) for s in dataset["sentence"]]
        encode = lambda chunk: tokenizer(chunk, truncation=True, max_length=128, padding=True, return_tensors="pt")
    names = set(tokenizer.model_input_names) | {"token_type_ids"}
    return [{k: v for k, v in encode(words[i:i + batch_size]).items() if k in names}
            for i in range(0, len(words), batch_size)]


def throughput(rows: list[dict], specs: dict, args) -> None:
    """Adds ``examples_per_s`` and ``parameters`` to each row: median of ``--repeats`` passes, round-robin."""
    from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification, AutoTokenizer

    torch.set_num_threads(1)
    models = []
    for row in rows:
        spec = specs[row["task"]]
        auto = AutoModelForTokenClassification if spec["task"] == "sequence_labeling" else \
            AutoModelForSequenceClassification
        model = auto.from_pretrained(row["folder"]).eval()
        tokenizer = AutoTokenizer.from_pretrained(row["folder"])
        batches = dev_batches(spec["task"], spec["validation"], tokenizer, model.config, args.batch_size)
        row["parameters"] = sum(p.numel() for p in model.parameters())
        row["examples"] = sum(int(b["input_ids"].shape[0]) for b in batches)
        models.append((row, model, batches))
    times = {id(row): [] for row, _, _ in models}
    with torch.inference_mode():
        for repeat in range(args.repeats + 1):  # the first pass warms up and is not counted
            for row, model, batches in models:
                start = time.perf_counter()
                for _ in range(args.passes):
                    for batch in batches:
                        model(**batch)
                if repeat:
                    times[id(row)].append(time.perf_counter() - start)
    for row, _, _ in models:
        row["examples_per_s"] = args.passes * row["examples"] / statistics.median(times[id(row)])
        row["pass_seconds"] = times[id(row)]


def ratios(rows: list[dict]) -> None:
    for row in rows:
        teacher = next(r for r in rows if r["task"] == row["task"] and r["model"].startswith("teacher"))
        row["kept"] = row["score"] / teacher["score"]
        row["speedup"] = row["examples_per_s"] / teacher["examples_per_s"]
        row["parameter_ratio"] = row["parameters"] / teacher["parameters"]
        # the goal is about distilled students; the gold-label-only BiLSTM is the baseline that says what the
        # teacher added
        row["meets_goal"] = (row.get("alpha_soft", 0) > 0 and row["kept"] >= GOAL_KEPT
                             and row["speedup"] >= GOAL_SPEEDUP)


def table(rows: list[dict]) -> str:
    lines = ["| task | model | parameters | dev accuracy | % of teacher | examples/s (CPU, 1 thread) | speed-up | "
             "≥ 97 % at ≥ 3× |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        goal = "yes" if r["meets_goal"] else "no" if r.get("alpha_soft", 0) > 0 else "—"
        lines.append(f"| {r['task']} | {r['model']} | {r['parameters']:,} ({r['parameter_ratio']:.2f}×) | "
                     f"{r['score']:.4f} | {100 * r['kept']:.1f} % | {r['examples_per_s']:,.0f} | "
                     f"{r['speedup']:.2f}× | {goal} |")
    return "\n".join(lines)


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    markers = {"sst2": "o", "pos": "s"}
    colors = {"teacher": "black", "bert": "tab:blue", "distilled": "tab:green", "gold": "tab:red"}
    for r in rows:
        kind = "teacher" if r["model"].startswith("teacher") else "bert" if r["model"].startswith("bert") \
            else "gold" if "gold" in r["model"] else "distilled"
        ax.scatter(r["speedup"], 100 * r["kept"], marker=markers[r["task"]], color=colors[kind], s=50)
        if kind == "teacher":
            if r["task"] == rows[0]["task"]:
                ax.annotate("teachers (lineage-bert)", (1, 100), fontsize=7, xytext=(6, -10),
                            textcoords="offset points")
            continue
        name = r["model"].split(" (")[0] + {"gold": ", gold labels only", "distilled": ", distilled"}.get(kind, "")
        ax.annotate(f"{r['task']}: {name}", (r["speedup"], 100 * r["kept"]), fontsize=7, xytext=(-6, 6),
                    textcoords="offset points", ha="right" if r["speedup"] > 3 else "left")
    ax.axvline(GOAL_SPEEDUP, color="grey", linestyle="--", linewidth=1)
    ax.axhline(100 * GOAL_KEPT, color="grey", linestyle="--", linewidth=1)
    ax.set_xlim(0.5, max(r["speedup"] for r in rows) + 0.5)
    ax.set_xlabel("CPU throughput relative to the teacher (×)")
    ax.set_ylabel("dev accuracy, % of the teacher's")
    ax.set_title("Students against their teacher (circles: SST-2, squares: UD EWT POS); goal: upper right",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bert", default=str(STAGES / "pretrain-bert" / "model"), help="pretrained lineage BERT")
    parser.add_argument("--word2vec", default=str(STAGES / "pretrain-word2vec" / "model"), help="pretrained word2vec")
    parser.add_argument("--out", default="/tmp/bench_distillation")
    parser.add_argument("--tasks", nargs="+", default=["sst2", "pos"], choices=["sst2", "pos"])
    parser.add_argument("--sst2-train", type=int, default=20000)
    parser.add_argument("--sst2-augment", type=int, default=30000)
    parser.add_argument("--pos-train", type=int, default=None, help="first N EWT training sentences (default all)")
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--bert-lr", type=float, default=1e-3)
    parser.add_argument("--bilstm-lr", type=float, default=1e-2)
    parser.add_argument("--bilstm-hidden", type=int, default=32)
    parser.add_argument("--temperature", type=float, default=2.0)
    parser.add_argument("--alpha-soft", type=float, default=0.5)
    parser.add_argument("--batch-size", type=int, default=64, help="throughput batch size")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per model (the median counts)")
    parser.add_argument("--passes", type=int, default=3, help="passes over the dev set in one timed run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reuse", action="store_true", help="keep runs already finished in --out")
    parser.add_argument("--json")
    parser.add_argument("--plot")
    parser.add_argument("--from-json", help="print the table and draw --plot from an earlier run's --json")
    args = parser.parse_args(argv)
    if args.from_json:
        with open(args.from_json, encoding="utf-8") as f:
            rows = json.load(f)["rows"]
        print(table(rows))
        if args.plot:
            plot(rows, args.plot)
        return

    began = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    specs = task_files(args, out)
    rows = []
    for name in args.tasks:
        rows += run_task(name, specs[name], args, out)
    throughput(rows, specs, args)
    ratios(rows)
    print(f"CPU: {cpu_model_name()}; torch {torch.__version__}, 1 thread, batch {args.batch_size}, median of "
          f"{args.repeats} runs of {args.passes} passes over each dev set; {datetime.date.today()}; "
          f"{time.perf_counter() - began:.0f} s")
    print(table(rows))
    goal = {task: [r["model"] for r in rows if r["task"] == task and r["meets_goal"]] for task in args.tasks}
    print("goal (≥ 97 % of the teacher at ≥ 3× throughput) met on "
          f"{sum(bool(v) for v in goal.values())} of {len(goal)} task types: {goal}")
    if args.plot:
        os.makedirs(os.path.dirname(args.plot) or ".", exist_ok=True)
        plot(rows, args.plot)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"cpu": cpu_model_name(), "date": str(datetime.date.today()), "torch": torch.__version__,
                       "arguments": vars(args), "seconds": time.perf_counter() - began, "rows": rows, "goal": goal},
                      f, indent=2)


if __name__ == "__main__":
    main()
