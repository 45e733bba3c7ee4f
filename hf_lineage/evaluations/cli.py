"""``hf-lineage evaluate KIND [options]``: one subcommand per ``EVALUATIONS`` entry, each with its module's options."""

from __future__ import annotations

import argparse
import sys

from . import EVALUATIONS

PROG = "hf-lineage evaluate"


def description() -> str:
    return f"{PROG} KIND [options]; `{PROG} KIND --help` lists KIND's options."


def build_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` with one subcommand per evaluation (``evaluation``: the kind chosen)."""
    kinds = parser.add_subparsers(dest="evaluation", metavar="KIND")
    for kind, evaluation in EVALUATIONS.items():
        module = evaluation.cli()
        module.add_arguments(kinds.add_parser(kind, help=evaluation.help, description=module.description()))
    return parser


def run_namespace(namespace: dict) -> int:
    """The chosen evaluation run with its parsed options, or the kinds listed (exit status 2) when none was given."""
    kind = namespace.get("evaluation")
    if not kind:
        print(f"{PROG}: give a KIND: {', '.join(EVALUATIONS)}", file=sys.stderr)
        return 2
    return EVALUATIONS[kind].cli().run(namespace)


def main(argv=None) -> int:
    parser = build_parser(argparse.ArgumentParser(prog=PROG, description=description()))
    return run_namespace(vars(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
