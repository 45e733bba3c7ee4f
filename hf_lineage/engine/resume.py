"""What a run leaves behind to be resumed from: ``run_args.json`` (what is trained), and checkpoints holding the
model, optimiser, scheduler, every RNG and the position in the epoch, so that resuming after a SIGKILL continues
bit for bit."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import numpy as np
import torch

RUN_FILE = "run_args.json"
# Arguments that define *what* is trained; a resumed run must agree on all of them.
IDENTITY_FIELDS = (
    "family", "config", "overrides", "train_file", "language_alpha", "validation_file", "dataset_name",
    "dataset_config", "tokenizer", "vocab_size", "max_seq_length", "seed", "per_device_batch_size",
    "gradient_accumulation_steps", "init_from", "next_sentence_prediction", "mlm_probability", "mask_split",
)
# What a run recorded before an identity field existed had that field's default (the objective's options: the
# family's, ``hf_lineage.pretraining.arguments.OBJECTIVE_OPTIONS``).
IDENTITY_DEFAULTS = {"language_alpha": 0.7, "init_from": None}
STATE_FILE = "engine_state.json"


def run_identity(args) -> dict:
    """The arguments that define the run (``IDENTITY_FIELDS``), as ``RUN_FILE`` stores them."""
    return {k: getattr(args, k) for k in IDENTITY_FIELDS}


def start_output_dir(args, tokenizer, output_dir: Path) -> None:
    """A fresh run's folder: emptied if ``--overwrite-output-dir``, then the run's identity and its tokenizer."""
    if args.overwrite_output_dir and output_dir.exists():
        shutil.rmtree(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / RUN_FILE).write_text(json.dumps(run_identity(args), indent=2))
    tokenizer.save_pretrained(output_dir)


def new_state() -> dict:
    """The loop's position and history, as a checkpoint's ``STATE_FILE`` stores them."""
    return {"step": 0, "epoch": 0, "batches_in_epoch": 0, "examples_seen": 0, "tokens_seen": 0,
            "train_seconds": 0.0, "log_history": []}


def list_checkpoints(output_dir: Path) -> list[Path]:
    """The complete checkpoints of a run, oldest first."""
    root = output_dir / "checkpoints"
    done = [p for p in root.glob("step_*") if (p / STATE_FILE).is_file()] if root.is_dir() else []
    return sorted(done, key=lambda p: int(p.name.split("_")[1]))


def save_checkpoint(accelerator, output_dir: Path, state: dict, keep: int) -> None:
    """``save_state`` into a temporary folder, renamed when complete: a killed save leaves no checkpoint that
    looks usable. Keeps the last ``keep``."""
    final = output_dir / "checkpoints" / f"step_{state['step']:08d}"
    partial = final.with_name(final.name + ".partial")
    if accelerator.is_main_process and partial.exists():
        shutil.rmtree(partial)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(partial))
    if accelerator.is_main_process:
        (partial / STATE_FILE).write_text(json.dumps(state))
        os.replace(partial, final)
        for old in list_checkpoints(output_dir)[:-keep]:
            shutil.rmtree(old)
    accelerator.wait_for_everyone()


def resume(args, accelerator, output_dir: Path) -> tuple[dict, dict | None]:
    """The loop's state to start from, and the RNG states to put back once the resumed epoch's iterator has started
    (None for a fresh run). Model, optimiser and scheduler must already be prepared (and the scheduler registered)."""
    if not args.resume_from:
        return new_state(), None
    checkpoint = list_checkpoints(output_dir)[-1] if args.resume_from == "latest" else Path(args.resume_from)
    state = json.loads((checkpoint / STATE_FILE).read_text())
    accelerator.load_state(str(checkpoint))
    resumed_rng = rng_states()
    accelerator.print(f"Resumed from {checkpoint} at step {state['step']}")
    return state, resumed_rng


def rng_states() -> dict:
    states = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_rng_states(states: dict) -> None:
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    if "cuda" in states:
        torch.cuda.set_rng_state_all(states["cuda"])
