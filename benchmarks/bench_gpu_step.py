"""Benchmark: one pre-training step of BERT and GPT on a GPU, ours against transformers', with model FLOPs
utilisation; and the engine end to end against the bare step on the same batches (issue 33).

A step is forward + backward + fused ``AdamW.step()`` + ``zero_grad()`` under bf16 autocast, inputs already on the
device. The models of a comparison are built from one config with identical weights (``from_transformers``), see the
same batch, and are timed interleaved (ours first on even repetitions, theirs first on odd ones); each step is timed
from a synchronised start to a synchronised end, and the table gives the median.

Cases (``--cases``; the shapes of the issue, then shapes that fill an H100/H200):

* ``bert``: BERT-base MLM + NSP, 64 × 128, real lengths 30–128 (padded to the longest): ours vs
  ``BertForPreTraining`` (SDPA). ``bert_fill``: the same at 256 × 128.
* ``gpt``: GPT (12 × 768, 40,478 words), 16 × 512, causal LM: ours vs ``OpenAIGPTLMHeadModel`` (eager, its only
  attention) and ``GPT2LMHeadModel`` of the same shape (SDPA). ``gpt_fill``: 32 × 512, ours vs GPT-2.
* ``engine``: ``hf-lineage pretrain bert --config base`` (bf16, batch 64 × 128) for ``--engine-steps`` steps on
  ``--corpus``, against the bare step of the same model on the same batches (drawn from the engine's own loader).

Model FLOPs utilisation (MFU), as PaLM (Chowdhery et al. 2022, appendix B) and nanoGPT count it: training FLOPs per
token = 6 × (the parameters every token multiplies: all but the embeddings, plus the output projection for the
positions that are predicted — every position for GPT, the masked 15 % for BERT) + 12 × layers × hidden × the
token's sequence length (attention scores and weighted sum, forward and backward; causal attention counted in full,
as PaLM does). MFU = FLOPs per token × real (non-padding) tokens per second / peak. Two peaks are given: the chip's
dense bf16 specification (``--peak-tflops``, default by device name: 989 for H100 and H200 SXM) and the measured
rate of an 8192³ bf16 matrix product on this device. The same count is applied to transformers' models, so MFU
ratios are speed ratios.

    python benchmarks/bench_gpu_step.py --json gpu_step.json [--compile] [--cases bert gpt ...] \
        [--corpus hf_lineage/samples/lineage/corpus.train.txt]

On a machine without CUDA it runs the same code on the CPU at toy sizes (``--device cpu`` is implied), to check the
script, not to measure anything.
"""

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import time

import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_bert_pretraining import cpu_model_name, make_batch  # noqa: E402

import hf_lineage  # noqa: E402,F401  (registers the lineage model types)
from hf_lineage.convert import from_transformers  # noqa: E402

SPEC_PEAK_TFLOPS = {"H100": 989.4, "H200": 989.4, "A100": 312.0}  # dense bf16, SXM


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def autocast(device):
    return torch.autocast(device.type, dtype=torch.bfloat16)


def matmul_tflops(device, n=8192, repeats=10):
    """The measured bf16 matrix-product rate: what the device reaches on the largest, easiest matmul."""
    if device.type != "cuda":
        n, repeats = 512, 3
    a, b = (torch.randn(n, n, device=device, dtype=torch.bfloat16) for _ in range(2))
    for _ in range(3):
        a @ b
    synchronize(device)
    started = time.perf_counter()
    for _ in range(repeats):
        a @ b
    synchronize(device)
    return 2 * n**3 * repeats / (time.perf_counter() - started) / 1e12


def spec_peak(device, given):
    if given:
        return given
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else ""
    return next((peak for key, peak in SPEC_PEAK_TFLOPS.items() if key in name), None)


def flops_per_token(model, seq_lengths, predicted_fraction):
    """Training FLOPs per real token (see the module docstring)."""
    config = model.config
    embeddings = {p.data_ptr() for m in model.modules() if isinstance(m, torch.nn.Embedding) for p in m.parameters()}
    body = sum(p.numel() for p in model.parameters() if p.data_ptr() not in embeddings)
    vocab_projection = config.vocab_size * config.hidden_size * predicted_fraction
    lengths = torch.as_tensor(seq_lengths, dtype=torch.float64)
    mean_context = float((lengths**2).sum() / lengths.sum())  # a token's attention cost grows with its row's length
    layers = getattr(config, "num_hidden_layers", None) or config.n_layer
    return 6 * (body + vocab_projection) + 12 * layers * config.hidden_size * mean_context


def make_step(model, batch, compile_model=False):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=next(model.parameters()).is_cuda)
    forward = torch.compile(model) if compile_model else model
    device = next(model.parameters()).device

    def step():
        with autocast(device):
            loss = forward(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    return step


def timed_interleaved(steps: dict, device, warmup, repeats) -> dict:
    """Median seconds per step of each named step function, run interleaved (order rotated per repetition)."""
    names = list(steps)
    for name in names:
        for _ in range(warmup):
            steps[name]()
    synchronize(device)
    times = {name: [] for name in names}
    for r in range(repeats):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            synchronize(device)
            started = time.perf_counter()
            steps[name]()
            synchronize(device)
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(t) for name, t in times.items()}


def bert_case(device, batch_size, seq_len, toy):
    sizes = (dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128) if toy else
             dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072))
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=30522, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                                     attn_implementation="sdpa", **sizes)
    theirs = transformers.BertForPreTraining(config)
    ours = from_transformers(theirs)
    models = {"ours": ours.train().to(device), "BertForPreTraining (sdpa)": theirs.train().to(device)}
    batch = {k: v.to(device) for k, v in make_batch(batch_size, seq_len, 30522, min_length=min(30, seq_len)).items()}
    lengths = batch["attention_mask"].sum(1).tolist()
    real_tokens = sum(lengths)
    predicted = float((batch["labels"] != -100).sum()) / real_tokens
    return models, batch, lengths, real_tokens, predicted


def gpt_case(device, batch_size, seq_len, toy, with_openai=True):
    sizes = dict(n_embd=64, n_layer=2, n_head=2) if toy else dict(n_embd=768, n_layer=12, n_head=12)
    vocab = 40478
    torch.manual_seed(0)
    openai = transformers.OpenAIGPTLMHeadModel(transformers.OpenAIGPTConfig(vocab_size=vocab, n_positions=512,
                                                                            **sizes))
    ours = from_transformers(openai)
    gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=vocab, n_positions=512, n_inner=4 * sizes["n_embd"], attn_implementation="sdpa", **sizes))
    models = {"ours": ours.train().to(device)}
    if with_openai:
        models["OpenAIGPTLMHeadModel (eager)"] = openai.train().to(device)
    models["GPT2LMHeadModel (sdpa)"] = gpt2.train().to(device)
    ids = torch.randint(0, vocab, (batch_size, seq_len), generator=torch.Generator().manual_seed(0)).to(device)
    batch = {"input_ids": ids, "labels": ids}
    return models, batch, [seq_len] * batch_size, batch_size * seq_len, 1.0


def run_model_case(name, build, device, args, peaks):
    models, batch, lengths, real_tokens, predicted = build()
    steps = {label: make_step(model, batch) for label, model in models.items()}
    if args.compile and name in args.compile_cases:
        steps["ours + torch.compile"] = make_step(models["ours"], batch, compile_model=True)
    seconds = timed_interleaved(steps, device, args.warmup, args.repeats)
    rows = []
    for label, s in seconds.items():
        model = models["ours" if label.startswith("ours") else label]
        fpt = flops_per_token(model, lengths, predicted)
        tflops = fpt * real_tokens / s / 1e12
        rows.append({"case": name, "model": label, "ms_per_step": round(1000 * s, 2),
                     "real_tokens_per_second": round(real_tokens / s), "model_tflops": round(tflops, 1),
                     "mfu_spec": round(tflops / peaks["spec"], 3) if peaks["spec"] else None,
                     "mfu_measured_matmul": round(tflops / peaks["matmul"], 3)})
    for row in rows:
        row["their_time_over_ours"] = round(seconds[row["model"]] / seconds["ours"], 3)  # > 1: ours is faster
    del models, steps
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return rows


def engine_case(device, args, toy):
    """The engine end to end against the bare step of the same model on batches from the engine's own loader."""
    import tempfile

    from hf_lineage.engine.loaders import build_loaders
    from hf_lineage.objectives import get_objective
    from hf_lineage.pretraining.arguments import resolve_defaults
    from hf_lineage.pretraining.dispatch import PretrainArguments, pretrain

    out = tempfile.mkdtemp(prefix="engine_bench_")
    config, batch_size = ("tiny", 8) if toy else ("base", 64)
    engine_args = PretrainArguments(
        family="bert", output_dir=out, config=config, train_file=[args.corpus], max_steps=args.engine_steps,
        per_device_batch_size=batch_size, max_seq_length=128, mixed_precision="bf16" if device.type == "cuda" else "no",
        report_to="none", log_every=max(1, args.engine_steps // 4), vocab_size=30522 if not toy else 2000)
    started = time.perf_counter()
    pretrain(engine_args)
    wall = time.perf_counter() - started
    results = json.load(open(os.path.join(out, "train_results.json")))
    # Steady state: from the first log to the last (the first steps hold CUDA's and the allocator's start-up, and
    # with --compile the compilation); the whole loop's rate is reported beside it.
    logs = [h for h in results["log_history"] if "train_loss" in h]
    first, last = logs[0], logs[-1]
    engine_tps = (last["tokens_seen"] - first["tokens_seen"]) / (last["seconds"] - first["seconds"])

    # The bare step: the saved model's architecture, fresh weights, the same loader's first batches on the device.
    from transformers import AutoConfig, AutoModelForPreTraining, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(out)
    model = AutoModelForPreTraining.from_config(AutoConfig.from_pretrained(out)).train().to(device)
    bare_args = PretrainArguments(family="bert", output_dir=out, config=config, train_file=[args.corpus],
                                  per_device_batch_size=batch_size, max_seq_length=128, dataloader_num_workers=0)
    objective = get_objective("bert", bare_args)
    resolve_defaults(bare_args, objective)  # the family's defaults the engine's run had (BERT's mask split, ...)
    from hf_lineage.data.examples import load_text

    examples = objective.prepare(load_text(bare_args, bare_args.train_file, "train"), tokenizer, "train")
    loaders = build_loaders(bare_args, objective, tokenizer, examples, None)
    batches = []
    for batch in loaders.train:
        batches.append({k: v.to(device) for k, v in batch.items() if torch.is_tensor(v)})
        if len(batches) == 20:
            break
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")
    tokens, seconds = 0, 0.0
    for i in range(3 * len(batches)):
        batch = batches[i % len(batches)]
        synchronize(device)
        t0 = time.perf_counter()
        with autocast(device) if device.type == "cuda" else contextlib.nullcontext():
            loss = model(**batch, **objective.loss_counts(batch)).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        synchronize(device)
        if i >= len(batches):  # the first pass warms up
            seconds += time.perf_counter() - t0
            tokens += int(batch["attention_mask"].sum())
    bare_tps = tokens / seconds
    return [{"case": "engine", "model": f"hf-lineage pretrain bert --config {config}",
             "engine_tokens_per_second": round(engine_tps), "bare_step_tokens_per_second": round(bare_tps),
             "engine_whole_loop_tokens_per_second": round(results["train_tokens_per_second"]),
             "engine_share_of_bare": round(engine_tps / bare_tps, 3), "engine_steps": args.engine_steps,
             "engine_wall_seconds": round(wall, 1)}]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=["bert", "gpt", "bert_fill", "gpt_fill", "engine"])
    parser.add_argument("--compile", action="store_true", help="also time our models under torch.compile (inductor)")
    parser.add_argument("--compile-cases", nargs="+", default=["bert_fill", "gpt_fill"],
                        help="the cases --compile applies to (compiling takes a minute or more per model)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--engine-steps", type=int, default=150)
    parser.add_argument("--corpus", help="text file for the engine case (e.g. WikiText-2 train)")
    parser.add_argument("--peak-tflops", type=float, help="the device's dense bf16 peak (default: by device name)")
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    toy = device.type != "cuda"
    if toy:
        print("no CUDA device: running toy sizes on the CPU to check the script (these numbers mean nothing)")
        args.warmup, args.repeats, args.engine_steps = 1, 2, 4
    torch.backends.cuda.matmul.allow_tf32 = True
    peaks = {"spec": spec_peak(device, args.peak_tflops), "matmul": matmul_tflops(device)}
    environment = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "cpu": cpu_model_name(), "python": platform.python_version(), "torch": torch.__version__,
        "cuda": torch.version.cuda, "transformers": transformers.__version__, "hf_lineage": hf_lineage.__version__,
        "peak_tflops_spec": peaks["spec"], "matmul_tflops_measured": round(peaks["matmul"], 1),
        "command": " ".join(sys.argv),
    }
    print(json.dumps(environment, indent=1))
    builders = {
        "bert": lambda: bert_case(device, 8 if toy else 64, 32 if toy else 128, toy),
        "bert_fill": lambda: bert_case(device, 16 if toy else 256, 32 if toy else 128, toy),
        "gpt": lambda: gpt_case(device, 2 if toy else 16, 64 if toy else 512, toy),
        "gpt_fill": lambda: gpt_case(device, 4 if toy else 32, 64 if toy else 512, toy, with_openai=False),
    }
    rows = []
    for case in args.cases:
        print(f"-- {case}", flush=True)
        if case == "engine":
            if not args.corpus:
                print("engine: skipped (no --corpus)")
                continue
            new = engine_case(device, args, toy)
        else:
            new = run_model_case(case, builders[case], device, args, peaks)
        for row in new:
            print(json.dumps(row), flush=True)
        rows += new
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": environment, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
