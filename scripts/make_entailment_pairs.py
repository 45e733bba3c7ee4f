"""Build the single-slot entailment pairs that docs/lineage.md tried as the lineage's pair task (and set aside).

A developer tool, like ``make_lineage_samples.py`` (whose helpers and split it reuses): from E2E's
``testset_w_refs.csv``, with the pairs sample's split by meaning representation (MR), each example is a reference
(premise) and one templated statement about one slot of an MR (hypothesis), labelled ``entailment`` when the value is
the premise's MR's and ``not_entailment`` when it is another value of the same slot. Every hypothesis text is half
entailed and half not in each file, so the hypothesis alone says nothing. E2E references sometimes leave a slot out,
so some ``entailment`` labels are noisy. Deterministic (seed 0). Output: ``pairs.{train,validation}.jsonl`` in the
columns the sentence-pair recipe reads, for ``hf-lineage lineage --task-data pairs TRAIN VALIDATION``.

    python scripts/make_entailment_pairs.py --output-dir /tmp/entailment
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_lineage_samples as samples  # noqa: E402

SIZES = {"train": 4000, "validation": 1200}
TEMPLATES = {"food": "It serves {} food .", "area": "It is in the {} area .", "priceRange": "Its price range is {} .",
             "customer rating": "Its customer rating is {} .", "eatType": "It is a {} .", "near": "It is near {} ."}


def slots(mr: str) -> dict[str, str]:
    return dict(re.findall(r"(\w[\w ]*?)\[(.*?)\]", mr))


def hypothesis(slot: str, value: str) -> str:
    if slot == "familyFriendly":
        return "It is family friendly ." if value == "yes" else "It is not family friendly ."
    return TEMPLATES[slot].format(samples.tokenize_like_wikitext(value))


def records(mr_ids, mrs, refs, values, total, rng) -> list[dict]:
    candidates = collections.defaultdict(lambda: {"entailment": [], "not_entailment": []})
    for i in mr_ids:
        for ref in dict.fromkeys(refs[i]):
            premise = samples.tokenize_like_wikitext(ref)
            for slot, value in slots(mrs[i]).items():
                if slot in TEMPLATES or slot == "familyFriendly":
                    for other in sorted(values[slot]):
                        label = "entailment" if other == value else "not_entailment"
                        candidates[hypothesis(slot, other)][label].append((premise, i))
    for text in sorted(candidates):  # sorted: the draw must not depend on the order slots were met
        for examples in candidates[text].values():
            rng.shuffle(examples)
    out = []
    while len(out) < total:  # round robin over hypotheses, one entailed and one not each time: balanced per text
        grew = False
        for text in sorted(candidates):
            yes, no = candidates[text]["entailment"], candidates[text]["not_entailment"]
            if yes and no and len(out) < total:
                for label, examples in (("entailment", yes), ("not_entailment", no)):
                    premise, i = examples.pop()
                    out.append({"sentence1": premise, "sentence2": text, "label": label, "mr_ids": [i]})
                grew = True
        if not grew:
            break
    rng.shuffle(out)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=samples.DEFAULT_DATA_DIR)
    parser.add_argument("--output-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    mrs, refs = samples.e2e_mrs(args.data_dir / "e2e_nlg" / "testset_w_refs.csv")
    values = collections.defaultdict(set)
    for mr in mrs:
        for slot, value in slots(mr).items():
            values[slot].add(value)
    rng = random.Random(samples.SEED)
    split = samples.pairs_split(len(mrs), rng)  # the pairs sample's split: the same MRs held out
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for name, total in SIZES.items():
        rows = records(split[name], mrs, refs, values, total, rng)
        with open(args.output_dir / f"pairs.{name}.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        print(f"{name}: {len(rows)} pairs, {collections.Counter(r['label'] for r in rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
