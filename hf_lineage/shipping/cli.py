"""``hf-lineage checkpoints``: the pretrained folders shipped with the package, listed, built anew, or pushed to the Hub.

    hf-lineage checkpoints list
    hf-lineage checkpoints build --corpus wiki.train.tokens --validation-corpus wiki.valid.tokens   # 15 min a family
    hf-lineage checkpoints push bert someone/lineage-bert-tiny    # a shipped folder, with its card and code, to the Hub
    hf-lineage checkpoints export gpt ./lineage-gpt    # a copy with its code: loads where hf_lineage is not imported

It sits with their build (``build``, the lineage's pretraining stage run once per family) above the lineage, and
above the shipped folders themselves (``hf_lineage.checkpoints``, low: data and their paths, which every layer may
find). Both were ``hf_lineage/checkpoints/cli.py`` and ``checkpoints/build.py`` once: one folder on two floors, a
circle between ``checkpoints`` and ``lineage``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from ..checkpoints import FAMILIES, HERE, available, path, training_record
from ..folders.pretrained import check_push, push_folder, write_code
from ..folders.staged import staged_folder
from .build import DEFAULT_BUDGET_SECONDS, build, public_command, summary_line


def description() -> str:
    """What ``hf-lineage checkpoints --help`` says."""
    return ("hf-lineage checkpoints list | build [options] | push FAMILY REPO_ID | export FAMILY OUTPUT_DIR: the "
            "pretrained folders shipped with the package (one per family), pretrain them anew under one equal budget, "
            "push one, with its card and the code that loads it, to the Hugging Face Hub, or copy one with that code "
            "to a folder (for tools that never import hf_lineage, such as lm_eval's command, with "
            "trust_remote_code). `hf-lineage checkpoints build --help` lists its options.")


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="hf-lineage checkpoints", description=description())
    commands = parser.add_subparsers(dest="action", metavar="ACTION")
    commands.add_parser("list", help="the shipped checkpoints, where they are and how they were pretrained")
    build_ = commands.add_parser("build", help="pretrain families into shipped checkpoint folders")
    add = build_.add_argument
    add("--corpus", nargs="+", required=True, metavar="FILE", help="pretraining text (WikiText format)")
    add("--validation-corpus", nargs="+", metavar="FILE", help="held-out text for the validation perplexity")
    add("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    add("--budget-seconds", type=float, help=f"seconds of pretraining per family (default: "
        f"{DEFAULT_BUDGET_SECONDS:g} unless --budget-words is given)")
    add("--budget-words", type=int, help="corpus words per family instead (reproducible)")
    add("--output-dir", default=str(HERE), help="where the family folders go (default: the package's)")
    add("--work-dir", default="checkpoints_build", help="pretraining runs (default: %(default)s)")
    add("--threads", type=int, help="torch threads (default: torch's)")
    add("--seed", type=int, default=0)
    push = commands.add_parser("push", help="push a shipped checkpoint, with its card, to the Hugging Face Hub")
    push.add_argument("family", help=f"the checkpoint's family: {', '.join(FAMILIES)}")
    push.add_argument("repo_id", help="the Hub repository, NAME or OWNER/NAME (created if need be)")
    push.add_argument("--private", action="store_true", help="create the repository private")
    export = commands.add_parser("export", help="copy a shipped checkpoint, with the code that loads it with "
                                 "trust_remote_code alone, to a folder")
    export.add_argument("family", help=f"the checkpoint's family: {', '.join(FAMILIES)}")
    export.add_argument("output_dir", help="the folder to write (must not exist yet, or be empty)")
    return parser


def run_namespace(namespace: dict) -> int:
    if namespace.get("action") == "build":
        return _build(namespace)
    if namespace.get("action") == "push":
        return _push(namespace)
    if namespace.get("action") == "export":
        return _export(namespace)
    for family in FAMILIES:
        if family in available():
            print(f"{family:9} {path(family)}  {summary_line(training_record(family))}")
        else:
            print(f"{family:9} (not installed)")
    return 0


def _build(namespace: dict) -> int:
    import torch

    if namespace["budget_seconds"] and namespace["budget_words"]:
        print("hf-lineage checkpoints build: give --budget-seconds or --budget-words, not both", file=sys.stderr)
        return 2
    for corpus in namespace["corpus"] + (namespace["validation_corpus"] or []):
        if not os.path.isfile(corpus):
            print(f"hf-lineage checkpoints build: corpus file {corpus}: no such file", file=sys.stderr)
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


def _export(namespace: dict) -> int:
    """``hf-lineage checkpoints export FAMILY OUTPUT_DIR``: the shipped folder with its code and ``auto_map``, as
    ``push`` uploads it, written whole or not at all (``staged_folder``). lm-evaluation-harness' ``lm_eval --model hf
    --model_args pretrained=OUTPUT_DIR,trust_remote_code=True`` then loads it without importing hf_lineage
    (docs/minimal_pairs.md)."""
    output = Path(namespace["output_dir"])
    try:
        folder = path(namespace["family"])
        if output.exists() and (not output.is_dir() or any(output.iterdir())):
            raise ValueError(f"{output} already exists and is not an empty folder")
    except (ValueError, FileNotFoundError) as error:
        print(f"hf-lineage checkpoints export: error: {error}", file=sys.stderr)
        return 2
    with staged_folder(output) as staging:
        shutil.copytree(folder, staging, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
        write_code(staging)
    print(f"wrote {output} (the shipped {namespace['family']} checkpoint with its code; load it with "
          "trust_remote_code=True where hf_lineage is not imported)")
    return 0


def _push(namespace: dict) -> int:
    """``hf-lineage checkpoints push FAMILY REPO_ID``: the shipped folder (weights, tokenizer, card,
    ``pretraining.json``) with the code that loads it with ``trust_remote_code`` written beside, as ``push_to_hub``
    writes it, after checking the family, the id and the token, so bad input pushes nothing."""
    try:
        folder = path(namespace["family"])
        check_push(namespace["repo_id"], flag="REPO_ID")
    except (ValueError, FileNotFoundError) as error:
        print(f"hf-lineage checkpoints push: error: {error}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as temporary:
        staging = Path(temporary) / folder.name
        shutil.copytree(folder, staging, ignore=shutil.ignore_patterns("__pycache__"))
        write_code(staging)
        try:
            url = push_folder(staging, namespace["repo_id"],
                              f"The shipped hf-lineage {namespace['family']} checkpoint",
                              private=namespace["private"] or None)
        except OSError as error:  # huggingface_hub's HTTP and offline errors are OSErrors
            print(f"hf-lineage checkpoints push: error: pushing to {namespace['repo_id']} failed "
                  f"({type(error).__name__}: {' '.join(str(error).split())})", file=sys.stderr)
            return 1
    print(f"pushed {folder} to {url}")
    return 0
