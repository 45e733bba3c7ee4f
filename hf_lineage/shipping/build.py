"""Building the shipped checkpoints (``hf-lineage checkpoints build``): pretrain every family once, under one equal
compute budget, into the folders the package ships (``hf_lineage/checkpoints/<family>``) and ``hf-lineage lineage``
fine-tunes by default. It is the lineage's pretraining stage run once per family, so it sits above the lineage, with
``hf-lineage checkpoints`` (``cli``), not in the ``checkpoints`` package, which only finds the folders and sits floors
below the lineage that reads them.

Each family goes through the lineage's own pretraining stage (the engine, or word2vec's and svd's CPU trainers) at the
tiny scale's sizes; the folder gets a model card (data, license, command, budget, words seen, loss curve, validation
perplexity, seed) and ``pretraining.json`` with the same numbers. A budget in seconds is not reproducible run to run;
the card gives the ``--budget-words`` command that reproduces the words each family read.

A shipped folder holds weights, config, tokenizer, card, generation config and ``pretraining.json``: no code. It loads
after ``import hf_lineage`` (the registered model types); the code that loads a folder with ``trust_remote_code``
alone is written when a loaded model is saved or pushed (``save_pretrained``, ``push_to_hub``, ``hf-lineage
checkpoints push``), from the package's own ``models/``, so no copy of it can fall behind.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from ..lineage.pretraining import describe_budget, pretrain_family
from ..lineage.settings import SCALES, LineageArguments
from ..lineage.stage_data import prepare_corpus
from ..machine.precision import describe_machine
from ..models.card_lineage_utils import KNOWN_DATASET_LANGUAGES, LICENSE, hub_dataset_ids, pipeline_tag, update_card

DEFAULT_BUDGET_SECONDS = 900.0  # the equal compute budget of the shipped checkpoints: 15 minutes a family
CORPUS_LICENSE = "CC BY-SA 3.0 (WikiText-2, Merity et al. 2016, from Wikipedia's Good and Featured articles)"
# Files of a pretraining run the shipped folder does not need: the engine's resume checkpoints, logs and its record
# of the run (with the builder's own paths; the card and pretraining.json say how it was trained), and the code
# save_pretrained wrote beside the weights (the package is the code; saving or pushing a loaded model writes it).
NOT_SHIPPED = ("checkpoints", "runs", "train_results.json", "logs", "run_args.json", "*.py", "__pycache__")


def build(corpus: list[str], validation_corpus: list[str] | None, families: list[str], output_dir: Path,
          work_dir: Path, budget_seconds: float | None, budget_words: int | None, seed: int, command: str) -> dict:
    """Pretrain each family and write its shipped folder; returns {family: pretraining record}."""
    scale = SCALES["tiny"]
    records = {}
    for family in families:
        args = LineageArguments(output_dir=str(work_dir), families=[family], corpus=list(corpus),
                                validation_corpus=list(validation_corpus or []) or None,
                                budget_seconds=budget_seconds, budget_words=budget_words, seed=seed)
        corpus_info = prepare_corpus(args, scale, work_dir / "data")
        budget = describe_budget(args, scale, corpus_info["train_words"])
        print(f"[checkpoints] {family}: {budget['description']}", flush=True)
        folder = work_dir / family
        if folder.exists():
            shutil.rmtree(folder)
        begun = time.time()
        result = pretrain_family(family, scale, args, corpus_info, folder, seed=seed)
        named, overrides, training_overrides = scale.family_sizes(family)
        record = {"family": family, "config": named, "overrides": overrides,
                  "training_overrides": training_overrides, "seed": seed, "command": command,
                  "budget": {k: v for k, v in budget.items()}, "corpus": {
                      "files": [os.path.basename(p) for p in corpus_info["train"]],
                      "validation_files": [os.path.basename(p) for p in corpus_info["validation"]],
                      "train_words": corpus_info["train_words"], "validation_words": corpus_info["validation_words"],
                      "license": CORPUS_LICENSE},
                  "machine": describe_machine(), "wall_seconds": round(time.time() - begun, 1),
                  **{k: v for k, v in result.items() if k != "model"}}
        record["reproduce"] = reproduce_command(family, record)
        ship(Path(result["model"]), output_dir / family, record)
        records[family] = record
        print(f"[checkpoints] {family}: {summary_line(record)} -> {output_dir / family}", flush=True)
    return records


def reproduce_command(family: str, record: dict) -> str:
    """The command that pretrains this family on the same words again (a budget in words is reproducible)."""
    files = " ".join(record["corpus"]["files"])
    validation = " ".join(record["corpus"]["validation_files"])
    words = record.get("words_seen")
    budget = f"--budget-words {int(words)}" if words else "--budget-words <words>"
    return (f"hf-lineage checkpoints build --families {family} --corpus {files}"
            + (f" --validation-corpus {validation}" if validation else "") + f" {budget} --seed {record['seed']}")


def summary_line(record: dict) -> str:
    validation = record.get("validation") or {}
    perplexity = validation.get("perplexity")
    return (f"{record.get('words_seen') or 0:,} words in {record.get('train_seconds') or 0:.0f} s"
            + (f", validation perplexity {perplexity:.1f}" if perplexity else ""))


def check_finite(model_dir: Path, family: str) -> None:
    """Refuse to ship weights that diverged (a NaN or an infinity anywhere)."""
    import torch
    from safetensors.torch import load_file

    for path in model_dir.glob("*.safetensors"):
        for name, tensor in load_file(path).items():
            if tensor.is_floating_point() and not torch.isfinite(tensor).all():
                raise ValueError(f"{family}: pretraining diverged ({name} holds NaN or infinite values); nothing "
                                 "was shipped. Give it a smaller budget (word2vec: fewer passes) or a lower rate.")


def ship(model_dir: Path, target: Path, record: dict) -> None:
    """Copy the pretrained folder to ``target``, without its code and the ``auto_map`` naming it, with its card and
    ``pretraining.json``, atomically."""
    check_finite(model_dir, record["family"])
    staging = target.with_name(target.name + ".partial")
    if staging.exists():
        shutil.rmtree(staging)
    shutil.copytree(model_dir, staging, ignore=shutil.ignore_patterns(*NOT_SHIPPED))
    without_auto_map(staging)
    (staging / "pretraining.json").write_text(json.dumps(record, indent=2) + "\n")
    card = staging / "README.md"
    card.write_text((card.read_text() if card.exists() else "") + card_section(record))
    card.write_text(shipped_card(staging, record))
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)


def without_auto_map(folder: Path) -> None:
    """Take ``auto_map`` out of the folder's ``config.json`` and ``tokenizer_config.json``: it names code files a
    shipped folder does not hold. After ``import hf_lineage`` the registered classes load the folder either way, but
    without hf_lineage ``trust_remote_code=True`` would go looking for the files; without the entry the folder says
    what it is, a ``lineage-*`` model type that hf_lineage registers. The files are rewritten as transformers writes
    them (two-space indent, sorted keys)."""
    for name in ("config.json", "tokenizer_config.json"):
        path = folder / name
        if not path.is_file():
            continue
        values = json.loads(path.read_text(encoding="utf-8"))
        if values.pop("auto_map", None) is not None:
            path.write_text(json.dumps(values, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def shipped_card(folder: Path, record: dict) -> str:
    """The folder's card with the Hub's metadata: hf_lineage's licence for the weights (the card's text gives the
    data's, CC BY-SA), the corpus as its Hub dataset and language, the pipeline tag of the folder's class."""
    config = json.loads((folder / "config.json").read_text())
    datasets = hub_dataset_ids(record["corpus"]["files"])
    return update_card((folder / "README.md").read_text(), license=LICENSE, datasets=datasets,
                       language=[KNOWN_DATASET_LANGUAGES[d] for d in datasets if d in KNOWN_DATASET_LANGUAGES],
                       pipeline_tag=pipeline_tag((config.get("architectures") or [""])[0], config["model_type"]))


def card_section(record: dict) -> str:
    validation = record.get("validation") or {}
    lines = [
        "", "## hf-lineage shipped checkpoint", "",
        f"Pretrained by `{record['command']}` (seed {record['seed']}) on {', '.join(record['corpus']['files'])} "
        f"({record['corpus']['train_words']:,} words), {record['corpus']['license']}.", "",
        f"- Size: the lineage's tiny scale, named config `{record['config']}` with {record['overrides']}; "
        f"{record['parameters']:,} parameters" + (f" and {record['buffers']:,} buffer elements."
                                                 if record.get("buffers") is not None else "."),
        f"- Budget: {record['budget']['description']}." + (f" {record['schedule']}" if record.get("schedule") else ""),
        f"- Read: {record.get('words_seen') or 0:,} corpus words ({record.get('steps') or 'whole passes'} steps) in "
        f"{record.get('train_seconds') or 0:.0f} s of training on {record['machine']}.",
    ]
    if validation.get("perplexity"):
        lines.append(f"- Validation ({', '.join(record['corpus']['validation_files'])}): loss "
                     f"{validation['loss']:.4f}, perplexity {validation['perplexity']:.1f}.")
    lines.append(f"- Reproduce the same words: `{record['reproduce']}` (a budget in seconds reads a different number "
                 "of words on another machine).")
    curve = record.get("curve") or []
    if curve:
        lines += ["", "| step | words seen | seconds | training loss |", "|---|---|---|---|"]
        step = max(1, len(curve) // 10)
        for point in curve[::step] + ([curve[-1]] if (len(curve) - 1) % step else []):
            lines.append(f"| {point['step']} | {point['words_seen']:,} | {point['seconds']:.0f} | "
                         f"{point['train_loss']:.3f} |")
    return "\n".join(lines) + "\n"


def public_command(argv: list[str]) -> str:
    """The build command as a card shows it: corpus files by name (the folders are the builder's own), and without
    ``--output-dir`` / ``--work-dir``, which decide where files go, not what is in them."""
    words, skip, paths = [], False, False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in ("--output-dir", "--work-dir"):
            skip = True
            continue
        if arg.startswith("--"):
            paths = arg in ("--corpus", "--validation-corpus")
        elif paths:
            arg = os.path.basename(arg)
        words.append(arg)
    return " ".join(["hf-lineage checkpoints build", *words])
