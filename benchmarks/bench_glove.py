"""GloVe (hf_lineage's glove family) against mittens' NumPy GloVe on the same counts, and beside svd and word2vec.

    pip install mittens
    flock /tmp/hf_lineage_bench.lock python benchmarks/bench_glove.py [--top-words 4000 8000 12000]
        [--threads 1 2] [--dimensions 50] [--epochs 25] [--repeats 3] [--skip-whole-vocabulary]

Corpus: WikiText-2 train (``../shared/data/wikitext-2/wiki.train.tokens``, 2.05M tokens) with the literal ``<unk>``
tokens removed, as ``bench_svd.py``. Counts: the glove family's (``CooccurrenceCounter``: symmetric window 10, 1/d
weighting, min_count 5). mittens (Dingwall and Potts 2018; its ``GloVe`` is full-batch AdaGrad on a dense V × V
matrix) cannot hold WikiText-2's 23k-word vocabulary (a 23k² float64 matrix is 4.4 GB, and it keeps several), so
both fit the same counts restricted to each ``--top-words`` most frequent words, with the same dimensions, epochs,
x_max 100, α 0.75 and learning rate 0.05, on each ``--threads`` count: ours ``workers=threads`` (Hogwild from 2),
mittens' BLAS limited to that many threads by threadpoolctl (its elementwise NumPy is one thread either way). Wall
time is the fit alone (the counts are shared); ours and mittens alternate within each of ``--repeats`` repeats, and
the table gives the medians and mittens' time over ours per repeat. Quality is from the last repeat's vectors.

Then, on the whole vocabulary: our GloVe (2 workers), svd (``levy2015``) and word2vec skip-gram (5 epochs, 2 workers)
trained by hf_lineage's trainers on the same file with the same dimensions, text to vectors. Quality is our
WordVectors' evaluation (gensim's definitions): 3CosAdd analogy accuracy on gensim's questions-words.txt and the
Spearman correlation on its wordsim353.tsv (with the share of pairs out of vocabulary). Prints the CPU and a
markdown table.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the checkout's hf_lineage, installed or not
sys.path.insert(0, str(REPO / "benchmarks"))
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "wikitext-2" / "wiki.train.tokens"

from bench_svd import cpu_model, evaluate, gensim_data  # noqa: E402

GLOVE = dict(window=10, min_count=5, x_max=100.0, alpha=0.75, learning_rate=0.05)


def scores(words, vectors) -> dict:
    from hf_lineage import WordVectors

    wv = WordVectors(words, vectors)
    analogy, _ = wv.evaluate_word_analogies(gensim_data("questions-words.txt"))
    _, spearman, oov = wv.evaluate_word_pairs(gensim_data("wordsim353.tsv"))
    return {"analogy": 100 * analogy, "wordsim": float(spearman.statistic), "oov": oov}


def same_counts(corpus: str, top_words: int):
    """(words, counts) of the ``top_words`` most frequent words: the glove family's counts, restricted."""
    import numpy as np

    from hf_lineage.tokenization import train_wordlevel_tokenizer
    from hf_lineage.word_vector_trainers.cooccurrence import CooccurrenceCounter
    from hf_lineage.word_vector_trainers.word2vec import encode_corpus

    tokenizer = train_wordlevel_tokenizer(files=[corpus], min_count=GLOVE["min_count"])
    keep = np.ones(len(tokenizer), dtype=bool)
    keep[tokenizer.all_special_ids] = False
    counter = CooccurrenceCounter(len(tokenizer), GLOVE["window"], dynamic_window=False, keep=keep, harmonic=True)
    with open(corpus, encoding="utf-8") as lines:
        counter.add(*encode_corpus(tokenizer, lines))
    # Ids are by frequency after the specials (train_wordlevel_tokenizer), so the top words are a block.
    first = len(tokenizer.all_special_ids)
    ids = list(range(first, first + top_words))
    words = tokenizer.convert_ids_to_tokens(ids)
    return words, counter.counts[ids][:, ids].tocsr(), counter.counts.nnz


def interleaved(runs: dict, repeats: int) -> tuple[dict, dict]:
    """({name: wall times}, {name: the last result}): each repeat runs every one of ``runs`` once, in turn, so that
    the machine's load falls on all of them alike."""
    walls, results = {name: [] for name in runs}, {}
    for _ in range(repeats):
        for name, run in runs.items():
            started = time.time()
            results[name] = run()
            walls[name].append(time.time() - started)
    return walls, results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    parser.add_argument("--top-words", type=int, nargs="+", default=[4000, 8000, 12000])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--dimensions", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="threads of the whole-vocabulary runs")
    parser.add_argument("--skip-whole-vocabulary", action="store_true")
    args = parser.parse_args(argv)
    if not Path(args.corpus).is_file():
        print(f"corpus {args.corpus} not found", file=sys.stderr)
        return 2
    import numpy as np
    import threadpoolctl
    from mittens import GloVe as MittensGloVe

    from hf_lineage import train_glove, train_svd, train_word2vec
    from hf_lineage.word_vector_trainers.glove import fit_glove

    text = re.sub(r"<unk>", "", Path(args.corpus).read_text(encoding="utf-8"))
    corpus = str(Path(tempfile.mkdtemp()) / "corpus.txt")
    Path(corpus).write_text(text, encoding="utf-8")
    print(f"corpus: {args.corpus} without <unk>: {len(text.split()):,} words; counts {GLOVE}, 1/d weighting; "
          f"{args.dimensions} dimensions, {args.epochs} epochs; CPU: {cpu_model()}", flush=True)
    fit_glove(np.ones((50, 50)), 4, epochs=1)  # numba's compile (cached after the first run)
    fit = dict(x_max=GLOVE["x_max"], alpha=GLOVE["alpha"], learning_rate=GLOVE["learning_rate"], epochs=args.epochs)

    same = []
    for top_words in args.top_words:
        words, counts, all_nonzero = same_counts(corpus, top_words)
        dense = counts.toarray()
        print(f"top {top_words} words: {counts.nnz:,} of the {all_nonzero:,} non-zero counts", flush=True)
        for threads in args.threads:
            mittens = MittensGloVe(n=args.dimensions, xmax=fit["x_max"], alpha=fit["alpha"], max_iter=args.epochs,
                                   learning_rate=fit["learning_rate"], display_progress=0)

            def run_mittens():
                with threadpoolctl.threadpool_limits(threads):
                    return mittens.fit(dense)

            walls, vectors = interleaved({"ours": lambda: fit_glove(counts, args.dimensions, workers=threads, **fit)[0],
                                          "mittens": run_mittens}, args.repeats)
            row = {"top": top_words, "nnz": counts.nnz, "threads": threads, "walls": walls,
                   "ratios": [m / o for m, o in zip(walls["mittens"], walls["ours"])],
                   **{name: scores(words, v) for name, v in vectors.items()}}
            print(row, flush=True)
            same.append(row)
        del dense

    whole = {}
    runs = {
        f"hf_lineage GloVe, {args.epochs} epochs": lambda: train_glove(
            corpus, config="pennington2014", vector_size=args.dimensions, epochs=args.epochs, workers=args.workers),
        "svd levy2015": lambda: train_svd(corpus, config="levy2015", vector_size=args.dimensions),
        "word2vec skip-gram, 5 epochs": lambda: train_word2vec(
            corpus, architecture="skipgram", vector_size=args.dimensions, window=5, negative=5, sample=1e-3,
            min_count=5, epochs=5, workers=args.workers, seed=1),
    }
    for name, run in ({} if args.skip_whole_vocabulary else runs).items():
        started = time.time()
        model, tokenizer = run()
        wall = time.time() - started
        model = getattr(model, "word2vec", model)
        whole[f"{name}, whole vocabulary"] = {"wall": wall, "detail": f"text to vectors, {args.workers} threads"
                                              if "svd" not in name else "text to vectors", **evaluate(model, tokenizer)}
        print(name, whole[f"{name}, whole vocabulary"], flush=True)

    print("\n| counts | threads | hf_lineage fit | mittens fit | mittens / ours, per repeat | analogy accuracy, ours / "
          "mittens | WordSim353 Spearman, ours / mittens (pairs out of vocabulary) |\n"
          "|---|---:|---:|---:|---|---:|---:|")
    for r in same:
        ours, mittens = (statistics.median(r["walls"][name]) for name in ("ours", "mittens"))
        print(f"| top {r['top']:,} words, {r['nnz'] / 1e6:.2f}M non-zero | {r['threads']} | {ours:.1f} s | "
              f"{mittens:.1f} s | **{statistics.median(r['ratios']):.1f}x** "
              f"({', '.join(f'{x:.1f}' for x in r['ratios'])}) | {r['ours']['analogy']:.2f} % / "
              f"{r['mittens']['analogy']:.2f} % | {r['ours']['wordsim']:.3f} / {r['mittens']['wordsim']:.3f} "
              f"({r['ours']['oov']:.0f} %) |")
    if whole:
        print("\n| model | wall time | analogy accuracy | WordSim353 Spearman (pairs out of vocabulary) | |\n"
              "|---|---:|---:|---:|---|")
        for name, r in whole.items():
            print(f"| {name} | {r['wall']:.1f} s | {r['analogy']:.2f} % | {r['wordsim']:.3f} ({r['oov']:.0f} %) | "
                  f"{r['detail']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
