"""The probing stage of ``hf-lineage lineage``: what each layer of the run's own pretrained models encodes.

After pretraining, every family's model (the first seed's) goes through the layer-wise linear probes of
``hf_lineage.analysis.probes`` — UPOS and noun number, with Hewitt & Liang's control task and the majority
baseline — and the report gets their table and plots. It runs when the ``labeling`` task is requested (it probes
the same kind of property; ``--tasks`` without ``labeling`` turns it off) and is sized to cost seconds: the first
``SENTENCES`` training and validation sentences of the probing sample and C fixed at 1 instead of chosen on a dev
split (about 8 s for the five tiny models on the reference machine; ``hf-lineage analyze probes`` runs the full
version on any saved model).
"""

from __future__ import annotations

from pathlib import Path

from ..experiments.stages import process_state

SENTENCES = 200
PROPERTIES = ("upos", "number")
GRID = (1.0,)


def probing_wanted(tasks: list[str]) -> bool:
    return "labeling" in tasks


def run_probing_stage(stages, pretraining: dict, seed: int) -> dict | None:
    """The ``probes`` stage on each family's first-seed model that pretrained; None when none did."""
    models = {family: records[0]["model"] for family, records in pretraining.items()
              if records and records[0]["status"] == "ok"}
    if not models:
        return None
    spec = {"models": models, "sentences": SENTENCES, "properties": list(PROPERTIES), "grid": list(GRID),
            "seed": seed}
    record = stages.run("probes", spec, lambda folder: probe_models(models, folder, seed))
    return {"status": record["status"], "error": record["error"], "seconds": record["seconds"],
            "reused": record["reused"], **record["result"]}


def probe_models(models: dict, folder: Path, seed: int) -> dict:
    """The probes' results, table and summary, and the plots (paths relative to the report's folder)."""
    from ..analysis.probes import run_probes

    results = run_probes(list(models.values()), PROPERTIES, SENTENCES, SENTENCES, GRID, seed)
    plots = results.plot(folder) if process_state().is_main_process else []
    return {**results.to_dict(), "table": results.table(), "summary": results.summary(),
            "plots": [f"{folder.parent.name}/{folder.name}/{name}" for name in plots]}


def report_lines(probes: dict | None) -> list[str]:
    """The report's section on the probes (empty when the stage did not run)."""
    if probes is None:
        return []
    lines = ["", "## What each layer learns (probes)", ""]
    if probes["status"] != "ok":
        return lines + [f"The probing stage failed: {probes['error']}", ""]
    settings = probes["settings"]
    lines += [(f"A linear probe (logistic regression, C = {settings['C_grid'][0]:g}) per layer of each pretrained "
              f"model, trained on the frozen word vectors of {settings['train_sentences']} UD English EWT sentences "
              f"and scored on {settings['validation_sentences']} others; control = the same probe on random labels "
              "fixed per word type (Hewitt & Liang 2019), selectivity = accuracy − control; majority baseline = each "
              "word's most frequent training label. 95 % bootstrap intervals over sentences in brackets. "
              "A cheap version: `hf-lineage analyze probes` runs the full one (docs/probes.md)."), "",
              probes["table"]]
    lines += [f"- {sentence}" for sentence in probes["summary"]] + [""]
    for path in probes["plots"]:
        lines += [f"![probes: {Path(path).stem}]({path})", ""]
    return lines
