"""Build the probing sample that ``hf-lineage analyze probes`` runs on: ``hf_lineage/samples/analysis/``.

A developer tool, not part of the package: it reads UD English EWT (CC BY-SA 4.0) from the shared data folder and
(re)writes ``probing.train.jsonl``, ``probing.validation.jsonl``, ``agreement.train.jsonl``,
``agreement.validation.jsonl`` and their ``README.md``. The package only reads the written files. Running it twice
writes byte-identical files (a fixed seed, file order, fixed serialisation).

    python scripts/make_probing_samples.py
    python scripts/make_probing_samples.py --data-dir /work/shared/data --output-dir /tmp/probing

Each line is one sentence: ``{"tokens": [...], "upos": [...], "number": [[i, "Sing"], ...], "tense": [[i,
"Past"], ...], "depth": 4, "root_dependents": "nsubj aux VERB obj"}``. ``tokens`` and ``upos`` are EWT's
syntactic words and UPOS tags as ``hf_lineage.data.readers.read_conllu`` returns them; ``number`` and ``tense`` list
only the words that carry the property, as (word position, value):

* ``number``: nouns (UPOS ``NOUN``) whose FEATS has ``Number=Sing`` or ``Number=Plur``;
* ``tense``: finite verbs and auxiliaries (UPOS ``VERB``/``AUX`` with ``VerbForm=Fin``) with ``Tense=Past`` or
  ``Tense=Pres`` (participles, which EWT also marks with ``Tense``, are left out: their "tense" is their form).

and two sentence-level fields from the dependency tree (the sentence's length is ``len(tokens)``):

* ``depth``: the words on the longest path from the root down to a leaf (a one-word sentence: 1) — the dependency
  tree's depth, Conneau et al.'s (2018) TreeDepth measured on UD trees;
* ``root_dependents``: the root's UPOS and its core dependents' relations (``CORE_RELATIONS``, subtypes dropped:
  ``nsubj:pass`` → ``nsubj``), in sentence order — UD has no constituency trees, so this stands in for Conneau et
  al.'s TopConst (the constituents right below S: "NP VP ." ≈ "nsubj VERB").

``agreement.{split}.jsonl`` holds subject-verb agreement across an attractor (Linzen et al., 2016): every sentence
of EWT's train split (``agreement.train``) or of its dev and test splits (``agreement.validation``: dev alone has 60
items) with at least one item, in file order, a repeated word sequence once. Each line is ``{"tokens": [...],
"items": [{"verb": i, "number": "Sing"|"Plur", "subject": j, "attractor": k, "attractor_number": ...}, ...]}``. An
item is a finite verb or auxiliary marked ``Number=Sing|Plur`` whose subject (``nsubj``/``nsubj:pass`` of the verb,
or of the word a copula or auxiliary depends on: "the keys ... are red" has nsubj(red, keys)) is a noun with the
same ``Number`` before it, with at least one noun (``number`` above) between them; ``attractor`` is the intervening
noun nearest the verb. The attractor *mismatches* when its number differs from the subject's: there the heuristic
"agree with the nearest noun" fails. Items whose verb and subject disagree in EWT (collective nouns, typos) are
left out.

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
AGREEMENT_SOURCES = {"train": ("en_ewt-ud-train.conllu",), "validation": ("en_ewt-ud-dev.conllu",
                                                                         "en_ewt-ud-test.conllu")}
MIN_WORDS, MAX_WORDS = 3, 40
NUMBER_VALUES = ("Sing", "Plur")
TENSE_VALUES = ("Past", "Pres")
# The root's dependents that shape a clause: arguments and the verb group; modifiers, punctuation and the like are
# left out (with them, the 20 most frequent sequences cover 18 % of EWT's sentences; without, 78 %).
CORE_RELATIONS = ("nsubj", "obj", "iobj", "csubj", "ccomp", "xcomp", "aux", "cop", "expl")
SUBJECT_RELATIONS = ("nsubj", "nsubj:pass")


def parse_feats(feats: str) -> dict[str, str]:
    """CoNLL-U FEATS (``Number=Plur|Person=3`` or ``_``) → {feature: value}."""
    return dict(pair.split("=", 1) for pair in feats.split("|")) if feats != "_" else {}


def number_of(upos: str, feats: dict) -> str | None:
    return feats.get("Number") if upos == "NOUN" and feats.get("Number") in NUMBER_VALUES else None


def tense_of(upos: str, feats: dict) -> str | None:
    finite = upos in ("VERB", "AUX") and feats.get("VerbForm") == "Fin"
    return feats.get("Tense") if finite and feats.get("Tense") in TENSE_VALUES else None


def tree_depth(heads: list[int]) -> int:
    """Words on the longest root-to-leaf path of a dependency tree; ``heads`` are CoNLL-U HEADs (1-based, 0: root)."""
    deepest = 0
    for word in range(len(heads)):
        depth = 1
        while heads[word]:
            word, depth = heads[word] - 1, depth + 1
            if depth > len(heads):
                raise ValueError(f"the heads {heads} do not form a tree")
        deepest = max(deepest, depth)
    return deepest


def root_dependents(upos: list[str], heads: list[int], deprels: list[str]) -> str:
    """The root's UPOS and its ``CORE_RELATIONS`` dependents' relations, in sentence order: "nsubj aux VERB obj"."""
    root = heads.index(0)
    relations = [deprel.split(":")[0] for deprel in deprels]
    return " ".join(upos[i] if i == root else relations[i] for i in range(len(heads))
                    if i == root or (heads[i] == root + 1 and relations[i] in CORE_RELATIONS))


def agreement_items(upos: list[str], feats: list[dict], heads: list[int], deprels: list[str]) -> list[dict]:
    """Subject-verb agreement items with a noun between subject and verb (the module docstring says which)."""
    numbers = [number_of(tag, f) for tag, f in zip(upos, feats)]
    items = []
    for verb, (tag, f) in enumerate(zip(upos, feats)):
        if tag not in ("VERB", "AUX") or f.get("VerbForm") != "Fin" or f.get("Number") not in NUMBER_VALUES:
            continue
        # A copula or auxiliary agrees with the subject of the word it depends on.
        governor = heads[verb] - 1 if deprels[verb] in ("cop", "aux", "aux:pass") else verb
        subjects = [i for i in range(verb) if heads[i] == governor + 1 and deprels[i] in SUBJECT_RELATIONS
                    and numbers[i]]
        if not subjects or numbers[subjects[-1]] != f["Number"]:
            continue
        subject = subjects[-1]
        between = [k for k in range(subject + 1, verb) if numbers[k]]
        if between:
            items.append({"verb": verb, "number": f["Number"], "subject": subject, "attractor": between[-1],
                          "attractor_number": numbers[between[-1]]})
    return items


def sentence_record(tokens: list[str], upos: list[str], feats: list[str], heads: list[int],
                    deprels: list[str]) -> dict:
    parsed = [parse_feats(f) for f in feats]
    labelled = {"number": number_of, "tense": tense_of}
    record = {"tokens": tokens, "upos": upos}
    for name, label_of in labelled.items():
        record[name] = [[i, label] for i, (tag, f) in enumerate(zip(upos, parsed))
                        if (label := label_of(tag, f)) is not None]
    record["depth"] = tree_depth(heads)
    record["root_dependents"] = root_dependents(upos, heads, deprels)
    return record


def treebank(path: Path) -> list[tuple]:
    """Every sentence of a CoNLL-U file as (tokens, upos, feats, heads, deprels)."""
    columns = [read_conllu(path, column=name) for name in ("upos", "feats", "head", "deprel")]
    return [(list(upos["tokens"]), upos["tags"], feats["tags"], [int(h) for h in heads["tags"]], deprels["tags"])
            for upos, feats, heads, deprels in zip(*columns)]


def candidates(path: Path) -> list[dict]:
    seen, records = set(), []
    for tokens, *tree in treebank(path):
        if MIN_WORDS <= len(tokens) <= MAX_WORDS and tuple(tokens) not in seen:
            seen.add(tuple(tokens))
            records.append(sentence_record(tokens, *tree))
    return records


def agreement_sentences(paths: list[Path]) -> list[dict]:
    seen, records = set(), []
    for path in paths:
        for tokens, upos, feats, heads, deprels in treebank(path):
            items = agreement_items(upos, [parse_feats(f) for f in feats], heads, deprels)
            if items and tuple(tokens) not in seen:
                seen.add(tuple(tokens))
                records.append({"tokens": tokens, "items": items})
    return records


def counts(records: list[dict]) -> dict:
    words = sum(len(r["tokens"]) for r in records)
    summary = {"sentences": len(records), "words": words}
    for name in ("number", "tense"):
        summary[name] = dict(sorted(collections.Counter(label for r in records for _, label in r[name]).items()))
    summary["depth"] = dict(sorted(collections.Counter(r["depth"] for r in records).items()))
    summary["root_dependents"] = len({r["root_dependents"] for r in records})
    return summary


def agreement_counts(records: list[dict]) -> dict:
    items = [item for r in records for item in r["items"]]
    return {"sentences": len(records), "items": len(items),
            "number": dict(sorted(collections.Counter(item["number"] for item in items).items())),
            "mismatched": sum(item["attractor_number"] != item["number"] for item in items)}


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
`tense` the finite verbs and auxiliaries (VerbForm=Fin) and their `Tense` feature. Each line also has `depth` (the
words on the longest root-to-leaf path of its dependency tree) and `root_dependents` (the root's UPOS and its core
dependents' relations in order, a dependency stand-in for Conneau et al.'s top constituents).

`agreement.train.jsonl` (from `en_ewt-ud-train.conllu`) and `agreement.validation.jsonl` (from `en_ewt-ud-dev.conllu`
and `en_ewt-ud-test.conllu`: dev alone has too few items) hold subject-verb agreement across an attractor (Linzen et
al. 2016): `{{"tokens": [...], "items": [{{"verb": i, "number": "Sing"|"Plur", "subject": j, "attractor": k,
"attractor_number": ...}}, ...]}}`, every sentence with a finite verb marked for Number, its noun subject before it
with the same Number, and at least one noun between them (`attractor`: the one nearest the verb).

**Counts** (sentences {min_words} to {max_words} words, drawn with `random.Random(0)`):

| file | sentences | words | number (nouns) | tense (finite verbs) | depth | root_dependents sequences |
|---|---|---|---|---|---|---|
{rows}

| file | sentences | items | verb number | attractor number differs from the subject's |
|---|---|---|---|---|
{agreement_rows}
"""


def readme(summaries: dict, agreement: dict) -> str:
    def labels(counted):
        return ", ".join(f"{label} {n}" for label, n in counted.items())

    rows = "\n".join(f"| probing.{split}.jsonl | {s['sentences']} | {s['words']} | {labels(s['number'])} | "
                     f"{labels(s['tense'])} | {labels(s['depth'])} | {s['root_dependents']} |"
                     for split, s in summaries.items())
    agreement_rows = "\n".join(f"| agreement.{split}.jsonl | {a['sentences']} | {a['items']} | "
                               f"{labels(a['number'])} | {a['mismatched']} |" for split, a in agreement.items())
    return README.format(min_words=MIN_WORDS, max_words=MAX_WORDS, rows=rows, agreement_rows=agreement_rows)


def write_jsonl(path: Path, records: list[dict]) -> None:
    lines = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)
    path.write_text(lines, encoding="utf-8")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--output-dir", type=Path, default=ROOT / "hf_lineage" / "samples" / "analysis")
    args = parser.parse_args(argv)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    source = args.data_dir / "ud_english_ewt"
    summaries, agreement = {}, {}
    for split, n in SENTENCES.items():
        records = random.Random(0).sample(candidates(source / SOURCES[split]), n)
        write_jsonl(args.output_dir / f"probing.{split}.jsonl", records)
        summaries[split] = counts(records)
        records = agreement_sentences([source / name for name in AGREEMENT_SOURCES[split]])
        write_jsonl(args.output_dir / f"agreement.{split}.jsonl", records)
        agreement[split] = agreement_counts(records)
    (args.output_dir / "README.md").write_text(readme(summaries, agreement), encoding="utf-8")
    print(json.dumps({"probing": summaries, "agreement": agreement}, indent=1))


if __name__ == "__main__":
    main()
