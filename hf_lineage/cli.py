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


def _finetune(args) -> int:
    from .tasks import classification, generation, labeling
    from .tasks.common import run_cli

    main = {
        "sequence_labeling": labeling.main,
        "classification": classification.main,
        "sentence_pairs": lambda argv: classification.main(argv, pairs=True),
        "generation": generation.main,
    }[args.task]
    return run_cli(main, args.recipe_args)


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
    # The recipes parse their own (transformers-style) options: everything after the task goes to them.
    finetune_parser = commands.add_parser(
        "finetune", add_help=False, help="fine-tune for a task with the recipes (same options as recipes/<task>.py)",
        description="hf-lineage finetune TASK [recipe options, e.g. --model_name_or_path ... --do_train]")
    finetune_parser.add_argument("task", choices=["sequence_labeling", "classification", "sentence_pairs",
                                                  "generation"])
    finetune_parser.add_argument("recipe_args", nargs=argparse.REMAINDER)
    finetune_parser.set_defaults(func=_finetune)
    from .lineage import experiment

    lineage_parser = commands.add_parser(
        "lineage", help="the main job: pretrain every family alike, fine-tune each on four task types, write a report",
        description=experiment.__doc__.split("\n")[0])
    experiment.build_parser(lineage_parser)
    lineage_parser.set_defaults(func=lambda args: experiment.run_namespace(vars(args)))
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
