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
        "with order": ROOT / "docs" / "lineage" / "with_order",
        "bert ablations": ROOT / "docs" / "lineage" / "bert_ablations"}
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
    with_order = results("with order")
    # Run while `order` was still a default task: today's `hf-lineage lineage --tasks labeling order order_pairs`.
    assert with_order["command"] == "hf-lineage lineage"
    assert list(with_order["tasks"]) == ["labeling", "order", "order_pairs"]
    assert with_order["seeds"] == [0] and not with_order["pretrained_anew"]


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


# --- every number the docs quote comes from a run, or says where it comes from (issue 42) ------------------------

NUMBER = re.compile(r"(?<![\w.\-/])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w/]|\.\d)")
SOURCE = "source:"  # a paragraph (a table row) quoting a number no run holds names where it comes from


def _run_numbers():
    """Every number of every run's results.json as the docs may write it: integers plain and with thousands
    separators, fractions at 1-3 decimals and as a rounded percentage, times in seconds also in minutes."""
    found = set()

    def add(value, key=""):
        if isinstance(value, bool):
            return
        if isinstance(value, dict):
            for k, v in value.items():
                add(v, k)
        elif isinstance(value, list):
            for v in value:
                add(v, key)
        elif isinstance(value, (int, float)):
            found.update({f"{value:.0f}", f"{value:,.0f}", f"{value:.1f}", f"{value:,.1f}", f"{value:.2f}",
                          f"{value:.3f}"})
            if isinstance(value, int) or float(value).is_integer():
                found.add(str(int(value)))
            if 0 < abs(value) <= 1:
                found.update({f"{100 * value:.0f}", f"{100 * value:.1f}"})
            if "seconds" in key or key in ("seconds_total",):
                found.update({f"{value / 60:.1f}", f"{value / 60:.0f}"})
        elif isinstance(value, str):
            found.update(NUMBER.findall(value))

    for run in RUNS:
        add(results(run))
    return found


def _paragraphs(text):
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # commands are their own source
    for block in re.split(r"\n\s*\n", text):
        rows = block.splitlines()
        yield from (rows if all(r.lstrip().startswith("|") for r in rows) else [" ".join(rows)])


def _unsourced_numbers(text, known):
    missing = []
    for paragraph in _paragraphs(text):
        if SOURCE in paragraph:
            continue
        plain = re.sub(r"`[^`]*`", "", paragraph)  # inline code: commands, options, file names
        plain = re.sub(r"\]\([^)]*\)|https?://\S+", "]", plain)  # link targets
        plain = re.sub(r"\b\d{4}-\d{2}-\d{2}\b|\b\d+\.\d+\.\d+\S*", "", plain)  # dates, versions
        plain = re.sub(r"\[\^\d+\]", "", plain)  # footnote marks
        for number in NUMBER.findall(plain):
            value = float(number.replace(",", ""))
            if value <= 10 and float(value).is_integer() or 1990 <= value <= 2030:  # small counts, years
                continue
            if number not in known:
                missing.append(number)
    return missing


@pytest.mark.parametrize("doc", ["docs/lineage.md", "README.md"])
def test_every_number_the_docs_quote_is_in_a_run_or_names_its_source(doc):
    text = _quoted(ROOT / doc)
    assert _unsourced_numbers(text, _run_numbers()) == []


def test_the_number_check_catches_an_invented_number():
    known = {"0.859", "1,000"}
    assert _unsourced_numbers("NNLM tags 0.859 of 1,000 words.", known) == []
    assert _unsourced_numbers("NNLM tags 0.861 of 1,000 words.", known) == ["0.861"]
    assert _unsourced_numbers("NNLM tags 0.861 (source: a separate run, `cmd`).", known) == []
    assert _unsourced_numbers("Run `--budget-words 205191000` in 2026-11-27 with 3 seeds.", known) == []
