"""``hf-lineage``: the command-line entry point.

Subcommands are added by the modules that implement them (pre-training, the lineage experiment); each registers a
parser here through ``SUBCOMMANDS`` so ``hf-lineage --help`` always lists what exists.
"""

import argparse
import sys

from . import __version__
from .registry import FAMILIES


def _families(args) -> int:
    from .registry import family_classes

    for family in FAMILIES:
        config_class, modeling = family_classes(family)
        sizes = ", ".join(config_class.named_sizes)
        print(f"{family:10s} model_type={config_class.model_type:14s} sizes: {sizes}")
        print(f"{'':10s} classes: {', '.join(dict.fromkeys(modeling.AUTO_CLASSES.values()))}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hf-lineage",
        description="The lineage of NLP pretraining (NNLM, word2vec, ELMo, GPT, BERT) as Hugging Face models.",
    )
    parser.add_argument("--version", action="version", version=f"hf-lineage {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    families = commands.add_parser("families", help="list the model families, their sizes and classes")
    families.set_defaults(func=_families)
    from . import pretrain

    pretrain_parser = commands.add_parser("pretrain", help="pre-train a family on text (Accelerate engine)",
                                          description=pretrain.__doc__.split("\n")[0])
    pretrain.build_parser(pretrain_parser)
    pretrain_parser.set_defaults(func=lambda args: pretrain.run_namespace(vars(args)))
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
