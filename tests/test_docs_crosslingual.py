"""docs/crosslingual.md and docs/crosslingual/ come from real runs of ``hf-lineage xling``: each shipped report is
exactly what its ``results.json`` writes, and every score, interval and difference the page quotes is one of those
runs' numbers."""

import json
import re
from pathlib import Path

import pytest

from hf_lineage.crosslingual.transfer_report import report_markdown

ROOT = Path(__file__).resolve().parents[1]
RUNS = {"8000 steps": ROOT / "docs" / "crosslingual", "2000 steps": ROOT / "docs" / "crosslingual" / "steps2000"}
NUMBER = re.compile(r"[−+-]?\d+\.\d{3}")


@pytest.mark.parametrize("run", RUNS)
def test_the_shipped_report_is_what_its_results_json_writes(run):
    results = json.loads((RUNS[run] / "results.json").read_text())
    assert report_markdown(results) == (RUNS[run] / "report.md").read_text()
    assert (RUNS[run] / "xling.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert results["arguments"]["pretrain_steps"] == int(run.split()[0])


def test_every_number_the_page_quotes_is_in_a_report():
    reports = "".join((folder / "report.md").read_text() for folder in RUNS.values()).replace("-", "−")
    page = (ROOT / "docs" / "crosslingual.md").read_text()
    quoted = [n.lstrip("+−-") for n in NUMBER.findall(page.replace("-", "−"))]
    assert quoted, "the page quotes no score"
    missing = [n for n in quoted if n not in reports]
    assert not missing, missing
