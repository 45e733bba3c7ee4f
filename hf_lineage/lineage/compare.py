"""``hf-lineage lineage --compare RUN_DIR RUN_DIR ...``: finished runs side by side in one report.

Two runs of the lineage at different scales (the shipped checkpoints and the papers' own releases with
``--checkpoints published``, or ``--scale tiny`` and ``--scale small``) each decide the claims on their own; this reads
their ``results.json`` and writes one ``report.md`` (and ``comparison.json``) with, per claim, the verdict at each
scale; per task, family and regime, the main-size scores with their 95 % intervals; BLiMP per language model at each
scale beside BLiMP's published rows and the literature's figures for the very releases; and what each run's
checkpoints were (source, parameters, words seen). Nothing is recomputed: a run's numbers are the ones its own report
printed, so a verdict that differs between two columns is a difference between the runs, not between two scorings.
"""

from __future__ import annotations

import json
from pathlib import Path

from .settings import LineageError

# Published BLiMP accuracies of BERT-base scored zero-shot as ``hf-lineage evaluate minimal-pairs`` scores it: a
# port of the release that reproduces them is scored the same way (the whole BLiMP, 67,000 pairs; the lineage's
# embedded sample has 20 pairs per paradigm, so expect the sample's interval, not the digits).
LITERATURE = {
    ("bert", "PLL"): (0.842, "BERT-base, PLL (Salazar et al. 2020, Masked Language Model Scoring)"),
    ("bert", "PLL-word-l2r"): (0.847, "BERT-base, PLL-word-l2r (Kauf & Ivanova 2023, A Better Way to Do Masked "
                                      "Language Model Scoring)"),
}


def read_run(folder) -> dict:
    """A finished run's ``results.json``; a LineageError naming the folder when there is none."""
    path = Path(folder) / "results.json"
    if not path.is_file():
        raise LineageError(f"--compare: {folder} is not a finished lineage run (no results.json in it)")
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise LineageError(f"--compare: cannot read {path}: {error}") from None
    missing = [key for key in ("claims", "finetuning", "pretraining", "scale") if key not in results]
    if missing:
        raise LineageError(f"--compare: {path} lacks {', '.join(missing)}: not a report of hf-lineage lineage")
    return results


def run_name(folder, results: dict) -> str:
    sources = sorted({(record or {}).get("source") or "?" for record in results["pretraining"].values()})
    return f"{Path(folder).name} ({results['scale']}, {'/'.join(sources)})"


def _interval(score, interval) -> str:
    if score is None:
        return "–"
    return f"{score:.3f}" + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *["| " + " | ".join(row) + " |" for row in rows]]


def compare(folders: list, output_dir) -> Path:
    """Write ``output_dir/report.md`` and ``output_dir/comparison.json`` for the finished runs ``folders`` (two or
    more); returns the report's path."""
    if len(folders) < 2:
        raise LineageError("--compare needs two or more finished run folders")
    output = Path(output_dir)
    if any(output.resolve() == Path(folder).resolve() for folder in folders):
        raise LineageError(f"--compare: the output folder {output} is one of the runs compared; name another with "
                           "--output-dir")
    runs = [read_run(folder) for folder in folders]  # every run checked before anything is written
    names = [run_name(folder, results) for folder, results in zip(folders, runs)]
    lines = ["# The lineage at several scales", "",
             "Finished runs of `hf-lineage lineage` side by side (`hf-lineage lineage --compare`); each column is one "
             "run's own numbers, as its report printed them. A verdict that changes between columns changes with "
             "the checkpoints (their size, data and budget), not with the scoring.", ""]

    lines += ["## Runs", ""]
    families = _union([list(results["pretraining"]) for results in runs])
    rows = []
    for name, results in zip(names, runs):
        rows.append([name, f"`{results.get('command', '?')}`", str(results.get("seeds")),
                     *[_checkpoint(results["pretraining"].get(family)) for family in families]])
    lines += _table(["run", "command", "seeds", *families], rows) + [
        "", "Each family's cell: its source, parameters and the words its pretraining saw (– : not recorded).", ""]

    lines += ["## Claims", ""]
    claims = _union([[claim["id"] for claim in results["claims"]] for results in runs])
    texts = {claim["id"]: claim["claim"] for results in runs for claim in results["claims"]}
    verdicts = [{claim["id"]: claim["verdict"] for claim in results["claims"]} for results in runs]
    lines += _table(["claim", *names], [[texts[claim], *[by_run.get(claim, "not run") for by_run in verdicts]]
                                        for claim in claims]) + [""]

    lines += ["## Scores at the main size", ""]
    keys = _union([[(cell["task"], cell["family"], cell["variant"]) for cell in results["finetuning"]
                    if cell.get("main")] for results in runs])
    cells = [{(cell["task"], cell["family"], cell["variant"]): cell for cell in results["finetuning"]
              if cell.get("main")} for results in runs]
    rows = []
    for key in keys:
        row = [*key]
        for by_key in cells:
            cell = by_key.get(key)
            row.append("not run" if cell is None else (_interval(cell.get("score"), cell.get("interval"))
                                                       if cell.get("status") == "ok" else cell.get("status", "?")))
        rows.append(row)
    lines += _table(["task", "family", "regime", *names], rows) + [
        "", "Validation scores with their 95 % intervals (seeds and validation units bootstrapped, as in each run's "
        "report).", ""]

    blimps = [((results.get("zero_shot") or {}).get("blimp") or {}) for results in runs]
    if any(blimp.get("systems") for blimp in blimps):
        lines += ["## BLiMP, zero-shot", ""]
        systems = _union([list(blimp.get("systems", {})) for blimp in blimps])
        rows = []
        for system in systems:
            row = [system]
            for blimp in blimps:
                scored = blimp.get("systems", {}).get(system)
                overall = (scored or {}).get("overall") or {}
                row.append(_interval(overall.get("accuracy"), [overall["low"], overall["high"]]
                                     if "low" in overall else None) if scored else "not run")
            rows.append(row)
        published = next((blimp["published"] for blimp in blimps if blimp.get("published")), None)
        for row_name, accuracy in ((published or {}).get("overall") or {}).items():
            rows.append([f"published: {published['rows'].get(row_name, row_name)}", *[f"{accuracy:.3f}"] * len(runs)])
        for (family, variant), (accuracy, source) in LITERATURE.items():
            rows.append([f"literature: {source}", *[f"{accuracy:.3f}"] * len(runs)])
        pairs = [str(blimp.get("pairs", "–")) for blimp in blimps]
        lines += _table(["system", *names], rows) + [
            "", f"Mean accuracy over BLiMP's paradigms with 95 % bootstrap intervals, on {' / '.join(pairs)} pairs "
            "(each run's sample). The published rows are BLiMP's own models on the whole benchmark (67,000 pairs); "
            "the literature rows score BERT-base as the lineage scores BERT (PLL, PLL-word-l2r), so a port of that "
            "release should land near them, within the sample's interval.", ""]

    output.mkdir(parents=True, exist_ok=True)
    report = output / "report.md"
    report.write_text("\n".join(lines), encoding="utf-8")
    (output / "comparison.json").write_text(json.dumps({
        "runs": [{"folder": str(folder), "name": name} for folder, name in zip(folders, names)],
        "claims": {claim: [by_run.get(claim) for by_run in verdicts] for claim in claims},
        "scores": {" / ".join(key): [(by_key.get(key) or {}).get("score") for by_key in cells] for key in keys},
    }, indent=2), encoding="utf-8")
    return report


def _checkpoint(record) -> str:
    if not record:
        return "–"
    parameters, words = record.get("parameters"), record.get("words_seen")
    return (f"{record.get('source') or '?'}, {f'{parameters / 1e6:.1f} M' if parameters else '–'} parameters, "
            f"{f'{words / 1e6:.1f} M' if words else '–'} words")


def _union(lists: list[list]) -> list:
    """The items of every list, in first-seen order."""
    return list(dict.fromkeys(item for items in lists for item in items))
