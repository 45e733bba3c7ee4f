"""Checks that code marked ``# Copied from <module>.<object> [with A->B, C->D]`` still equals its source.

The files in ``hf_lineage/models`` are written next to the weights whenever a model is saved (``trust_remote_code``)
and may import only torch, transformers and same-folder siblings, so a family repeats another's classes instead of
importing them, as transformers' model files do. Those repetitions are the only copies left to check: the shipped
checkpoint folders hold no code (saving or pushing a loaded one writes it from ``hf_lineage/models``). The marker says the repetition is deliberate; this check keeps the copies from drifting.

The marker stands on the line above a ``class`` or ``def`` (after its decorators). The object is named by its dotted
path from the repository root (``hf_lineage.models.modeling_lineage_bert.LineageBertOutput``, or
``...LineageBertModel.get_input_embeddings`` for a method). ``with A->B, C->D`` replaces A by B, then C by D, in the
source's text, case-sensitively; the result must equal the marked code line for line (indentation aside).

    python utils/check_copies.py          # lists the copies that differ; exit status 1 if any
    python utils/check_copies.py --fix    # rewrites them from their sources
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "hf_lineage" / "models"

MARKER = re.compile(r"^(?P<indent>\s*)# Copied from (?P<name>[\w.]+)(?:\s+with\s+(?P<patterns>.+?))?\s*$")
PATTERN = re.compile(r"^\s*(?P<old>\S+)->(?P<new>\S+)\s*$")


class CopyMarkerError(ValueError):
    """A marker that cannot be checked: it names no existing object, or its ``with`` patterns are malformed."""


def _block_end(lines: list[str], start: int) -> int:
    """The index after the last line of the class or def on ``lines[start]``: the next non-blank line indented no
    deeper than it (trailing blank lines stay outside)."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    # Continuation lines of a multi-line signature may be indented less than the body: skip to the ``:`` first.
    while end < len(lines) and not re.search(r":\s*(#.*)?$", lines[end - 1]):
        end += 1
    last = end
    for i in range(end, len(lines)):
        line = lines[i]
        if not line.strip():
            continue
        if len(line) - len(line.lstrip()) <= indent:
            break
        last = i + 1
    return last


def _find_object(lines: list[str], names: list[str], where: str) -> tuple[int, int]:
    """(first, end) line indices of the nested class/def ``names`` (``["Class", "method"]``) in a file's lines."""
    first, end, indent, found = 0, len(lines), "", 0
    for name in names:
        header = re.compile(rf"^{indent}(?:async\s+)?(?:class|def)\s+{re.escape(name)}\b")
        found = next((i for i in range(first, end) if header.match(lines[i])), None)
        if found is None:
            raise CopyMarkerError(f"{where}: no class or function {'.'.join(names)!r}")
        first, end = found + 1, _block_end(lines, found)
        indent = re.escape(lines[found][: len(lines[found]) - len(lines[found].lstrip())]) + r"[ \t]+"
    return found, end


def _dedent(lines: list[str]) -> list[str]:
    indent = len(lines[0]) - len(lines[0].lstrip())
    return [line[indent:] if line.strip() else "" for line in lines]


def _source_lines(name: str, root: Path) -> list[str]:
    """The dedented lines of the object a marker names: the longest dotted prefix that is a file under ``root`` is
    the module, the rest the object's path inside it."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        path = root.joinpath(*parts[:cut]).with_suffix(".py")
        if path.is_file():
            lines = path.read_text(encoding="utf-8").splitlines()
            first, end = _find_object(lines, parts[cut:], name)
            return _dedent(lines[first:end])
    raise CopyMarkerError(f"no module for {name!r} under {root}")


def _replace(text: str, patterns: str | None, where: str) -> str:
    for pattern in (patterns or "").split(",") if patterns else []:
        match = PATTERN.match(pattern)
        if not match:
            raise CopyMarkerError(f"{where}: malformed replacement {pattern.strip()!r} (expected A->B)")
        text = text.replace(match["old"], match["new"])
    return text


def check_file(path: Path, root: Path | None = None, fix: bool = False) -> list[str]:
    """One message per marked copy in ``path`` that differs from its source (rewritten from it when ``fix``); the
    marker's dotted names are files under ``root`` (the repository's by default)."""
    root = root or ROOT
    lines = path.read_text(encoding="utf-8").splitlines()
    problems, i = [], 0
    while i < len(lines):
        marker = MARKER.match(lines[i])
        if not marker:
            i += 1
            continue
        where = f"{path.name}:{i + 1}"
        start = i + 1
        while start < len(lines) and lines[start].lstrip().startswith("@"):  # decorators are not compared
            start += 1
        if start == len(lines) or not re.match(r"\s*(?:async\s+)?(?:class|def)\s", lines[start]):
            raise CopyMarkerError(f"{where}: '# Copied from' must stand above a class or def")
        end = _block_end(lines, start)
        expected = _replace("\n".join(_source_lines(marker["name"], root)), marker["patterns"], where).split("\n")
        if _dedent(lines[start:end]) != expected:
            problems.append(f"{where}: differs from {marker['name']}"
                            + (f" with {marker['patterns']}" if marker["patterns"] else ""))
            if fix:
                indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
                lines[start:end] = [indent + line if line else "" for line in expected]
                end = start + len(expected)
        i = end
    if fix and problems:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return problems


def marked_copies(folder: Path | None = None) -> list[tuple[str, str]]:
    """(file:line, marker text) of every marker in the folder's (hf_lineage/models by default) ``.py`` files."""
    folder, found = folder or MODELS, []
    for path in sorted(folder.glob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if MARKER.match(line):
                found.append((f"{path.name}:{number}", line.strip()))
    return found


def check_folder(folder: Path | None = None, root: Path | None = None, fix: bool = False) -> list[str]:
    folder = folder or MODELS
    return [problem for path in sorted(folder.glob("*.py")) for problem in check_file(path, root, fix)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fix", action="store_true", help="rewrite the copies that differ from their sources")
    args = parser.parse_args(argv)
    problems = check_folder(fix=args.fix)
    for problem in problems:
        print(problem)
    if problems and not args.fix:
        print(f"{len(problems)} copies differ from their sources; run `python utils/check_copies.py --fix` "
              "to rewrite them, or change the source instead.")
    return 1 if problems and not args.fix else 0


if __name__ == "__main__":
    sys.exit(main())
