"""Minimal pairs in BLiMP's format, read and checked: one JSON object per line with ``sentence_good``, ``sentence_bad``,
``UID`` (the paradigm), ``field`` and ``linguistics_term`` (the phenomenon); ``pairID`` and BLiMP's other keys are
kept when present and not required. A file, or a folder of ``*.jsonl`` files (BLiMP's ``data/``: one per paradigm).

    >>> pairs = read_pairs("blimp/data")                                   # doctest: +SKIP
    >>> pairs[0].good, pairs[0].bad, pairs[0].paradigm                      # doctest: +SKIP
    ('Who should Derek hug after shocking Richard?', 'Who should Derek hug Richard after shocking?', 'adjunct_island')

A line that is not a JSON object, a missing or empty field, or a paradigm given two different fields or phenomena is
a ``MinimalPairsError`` naming the file and the line (``data/adjunct_island.jsonl:7: ...``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

REQUIRED = ("sentence_good", "sentence_bad", "UID", "field", "linguistics_term")


class MinimalPairsError(ValueError):
    """Bad input to the minimal-pairs evaluation (data, a model argument, an option): the message says where."""


@dataclass(frozen=True)
class MinimalPair:
    good: str
    bad: str
    paradigm: str  # BLiMP's UID
    field: str  # morphology, syntax, syntax_semantics, semantics
    phenomenon: str  # BLiMP's linguistics_term
    pair_id: str
    file: str
    line: int


def data_files(source) -> list[Path]:
    """The ``.jsonl`` files of a file or folder (a folder's sorted by name, not recursing)."""
    source = Path(source)
    if source.is_dir():
        files = sorted(p for p in source.iterdir() if p.suffix == ".jsonl" and p.is_file())
        if not files:
            raise MinimalPairsError(f"{source}: no .jsonl files in this folder")
        return files
    if not source.is_file():
        raise MinimalPairsError(f"{source}: no such file or folder")
    return [source]


def read_file(path, limit: int | None = None) -> list[MinimalPair]:
    """The pairs of one file (the first ``limit`` of each paradigm in it, when given)."""
    path = Path(path)
    pairs, taken = [], {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as error:
                raise MinimalPairsError(f"{path}:{number}: not a JSON line ({error})") from None
            if not isinstance(row, dict):
                raise MinimalPairsError(f"{path}:{number}: a JSON object was expected, got {type(row).__name__}")
            missing = [key for key in REQUIRED if key not in row]
            if missing:
                raise MinimalPairsError(f"{path}:{number}: missing field{'s' if len(missing) > 1 else ''} "
                                        f"{', '.join(missing)} (a BLiMP line has {', '.join(REQUIRED)})")
            bad = [key for key in REQUIRED if not isinstance(row[key], str) or not row[key].strip()]
            if bad:
                raise MinimalPairsError(f"{path}:{number}: {', '.join(bad)} must be non-empty text")
            paradigm = row["UID"]
            if limit is not None and taken.get(paradigm, 0) >= limit:
                continue
            taken[paradigm] = taken.get(paradigm, 0) + 1
            pairs.append(MinimalPair(row["sentence_good"].strip(), row["sentence_bad"].strip(), paradigm,
                                     row["field"], row["linguistics_term"], str(row.get("pairID", number - 1)),
                                     str(path), number))
    return pairs


def read_pairs(sources, limit: int | None = None) -> list[MinimalPair]:
    """Every pair of the files and folders ``sources`` (one path or several), checked: each paradigm belongs to one
    field and one phenomenon. ``limit``: only the first so many pairs of each paradigm (in file order)."""
    if isinstance(sources, (str, Path)):
        sources = [sources]
    if limit is not None and limit < 1:
        raise MinimalPairsError(f"--max-pairs-per-paradigm must be at least 1, got {limit}")
    pairs, seen = [], {}
    for source in sources:
        for path in data_files(source):
            for pair in read_file(path, limit):
                first = seen.setdefault(pair.paradigm, pair)
                if (first.field, first.phenomenon) != (pair.field, pair.phenomenon):
                    raise MinimalPairsError(
                        f"{pair.file}:{pair.line}: paradigm {pair.paradigm} has field {pair.field!r} and "
                        f"linguistics_term {pair.phenomenon!r} here, but {first.field!r} and {first.phenomenon!r} at "
                        f"{first.file}:{first.line}")
                pairs.append(pair)
    if limit is not None:  # a paradigm spread over several files keeps its first ``limit`` pairs in all
        kept, counts = [], {}
        for pair in pairs:
            counts[pair.paradigm] = counts.get(pair.paradigm, 0) + 1
            if counts[pair.paradigm] <= limit:
                kept.append(pair)
        pairs = kept
    if not pairs:
        raise MinimalPairsError(f"{', '.join(map(str, sources))}: no minimal pairs (every line is blank)")
    return pairs


def embedded_sample() -> Path | None:
    """The BLiMP sample shipped in the package (``hf_lineage/samples/blimp/sample.jsonl``: 20 pairs of each paradigm,
    ``scripts/make_blimp_samples.py``); the command's ``--data`` defaults to it. None when it is missing (a broken
    install), and ``--data`` is then required."""
    from .. import samples

    sample = samples.path("blimp", "sample.jsonl")
    return sample if sample.is_file() else None
