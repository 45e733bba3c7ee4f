"""Benchmark: lineage ``LineageGPTForCausalLM`` vs transformers' ``OpenAIGPTLMHeadModel`` — a pre-training step, and
greedy generation.

**Training step.** Forward (causal-LM loss over every position) + backward + ``AdamW.step()`` + ``zero_grad()``
(fused AdamW, as transformers' Trainer uses on torch >= 2.8). The batch is what the GPT objective feeds the engine:
``--batch`` contiguous blocks of ``--seq`` tokens (no padding), ``labels = input_ids``. transformers' model is built
first at the paper's size (``--layers`` of 768 hidden, 12 heads, 3072 FFN, vocabulary 40,478, context 512) with
every dropout 0, and ours is made from it with ``hf_lineage.convert.from_transformers``: the same weights, the same
function, so the step-0 losses must agree (checked: 1e-4 in fp32, 5e-2 under bf16 autocast). The two models run in
one process, interleaved (ours first on even repetitions, theirs first on odd ones), and repetitions during which
another process used the CPU are left out of the medians (``CpuWatch``, shared with the BERT benchmark).
tokens/s = batch × seq / median step time.

**Generation.** Greedy decoding of ``--new-tokens`` tokens after a ``--prompt``-token prompt (batch 1, no early
stop), ours with its KV cache vs transformers' (whose OpenAI GPT has no cache and re-reads the whole sequence at
every step), also ours with ``use_cache=False`` for reference; the generated tokens must be identical in fp32.
new tokens/s = new tokens / median time of ``generate``.

    PYTHONPATH=. python benchmarks/bench_gpt.py --layers 12 --batch 4 --precisions fp32,bf16 --repeats 5 \
        --json bench_gpt.json

This is a benchmark, not a test: it prints a table and exits non-zero only if the step-0 losses disagree or fp32
greedy generations differ.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_bert_pretraining import ADAMW, CpuWatch, cpu_model_name, make_step  # noqa: E402

import hf_lineage  # noqa: E402,F401  (registers the lineage model types)
from hf_lineage.convert import from_transformers  # noqa: E402

TOLERANCE = {"fp32": 1e-4, "bf16": 5e-2}  # |loss_ours - loss_theirs| at step 0


def autocast(precision):
    return torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()


def build_models(layers, seed=0):
    torch.manual_seed(seed)
    config = transformers.OpenAIGPTConfig(n_layer=layers, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    theirs = transformers.OpenAIGPTLMHeadModel(config)
    ours = from_transformers(theirs)  # same weights; returns eval mode
    c = ours.config
    assert (c.hidden_dropout_prob, c.embedding_dropout_prob, c.attention_probs_dropout_prob) == (0.0, 0.0, 0.0)
    return ours, theirs


def interleaved(fns, args, warmup):
    """Run the callables of ``fns`` (name -> fn returning a value) interleaved; medians over clean repetitions."""
    names = list(fns)
    watch = CpuWatch()
    times = {n: [] for n in names}
    all_times = {n: [] for n in names}
    values = {n: [] for n in names}
    faults = {n: [] for n in names}
    n_timed = rep = 0
    while rep < warmup or (len(times[names[0]]) < args.repeats and n_timed < args.max_repeats):
        order = names if rep % 2 == 0 else names[::-1]
        dts, clean = {}, True
        for name in order:
            watch.start()
            faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = time.perf_counter()
            values[name].append(fns[name]())
            dts[name] = time.perf_counter() - t0
            faults[name].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0)
            clean = clean and not watch.contended(watch.others_seconds(), dts[name])
        if rep >= warmup:
            n_timed += 1
            for name in order:
                all_times[name].append(dts[name])
                if clean:
                    times[name].append(dts[name])
        rep += 1
    n_clean = len(times[names[0]])
    used = times if n_clean >= 3 else all_times
    return dict(
        median={n: statistics.median(used[n]) for n in names}, values=values, clean=n_clean, timed=n_timed,
        medians_over="clean" if n_clean >= 3 else "all", all_times=all_times,
        faults={n: statistics.median(faults[n][warmup:] or faults[n]) for n in names},
    )


def bench_training(ours, theirs, precision, args):
    g = torch.Generator().manual_seed(args.seed)
    input_ids = torch.randint(0, ours.config.vocab_size, (args.batch, args.seq), generator=g)
    batch = dict(input_ids=input_ids, labels=input_ids)
    for model in (ours, theirs):
        model.train()
    steps = {"ours": make_step(ours, batch, precision, args.adamw, lr=2.5e-4),
             "theirs": make_step(theirs, batch, precision, args.adamw, lr=2.5e-4)}
    r = interleaved(steps, args, args.warmup)
    med, losses = r["median"], r["values"]
    n_tokens = args.batch * args.seq
    diff0 = abs(losses["ours"][0] - losses["theirs"][0])
    row = dict(
        kind="train", precision=precision, batch=args.batch, seq=args.seq, layers=args.layers,
        median_s_ours=med["ours"], median_s_theirs=med["theirs"],
        tokens_per_s_ours=n_tokens / med["ours"], tokens_per_s_theirs=n_tokens / med["theirs"],
        ratio=med["theirs"] / med["ours"], step0_loss_ours=losses["ours"][0], step0_loss_theirs=losses["theirs"][0],
        step0_abs_diff=diff0, equal_loss=diff0 <= TOLERANCE[precision], last_loss_ours=losses["ours"][-1],
        last_loss_theirs=losses["theirs"][-1], clean_reps=r["clean"], timed_reps=r["timed"],
        medians_over=r["medians_over"], all_times_ours=r["all_times"]["ours"],
        all_times_theirs=r["all_times"]["theirs"], page_faults_ours=r["faults"]["ours"],
        page_faults_theirs=r["faults"]["theirs"],
    )
    print(f"[train/{precision}] batch {args.batch}x{args.seq}; step-0 loss ours {losses['ours'][0]:.6f} theirs "
          f"{losses['theirs'][0]:.6f} ({'OK' if row['equal_loss'] else 'MISMATCH'}); median step ours "
          f"{med['ours']:.3f}s theirs {med['theirs']:.3f}s -> {row['ratio']:.2f}x; clean {r['clean']}/{r['timed']}; "
          f"page faults/step ours {row['page_faults_ours']:.0f} theirs {row['page_faults_theirs']:.0f}", flush=True)
    return row


def bench_generation(ours, theirs, precision, args):
    g = torch.Generator().manual_seed(args.seed + 1)
    prompt = torch.randint(0, ours.config.vocab_size, (1, args.prompt), generator=g)
    for model in (ours, theirs):
        model.eval()
    kwargs = dict(max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens, do_sample=False,
                  eos_token_id=None, pad_token_id=0)

    def run(model, **extra):
        def generate():
            with torch.no_grad(), autocast(precision):
                return model.generate(prompt, **kwargs, **extra)
        return generate

    r = interleaved({"ours (cache)": run(ours), "theirs": run(theirs), "ours (no cache)": run(ours, use_cache=False)},
                    argparse.Namespace(repeats=args.gen_repeats, max_repeats=3 * args.gen_repeats), warmup=1)
    outputs = {name: values[-1] for name, values in r["values"].items()}
    same = all(torch.equal(outputs["ours (cache)"], o) for o in outputs.values())
    med = r["median"]
    row = dict(
        kind="generate", precision=precision, prompt=args.prompt, new_tokens=args.new_tokens, layers=args.layers,
        **{f"new_tokens_per_s_{k.split()[0]}{'_nocache' if 'no cache' in k else ''}": args.new_tokens / v
           for k, v in med.items()},
        ratio=med["theirs"] / med["ours (cache)"], identical_tokens=same, clean_reps=r["clean"],
        timed_reps=r["timed"], medians_over=r["medians_over"],
    )
    print(f"[generate/{precision}] prompt {args.prompt} + {args.new_tokens} new: "
          + ", ".join(f"{k} {args.new_tokens / v:.1f} tok/s" for k, v in med.items())
          + f" -> {row['ratio']:.1f}x; identical tokens: {same}; clean {r['clean']}/{r['timed']}", flush=True)
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=12, help="depth (12 = the paper's model)")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--precisions", default="fp32,bf16", help="comma list of: fp32,bf16 (bf16 = CPU autocast)")
    p.add_argument("--repeats", type=int, default=5, help="clean timed training repetitions wanted")
    p.add_argument("--max-repeats", type=int, default=0, help="default 3 x --repeats")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps per model first (step 0 = loss check)")
    p.add_argument("--adamw", choices=list(ADAMW), default="fused")
    p.add_argument("--prompt", type=int, default=64)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--gen-repeats", type=int, default=3)
    p.add_argument("--skip", default="", help="comma list of parts to skip: train,generate")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    args.max_repeats = args.max_repeats or 3 * args.repeats
    if args.warmup < 1:
        p.error("--warmup must be >= 1 (the first step is the equal-loss check)")

    torch.set_num_threads(args.threads)
    command = "PYTHONPATH=. python " + " ".join(shlex.quote(a) for a in [sys.argv[0], *(argv or sys.argv[1:])])
    machine = dict(cpu=cpu_model_name(), logical_cpus=os.cpu_count(), threads=torch.get_num_threads(),
                   cpu_capability=torch.backends.cpu.get_cpu_capability(), torch=torch.__version__,
                   transformers=transformers.__version__, python=platform.python_version(),
                   malloc_env={k: v for k, v in os.environ.items() if k.startswith("MALLOC_") or k == "LD_PRELOAD"})
    print(f"command: {command}")
    print("machine: " + ", ".join(f"{k}={v}" for k, v in machine.items()), flush=True)

    rows = []
    for precision in args.precisions.split(","):
        if precision not in TOLERANCE:
            p.error(f"unknown precision {precision}")
        if "train" not in args.skip:
            rows.append(bench_training(*build_models(args.layers, args.seed), precision, args))
        if "generate" not in args.skip:
            rows.append(bench_generation(*build_models(args.layers, args.seed), precision, args))

    print()
    train = [r for r in rows if r["kind"] == "train"]
    if train:
        print("| precision | batch×seq | median step ours (s) | theirs (s) | ours tok/s | theirs tok/s | ours/theirs "
              "| step-0 loss ours / theirs | clean reps |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in train:
            print(f"| {r['precision']} | {r['batch']}×{r['seq']} | {r['median_s_ours']:.2f} | "
                  f"{r['median_s_theirs']:.2f} | {r['tokens_per_s_ours']:,.0f} | {r['tokens_per_s_theirs']:,.0f} | "
                  f"**{r['ratio']:.2f}×** | {r['step0_loss_ours']:.6f} / {r['step0_loss_theirs']:.6f} | "
                  f"{r['clean_reps']}/{r['timed_reps']} |")
    gen = [r for r in rows if r["kind"] == "generate"]
    if gen:
        print("\n| precision | prompt + new | ours, cache (new tok/s) | theirs (new tok/s) | ours, no cache | "
              "ours/theirs | same tokens | clean reps |")
        print("|---|---|---|---|---|---|---|---|")
        for r in gen:
            print(f"| {r['precision']} | {r['prompt']} + {r['new_tokens']} | {r['new_tokens_per_s_ours']:.1f} | "
                  f"{r['new_tokens_per_s_theirs']:.1f} | {r['new_tokens_per_s_ours_nocache']:.1f} | "
                  f"**{r['ratio']:.1f}×** | {r['identical_tokens']} | {r['clean_reps']}/{r['timed_reps']} |")
    print(f"\ncommand: {command}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(command=command, machine=machine, args=vars(args), results=rows), f, indent=1)
    bad = [r for r in train if not r["equal_loss"]] + [r for r in gen if r["precision"] == "fp32"
                                                        and not r["identical_tokens"]]
    if bad:
        print("ERROR: step-0 losses or fp32 generations differ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
