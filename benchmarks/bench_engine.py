"""Overhead of the pre-training engine: BERT-tiny through `hf_lineage.pretraining.dispatch` vs the same model, data,
optimiser and schedule in a bare PyTorch loop, interleaved in one process; then 2 processes vs 1 on this CPU.

    python benchmarks/bench_engine.py --corpus ../shared/data/wikitext-2/wiki.train.tokens --steps 60 --repeats 5

Prints medians of training tokens/s (non-padding tokens, loop time only: data preparation excluded on both sides)
and the ratio engine / bare (target ≥ 0.95, i.e. under 5 % overhead).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer, get_scheduler

import hf_lineage  # noqa: F401
from hf_lineage.objectives import get_objective
from hf_lineage.data.examples import EpochPermutationSampler, SeededExamples, load_text
from hf_lineage.pretraining.arguments import resolve_defaults
from hf_lineage.objectives.optimization import build_optimizer
from hf_lineage.pretraining.dispatch import PretrainArguments, pretrain


def engine_args(args, tokenizer_dir, output_dir, **extra):
    return PretrainArguments(
        family="bert", output_dir=str(output_dir), config="tiny", train_file=[args.corpus],
        tokenizer=str(tokenizer_dir),
        max_steps=args.steps, per_device_batch_size=args.batch_size, report_to="none", log_every=10**9,
        seed=0, max_seq_length=128, **extra,  # the measured 32 x 128 (tiny's own default is 64 tokens)
    )


def run_engine(args, tokenizer_dir, workdir) -> float:
    out = Path(tempfile.mkdtemp(dir=workdir))
    pretrain(engine_args(args, tokenizer_dir, out))
    return json.loads((out / "train_results.json").read_text())["train_tokens_per_second"]


def run_bare(args, tokenizer_dir, workdir) -> float:
    """The same work as the engine's loop, written as plainly as possible."""
    pa = resolve_defaults(engine_args(args, tokenizer_dir, workdir / "unused"), get_objective("bert", None))
    objective = get_objective("bert", pa)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    examples = objective.prepare(load_text(pa, pa.train_file, "train"), tokenizer, "train")
    torch.manual_seed(0)
    model = hf_lineage.LineageBertForPreTraining(objective.build_config(pa.config, tokenizer, {}))
    data = SeededExamples(examples, 0)
    loader = torch.utils.data.DataLoader(data, batch_size=pa.per_device_batch_size, drop_last=True,
                                         sampler=EpochPermutationSampler(len(data), 0),
                                         collate_fn=objective.collator(tokenizer))
    optimizer = build_optimizer(model, pa)
    scheduler = get_scheduler(pa.lr_scheduler, optimizer, num_warmup_steps=1, num_training_steps=args.steps)
    model.train()
    tokens, started, step = 0, time.time(), 0
    for batch in loader:
        loss = model(**batch, **objective.forward_kwargs).loss  # as the engine calls it (sparse MLM logits)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), pa.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        tokens += int(batch["attention_mask"].sum())
        step += 1
        if step == args.steps:
            break
    return tokens / (time.time() - started)


def run_processes(args, tokenizer_dir, workdir, processes: int) -> float:
    out = Path(tempfile.mkdtemp(dir=workdir))
    launch = [sys.executable, "-m", "hf_lineage.pretraining"]
    if processes > 1:
        launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes",
                  str(processes), "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
                  "-m", "hf_lineage.pretraining"]
    per_device = args.batch_size // processes  # same global batch
    command = launch + ["bert", "--config", "tiny", "--train-file", args.corpus, "--tokenizer",
                        str(tokenizer_dir), "--output-dir",
                        str(out), "--max-steps", str(args.steps), "--per-device-batch-size", str(per_device),
                        "--max-seq-length", "128",
                        "--report-to", "none", "--log-every", "1000000000", "--seed", "0"]
    env = {**os.environ, "ACCELERATE_USE_CPU": "1"}
    subprocess.run(command, env=env, check=True, capture_output=True)
    return json.loads((out / "train_results.json").read_text())["train_tokens_per_second"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=str(Path(__file__).resolve().parents[2] / "shared/data/wikitext-2/wiki.train.tokens"))
    parser.add_argument("--corpus-bytes", type=int, default=400_000, help="use the first N bytes of the corpus")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-processes", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(2)
    workdir = Path(tempfile.mkdtemp(prefix="bench_engine_"))
    corpus = workdir / "corpus.txt"
    corpus.write_text(Path(args.corpus).read_text(encoding="utf-8")[: args.corpus_bytes], encoding="utf-8")
    args.corpus = str(corpus)
    from hf_lineage.tokenization import train_wordpiece_tokenizer

    tokenizer_dir = workdir / "tokenizer"
    train_wordpiece_tokenizer(files=[args.corpus], vocab_size=30522).save_pretrained(tokenizer_dir)

    engine, bare = [], []
    run_bare(args, tokenizer_dir, workdir)  # warm-up: imports, allocator, datasets cache
    for _ in range(args.repeats):  # interleaved so machine noise hits both
        engine.append(run_engine(args, tokenizer_dir, workdir))
        bare.append(run_bare(args, tokenizer_dir, workdir))
    e, b = statistics.median(engine), statistics.median(bare)
    print(f"BERT-tiny, batch {args.batch_size}, {args.steps} steps, {args.repeats} interleaved repeats")
    print(f"engine {e:,.0f} tokens/s   bare loop {b:,.0f} tokens/s   engine/bare {e / b:.3f}  "
          f"(overhead {100 * (1 - e / b):+.1f} %)")
    if not args.skip_processes:
        one, two = [], []
        for _ in range(max(1, args.repeats // 2)):
            one.append(run_processes(args, tokenizer_dir, workdir, 1))
            two.append(run_processes(args, tokenizer_dir, workdir, 2))
        o, t = statistics.median(one), statistics.median(two)
        print(f"1 process (2 threads) {o:,.0f} tokens/s   2 processes (gloo) {t:,.0f} tokens/s   2/1 {t / o:.3f}")


if __name__ == "__main__":
    main()
