"""``hf-lineage xling``'s command line: its options (every field of ``CrosslingualArguments``) and the run."""

from __future__ import annotations

import argparse
import sys

from ..lineage.settings import SCALES, LineageError
from . import transfer
from .transfer import PRETRAIN_STEPS, CrosslingualArguments


def description() -> str:
    return transfer.__doc__.split("\n")[0]


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="hf-lineage xling", description=description())
    defaults = CrosslingualArguments()
    add = parser.add_argument
    add("--output-dir", default=defaults.output_dir, help="where the report, results and stages go (%(default)s)")
    add("--scale", default=defaults.scale, choices=list(SCALES), help="BERT's size and batches (lineage scales)")
    add("--pretraining-text", nargs="+", metavar="LANG=PATH",
        help="the multilingual model's text, English (en) and at least one more language; the English-only model "
             "reads the en files (default: the embedded WikiText-2 sample and UD German GSD dev text)")
    add("--target", nargs=3, action="append", metavar=("LANG", "TEST", "DEV"),
        help="a target language's UD test set (zero-shot evaluation) and dev set (the in-language ceiling), JSON "
             "lines {tokens, tags} (repeatable; default: the embedded German and French GSD sets)")
    add("--source-train", default=defaults.source_train, help="English UPOS JSON lines to fine-tune on")
    add("--source-validation", default=defaults.source_validation, help="English UPOS JSON lines to report")
    add("--source-sentences", type=int, default=defaults.source_sentences,
        help="English labelled sentences to fine-tune on (%(default)s)")
    add("--language-alpha", type=float, default=defaults.language_alpha,
        help="language smoothing exponent, p ∝ q^α (multilingual BERT: %(default)s)")
    add("--pretrain-steps", type=int, help=f"steps per model (default: the scale's, {PRETRAIN_STEPS})")
    add("--finetune-epochs", type=float, help="the most epochs a fine-tuning cell trains (default: the lineage "
        "scale's: up to 15, at least 150 updates, early stopping on the dev split)")
    add("--seeds", type=int, default=defaults.seeds, help="fine-tuning seeds (%(default)s)")
    add("--pretraining-seeds", type=int, default=defaults.pretraining_seeds,
        help="pre-training seeds (%(default)s; at most --seeds): fine-tuning seed i starts from pre-training seed "
             "i mod N's models")
    add("--seed", type=int, default=defaults.seed)
    add("--workers", type=int, help="fine-tuning cells at once (default: the CPU cores, at most 4; 0: in this process)")
    add("--rerun", action="store_true", help="ignore finished stages")
    return parser


def run_namespace(namespace: dict) -> int:
    values = {k: v for k, v in namespace.items() if k not in ("command", "func") and v is not None}
    if "target" in values:
        values["targets"] = {language: {"test": test, "dev": dev} for language, test, dev in values.pop("target")}
    try:
        results = transfer.run(CrosslingualArguments(**values))
    except LineageError as error:
        print(f"hf-lineage xling: error: {error}", file=sys.stderr)
        return 2
    if results["failed_stages"]:  # reported, and the rest ran; a re-run retries them and reuses the others
        print(f"hf-lineage xling: failed stages: {', '.join(results['failed_stages'])}", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    return run_namespace(vars(build_parser().parse_args(argv)))
