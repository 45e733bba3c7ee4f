"""The vocabulary loss of NNLM, GPT and ELMo (``vocabulary_cross_entropy``) against ``F.cross_entropy`` on the same
logits, forward + backward, side by side in one process (issue 22, item 5).

    python benchmarks/bench_vocabulary_loss.py [--repeats 7] [--threads N]

Prints, for each shape and dtype, the median seconds of both (alternating which runs first) and their ratio, plus the
CPU model. Before timing, checks that both give the same loss and gradient.
"""

import argparse
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F

from hf_lineage.models.loss_lineage_utils import vocabulary_cross_entropy

# (rows, vocabulary): NNLM on Brown (16 x 252 predicted words, 14k words); GPT/BERT tiny (32 x 64, 8k); a
# GPT-2-sized vocabulary (8 x 128, 50k).
SHAPES = [(4032, 14117), (2048, 8000), (1024, 50257)]


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except Exception:  # noqa: BLE001 - lscpu missing: say so
        return "unknown (lscpu failed)"


def reference(logits, labels):
    # F.cross_entropy in float32, as the models compute their losses (bf16 logits are upcast)
    return F.cross_entropy(logits.float(), labels, ignore_index=-100)


def step(loss_fn, logits, labels):
    x = logits.detach().requires_grad_(True)
    started = time.perf_counter()
    loss = loss_fn(x, labels)
    loss.backward()
    return time.perf_counter() - started, loss.detach(), x.grad


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"CPU: {cpu_model()}; torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| rows x vocabulary | dtype | vocabulary_cross_entropy (s) | F.cross_entropy (s) | ratio (F / ours) |")
    print("|---|---|---|---|---|")
    generator = torch.Generator().manual_seed(0)
    for rows, vocabulary in SHAPES:
        for dtype in (torch.float32, torch.bfloat16):
            logits = (torch.randn(rows, vocabulary, generator=generator) * 3).to(dtype)
            labels = torch.randint(0, vocabulary, (rows,), generator=generator)
            labels[::7] = -100  # ignored positions, as padding and prompts give
            _, ours_loss, ours_grad = step(vocabulary_cross_entropy, logits, labels)
            _, ref_loss, ref_grad = step(reference, logits, labels)
            torch.testing.assert_close(ours_loss, ref_loss, rtol=1e-5, atol=1e-5)
            tolerance = 1e-6 if dtype == torch.float32 else 1e-2
            torch.testing.assert_close(ours_grad.float(), ref_grad.float(), rtol=tolerance, atol=tolerance)
            times = {"ours": [], "reference": []}
            for repeat in range(args.repeats):
                order = [("ours", vocabulary_cross_entropy), ("reference", reference)]
                for name, fn in order if repeat % 2 == 0 else order[::-1]:
                    times[name].append(step(fn, logits, labels)[0])
            ours, ref = statistics.median(times["ours"]), statistics.median(times["reference"])
            print(f"| {rows} x {vocabulary} | {str(dtype).split('.')[1]} | {ours:.4f} | {ref:.4f} | "
                  f"{ref / ours:.2f} |", flush=True)


if __name__ == "__main__":
    main()
