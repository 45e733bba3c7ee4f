"""How issue 59's CBOW divergence was shown: the kernels' σ table one entry short (as it was), followed in memory by a
known float, against the table as it is now, on the same corpus, seed and settings.

    python benchmarks/word2vec_max_exp_probe.py [--min-words 20000000] [--workers 2] [--epochs 5]

Every kernel looks σ(f) up for -6 <= f <= 6 in a table of σ at 1,000 points of [-6, 6); a dot product of exactly
6.0 maps to index 1,000, one past such a table's end, where numba (no bounds checks) reads whatever float follows the
array in memory. word2vec.c allocates that entry but never fills it. With the short table placed in a buffer whose
next float is ``--sentinel`` (10³⁰: any large value does what a large stray value did), a run that meets a dot
product of exactly 6.0 blows up; with the table as it is now (1,001 entries, σ(6) last) the same run cannot. The
script trains CBOW (the benchmark's settings, ``bench_word2vec.SETTINGS``) both ways and prints, per epoch, the
largest input-vector norm, and whether the vectors stayed finite. No network: WikiText-2 from ``../shared/data``,
repeated to ``--min-words`` as ``bench_word2vec.py`` does.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_word2vec import DEFAULT_CORPUS, SETTINGS, REPO  # noqa: E402

sys.path.insert(0, str(REPO))


def cpu_model() -> str:
    try:
        return next(line.split(":", 1)[1].strip() for line in subprocess.run(
            ["lscpu"], capture_output=True, text=True).stdout.splitlines() if line.startswith("Model name"))
    except (StopIteration, OSError):
        return platform.processor() or "unknown CPU"


def corpus_file(min_words: int, work: Path) -> tuple[Path, int]:
    """WikiText-2 train without its literal ``<unk>`` tokens, repeated to at least ``min_words`` words."""
    lines = [" ".join(w for w in line.split() if w != "<unk>") for line in
             DEFAULT_CORPUS.read_text(encoding="utf-8").splitlines()]
    lines = [line for line in lines if line]
    words = sum(len(line.split()) for line in lines)
    copies = max(1, -(-min_words // words))
    path = work / "corpus.txt"
    path.write_text("\n".join(lines * copies) + "\n", encoding="utf-8")
    return path, words * copies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--min-words", type=int, default=20_000_000)
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sentinel", type=float, default=1e30)
    parser.add_argument("--tables", nargs="+", default=["short", "full"], choices=["short", "full"])
    args = parser.parse_args()
    from hf_lineage.word_vector_trainers import word2vec_kernels, sanity
    from hf_lineage import train_word2vec

    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; python {platform.python_version()}; command: "
          f"{' '.join(sys.argv)}")
    full = word2vec_kernels.exp_table()
    with tempfile.TemporaryDirectory() as work:
        path, words = corpus_file(args.min_words, Path(work))
        print(f"corpus: WikiText-2 train repeated, {words:,} words; CBOW, {args.workers} workers, {args.epochs} "
              f"epochs, seed {args.seed}, {SETTINGS}")
        for kind in args.tables:
            if kind == "short":  # the table as it was: σ at 1,000 points, then a known float where σ(6) belongs
                buffer = np.full(len(full), args.sentinel, dtype=np.float32)
                buffer[:-1] = full[:-1]
                table = buffer[:-1]
            else:
                table = full
            word2vec_kernels.exp_table = lambda table=table: table
            norms = []
            real_check = word2vec_kernels.check_vectors

            def record(trainer, epoch, epochs, advice, matrices):
                n = sanity.row_norms(matrices["input vectors"])
                finite = np.isfinite(n)
                norms.append((epoch, bool(finite.all()), float(n[finite].max()) if finite.any() else float("nan")))

            word2vec_kernels.check_vectors = record  # report every epoch instead of stopping at the first bad one
            started = time.time()
            try:
                train_word2vec(str(path), architecture="cbow", epochs=args.epochs, workers=args.workers,
                               seed=args.seed, cbow_mean=True, **SETTINGS)
            finally:
                word2vec_kernels.check_vectors = real_check
                word2vec_kernels.exp_table = lambda: full
            after = f", then {args.sentinel:g}" if kind == "short" else ""
            print(f"{kind} table ({len(table)} entries{after}): {time.time() - started:.1f} s; per epoch (finite, "
                  "largest finite input-vector norm): " + ", ".join(f"{e}: ({'yes' if ok else 'NO'}, {m:.3g})" for e, ok, m in norms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
