"""Build the intent-and-slots sample (``hf_lineage/samples/slots/slots.{train,validation}.jsonl``), derived from the
E2E NLG references embedded for ``hf-lineage lineage``
(``hf_lineage/samples/lineage/generation.{train,validation}.csv``, CC BY-SA 4.0), deterministically: re-running the
script rewrites the files byte for byte.

A developer tool, not part of the package: it reads the package's own E2E generation sample (no shared data) and
(re)writes the files and their ``manifest.json``; the package only reads the written files.

    python scripts/make_slots_samples.py                    # rewrites hf_lineage/samples/slots/
    python scripts/make_slots_samples.py --check            # compares instead of writing

E2E pairs a meaning representation (MR: ``name [ The Eagle ] , eatType [ coffee shop ] , familyFriendly [ yes ]``)
with a crowd-sourced reference text. Most MR values are written verbatim in the reference, so the reference is an
utterance whose slots are those values:

* **slots**: every occurrence of an MR value in the reference (compared case-insensitively, word by word) is tagged
  BIO with its attribute: ``B-name I-name``, ``B-food``, ``B-customer_rating I-customer_rating ...``, and the other
  words ``O``. The attributes tagged are name, eatType, food, priceRange, customer rating, area and near.
* **intent**: the MR's ``familyFriendly`` value, the one E2E attribute that is never written as a span (``family
  friendly``, ``kid @-@ friendly``, ``not a place for children`` ...): ``family_friendly`` (yes),
  ``not_family_friendly`` (no) or ``not_mentioned`` (no familyFriendly in the MR). It is an utterance-level label
  read from the whole sentence (negation included), not a user's intent as in ATIS or SNIPS.

Kept: references where the tags are reliable — every tagged attribute's value occurs verbatim (so no value is
paraphrased and silently tagged ``O``), no two attributes share a value (``high`` as price and rating), no two
values' occurrences overlap, and the reference mentions families or children (``famil*``, ``kid*``, ``child*``)
exactly when the MR has a familyFriendly value. A text that occurs more than once is kept once (dropped if its
copies disagree). Train is a uniform sample (seed 0, shuffled) of the kept ``generation.train.csv`` references;
validation every kept ``generation.validation.csv`` reference (shuffled): the two CSV files share no MR, so neither
do the two samples.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing the package
from hf_lineage import samples as _samples  # noqa: E402

SOURCE = _samples.LINEAGE
OUTPUT = _samples.SLOTS
SPLITS = {"train": "generation.train.csv", "validation": "generation.validation.csv"}
TRAIN_SIZE = 1000
SEED = 0
INTENTS = {"yes": "family_friendly", "no": "not_family_friendly", None: "not_mentioned"}
FAMILY_WORD = re.compile(r"^(famil|kid|child)", re.IGNORECASE)
MR_SLOT = re.compile(r"(\w[\w ]*?) \[ (.*?) \]")


def mr_slots(mr: str) -> dict[str, str]:
    """``name [ The Eagle ] , customer rating [ high ]`` → {"name": "The Eagle", "customer rating": "high"}."""
    return dict(MR_SLOT.findall(mr))


def tag_name(attribute: str) -> str:
    return attribute.replace(" ", "_")


def utterance(mr: str, reference: str) -> dict | None:
    """The reference as ``{"words", "slots", "intent"}``, or None when its tags would not be reliable (the module
    docstring's rules)."""
    slots = mr_slots(mr)
    words = reference.split()
    lowered = [w.lower() for w in words]
    family = slots.pop("familyFriendly", None)
    if family not in INTENTS:
        return None
    if any(FAMILY_WORD.match(w) for w in words) != (family is not None):
        return None
    values = {attribute: value.lower().split() for attribute, value in slots.items()}
    if len({tuple(v) for v in values.values()}) != len(values):
        return None  # two attributes with one value: which is which is not in the text
    tags = ["O"] * len(words)
    for attribute, value in values.items():
        starts = [i for i in range(len(words) - len(value) + 1) if lowered[i:i + len(value)] == value]
        if not starts:
            return None
        for start in starts:
            span = range(start, start + len(value))
            if any(tags[i] != "O" for i in span):
                return None  # overlapping values
            for i in span:
                tags[i] = ("B-" if i == start else "I-") + tag_name(attribute)
    return {"words": words, "slots": tags, "intent": INTENTS[family]}


def candidates(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    by_text: dict[tuple, list[dict]] = {}
    for row in rows:
        record = utterance(row["mr"], row["ref"])
        if record is not None:
            by_text.setdefault(tuple(record["words"]), []).append(record)
    # One copy of a repeated text; none when the copies disagree (two MRs behind one text).
    return [copies[0] for copies in by_text.values() if all(c == copies[0] for c in copies)]


def jsonl(records: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def build(source: Path = SOURCE) -> dict[str, bytes]:
    """Every file's bytes by name: ``slots.train.jsonl``, ``slots.validation.jsonl``, ``manifest.json``."""
    rng = random.Random(SEED)
    files, manifest = {}, {"files": {}, "task": "intent_and_slots", "intents": sorted(set(INTENTS.values())),
                           "metrics": ["intent_accuracy", "slot_f1", "exact_match"]}
    for split, name in SPLITS.items():
        kept = candidates(source / name)
        records = rng.sample(kept, min(TRAIN_SIZE, len(kept))) if split == "train" else rng.sample(kept, len(kept))
        data = jsonl(records)
        out = f"slots.{split}.jsonl"
        files[out] = data
        intents = Counter(r["intent"] for r in records)
        tags = Counter(t[2:] for r in records for t in r["slots"] if t.startswith("B-"))
        manifest["files"][out] = {
            "split": split, "examples": len(records), "candidates": len(kept),
            "words": sum(len(r["words"]) for r in records),
            "intent_counts": dict(sorted(intents.items())),
            "majority_share": round(max(intents.values()) / len(records), 4),
            "slot_counts": dict(sorted(tags.items())),
            "source": f"hf_lineage/samples/lineage/{name} (E2E NLG devset.csv)",
            "license": "CC BY-SA 4.0",
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    files["manifest.json"] = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    return files


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="compare with the files there instead of writing")
    args = parser.parse_args(argv)
    files = build()
    if args.check:
        differ = [n for n, data in files.items() if not (args.output_dir / n).is_file()
                  or (args.output_dir / n).read_bytes() != data]
        print("differ: " + ", ".join(differ) if differ else "identical")
        return 1 if differ else 0
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (args.output_dir / name).write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
