"""The final save of an engine run: the model folder (``save_final``) with a model card saying how it was trained,
and ``train_results.json``."""

from __future__ import annotations

import json

from ..data.languages import languages_card
from ..models.card_lineage_utils import public_name
from ..pretrained_folder import save_final


def save_run(run, state: dict, outcome) -> None:
    """On the main process, once every process is done: the model folder with its card, and ``train_results.json``."""
    args, accelerator = run.args, run.accelerator
    accelerator.wait_for_everyone()
    if not accelerator.is_main_process:
        return
    sequences = run.plan.global_batch * args.gradient_accumulation_steps
    # Files by name (LANG=NAME for a multilingual corpus): the card is published, the trainer's folders are not.
    data = (", ".join("=".join([*name.split("=", 1)[:-1], public_name(name.split("=", 1)[-1])])
                      for name in args.train_file)
            if args.train_file else f"{args.dataset_name} ({args.dataset_config})")
    summary = "\n".join(f"| {k} | {v:.4f} |" for k, v in outcome.results.items())
    card_extra = (
        f"\n## Pre-training\n\n`hf-lineage pretrain {args.family} --config {args.config}` on {data}: "
        f"{state['step']} steps of {sequences} sequences (seed {args.seed}).\n"
        + (f"\n| validation | value |\n|---|---|\n{summary}\n" if outcome.results else "")
    )
    languages = run.objective.language_report
    if languages:
        card_extra += languages_card(languages, args.language_alpha)
    save_final(accelerator.unwrap_model(run.model), run.tokenizer, run.output_dir, card_extra, languages=languages,
               datasets=[args.dataset_name] if args.dataset_name else args.train_file,
               base_model=getattr(args, "init_from", None))  # continued pretraining names its base model
    (run.output_dir / "train_results.json").write_text(json.dumps(
        {"step": state["step"], "epoch": state["epoch"], "steps_per_epoch": run.plan.steps_per_epoch,
         "examples_seen": state["examples_seen"], "tokens_seen": state["tokens_seen"],
         "train_runtime": outcome.train_runtime, "train_tokens_per_second": outcome.tokens_per_second,
         "stopped_by_clock": outcome.stopped_by_clock, "eval": outcome.results,
         **({"languages": languages, "language_alpha": args.language_alpha} if languages else {}),
         "log_history": state["log_history"]},
        indent=2))
