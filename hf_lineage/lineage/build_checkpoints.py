"""``hf-lineage checkpoints build``: pretrain every family once, under one equal compute budget, into the folders the
package ships (``hf_lineage/checkpoints/<family>``) and ``hf-lineage lineage`` fine-tunes by default.

    hf-lineage checkpoints build --corpus wiki.train.tokens --validation-corpus wiki.valid.tokens   # 15 min a family
    hf-lineage checkpoints list
    hf-lineage checkpoints push bert someone/lineage-bert-tiny    # a shipped folder, with its card, to the Hub

Each family goes through the lineage's own pretraining stage (the engine, or word2vec's and svd's CPU trainers) at the
tiny scale's sizes; the folder gets a model card (data, license, command, budget, words seen, loss curve, validation
perplexity, seed) and ``pretraining.json`` with the same numbers. A budget in seconds is not reproducible run to run;
the card gives the ``--budget-words`` command that reproduces the words each family read.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from .. import checkpoints
from ..models.card_lineage_utils import KNOWN_DATASET_LANGUAGES, LICENSE, hub_dataset_ids, pipeline_tag, update_card
from ..pretrained_folder import check_push, push_folder
from .stage_data import prepare_corpus
from .pretraining import describe_budget, pretrain_family
from .settings import SCALES, LineageArguments

DEFAULT_BUDGET_SECONDS = 900.0  # the equal compute budget of the shipped checkpoints: 15 minutes a family
CORPUS_LICENSE = "CC BY-SA 3.0 (WikiText-2, Merity et al. 2016, from Wikipedia's Good and Featured articles)"
# Files of a pretraining run the shipped folder does not need: the engine's resume checkpoints, logs and its record
# of the run (with the builder's own paths; the card and pretraining.json say how it was trained).
NOT_SHIPPED = ("checkpoints", "runs", "train_results.json", "logs", "run_args.json")


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
                  "machine": machine(), "wall_seconds": round(time.time() - begun, 1),
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
    """Copy the pretrained folder to ``target`` with its card and ``pretraining.json``, atomically."""
    check_finite(model_dir, record["family"])
    staging = target.with_name(target.name + ".partial")
    if staging.exists():
        shutil.rmtree(staging)
    shutil.copytree(model_dir, staging, ignore=shutil.ignore_patterns(*NOT_SHIPPED))
    (staging / "pretraining.json").write_text(json.dumps(record, indent=2) + "\n")
    card = staging / "README.md"
    card.write_text((card.read_text() if card.exists() else "") + card_section(record))
    card.write_text(shipped_card(staging, record))
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)


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


def machine() -> str:
    import platform

    import torch

    model = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    threads = torch.get_num_threads()
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return f"{platform.machine()}, {model}, {threads} torch thread(s), {gpu}, torch {torch.__version__}"


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="hf-lineage checkpoints", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="action", metavar="ACTION")
    commands.add_parser("list", help="the shipped checkpoints, where they are and how they were pretrained")
    build_ = commands.add_parser("build", help="pretrain families into shipped checkpoint folders")
    add = build_.add_argument
    add("--corpus", nargs="+", required=True, metavar="FILE", help="pretraining text (WikiText format)")
    add("--validation-corpus", nargs="+", metavar="FILE", help="held-out text for the validation perplexity")
    add("--families", nargs="+", default=list(checkpoints.FAMILIES), choices=list(checkpoints.FAMILIES))
    add("--budget-seconds", type=float, help=f"seconds of pretraining per family (default: "
        f"{DEFAULT_BUDGET_SECONDS:g} unless --budget-words is given)")
    add("--budget-words", type=int, help="corpus words per family instead (reproducible)")
    add("--output-dir", default=str(checkpoints.HERE), help="where the family folders go (default: the package's)")
    add("--work-dir", default="checkpoints_build", help="pretraining runs (default: %(default)s)")
    add("--threads", type=int, help="torch threads (default: torch's)")
    add("--seed", type=int, default=0)
    push = commands.add_parser("push", help="push a shipped checkpoint, with its card, to the Hugging Face Hub")
    push.add_argument("family", help=f"the checkpoint's family: {', '.join(checkpoints.FAMILIES)}")
    push.add_argument("repo_id", help="the Hub repository, NAME or OWNER/NAME (created if need be)")
    push.add_argument("--private", action="store_true", help="create the repository private")
    return parser


def run_namespace(namespace: dict) -> int:
    if namespace.get("action") == "build":
        return _build(namespace)
    if namespace.get("action") == "push":
        return _push(namespace)
    for family in checkpoints.FAMILIES:
        if family in checkpoints.available():
            record = checkpoints.training_record(family)
            print(f"{family:9} {checkpoints.path(family)}  {summary_line(record)}")
        else:
            print(f"{family:9} (not installed)")
    return 0


def _build(namespace: dict) -> int:
    import torch

    if namespace["budget_seconds"] and namespace["budget_words"]:
        print("hf-lineage checkpoints build: give --budget-seconds or --budget-words, not both", file=sys.stderr)
        return 2
    for path in namespace["corpus"] + (namespace["validation_corpus"] or []):
        if not os.path.isfile(path):
            print(f"hf-lineage checkpoints build: corpus file {path}: no such file", file=sys.stderr)
            return 2
    if namespace["threads"]:
        torch.set_num_threads(namespace["threads"])
    seconds = None if namespace["budget_words"] else namespace["budget_seconds"] or DEFAULT_BUDGET_SECONDS
    given = sys.argv[3:] if sys.argv[1:3] == ["checkpoints", "build"] else sys.argv[1:]
    print(f"[checkpoints] pretraining {', '.join(namespace['families'])} on {', '.join(namespace['corpus'])}, "
          + (f"{seconds:g} s each" if seconds else f"{namespace['budget_words']:,} words each")
          + f", into {namespace['output_dir']}", flush=True)
    try:
        build(namespace["corpus"], namespace["validation_corpus"], namespace["families"],
              Path(namespace["output_dir"]), Path(namespace["work_dir"]), seconds, namespace["budget_words"],
              namespace["seed"], public_command(given))
    except ValueError as error:
        print(f"hf-lineage checkpoints build: error: {error}", file=sys.stderr)
        return 1
    return 0


def _push(namespace: dict) -> int:
    """``hf-lineage checkpoints push FAMILY REPO_ID``: the shipped folder as it is (weights, tokenizer, code, card,
    ``pretraining.json``), after checking the family, the id and the token, so bad input pushes nothing."""
    try:
        folder = checkpoints.path(namespace["family"])
        check_push(namespace["repo_id"], flag="REPO_ID")
    except (ValueError, FileNotFoundError) as error:
        print(f"hf-lineage checkpoints push: error: {error}", file=sys.stderr)
        return 2
    try:
        url = push_folder(folder, namespace["repo_id"], f"The shipped hf-lineage {namespace['family']} checkpoint",
                          private=namespace["private"] or None)
    except OSError as error:  # huggingface_hub's HTTP and offline errors are OSErrors
        print(f"hf-lineage checkpoints push: error: pushing to {namespace['repo_id']} failed "
              f"({type(error).__name__}: {' '.join(str(error).split())})", file=sys.stderr)
        return 1
    print(f"pushed {folder} to {url}")
    return 0
