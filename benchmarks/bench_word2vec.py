"""word2vec on CPU, whole process: hf_lineage's numba trainer (pWord2Vec kernel and classic kernel), gensim 4 and
the original word2vec C tool, same corpus and settings, each run in its own process, interleaved.

    touch /tmp/cpu_busy; python benchmarks/bench_word2vec.py [--repeats 5] [--epochs 5] [--corpus FILE]; \
rm -f /tmp/cpu_busy

At scale, where start-up is a small part of the process (issue 33; no network needed, the corpus is built locally):

    flock /tmp/hf_lineage_bench.lock python benchmarks/bench_word2vec.py --min-words 20000000 --repeats 3 \
        --architectures cbow --systems shared gensim

Systems (``--systems``):

* ``shared``: ``hf_lineage.train_word2vec(..., shared_negatives=True)``, pWord2Vec's kernel (Ji et al. 2016): one
  set of noise words per centre word's window, the window's updates as small matrix products (skip-gram; CBOW
  trains as ``classic``);
* ``classic``: ``train_word2vec(..., shared_negatives=False)``, word2vec.c's pair-by-pair algorithm;
* ``gensim``: ``gensim.models.Word2Vec`` (4.4) on the file read into lists of tokens (its iterable input; with
  ``--gensim-input corpus_file``, its ``corpus_file`` mode instead);
* ``c``: word2vec.c from ``--c-source`` (default: the tool's source from a snapshot of github.com/tmikolov/word2vec,
  read by ``git show``), compiled at the start into a temporary folder with its makefile's flags
  (``cc -O3 -march=native -funroll-loops -pthread -lm``);
  skipped with a message when no source is found.

Corpus: WikiText-2 train (``../shared/data/wikitext-2/wiki.train.tokens``, 2.05M tokens) with the literal
``<unk>`` tokens removed (the tokenizer's ``<unk>`` is a special that hf_lineage never trains, while the others
would train it as a word). ``--repeat-corpus N`` concatenates N copies; ``--min-words N`` as many copies as make at
least N words (WikiText-2 x11 = 21,970,135 words for 20 M: the repeated text inflates the quality numbers against a
real corpus of that size, since every analogy and pair is seen 11 times in the same contexts; it is there for
speed). Settings: vector_size 100, window 5,
min_count 5, sample 1e-3, negative 5 (no hs), alpha 0.025 → 0.0001 (the C tool: → 0.025 · 1e-4, its fixed floor),
``--epochs`` epochs, ``--workers`` threads for all (default: the CPUs this process may use); skip-gram and CBOW
(mean).

Times, per run: ``process``, the wall time of the whole child process (interpreter start, imports, reading the
file, vocabulary, training) minus the time the Python children spend writing the vectors out for evaluation
afterwards (the C tool's time includes writing its binary vectors, ~0.05 s); ``pipeline``, inside the process:
from the corpus file to trained vectors (reading, vocabulary and training, no imports; "before training": the
part of it before the first training step). Ratios are gensim's time
over ours, per repeat, then the median. Quality by gensim's evaluation code for every system's input vectors
(sorted by count): analogy accuracy on questions-words.txt over the 30,000 most frequent words
(``evaluate_word_analogies(restrict_vocab=30000)``) and the Spearman correlation on WordSim353. ``lscpu``'s model
name, the versions and the command are printed first; each run's start-up (process − pipeline: interpreter and
imports) and its share of the process; at the end, the medians and every repeat's ratios (process, pipeline and
training only = pipeline − the part before training).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the checkout's hf_lineage, installed or not
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "wikitext-2" / "wiki.train.tokens"
C_SNAPSHOT = Path("/work/.mirror/tmikolov+word2vec/repo")  # a bare git snapshot of github.com/tmikolov/word2vec
SETTINGS = dict(vector_size=100, window=5, min_count=5, sample=1e-3, negative=5, hs=False, alpha=0.025,
                min_alpha=0.0001)
SYSTEMS = ("shared", "classic", "gensim", "c")


# --------------------------------------------------------------------------- children: one training each


def child(args) -> None:
    """Train one model on ``args.corpus_file``; write ``vectors.npy``, ``words.json`` (by decreasing count) and
    ``timing.json`` to ``args.out``."""
    out = Path(args.out)
    if args.system == "gensim":
        from gensim.models import Word2Vec

        started = time.time()
        kwargs = dict(vector_size=SETTINGS["vector_size"], window=SETTINGS["window"],
                      min_count=SETTINGS["min_count"], sample=SETTINGS["sample"], negative=SETTINGS["negative"],
                      hs=0, alpha=SETTINGS["alpha"], min_alpha=SETTINGS["min_alpha"],
                      sg=int(args.architecture == "skipgram"), cbow_mean=1, workers=args.workers, seed=args.seed,
                      epochs=args.epochs)
        if args.gensim_input == "corpus_file":
            model = Word2Vec(corpus_file=args.corpus_file, **kwargs)
        else:
            with open(args.corpus_file, encoding="utf-8") as f:
                sentences = [line.split() for line in f if line.strip()]
            model = Word2Vec(sentences, **kwargs)
        pipeline = time.time() - started
        preparation = pipeline - model.total_train_time
        words, vectors = list(model.wv.index_to_key), model.wv.vectors  # gensim sorts by count
    else:
        from hf_lineage import train_word2vec

        started = time.time()
        model, tokenizer = train_word2vec(args.corpus_file, architecture=args.architecture, epochs=args.epochs,
                                          workers=args.workers, seed=args.seed, cbow_mean=True,
                                          shared_negatives=args.system == "shared", **SETTINGS)
        pipeline = time.time() - started
        preparation = pipeline - model.train_results["train_runtime"]
        counts = model.word_counts.numpy()
        trained = np.flatnonzero(counts > 0)  # the specials are not words
        trained = trained[np.argsort(-counts[trained], kind="stable")]
        words = tokenizer.convert_ids_to_tokens(trained.tolist())
        vectors = model.word2vec.input_vectors.weight.detach().numpy()[trained]
    saving = time.time()
    np.save(out / "vectors.npy", np.ascontiguousarray(vectors, dtype=np.float32))
    (out / "words.json").write_text(json.dumps(words))
    (out / "timing.json").write_text(json.dumps({"pipeline": pipeline, "preparation": preparation,
                                                 "saving": time.time() - saving}))


def read_c_vectors(path: Path):
    """word2vec.c's binary output: a header line, then per word its text, a space and vector_size float32."""
    data = path.read_bytes()
    newline = data.index(b"\n")
    n, d = map(int, data[:newline].split())
    words, vectors, pos = [], np.empty((n, d), dtype=np.float32), newline + 1
    for i in range(n):
        space = data.index(b" ", pos)
        words.append(data[pos:space].decode("utf-8", errors="replace").lstrip("\n"))
        vectors[i] = np.frombuffer(data, dtype=np.float32, count=d, offset=space + 1)
        pos = space + 1 + 4 * d
    return words, vectors


def compile_c_tool(source: str | None, work: Path) -> Path | None:
    """The C tool, compiled into ``work``; None (and why, printed) when its source cannot be found."""
    if source:
        code = Path(source).read_text(encoding="utf-8", errors="replace")
        origin = source
    elif C_SNAPSHOT.exists():
        code = subprocess.run(["git", "-C", str(C_SNAPSHOT), "show", "HEAD:word2vec.c"], capture_output=True,
                              text=True, check=True).stdout
        commit = subprocess.run(["git", "-C", str(C_SNAPSHOT), "rev-parse", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        origin = f"github.com/tmikolov/word2vec@{commit[:12]}"
    else:
        print(f"word2vec C tool: no source (--c-source, or a snapshot at {C_SNAPSHOT}); not compared")
        return None
    (work / "word2vec.c").write_text(code, encoding="utf-8")
    # the tool's own makefile's flags (it adds -funroll-loops to -O3 -march=native)
    command = ["cc", "-O3", "-march=native", "-funroll-loops", "-pthread", str(work / "word2vec.c"), "-o",
               str(work / "word2vec"), "-lm"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        print(f"word2vec C tool: compiling {origin} failed; not compared\n{result.stderr[-2000:]}")
        return None
    print(f"word2vec C tool: {origin}, compiled with: {' '.join(command)}")
    return work / "word2vec"


def run_once(system, architecture, args, corpus_file: Path, c_tool: Path | None, seed: int, work: Path) -> dict:
    out = Path(tempfile.mkdtemp(dir=work))
    if system == "c":
        command = [str(c_tool), "-train", str(corpus_file), "-output", str(out / "vectors.bin"),
                   "-cbow", str(int(architecture == "cbow")), "-size", str(SETTINGS["vector_size"]),
                   "-window", str(SETTINGS["window"]), "-negative", str(SETTINGS["negative"]), "-hs", "0",
                   "-sample", str(SETTINGS["sample"]), "-threads", str(args.workers), "-binary", "1",
                   "-iter", str(args.epochs), "-min-count", str(SETTINGS["min_count"]),
                   "-alpha", str(SETTINGS["alpha"])]
    else:
        command = [sys.executable, __file__, "--child", system, "--architecture", architecture,
                   "--corpus-file", str(corpus_file), "--out", str(out), "--epochs", str(args.epochs),
                   "--workers", str(args.workers), "--seed", str(seed), "--gensim-input", args.gensim_input]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": os.environ.get(
        "TOKENIZERS_PARALLELISM", "true")}
    started = time.time()
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.time() - started
    if result.returncode != 0:
        raise RuntimeError(f"{system} {architecture} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
    if system == "c":
        words, vectors = read_c_vectors(out / "vectors.bin")
        timing = {"pipeline": wall, "preparation": float("nan"), "saving": 0.0}
    else:
        words, vectors = json.loads((out / "words.json").read_text()), np.load(out / "vectors.npy")
        timing = json.loads((out / "timing.json").read_text())
    shutil.rmtree(out, ignore_errors=True)
    return {"process": wall - timing["saving"], "pipeline": timing["pipeline"],
            "preparation": timing["preparation"], "vocab": len(words),
            **evaluate(words, vectors)}


def evaluate(words, vectors) -> dict:
    from gensim.models import KeyedVectors
    from gensim.test.utils import datapath

    kv = KeyedVectors(vector_size=vectors.shape[1])
    kv.add_vectors(words, vectors)
    analogy, _ = kv.evaluate_word_analogies(datapath("questions-words.txt"), restrict_vocab=30000)
    _, spearman, oov = kv.evaluate_word_pairs(datapath("wordsim353.tsv"))
    return {"analogy": 100 * analogy, "wordsim_spearman": float(spearman[0]), "wordsim_oov": oov}


# --------------------------------------------------------------------------- the parent


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    parser.add_argument("--repeat-corpus", type=int, default=1)
    parser.add_argument("--min-words", type=int, default=None,
                        help="repeat the corpus until it has at least this many words (overrides --repeat-corpus)")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--architectures", nargs="+", default=["skipgram", "cbow"], choices=["skipgram", "cbow"])
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    parser.add_argument("--gensim-input", default="iterable", choices=["iterable", "corpus_file"])
    parser.add_argument("--c-source", default=None, help="word2vec.c to compile (default: the snapshot's)")
    parser.add_argument("--c-repeats", type=int, default=None,
                        help="run the C tool in the first N repeats only (default: all; it is the slowest)")
    parser.add_argument("--child", choices=SYSTEMS[:3], help=argparse.SUPPRESS)
    parser.add_argument("--architecture", help=argparse.SUPPRESS)
    parser.add_argument("--corpus-file", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        args.system = args.child
        child(args)
        return 0
    if not Path(args.corpus).is_file():
        print(f"corpus {args.corpus} not found", file=sys.stderr)
        return 2

    cpu = next((line.split(":", 1)[1].strip() for line in subprocess.run(["lscpu"], capture_output=True,
                text=True).stdout.splitlines() if line.startswith("Model name")), "unknown")
    import gensim
    import numba
    import torch

    print(f"CPU: {cpu}, {len(os.sched_getaffinity(0))} usable cores; torch {torch.__version__}, numba "
          f"{numba.__version__}, gensim {gensim.__version__}")
    print("command: python " + " ".join([os.path.relpath(__file__, os.getcwd())] + sys.argv[1:]))
    work = Path(tempfile.mkdtemp(prefix="bench_word2vec_"))
    try:
        text = re.sub(r"<unk>", "", Path(args.corpus).read_text(encoding="utf-8"))
        if args.min_words:
            args.repeat_corpus = -(-args.min_words // len(text.split()))
        text *= args.repeat_corpus
        corpus_file = work / "corpus.txt"
        corpus_file.write_text(text, encoding="utf-8")
        print(f"corpus: {args.corpus} x{args.repeat_corpus} without <unk>: {len(text.split()):,} words, "
              f"{sum(1 for line in text.splitlines() if line.strip()):,} lines; settings {SETTINGS}, epochs "
              f"{args.epochs}, workers {args.workers}, gensim input {args.gensim_input}")
        systems = list(args.systems)
        c_tool = compile_c_tool(args.c_source, work) if "c" in systems else None
        if c_tool is None and "c" in systems:
            systems.remove("c")
        # numba compiles (or writes its cache) on the first call: do it before the timings, at the benchmark's
        # vector size (CBOW's negative-sampling kernel is compiled per size), from a file (the corpus pass's kernel).
        from hf_lineage import train_word2vec

        warm_up = work / "warm_up.txt"
        warm_up.write_text("a b c d\n" * 10, encoding="utf-8")
        for shared in (False, True):
            for architecture in ("skipgram", "cbow"):
                train_word2vec(str(warm_up), min_count=1, epochs=1, workers=1,
                               vector_size=SETTINGS["vector_size"], architecture=architecture,
                               shared_negatives=shared)

        summary = {}
        for architecture in args.architectures:
            rows = {name: [] for name in systems}
            for repeat in range(args.repeats):
                order = systems[repeat % len(systems):] + systems[:repeat % len(systems)]  # rotate who goes first
                for name in order:
                    if name == "c" and args.c_repeats is not None and repeat >= args.c_repeats:
                        continue
                    r = run_once(name, architecture, args, corpus_file, c_tool, repeat + 1, work)
                    rows[name].append(r)
                    startup = r["process"] - r["pipeline"]
                    print(f"{architecture:8s} {name:7s} run {repeat + 1}: process {r['process']:6.2f}s, pipeline "
                          f"{r['pipeline']:6.2f}s (before training {r['preparation']:.2f}s; start-up "
                          f"{startup:.2f}s = {100 * startup / r['process']:.1f}% of the process), "
                          f"vocab {r['vocab']:,}, analogy {r['analogy']:.2f}%, "
                          f"WordSim353 ρ {r['wordsim_spearman']:.3f}", flush=True)
            summary[architecture] = rows
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"\nmedians of {args.repeats} runs; speed-up = gensim's time / the system's, per repeat, then the median")
    print(f"{'':9s}{'system':8s}{'n':>2s}{'process s':>10s}{'pipeline s':>11s}{'training s':>11s}{'start-up %':>11s}"
          f"{'× gensim (process)':>20s}{'× gensim (pipeline)':>21s}{'× gensim (training)':>21s}{'analogy %':>10s}"
          f"{'WS353 ρ':>9s}")
    per_run = []
    for architecture, rows in summary.items():
        for runs in rows.values():
            for r in runs:
                r["training"] = r["pipeline"] - r["preparation"]  # NaN for the C tool
                r["startup_share"] = 100 * (r["process"] - r["pipeline"]) / r["process"]
        for name, runs in rows.items():
            med = {k: statistics.median(r[k] for r in runs) for k in ("process", "pipeline", "training",
                                                                      "startup_share", "analogy",
                                                                      "wordsim_spearman")}
            ratio = {}
            for k in ("process", "pipeline", "training"):
                if "gensim" in rows:  # the C tool's runs are the first repeats' when --c-repeats cuts them
                    each = [g[k] / r[k] for g, r in zip(rows["gensim"], runs)]
                    ratio[k] = f"{statistics.median(each):.2f}x"
                    if name != "gensim":
                        per_run.append(f"{architecture} {name} {k}: " + ", ".join(f"{x:.2f}x" for x in each))
                else:
                    ratio[k] = "-"
            print(f"{architecture:9s}{name:8s}{len(runs):>2d}{med['process']:>10.2f}{med['pipeline']:>11.2f}"
                  f"{med['training']:>11.2f}{med['startup_share']:>11.1f}{ratio['process']:>20s}"
                  f"{ratio['pipeline']:>21s}{ratio['training']:>21s}{med['analogy']:>10.2f}"
                  f"{med['wordsim_spearman']:>9.3f}")
    if per_run:
        print("\nper-repeat speed-ups (gensim's time / the system's, repeat 1, 2, ...):")
        print("\n".join(per_run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
