"""Peak memory of ``hf-lineage convert word2vec`` against the size of the vectors it converts (issue 50: converting
GoogleNews' 3 M × 300 vectors must stay under twice their size).

Writes a synthetic file in the C tool's binary format (``--words`` × ``--dim`` float32, words of GoogleNews-like
lengths, phrases with ``_``), converts it in a child process and reads the child's peak resident memory
(``ru_maxrss``); a second child that only imports what the command imports gives the baseline every process pays.
Prints the CPU, both peaks and the ratios; the vectors file and the folder are deleted afterwards.

    python benchmarks/bench_convert_memory.py --words 1000000 --dim 300
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def write_binary(path: Path, words: int, dim: int, seed: int = 0) -> None:
    """A C-tool binary file: header, then ``word`` + space + dim float32 per record, written in blocks."""
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        f.write(f"{words} {dim}\n".encode())
        block = 50_000
        for start in range(0, words, block):
            n = min(block, words - start)
            vectors = rng.standard_normal((n, dim), dtype=np.float32)
            f.write(b"".join(
                (f"w{start + i}" + ("_phrase" if (start + i) % 7 == 0 else "")).encode() + b" " + row.tobytes()
                for i, row in enumerate(vectors)))


def measured(command: list[str]) -> tuple[float, float]:
    """(peak resident MiB, seconds) of ``command`` run in a fresh child (``ru_maxrss`` of that child alone)."""
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child execs the command; its rusage is read by wait4 below
        os.execvp(command[0], command)
    _, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"{' '.join(command)} failed (status {status})")
    return usage.ru_maxrss / 1024, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--max-vocab", type=int, help="also pass --max-vocab N")
    args = parser.parse_args()
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; python {sys.version.split()[0]}")
    work = Path(tempfile.mkdtemp(prefix="convert-memory-"))
    try:
        vectors_file = work / "vectors.bin"
        write_binary(vectors_file, args.words, args.dim)
        vector_mib = args.words * args.dim * 4 / 2**20
        print(f"{args.words:,} words × {args.dim} = {vector_mib:,.0f} MiB of float32 vectors "
              f"({vectors_file.stat().st_size / 2**20:,.0f} MiB file)")
        baseline, _ = measured([sys.executable, "-c", "import torch, transformers, hf_lineage; "
                                "import hf_lineage.convert.releases, hf_lineage.convert.word2vec"])
        command = ["hf-lineage", "convert", "word2vec", str(vectors_file), "--output-dir", str(work / "out")]
        if args.max_vocab:
            command += ["--max-vocab", str(args.max_vocab)]
        peak, seconds = measured(command)
        print(f"baseline (imports only): {baseline:,.0f} MiB")
        print(f"convert: peak {peak:,.0f} MiB in {seconds:,.1f} s")
        print(f"peak / vectors: {peak / vector_mib:.2f}; (peak - baseline) / vectors: "
              f"{(peak - baseline) / vector_mib:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
