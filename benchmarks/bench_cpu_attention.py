"""Causal attention on the CPU, forward + backward, GPT's shape (4 sequences × 12 heads × 512 tokens × 64): SDPA's
default CPU kernel, SDPA's "math" backend and eager matmul–softmax–matmul, in bf16 and fp32 (issue 33: what is left
of GPT's bf16 gap to transformers on the CPU).

    python benchmarks/bench_cpu_attention.py [--repeats 5]

Prints the CPU model and, per precision, the median milliseconds of each (after one warm-up call).
"""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_bert_pretraining import cpu_model_name  # noqa: E402

B, H, T, D = 4, 12, 512, 64


def sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def sdpa_math(q, k, v):
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


ALLOWED = torch.ones(T, T, dtype=torch.bool).tril()  # made once, as a model would keep it


def eager(q, k, v):
    allowed = ALLOWED
    scores = (q @ k.transpose(-1, -2)) * D**-0.5
    return scores.masked_fill(~allowed, float("-inf")).softmax(-1) @ v


def median_ms(attend, dtype, repeats):
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, H, T, D, dtype=dtype, requires_grad=True) for _ in range(3))
    times = []
    for _ in range(repeats + 1):
        started = time.perf_counter()
        attend(q, k, v).sum().backward()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times[1:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"CPU: {cpu_model_name()}; torch {torch.__version__}, {torch.get_num_threads()} threads")
    for dtype in (torch.bfloat16, torch.float32):
        cells = ", ".join(f"{name} {median_ms(fn, dtype, args.repeats):.1f} ms"
                          for name, fn in (("sdpa", sdpa), ("sdpa math", sdpa_math), ("eager", eager)))
        print(f"{dtype}: {cells}")


if __name__ == "__main__":
    main()
