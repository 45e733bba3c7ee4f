"""The README and the docs pages show commands that work (issue 44: the README's commands moved to docs/ and stay
true there): every ``hf-lineage`` command, ``python recipes/*.py`` and ``accelerate launch`` line in a ``bash`` block
names a command, script, config file and options that exist; the README's Install, Run and Test commands are the ones
CI runs (``.ci/run``); every relative link in them leads to a file. Parsers only: nothing is run."""

from __future__ import annotations

import argparse
import importlib.util
import re
import shlex
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


def shell_commands(text: str) -> list[str]:
    """The command lines of a page's ``bash`` blocks: continuation lines joined, comments and prompts dropped."""
    lines = []
    for block in re.findall(r"```(?:bash|sh|shell)\n(.*?)```", text, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            if line:
                lines.append(line)
    return lines


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return set(parser._option_string_actions)


def _subparsers(parser: argparse.ArgumentParser) -> dict:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return {}


@lru_cache
def _cli():
    from hf_lineage import cli

    return cli.build_parser()


@lru_cache
def _dataclass_options(kind: str) -> frozenset:
    from transformers import HfArgumentParser

    if kind == "distillation":
        from hf_lineage.compression import distillation_recipe
        from hf_lineage.tasks import DataTrainingArguments, ModelArguments
        from transformers import TrainingArguments

        types = (ModelArguments, DataTrainingArguments, TrainingArguments,
                 distillation_recipe.DistillationArguments)
    elif kind == "prune_heads":
        from hf_lineage.compression import prune_heads_recipe
        from hf_lineage.tasks import DataTrainingArguments, ModelArguments
        from transformers import TrainingArguments

        types = (ModelArguments, DataTrainingArguments, TrainingArguments, prune_heads_recipe.PruningArguments)
    else:
        from hf_lineage.tasks import TASKS

        types = TASKS[kind].arguments
    return frozenset(_options(HfArgumentParser(types)))


def _flags(words: list[str]) -> list[str]:
    return [w.split("=", 1)[0] for w in words if w.startswith("--")]


def _unknown(flags: list[str], known) -> list[str]:
    return [f for f in flags if f not in known]


def check_hf_lineage(words: list[str]) -> list[str]:
    """Problems with ``hf-lineage WORDS...``: the subcommand chain and every option."""
    parser, rest = _cli(), list(words)
    if not rest or rest == ["--help"] or rest == ["--version"]:
        return []
    command = rest.pop(0)
    commands = _subparsers(parser)
    if command not in commands:
        return [f"no command `hf-lineage {command}`"]
    parser = commands[command]
    if command in ("finetune", "analyze") and not rest:  # lists its tasks / kinds
        return []
    if command == "finetune":
        task = rest.pop(0) if rest else None
        from hf_lineage.tasks import TASKS

        if task not in TASKS:
            return [f"no task `hf-lineage finetune {task}`"]
        return _unknown(_flags(rest), _dataclass_options(task) | {"--help"})
    if command == "analyze":
        from hf_lineage.analysis import cli as analysis_cli, options as analysis_options

        kind = rest.pop(0) if rest else None
        if kind not in analysis_cli.ANALYSES:
            return [f"no analysis `hf-lineage analyze {kind}`"]
        sub = argparse.ArgumentParser()
        getattr(analysis_options, f"{kind}_arguments")(sub)
        return _unknown(_flags(rest), _options(sub))
    subs = _subparsers(parser)
    if subs and rest and not rest[0].startswith("-"):
        action = rest.pop(0)
        if action not in subs:
            return [f"no `hf-lineage {command} {action}`"]
        parser = subs[action]
    return _unknown(_flags(rest), _options(parser))


def check_recipe(words: list[str]) -> list[str]:
    script = ROOT / words[0]
    if not script.is_file():
        return [f"no script {words[0]}"]
    return _unknown(_flags(words[1:]), _dataclass_options(script.stem) | {"--help"})


MODULES = {"hf_lineage.pretraining": "pretrain", "hf_lineage.lineage": "lineage"}


def check_accelerate(words: list[str]) -> list[str]:
    problems, rest = [], list(words)
    while rest and rest[0] != "-m" and not rest[0].endswith(".py"):
        word = rest.pop(0)
        if word == "--config_file":
            config = rest.pop(0)
            if not (ROOT / config).is_file():
                problems.append(f"no Accelerate config {config}")
    if not rest:
        return problems + ["no module or script to launch"]
    if rest[0] == "-m":
        module = rest[1]
        if importlib.util.find_spec(module) is None:
            return problems + [f"no module {module}"]
        if module in MODULES:
            problems += check_hf_lineage([MODULES[module], *rest[2:]])
        return problems
    return problems + check_recipe(rest)


def check_command(line: str) -> list[str]:
    try:
        words = shlex.split(line)
    except ValueError as error:
        return [f"does not parse as a shell line: {error}"]
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # VAR=value prefixes
        words.pop(0)
    if not words:
        return []
    if words[0] == "hf-lineage":
        return check_hf_lineage(words[1:])
    if words[0] == "python" and len(words) > 1 and words[1].startswith("recipes/"):
        return check_recipe(words[1:])
    if words[:2] == ["accelerate", "launch"]:
        return check_accelerate(words[2:])
    return []


def _documented_commands():
    for page in PAGES:
        for line in shell_commands(page.read_text(encoding="utf-8")):
            if line.startswith(("hf-lineage", "python recipes/", "accelerate launch")) or re.match(r"[A-Z_]+=\S* ", line):
                yield pytest.param(line, id=f"{_rel(page)}: {line[:60]}")
    # The README's tables and paragraphs show commands inline too.
    for line in re.findall(r"`((?:hf-lineage|python recipes/)[^`]*)`", (ROOT / "README.md").read_text(encoding="utf-8")):
        yield pytest.param(line, id=f"README.md (inline): {line[:60]}")


@pytest.mark.parametrize("line", list(_documented_commands()))
def test_every_documented_command_exists_with_its_options(line):
    assert check_command(line) == []


def test_the_readme_still_shows_the_main_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = shell_commands(readme)
    assert any(c.startswith("hf-lineage lineage") for c in commands)
    assert any(c.startswith("python recipes/") for c in commands)
    assert "AutoModel.from_pretrained" in readme and "hf_lineage.checkpoints" in readme


def test_the_readme_install_run_and_test_commands_are_what_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    for section in ("Install", "Run", "Test"):
        body = readme.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
        command = shell_commands(body)[0]
        assert command in ci, f"README's {section} command `{command}` is not a line of .ci/run"


def test_the_checker_catches_a_wrong_command():
    assert check_command("hf-lineage lineage --seeds 3") == []
    assert check_command("hf-lineage lineage --no-such-flag") == ["--no-such-flag"]
    assert check_command("hf-lineage nosuch") == ["no command `hf-lineage nosuch`"]
    assert check_command("python recipes/classification.py --model_name_or_path x --not_an_option 1") == [
        "--not_an_option"]
    assert check_command("python recipes/nosuch.py --help") == ["no script recipes/nosuch.py"]
    assert check_command("hf-lineage analyze probes --models a --output-dir b") == []
    assert check_command("hf-lineage analyze probes --modelz a") == ["--modelz"]


LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_relative_link_leads_to_a_file(page):
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert broken == []
