"""The options of each ``hf-lineage analyze KIND``, apart from the analyses themselves: building a parser (and
answering ``--help``) imports no torch, SciPy or scikit-learn. ``hf_lineage.analysis.cli`` pairs each KIND's options
here with its module's ``main``."""

from __future__ import annotations

import argparse

PROPERTIES = {
    "upos": "universal part-of-speech tag of every word",
    "number": "Sing/Plur of every noun (UPOS NOUN)",
    "tense": "Past/Pres of every finite verb or auxiliary",
    "length": "sentence length in words, 6 bins (1-6, 7-10, 11-14, 15-19, 20-25, 26+)",
    "depth": "depth of the sentence's UD dependency tree (words on the longest root path), 5 bins (1-3, 4, 5, 6, 7+)",
    "root_dependents": "the root's UPOS and its core dependents' relations, in order (a dependency stand-in for "
                       "Conneau et al.'s top constituents): the 19 most frequent and other",
    "agreement": "Sing/Plur of a finite verb from the words before it, across a noun between subject and verb",
}
SENTENCE_VECTORS = ("mean", "last")
C_GRID = (0.01, 0.1, 1.0, 10.0)
BOOTSTRAP_SAMPLES = 1000


def polysemy_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models", nargs="+", required=True, metavar="DIR",
                        help="saved model folders (e.g. out/word2vec out/elmo out/bert)")
    parser.add_argument("--words", nargs="+", metavar="WORD", help="only these words of the sentence set")
    parser.add_argument("--sentences", metavar="FILE",
                        help="JSON lines {word, sense, sentence} (default: the shipped set, "
                             "hf_lineage/samples/analysis/polysemy.jsonl)")
    parser.add_argument("--neighbours", type=int, default=3, help="nearest occurrences kept per occurrence")
    parser.add_argument("--permutations", type=int, default=1000,
                        help="sense shuffles behind the p-values of the summary table")
    parser.add_argument("--output-dir", required=True, metavar="DIR",
                        help="where results.json, summary.md, summary.png and polysemy_<word>.png go")


def attention_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="a saved model folder (lineage-bert, lineage-gpt, or a "
                        "transformers BERT/GPT)")
    parser.add_argument("--sentences", help="a text file: one sentence per line, a tab between the two sentences "
                        "of a pair (default: sentence pairs from the shipped WikiText sample)")
    parser.add_argument("--max-sentences", type=int, default=64, help="use at most this many (default 64)")
    parser.add_argument("--max-length", type=int, default=128, help="tokens per input, truncated (default 128)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--device", default="cpu", help="torch device (default cpu)")
    parser.add_argument("--output-dir", required=True,
                        help="written: results.json, heads.md (layer × head table), patterns.png, shares.png, "
                        "heads_dendrogram.png, example.png (every head on the shortest input)")


def probes_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    add = parser.add_argument
    add("--models", nargs="+", required=True, metavar="FOLDER", help="saved model folders (any lineage family, or "
        "a transformers encoder that returns hidden_states)")
    add("--properties", nargs="+", default=list(PROPERTIES), choices=list(PROPERTIES), metavar="PROPERTY",
        help=f"what to probe for: {', '.join(PROPERTIES)} (default: all)")
    add("--train-sentences", type=int, metavar="N", help="training sentences of each sample (default: all: "
        "1,000 probing, 499 agreement)")
    add("--validation-sentences", type=int, metavar="N", help="validation sentences (default: all: 400, 100)")
    add("--sentence-vector", choices=SENTENCE_VECTORS, default="mean", help="a sentence property's input: the mean "
        "of the sentence's word vectors, or its last word's (default: %(default)s)")
    add("--C", type=float, nargs="+", default=list(C_GRID), dest="grid", metavar="C",
        help="inverse regularisation strengths tried on the dev split (default: %(default)s)")
    add("--bootstrap-samples", type=int, default=BOOTSTRAP_SAMPLES, metavar="N",
        help="bootstrap resamples of the validation sentences (default: %(default)s)")
    add("--seed", type=int, default=0, help="seed of the probes, the control labels and the bootstrap")
    add("--output-dir", required=True, help="where results.json, table.md and the PNG plots go")
    return parser
