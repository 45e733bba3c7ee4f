"""Task data for the recipe tests in the formats people download, from what ships with the repository, so the tests
need no ../shared/data: the hand-written CoNLL-2003 and TREC files in ``tests/fixtures/task_data/`` (Apache-2.0) and,
for the other formats, files written here from the package's embedded samples (UD English EWT and E2E NLG,
CC BY-SA 4.0; ``hf_lineage/samples/lineage/README.md``). Both READMEs give the details."""

import csv
import json
from pathlib import Path

from conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "task_data"
SAMPLES = REPO / "hf_lineage" / "samples" / "lineage"


def _jsonl(name, n=None):
    with open(SAMPLES / name, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return rows if n is None else rows[:n]


def _e2e_rows(name):
    with open(SAMPLES / name, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _write(path: Path, lines, bom=False) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(("\ufeff" if bom else "") + "".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def build_task_data(root: Path) -> dict[str, str]:
    """Writes the files under ``root``; returns their paths by the names the recipe tests use."""
    files = {"conll_train": str(FIXTURES / "conll2003" / "train.txt"),
             "conll_valid": str(FIXTURES / "conll2003" / "valid.txt"),
             "trec_train": str(FIXTURES / "trec" / "train.label"), "trec_test": str(FIXTURES / "trec" / "test.label")}

    # SST-2's GLUE TSV (sentence, label 0/1) from the E2E family-friendly references: yes → 1, no → 0.
    binary = [r for r in _jsonl("classification.train.jsonl") if r["label"] in ("yes", "no")]
    sst2 = [f"{r['sentence']}\t{int(r['label'] == 'yes')}" for r in binary]
    files["sst2_train"] = _write(root / "sst2" / "train.tsv", ["sentence\tlabel", *sst2[:40]])
    files["sst2_valid"] = _write(root / "sst2" / "dev.tsv", ["sentence\tlabel", *sst2[40:56]])
    unlabelled = [f"{i}\t{r['sentence']}" for i, r in enumerate(binary[56:64])]  # GLUE's test files: index, no label
    files["sst2_test_unlabelled"] = _write(root / "sst2" / "test.tsv", ["index\tsentence", *unlabelled])

    # MRPC's GLUE TSV, byte-order mark included, from the E2E paraphrase pairs: paraphrase → 1, different → 0.
    pairs = [f"{int(r['label'] == 'paraphrase')}\t{r['mr_ids'][0]}\t{r['mr_ids'][1]}\t{r['sentence1']}\t"
             f"{r['sentence2']}" for r in _jsonl("pairs.train.jsonl", 56)]
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    files["mrpc_train"] = _write(root / "mrpc" / "train.tsv", [header, *pairs[:40]], bom=True)
    files["mrpc_valid"] = _write(root / "mrpc" / "dev.tsv", [header, *pairs[40:]], bom=True)

    # E2E's CSV (several references per meaning representation) as shipped in the samples.
    train, valid = _e2e_rows("generation.train.csv"), _e2e_rows("generation.validation.csv")
    for key, rows in (("e2e_train", train[:40]), ("e2e_valid", valid[:12])):
        path = root / f"{key}.csv"
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=["mr", "ref"])
            writer.writeheader()
            writer.writerows(rows)
        files[key] = str(path)

    # Parallel text (Multi30k's train.de / train.en layout): meaning representation → reference, the validation
    # file with 8 distinct sources (one reference each).
    first_reference = {}
    for row in valid:
        first_reference.setdefault(row["mr"], row)
    first_of_each = list(first_reference.values())[:8]
    for prefix, rows in (("train", train[:32]), ("val", first_of_each)):
        _write(root / "parallel" / f"{prefix}.mr", [r["mr"] for r in rows])
        _write(root / "parallel" / f"{prefix}.en", [r["ref"] for r in rows])
    files["parallel_train"], files["parallel_valid"] = str(root / "parallel" / "train"), str(root / "parallel" / "val")

    # CoNLL-U (UPOS) from the UD English EWT sample; lemma and the other columns left empty ("_").
    lines = []
    for i, row in enumerate(_jsonl("labeling.validation.jsonl", 80), start=1):
        lines += [f"# sent_id = sample-{i}", f"# text = {' '.join(row['tokens'])}"]
        lines += [f"{n}\t{word}\t_\t{tag}\t_\t_\t_\t_\t_\t_" for n, (word, tag) in
                  enumerate(zip(row["tokens"], row["tags"]), start=1)]
        lines.append("")
    files["conllu"] = _write(root / "ewt-sample.conllu", lines)
    return files
