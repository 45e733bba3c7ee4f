"""``hf-lineage evaluate minimal-pairs`` (``hf-lineage evaluate minimal-pairs --models gpt nnlm elmo bert kneser-ney
--data blimp/data``): its ``description``, options and ``run``, as ``hf_lineage.evaluations`` asks of an evaluation.

Nothing heavy is imported here: the parser is built without torch (``hf-lineage evaluate minimal-pairs --help``), and
the models load when the command runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

PROG = "hf-lineage evaluate"


def description() -> str:
    return (
        "Score minimal pairs (BLiMP's jsonl format: sentence_good, sentence_bad, UID, field, linguistics_term) with "
        "each model, no task head: a pair is right when the grammatical sentence scores higher. Causal LMs (lineage "
        "GPT and NNLM, GPT-2, OpenAI GPT): the sum of next-token log-probabilities after the start token; ELMo: its "
        "forward LM, its backward LM and their sum; BERT: pseudo-log-likelihood and PLL-word-l2r; kneser-ney[:ORDER]: "
        "an interpolated Kneser-Ney n-gram trained on the shipped checkpoints' WikiText-2 text; svd, word2vec, GloVe "
        "are listed as having no sentence probability. Each model reads the sentences as its pretraining text was "
        "written (WikiText's tokenization for the shipped checkpoints). Ties (the same input for both sentences) "
        "count as half and are counted. Writes minimal_pairs.json, minimal_pairs.md and minimal_pairs.png. See "
        "docs/minimal_pairs.md."
    )


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--models", nargs="+", required=True, metavar="MODEL",
                        help="[LABEL=]SOURCE, each: a shipped checkpoint (svd nnlm word2vec glove elmo gpt bert), a "
                             "saved model folder, a Hub model id (gpt2, google-bert/bert-base-uncased), or "
                             "kneser-ney[:ORDER] (ORDER 2-5, default 5)")
    parser.add_argument("--data", nargs="+", metavar="FILE_OR_DIR",
                        help="BLiMP-format .jsonl files or folders of them (BLiMP's data/); default: the sample the "
                             "package embeds, 20 pairs of each of BLiMP's 67 paradigms")
    parser.add_argument("--output-dir", default="minimal_pairs", metavar="OUT",
                        help="where the JSON, Markdown table and plot go (default: minimal_pairs)")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --output-dir")
    parser.add_argument("--max-pairs-per-paradigm", type=int, metavar="N",
                        help="only the first N pairs of each paradigm (in file order)")
    parser.add_argument("--ngram-train-file", nargs="+", metavar="FILE",
                        help="the Kneser-Ney model's training text (default: the WikiText-2 sample the package "
                             "embeds, the start of the shipped checkpoints' pretraining text)")
    parser.add_argument("--text-format", choices=["auto", "wikitext", "raw"], default="auto",
                        help="how sentences are written for every model: auto (default) follows each model's "
                             "pretraining record: WikiText's tokenization for a model pretrained on WikiText, the "
                             "sentence as it is otherwise")
    parser.add_argument("--batch-size", type=int, metavar="N",
                        help="rows per forward pass: sentences (default 64), masked copies for PLL (default 128; a "
                             "sentence's copies are never split)")
    parser.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    parser.add_argument("--resamples", type=int, default=1000,
                        help="bootstrap resamples for the 95%% intervals (default 1000; 0: no intervals)")
    parser.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default 0)")
    parser.add_argument("--pair-scores", action="store_true",
                        help="also write pair_scores.jsonl: every pair's two scores and outcome per scoring")
    parser.add_argument("--quiet", action="store_true", help="no progress bars or per-model lines")
    return parser


def _error(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace | dict) -> int:
    """``hf-lineage evaluate minimal-pairs`` with parsed options: the data read and checked and every model resolved
    before any is loaded; a clear error (exit status 2) and nothing in OUT otherwise."""
    import shlex

    from .model_specs import resolve_models
    from .pairs import MinimalPairsError, embedded_sample, read_pairs

    args = argparse.Namespace(**args) if isinstance(args, dict) else args
    log = None if args.quiet else (lambda line: print(f"{PROG} minimal-pairs: {line}", file=sys.stderr, flush=True))
    try:
        data = args.data
        if not data:
            sample = embedded_sample()
            if sample is None:
                raise MinimalPairsError("give --data: BLiMP-format .jsonl files or a folder of them (BLiMP's data/); "
                                        "the package embeds no sample")
            data = [str(sample)]
        if args.batch_size is not None and args.batch_size < 1:
            raise MinimalPairsError(f"--batch-size must be at least 1, got {args.batch_size}")
        if args.resamples < 0:
            raise MinimalPairsError(f"--resamples must be 0 or more, got {args.resamples}")
        for name in args.ngram_train_file or []:
            if not Path(name).is_file():
                raise MinimalPairsError(f"--ngram-train-file {name}: no such file")
        pairs = read_pairs(data, limit=args.max_pairs_per_paradigm)
        specs = resolve_models(args.models, args.text_format, args.ngram_train_file)
        out = Path(args.output_dir)
        if out.exists() and (not out.is_dir() or any(out.iterdir())) and not args.overwrite:
            raise MinimalPairsError(f"--output-dir {out}: exists and is not empty (give --overwrite to replace it)")
        if log:
            log(f"{len(pairs):,} pairs, {len({p.paradigm for p in pairs})} paradigms; models: "
                + ", ".join(f"{s.label} ({s.kind})" for s in specs))
        import torch

        from .outputs import write_outputs
        from .zero_shot import evaluate_models

        device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
        results = evaluate_models(specs, pairs, device=device, batch_size=args.batch_size,
                                  ngram_train_files=args.ngram_train_file, resamples=args.resamples, seed=args.seed,
                                  progress=not args.quiet, log=log)
        results["machine"]["threads"] = torch.get_num_threads()
        command = "hf-lineage evaluate minimal-pairs " + " ".join(shlex.quote(a) for a in _given_arguments(args))
        write_outputs(results, out, command=command, pairs=pairs if args.pair_scores else None,
                      overwrite=args.overwrite)
    except (MinimalPairsError, FileExistsError) as error:
        return _error(str(error))
    if log:
        for name, system in results["systems"].items():
            overall = system["overall"]
            low = f" [{overall['low']:.3f}, {overall['high']:.3f}]" if overall.get("low") is not None else ""
            log(f"{name}: {overall['accuracy']:.3f}{low} mean over paradigms, {overall['ties']:,} ties")
    print(f"wrote {out}")
    return 0


def _given_arguments(args) -> list[str]:
    """The options as a command line, for the report (the defaults left out)."""
    words = ["--models", *args.models]
    if args.data:
        words += ["--data", *args.data]
    for flag, value, default in (("--max-pairs-per-paradigm", args.max_pairs_per_paradigm, None),
                                 ("--text-format", args.text_format, "auto"), ("--batch-size", args.batch_size, None),
                                 ("--resamples", args.resamples, 1000), ("--seed", args.seed, 0)):
        if value != default:
            words += [flag, str(value)]
    if args.ngram_train_file:
        words += ["--ngram-train-file", *args.ngram_train_file]
    return words + ["--output-dir", str(args.output_dir)]


def main(argv=None) -> int:
    """``python -m hf_lineage.minimal_pairs.cli [options]``: the same as ``hf-lineage evaluate minimal-pairs``."""
    parser = add_arguments(argparse.ArgumentParser(prog=f"{PROG} minimal-pairs", description=description()))
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
