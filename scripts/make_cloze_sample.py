"""Build the cloze sample of the multiple-choice task: ``hf_lineage/samples/cloze/``.

A cloze (Taylor 1953) with four choices, in SWAG's column layout (``context``, ``ending0`` .. ``ending3``, ``label``),
from UD English EWT (CC BY-SA 4.0): training items from ``en_ewt-ud-train.conllu``, validation items from
``en_ewt-ud-dev.conllu``, test items (for final reporting only) from ``en_ewt-ud-test.conllu``. Word frequencies,
parts of speech and the distractors always come from the training split.

Each item is one sentence with one content word blanked: ``context`` is the sentence with that word replaced by
``___``; the choices are the word and three distractors of the same part of speech and frequency band, in a shuffled
order; ``label`` is the index of the word among them (0-3). Procedure, with ``random.Random(0)``:

1. **Vocabulary** (training split): each lowercased word form's count and its most frequent UPOS. A *choice word* is
   purely alphabetic, lowercase, at least ``MIN_COUNT`` (5) occurrences, with a content UPOS (NOUN, VERB, ADJ, ADV)
   as its most frequent tag. Its *band* is ``floor(log2(count))``: words within a factor of two of each other.
2. **Blanks**: in a sentence of 8 to 30 tokens (first occurrence of a repeated sentence only), a word that is a
   choice word, tagged with that same UPOS here, written in lowercase, once in the sentence (a second occurrence
   would give it away), and neither the first nor the last word token of the sentence (the edges carry
   sentence-level cues). A sentence is a candidate when it has such a word and its
   (UPOS, band) holds at least ``MIN_POOL`` (8) other choice words.
3. **Items**: a sample of ``SIZES[split]`` candidate sentences; in each, one blank position drawn uniformly among its
   candidates; three distractors drawn without replacement from the same (UPOS, band), none of them a word of the
   sentence, each drawn with probability proportional to its training count (the gold word is a token drawn from
   running text, so a frequency-weighted draw gives the distractors the gold's frequency distribution and a
   most-frequent-word guess stays near chance).
4. **Order**: the gold word's position takes each of 0-3 equally often (a shuffled list), so the majority position
   is chance (0.25); the distractors fill the other positions in the order drawn.

Writes ``cloze.{train,validation,test}.jsonl`` and ``manifest.json`` (counts, label counts, source, license, sha256);
the README is written by hand. Byte-for-byte reproducible.

    python scripts/make_cloze_sample.py                # ../shared/data -> hf_lineage/samples/cloze
"""

from __future__ import annotations

import argparse
import bisect
import collections
import hashlib
import itertools
import json
import math
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from hf_lineage.data.readers import read_conllu  # noqa: E402

DEFAULT_DATA_DIR = ROOT.parent / "shared" / "data"
DEFAULT_OUTPUT_DIR = ROOT / "hf_lineage" / "samples" / "cloze"
SEED = 0
EWT_FILES = {"train": "en_ewt-ud-train.conllu", "validation": "en_ewt-ud-dev.conllu", "test": "en_ewt-ud-test.conllu"}
SIZES = {"train": 2000, "validation": 500, "test": 500}
SENTENCE_TOKENS = (8, 30)
CONTENT_UPOS = ("NOUN", "VERB", "ADJ", "ADV")
MIN_COUNT = 5
MIN_POOL = 8
CHOICES = 4
BLANK = "___"
LICENSE = "CC BY-SA 4.0"


def jsonl(records: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records).encode("utf-8")


def vocabulary(rows) -> tuple[dict, dict]:
    """({word: (upos, count)} of the choice words, {(upos, band): [words, sorted]}) from the training rows."""
    counts, tags = collections.Counter(), collections.defaultdict(collections.Counter)
    for row in rows:
        for token, tag in zip(row["tokens"], row["tags"]):
            counts[token.lower()] += 1
            tags[token.lower()][tag] += 1
    words = {}
    for word, count in counts.items():
        upos = min(tags[word], key=lambda t: (-tags[word][t], t))
        if word.isalpha() and word.islower() and count >= MIN_COUNT and upos in CONTENT_UPOS:
            words[word] = (upos, count)
    pools = collections.defaultdict(list)
    for word, (upos, count) in sorted(words.items()):
        pools[(upos, band(count))].append(word)
    return words, dict(pools)


def band(count: int) -> int:
    return int(math.floor(math.log2(count)))


def blank_positions(tokens, tags, words, pools) -> list[int]:
    word_positions = [i for i, t in enumerate(tokens) if any(c.isalnum() for c in t)]
    if len(word_positions) < 3:
        return []
    lowered = collections.Counter(t.lower() for t in tokens)
    out = []
    for i in word_positions[1:-1]:
        token = tokens[i]
        entry = words.get(token)
        if entry is None or entry[0] != tags[i] or lowered[token] > 1:
            continue
        if len(pools[(entry[0], band(entry[1]))]) - 1 >= MIN_POOL:
            out.append(i)
    return out


def candidates(rows, words, pools) -> list[tuple[list[str], list[int]]]:
    seen, out = set(), []
    for row in rows:
        key = tuple(row["tokens"])
        if not SENTENCE_TOKENS[0] <= len(key) <= SENTENCE_TOKENS[1] or key in seen:
            continue
        seen.add(key)
        positions = blank_positions(row["tokens"], row["tags"], words, pools)
        if positions:
            out.append((list(row["tokens"]), positions))
    return out


def weighted_sample(rng: random.Random, pool: list[str], weights: list[int], k: int) -> list[str]:
    """``k`` distinct words of ``pool`` drawn one at a time, each with probability proportional to its weight."""
    pool, weights, chosen = list(pool), list(weights), []
    for _ in range(k):
        cumulative = list(itertools.accumulate(weights))
        j = bisect.bisect_right(cumulative, rng.random() * cumulative[-1])
        chosen.append(pool.pop(j))
        weights.pop(j)
    return chosen


def cloze_file(rows, words, pools, total: int) -> tuple[bytes, dict]:
    rng = random.Random(SEED)
    pool = candidates(rows, words, pools)
    sample = rng.sample(pool, total)
    gold_positions = [i % CHOICES for i in range(total)]
    rng.shuffle(gold_positions)
    records = []
    for (tokens, positions), gold_at in zip(sample, gold_positions):
        i = rng.choice(positions)
        gold = tokens[i]
        upos, count = words[gold]
        in_sentence = {t.lower() for t in tokens}
        others = [w for w in pools[(upos, band(count))] if w not in in_sentence]
        distractors = weighted_sample(rng, others, [words[w][1] for w in others], CHOICES - 1)
        choices = distractors[:gold_at] + [gold] + distractors[gold_at:]
        context = " ".join(tokens[:i] + [BLANK] + tokens[i + 1:])
        records.append({"context": context, **{f"ending{k}": c for k, c in enumerate(choices)}, "label": gold_at,
                        "upos": upos})
    counts = collections.Counter(r["label"] for r in records)
    upos_counts = collections.Counter(r["upos"] for r in records)
    return jsonl(records), {"examples": len(records), "label_counts": {str(k): counts[k] for k in sorted(counts)},
                            "upos_counts": dict(sorted(upos_counts.items())), "candidates": len(pool)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--output-dir", type=Path, default=DEFAULT_OUTPUT_DIR)
    args = parser.parse_args(argv)
    ewt = args.data_dir / "ud_english_ewt"
    rows = {split: list(read_conllu(ewt / name, column="upos")) for split, name in EWT_FILES.items()}
    words, pools = vocabulary(rows["train"])
    args.output_dir.mkdir(parents=True, exist_ok=True)
    manifest = {"files": {}, "choice_words": len(words), "seed": SEED}
    for split, total in SIZES.items():
        data, info = cloze_file(rows[split], words, pools, total)
        name = f"cloze.{split}.jsonl"
        (args.output_dir / name).write_bytes(data)
        manifest["files"][name] = {**info, "source": f"ud_english_ewt/{EWT_FILES[split]}", "license": LICENSE,
                                   "sha256": hashlib.sha256(data).hexdigest()}
        print(f"{name}: {info['examples']} items from {info['candidates']} candidate sentences, {len(data):,} bytes")
    (args.output_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
