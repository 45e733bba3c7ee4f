"""Build the BLiMP folder of the data home: ``hf_lineage/samples/blimp/``.

BLiMP (Warstadt et al. 2020, CC BY 4.0; alexwarstadt/blimp commit 3e56b06fcabca9b30822fc66435fca6b1aa40bb1, copied
unchanged into ``../shared/data/blimp``). Writes ``published.json``: the paper's published accuracies that
``hf-lineage evaluate minimal-pairs`` shows beside its own rows, one entry per paradigm (the 67 ``UID``s of
``data/*.jsonl``), in the order of the data files:

- ``field`` and ``phenomenon``: how BLiMP's published tables group the paradigm: the phenomenon is
  ``models_summary.jsonl``'s ``linguistics_term`` (the 12 phenomena of the paper's tables), the field the data file's
  ``field`` (the same on every line) with ``/`` written ``_``. Three data files say otherwise:
  ``animate_subject_passive`` and ``animate_subject_trans`` have ``linguistics_term`` ``s-selection`` in the data and
  ``argument_structure`` in the published results, and ``principle_A_case_2`` has the field ``syntax/semantics``
  where the other binding paradigms have ``syntax_semantics``;
- ``5-gram``, ``LSTM``, ``Transformer-XL``, ``GPT-2``: ``models_summary.jsonl``'s per-paradigm ``ngram``, ``lstm``,
  ``txl`` and ``gpt2`` (the corrected numbers of the 2021 errata; the "simple LM method": a pair is right when the
  model gives the good sentence the higher total log-probability);
- ``human``: ``human_validation_summary.csv``'s ``total_mean`` (the mean rating of the grammatical choice over the
  annotators; its mean over the 67 paradigms is the paper's 88.6 %). The file's two conditions that are not among
  the 67 paradigms are left out.

Writes ``sample.jsonl`` too: ``--pairs`` (default 20) pairs of each of the 67 paradigms, drawn without replacement
by a generator seeded with ``--seed`` (default 0) and the paradigm's name (``random.Random(f"{seed}:{UID}")``, stable
across Python versions), kept in file order; each line keeps BLiMP's ``sentence_good``, ``sentence_bad``, ``field``,
``linguistics_term``, ``UID`` and ``pairID`` unchanged and drops the rest (the templates' lexical fields), so that 20
pairs a paradigm stay near 320 KB. It is the embedded sample ``hf-lineage evaluate minimal-pairs`` reads without
``--data`` and the grammar section of ``hf-lineage lineage`` scores (about 15 s for the four shipped language
models and the n-gram on a 2-core CPU; docs/lineage.md). ``manifest.json`` lists both files with their counts,
source, license and sha256. The README is written by hand. Byte-for-byte reproducible.

    python scripts/make_blimp_samples.py            # ../shared/data/blimp -> hf_lineage/samples/blimp
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BLIMP = ROOT.parent / "shared" / "data" / "blimp"
DEFAULT_OUTPUT_DIR = ROOT / "hf_lineage" / "samples" / "blimp"
MODELS = {"ngram": "5-gram", "lstm": "LSTM", "txl": "Transformer-XL", "gpt2": "GPT-2"}
SOURCE = ("BLiMP (Warstadt, Parrish, Liu, Mohananey, Peng, Wang and Bowman 2020, TACL 8), alexwarstadt/blimp "
          "commit 3e56b06fcabca9b30822fc66435fca6b1aa40bb1: raw_results/summary/models_summary.jsonl and "
          "human_validation_summary.csv")
ROWS = {
    "5-gram": "5-gram LM (KenLM), Gigaword, 3.1 B tokens",
    "LSTM": "LSTM LM (Gulordava et al. 2018), English Wikipedia, 90 M tokens",
    "Transformer-XL": "Transformer-XL, WikiText-103, 103 M tokens",
    "GPT-2": "GPT-2 (large), WebText",
    "human": "human agreement (mean rating of the grammatical sentence, BLiMP's validation)",
}


def published(blimp: Path) -> dict:
    paradigms = {}
    for path in sorted((blimp / "data").glob("*.jsonl")):
        with open(path, encoding="utf-8") as f:
            first = json.loads(f.readline())
        paradigms[first["UID"]] = {"field": first["field"].replace("/", "_")}
    with open(blimp / "models_summary.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["UID"] in paradigms:
                paradigms[row["UID"]].update({"phenomenon": row["linguistics_term"],
                                              **{MODELS[key]: row[key] for key in MODELS}})
    with open(blimp / "human_validation_summary.csv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            if row["Condition"] in paradigms:
                paradigms[row["Condition"]]["human"] = round(float(row["total_mean"]), 6)
    missing = [uid for uid, entry in paradigms.items() if {"phenomenon", *ROWS} - set(entry)]
    if missing:
        raise SystemExit(f"no published figures for {missing}")
    return {"source": SOURCE, "license": "CC BY 4.0", "rows": ROWS, "paradigms": paradigms}


SAMPLE_KEYS = ("sentence_good", "sentence_bad", "field", "linguistics_term", "UID", "pairID")
DEFAULT_PAIRS = 20
DEFAULT_SEED = 0


def sample_lines(blimp: Path, pairs: int, seed: int) -> list[str]:
    """``pairs`` lines of every paradigm (seeded per paradigm, in file order), BLiMP's keys of ``SAMPLE_KEYS`` only."""
    lines = []
    for path in sorted((blimp / "data").glob("*.jsonl")):
        with open(path, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        uid = rows[0]["UID"]
        if pairs > len(rows):
            raise SystemExit(f"{path}: {len(rows)} pairs, fewer than --pairs {pairs}")
        chosen = sorted(random.Random(f"{seed}:{uid}").sample(range(len(rows)), pairs))
        for i in chosen:
            row = rows[i]
            lines.append(json.dumps({key: row[key] for key in SAMPLE_KEYS}, ensure_ascii=False,
                                    separators=(",", ":")))
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blimp", type=Path, default=DEFAULT_BLIMP, help="BLiMP's repository (data/, the summaries)")
    parser.add_argument("--output-dir", type=Path, default=DEFAULT_OUTPUT_DIR)
    parser.add_argument("--pairs", type=int, default=DEFAULT_PAIRS, help="pairs per paradigm in sample.jsonl")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the sample's seed")
    args = parser.parse_args(argv)
    table = published(args.blimp)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "published.json").write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    print(f"published.json: {len(table['paradigms'])} paradigms, rows {', '.join(table['rows'])}")
    lines = sample_lines(args.blimp, args.pairs, args.seed)
    (args.output_dir / "sample.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"sample.jsonl: {len(lines):,} pairs, {args.pairs} of each paradigm (seed {args.seed})")
    files = {}
    for name in ("published.json", "sample.jsonl"):
        data = (args.output_dir / name).read_bytes()
        files[name] = {"source": "alexwarstadt/blimp commit 3e56b06fcabca9b30822fc66435fca6b1aa40bb1: " + (
            "raw_results/summary/models_summary.jsonl, human_validation_summary.csv, data/*.jsonl (first lines)"
            if name == "published.json" else "data/*.jsonl"), "license": "CC BY 4.0",
            "sha256": hashlib.sha256(data).hexdigest()}
    files["published.json"]["paradigms"] = len(table["paradigms"])
    files["sample.jsonl"].update(pairs=len(lines), paradigms=len(table["paradigms"]), pairs_per_paradigm=args.pairs,
                                 seed=args.seed, keys=list(SAMPLE_KEYS))
    manifest = {"builder": "scripts/make_blimp_samples.py", "files": files}
    (args.output_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
