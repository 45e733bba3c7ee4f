"""Benchmark: one BERT pre-training step, lineage ``LineageBertForPreTraining`` vs transformers' ``BertForPreTraining``.

A step is forward (MLM + NSP loss) + backward + ``AdamW.step()`` + ``zero_grad()`` (``--adamw``: ``fused`` by
default, the implementation transformers' Trainer picks on torch >= 2.8; ``loop`` is torch's plain one). Both
models are built from the same config with identical weights (transformers' model is built first and converted with
``hf_lineage.convert.from_transformers``), see the same batch, run in the same precision and the same process, and
are timed interleaved — ours then theirs on even repetitions, theirs then ours on odd ones — so machine noise hits
both. Throughput is tokens/s = batch × sequence length (padding included, identical for both) / median step time.
On a small shared machine another process running at the same time slows a 2-thread step down by up to 3x, so every
step also records how much CPU other processes used meanwhile; a repetition where they used more than 15 % of a core
during either step is left out of the medians, and the benchmark keeps going until ``--repeats`` clean repetitions
(at most ``--max-repeats``). The table says how many repetitions were clean.

The batch is shaped like Google's ``create_pretraining_data.py`` output: [CLS] A [SEP] B [SEP] with segment B
starting mid-sequence, ~10 % of sequences shorter than the maximum (short_seq_prob=0.1) and padded, 15 % of the real
tokens (at most max_predictions_per_seq) labelled for MLM (80 % [MASK], 10 % random, 10 % kept), random NSP labels.

Dropout is 0 in both configs by default (``--dropout``), so the two models compute the same function in train mode
and the step-0 losses can be checked equal ("at equal loss").

    PYTHONPATH=. python benchmarks/bench_bert_pretraining.py --configs tiny,base --precisions fp32,bf16 \
        --repeats 10 --warmup 3 --json bench.json

This is a benchmark, not a test: it prints a table and exits non-zero only if the step-0 losses disagree
(tolerance 1e-4 in fp32, 5e-2 under bf16 autocast).
"""

import argparse
import contextlib
import json
import os
import platform
import resource
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
               max_predictions_per_seq=20, min_length=0):
    """A pre-training batch as BERT's data pipeline produces it (see the module docstring); with ``min_length``,
    every sequence's length is drawn uniformly from [min_length, seq_len] instead (a spread of lengths, padded to
    seq_len, as dynamic batches of sentences and sentence pairs give)."""
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
        if min_length:
            length = randint(min_length, seq_len)
        else:
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
    if min_length:  # padded to the longest sequence, as DataCollatorWithPadding / padding="longest" do
        longest = int(attention_mask.sum(1).max())
        input_ids, token_type_ids, attention_mask, labels = (
            t[:, :longest].contiguous() for t in (input_ids, token_type_ids, attention_mask, labels))
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


class CpuWatch:
    """CPU time other processes used while a step ran (from /proc/stat minus this process's own /proc/self/stat).

    On a small shared machine another process holding a core does not just take its share: every OpenMP barrier
    waits for a descheduled thread and a step can take 3x longer. Steps during which others used more than 15 % of
    one core (and at least 3 clock ticks) are counted as contended and left out of the medians.
    """

    def __init__(self):
        self.tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.available = os.path.exists("/proc/stat") and os.path.exists("/proc/self/stat")

    def _sample(self):
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        # user nice system idle iowait irq softirq steal ...: everything but idle and iowait is busy
        busy = sum(fields) - fields[3] - fields[4]
        with open("/proc/self/stat") as f:
            own = f.read().rsplit(")", 1)[1].split()
        return busy, int(own[11]) + int(own[12])  # utime + stime of all our threads

    def start(self):
        self._start = self._sample() if self.available else None

    def others_seconds(self):
        if self._start is None:
            return 0.0
        busy, own = self._sample()
        return max(0, (busy - self._start[0]) - (own - self._start[1])) / self.tick

    def contended(self, others_s, wall_s):
        return others_s * self.tick >= 3 and others_s > 0.15 * wall_s


ADAMW = {"fused": dict(fused=True), "foreach": dict(foreach=True), "loop": dict(foreach=False)}


def make_step(model, batch, precision, adamw="fused", lr=1e-4, **forward_kwargs):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, **ADAMW[adamw])

    def step():
        ctx = torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()
        with ctx:
            loss = model(**batch, **forward_kwargs).loss
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
    ours.config.unpad_inputs = args.unpad == "on"
    batch = make_batch(batch_size, args.seq, args.vocab, seed=args.seed, min_length=args.min_length)
    n_tokens = batch["input_ids"].numel()  # padding included
    # Ours runs as the pre-training engine runs it: sparse_logits=True, the MLM projection at labelled positions only.
    steps = {"ours": make_step(ours, batch, precision, args.adamw, sparse_logits=True),
             "theirs": make_step(theirs, batch, precision, args.adamw)}
    watch = CpuWatch()
    times = {"ours": [], "theirs": []}  # clean repetitions only
    all_times = {"ours": [], "theirs": []}
    losses = {"ours": [], "theirs": []}
    faults = {"ours": [], "theirs": []}
    others, n_timed, rep = [], 0, 0
    # Warmup, then repetitions until --repeats clean ones (or --max-repeats timed ones) have been seen.
    while rep < args.warmup or (len(times["ours"]) < args.repeats and n_timed < args.max_repeats):
        order = ("ours", "theirs") if rep % 2 == 0 else ("theirs", "ours")
        dts, clean = {}, True
        for who in order:
            watch.start()
            faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = time.perf_counter()
            losses[who].append(steps[who]())
            dts[who] = time.perf_counter() - t0
            if rep >= args.warmup:  # fresh pages touched: large allocations the allocator got from the kernel
                faults[who].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0)
            other = watch.others_seconds()
            if rep >= args.warmup:
                others.append(other)
                clean = clean and not watch.contended(other, dts[who])
        if rep >= args.warmup:
            n_timed += 1
            for who in order:
                all_times[who].append(dts[who])
                if clean:  # both steps of the pair clean, so the two sides stay paired
                    times[who].append(dts[who])
        rep += 1
    n_clean = len(times["ours"])
    if n_clean < 3:  # hardly anything clean: fall back to every repetition, and say so
        times = all_times
    med = {who: statistics.median(t) for who, t in times.items()}
    diff0 = abs(losses["ours"][0] - losses["theirs"][0])
    row = dict(
        config=name, precision=precision, batch=batch_size, seq=batch["input_ids"].shape[1], vocab=args.vocab, **sizes,
        tokens_per_step=n_tokens, real_tokens=int(batch["attention_mask"].sum()),
        masked_tokens=int((batch["labels"] != -100).sum()),
        median_s_ours=med["ours"], median_s_theirs=med["theirs"],
        tokens_per_s_ours=n_tokens / med["ours"], tokens_per_s_theirs=n_tokens / med["theirs"],
        ratio=med["theirs"] / med["ours"],
        step0_loss_ours=losses["ours"][0], step0_loss_theirs=losses["theirs"][0], step0_abs_diff=diff0,
        last_loss_ours=losses["ours"][-1], last_loss_theirs=losses["theirs"][-1],
        clean_reps=n_clean, timed_reps=n_timed, medians_over="clean" if n_clean >= 3 else "all",
        all_times_ours=all_times["ours"], all_times_theirs=all_times["theirs"], others_cpu_s=others,
        page_faults_per_step_ours=statistics.median(faults["ours"]),
        page_faults_per_step_theirs=statistics.median(faults["theirs"]),
        all_reps_ratio=statistics.median(all_times["theirs"]) / statistics.median(all_times["ours"]),
        equal_loss=(diff0 <= TOLERANCE[precision]) if args.dropout == 0 else None,
    )
    check = ("skipped (dropout > 0)" if args.dropout else
             f"{'OK' if row['equal_loss'] else 'MISMATCH'} (|diff| {diff0:.2e} <= {TOLERANCE[precision]:g})")
    print(f"[{name}/{precision}] batch {batch_size}x{row['seq']}, {row['real_tokens']} real tokens, "
          f"{row['masked_tokens']} masked; step-0 loss ours {losses['ours'][0]:.6f} theirs "
          f"{losses['theirs'][0]:.6f} -> {check}; last loss ours {losses['ours'][-1]:.6f} "
          f"theirs {losses['theirs'][-1]:.6f}; median step ours {med['ours']:.3f}s theirs {med['theirs']:.3f}s; "
          f"clean repetitions {n_clean}/{n_timed} (medians over {row['medians_over']}; ratio over all "
          f"{row['all_reps_ratio']:.2f}x); minor page faults/step ours {row['page_faults_per_step_ours']:.0f} "
          f"theirs {row['page_faults_per_step_theirs']:.0f}",
          flush=True)
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", default="tiny,base", help="comma list of: " + ",".join(SHAPES))
    p.add_argument("--precisions", default="fp32,bf16", help="comma list of: fp32,bf16 (bf16 = CPU autocast)")
    p.add_argument("--repeats", type=int, default=10, help="clean timed repetitions wanted (medians are reported)")
    p.add_argument("--max-repeats", type=int, default=0,
                   help="give up looking for clean repetitions after this many timed ones (default 3 x --repeats)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps per model first (step 0 is the loss check)")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--min-length", type=int, default=0,
                   help="draw every sequence's length uniformly from [MIN_LENGTH, --seq] (e.g. 30: a realistic spread, "
                        "~38 %% padding); 0 (default): the pre-training data shape, ~10 %% short sequences")
    p.add_argument("--unpad", choices=("on", "off"), default="on",
                   help="ours with unpad_inputs (skip the padding; the default) or without")
    p.add_argument("--vocab", type=int, default=30522)
    p.add_argument("--tiny-batch", type=int, default=0, help="override the tiny batch size (default 32)")
    p.add_argument("--base-batch", type=int, default=0, help="override the base-shaped batch size (default 8)")
    p.add_argument("--dropout", type=float, default=0.0, help="hidden and attention dropout of both models")
    p.add_argument("--adamw", choices=list(ADAMW), default="fused",
                   help="torch.optim.AdamW implementation; fused is what transformers' Trainer uses on torch>=2.8 "
                        "(optim='adamw_torch_fused'), loop is torch's plain per-tensor default")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="write the results (with every step time) to this file")
    args = p.parse_args(argv)
    args.max_repeats = args.max_repeats or 3 * args.repeats
    if args.warmup < 1:
        p.error("--warmup must be >= 1 (the first step is the equal-loss check)")

    torch.set_num_threads(args.threads)
    command = "PYTHONPATH=. python " + " ".join(shlex.quote(a) for a in [sys.argv[0], *(argv or sys.argv[1:])])
    machine = dict(cpu=cpu_model_name(), logical_cpus=os.cpu_count(),
                   threads=torch.get_num_threads(), cpu_capability=torch.backends.cpu.get_cpu_capability(),
                   torch=torch.__version__, transformers=transformers.__version__, python=platform.python_version(),
                   malloc_env={k: v for k, v in os.environ.items() if k.startswith("MALLOC_") or k == "LD_PRELOAD"})
    print(f"command: {command}")
    print("machine: " + ", ".join(f"{k}={v}" for k, v in machine.items()))
    print(f"dropout={args.dropout} (both models, train mode); AdamW {args.adamw}; transformers attention: sdpa "
          "(its default)", flush=True)

    rows = []
    for name in args.configs.split(","):
        for precision in args.precisions.split(","):
            if name not in SHAPES or precision not in TOLERANCE:
                p.error(f"unknown config/precision {name}/{precision}")
            rows.append(bench_one(name, precision, args))

    header = ("config", "precision", "batch×seq", "ours tok/s", "theirs tok/s", "ours/theirs", "step-0 loss Δ",
              "clean reps")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        lines.append(
            f"| {r['config']} | {r['precision']} | {r['batch']}×{r['seq']} | {r['tokens_per_s_ours']:,.0f} | "
            f"{r['tokens_per_s_theirs']:,.0f} | {r['ratio']:.2f}× | {r['step0_abs_diff']:.1e} | "
            f"{r['clean_reps']}/{r['timed_reps']} |"
        )
    print(f"\nmedians over clean interleaved repetitions (target {args.repeats}, at most {args.max_repeats} timed) "
          f"after {args.warmup} warmup steps; a repetition is clean when no other process used the CPU during it:")
    print("\n".join(lines))
    print(f"\ncommand: {command}")
    if any(r["medians_over"] == "all" for r in rows):
        print("WARNING: fewer than 3 clean repetitions for some rows (another process kept the CPU busy); their "
              "medians include contended steps — re-run on an idle machine.")
    print(f"ours: unpad_inputs={args.unpad}; lengths: " + (f"uniform in [{args.min_length}, {args.seq}], padded to the "
          "longest" if args.min_length else "pre-training shape (10 % short)"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(command=command, machine=machine, args=vars(args), results=rows), f, indent=1)
    if any(r["equal_loss"] is False for r in rows):
        print("ERROR: step-0 losses differ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
