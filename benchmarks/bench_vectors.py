"""Benchmark: ``hf_lineage.WordVectors`` vs gensim 4.4's ``KeyedVectors`` on the same words and vectors.

Timed, each as the median of ``--repeats`` runs, ours and gensim's interleaved in one process (ours first on even
repetitions, gensim's first on odd ones):

* ``evaluate_word_analogies`` on gensim's ``questions-words.txt`` (19,544 questions; gensim answers them one
  ``most_similar`` at a time, ours a batch at a time with one matrix product), default ``restrict_vocab=300000``;
* ``evaluate_word_pairs`` on ``wordsim353.tsv``;
* ``most_similar`` of 200 words, one call each;
* writing and reading the word2vec text and binary formats.

The vectors are random (seeded) over a vocabulary of ``--vocab`` words that holds every benchmark word (so every
question is answered) plus filler words; every result is checked equal to gensim's before timing counts.

    flock /tmp/hf_lineage_bench.lock python benchmarks/bench_vectors.py --vocab 30000 --dim 100 --repeats 3
"""

import argparse
import os
import platform
import statistics
import tempfile
import time

import numpy as np
from gensim.models import KeyedVectors
from gensim.test.utils import datapath

from hf_lineage import WordVectors

QUESTIONS, WORDSIM = datapath("questions-words.txt"), datapath("wordsim353.tsv")


def vocabulary(size):
    words = []
    for line in open(QUESTIONS, encoding="utf8"):
        if not line.startswith(":"):
            words += line.split()
    for line in open(WORDSIM, encoding="utf8"):
        if not line.startswith("#"):
            words += line.split("\t")[:2]
    words = list(dict.fromkeys(words))
    return words + [f"filler{i}" for i in range(max(0, size - len(words)))]


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", type=int, default=30000)
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--io-vocab", type=int, default=100000, help="words in the word2vec-format files")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    words = vocabulary(args.vocab)
    vectors = rng.standard_normal((len(words), args.dim)).astype(np.float32)
    ours = WordVectors(words, vectors)
    theirs = KeyedVectors(args.dim)
    theirs.add_vectors(words, vectors.copy())
    queries = [words[i] for i in rng.choice(len(words), 200, replace=False)]

    def check_analogies(a, b):
        assert a[0] == b[0] and all(x == y for x, y in zip(a[1], b[1])), "analogy results differ from gensim"

    def check_pairs(a, b):
        assert abs(a[1][0] - b[1][0]) < 1e-6 and a[2] == b[2], "word-pair results differ from gensim"

    def check_neighbours(a, b):
        assert [[w for w, _ in r] for r in a] == [[w for w, _ in r] for r in b], "most_similar differs from gensim"

    # each task: (run(who) with who "ours" or "gensim", check(ours_result, gensim_result) or None)
    kvs = {"ours": ours, "gensim": theirs}
    tasks = {
        "evaluate_word_analogies": (lambda who: kvs[who].evaluate_word_analogies(QUESTIONS), check_analogies),
        "evaluate_word_pairs": (lambda who: kvs[who].evaluate_word_pairs(WORDSIM), check_pairs),
        "most_similar x200": (lambda who: [kvs[who].most_similar(w) for w in queries], check_neighbours),
    }

    io_words = [f"w{i}" for i in range(args.io_vocab)]
    io_vectors = rng.standard_normal((args.io_vocab, args.dim)).astype(np.float32)
    io_theirs = KeyedVectors(args.dim)
    io_theirs.add_vectors(io_words, io_vectors.copy())
    io_kvs = {"ours": WordVectors(io_words, io_vectors), "gensim": io_theirs}
    classes = {"ours": WordVectors, "gensim": KeyedVectors}
    tmp = tempfile.mkdtemp()

    def check_loaded(a, b):
        assert np.array_equal(np.asarray(a.vectors), np.asarray(b.vectors)), "loaded vectors differ"

    for binary in (False, True):
        kind = "binary" if binary else "text"
        # each side writes its own file; both sides then read the file gensim wrote
        tasks[f"save_word2vec_format {kind}"] = (
            lambda who, binary=binary, kind=kind: io_kvs[who].save_word2vec_format(
                os.path.join(tmp, f"{who}.{kind}"), binary=binary), None)
        tasks[f"load_word2vec_format {kind}"] = (
            lambda who, binary=binary, kind=kind: classes[who].load_word2vec_format(
                os.path.join(tmp, f"gensim.{kind}"), binary=binary), check_loaded)

    print(f"vocabulary {len(words)} x {args.dim} (file I/O: {args.io_vocab} x {args.dim}), "
          f"{args.repeats} repeats, {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
    print(f"{'task':32s} {'ours (s)':>10s} {'gensim (s)':>11s} {'gensim/ours':>12s}")
    for name, (run, check) in tasks.items():
        times = {"ours": [], "gensim": []}
        for rep in range(args.repeats):
            order = ["ours", "gensim"] if rep % 2 == 0 else ["gensim", "ours"]
            results = {}
            for who in order:
                seconds, results[who] = timed(lambda who=who: run(who))
                times[who].append(seconds)
            if check is not None and rep == 0:
                check(results["ours"], results["gensim"])
        mine, gensims = statistics.median(times["ours"]), statistics.median(times["gensim"])
        print(f"{name:32s} {mine:10.3f} {gensims:11.3f} {gensims / mine:11.1f}x")


if __name__ == "__main__":
    main()
