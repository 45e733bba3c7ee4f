"""``hf-lineage``: the command-line entry point.

Subcommands are added by the modules that implement them (pre-training, the lineage experiment); each registers a
parser here through ``SUBCOMMANDS`` so ``hf-lineage --help`` always lists what exists.
"""

import argparse
import sys

from . import __version__
from .registry import FAMILIES


def family_facts(family: str) -> str:
    """What a family's record says beyond its classes, in one line of ``hf-lineage families``: its paper's size, how
    it is scored with no task head, its published release, what ``--init-from`` continues, LoRA's default targets and
    whether the lineage runs it by default."""
    spec = FAMILIES[family]
    base = spec.transformers_base
    scoring = spec.head_free_scoring or "no"
    if spec.word_vectors and spec.head_free_scoring:  # minimal_pairs.model_specs.kind_of_config
        scoring += " (a folder of its vectors alone: no)"
    facts = [f"paper size {spec.paper_size}", f"scored head-free: {scoring}",
             "release: " + (", ".join(spec.published.sources) if spec.published
                            else "convert reads it" if spec.release_converter else "none"),
             "--init-from: " + ("not continuable" if spec.not_continuable
                                else f"lineage or transformers' {base.class_name}" if base else "lineage")]
    if spec.lora_targets:
        facts.append(f"LoRA: {', '.join(spec.lora_targets)}")
    if spec.lineage is not None:
        facts.append("lineage: " + ("default run" if spec.lineage.in_default_run else "when named"))
    return "; ".join(facts)


def families_table(width: int = 100) -> str:
    """The families as a table: columns as wide as their longest entry, each family's classes and record facts
    (``family_facts``) wrapped under it."""
    import textwrap

    from .registry import family_summary  # read from the families' sources: no class imported (torch)

    rows, details = [("family", "model_type", "named sizes")], []
    for family in FAMILIES:
        summary = family_summary(family)
        rows.append((family, summary["model_type"], ", ".join(summary["named_sizes"])))
        details.append((f"classes: {', '.join(summary['classes'])}", family_facts(family)))
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    indent = " " * (widths[0] + 2)
    lines = []
    for i, (family, model_type, sizes) in enumerate(rows):
        lines.append(f"{family:{widths[0]}}  {model_type:{widths[1]}}  {sizes}".rstrip())
        for text in details[i - 1] if i else ():
            lines += textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + "  ",
                                   break_on_hyphens=False)
    return "\n".join(lines)


def _families(args) -> int:
    import shutil

    print(families_table(max(60, shutil.get_terminal_size().columns)))
    return 0


def _finetune(args) -> int:
    from .tasks import TASKS, run_cli

    return run_cli(TASKS[args.task].main, args.recipe_args)


def build_parser(only=None) -> argparse.ArgumentParser:
    """The ``hf-lineage`` parser. ``only``: the subcommands to build in full (None: all); the others get their name and
    help line alone, which is all ``hf-lineage --help`` shows, so that it imports none of their modules (torch)."""
    def wanted(name):
        return only is None or name in only

    parser = argparse.ArgumentParser(
        prog="hf-lineage",
        description="The lineage of NLP pretraining (NNLM, word2vec, ELMo, GPT, BERT) as Hugging Face models.",
    )
    parser.add_argument("--version", action="version", version=f"hf-lineage {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    families = commands.add_parser("families", help="list the model families, their sizes and classes")
    families.set_defaults(func=_families)
    _add_command(commands, "pretrain", wanted)
    # The recipes parse their own (transformers-style) options: everything after the task goes to them, --help
    # included (`hf-lineage finetune TASK --help` lists the recipe's options; `hf-lineage finetune --help` this).
    finetune_parser = commands.add_parser(
        "finetune", help="fine-tune for a task with the recipes (same options as recipes/<task>.py)",
        description="hf-lineage finetune TASK [recipe options, e.g. --model_name_or_path ... --do_train]. "
                    "`hf-lineage finetune TASK --help` lists the recipe's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    if wanted("finetune"):
        from .tasks import TASKS

        finetune_parser.epilog = "tasks:\n" + "\n".join(f"  {name:20} {task.description}"
                                                         for name, task in TASKS.items())
        finetune_parser.add_argument("task", choices=list(TASKS), metavar="TASK", help="one of the tasks below")
        finetune_parser.add_argument("recipe_args", nargs=argparse.REMAINDER, metavar="...",
                                     help="the recipe's options")
        finetune_parser.set_defaults(func=_finetune)
    for name in ("lineage", "xling", "checkpoints", "convert"):
        _add_command(commands, name, wanted)
    analyze_parser = commands.add_parser(
        "analyze", help="look inside saved models: polysemy, attention heads, layer probes",
        description="hf-lineage analyze KIND [options]; `hf-lineage analyze KIND --help` lists KIND's options.")
    if wanted("analyze"):
        from .analysis import cli as analysis_cli

        analysis_cli.build_parser(analyze_parser)
        analyze_parser.set_defaults(func=_analyze)
    _add_command(commands, "evaluate", wanted)
    quantize_parser = commands.add_parser(
        "quantize", help="dynamic int8 copy of a saved model's Linear and LSTM layers (CPU inference)",
        description="hf-lineage quantize MODEL_DIR OUTPUT_DIR: the lineage model saved in MODEL_DIR with its "
                    "Linear and LSTM layers quantized to int8 (dynamic), saved with its tokenizer to OUTPUT_DIR; "
                    "load it with hf_lineage.compression.quantization.load_quantized. See docs/quantization.md.")
    quantize_parser.add_argument("model_dir", help="a folder a lineage model was saved to (save_pretrained)")
    quantize_parser.add_argument("output_dir", help="where the quantized model goes (must not exist or be empty)")
    quantize_parser.add_argument("--modules", nargs="+", choices=["Linear", "LSTM"], default=["Linear", "LSTM"],
                                 help="layer types to quantize (default: both)")
    quantize_parser.add_argument("--overwrite", action="store_true", help="replace a non-empty OUTPUT_DIR")
    quantize_parser.set_defaults(func=_quantize)
    return parser


# The subcommands that are one module each: its help line here (``hf-lineage --help`` imports nothing else), and the
# module (relative to hf_lineage) whose ``description()``, ``build_parser(parser)`` and ``run_namespace(dict)`` make
# the rest.
COMMANDS = {
    "pretrain": ("pre-train a family on text (Accelerate engine)", "pretraining.cli"),
    "lineage": ("the main job: every family's pretrained checkpoint (shipped, your own or the papers' releases) "
                "fine-tuned side by side on the same tasks, with baselines; a report that judges the papers' claims",
                "lineage.cli"),
    "xling": ("multilingual BERT: pretrain on several languages, fine-tune on English, tag German and French "
              "zero-shot, with baselines, a ceiling and the vocabulary overlap", "crosslingual.cli"),
    "checkpoints": ("the shipped pretrained checkpoints: list them, build them anew, or push one to the Hub",
                    "shipping.cli"),
    "evaluate": ("zero-shot evaluations of saved models, no task head: minimal pairs (BLiMP)", "evaluations.cli"),
    "convert": ("a paper's own published checkpoint (BERT, OpenAI GPT, AllenNLP ELMo, word2vec, GloVe) as a lineage "
                "folder, optionally pushed to the Hub", "convert.cli"),
}


def _add_command(commands, name: str, wanted) -> None:
    """One ``COMMANDS`` subcommand: its name and help line always, its module's options only when ``wanted``."""
    import importlib

    help_line, module_name = COMMANDS[name]
    parser = commands.add_parser(name, help=help_line)
    if wanted(name):
        module = importlib.import_module(f".{module_name}", __package__)
        parser.description = module.description()
        module.build_parser(parser)
        parser.set_defaults(func=lambda args: module.run_namespace(vars(args)))


def _quantize(args) -> int:
    from .compression.quantization import quantize_folder

    try:
        out = quantize_folder(args.model_dir, args.output_dir, kinds=tuple(args.modules), overwrite=args.overwrite)
    except (ValueError, FileNotFoundError) as error:
        print(f"hf-lineage quantize: error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


def _analyze(args) -> int:
    from .analysis import cli as analysis_cli

    if not getattr(args, "kind", None):
        print("hf-lineage analyze: give a KIND: " + ", ".join(analysis_cli.ANALYSES), file=sys.stderr)
        return 2
    return analysis_cli.run_namespace(vars(args))


def main(argv=None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    # Only the subcommand asked for is built in full (its module imported): `hf-lineage --help` imports none.
    command = next((a for a in arguments if not a.startswith("-")), None)
    parser = build_parser(only={command} if command else set())
    args = parser.parse_args(arguments)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
