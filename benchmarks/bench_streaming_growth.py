"""Peak memory and time of ``hf-lineage pretrain --streaming`` as the corpus grows (issue 22, item 6).

    python benchmarks/bench_streaming_growth.py [--families word2vec nnlm bert] [--words 2000000 20000000]
        [--steps 200] [--source ../shared/data/wikitext-2/wiki.train.tokens]

For each family and corpus size, one ``hf-lineage pretrain FAMILY --config tiny --streaming`` process (WikiText-2's
training text repeated up to the size, written to a temporary folder), with the same number of optimisation steps at
every size. What grows with the corpus is the part that reads all of it: the tokenizer or vocabulary, trained on the
whole stream; the training steps read only what they need. Measured per process with ``os.wait4``: peak resident
memory (``ru_maxrss``), wall time and CPU time (user + system, which another job on the machine does not inflate).
Prints the CPU model and, per family, the ratio of the largest to the smallest corpus.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except Exception:  # noqa: BLE001 - lscpu missing: say so
        return "unknown (lscpu failed)"


def write_corpus(source: Path, words: int, path: Path) -> int:
    """``source``'s lines, repeated, until ``words`` words; returns the words written."""
    lines = [line for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    written = 0
    with open(path, "w", encoding="utf-8") as f:
        while written < words:
            for line in lines:
                f.write(line + "\n")
                written += len(line.split())
                if written >= words:
                    break
    return written


def run(command: list[str], log: Path) -> dict:
    started = time.perf_counter()
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed; see {log}")
    # ru_maxrss is in kilobytes on Linux
    return {"peak_mb": usage.ru_maxrss / 1024, "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=["word2vec", "nnlm", "bert"])
    parser.add_argument("--words", nargs="+", type=int, default=[2_000_000, 20_000_000])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--source", type=Path, default=REPO.parent / "shared/data/wikitext-2/wiki.train.tokens")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--stream-buffer-documents", type=int, default=None,
                        help="BERT's NSP buffer (the engine's default: 1,000 documents, more than WikiText-2 holds)")
    args = parser.parse_args()
    if not args.source.is_file():
        raise SystemExit(f"{args.source} not found: pass --source a text file (one document or sentence per line)")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="streaming_growth_"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; {args.steps} steps per run; work in {workdir}", flush=True)
    corpora = {}
    for words in args.words:
        path = workdir / f"corpus_{words}.txt"
        corpora[words] = (path, write_corpus(args.source, words, path))
    print("| family | corpus words | peak memory (MB) | wall (s) | CPU (s) |")
    print("|---|---|---|---|---|")
    results = {}
    for family in args.families:
        for words, (path, written) in corpora.items():
            out = workdir / f"{family}_{words}"
            command = [sys.executable, "-m", "hf_lineage.cli", "pretrain", family, "--config", "tiny",
                       "--train-file", str(path), "--streaming", "--max-steps", str(args.steps),
                       "--output-dir", str(out), "--overwrite-output-dir"]
            if family == "bert" and args.stream_buffer_documents:
                command += ["--stream-buffer-documents", str(args.stream_buffer_documents)]
            results[family, words] = measured = run(command, workdir / f"{family}_{words}.log")
            print(f"| {family} | {written:,} | {measured['peak_mb']:.0f} | {measured['wall_s']:.1f} | "
                  f"{measured['cpu_s']:.1f} |", flush=True)
    smallest, largest = min(args.words), max(args.words)
    for family in args.families:
        small, large = results[family, smallest], results[family, largest]
        print(f"{family}: {largest / smallest:.0f}x the words -> peak memory "
              f"x{large['peak_mb'] / small['peak_mb']:.2f}, CPU time x{large['cpu_s'] / small['cpu_s']:.2f}")


if __name__ == "__main__":
    main()
