"""docs/architecture.md is the map of the package: a subpackage, a top-level module or an ``hf-lineage`` command it does
not name is a map that lies by omission."""

from __future__ import annotations

import argparse
from pathlib import Path

from hf_lineage import cli

ROOT = Path(__file__).resolve().parents[1]
MAP = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def subpackages() -> list[str]:
    return sorted(p.name for p in (ROOT / "hf_lineage").iterdir() if (p / "__init__.py").is_file())


def top_level_modules() -> list[str]:
    return sorted(p.name for p in (ROOT / "hf_lineage").glob("*.py") if p.name != "__init__.py")


def commands() -> list[str]:
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(subparsers.choices)


def test_the_map_names_every_subpackage_module_and_command():
    assert {"engine", "tasks", "lineage", "analysis", "compression", "word_vector_trainers"} <= set(subpackages())
    assert "pretraining" in subpackages() and "cli.py" in top_level_modules()
    assert {"finetune", "lineage", "analyze", "quantize"} <= set(commands())
    missing = [f"{name}/" for name in subpackages() if f"`{name}/`" not in MAP]
    missing += [name for name in top_level_modules() if f"`{name}`" not in MAP]
    missing += [f"hf-lineage {name}" for name in commands() if f"`hf-lineage {name}" not in MAP]
    assert not missing, f"docs/architecture.md does not name {missing}"


def test_the_map_names_no_module_that_is_gone():
    """Every `folder/module` path the map's tables name exists (a renamed module leaves no stale entry)."""
    import re

    stale = []
    for folder, module in re.findall(r"`([a-z_]+)/([a-z_]+)`", MAP):
        if (ROOT / "hf_lineage" / folder).is_dir() and not any(
                (ROOT / "hf_lineage" / folder / f"{module}{suffix}").exists() for suffix in (".py", "")):
            stale.append(f"{folder}/{module}")
    assert not stale, f"docs/architecture.md names modules that do not exist: {stale}"
