"""``hf-lineage lineage``: the history of NLP pretraining as one reproducible experiment.

Every requested family (NNLM → word2vec → ELMo → GPT → BERT) starts from the checkpoint the package ships
(``hf_lineage.checkpoints``: pretrained once, on the whole WikiText-2 training text, under one equal compute budget)
or is pretrained anew (``--pretrain``) on the same corpus with the same budget by the shared engine or its own CPU
trainer (``hf_lineage.pretraining``); it is then fine-tuned on the tasks by the recipes' own code
(``hf_lineage.tasks``); the numbers go into ``report.md``, ``results.json`` and PNG plots.

    hf-lineage lineage                                   # the default: shipped checkpoints, embedded tasks
    hf-lineage lineage --seeds 3                         # mean and spread over three fine-tuning seeds
    hf-lineage lineage --pretrain --budget-seconds 50    # pretrain every family anew on the embedded sample
    hf-lineage lineage --scale small --corpus wiki.train.tokens --validation-corpus wiki.valid.tokens
    accelerate launch -m hf_lineage.lineage --scale base --dataset-name wikitext --dataset-config wikitext-103-raw-v1

The steps, one module each: ``settings`` (what runs), ``data`` (the corpus; each task's training subsets, dev split
and validation set), ``pretraining`` (the budget: by default equal time per family, fixed as corpus words so a run is
reproducible; ``--budget-words`` equal data, ``--budget-seconds`` wall-clock), ``finetuning`` (one cell: a family
used one way — **frozen**, **finetuned** or from **scratch** — on one task at one labelled-set size, trained until
its dev split stops improving), ``baselines`` and ``scoring``/``statistics`` (scores, bootstrap intervals, seeds),
``claims`` (verdicts), ``plots`` and ``report``. The main table shows each family the way its paper used it
(``main_variant``); the learning curves repeat the pretrained and from-scratch cells at several labelled-set sizes.

Every stage (one task's data, one pretraining, one fine-tuning cell and seed) runs in its own folder under
``<output-dir>/stages/`` and records ``stage.json`` when it ends: a re-run with the same settings reuses finished
stages, and a stage that fails is recorded with its error (in the table and the report) while the rest continue.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from .. import __version__
from ..experiments.stages import Stages, process_state
from ..machine.precision import describe_machine
from . import claims, diagnostics, plots, report
from .stage_data import prepare_corpus, prepare_task_data, read_task_file, task_files
from .finetuning import (
    cell_learning_rate,
    cell_variants,
    finetune,
    memo_totals,
    pretrained_variant,
    small_set_updates,
    sweeps_learning_rate,
    training_flags,
)
from .pretraining import count_parameters, describe_budget, describe_size, pretrain_family
from .probing import probing_wanted, run_probing_stage
from .zero_shot_stage import (
    ORDER_TASK,
    blimp_pairs,
    estimated_seconds as zero_shot_estimate,
    plan_zero_shot,
    versus_supervised,
    without_units,
    zero_shot_wanted,
)
from .scoring import context_gate, gold_of, score_baselines, score_predictions
from .settings import (  # noqa: F401 - the public names of ``hf_lineage.lineage.experiment``
    DEFAULT_TASKS,
    DEFAULT_VARIANTS,
    LARGE_CHECKPOINT_ON_CPU,
    LINEAGE_FAMILIES,
    PAIR_ENCODINGS,
    SAMPLES,
    SCALES,
    TASKS,
    VARIANTS,
    LineageArguments,
    LineageError,
    Scale,
    CheckpointSource,
    check_arguments,
    checkpoint_items,
    checkpoint_sources,
    default_families,
    frozen_only_families,
    library_family,
    main_variant,
    pretrains,
)


def run_lineage(args: LineageArguments, command: str = "hf-lineage lineage") -> dict:
    """The whole experiment; returns the results (also written to ``<output_dir>/results.json``). The steps:
    task data → baselines → pretraining → fine-tuning → scores → claims, plots and report."""
    scale = check_arguments(args)
    started = time.time()
    out = Path(args.output_dir)
    families = [f for f in LINEAGE_FAMILIES if f in args.families]
    tasks = [t for t in TASKS if t in args.tasks]
    seeds = [args.seed + i for i in range(args.seeds)]
    main_size = args.task_train or scale.task_train
    curve_sizes = sorted(set(scale.curve_sizes if args.curve_sizes is None else args.curve_sizes) - {main_size})
    pretraining_anew = pretrains(args)
    if pretraining_anew:
        with process_state().main_process_first():  # the main process writes the corpus files, the others read them
            corpus = prepare_corpus(args, scale, out / "data")
    else:
        corpus = shipped_corpus(families, args)
    frozen_only = [] if pretraining_anew else frozen_only_families(
        args, families, {f: shipped_record(f, args.seed, args)["parameters"] for f in families})
    main_variants = {f: "frozen" if f in frozen_only else main_variant(f) for f in families}
    cells = plan_cells(tasks, families, args.variants, main_size, curve_sizes, scale.curve_tasks, frozen_only)
    runs_per_cell = sum(len(learning_rates(family, variant, task, scale, size == main_size))
                        for task, family, variant, size in cells)
    stages = Stages(out, len(tasks) + len(families) * len(seeds) * pretraining_anew + probing_wanted(tasks)
                    + runs_per_cell * len(seeds), args.rerun)
    stages.print(plan_message(families, tasks, cells, runs_per_cell * len(seeds), frozen_only, pretraining_anew,
                              args, *planned_minutes(families, tasks, cells, seeds, args, scale, main_size,
                                                     pretraining_anew)))
    clock = {"task data and baselines": 0.0, "pretraining": 0.0, FINETUNING_CLOCK: 0.0}

    task_data = prepare_tasks(stages, tasks, args, scale, main_size, curve_sizes)
    clock["task data and baselines"] += sum(d["seconds"] or 0 for d in task_data.values() if not d["reused"])
    begun = time.time()
    gold, baseline_rows = run_baselines(tasks, task_data, main_size, args.seed)
    clock["task data and baselines"] += time.time() - begun

    pretraining = {family: [] for family in families}
    for seed in seeds:
        for family in families:
            if pretraining_anew:
                record = run_pretraining_stage(stages, family, seed, args, scale, corpus)
                clock["pretraining"] += 0 if record["reused"] else record["seconds"] or 0  # this invocation's time
            else:  # every seed fine-tunes the same pretrained weights: the seeds vary the fine-tuning only
                record = shipped_record(family, seed, args)
            pretraining[family].append(record)
    probes = run_probing_stage(stages, pretraining, args.seed) if probing_wanted(tasks) else None
    if probes is not None:
        clock["probes"] = 0 if probes["reused"] else probes["seconds"] or 0
    # The n-gram reads the text the families pretrained on: this run's corpus, or for pretrained folders the embedded
    # WikiText-2 sample (the start of the shipped checkpoints' text; the whole of it is not in the package).
    zero_shot_plan = plan_zero_shot(pretraining, task_data, args, ngram_files=corpus["train"] if pretraining_anew
                                    else None) if zero_shot_wanted(tasks, args) else None
    if zero_shot_plan is not None:
        stages.total += len(zero_shot_plan.jobs)

    begun = time.time()
    # The zero-shot jobs run in the fine-tuning workers: a large model's scoring is one of the run's longest jobs.
    runs, zero_shot_records = run_finetuning_stages(stages, cells, seeds, task_data, pretraining, args, scale,
                                                    extra_jobs=zero_shot_plan and zero_shot_plan.weighed_jobs())
    zero_shot = zero_shot_plan.combine(zero_shot_records) if zero_shot_plan is not None else None
    finetuning, scored = aggregate_cells(cells, runs, seeds, gold, main_size, args.seed, main_variants)
    noisy = noisy_tasks(finetuning) if len(seeds) >= 3 and not pretraining_anew else []
    more_seeds = [args.seed + i for i in range(len(seeds), MORE_SEEDS)]
    if noisy and more_seeds:
        runs += run_more_seeds(stages, [cell for cell in cells if cell[0] in noisy], noisy, seeds, more_seeds,
                               task_data, pretraining, args, scale)
        finetuning, scored = aggregate_cells(cells, runs, seeds, gold, main_size, args.seed, main_variants)
    flag_at_majority(finetuning, scored, baseline_rows, args.seed)
    if zero_shot is not None and zero_shot.get("order_pairs"):  # asked directly vs through a trained head
        zero_shot["order_pairs"]["versus_supervised"] = versus_supervised(zero_shot, finetuning, scored, main_size,
                                                                          args.seed)
    clock[FINETUNING_CLOCK] += time.time() - begun

    begun = time.time()
    results = {
        "version": __version__, "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": command, "machine": describe_machine(), "scale": args.scale, "seeds": seeds,
        "more_seeds": {"tasks": noisy, "seeds": more_seeds, "std_above": NOISY_SEED_STD} if noisy and more_seeds
        else None,
        "budget": describe_budget(args, scale, corpus["train_words"]) if pretraining_anew else corpus["budget"],
        "pretrained_anew": bool(pretraining_anew),
        "corpus": {"name": corpus["name"], "train_words": corpus["train_words"],
                   "validation_words": corpus["validation_words"], "license": corpus["license"]},
        "families": families, "tasks": describe_tasks(tasks, task_data, args, main_size),
        "pair_encoding": args.pair_encoding or scale.pair_encoding,
        "main_train_size": main_size, "curve_sizes": sorted({main_size, *curve_sizes}) if curve_sizes else [],
        "pretraining": {family: summarize_pretraining(records) for family, records in pretraining.items()},
        "baselines": {task: [summary for summary, _ in rows] for task, rows in baseline_rows.items()},
        "finetuning": finetuning, "main_variant": main_variants, "probes": probes,
        "zero_shot": without_units(zero_shot),
        "frozen_only": {"families": frozen_only, "above_parameters": LARGE_CHECKPOINT_ON_CPU} if frozen_only else None,
        "notes": notes(args, scale),
    }
    for task, rows in baseline_rows.items():  # a context task's gate: neither a bag of words nor its edges solve it
        if TASKS[task].needs_context:
            results["tasks"][task]["context_gate"] = context_gate([summary for summary, _ in rows])
    if stages.state.is_main_process:
        judge_and_write(results, stages, scored, baseline_rows, task_data, pretraining, clock, begun, started)
    stages.state.wait_for_everyone()
    return results


def run_more_seeds(stages, noisy_cells, noisy, seeds, more_seeds, task_data, pretraining, args, scale) -> list:
    """The runs of ``noisy_cells`` (the cells of the tasks ``noisy``) for ``more_seeds``: a task on which some cell's
    seeds disagree by more than NOISY_SEED_STD gets seeds up to MORE_SEEDS, or its intervals would rest on three noisy
    draws. Adds the seeds' pretraining records to ``pretraining``."""
    stages.print(f"seed std above {NOISY_SEED_STD} on {', '.join(noisy)}: seeds {more_seeds} for those tasks")
    for seed in more_seeds:
        for family in pretraining:
            pretraining[family].append(shipped_record(family, seed, args))
    main_size = args.task_train or scale.task_train
    stages.total += sum(len(learning_rates(f, v, t, scale, n == main_size))
                        for t, f, v, n in noisy_cells) * len(more_seeds)
    return run_finetuning_stages(stages, noisy_cells, more_seeds, task_data, pretraining, args, scale,
                                 all_seeds=seeds + more_seeds)[0]


def planned_minutes(families, tasks, cells, seeds, args, scale, main_size, pretraining_anew) -> tuple:
    """``estimate_minutes``'s (low, high) for the plan (None when it has none) and the zero-shot jobs' one-thread
    seconds (None when there are none to estimate)."""
    from ..registry import FAMILIES

    # Each folder's record once: it hashes the weights, seconds for a published checkpoint.
    records = {} if pretraining_anew else {f: shipped_record(f, args.seed, args) for f in families}
    # A word-vector family's forward pass is a lookup, whatever its vocabulary: its runs cost what small ones do.
    parameters = {f: 0 if FAMILIES[library_family(f)].word_vectors else record["parameters"]
                  for f, record in records.items()}
    validation = args.task_validation or scale.task_validation or VALIDATION_EXAMPLES
    zero_shot_seconds = None if pretraining_anew or not zero_shot_wanted(tasks, args) else zero_shot_estimate(
        {f: record["model"] for f, record in records.items()}, tasks, args, validation)
    return (estimate_minutes(cells, len(seeds), parameters, scale, main_size, args.cache_frozen_features,
                             zero_shot_seconds or 0.0), zero_shot_seconds)


def judge_and_write(results, stages, scored, baseline_rows, task_data, pretraining, clock, begun, started) -> None:
    """On the main process: the diagnostics, claims and plots into ``results``, then report.md and results.json
    (written whole or not at all) into the run's folder."""
    out = stages.root
    if "labeling" in baseline_rows:
        results["labeling_words"] = diagnose_labeling(task_data["labeling"], results["main_train_size"], scored,
                                                      baseline_rows["labeling"], pretraining)
    results["learned_enough"] = diagnostics.learned_enough(results)
    baseline_units = {task: {summary["name"]: units for summary, units in rows}
                      for task, rows in baseline_rows.items()}
    results["claims"] = claims.evaluate_claims(results, scored=scored, baselines=baseline_units)
    results["multiplicity"] = claims.multiplicity(results["claims"])
    results["plots"] = plots.write_plots(results, out)
    clock["scores, claims and report"] = time.time() - begun
    results["time_split"] = {name: round(seconds, 1) for name, seconds in clock.items()}
    results["frozen_layers_memo"] = memo_totals(results["finetuning"])
    results["seconds_total"] = round(time.time() - started, 1)  # this invocation
    report.write_report(results, out)
    partial = out / "results.json.partial"
    partial.write_text(json.dumps(results, indent=2))
    partial.rename(out / "results.json")
    if results["frozen_layers_memo"]:
        stages.print(report.memo_sentence(results["frozen_layers_memo"]))
    stages.print(f"finished in {results['seconds_total']:.0f} s: {out / 'report.md'}")


def checkpoint_folder(family: str, args: LineageArguments) -> Path:
    return checkpoint_source(family, args).folder


def checkpoint_source(family: str, args: LineageArguments) -> CheckpointSource:
    """Where ``family``'s pretrained folder comes from (``settings.checkpoint_sources``: shipped, ``--checkpoints
    DIR`` or ``FAMILY=FOLDER``)."""
    families = list(dict.fromkeys([*args.families, family]))
    return checkpoint_sources(LineageArguments(families=families, checkpoints=args.checkpoints,
                                               output_dir=args.output_dir))[family]


def shipped_record(family: str, seed: int, args: LineageArguments) -> dict:
    """A family's pretraining record when the run fine-tunes a pretrained folder (the shipped checkpoint, or
    ``--checkpoints``' own) instead of pretraining: its ``pretraining.json``, as the pretraining stage reports it,
    with its size counted from the folder itself (parameters and buffers from the weights, widths and layers from
    config.json: a stale record's count is never what is shown) and its source. A folder without pretraining.json
    (a converted published model, say) has None for what only a record knows (words seen, budget, curves)."""
    source = checkpoint_source(family, args)
    folder = source.folder
    record_file = folder / "pretraining.json"
    record = json.loads(record_file.read_text()) if record_file.is_file() else {}
    config = json.loads((folder / "config.json").read_text())
    weights = hashlib.sha256()
    for path in sorted(folder.glob("*.safetensors")):
        weights.update(path.read_bytes())
    converted = record.get("converted_from") or config.get("converted_from")
    return {"config": None, "objective": LINEAGE_FAMILIES[family].objective, "validation": {}, "curve": [],
            "eval_curve": [], "steps": None, "words_seen": None, "train_seconds": None, **record,
            **count_parameters(folder), "size": describe_size(library_family(family), config),
            "source": f"converted from {converted}" if converted else source.source,
            "pretraining_recorded": bool(record), "model": str(folder),
            "status": "ok", "error": None, "reused": True, "seconds": 0.0, "seed": seed,
            "pretraining_seed": record.get("seed"), "shipped": source.shipped, "replaced": source.replaced,
            "weights_sha256": weights.hexdigest()}


def shipped_corpus(families: list[str], args: LineageArguments) -> dict:
    """The corpus and budget the pretrained folders record: the first family's that keeps the shipped or ``DIR``
    checkpoint (the build gives them all the same); the families given their own folder (``FAMILY=FOLDER``) are
    named apart, with the words their records give, so the line never claims the shipped budget for them."""
    records = {family: shipped_record(family, args.seed, args) for family in families}
    common = [f for f in families if not records[f]["replaced"]]
    record = records[common[0]] if common else {}
    corpus, budget = record.get("corpus") or {}, dict(record.get("budget") or {})
    directory, _ = checkpoint_items(args.checkpoints)
    where = "the checkpoints in " + directory if directory else "the checkpoints shipped with hf_lineage"
    parts = []
    if common:
        # Each folder's own budget: the shipped word2vec had whole passes where the others had seconds.
        own = {}
        for family in common:
            description = (records[family].get("budget") or {}).get("description") or "budget not recorded"
            own.setdefault(description, []).append(family)
        budgets = (next(iter(own)) if len(own) == 1 else
                   "; ".join(f"{', '.join(names)}: {description}" for description, names in own.items()))
        parts.append(f"{where}" + (f" ({', '.join(common)})" if len(common) < len(families) else "")
                     + ", pretrained once by `hf-lineage checkpoints build`: " + budgets
                     + f" on {record.get('machine') or 'an unrecorded machine'}")
    for family in families:
        if records[family]["replaced"]:
            words = records[family].get("words_seen")
            parts.append(f"{family} from {records[family]['source']} ("
                         + (f"{words:,} words of pretraining recorded" if words else "its pretraining not recorded")
                         + ")")
    budget["description"] = "; ".join(parts)
    budget["kind"] = ("shipped" if not args.checkpoints else "checkpoints" if not any(
        records[f]["replaced"] for f in families) else "mixed checkpoints")
    # The report reads "pretrained ... on the <name>": no files recorded is "an unrecorded corpus" there (None).
    name = ", ".join(corpus.get("files") or []) or None
    if not common:
        name = "corpora of their own (each checkpoint's: see the pretraining table)"
    elif name and len(common) < len(families):
        name += " (the checkpoints of " + ", ".join(common) + "; the others' own: see the pretraining table)"
    return {"name": name, "license": corpus.get("license"),
            "train_words": corpus.get("train_words") or 0, "validation_words": corpus.get("validation_words"),
            "train": [], "validation": [], "budget": budget}


def run_baselines(tasks, task_data, main_size, seed) -> tuple[dict, dict]:
    """Each task's gold units and its baselines (fitted on the main table's training subset, scored on the
    validation set), recomputed on every invocation (seconds): ``({task: gold}, {task: [(summary, Scored)]})``."""
    gold, rows = {}, {}
    for task in tasks:
        if task_data[task]["status"] == "ok":
            validation = read_task_file(task, task_data[task]["files"]["validation"])
            gold[task] = gold_of(task, validation)
            train = read_task_file(task, task_data[task]["files"][f"train-{main_size}"])
            rows[task] = score_baselines(task, train, validation, seed=seed)
    return gold, rows


def diagnose_labeling(data, main_size, scored, baseline_rows, pretraining) -> dict:
    """``diagnostics.labeling_words`` for the baselines and every main-size labeling cell: accuracy on validation
    words seen and unseen in the labelled set, and outside the word-level families' vocabularies (first seed's
    tokenizer)."""
    from transformers import AutoTokenizer

    validation = list(read_task_file("labeling", data["files"]["validation"]))
    train = list(read_task_file("labeling", data["files"][f"train-{main_size}"]))
    systems = {summary["name"]: (None, result.units) for summary, result in baseline_rows}
    for (task, family, variant, size), result in scored.items():
        if task == "labeling" and size == main_size:
            systems[f"{family} {variant}"] = (family, result.units)
    vocabularies = {}
    for family in diagnostics.word_level_families():
        records = pretraining.get(family) or []
        if records and records[0]["status"] == "ok":
            tokenizer = AutoTokenizer.from_pretrained(records[0]["model"])
            words = [word for row in validation for word in row["tokens"]]
            vocabularies[family] = diagnostics.unknown_words(tokenizer, words)
    return diagnostics.labeling_words(train, validation, systems, vocabularies)


# What the start-up estimate of the fine-tuning time rests on, both measured on the slowest 2-core machine seen (AMD
# EPYC, no AMX): the default run's 47 fine-tuning runs of the shipped checkpoints (under 1 M parameters) took about
# 800 s with its two workers, about 17 s a run; BERT-base's and OpenAI GPT's forward passes ran at about 4.5 ms a
# token on two threads (32 sentences of 28 tokens a batch), which scales with the parameters. Fine-tuning a
# Transformer costs about three forward passes a token (forward and backward); a frozen one, one, and with the frozen
# layers' memo (the default) one per distinct sentence in all, not one an epoch.
SMALL_RUN_SECONDS = 17
FORWARD_SECONDS_PER_TOKEN_PER_PARAMETER = 4.5e-3 / 110e6
FINETUNING_CLOCK = "fine-tuning and zero-shot"  # one pool runs both: its wall time is theirs together
TOKENS_PER_EXAMPLE = 30  # a UD EWT sentence in sub-word tokens, roughly (pairs: two of them)
LARGE_PARAMETERS = 5_000_000  # above this a checkpoint's own forward passes dominate a run's time
VALIDATION_EXAMPLES = 1000  # the embedded tasks' validation sets, predicted once at a run's end


def estimate_minutes(cells, seeds: int, parameters: dict, scale, main_size: int,
                     memo: bool = True, zero_shot_seconds: float = 0.0) -> tuple[float, float] | None:
    """(low, high) minutes of fine-tuning on a 2-core CPU, from ``SMALL_RUN_SECONDS`` and the large checkpoints'
    forward passes over ``main_size`` training and the dev examples for 5 to ``scale.finetune_epochs`` epochs (early
    stopping ends most runs in between) and the validation examples once; a frozen cell with the frozen layers'
    ``memo`` runs each of those sentences through the network once, and its head as a small run does. The zero-shot
    jobs (``zero_shot_seconds`` on one thread) share the two workers. None on a GPU machine, where none of this was
    measured."""
    import torch

    if torch.cuda.is_available():
        return None
    low = high = 0.0
    validation = scale.task_validation or VALIDATION_EXAMPLES
    for task, family, variant, size in cells:
        count = parameters.get(family) or 0
        runs = len(learning_rates(family, variant, task, scale, size == main_size)) * seeds
        if count <= LARGE_PARAMETERS:  # the measured average is the slowest machine's: 3/4 of it on a faster one
            low += SMALL_RUN_SECONDS * runs * 0.75
            high += SMALL_RUN_SECONDS * runs
            continue
        seconds_per_example = TOKENS_PER_EXAMPLE * count * FORWARD_SECONDS_PER_TOKEN_PER_PARAMETER
        predicting = validation * seconds_per_example
        if variant == "frozen" and memo:
            once = (size + scale.dev_examples) * seconds_per_example + predicting
            low += (once + SMALL_RUN_SECONDS * 0.75) * runs
            high += (once + SMALL_RUN_SECONDS) * runs
            continue
        per_epoch = (size + scale.dev_examples) * seconds_per_example * (1 if variant == "frozen" else 3)
        low += (per_epoch * min(5, scale.finetune_epochs) + predicting) * runs
        high += (per_epoch * scale.finetune_epochs + predicting) * runs
    return (low + zero_shot_seconds / 2) / 60, (high + zero_shot_seconds / 2) / 60


def plan_message(families, tasks, cells, runs, frozen_only, pretraining_anew, args, minutes,
                 zero_shot_seconds=None) -> str:
    """What the run will do, said at its start: families and where their checkpoints come from, the cells, the
    large checkpoints kept frozen, and roughly how long the fine-tuning and zero-shot scoring take
    (``zero_shot_seconds``: the zero-shot jobs' estimate on one thread)."""
    if pretraining_anew:
        where = "pretrained by this run"
    else:
        where = "; ".join(f"{family}: {checkpoint_source(family, args).source}" for family in families)
    message = (f"plan: {len(families)} families ({where}), {len(tasks)} task(s) ({', '.join(tasks)}), {len(cells)} "
               f"cells, {runs} fine-tuning runs")
    if frozen_only:
        message += (f"; {', '.join(frozen_only)}: over {LARGE_CHECKPOINT_ON_CPU // 1_000_000} M parameters on a "
                    "machine without a GPU, frozen cells only (give --variants to choose the regimes)")
    if zero_shot_wanted(tasks, args):
        scored = ([f"{ORDER_TASK} validation"] if ORDER_TASK in tasks else []) + (
            [f"{blimp_pairs(args)} BLiMP pairs per paradigm"] if blimp_pairs(args) else [])
        message += (f"; zero-shot: {' and '.join(scored)} scored by each language model and a Kneser-Ney 5-gram"
                    + (f" ({_about(zero_shot_seconds / 60)} of one core, in the fine-tuning workers)"
                       if zero_shot_seconds else ""))
    if args.precision_note:
        message += f"; precision: {args.precision_note}"
    if minutes is not None and not pretraining_anew:
        low, high = minutes
        message += (f"; fine-tuning{' and zero-shot scoring' if zero_shot_seconds else ''} roughly "
                    f"{_duration(low)} to {_duration(high)} on a 2-core CPU (fewer with more cores; early stopping "
                    "decides where in that range)")
    return message


def _about(minutes: float) -> str:
    """"about 40 min", or "under a minute"."""
    duration = _duration(minutes)
    return duration if duration.startswith("under") else f"about {duration}"


def _duration(minutes: float) -> str:
    if minutes < 1:
        return "under a minute"
    return f"{minutes:.0f} min" if minutes < 90 else f"{minutes / 60:.1f} h"


def plan_cells(tasks, families, variants, main_size, curve_sizes, curve_tasks, frozen_only=()) -> list[tuple]:
    """(task, family, variant, labelled-set size) of every fine-tuning cell: the main table's size for every
    requested variant (and always the family's main one); on the learning-curve tasks the pretrained variant and
    scratch at the main size and every curve size. A family of ``frozen_only`` (a large checkpoint on a CPU) runs
    its frozen cell alone on understanding tasks: no fine-tuned, scratch or learning-curve cells."""
    cells = []
    for task in tasks:
        for family in families:
            if family in frozen_only and TASKS[task].understanding:
                cells.append((task, family, "frozen", main_size))
                continue
            for variant in cell_variants(task, family, variants):
                cells.append((task, family, variant, main_size))
            if task in curve_tasks and TASKS[task].understanding:
                for variant in dict.fromkeys([pretrained_variant(family, variants), "scratch"]):
                    cells += [(task, family, variant, size) for size in [main_size, *curve_sizes]
                              if (task, family, variant, size) not in cells]
    return cells


def prepare_tasks(stages, tasks, args, scale, main_size, curve_sizes) -> dict:
    files = task_files(args)
    task_data = {}
    for task in tasks:
        n_dev = scale.dev_examples // 2 if TASKS[task].kind == "generation" else scale.dev_examples
        sizes = [main_size, *curve_sizes] if task in scale.curve_tasks else [main_size]
        n_validation = args.task_validation or scale.task_validation
        spec = {"task": task, "files": files[task], "sizes": sizes, "validation": n_validation, "dev": n_dev}
        record = stages.run(f"data-{task}", spec, lambda folder, task=task, sizes=sizes: prepare_task_data(
            task, files[task], sizes, n_validation, n_dev, folder))
        task_data[task] = {"status": record["status"], "error": record["error"], "seconds": record["seconds"],
                           "reused": record["reused"], "source": files[task]["source"], **record["result"]}
    return task_data


def run_pretraining_stage(stages, family, seed, args, scale, corpus) -> dict:
    corpus_spec = {"train": corpus["train"], "validation": corpus["validation"], "words": corpus["train_words"]}
    budget = describe_budget(args, scale, corpus["train_words"])
    if isinstance(budget["words"], dict):  # equal time: this family's words only, so a change to another's budget
        budget = {**budget, "words": budget["words"][family]}  # does not re-run this family
    budget.pop("description")
    spec = {"family": family, "scale": scale.family_sizes(family), "corpus": corpus_spec,
            "budget": budget, "seed": seed,
            "vocab_size": scale.vocab_size, "max_seq_length": scale.max_seq_length, "batch_size": scale.batch_size,
            "mixed_precision": args.mixed_precision or scale.mixed_precision}
    name = f"pretrain-{family}" + (f"-seed{seed}" if seed != args.seed else "")
    record = stages.run(name, spec, lambda folder: pretrain_family(family, scale, args, corpus, folder, seed=seed))
    return {"status": record["status"], "error": record["error"], "reused": record["reused"],
            "seconds": record["seconds"], "seed": seed, **record["result"]}


def run_finetuning_stages(stages, cells, seeds, task_data, pretraining, args, scale, all_seeds=None,
                          extra_jobs=None) -> tuple[list[dict], list[dict]]:
    """Every (cell, seed), ``args.workers`` at a time: one entry per cell and seed, in order, and the records of
    ``extra_jobs`` (``[((name, spec, work), estimated seconds)]``, run in the same workers). A cell that sweeps its
    learning rate (``sweeps_learning_rate``) runs once per rate and keeps the run with the best dev score; the entry
    lists every rate's dev score (``learning_rate_sweep``)."""
    entries, jobs = [], []
    main_size = args.task_train or scale.task_train
    for seed in seeds:
        for task, family, variant, size in cells:
            entry = {"family": family, "task": task, "variant": variant, "train_size": size, "seed": seed}
            data, pretrained = task_data[task], pretraining[family][(all_seeds or seeds).index(seed)]
            if data["status"] != "ok":  # the cell cannot run: its data is unreadable
                entries.append({**entry, "status": "failed", "error": f"task data: {data['error']}"})
            elif pretrained["status"] != "ok":
                entries.append({**entry, "status": "skipped", "error": f"pretraining {family} failed"})
            else:
                files = {"train": data["files"][f"train-{size}"], "dev": data["files"]["dev"],
                         "validation": data["files"]["validation"]}
                # A shipped or --checkpoints folder is named by its weights' hash too: a rebuilt checkpoint at the
                # same path must not reuse the cells of the old one.
                spec = {**entry, "pretrained": pretrained["model"], "weights": pretrained.get("weights_sha256"),
                        "data": files, "scale": asdict(scale),
                        "finetune_learning_rate": scale.finetune_learning_rate(family),
                        "finetune_epochs": args.finetune_epochs, "mixed_precision": args.mixed_precision,
                        "pair_encoding": args.pair_encoding}
                name = f"{task}-{family}-{variant}" + (f"-{size}" if size != main_size else "") + (
                    f"-seed{seed}" if seed != args.seed else "")
                entries.append(entry)
                for rate in learning_rates(family, variant, task, scale, size == main_size):
                    work = functools.partial(finetune, family, task, variant, Path(pretrained["model"]), files, scale,
                                             args, seed, learning_rate=rate)
                    jobs.append((len(entries) - 1, (name + (f"-lr{rate:.3g}" if rate else ""),
                                                    {**spec, "learning_rate": rate}, work)))
                continue
            stages.done += 1
            entries[-1].update(reused=False, seconds=None)
    # Longest first, so the pool does not end on one long job while the other workers idle (results do not depend
    # on the order: every cell is seeded on its own). An extra job estimated at over LONG_JOB_SECONDS (a large
    # model's zero-shot scoring) goes before every cell, the rest after them.
    queue = [job for _, job in jobs] + [job for job, _ in extra_jobs or []]
    keys = [(0.0, expected_cost(job[1])) for _, job in jobs] + [
        (seconds, ()) if seconds > LONG_JOB_SECONDS else (-1.0, ()) for _, seconds in extra_jobs or []]
    order = sorted(range(len(queue)), key=keys.__getitem__, reverse=True)
    records = [None] * len(queue)
    for i, record in zip(order, stages.run_many([queue[i] for i in order], workers=finetuning_workers(args))):
        records[i] = record
    records, extra_records = records[:len(jobs)], records[len(jobs):]
    by_entry = {}
    for (index, (_, spec, _)), record in zip(jobs, records):
        by_entry.setdefault(index, []).append((spec["learning_rate"], record))
    for index, tried in by_entry.items():
        tried.sort(key=lambda rate_record: rate_record[0] or 0)
        record = pick_learning_rate(tried)
        entries[index].update(status=record["status"], error=record["error"],
                              reused=all(r["reused"] for _, r in tried),
                              seconds=sum(r["seconds"] or 0 for _, r in tried), **record["result"])
        if len(tried) > 1:
            entries[index]["learning_rate_sweep"] = [
                {"learning_rate": r["result"].get("learning_rate", rate), "dev_score": r["result"].get("dev_score"),
                 "status": r["status"]} for rate, r in tried]
    return entries, extra_records


LONG_JOB_SECONDS = 60  # an extra job (zero-shot scoring) estimated longer than this starts before the cells

NOISY_SEED_STD = 0.05  # a task with a cell whose seeds' standard deviation exceeds this ...
MORE_SEEDS = 5  # ... runs this many seeds in all (from --seeds 3 on; one seed has no spread to judge)


def noisy_tasks(finetuning: list[dict]) -> list[str]:
    """The tasks with a cell whose seed standard deviation exceeds ``NOISY_SEED_STD``, in run order."""
    return list(dict.fromkeys(cell["task"] for cell in finetuning
                              if ((cell.get("spread") or {}).get("std") or 0) > NOISY_SEED_STD))


def learning_rates(family: str, variant: str, task: str, scale: Scale, main_size: bool = True) -> list:
    """The rates a cell trains with: ``[None]`` (its own rate, ``cell_learning_rate``), or the sweep's."""
    if not sweeps_learning_rate(family, variant, task, main_size):
        return [None]
    own = cell_learning_rate(family, variant, scale)
    return [round(own * factor, 10) for factor in scale.learning_rate_sweep]


def pick_learning_rate(tried: list[tuple]) -> dict:
    """The record of the rate with the best dev score among ``(rate, record)`` pairs; a failed rate fails the cell
    (its sweep is incomplete). Ties go to the smaller rate."""
    failed = [record for _, record in tried if record["status"] != "ok"]
    if failed:
        return failed[0]
    return max((record for _, record in tried), key=lambda r: r["result"].get("dev_score") or float("-inf"))


def expected_cost(spec: dict) -> tuple:
    """A cell's rough place in the running times measured at the tiny scale (docs/lineage.md): generation cells
    longest, then the families with slow cells (``LineageFamily.slow_cells``: ELMo's), then pairs (two sentences),
    then larger sets."""
    kind = TASKS[spec["task"]].kind
    return (kind == "generation", LINEAGE_FAMILIES[spec["family"]].slow_cells, kind == "sentence_pairs",
            spec["train_size"])


def finetuning_workers(args) -> int:
    """Cells run in parallel child processes of one torch thread each on a CPU-only machine (small models keep two
    threads of one process far less busy than two processes); with a GPU, one at a time in this process."""
    import torch

    if args.workers is not None:
        return args.workers
    return 0 if torch.cuda.is_available() else min(4, os.cpu_count() or 1)


def aggregate_cells(cells, runs, seeds, gold, main_size, seed, main_variants=None) -> tuple[list[dict], dict]:
    """One entry per cell over its seeds (score, interval, spread, dev information); ``scored`` keeps the pooled
    per-unit values by (task, family, variant, size) for the claims' paired comparisons."""
    by_cell = {}
    for run in runs:
        by_cell.setdefault((run["task"], run["family"], run["variant"], run["train_size"]), []).append(run)
    finetuning, scored = [], {}
    for task, family, variant, size in cells:
        cell_runs = by_cell[(task, family, variant, size)]
        understanding = TASKS[task].understanding
        main_one = (main_variants or {}).get(family) if understanding else None
        main = size == main_size and variant == (main_one or main_variant(family, understanding))
        entry = {"family": family, "task": task, "variant": variant, "train_size": size, "main": main,
                 "metric": TASKS[task].metric, "score": None, "seconds": sum(r["seconds"] or 0 for r in cell_runs),
                 "reused": all(r["reused"] for r in cell_runs)}
        failed = [r for r in cell_runs if r["status"] != "ok"]
        if failed:
            finetuning.append({**entry, "status": failed[0]["status"], "error": failed[0]["error"]})
            continue
        try:
            result = score_predictions(task, [r["predictions"] for r in cell_runs], gold[task], seed=seed)
        except ValueError as error:
            finetuning.append({**entry, "status": "failed", "error": f"scoring: {error}"})
            continue
        scored[(task, family, variant, size)] = result
        flags = sorted({flag for r in cell_runs for flag in training_flags(r)})
        finetuning.append({**entry, "status": "ok", "error": None, **result.summary,
                           "train_examples": cell_runs[0]["train_examples"], "seeds": [r["seed"] for r in cell_runs],
                           "epochs_run": [r["epochs_run"] for r in cell_runs],
                           "best_epoch": [r["best_epoch"] for r in cell_runs],
                           "dev_score": [r["dev_score"] for r in cell_runs],
                           "max_epochs": cell_runs[0].get("max_epochs"),
                           # Some seed's best evaluation was its last: it stopped at the epoch cap, still learning.
                           "capped": any(r.get("capped") for r in cell_runs),
                           # Why the cell is no evidence (one seed is enough): it is left out of every verdict.
                           "flags": flags, "trained": not flags,
                           "learning_rate": [r["learning_rate"] for r in cell_runs],
                           # A frozen network's sentences computed once per run and read back (--no-frozen-feature-memo)
                           **({"frozen_layers": [r.get("frozen_layers") for r in cell_runs]}
                              if any(r.get("frozen_layers") for r in cell_runs) else {}),
                           **({"learning_rate_sweep": [r["learning_rate_sweep"] for r in cell_runs]}
                              if any("learning_rate_sweep" in r for r in cell_runs) else {})})
    return finetuning, scored


# The trivial baseline of each kind of task that a cell must beat to count as having learnt the task.
MAJORITY_BASELINES = ("majority tag", "majority class", "majority position")


def flag_at_majority(finetuning: list[dict], scored: dict, baseline_rows: dict, seed: int) -> None:
    """Flag "at majority" every cell that ran and trained but whose score is within noise of its task's majority
    baseline (the paired two-level bootstrap interval of cell − majority reaches 0): it learnt nothing the
    label distribution does not give, so, like a cell that predicts one class, it is left out of every verdict."""
    from .scoring import compare

    for cell in finetuning:
        if cell.get("status") != "ok" or cell.get("flags"):
            continue
        key = (cell["task"], cell["family"], cell["variant"], cell["train_size"])
        majority = next((result for summary, result in baseline_rows.get(cell["task"], [])
                         if summary.get("name") in MAJORITY_BASELINES), None)
        if key not in scored or majority is None:
            continue
        if not compare(cell["task"], scored[key], majority, seed=seed)["outcome"].startswith("holds"):
            cell["flags"] = ["at majority"]
            cell["trained"] = False


def describe_tasks(tasks, task_data, args, main_size) -> dict:
    info = {}
    for task in tasks:
        data = task_data[task]
        subsets = data.get("subsets") or {}
        main = subsets.get(main_size) or subsets.get(str(main_size)) or {}
        # --task-data replaces the embedded sample: name the user's file, not the sample the task ships with.
        dataset = (TASKS[task].dataset if data["source"] == "embedded sample"
                   else f"{Path(data['source']).parent.name}/{Path(data['source']).name} (--task-data)")
        info[task] = {"kind": TASKS[task].kind, "dataset": dataset, "source": data["source"],
                      "metric": TASKS[task].metric, "understanding": TASKS[task].understanding,
                      "needs_context": TASKS[task].needs_context,
                      "train_examples": main.get("examples"), "added_for_labels": main.get("added_for_labels"),
                      "subsets": subsets, "dev_examples": data.get("dev_examples"),
                      "validation_examples": data.get("validation_examples"),
                      "validation_units": data.get("validation_units"), "status": data["status"],
                      "error": data["error"]}
    return info


def summarize_pretraining(records: list[dict]) -> dict:
    """The first seed's pretraining record (what the tables show) and every seed's words, time and perplexity."""
    first = dict(records[0])
    first["per_seed"] = [{"seed": r["seed"], "status": r["status"], "seconds": r["seconds"],
                          "train_seconds": r.get("train_seconds"), "words_seen": r.get("words_seen"),
                          "validation": r.get("validation")} for r in records]
    return first


def notes(args: LineageArguments, scale: Scale) -> list[str]:
    lines = [
        "Main table: each family used the way its paper did — static vectors and ELMo frozen under a task model "
        "(a BiLSTM), GPT and BERT fine-tuned end to end; on generation the language models (ELMo's forward LM, GPT, "
        "BERT2BERT) are fine-tuned and the static vectors stay fixed under an LSTM decoder.",
        "Frozen: every family gets the same head over its fixed features (a learned scalar mix of its layers, "
        "standardised, a BiLSTM task encoder, a classifier); GPT and BERT through task_head=\"scalar_mix\" on "
        "labeling, classification and pair tasks (their linear heads elsewhere).",
        f"Fine-tuning: {args.task_train or scale.task_train} labelled training examples per task in the main table, "
        f"a dev split of {scale.dev_examples} examples from the end of each training file ({scale.dev_examples // 2} "
        f"rows for generation), evaluated every epoch (every {scale.min_steps // 4} updates when an epoch is "
        "shorter); at most "
        + (f"{args.finetune_epochs:g} epochs" if args.finetune_epochs else
           f"{scale.finetune_epochs:g} epochs (more for small sets: at least {small_set_updates(scale)} updates)")
        + f", stopped after {scale.patience} evaluations without a better dev score (never before "
        f"{scale.min_steps} updates), the best evaluation's weights kept; batch {scale.finetune_batch_size}; "
        f"learning rates {({f: scale.finetune_learning_rate(f) for f in args.families})} (frozen: {scale.head_learning_rate}).",
        pair_encoding_note(args.pair_encoding or scale.pair_encoding),
    ]
    if args.precision_note:
        lines.append(f"Precision: {args.precision_note}.")
    if "qa" in args.tasks:
        lines.append("QA: the question-answering recipe's model and post-processing (SQuAD 2.0 when some training "
                     "question has no answer: the empty answer wins when its score beats the best span's), scored "
                     "by SQuAD's token F1 per question (1 for the empty answer to an unanswerable one).")
    if "intent_slots" in args.tasks:
        lines.append("Intent and slots: one model with an intent head and a slot-tag head (the intent-and-slots "
                     "recipe), scored by exact match: the share of utterances whose intent and every slot tag are "
                     "right (the recipe's intent accuracy and slot F1 are in each cell's model folder).")
    import torch

    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    # Only a run that pretrains runs the CPU trainers (on a GPU machine the engine trains, deterministically).
    if pretrains(args) and threads > 1 and not torch.cuda.is_available():
        lines += [LINEAGE_FAMILIES[f].threads_note.format(threads=threads) for f in args.families
                  if LINEAGE_FAMILIES[f].threads_note]
    tuned = {f: training for f in args.families if (training := scale.family_sizes(f)[2])}
    if tuned and pretrains(args):
        lines.append(f"Pretraining optimiser settings changed from the papers' for this scale: {tuned}.")
    return lines


def pair_encoding_note(pair_encoding: str) -> str:
    every = ("NNLM, word2vec and ELMo encode each sentence of a pair on its own and classify [u, v, |u − v|, u * v] "
             "(u, v: the two sentence vectors)")
    if pair_encoding == "siamese":
        return (f"Pairs: {every}; so do GPT and BERT here (--pair-encoding siamese, Sentence-BERT's classifier, "
                "Reimers & Gurevych 2019), with their final states mean-pooled per sentence. Read their papers' way, "
                "as one sequence classified from [CLS] / <e> (--pair-encoding cross), the tiny Transformers stay near "
                "chance on the pairs task.")
    return f"Pairs: {every}; GPT and BERT read each pair as one sequence, as their papers did (--pair-encoding cross)."

