"""The recipes' command line around the parser: ``run_cli`` (bad input becomes one ``error: ...`` line and exit status
2) and a recipe's ``--help`` at once (``hf-lineage finetune TASK --help``, ``recipes/<task>.py --help``). It imports
neither transformers' ``TrainingArguments`` nor torch, so a recipe answers ``--help`` before either is loaded.

A recipe's options include transformers' ``TrainingArguments``, whose module imports torch and Accelerate (seconds on a
small machine), and its help is made by ``HfArgumentParser`` from those dataclasses: nothing short of importing them
gives the same text. So the text the real parser makes is kept, the first time it is asked for, in
``$HF_LINEAGE_CACHE/help/`` (default ``~/.cache/hf_lineage``; the one cache root, ``convert.sources.cache_root``),
under a key of everything the text depends on: the task, the program name and terminal width argparse formats for,
Python's, transformers' and the package's versions, and every source file of the package (a changed option in a
development checkout makes a new text). Later calls print the kept text without importing torch. Nothing here changes
what the recipe parses; a cache that cannot be written costs only the speed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from ..convert.sources import cache_root

HELP_FLAGS = ("-h", "--help")


def asks_for_help(argv: list[str]) -> bool:
    """Whether argparse would print the help for ``argv``: ``-h`` or ``--help`` before any ``--`` (options end)."""
    options = argv[:argv.index("--")] if "--" in argv else argv
    return any(arg in HELP_FLAGS for arg in options)


def _source_stamp() -> str:
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(package)} {stat.st_mtime_ns} {stat.st_size}\n".encode())
    return digest.hexdigest()


def help_path(task_name: str) -> Path:
    """Where the help of ``task_name``, as this process would print it, is kept."""
    from .. import __version__

    key = "\n".join([
        task_name, os.path.basename(sys.argv[0]), str(shutil.get_terminal_size().columns), sys.version, __version__,
        metadata.version("transformers"), _source_stamp(),
        # argparse translates its own words ("usage:", "options:") by the locale.
        *(os.environ.get(name, "") for name in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")),
    ])
    return cache_root() / "help" / f"{task_name}-{hashlib.sha256(key.encode()).hexdigest()[:32]}.txt"


def print_help(task_name: str, make_text) -> None:
    """Print the kept help of ``task_name``, or make it with ``make_text()`` (the real parser's ``format_help``), keep
    it and print it; then exit with status 0, as argparse does."""
    path = help_path(task_name)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = make_text()
        staged = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False) as file:
                staged = file.name
                file.write(text)
            os.replace(staged, path)  # whole or not at all: a concurrent reader never sees half a text
        except OSError:
            if staged is not None:
                Path(staged).unlink(missing_ok=True)
    sys.stdout.write(text)
    raise SystemExit(0)


def run_cli(main, argv=None) -> int:
    """Run a recipe's ``main(argv)``: bad input (a ValueError, a missing file) or a Hub that cannot be reached
    prints one ``error: ...`` line on stderr and exits with status 2, as argparse does for a bad option; anything
    else is a bug and keeps its traceback."""
    try:
        main(argv)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        if not is_hub_error(error):
            raise
        # No network, offline mode or no token: one line, not the HTTP client's hundred-line traceback.
        print(f"error: the Hugging Face Hub could not be reached ({type(error).__name__}: "
              f"{str(error).splitlines()[0] if str(error) else 'no details'}). --push_to_hub and Hub ids need the "
              "network and a token (`hf auth login`); HF_HUB_OFFLINE=1 forbids it.", file=sys.stderr)
        return 2
    return 0


# The packages a failed Hub call raises from: huggingface_hub itself and the HTTP clients it has used.
HUB_ERROR_MODULES = ("huggingface_hub", "httpx", "httpx2", "httpcore", "httpcore2", "requests", "urllib3")


def is_hub_error(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) is a failed call to the Hugging Face Hub."""
    while error is not None:
        if type(error).__module__.split(".")[0] in HUB_ERROR_MODULES:
            return True
        error = error.__cause__ or error.__context__
    return False
