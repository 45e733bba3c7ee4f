"""The final save of an engine run: the model folder (``save_final``) with a model card saying how it was trained,
``train_results.json`` (the loop's numbers) and ``pretraining.json`` (the record of this pre-training stage: what it
started from, what it read, where it ended)."""

from __future__ import annotations

import json

from ..data.examples import corpus_paths
from ..models.card_lineage_utils import public_name
from ..folders.pretrained import save_final

RECORD_FILE = "pretraining.json"


def public_file(name: str) -> str:
    """A corpus file by its name (``LANG=NAME`` for one language of a multilingual corpus): the card and the record
    are published with the folder, the trainer's own folders are not."""
    language, equals, path = name.partition("=")
    return f"{language}={public_name(path)}" if equals else public_name(name)


def save_run(run, state: dict, outcome) -> None:
    """On the main process, once every process is done: the model folder with its card, and ``train_results.json``."""
    args, accelerator = run.args, run.accelerator
    accelerator.wait_for_everyone()
    if not accelerator.is_main_process:
        return
    sequences = run.plan.global_batch * args.gradient_accumulation_steps
    data = (", ".join(map(public_file, args.train_file)) if args.train_file
            else f"{args.dataset_name} ({args.dataset_config})")
    summary = "\n".join(f"| {k} | {v:.4f} |" for k, v in outcome.results.items())
    start = f"--init-from {public_name(args.init_from)}" if run.base is not None else f"--config {args.config}"
    continuing = f", {run.base.describe(public_name)}" if run.base is not None else ""
    objective = run.objective.objective_record()
    card_extra = (
        f"\n## Pre-training\n\n`hf-lineage pretrain {args.family} {start}` on {data}: "
        f"{state['step']} steps of {sequences} sequences (seed {args.seed}){continuing}.\n"
        + (f"\nObjective: {objective['description']}.\n" if objective else "")
        + (f"\n| validation | value |\n|---|---|\n{summary}\n" if outcome.results else "")
    )
    languages = run.objective.language_report
    if languages:
        from ..data.languages import languages_card

        card_extra += languages_card(languages, args.language_alpha)
    save_final(accelerator.unwrap_model(run.model), run.tokenizer, run.output_dir, card_extra, languages=languages,
               datasets=[args.dataset_name] if args.dataset_name else args.train_file,
               base_model=getattr(args, "init_from", None))  # continued pretraining names its base model
    (run.output_dir / "train_results.json").write_text(json.dumps(
        {"step": state["step"], "epoch": state["epoch"], "steps_per_epoch": run.plan.steps_per_epoch,
         "examples_seen": state["examples_seen"], "tokens_seen": state["tokens_seen"],
         "train_runtime": outcome.train_runtime, "train_tokens_per_second": outcome.tokens_per_second,
         "stopped_by_clock": outcome.stopped_by_clock, "eval": outcome.results,
         "perplexity_of": run.objective.perplexity_of,  # the evaluation loss whose exp is its perplexity
         **({"languages": languages, "language_alpha": args.language_alpha} if languages else {}),
         "log_history": state["log_history"]},
        indent=2))
    (run.output_dir / RECORD_FILE).write_text(json.dumps(pretraining_record(run, state, outcome), indent=2) + "\n")


def pretraining_record(run, state: dict, outcome) -> dict:
    """This stage's record: the base it continued (``init_from``, and ``converted_from`` when converted on load;
    None from scratch), its data, and the words, tokens and steps it read. The words are the corpus's
    (whitespace-separated) times the passes made; None for a stream or a Hub dataset, whose length is unknown."""
    args, plan = run.args, run.plan
    corpus_words = count_words(corpus_paths(args.train_file)) if args.train_file and not args.streaming else None
    words_seen = (round(state["step"] / plan.steps_per_epoch * corpus_words)
                  if corpus_words is not None and plan.steps_per_epoch else None)
    model = run.accelerator.unwrap_model(run.model)
    start = next((entry for entry in state["log_history"] if entry["step"] == 0), None)
    return {
        "family": args.family, **(run.base.record(public_name) if run.base is not None else {"init_from": None}),
        "config": None if args.init_from else args.config, "overrides": args.overrides, "seed": args.seed,
        # Files and a local base by name, as the shipped records (the folder is pushed; run_args.json, kept home,
        # has the paths).
        "corpus": {"files": [public_file(f) for f in args.train_file or []], "dataset": args.dataset_name,
                   "validation_files": [public_file(f) for f in args.validation_file or []],
                   "train_words": corpus_words},
        "parameters": sum(p.numel() for p in model.parameters()),
        "steps": state["step"], "words_seen": words_seen, "tokens_seen": state["tokens_seen"],
        "train_seconds": state["train_seconds"],
        # A continued run's starting point: the base model's numbers on this run's validation data.
        **({"base_validation": {k[len("eval_"):]: v for k, v in start.items() if k.startswith("eval_")}}
           if start else {}),
        "validation": outcome.results,
        # What it was trained on, where the family's switches can change it (BERT's NSP, masking rate and split).
        **({"objective": objective} if (objective := run.objective.objective_record()) else {}),
    }


def count_words(paths) -> int:
    """Whitespace-separated words of the given text files, read line by line."""
    words = 0
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            words += sum(len(line.split()) for line in f)
    return words
