"""Build the embedded extractive-QA sample (``hf_lineage/samples/qa/qa.{train,validation}.jsonl``): SQuAD 2.0-style
questions generated from E2E NLG meaning representations, answered by spans of the human reference.

A developer tool, not part of the package: it reads the package's own E2E generation sample (no shared data) and
(re)writes both files; the package only reads the written files (``hf_lineage.samples.path("qa", ...)``).

    python scripts/make_qa_samples.py                       # rewrites hf_lineage/samples/qa/
    python scripts/make_qa_samples.py --output-dir /tmp/qa

Source: the E2E generation sample the package already ships (``hf_lineage/samples/lineage/generation.*.csv``:
E2E ``devset.csv``, MR and reference tokenized like WikiText, split by MR), so train and validation share no MR;
the 5 validation references that also occur (word for word, under an MR differing only in ``familyFriendly``) in
the training file are left out, so no passage is in both.
For every reference and every slot of the MR that a question template below covers:

* the slot is in the MR and its value occurs exactly once in the reference, as whole tokens: an answerable
  question whose answer is that span (``answer_start`` its character offset);
* the slot is in the MR but its value does not occur in the reference (paraphrased, left out) or occurs twice
  (e.g. "high" as both price and rating): no question — the reference may still answer it in other words;
* the slot is not in the MR: an unanswerable question (empty ``answers``), as SQuAD 2.0 has them. E2E references
  say what their MR says, so the passage does not hold the answer.

``familyFriendly`` (yes/no, not a span) is not asked. Questions name the venue (``What kind of food does The Eagle
serve ?``), tokenized like the references. From the candidates, ``ANSWERABLE`` answerable and ``UNANSWERABLE``
unanswerable questions per split are drawn (``random.Random(SEED)``, in shuffled order), a third unanswerable as in
SQuAD 2.0's training set. Each line: ``{"id", "title" (the venue), "slot", "question", "context",
"answers": {"text": [...], "answer_start": [...]}}``, the flat format of Hugging Face's ``squad_v2``.

License: CC BY-SA 4.0, as E2E (an adaptation: questions written from the MRs, references unchanged); see
``hf_lineage/samples/qa/README.md``. Re-running the script rewrites the files byte for byte the same.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing the package
from hf_lineage import samples as _samples  # noqa: E402

SAMPLES = _samples.QA
E2E_SAMPLES = _samples.LINEAGE
SPLITS = ("train", "validation")
SEED = 0
ANSWERABLE = {"train": 2000, "validation": 400}
UNANSWERABLE = {"train": 1000, "validation": 200}
# slot -> question about the venue ``{name}`` (``{eatType}``: the venue's type, or "place").
QUESTIONS = {
    "name": "What is the name of the {eatType} ?",
    "eatType": "What kind of place is {name} ?",
    "food": "What kind of food does {name} serve ?",
    "priceRange": "What is the price range of {name} ?",
    "customer rating": "What is the customer rating of {name} ?",
    "area": "In which area is {name} ?",
    "near": "What is {name} near ?",
}
SLOT = re.compile(r"([A-Za-z][A-Za-z ]*?) \[ (.*?) \]")


def parse_mr(mr: str) -> dict[str, str]:
    """``name [ The Eagle ] , food [ French ]`` -> ``{"name": "The Eagle", "food": "French"}``."""
    return {slot.strip(): value for slot, value in SLOT.findall(mr)}


def find_span(value: str, text: str) -> list[int]:
    """Character offsets of every occurrence of ``value`` in ``text`` as whole space-separated tokens."""
    padded = f" {text} "
    return [m.start() for m in re.finditer(f"(?= {re.escape(value)} )", padded)]


def candidates(mr: str, reference: str) -> list[dict]:
    """The questions one reference answers (or cannot answer) about its MR, in ``QUESTIONS`` order."""
    slots = parse_mr(mr)
    name = slots.get("name")
    if name is None:
        return []
    out = []
    for slot, template in QUESTIONS.items():
        question = template.format(name=name, eatType=slots.get("eatType", "place"))
        if slot not in slots:
            out.append({"title": name, "slot": slot, "question": question, "context": reference,
                        "answers": {"text": [], "answer_start": []}})
            continue
        starts = find_span(slots[slot], reference)
        if len(starts) == 1:
            out.append({"title": name, "slot": slot, "question": question, "context": reference,
                        "answers": {"text": [slots[slot]], "answer_start": starts}})
    return out


def build(split: str, source_dir: Path = E2E_SAMPLES) -> list[dict]:
    """The sample of one split, as written to ``qa.<split>.jsonl``."""
    with open(source_dir / f"generation.{split}.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    if split != "train":  # a few references occur under an MR of each split (differing in familyFriendly only)
        with open(source_dir / "generation.train.csv", encoding="utf-8", newline="") as f:
            seen = {row["ref"] for row in csv.DictReader(f)}
        rows = [row for row in rows if row["ref"] not in seen]
    answerable, unanswerable = [], []
    for row in rows:
        for candidate in candidates(row["mr"], row["ref"]):
            (answerable if candidate["answers"]["text"] else unanswerable).append(candidate)
    rng = random.Random(SEED)
    chosen = rng.sample(answerable, ANSWERABLE[split]) + rng.sample(unanswerable, UNANSWERABLE[split])
    rng.shuffle(chosen)
    return [{"id": f"e2e-qa-{split}-{i:05d}", **example} for i, example in enumerate(chosen)]


def write(output_dir: Path = SAMPLES, source_dir: Path = E2E_SAMPLES) -> list[Path]:
    output_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for split in SPLITS:
        path = output_dir / f"qa.{split}.jsonl"
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(json.dumps(example, ensure_ascii=False) + "\n" for example in build(split, source_dir))
        written.append(path)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", type=Path, default=SAMPLES)
    args = parser.parse_args(argv)
    for path in write(args.output_dir):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
