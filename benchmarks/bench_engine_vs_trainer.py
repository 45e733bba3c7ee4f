"""`hf-lineage pretrain` end to end against the path a user of transformers' run_clm.py / run_mlm.py takes.

Both sides are whole processes, timed from launch to exit, data preparation included, on the same corpus, the same
tokenizer (trained once beforehand, given to both), the same model config, global batch, sequence length, number of
optimiser steps, learning-rate schedule and seed:

- ours: ``hf-lineage pretrain FAMILY --config tiny --tokenizer TOK ...``;
- theirs (``--side trainer``, this file run as a script): what run_clm.py / run_mlm.py do, written out here:
  ``datasets.load_dataset("text")``, tokenize with ``Dataset.map``, concatenate and cut into blocks of the sequence
  length, ``AutoModelForCausalLM`` / ``AutoModelForMaskedLM.from_config`` (the lineage model types, registered by
  ``import hf_lineage``), ``Trainer`` with ``default_data_collator`` (GPT) or ``DataCollatorForLanguageModeling``
  (BERT, 15 % masking), ``trainer.train()`` and ``trainer.save_model()``.

Throughput is tokens trained (non-padding) / whole-process wall seconds. For GPT both sides train the same thing
(contiguous blocks, causal LM loss). For BERT the work differs in what each recipe is: ours is the paper's MLM + NSP
on sentence pairs (padded, the padding skipped), run_mlm.py's is MLM alone on full blocks; the table says so. Each
repetition uses a fresh datasets cache (``HF_DATASETS_CACHE``), so neither side reads the other's or its own earlier
tokenization. Repetitions alternate which side runs first; medians.

    python benchmarks/bench_engine_vs_trainer.py --families gpt,bert --steps 200 --repeats 3
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_bert_pretraining import cpu_model_name  # noqa: E402

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared/data/wikitext-2/wiki.train.tokens"


def engine_settings(family: str, steps: int, batch: int, seq: int) -> dict:
    """The engine's resolved defaults for ``--config tiny``: what the Trainer side is given too."""
    from hf_lineage.objectives import get_objective
    from hf_lineage.pretraining.arguments import PretrainArguments, resolve_defaults

    args = PretrainArguments(family=family, config="tiny", output_dir="unused", train_file=["unused"],
                             max_steps=steps, per_device_batch_size=batch, max_seq_length=seq, seed=0)
    args = resolve_defaults(args, get_objective(family, args))
    return {k: getattr(args, k) for k in ("learning_rate", "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon",
                                          "lr_scheduler", "warmup_ratio", "warmup_steps", "max_grad_norm")}


def run_trainer_side(args) -> None:
    """run_clm.py / run_mlm.py's steps for a model trained from scratch (see the module docstring)."""
    from itertools import chain

    import datasets
    import torch
    import transformers

    import hf_lineage  # noqa: F401  (registers the lineage model types with the Auto classes)

    settings = json.loads(args.settings)
    tokenizer = transformers.AutoTokenizer.from_pretrained(args.tokenizer)
    config = transformers.AutoConfig.from_pretrained(args.model_config)
    raw = datasets.load_dataset("text", data_files={"train": args.corpus})["train"]
    mlm = args.family == "bert"

    def tokenize(batch):
        return tokenizer(batch["text"], return_special_tokens_mask=mlm)

    tokenized = raw.map(tokenize, batched=True, remove_columns=["text"])

    def group_texts(batch):
        joined = {k: list(chain(*batch[k])) for k in batch}
        total = len(joined["input_ids"]) // args.seq * args.seq
        blocks = {k: [v[i:i + args.seq] for i in range(0, total, args.seq)] for k, v in joined.items()}
        if not mlm:
            blocks["labels"] = blocks["input_ids"].copy()
        return blocks

    train = tokenized.map(group_texts, batched=True)
    model_class = transformers.AutoModelForMaskedLM if mlm else transformers.AutoModelForCausalLM
    torch.manual_seed(0)
    model = model_class.from_config(config)
    collator = (transformers.DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15) if mlm
                else transformers.default_data_collator)
    training_args = transformers.TrainingArguments(
        output_dir=args.output_dir, max_steps=args.steps, per_device_train_batch_size=args.batch, seed=0,
        learning_rate=settings["learning_rate"], weight_decay=settings["weight_decay"],
        adam_beta1=settings["adam_beta1"], adam_beta2=settings["adam_beta2"], adam_epsilon=settings["adam_epsilon"],
        lr_scheduler_type=settings["lr_scheduler"], max_grad_norm=settings["max_grad_norm"],
        # transformers 5 reads a warmup_steps below 1 as a ratio of the steps
        warmup_steps=settings["warmup_steps"] or settings["warmup_ratio"] or 0,
        logging_steps=10**9, save_strategy="no", report_to="none", disable_tqdm=True, use_cpu=True,
    )
    trainer = transformers.Trainer(model=model, args=training_args, train_dataset=train, data_collator=collator,
                                   processing_class=tokenizer)
    result = trainer.train()
    trainer.save_model()
    tokens = args.steps * args.batch * args.seq  # full blocks, no padding
    Path(args.output_dir, "bench.json").write_text(json.dumps(
        {"tokens": tokens, "train_runtime": result.metrics["train_runtime"], "train_loss": result.training_loss}))


def timed(command, env) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, children included) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def prepare(family, args, workdir: Path) -> Path:
    """Train the family's tokenizer and write its tiny config once (a 1-step engine run), for both sides: the folder
    holds the tokenizer files and config.json side by side."""
    setup = workdir / f"setup_{family}"
    shutil.rmtree(setup, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "hf_lineage.pretraining", family, "--config", "tiny", "--train-file",
                    args.corpus, "--max-steps", "1", "--per-device-batch-size", str(args.batch), "--max-seq-length",
                    str(args.seq), "--output-dir", str(setup), "--report-to", "none"], check=True, capture_output=True)
    return setup


def run_pair(family, args, setup: Path, workdir: Path, order) -> dict:
    row = {}
    for side in order:
        out = workdir / f"{family}_{side}"
        shutil.rmtree(out, ignore_errors=True)
        cache = Path(tempfile.mkdtemp(dir=workdir, prefix="datasets_cache_"))
        env = {**os.environ, "HF_DATASETS_CACHE": str(cache), "TOKENIZERS_PARALLELISM": "true"}
        if side == "engine":
            command = [sys.executable, "-m", "hf_lineage.pretraining", family, "--config", "tiny", "--train-file",
                       args.corpus, "--tokenizer", str(setup), "--max-steps", str(args.steps),
                       "--per-device-batch-size", str(args.batch), "--max-seq-length", str(args.seq), "--seed", "0",
                       "--output-dir", str(out), "--report-to", "none", "--log-every", "1000000000"]
        else:
            settings = json.dumps(engine_settings(family, args.steps, args.batch, args.seq))
            command = [sys.executable, __file__, "--side", "trainer", "--family", family, "--corpus", args.corpus,
                       "--tokenizer", str(setup), "--model-config", str(setup), "--output-dir", str(out),
                       "--steps", str(args.steps), "--batch", str(args.batch), "--seq", str(args.seq),
                       "--settings", settings]
        wall, cpu = timed(command, env)
        if side == "engine":
            results = json.loads((out / "train_results.json").read_text())
            tokens, loop, loss = results["tokens_seen"], results["train_runtime"], results["log_history"][-1]["train_loss"]
        else:
            results = json.loads((out / "bench.json").read_text())
            tokens, loop, loss = results["tokens"], results["train_runtime"], results["train_loss"]
        row[side] = dict(wall=wall, cpu=cpu, tokens=tokens, loop=loop, loss=loss, tokens_per_s=tokens / wall)
        shutil.rmtree(cache, ignore_errors=True)
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--families", default="gpt,bert")
    p.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--workdir", default=None)
    p.add_argument("--json", default=None)
    # the Trainer side, run by this script in its own process
    p.add_argument("--side", choices=("bench", "trainer"), default="bench")
    p.add_argument("--family")
    p.add_argument("--tokenizer")
    p.add_argument("--model-config")
    p.add_argument("--output-dir")
    p.add_argument("--settings")
    args = p.parse_args(argv)
    if args.side == "trainer":
        return run_trainer_side(args)

    import torch
    import transformers

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench_engine_trainer_"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"CPU: {cpu_model_name()} ({os.cpu_count()} logical CPUs); torch {torch.__version__}, transformers "
          f"{transformers.__version__}; corpus {args.corpus}; {args.steps} steps of {args.batch} x {args.seq}",
          flush=True)
    rows = {}
    for family in args.families.split(","):
        setup = prepare(family, args, workdir)
        reps = []
        for rep in range(args.repeats):
            order = ("engine", "trainer") if rep % 2 == 0 else ("trainer", "engine")
            reps.append(run_pair(family, args, setup, workdir, order))
            r = reps[-1]
            print(f"[{family} rep {rep}] " + "; ".join(
                f"{side}: {r[side]['tokens']:,} tokens, {r[side]['wall']:.1f} s wall ({r[side]['loop']:.1f} s training "
                f"loop), {r[side]['tokens_per_s']:,.0f} tok/s, final loss {r[side]['loss']:.3f}" for side in order),
                flush=True)
        med = {side: {k: statistics.median(r[side][k] for r in reps) for k in ("wall", "cpu", "loop", "tokens_per_s")}
               for side in ("engine", "trainer")}
        rows[family] = dict(repetitions=reps, medians=med,
                            ratio=med["engine"]["tokens_per_s"] / med["trainer"]["tokens_per_s"])
    print("\n| family | side | tokens | wall (s) | training loop (s) | CPU (s) | tokens/s | engine / Trainer |")
    print("|---|---|---|---|---|---|---|---|")
    for family, row in rows.items():
        for side in ("engine", "trainer"):
            m, tokens = row["medians"][side], row["repetitions"][0][side]["tokens"]
            ratio = f"**{row['ratio']:.2f}×**" if side == "engine" else ""
            print(f"| {family} | {side} | {tokens:,} | {m['wall']:.1f} | {m['loop']:.1f} | {m['cpu']:.1f} | "
                  f"{m['tokens_per_s']:,.0f} | {ratio} |")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(args=vars(args), cpu=cpu_model_name(), rows=rows), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
