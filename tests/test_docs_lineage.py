"""docs/lineage.md and docs/lineage/ come from fresh runs of the code: each shipped report is exactly what its
``results.json`` writes, and every score, interval and verdict that docs/lineage.md and the README quote is one of
those runs' numbers."""

import json
import re
from pathlib import Path

import pytest

from hf_lineage.lineage.report import write_report

ROOT = Path(__file__).resolve().parents[1]
RUNS = {"--seeds 3": ROOT / "docs" / "lineage", "default": ROOT / "docs" / "lineage" / "default",
        "glue": ROOT / "docs" / "lineage" / "glue"}
SCORE = re.compile(r"(\d+\.\d{3}) \[(\d+\.\d{3}), (\d+\.\d{3})\]")  # "0.912 [0.905, 0.918]"


def results(run):
    return json.loads((RUNS[run] / "results.json").read_text())


@pytest.mark.parametrize("run", RUNS)
def test_the_shipped_report_is_what_its_results_json_writes(run, tmp_path):
    written = Path(write_report(results(run), tmp_path)).read_text(encoding="utf-8")
    assert written == (RUNS[run] / "report.md").read_text(encoding="utf-8")
    for plot in results(run)["plots"]:
        assert (RUNS[run] / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_runs_are_the_documented_commands_on_the_shipped_checkpoints():
    default, seeds = results("default"), results("--seeds 3")
    assert default["command"] == "hf-lineage lineage" and default["seeds"] == [0]
    assert seeds["command"] == "hf-lineage lineage --seeds 3" and seeds["seeds"] == [0, 1, 2]
    assert not default["pretrained_anew"] and not seeds["pretrained_anew"]
    glue = results("glue")
    assert "--task-data classification" in glue["command"] and glue["tasks"]["pairs"]["source"].endswith("train.tsv")


def _quoted(path):
    text = path.read_text(encoding="utf-8")
    if path.name == "README.md":
        text = text[text.index("## Run"):text.index("## Test")]
    return text


@pytest.mark.parametrize("doc", ["docs/lineage.md", "README.md"])
def test_every_score_and_verdict_the_docs_quote_is_in_a_run(doc):
    known, verdicts = set(), set()
    for run in RUNS:
        found = results(run)
        entries = found["finetuning"] + [b for rows in found["baselines"].values() for b in rows]
        for entry in entries:
            if entry.get("score") is not None and entry.get("interval"):
                known.add(tuple(f"{v:.3f}" for v in (entry["score"], *entry["interval"])))
        verdicts |= {(c["claim"], c["verdict"]) for c in found["claims"]}
    text = _quoted(ROOT / doc)
    quoted = SCORE.findall(text)
    assert quoted or doc == "README.md"
    assert [q for q in quoted if q not in known] == []
    for claim, verdict in re.findall(r"\| (.+?) \| \*\*(.+?)\*\* \|", text):  # the docs' verdict tables
        assert (claim, verdict) in verdicts
