"""Resumable stages: each runs in its own folder under ``<output-dir>/stages/`` and records how it ended in
``stage.json``; a re-run with the same spec reuses a finished stage, a failed one is recorded and the rest go on."""

from __future__ import annotations

import json
import shutil
import time
import traceback
from pathlib import Path


def process_state():
    """Accelerate's view of the processes (a singleton the engine and Trainer share). ``AcceleratorState`` reads
    ``ACCELERATE_USE_CPU`` but ``PartialState`` does not: made first without it, two CPU processes launched by
    ``accelerate launch`` would each think they were alone and the engine would rightly refuse to train."""
    from accelerate import PartialState
    from accelerate.utils import parse_flag_from_env

    return PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU"))


class Stages:
    """Runs stages in order, each in ``stages/<name>/`` with a ``stage.json`` saying how it ended; reuses one that
    finished with the same spec, records one that failed and goes on. Under ``accelerate launch`` every process
    runs every stage (they train together); only the main process writes the records."""

    def __init__(self, root: Path, total: int, rerun: bool):
        self.root, self.total, self.rerun, self.done = root, total, rerun, 0
        self.state = process_state()

    def folder(self, name: str) -> Path:
        return self.root / "stages" / name

    def run(self, name: str, spec: dict, work) -> dict:
        """``work(folder)`` returns the stage's result dict; returns the record (status, error, result...)."""
        self.done += 1
        spec = json.loads(json.dumps(spec))  # as stage.json holds it (tuples become lists)
        folder, where = self.folder(name), f"[{self.done}/{self.total}] {name}"
        record_path = folder / "stage.json"
        if record_path.is_file() and not self.rerun:
            record = json.loads(record_path.read_text())
            if record.get("status") == "ok" and record.get("spec") == spec:
                self.print(f"{where}: finished before, reused")
                return {**record, "reused": True}
        self.state.wait_for_everyone()
        if self.state.is_main_process and folder.exists():
            shutil.rmtree(folder)  # a failed, unfinished or differently-specified earlier attempt
        self.state.wait_for_everyone()
        self.print(f"{where}: running")
        started = time.time()
        try:
            result = work(folder)
            record = {"status": "ok", "error": None, "result": result}
        except Exception as error:  # noqa: BLE001 - a failed stage is reported and the rest continue
            message = f"{type(error).__name__}: {error}".strip().splitlines()[0][:300]
            record = {"status": "failed", "error": message, "result": {}}
            rank = self.state.process_index
            trace = folder / ("error.txt" if rank == 0 else f"error.process{rank}.txt")
            folder.mkdir(parents=True, exist_ok=True)
            trace.write_text(traceback.format_exc())
            on = f" on process {rank}" if self.state.num_processes > 1 else ""
            print(f"hf-lineage lineage {where}: FAILED{on} ({message}); the traceback is in {trace}", flush=True)
        if self.state.num_processes > 1:
            # Every process must record the same outcome, or they would part ways at the next stage's barriers.
            from accelerate.utils import gather_object

            errors = [e for e in gather_object([record["error"]]) if e]
            if errors and record["status"] == "ok":
                record = {"status": "failed", "error": f"on another process: {errors[0]}", "result": {}}
        record.update(spec=spec, seconds=round(time.time() - started, 2), reused=False)
        if self.state.is_main_process:
            folder.mkdir(parents=True, exist_ok=True)
            partial = folder / "stage.json.partial"
            partial.write_text(json.dumps(record, indent=2))
            partial.rename(record_path)
        if record["status"] == "ok":
            self.print(f"{where}: done in {record['seconds']:.1f} s{summary(record['result'])}")
        self.state.wait_for_everyone()
        return record

    def print(self, message: str) -> None:
        if self.state.is_main_process:
            print(f"hf-lineage lineage {message}", flush=True)


def summary(result: dict) -> str:
    if result.get("dev_score") is not None:
        return f": best dev score {result['dev_score']:.4f} at epoch {result['best_epoch']:g} of {result['epochs_run']:g}"
    if "validation_examples" in result:
        sizes = ", ".join(str(subset["examples"]) for subset in result["subsets"].values())
        return (f": training subsets of {sizes}, {result['dev_examples']} dev, {result['validation_examples']} "
                "validation examples")
    if (result.get("validation") or {}).get("perplexity") is not None:
        return f": validation perplexity {result['validation']['perplexity']:.1f}"
    if result.get("final_train_loss") is not None:
        return f": final train loss {result['final_train_loss']:.4f}"
    return ""
