"""``hf-lineage lineage``'s command line (also ``python -m hf_lineage.lineage``): its options, every field of
``LineageArguments`` (``settings``), and the run (``experiment``)."""

from __future__ import annotations

import argparse
import sys

from ..convert.releases import published_releases
from ..experiments.stages import process_state
from ..registry import FAMILIES
from .settings import (
    DEFAULT_TASKS,
    DEFAULT_VARIANTS,
    PAIR_ENCODINGS,
    SCALES,
    LINEAGE_FAMILIES,
    LineageArguments,
    LineageError,
    default_families,
)


def description() -> str:
    # Here rather than experiment's docstring, so that --help does not import every stage (numpy, the statistics,
    # the report); run_namespace imports experiment.
    return "the history of NLP pretraining as one reproducible experiment."


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    unreleased = [name for name in LINEAGE_FAMILIES if name in FAMILIES and FAMILIES[name].no_release]
    parser = parser or argparse.ArgumentParser(prog="hf-lineage lineage", description=description())
    add = parser.add_argument
    add("--output-dir", default="lineage_report", help="where the report, results and stages go (default: %(default)s)")
    add("--scale", default="tiny", choices=list(SCALES),
        help="model sizes, corpus share, budget and task sizes (tiny: minutes on a CPU; small, base: a GPU)")
    add("--families", nargs="+", default=default_families(), metavar="FAMILY",
        help=f"families to run (default: {' '.join(default_families())}); also available: svd, the count-based root "
             "(PPMI-SVD vectors, Levy et al. 2015), not in the default run: its vectors take seconds but its "
             "fine-tuning cells would add minutes to the default 15-minute budget; and BERT's ablations "
             "bert-no-nsp (no next-sentence prediction) and bert-ltr (BERT's network trained left to right), at "
             "BERT's size, data and budget, with --pretrain")
    add("--tasks", nargs="+", default=list(DEFAULT_TASKS), metavar="TASK",
        help=f"tasks (default: {' '.join(DEFAULT_TASKS)}: UPOS labeling and a word-order task that needs context; "
             "order, its one-sentence twin, shift and wic, bigram shift and one word in two contexts, when named); "
             "also available: "
             "classification and pairs (E2E familyFriendly and paraphrase, which a bag of words solves), generation "
             "(E2E data-to-text, BLEU), qa (extractive question answering, SQuAD 2.0 style, F1), intent_slots "
             "(joint intent and BIO slots, exact match) and cloze (multiple choice: which of four words of one part "
             "of speech fills a blank in a UD English sentence, accuracy)")
    add("--variants", nargs="*", metavar="VARIANT",
        help="the regimes the understanding tasks run for every family besides its main variant (frozen for NNLM, "
             "word2vec and ELMo, finetuned for GPT and BERT): frozen (pretrained features fixed, the same scalar mix "
             "and BiLSTM head for every family), finetuned, scratch (default: frozen finetuned; the "
             "option with no value: the main variant only; the learning-curve task, labeling, always runs the "
             "pretrained variant and scratch at every size; without this option, on a machine without a GPU, a "
             "checkpoint of over 50 M parameters runs frozen only)")
    add("--corpus", nargs="+", metavar="FILE", help="pretraining text file(s) instead of the embedded sample")
    add("--validation-corpus", nargs="+", metavar="FILE", help="held-out text for the pretraining perplexities")
    add("--dataset-name", help="a datasets Hub corpus instead (online), e.g. wikitext")
    add("--dataset-config", help="its configuration, e.g. wikitext-103-raw-v1")
    add("--text-column", default="text")
    add("--budget-words", type=int, help="corpus words each family pretrains on (default: the scale's passes)")
    add("--budget-seconds", type=float, help="seconds of pretraining each family gets, instead of a word budget")
    add("--task-data", nargs=3, action="append", default=[], metavar=("TASK", "TRAIN", "VALIDATION"),
        help="local files for a task instead of its embedded sample, in a format its recipe reads (repeatable)")
    add("--task-train", type=int, help="labelled training examples per task (default: the scale's)")
    add("--task-validation", type=int, help="validation examples per task (default: the whole validation file)")
    add("--finetune-epochs", type=float,
        help="the most fine-tuning epochs; early stopping on the dev split usually ends sooner (default: the scale's)")
    add("--pair-encoding", choices=list(PAIR_ENCODINGS),
        help="how GPT and BERT read a sentence pair: cross, their papers' one sequence classified from [CLS] / <e>; "
             "siamese, each sentence encoded alone and mean-pooled, [u, v, |u-v|, u*v], as the other families read "
             "pairs (default: the scale's; tiny: siamese, on which the tiny Transformers learn the pairs task)")
    add("--curve-sizes", nargs="*", type=int, metavar="N",
        help="labelled-set sizes of the learning curves (default: the scale's; the option with no value: no curves)")
    add("--workers", type=int, help="fine-tuning cells run at once, each in a child process with one torch thread "
        "(default: the CPU cores, at most 4; with a GPU: 0, one at a time in this process)")
    add("--seeds", type=int, default=1, help="run everything with this many seeds (--seed, --seed + 1, ...) and "
        "report their mean and spread (default: %(default)s)")
    add("--mixed-precision", choices=["no", "bf16", "fp16"],
        help="default: the scale's where the device computes it natively, else float32 (said at the start)")
    add("--seed", type=int, default=0)
    add("--pretrain", action="store_true",
        help="pretrain every family anew on --corpus (default: the embedded WikiText-2 sample) with --budget-* "
             "instead of fine-tuning the shipped checkpoints (implied by --corpus, --dataset-name, --budget-* and "
             "--scale small/base)")
    add("--checkpoints", nargs="+", action="extend", metavar="DIR|FAMILY=SOURCE|published",
        help="fine-tune other pretrained folders instead of the shipped ones: DIR/<family> for every family (e.g. "
             "written by `hf-lineage checkpoints build --output-dir DIR`), and/or FAMILY=SOURCE for one family: a "
             "lineage folder or Hub id (a scale axis: e.g. bert=out/bert-small from `hf-lineage pretrain`), or "
             "anything `hf-lineage convert` reads (bert=google-bert/bert-base-cased, elmo=original, "
             "word2vec=GoogleNews-vectors-negative300.bin; several files joined by ','), converted once into "
             "OUTPUT_DIR/converted/FAMILY and reused; `published` names the standard set, the papers' own releases: "
             + "; ".join(f"{family}: {release.name} ({release.parameters}; read {release.words})"
                         for family, release in published_releases().items())
             + f" ({' and '.join(unreleased)} have none and keep the shipped checkpoint; docs/published.md). The "
             "family must be in "
             "--families. The pretraining table names each folder's size, words read and source; with --scale "
             "small/base the scale sets the fine-tuning only")
    add("--rerun", action="store_true", help="run every stage again instead of reusing finished ones (and convert "
        "the releases --checkpoints names again)")
    add("--blimp-pairs", type=int, metavar="N",
        help="pairs per BLiMP paradigm of the zero-shot grammar section (each language model and a Kneser-Ney "
             "n-gram scored on the embedded sample's minimal pairs, no task head): 1 to 20 (default: all 20, "
             "1,340 pairs); 0: no grammar section. The order_pairs zero-shot column runs whenever that task does")
    add("--keep-finetuned-models", action="store_true", help="keep the fine-tuned weights (deleted by default)")
    add("--compare", nargs="+", metavar="RUN_DIR",
        help="instead of running: put finished runs (their folders' results.json) side by side in one report, e.g. "
             "the shipped checkpoints' run and a --checkpoints published run: each claim's verdict, the main "
             "scores with their intervals and BLiMP per run, with BLiMP's published rows and the literature's "
             "figures for BERT-base (written to --output-dir, default lineage_comparison)")
    add("--no-frozen-feature-memo", dest="cache_frozen_features", action="store_false",
        help="recompute a frozen network's layers (ELMo, GPT, BERT) at every epoch of a frozen cell instead of "
             "computing each sentence's once and reusing them (the default; the head trains the same either way)")
    return parser


def arguments_from_namespace(namespace: dict) -> LineageArguments:
    values = {k: v for k, v in namespace.items() if k not in ("command", "func", "compare")}
    values["variants_given"] = values.get("variants") is not None
    if values.get("variants") is None:
        values["variants"] = list(DEFAULT_VARIANTS)
    values["task_data"] = {task: {"train": train, "validation": validation}
                           for task, train, validation in values.get("task_data") or []}
    return LineageArguments(**values)


def run_namespace(namespace: dict) -> int:
    """``hf-lineage lineage``: bad arguments exit with 2 before anything is written; a failed stage makes the exit
    status 1 after the report is written."""
    if namespace.get("compare"):
        return compare_namespace(namespace)
    from ..pretraining.cli import end_processes
    from . import experiment

    given = sys.argv[2:] if sys.argv[1:2] == ["lineage"] else sys.argv[1:]  # hf-lineage lineage / python -m
    try:
        args = arguments_from_namespace(namespace)
        results = experiment.run_lineage(args, command=" ".join(["hf-lineage lineage", *given]))
    except LineageError as error:
        print(f"hf-lineage lineage: error: {error}", file=sys.stderr)
        return 2
    finally:
        end_processes()
    failed = [s for s in [*results["pretraining"].values(), *results["finetuning"]] if s["status"] == "failed"]
    if failed and process_state().is_main_process:
        print(f"hf-lineage lineage: {len(failed)} stage(s) failed; see the report", file=sys.stderr)
    return 1 if failed else 0


def compare_namespace(namespace: dict) -> int:
    """``hf-lineage lineage --compare RUN_DIR ...``: finished runs in one report (``compare.py``); nothing runs."""
    from .compare import compare

    output = namespace["output_dir"]
    try:
        report = compare(namespace["compare"], "lineage_comparison" if output == "lineage_report" else output)
    except LineageError as error:
        print(f"hf-lineage lineage: error: {error}", file=sys.stderr)
        return 2
    print(f"hf-lineage lineage: {len(namespace['compare'])} runs compared in {report}")
    return 0


def main(argv=None) -> int:
    return run_namespace(vars(build_parser().parse_args(argv)))
