"""``hf-lineage analyze KIND ...``: one subcommand per analysis module of this package.

Each KIND's options come from ``options`` (no torch, SciPy or scikit-learn); its module is imported only once the
options parsed, so that every ``--help`` answers at once and one analysis's dependencies never slow another."""

from __future__ import annotations

import argparse
import importlib

from . import options

# subcommand -> (module of hf_lineage.analysis, one-line help); its options: ``options.<subcommand>_arguments``
ANALYSES = {
    "polysemy": ("polysemy", "one word in several senses: static vs contextual vectors per occurrence"),
    "attention": ("attention", "what each attention head of a BERT/GPT model attends to"),
    "probes": ("probes", "layer-wise linear probes (with a control task) on frozen features"),
}


def analysis_module(kind: str):
    return importlib.import_module(f"{__package__}.{ANALYSES[kind][0]}")


def build_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    kinds = parser.add_subparsers(dest="analysis", metavar="KIND")
    for kind, (_, help_) in ANALYSES.items():
        # No option prefix of its own: argparse's REMAINDER does not take options that come first ("attention
        # --model X" failed with "unrecognized arguments: --model"), so every word goes to the module's parser.
        sub = kinds.add_parser(kind, help=help_, description=help_, add_help=False, prefix_chars="\0")
        sub.add_argument("analysis_args", nargs=argparse.REMAINDER, metavar="...",
                         help=f"options of `hf-lineage analyze {kind}` (see `hf-lineage analyze {kind} --help`)")
        sub.set_defaults(kind=kind)
    return parser


def run_namespace(namespace: dict) -> int:
    """Parses the chosen analysis's own options (``--help`` exits here, before the analysis is imported), then runs
    it."""
    kind = namespace["kind"]
    parser = argparse.ArgumentParser(prog=f"hf-lineage analyze {kind}", description=ANALYSES[kind][1])
    getattr(options, f"{kind}_arguments")(parser)
    args = parser.parse_args(namespace["analysis_args"])
    return analysis_module(kind).main(args)
