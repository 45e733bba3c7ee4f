"""PPMI-SVD (hf_lineage's svd family) beside word2vec skip-gram (hf_lineage's CPU trainer) on the same corpus.

    flock /tmp/hf_lineage_bench.lock python benchmarks/bench_svd.py [--dimensions 300] [--epochs 5 15] [--no-svd]

Corpus: WikiText-2 train (``../shared/data/wikitext-2/wiki.train.tokens``, 2.05M tokens) with the literal ``<unk>``
tokens removed, as in ``bench_word2vec.py``. Shared settings: window 5, min_count 5, ``--dimensions`` dimensions.
word2vec: skip-gram, negative 5, sample 1e-3, each of ``--epochs`` epochs, 2 workers. SVD (Levy et al. 2015's settings):
word2vec's dynamic window in expectation, context distribution smoothing 0.75, no shift, eigenvalue weighting 0.5,
with and without w+c, and eig 0; randomized SVD with ``--svd-iterations`` power iterations.

Wall time is the whole call, text to vectors (vocabulary, encoding, counting or training, factorisation). Quality
is our WordVectors' evaluation (gensim's definitions): 3CosAdd analogy accuracy on gensim's questions-words.txt
and the Spearman correlation on its wordsim353.tsv. Prints one line per model, the CPU, and a markdown table.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the checkout's hf_lineage, installed or not
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "wikitext-2" / "wiki.train.tokens"
SHARED = dict(window=5, min_count=5)
SVD_VARIANTS = {
    "svd eig 0.5, w+c": dict(eig=0.5, add_context_vectors=True),
    "svd eig 0.5": dict(eig=0.5, add_context_vectors=False),
    "svd eig 0": dict(eig=0.0, add_context_vectors=False),
}


def gensim_data(name: str) -> str:
    from gensim.test.utils import datapath

    return datapath(name)


def evaluate(model, tokenizer) -> dict:
    from hf_lineage import WordVectors

    wv = WordVectors.from_pretrained(model, tokenizer=tokenizer)
    analogy, _ = wv.evaluate_word_analogies(gensim_data("questions-words.txt"))
    _, spearman, oov = wv.evaluate_word_pairs(gensim_data("wordsim353.tsv"))
    return {"analogy": 100 * analogy, "wordsim": float(spearman.statistic), "oov": oov}


def run_svd(corpus: str, dimensions: int, iterations: int, **fields) -> dict:
    from hf_lineage import train_svd

    started = time.time()
    model, tokenizer = train_svd(corpus, config="levy2015", vector_size=dimensions, svd_iterations=iterations,
                                 **SHARED, **fields)
    wall = time.time() - started
    results = model.train_results
    detail = f"count {results['counting_seconds']:.1f} s + PPMI/SVD {results['svd_seconds']:.1f} s"
    return {"wall": wall, "detail": detail, **evaluate(model, tokenizer)}


def run_word2vec(corpus: str, dimensions: int, epochs: int, workers: int) -> dict:
    from hf_lineage import train_word2vec

    started = time.time()
    model, tokenizer = train_word2vec(corpus, architecture="skipgram", vector_size=dimensions, negative=5,
                                      sample=1e-3, epochs=epochs, workers=workers, seed=1, **SHARED)
    wall = time.time() - started
    return {"wall": wall, "detail": f"{epochs} epochs, {workers} workers, "
                                    f"{model.train_results['effective_words_per_second']:,.0f} effective words/s",
            **evaluate(model.word2vec, tokenizer)}


def cpu_model() -> str:
    for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
        if line.startswith("Model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    parser.add_argument("--dimensions", type=int, default=300)
    parser.add_argument("--epochs", type=int, nargs="+", default=[5], help="word2vec's epochs: one run each")
    parser.add_argument("--no-svd", action="store_true", help="word2vec's rows only")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--svd-iterations", type=int, default=5)
    args = parser.parse_args(argv)
    if not Path(args.corpus).is_file():
        print(f"corpus {args.corpus} not found", file=sys.stderr)
        return 2
    text = re.sub(r"<unk>", "", Path(args.corpus).read_text(encoding="utf-8"))
    corpus = Path(tempfile.mkdtemp()) / "corpus.txt"
    corpus.write_text(text, encoding="utf-8")
    print(f"corpus: {args.corpus} without <unk>: {len(text.split()):,} words; {args.dimensions} dimensions, "
          f"{SHARED}; CPU: {cpu_model()}")

    from hf_lineage import train_word2vec

    train_word2vec([["a", "b", "c"]] * 10, min_count=1, epochs=1, workers=1, vector_size=8)  # numba's compile

    runs = {}
    if not args.no_svd:
        for name, fields in SVD_VARIANTS.items():
            runs[name] = partial(run_svd, str(corpus), args.dimensions, args.svd_iterations, **fields)
    for epochs in args.epochs:
        runs[f"word2vec skip-gram, {epochs} epochs"] = partial(run_word2vec, str(corpus), args.dimensions, epochs,
                                                               args.workers)
    rows = {}
    for name, run in runs.items():
        rows[name] = r = run()
        print(f"{name}: {r['wall']:.1f} s, analogy {r['analogy']:.2f} %, WordSim353 ρ {r['wordsim']:.3f} "
              f"(out of vocabulary: {r['oov']:.1f} % of the pairs)", flush=True)
    print("\n| model | wall time | analogy accuracy | WordSim353 Spearman | |\n|---|---:|---:|---:|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['wall']:.1f} s | {r['analogy']:.2f} % | {r['wordsim']:.3f} | {r['detail']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
