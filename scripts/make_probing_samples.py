"""Build the probing sample that ``hf-lineage analyze probes`` runs on: ``hf_lineage/samples/analysis/``.

A developer tool, not part of the package: it reads UD English EWT (CC BY-SA 4.0) from the shared data folder and
(re)writes ``probing.train.jsonl``, ``probing.validation.jsonl`` and their ``README.md``. The package only reads the
written files. Running it twice writes byte-identical files (a fixed seed, file order, fixed serialisation).

    python scripts/make_probing_samples.py
    python scripts/make_probing_samples.py --data-dir /work/shared/data --output-dir /tmp/probing

Each line is one sentence: ``{"tokens": [...], "upos": [...], "number": [[i, "Sing"], ...], "tense": [[i,
"Past"], ...]}``. ``tokens`` and ``upos`` are EWT's syntactic words and UPOS tags as
``hf_lineage.data.readers.read_conllu`` returns them; ``number`` and ``tense`` list only the words that carry the
property, as (word position, value):

* ``number``: nouns (UPOS ``NOUN``) whose FEATS has ``Number=Sing`` or ``Number=Plur``;
* ``tense``: finite verbs and auxiliaries (UPOS ``VERB``/``AUX`` with ``VerbForm=Fin``) with ``Tense=Past`` or
  ``Tense=Pres`` (participles, which EWT also marks with ``Tense``, are left out: their "tense" is their form).

Train sentences come from ``en_ewt-ud-train.conllu``, validation sentences from ``en_ewt-ud-dev.conllu``. Candidates:
sentences of ``MIN_WORDS`` to ``MAX_WORDS`` words, the first occurrence of a repeated word sequence only; each file is
``random.Random(0).sample(candidates, n)`` (a random order, so the first N lines are a fair sub-sample).
"""

from __future__ import annotations

import argparse
import collections
import json
import random
from pathlib import Path

from hf_lineage.data.readers import read_conllu

ROOT = Path(__file__).resolve().parents[1]
SENTENCES = {"train": 1000, "validation": 400}
SOURCES = {"train": "en_ewt-ud-train.conllu", "validation": "en_ewt-ud-dev.conllu"}
MIN_WORDS, MAX_WORDS = 3, 40
NUMBER_VALUES = ("Sing", "Plur")
TENSE_VALUES = ("Past", "Pres")


def parse_feats(feats: str) -> dict[str, str]:
    """CoNLL-U FEATS (``Number=Plur|Person=3`` or ``_``) → {feature: value}."""
    return dict(pair.split("=", 1) for pair in feats.split("|")) if feats != "_" else {}


def number_of(upos: str, feats: dict) -> str | None:
    return feats.get("Number") if upos == "NOUN" and feats.get("Number") in NUMBER_VALUES else None


def tense_of(upos: str, feats: dict) -> str | None:
    finite = upos in ("VERB", "AUX") and feats.get("VerbForm") == "Fin"
    return feats.get("Tense") if finite and feats.get("Tense") in TENSE_VALUES else None


def sentence_record(tokens: list[str], upos: list[str], feats: list[str]) -> dict:
    parsed = [parse_feats(f) for f in feats]
    labelled = {"number": number_of, "tense": tense_of}
    record = {"tokens": tokens, "upos": upos}
    for name, label_of in labelled.items():
        record[name] = [[i, label] for i, (tag, f) in enumerate(zip(upos, parsed))
                        if (label := label_of(tag, f)) is not None]
    return record


def candidates(path: Path) -> list[dict]:
    upos, feats = read_conllu(path, column="upos"), read_conllu(path, column="feats")
    seen, records = set(), []
    for tagged, featured in zip(upos, feats):
        tokens = tuple(tagged["tokens"])
        if MIN_WORDS <= len(tokens) <= MAX_WORDS and tokens not in seen:
            seen.add(tokens)
            records.append(sentence_record(list(tokens), tagged["tags"], featured["tags"]))
    return records


def counts(records: list[dict]) -> dict:
    words = sum(len(r["tokens"]) for r in records)
    summary = {"sentences": len(records), "words": words}
    for name in ("number", "tense"):
        summary[name] = dict(sorted(collections.Counter(label for r in records for _, label in r[name]).items()))
    return summary


README = """# Probing sample (UD English EWT)

The sentences `hf-lineage analyze probes` (`hf_lineage.analysis.probes`) and the probing stage of
`hf-lineage lineage` probe models on. Written by `scripts/make_probing_samples.py` (see its docstring for how each
field is derived); do not edit by hand.

**Source:** Universal Dependencies English Web Treebank (UD_English-EWT, v2.16 commit 15d613d8), Silveira et al.
(2014), "A Gold Standard Dependency Corpus for English", LREC. `probing.train.jsonl` is drawn from
`en_ewt-ud-train.conllu`, `probing.validation.jsonl` from `en_ewt-ud-dev.conllu`.

**License:** Creative Commons Attribution-ShareAlike 4.0 International (CC BY-SA 4.0); these files are a derived
sample under the same license.

**Format:** one sentence per line, `{{"tokens": [...], "upos": [...], "number": [[position, "Sing"|"Plur"], ...],
"tense": [[position, "Past"|"Pres"], ...]}}`. `number` lists the nouns (UPOS NOUN) and their `Number` feature,
`tense` the finite verbs and auxiliaries (VerbForm=Fin) and their `Tense` feature.

**Counts** (sentences {min_words} to {max_words} words, drawn with `random.Random(0)`):

| file | sentences | words | number (nouns) | tense (finite verbs) |
|---|---|---|---|---|
{rows}
"""


def readme(summaries: dict) -> str:
    def labels(counted):
        return ", ".join(f"{label} {n}" for label, n in counted.items())

    rows = "\n".join(f"| probing.{split}.jsonl | {s['sentences']} | {s['words']} | {labels(s['number'])} | "
                     f"{labels(s['tense'])} |" for split, s in summaries.items())
    return README.format(min_words=MIN_WORDS, max_words=MAX_WORDS, rows=rows)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--output-dir", type=Path, default=ROOT / "hf_lineage" / "samples" / "analysis")
    args = parser.parse_args(argv)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    summaries = {}
    for split, n in SENTENCES.items():
        records = random.Random(0).sample(candidates(args.data_dir / "ud_english_ewt" / SOURCES[split]), n)
        lines = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)
        (args.output_dir / f"probing.{split}.jsonl").write_text(lines, encoding="utf-8")
        summaries[split] = counts(records)
    (args.output_dir / "README.md").write_text(readme(summaries), encoding="utf-8")
    print(json.dumps(summaries, indent=1))


if __name__ == "__main__":
    main()
