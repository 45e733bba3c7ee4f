"""Benchmark: one BERT pre-training step, lineage ``LineageBertForPreTraining`` vs transformers' ``BertForPreTraining``.

A step is forward (MLM + NSP loss) + backward + ``AdamW.step()`` + ``zero_grad()``. Both models are built from the
same config with identical weights (transformers' model is built first and converted with
``hf_lineage.convert.from_transformers``), see the same batch, run in the same precision and the same process, and
are timed interleaved — ours then theirs on even repetitions, theirs then ours on odd ones — so machine noise hits
both. Throughput is tokens/s = batch × sequence length (padding included, identical for both) / median step time.

The batch is shaped like Google's ``create_pretraining_data.py`` output: [CLS] A [SEP] B [SEP] with segment B
starting mid-sequence, ~10 % of sequences shorter than the maximum (short_seq_prob=0.1) and padded, 15 % of the real
tokens (at most max_predictions_per_seq) labelled for MLM (80 % [MASK], 10 % random, 10 % kept), random NSP labels.

Dropout is 0 in both configs by default (``--dropout``), so the two models compute the same function in train mode
and the step-0 losses can be checked equal ("at equal loss").

    PYTHONPATH=. python benchmarks/bench_bert_pretraining.py --configs tiny,base --precisions fp32,bf16 \
        --repeats 10 --warmup 3 --json bench.json

This is a benchmark, not a test: it prints a table and exits non-zero only if the step-0 losses disagree.
"""

import argparse
import contextlib
import json
import os
import platform
import shlex
import statistics
import sys
import time

import torch
import transformers

import hf_lineage  # noqa: F401  (registers the lineage model types)
from hf_lineage.convert import from_transformers
from hf_lineage.models.configuration_lineage_bert import LineageBertConfig

# Google's vocabulary ids (the transformers BertConfig default vocabulary).
PAD, CLS, SEP, MASK = 0, 101, 102, 103
FIRST_NORMAL_ID = 999  # ids below are [unused*] / special in Google's vocab

# name -> (sizes, batch size); sequence length and vocab are shared.
SHAPES = {
    "tiny": (LineageBertConfig.named_sizes["tiny"], 32),
    "base": (LineageBertConfig.named_sizes["base"], 8),
}
CONTENDED_MS = 1.0  # contention_probe() above this: another process was competing for the cores
TOLERANCE = {"fp32": 1e-4, "bf16": 5e-2}  # |loss_ours - loss_theirs| at step 0


def cpu_model_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def make_batch(batch_size, seq_len, vocab_size, seed=0, short_seq_prob=0.1, masked_lm_prob=0.15,
               max_predictions_per_seq=20):
    """A pre-training batch as BERT's data pipeline produces it (see the module docstring)."""
    g = torch.Generator().manual_seed(seed)

    def randint(lo, hi):  # inclusive
        return int(torch.randint(lo, hi + 1, (1,), generator=g))

    input_ids = torch.full((batch_size, seq_len), PAD, dtype=torch.long)
    token_type_ids = torch.zeros(batch_size, seq_len, dtype=torch.long)
    attention_mask = torch.zeros(batch_size, seq_len, dtype=torch.long)
    labels = torch.full((batch_size, seq_len), -100, dtype=torch.long)
    # Which sequences are short: ~short_seq_prob of them, at least one so padding is always exercised.
    n_short = max(1, round(short_seq_prob * batch_size))
    short = set(torch.randperm(batch_size, generator=g)[:n_short].tolist())
    for i in range(batch_size):
        length = randint(max(8, seq_len // 8), seq_len - 1) if i in short else seq_len
        # [CLS] A [SEP] B [SEP]; segment B starts somewhere in the middle.
        sep_a = randint(max(2, length // 4), max(2, (3 * length) // 4))
        ids = torch.randint(FIRST_NORMAL_ID, vocab_size, (length,), generator=g)
        ids[0], ids[sep_a], ids[length - 1] = CLS, SEP, SEP
        input_ids[i, :length] = ids
        token_type_ids[i, sep_a + 1:length] = 1
        attention_mask[i, :length] = 1
        # MLM: 15 % of the non-special tokens, capped as in Google's max_predictions_per_seq.
        candidates = torch.tensor([p for p in range(length) if p not in (0, sep_a, length - 1)])
        n_pred = min(max_predictions_per_seq, max(1, round(length * masked_lm_prob)))
        chosen = candidates[torch.randperm(len(candidates), generator=g)[:n_pred]]
        labels[i, chosen] = input_ids[i, chosen]
        for p in chosen.tolist():
            r = float(torch.rand((), generator=g))
            if r < 0.8:
                input_ids[i, p] = MASK
            elif r < 0.9:
                input_ids[i, p] = randint(FIRST_NORMAL_ID, vocab_size - 1)
    next_sentence_label = torch.randint(0, 2, (batch_size,), generator=g)
    return dict(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                labels=labels, next_sentence_label=next_sentence_label)


def build_models(sizes, vocab_size, dropout, seed=0):
    torch.manual_seed(seed)
    config = transformers.BertConfig(
        vocab_size=vocab_size, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout, **sizes
    )
    theirs = transformers.BertForPreTraining(config)
    ours = from_transformers(theirs)  # same weights; returns eval mode
    theirs.train()
    ours.train()
    for a, b in ((ours.config, "ours"), (theirs.config, "theirs")):
        assert a.hidden_dropout_prob == dropout and a.attention_probs_dropout_prob == dropout, b
    return ours, theirs


def contention_probe():
    """Milliseconds for a 2M-element add on all threads: ~0.1 ms on an idle 2-core machine, several ms when another
    process holds a core (every OpenMP barrier then waits for a descheduled thread). Recorded per repetition."""
    x = torch.ones(1 << 21)
    out = torch.empty_like(x)
    torch.add(x, x, out=out)
    t0 = time.perf_counter()
    for _ in range(5):
        torch.add(x, x, out=out)
    return (time.perf_counter() - t0) / 5 * 1e3


def make_step(model, batch, precision, lr=1e-4):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)

    def step():
        ctx = torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()
        with ctx:
            loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return float(loss.detach())

    return step


def bench_one(name, precision, args):
    sizes, batch_size = SHAPES[name]
    if name == "base" and args.base_batch:
        batch_size = args.base_batch
    if name == "tiny" and args.tiny_batch:
        batch_size = args.tiny_batch
    ours, theirs = build_models(sizes, args.vocab, args.dropout)
    batch = make_batch(batch_size, args.seq, args.vocab, seed=args.seed)
    n_tokens = batch_size * args.seq
    steps = {"ours": make_step(ours, batch, precision), "theirs": make_step(theirs, batch, precision)}
    times = {"ours": [], "theirs": []}
    losses = {"ours": [], "theirs": []}
    probes = []
    total = args.warmup + args.repeats
    for rep in range(total):
        order = ("ours", "theirs") if rep % 2 == 0 else ("theirs", "ours")
        if rep >= args.warmup:
            probes.append(contention_probe())  # before every timed repetition, and once after the last
        for who in order:
            t0 = time.perf_counter()
            loss = steps[who]()
            dt = time.perf_counter() - t0
            losses[who].append(loss)
            if rep >= args.warmup:
                times[who].append(dt)
    probes.append(contention_probe())
    # A repetition counts as contended when the probe just before or just after it says so.
    contended = [max(a, b) > CONTENDED_MS for a, b in zip(probes, probes[1:])]
    med = {who: statistics.median(t) for who, t in times.items()}
    diff0 = abs(losses["ours"][0] - losses["theirs"][0])
    row = dict(
        config=name, precision=precision, batch=batch_size, seq=args.seq, vocab=args.vocab, **sizes,
        tokens_per_step=n_tokens, real_tokens=int(batch["attention_mask"].sum()),
        masked_tokens=int((batch["labels"] != -100).sum()),
        median_s_ours=med["ours"], median_s_theirs=med["theirs"],
        tokens_per_s_ours=n_tokens / med["ours"], tokens_per_s_theirs=n_tokens / med["theirs"],
        ratio=med["theirs"] / med["ours"],
        step0_loss_ours=losses["ours"][0], step0_loss_theirs=losses["theirs"][0], step0_abs_diff=diff0,
        last_loss_ours=losses["ours"][-1], last_loss_theirs=losses["theirs"][-1],
        times_ours=times["ours"], times_theirs=times["theirs"], probe_ms=probes,
        contended_reps=sum(contended),
        equal_loss=(diff0 <= TOLERANCE[precision]) if args.dropout == 0 else None,
    )
    check = ("skipped (dropout > 0)" if args.dropout else
             f"{'OK' if row['equal_loss'] else 'MISMATCH'} (|diff| {diff0:.2e} <= {TOLERANCE[precision]:g})")
    print(f"[{name}/{precision}] batch {batch_size}x{args.seq}, {row['real_tokens']} real tokens, "
          f"{row['masked_tokens']} masked; step-0 loss ours {losses['ours'][0]:.6f} theirs "
          f"{losses['theirs'][0]:.6f} -> {check}; last loss ours {losses['ours'][-1]:.6f} "
          f"theirs {losses['theirs'][-1]:.6f}; median step ours {med['ours']:.3f}s theirs {med['theirs']:.3f}s; "
          f"contended repetitions {row['contended_reps']}/{args.repeats} (probe median "
          f"{statistics.median(probes):.2f} ms, max {max(probes):.2f} ms)",
          flush=True)
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", default="tiny,base", help="comma list of: " + ",".join(SHAPES))
    p.add_argument("--precisions", default="fp32,bf16", help="comma list of: fp32,bf16 (bf16 = CPU autocast)")
    p.add_argument("--repeats", type=int, default=10, help="timed steps per model (medians are reported)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps per model first (step 0 is the loss check)")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--vocab", type=int, default=30522)
    p.add_argument("--tiny-batch", type=int, default=0, help="override the tiny batch size (default 32)")
    p.add_argument("--base-batch", type=int, default=0, help="override the base-shaped batch size (default 8)")
    p.add_argument("--dropout", type=float, default=0.0, help="hidden and attention dropout of both models")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="write the results (with every step time) to this file")
    args = p.parse_args(argv)
    if args.warmup < 1:
        p.error("--warmup must be >= 1 (the first step is the equal-loss check)")

    torch.set_num_threads(args.threads)
    command = "PYTHONPATH=. python " + " ".join(shlex.quote(a) for a in [sys.argv[0], *(argv or sys.argv[1:])])
    machine = dict(cpu=cpu_model_name(), logical_cpus=os.cpu_count(),
                   threads=torch.get_num_threads(), cpu_capability=torch.backends.cpu.get_cpu_capability(),
                   torch=torch.__version__, transformers=transformers.__version__, python=platform.python_version())
    print(f"command: {command}")
    print("machine: " + ", ".join(f"{k}={v}" for k, v in machine.items()))
    print(f"dropout={args.dropout} (both models, train mode); transformers attention: sdpa (default)", flush=True)

    rows = []
    for name in args.configs.split(","):
        for precision in args.precisions.split(","):
            if name not in SHAPES or precision not in TOLERANCE:
                p.error(f"unknown config/precision {name}/{precision}")
            rows.append(bench_one(name, precision, args))

    header = ("config", "precision", "batch×seq", "ours tok/s", "theirs tok/s", "ours/theirs", "step-0 loss Δ",
              "contended reps")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        lines.append(
            f"| {r['config']} | {r['precision']} | {r['batch']}×{r['seq']} | {r['tokens_per_s_ours']:,.0f} | "
            f"{r['tokens_per_s_theirs']:,.0f} | {r['ratio']:.2f}× | {r['step0_abs_diff']:.1e} | "
            f"{r['contended_reps']}/{args.repeats} |"
        )
    print(f"\nmedians over {args.repeats} interleaved repetitions after {args.warmup} warmup steps:")
    print("\n".join(lines))
    print(f"\ncommand: {command}")
    if any(r["contended_reps"] for r in rows):
        print(f"WARNING: another process competed for the CPU during some repetitions (contention probe > "
              f"{CONTENDED_MS} ms); medians are less trustworthy, re-run on an idle machine.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(command=command, machine=machine, args=vars(args), results=rows), f, indent=1)
    if any(r["equal_loss"] is False for r in rows):
        print("ERROR: step-0 losses differ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
