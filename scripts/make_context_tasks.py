"""Build the context tasks of ``hf-lineage lineage``: ``hf_lineage/samples/context_tasks/``.

The E2E classification and paraphrase samples are solved by a bag of words (word identity, no context). These are
built so that a bag of words cannot solve them; ``order`` and ``order_pairs`` (the default run's) are also learnt by a
pretrained model that reads word order from 1,000 examples, ``shift`` and ``wic`` were not (at the shipped
checkpoints' size, GPT and BERT stayed at chance on both; docs/lineage.md). All come from UD
English EWT (CC BY-SA 4.0): training examples from ``en_ewt-ud-train.conllu``, validation examples from
``en_ewt-ud-dev.conllu`` (the labeling task's split), so no sentence is in both.

``order.{train,validation}.jsonl`` -- word order, ``{"sentence": ..., "label": "original" | "rotated"}``: sentences
    of 5 to 25 words (first occurrences), lowercased (a capital letter would mark where the original began: a BiLSTM
    over static vectors learnt that cue at once); with ``random.Random(0)`` a sample of 4,000 / 1,000, and in a
    shuffled half of them the *interior* rotated: the words between the first and the last word token (a token
    holding a word character) cut at a uniformly drawn boundary and the two parts swapped (*the cat sat on the mat .*
    → *the on the cat sat mat .*). The first word, the last word, any punctuation before the first and after the
    last (the final mark) stay in place, so the words at the edges say nothing about the label (issue 42: rotating
    the whole sentence put an unusual word first and a sentence-final word in the middle, and a logistic regression
    over the first word, the last word and the final mark scored 0.73 / 0.79). Candidates: an interior of at least
    two tokens with a cut that changes it. Both classes hold the same words and all but three of the same bigrams.
``order_pairs.{train,validation}.jsonl`` -- which word order is the original?  ``{"sentence1", "sentence2", "label":
    "first" | "second"}``: another sample of 4,000 / 1,000 candidates (same generator), each sentence with its
    interior rotation (as above), the original first in a shuffled half of the pairs. The two sentences hold the same
    words, the same first and last words and the same final mark.
``shift.{train,validation}.jsonl`` -- bigram shift (Conneau et al. 2018, "What you can cram into a single vector"),
    ``{"sentence": ..., "label": "original" | "shifted"}``. Candidates: sentences of 5 to 25 words with at least two
    adjacent non-punctuation words that differ (first occurrence of a repeated sentence only). With
    ``random.Random(0)``: a sample of 4,000 (train) / 1,000 (validation) candidates; a shuffled half of them gets two
    adjacent words swapped, at a position drawn uniformly among the pairs of adjacent words where neither is
    punctuation (UPOS PUNCT) and the two differ (lowercased). Unlike Conneau et al. punctuation never moves, so a
    displaced final full stop cannot give the answer away. A bag of words sees the same words in both classes.
``wic.{train,validation}.jsonl`` -- same word, two contexts (a part-of-speech analogue of WiC, Pilehvar &
    Camacho-Collados 2019), ``{"sentence1", "sentence2", "label": "same" | "different", "word": ...}``: two sentences
    of 5 to 25 words that contain the same word form (lowercased) once each, each cut to the word and the ``WINDOW``
    (6) words on either side of it; ``same`` when EWT gives it the same UPOS in both (``I
    like it`` / ``they like us``), ``different`` otherwise (``I like it`` / ``it looks like rain``). Candidate words:
    those with at least ``MIN_PER_TAG`` occurrences under each of at least two UPOS tags in the file (occurrences in
    sentences of 5 to 25 words that hold the word once). Every word gives as many ``same`` as ``different`` pairs
    (at most ``PAIRS_PER_WORD[split]`` of each), so the word itself says nothing about the label; the pairs are
    drawn round-robin over the words (``random.Random(0)``), each sentence pair at most once, each occurrence in at
    most ``USES_PER_OCCURRENCE`` pairs, then shuffled. The label is whether two sentence-level properties agree (an
    exclusive or), which a linear model over the two bags of words cannot represent.

    python scripts/make_context_tasks.py                # ../shared/data -> hf_lineage/samples/context_tasks
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from hf_lineage.data.readers import read_conllu  # noqa: E402

DEFAULT_DATA_DIR = ROOT.parent / "shared" / "data"
DEFAULT_OUTPUT_DIR = ROOT / "hf_lineage" / "samples" / "context_tasks"
SEED = 0
EWT_FILES = {"train": "en_ewt-ud-train.conllu", "validation": "en_ewt-ud-dev.conllu"}
SENTENCE_WORDS = (5, 25)  # short sentences: one swapped pair or one word is a larger share of what a model reads
WINDOW = 6  # wic: the words kept on each side of the target word
SHIFT_SIZES = {"train": 4000, "validation": 1000}
WIC_SIZES = {"train": 4000, "validation": 1000}
ORDER_SIZES = {"train": 4000, "validation": 1000}
MIN_PER_TAG = {"train": 8, "validation": 3}
PAIRS_PER_WORD = {"train": 60, "validation": 30}
USES_PER_OCCURRENCE = 3
LICENSE = "CC BY-SA 4.0"


def jsonl(records: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records).encode("utf-8")


def candidates(path: Path) -> list[dict]:
    seen, out = set(), []
    for row in read_conllu(path, column="upos"):
        key = tuple(row["tokens"])
        if SENTENCE_WORDS[0] <= len(key) <= SENTENCE_WORDS[1] and key not in seen:
            seen.add(key)
            out.append(row)
    return out


def swap_positions(row: dict) -> list[int]:
    tokens, tags = row["tokens"], row["tags"]
    return [i for i in range(len(tokens) - 1) if "PUNCT" not in (tags[i], tags[i + 1])
            and tokens[i].lower() != tokens[i + 1].lower()]


def shift_file(rows: list[dict], total: int) -> tuple[bytes, dict]:
    rng = random.Random(SEED)
    sample = rng.sample([r for r in rows if swap_positions(r)], total)
    shifted = set(rng.sample(range(total), total // 2))
    records = []
    for i, row in enumerate(sample):
        tokens = list(row["tokens"])
        if i in shifted:
            j = rng.choice(swap_positions(row))
            tokens[j], tokens[j + 1] = tokens[j + 1], tokens[j]
        records.append({"sentence": " ".join(tokens), "label": "shifted" if i in shifted else "original"})
    counts = collections.Counter(r["label"] for r in records)
    return jsonl(records), {"examples": len(records), "label_counts": dict(sorted(counts.items())),
                            "candidates": len(rows)}


def _has_word(token: str) -> bool:
    return re.search(r"\w", token) is not None


def edges(tokens: list[str]) -> tuple[int, int] | None:
    """``(start, end)`` of the interior that a rotation may move: everything after the first token holding a word
    character (with any punctuation before it) and before the last one (with any punctuation after it, the final
    mark included). None when the sentence has fewer than two word tokens."""
    words = [i for i, t in enumerate(tokens) if _has_word(t)]
    return (words[0] + 1, words[-1]) if len(words) >= 2 else None


def rotation_cuts(tokens: list[str]) -> list[int]:
    """The cuts of the interior whose rotation changes the sentence (none: not a candidate)."""
    span = edges(tokens)
    if span is None or span[1] - span[0] < 2:
        return []
    start, end = span
    interior = tokens[start:end]
    return [cut for cut in range(1, len(interior)) if interior[cut:] + interior[:cut] != interior]


def rotated(tokens: list[str], rng: random.Random) -> list[str]:
    """The sentence's interior cut at a uniformly drawn word boundary and its two parts swapped; the first word,
    the last word and the punctuation around them stay in place (*the cat sat on the mat .* → *the on the cat sat
    mat .*)."""
    start, end = edges(tokens)
    interior, cut = tokens[start:end], rng.choice(rotation_cuts(tokens))
    return tokens[:start] + interior[cut:] + interior[:cut] + tokens[end:]


def order_files(rows: list[dict], total: int) -> dict[str, tuple[bytes, dict]]:
    """``order`` (one sentence: original or rotated?) and ``order_pairs`` (the original and its rotation, in random
    order: which is the original?), each from its own sample of the candidates, lowercased: a capital letter would
    otherwise mark where the original sentence began."""
    rng = random.Random(SEED)
    rows = [[t.lower() for t in r["tokens"]] for r in rows]
    candidates_ = [tokens for tokens in rows if rotation_cuts(tokens)]
    single, pairs = rng.sample(candidates_, total), rng.sample(candidates_, total)
    turned = set(rng.sample(range(total), total // 2))
    records = [{"sentence": " ".join(rotated(tokens, rng) if i in turned else tokens),
                "label": "rotated" if i in turned else "original"} for i, tokens in enumerate(single)]
    second_is_original = set(rng.sample(range(total), total // 2))
    pair_records = []
    for i, tokens in enumerate(pairs):
        original, other = " ".join(tokens), " ".join(rotated(tokens, rng))
        first, second = (other, original) if i in second_is_original else (original, other)
        pair_records.append({"sentence1": first, "sentence2": second,
                             "label": "second" if i in second_is_original else "first"})
    out = {}
    for name, recs in (("order", records), ("order_pairs", pair_records)):
        counts = collections.Counter(r["label"] for r in recs)
        out[name] = (jsonl(recs), {"examples": len(recs), "label_counts": dict(sorted(counts.items()))})
    return out


def occurrences(rows: list[dict]) -> dict[str, dict[str, list[tuple[int, str]]]]:
    """word → UPOS → [(sentence index, sentence)] for words that occur once in their sentence."""
    found = collections.defaultdict(lambda: collections.defaultdict(list))
    for index, row in enumerate(rows):
        lowered = [t.lower() for t in row["tokens"]]
        counts = collections.Counter(lowered)
        for position, (word, tag) in enumerate(zip(lowered, row["tags"])):
            if counts[word] == 1 and any(c.isalpha() for c in word):
                window = row["tokens"][max(0, position - WINDOW):position + WINDOW + 1]
                found[word][tag].append((index, " ".join(window)))
    return found


def wic_file(rows: list[dict], total: int, split: str) -> tuple[bytes, dict]:
    rng = random.Random(SEED)
    found = occurrences(rows)
    words = sorted(w for w, tags in found.items()
                   if sum(len(v) >= MIN_PER_TAG[split] for v in tags.values()) >= 2)
    rng.shuffle(words)
    uses = collections.Counter()
    per_word = {}
    for word in words:
        tags = {t: v for t, v in sorted(found[word].items()) if len(v) >= MIN_PER_TAG[split]}
        same = [(a, b) for v in tags.values() for i, a in enumerate(v) for b in v[i + 1:]]
        different = [(a, b) for t1 in tags for t2 in tags if t1 < t2 for a in tags[t1] for b in tags[t2]]
        rng.shuffle(same)
        rng.shuffle(different)
        per_word[word] = {"same": same, "different": different}
    records, taken = [], collections.Counter()
    while len(records) < total:
        added = False
        for word in words:
            if taken[word] >= PAIRS_PER_WORD[split] or len(records) >= total:
                continue
            picks = []
            for label in ("same", "different"):
                pool = per_word[word][label]
                while pool and any(uses[o[0]] >= USES_PER_OCCURRENCE for o in pool[-1]):
                    pool.pop()
                if not pool:
                    break
                picks.append((label, pool.pop()))
            if len(picks) < 2:  # this word cannot give one more balanced pair of pairs
                taken[word] = PAIRS_PER_WORD[split]
                continue
            for label, (a, b) in picks:
                uses.update([a[0], b[0]])
                first, second = (a, b) if rng.random() < 0.5 else (b, a)
                records.append({"sentence1": first[1], "sentence2": second[1], "label": label, "word": word})
            taken[word] += 1
            added = True
        if not added:
            break
    records = records[:total - total % 2]
    rng.shuffle(records)
    counts = collections.Counter(r["label"] for r in records)
    return jsonl(records), {"examples": len(records), "label_counts": dict(sorted(counts.items())),
                            "words": len({r["word"] for r in records})}


def build(data_dir: Path) -> dict[str, bytes]:
    files, info = {}, {}
    for split, name in EWT_FILES.items():
        rows = candidates(data_dir / "ud_english_ewt" / name)
        for task, make in (("shift", lambda r, split=split: shift_file(r, SHIFT_SIZES[split])),
                           ("wic", lambda r, split=split: wic_file(r, WIC_SIZES[split], split))):
            data, counts = make(rows)
            files[f"{task}.{split}.jsonl"] = data
            info[f"{task}.{split}.jsonl"] = dict(counts, source=f"ud_english_ewt/{name}", license=LICENSE,
                                                 sha256=hashlib.sha256(data).hexdigest())
        for task, (data, counts) in order_files(rows, ORDER_SIZES[split]).items():
            files[f"{task}.{split}.jsonl"] = data
            info[f"{task}.{split}.jsonl"] = dict(counts, source=f"ud_english_ewt/{name}", license=LICENSE,
                                                 sha256=hashlib.sha256(data).hexdigest())
    files["manifest.json"] = (json.dumps({"files": info}, indent=2) + "\n").encode("utf-8")
    return files


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--output-dir", type=Path, default=DEFAULT_OUTPUT_DIR)
    args = parser.parse_args(argv)
    missing = [n for n in EWT_FILES.values() if not (args.data_dir / "ud_english_ewt" / n).is_file()]
    if missing:
        parser.exit(2, f"error: {args.data_dir / 'ud_english_ewt'} lacks {', '.join(missing)}\n")
    files = build(args.data_dir)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (args.output_dir / name).write_bytes(data)
    for name, entry in json.loads(files["manifest.json"])["files"].items():
        print(f"  {name}: {entry['examples']:,} examples, labels {entry['label_counts']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
