"""The lineage's stage runner: records, reuse, and surviving a child process that dies."""

import functools
import json
import os

from hf_lineage.experiments.stages import Stages


def write_and_return(folder, value):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "out.txt").write_text(str(value))
    return {"value": value}


def die(folder):
    os._exit(7)  # what the kernel's OOM killer or a crash in native code does to a worker: no exception, no record


def test_run_many_records_every_job_and_reuses_finished_ones(tmp_path, capsys):
    jobs = [(f"job-{i}", {"i": i}, functools.partial(write_and_return, value=i)) for i in range(3)]
    records = Stages(tmp_path, total=3, rerun=False).run_many(jobs, workers=2)
    assert [r["status"] for r in records] == ["ok"] * 3
    assert [r["result"]["value"] for r in records] == [0, 1, 2]
    assert json.loads((tmp_path / "stages/job-1/stage.json").read_text())["result"] == {"value": 1}
    again = Stages(tmp_path, total=3, rerun=False).run_many(jobs, workers=2)
    assert all(r["reused"] for r in again)


def test_a_worker_that_dies_fails_its_own_job_and_the_others_finish(tmp_path, capsys):
    jobs = [("first", {}, functools.partial(write_and_return, value=1)),
            ("killed", {}, die),
            ("third", {}, functools.partial(write_and_return, value=3)),
            ("fourth", {}, functools.partial(write_and_return, value=4))]
    records = Stages(tmp_path, total=4, rerun=False).run_many(jobs, workers=2)
    assert [r["status"] for r in records] == ["ok", "failed", "ok", "ok"]
    assert "worker process died" in records[1]["error"]
    assert [records[i]["result"]["value"] for i in (0, 2, 3)] == [1, 3, 4]
    saved = json.loads((tmp_path / "stages/killed/stage.json").read_text())
    assert saved["status"] == "failed"
    assert "killed: FAILED" in capsys.readouterr().out


def wait_then_return(folder, value, seconds):
    import time

    time.sleep(seconds)
    return {"value": value}


def test_each_job_is_recorded_as_it_finishes_not_in_the_order_given(tmp_path, capsys):
    # A long first job (a large model's zero-shot scoring) must not hold back the later jobs' lines and records.
    jobs = [("long", {}, functools.partial(wait_then_return, value=0, seconds=4)),
            ("short", {}, functools.partial(wait_then_return, value=1, seconds=0))]
    records = Stages(tmp_path, total=2, rerun=False).run_many(jobs, workers=2)
    assert [r["result"]["value"] for r in records] == [0, 1]  # records still in the jobs' order
    out = capsys.readouterr().out
    assert out.index("short: done") < out.index("long: done")
