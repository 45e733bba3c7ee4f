"""Resumable stages: each runs in its own folder under ``<output-dir>/stages/`` and records how it ended in
``stage.json``; a re-run with the same spec reuses a finished stage, a failed one is recorded and the rest go on."""

from __future__ import annotations

import gc
import json
import os
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


OUTPUT_DIR = "<output_dir>"  # how stage records write the output folder's own path


class Stages:
    """Runs stages in order, each in ``stages/<name>/`` with a ``stage.json`` saying how it ended; reuses one that
    finished with the same spec, records one that failed and goes on. Under ``accelerate launch`` every process
    runs every stage (they train together); only the main process writes the records."""

    def __init__(self, root: Path, total: int, rerun: bool, command: str = "hf-lineage lineage"):
        self.root, self.total, self.rerun, self.done, self.command = root, total, rerun, 0, command
        self.state = process_state()
        # Paths inside the output folder are recorded relative to it, so that a moved or copied folder is still reused.
        self._prefixes = sorted({str(Path(root)), str(Path(root).resolve())}, key=len, reverse=True)

    def portable(self, value):
        """``value`` (JSON-like) with every path inside the output folder written as ``<output_dir>/...``."""
        if isinstance(value, dict):
            return {k: self.portable(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.portable(v) for v in value]
        if isinstance(value, str):
            for prefix in self._prefixes:
                if value == prefix or value.startswith(prefix + os.sep):
                    return OUTPUT_DIR + value[len(prefix):]
        return value

    def local(self, value):
        """The inverse of ``portable``: ``<output_dir>/...`` as a path inside this output folder."""
        if isinstance(value, dict):
            return {k: self.local(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.local(v) for v in value]
        if isinstance(value, str) and (value == OUTPUT_DIR or value.startswith(OUTPUT_DIR + "/")):
            return str(self.root) + value[len(OUTPUT_DIR):]
        return value

    def folder(self, name: str) -> Path:
        return self.root / "stages" / name

    def run(self, name: str, spec: dict, work) -> dict:
        """``work(folder)`` returns the stage's result dict; returns the record (status, error, result...)."""
        spec, folder, where = self._begin(name, spec)
        reused = self._finished(folder, spec, where)
        if reused:
            return reused
        self._clear(folder)
        self.print(f"{where}: running")
        record = attempt(work, folder, where, self.state.process_index, self.state.num_processes > 1)
        if self.state.num_processes > 1:
            # Every process must record the same outcome, or they would part ways at the next stage's barriers.
            from accelerate.utils import gather_object

            errors = [e for e in gather_object([record["error"]]) if e]
            if errors and record["status"] == "ok":
                record = {**record, "status": "failed", "error": f"on another process: {errors[0]}", "result": {}}
        self._end(folder, spec, where, record)
        self.state.wait_for_everyone()
        return record

    def run_many(self, jobs: list[tuple], workers: int) -> list[dict]:
        """``run`` for each ``(name, spec, work)`` job, ``workers`` at a time in child processes, each limited to one
        torch thread (so a cell's numbers do not depend on how many run beside it); records in the jobs' order.
        ``work`` must pickle (a ``functools.partial`` of a module-level function). ``workers=0``, or several
        processes under ``accelerate launch`` (which train each stage together), run the jobs here, one by one.

        A child process that dies (killed, out of memory, a crash in native code) takes its pool down with it, and
        nothing says which job killed it: the jobs the pool had not finished run again one at a time, each in a fresh
        process, so the one that dies is recorded as failed and every other job still runs."""
        if workers < 1 or self.state.num_processes > 1:
            return [self.run(name, spec, work) for name, spec, work in jobs]
        records, pending = [None] * len(jobs), {}
        for i, (name, spec, work) in enumerate(jobs):
            spec, folder, where = self._begin(name, spec)
            records[i] = self._finished(folder, spec, where)
            if records[i] is None:
                pending[i] = (work, spec, folder, where)
        suspects = self._run_in_pool(pending, workers, records)
        if suspects:
            self.print(f"a worker process died; {len(suspects)} unfinished job(s) run again, one at a time")
        for i in suspects:  # alone, so that a death is this job's
            self._run_in_pool({i: pending[i]}, 1, records)
            if records[i] is None:
                _, spec, folder, where = pending[i]
                records[i] = {"status": "failed", "error": "its worker process died (killed, out of memory or a "
                              "crash in native code)", "result": {}, "seconds": 0.0}
                self._end(folder, spec, where, records[i])
                self.print(f"{where}: FAILED ({records[i]['error']})")
        return records

    def _run_in_pool(self, pending: dict, workers: int, records: list) -> list[int]:
        """Run ``pending`` (index → (work, spec, folder, where)) in a pool of ``workers`` spawned processes, filling
        ``records``; returns the indices left without a record because the pool broke while they ran."""
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed
        from concurrent.futures.process import BrokenProcessPool

        context = multiprocessing.get_context("spawn")  # a fresh interpreter: no torch or Trainer state shared
        with ProcessPoolExecutor(workers, mp_context=context, initializer=_one_torch_thread) as pool:
            futures = {}
            for i, (work, spec, folder, where) in pending.items():
                self._clear(folder)
                futures[pool.submit(attempt, work, folder, where, 0, False)] = i
            broken = []
            # As each job finishes, not in the order they were given: a long first job would otherwise hold back
            # every later job's "done" line (and its stage.json) until it ends.
            for future in as_completed(futures):
                i = futures[future]
                try:
                    record = future.result()
                except BrokenProcessPool:
                    broken.append(i)
                    continue
                _, spec, folder, where = pending[i]
                self._end(folder, spec, where, record)
                records[i] = record
        return broken

    def _begin(self, name: str, spec: dict):
        self.done += 1
        spec = self.portable(json.loads(json.dumps(spec)))  # as stage.json holds it (tuples become lists)
        return spec, self.folder(name), f"[{self.done}/{self.total}] {name}"

    def _finished(self, folder: Path, spec: dict, where: str) -> dict | None:
        record_path = folder / "stage.json"
        if record_path.is_file() and not self.rerun:
            record = json.loads(record_path.read_text())
            if record.get("status") == "ok" and record.get("spec") == spec:
                self.print(f"{where}: finished before, reused")
                return {**record, "result": self.local(record.get("result") or {}), "reused": True}
        return None

    def _clear(self, folder: Path) -> None:
        self.state.wait_for_everyone()
        if self.state.is_main_process and folder.exists():
            shutil.rmtree(folder)  # a failed, unfinished or differently-specified earlier attempt
        self.state.wait_for_everyone()

    def _end(self, folder: Path, spec: dict, where: str, record: dict) -> None:
        record.update(spec=spec, reused=False)
        if self.state.is_main_process:
            folder.mkdir(parents=True, exist_ok=True)
            partial = folder / "stage.json.partial"
            partial.write_text(json.dumps({**record, "result": self.portable(record.get("result") or {})}, indent=2))
            partial.rename(folder / "stage.json")
        if record["status"] == "ok":
            self.print(f"{where}: done in {record['seconds']:.1f} s{summary(record['result'])}")

    def print(self, message: str) -> None:
        if self.state.is_main_process:
            print(f"{self.command} {message}", flush=True)


def attempt(work, folder: Path, where: str, rank: int, distributed: bool) -> dict:
    """Run one stage's ``work(folder)``; an exception becomes a failed record and a traceback file."""
    started = time.time()
    freeze_long_lived_objects()
    try:
        record = {"status": "ok", "error": None, "result": work(folder)}
    except Exception as error:  # noqa: BLE001 - a failed stage is reported and the rest continue
        message = f"{type(error).__name__}: {error}".strip().splitlines()[0][:300]
        record = {"status": "failed", "error": message, "result": {}}
        trace = folder / ("error.txt" if rank == 0 else f"error.process{rank}.txt")
        folder.mkdir(parents=True, exist_ok=True)
        trace.write_text(traceback.format_exc())
        on = f" on process {rank}" if distributed else ""
        print(f"hf-lineage lineage {where}: FAILED{on} ({message}); the traceback is in {trace}", flush=True)
    record["seconds"] = round(time.time() - started, 2)
    return record


def freeze_long_lived_objects() -> None:
    """Collect, then exempt what survives (the imported libraries, their caches, the finished stages' records) from
    later collections. Every ``Trainer.train`` ends with Accelerate's ``free_memory``, a full ``gc.collect()``: with
    torch, transformers and datasets imported that walks about half a million objects, 0.3 s a fine-tuning cell on
    the 2-core machine, and the automatic collections walk them too. Afterwards a collection walks only what the
    stage made (docs/benchmarks.md, "The cyclic garbage collector")."""
    gc.collect()
    gc.freeze()


def _one_torch_thread() -> None:
    import torch

    torch.set_num_threads(1)


def summary(result: dict) -> str:
    if result.get("dev_score") is not None:
        return (f": best dev score {result['dev_score']:.4f} at epoch {result['best_epoch']:g} of "
                f"{result['epochs_run']:g}")
    if "validation_examples" in result:
        sizes = ", ".join(str(subset["examples"]) for subset in result["subsets"].values())
        return (f": training subsets of {sizes}, {result['dev_examples']} dev, {result['validation_examples']} "
                "validation examples")
    if (result.get("validation") or {}).get("perplexity") is not None:
        return f": validation perplexity {result['validation']['perplexity']:.1f}"
    if result.get("final_train_loss") is not None:
        return f": final train loss {result['final_train_loss']:.4f}"
    return ""
