"""word2vec on CPU: hf_lineage's numba trainer vs gensim 4, same corpus and settings, side by side in one process.

    flock /tmp/hf_lineage_bench.lock python benchmarks/bench_word2vec.py [--repeats 3] [--epochs 5] [--corpus FILE]

Corpus: WikiText-2 train (``../shared/data/wikitext-2/wiki.train.tokens``, 2.05M tokens) with the literal
``<unk>`` tokens removed (the tokenizer's ``<unk>`` is a special that hf_lineage never trains, while gensim would
train it as a word; removing it gives both the same vocabulary). ``--repeat-corpus N`` concatenates N copies.
Settings: vector_size 100, window 5, min_count 5, sample 1e-3, negative 5 (no hs), alpha 0.025 → 0.0001,
``--epochs`` epochs, workers 2 for both; skip-gram and CBOW (mean).

Speed is gensim's own definition, "effective words/s": words trained on after min_count and subsampling, divided
by the training time (vocabulary building excluded, for both). Quality is measured by gensim's own evaluation code
for both models (ours is loaded into a ``KeyedVectors``): analogy accuracy on questions-words.txt and the
Spearman correlation on WordSim353. Prints per-run numbers, then medians and the speed ratio.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the checkout's hf_lineage, installed or not
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "wikitext-2" / "wiki.train.tokens"
SETTINGS = dict(vector_size=100, window=5, min_count=5, sample=1e-3, negative=5, hs=False, alpha=0.025,
                min_alpha=0.0001)


def evaluate(keyed_vectors) -> dict:
    from gensim.test.utils import datapath

    analogy, _ = keyed_vectors.evaluate_word_analogies(datapath("questions-words.txt"))
    pearson, spearman, oov = keyed_vectors.evaluate_word_pairs(datapath("wordsim353.tsv"))
    return {"analogy": 100 * analogy, "wordsim_spearman": float(spearman[0]), "wordsim_oov": oov}


def run_gensim(sentences, architecture, epochs, workers, seed) -> dict:
    from gensim.models import Word2Vec

    g = Word2Vec(vector_size=SETTINGS["vector_size"], window=SETTINGS["window"], min_count=SETTINGS["min_count"],
                 sample=SETTINGS["sample"], negative=SETTINGS["negative"], hs=0, alpha=SETTINGS["alpha"],
                 min_alpha=SETTINGS["min_alpha"], sg=int(architecture == "skipgram"), cbow_mean=1, workers=workers,
                 seed=seed, epochs=epochs)
    started = time.time()
    g.build_vocab(sentences)
    effective, raw = g.train(sentences, total_examples=g.corpus_count, epochs=epochs)
    wall = time.time() - started
    return {"effective_words": effective, "raw_words": raw, "train_runtime": g.total_train_time,
            "effective_words_per_second": effective / g.total_train_time, "wall": wall, "vocab": len(g.wv),
            **evaluate(g.wv)}


def run_ours(corpus_file, architecture, epochs, workers, seed) -> dict:
    from gensim.models import KeyedVectors

    from hf_lineage import train_word2vec

    started = time.time()
    model, tokenizer = train_word2vec(corpus_file, architecture=architecture, epochs=epochs, workers=workers,
                                      seed=seed, cbow_mean=True, **SETTINGS)
    wall = time.time() - started
    r = model.train_results
    trained = np.flatnonzero(model.word_counts.numpy() > 0)  # the specials are not words
    kv = KeyedVectors(vector_size=model.config.vector_size)
    kv.add_vectors(tokenizer.convert_ids_to_tokens(trained.tolist()),
                   model.word2vec.input_vectors.weight.detach().numpy()[trained])
    return {"effective_words": r["effective_words"], "raw_words": r["raw_words"], "train_runtime": r["train_runtime"],
            "effective_words_per_second": r["effective_words_per_second"], "wall": wall, "vocab": len(trained),
            **evaluate(kv)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    parser.add_argument("--repeat-corpus", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--architectures", nargs="+", default=["skipgram", "cbow"])
    args = parser.parse_args(argv)
    if not Path(args.corpus).is_file():
        print(f"corpus {args.corpus} not found", file=sys.stderr)
        return 2

    import logging

    logging.basicConfig(level=logging.WARNING)
    text = re.sub(r"<unk>", "", Path(args.corpus).read_text(encoding="utf-8")) * args.repeat_corpus
    tmp = Path(tempfile.mkdtemp()) / "corpus.txt"
    tmp.write_text(text, encoding="utf-8")
    sentences = [line.split() for line in text.splitlines() if line.strip()]
    print(f"corpus: {args.corpus} x{args.repeat_corpus} without <unk>: {sum(map(len, sentences)):,} words, "
          f"{len(sentences):,} lines; settings {SETTINGS}, epochs {args.epochs}, workers {args.workers}")

    from hf_lineage import train_word2vec

    # numba compiles (or loads its cache) on the first call: do it outside the timings.
    train_word2vec([["a", "b", "c"]] * 10, min_count=1, epochs=1, workers=1, vector_size=8)

    summary = {}
    for architecture in args.architectures:
        rows = {"gensim": [], "ours": []}
        for repeat in range(args.repeats):
            for name, run in (("gensim", lambda: run_gensim(sentences, architecture, args.epochs, args.workers,
                                                            repeat + 1)),
                              ("ours", lambda: run_ours(str(tmp), architecture, args.epochs, args.workers,
                                                        repeat + 1))):
                r = run()
                rows[name].append(r)
                print(f"{architecture:8s} {name:6s} run {repeat + 1}: {r['effective_words_per_second']:>10,.0f} "
                      f"effective words/s ({r['effective_words']:,} in {r['train_runtime']:.2f}s; wall with "
                      f"vocabulary {r['wall']:.2f}s), vocab {r['vocab']:,}, analogy {r['analogy']:.2f}%, "
                      f"WordSim353 ρ {r['wordsim_spearman']:.3f}", flush=True)
        summary[architecture] = rows

    print("\nmedians (ratio = ours / gensim effective words/s, from runs taken side by side)")
    print(f"{'':9s}{'gensim w/s':>12s}{'ours w/s':>12s}{'ratio':>7s}{'analogy g':>11s}{'analogy o':>11s}"
          f"{'ws353 g':>9s}{'ws353 o':>9s}")
    for architecture, rows in summary.items():
        med = {name: {k: statistics.median(r[k] for r in runs) for k in ("effective_words_per_second", "analogy",
                                                                          "wordsim_spearman")}
               for name, runs in rows.items()}
        ratios = [o["effective_words_per_second"] / g["effective_words_per_second"]
                  for g, o in zip(rows["gensim"], rows["ours"])]
        print(f"{architecture:9s}{med['gensim']['effective_words_per_second']:>12,.0f}"
              f"{med['ours']['effective_words_per_second']:>12,.0f}{statistics.median(ratios):>6.2f}x"
              f"{med['gensim']['analogy']:>10.2f}%{med['ours']['analogy']:>10.2f}%"
              f"{med['gensim']['wordsim_spearman']:>9.3f}{med['ours']['wordsim_spearman']:>9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
