"""The fine-tuning stage: one (task, family, variant) cell trained by the recipes' own code (``hf_lineage.tasks``)."""

from __future__ import annotations

import csv
import json
import math
import shutil
from collections import Counter
from pathlib import Path

from ..experiments.stages import process_state
from .settings import (
    FROZEN_TASK_HEAD,
    SHARED_HEAD_KINDS,
    TASKS,
    VARIANTS,
    LineageArguments,
    Scale,
    library_family,
    main_variant,
)


def untrained_copy(pretrained: Path, target: Path, seed: int) -> Path:
    """The pretrained model's architecture and tokenizer with freshly initialised weights (the "scratch" baseline)."""
    import torch
    from transformers import AutoConfig, AutoModelForPreTraining, AutoTokenizer

    torch.manual_seed(seed)
    config = AutoConfig.from_pretrained(pretrained)
    model = AutoModelForPreTraining.from_config(config)
    if hasattr(model, "word_counts"):  # word2vec keeps the corpus counts: they are data, not learned weights
        model.word_counts.copy_(AutoModelForPreTraining.from_pretrained(pretrained).word_counts)
    model.save_pretrained(target)
    AutoTokenizer.from_pretrained(pretrained).save_pretrained(target)
    return target


def finetune(family: str, task: str, variant: str, pretrained: Path, data: dict, scale: Scale, args: LineageArguments,
             seed: int, folder: Path, learning_rate: float | None = None) -> dict:
    """One fine-tuning cell with the recipes' own ``run`` (the code behind ``recipes/<task>.py``): trained on
    ``data["train"]`` for at most the scale's epochs, evaluated on ``data["dev"]`` after every epoch, stopped when the
    dev score has not improved for ``scale.patience`` epochs, and the best epoch's weights predict
    ``data["validation"]``. ``learning_rate``: one point of a learning-rate sweep (None: the variant's own rate).
    Returns the predictions (in the scorer's unit order) with the dev curve; the report scores them."""
    import torch

    from .. import tasks
    from ..registry import family_classes
    from ..tasks.recipe_arguments import DataTrainingArguments, ModelArguments
    from ..tasks.question_answering import QuestionAnsweringArguments

    spec, state = TASKS[task], process_state()
    config_class, _ = family_classes(library_family(family))  # BERT's ablations are BERTs
    base = pretrained
    if variant == "scratch":  # written once (main process), read by every process
        base = folder / "untrained"
        if state.is_main_process:
            untrained_copy(pretrained, base, seed)
        state.wait_for_everyone()
    model_args = ModelArguments(model_name_or_path=str(base), freeze_base=variant == "frozen",
                                task_head=task_head_for(family, variant, spec.kind),
                                # the same sentences every epoch through the same frozen network: once is enough
                                cache_frozen_features=variant == "frozen" and args.cache_frozen_features)
    data_args = DataTrainingArguments(
        train_file=data["train"], validation_file=data["dev"], test_file=data["validation"], max_seq_length=256,
        metric="accuracy" if spec.kind == "sequence_labeling" else "auto",
        # A symmetric pair (paraphrase; one word in two sentences): GPT's similarity transformation (both orders,
        # summed), as its paper did for MRPC.
        pair_task=spec.pair_task, max_target_length=scale.max_target_length,
        # How GPT and BERT read a pair; the other families always read each sentence on its own.
        pair_encoding=((args.pair_encoding or scale.pair_encoding)
                       if spec.kind == "sentence_pairs" and hasattr(config_class, "pair_encoding")
                       else None))
    mixed_precision = args.mixed_precision or scale.mixed_precision
    generating = spec.kind == "generation"
    recipe = tasks.TASKS[spec.kind]  # the recipe behind recipes/<kind>.py
    arguments_class = recipe.arguments[-1]  # TrainingArguments, or Seq2SeqTrainingArguments for generation
    output_dir = folder / "model"
    epochs, every = schedule_for(data["train"], scale, args)
    training_args = arguments_class(
        output_dir=str(output_dir), do_train=True, do_eval=True, do_predict=True, seed=seed,
        num_train_epochs=epochs, eval_steps=every, save_steps=every, logging_steps=every,
        learning_rate=learning_rate or cell_learning_rate(family, variant, scale),
        per_device_train_batch_size=scale.finetune_batch_size, per_device_eval_batch_size=64,
        eval_strategy="steps", save_strategy="steps", save_total_limit=1, load_best_model_at_end=True,
        metric_for_best_model=BEST_MODEL_METRIC.get(spec.kind, "accuracy"), greater_is_better=True,
        save_only_model=True, train_sampling_strategy=sampling_strategy(data["train"], scale),
        report_to="none", logging_strategy="steps", log_level="warning", disable_tqdm=True,
        bf16=mixed_precision == "bf16", fp16=mixed_precision == "fp16",
        # Without a GPU, Trainer takes bf16 only when told it runs on the CPU (the larger scales ask for bf16).
        use_cpu=mixed_precision != "no" and not torch.cuda.is_available(),
        **({"predict_with_generate": True} if generating else {}))
    given = {ModelArguments: model_args, DataTrainingArguments: data_args, arguments_class: training_args}
    if spec.kind == "question_answering":
        from .stage_data import read_task_file

        # SQuAD 2.0 when some training question has no answer (the embedded sample: a third), so that the empty
        # answer can win; the shortcut checks are the QA recipe's own report, not the lineage's.
        unanswerable = any(not answer["text"] for answer in read_task_file(task, data["train"])["answers"])
        given[QuestionAnsweringArguments] = QuestionAnsweringArguments(version_2_with_negative=unanswerable,
                                                                       shortcut_checks=False)
    for arguments in recipe.arguments:  # a task's own options at their defaults (multiple choice: SWAG's columns)
        if arguments not in given:
            given[arguments] = arguments()
    callbacks = [early_stopping_after(scale.min_steps, early_stopping_patience=scale.patience)]
    metrics = recipe.run(*(given[arguments] for arguments in recipe.arguments), callbacks=callbacks)
    state.wait_for_everyone()
    history = json.loads((output_dir / "trainer_state.json").read_text())
    dev_key = f"eval_{training_args.metric_for_best_model}"
    dev_curve = [{"epoch": e["epoch"], "score": e[dev_key]} for e in history["log_history"] if dev_key in e]
    predictions = read_predictions(spec.kind, output_dir, data["validation"])
    if state.is_main_process:
        if variant == "scratch":
            shutil.rmtree(folder / "untrained", ignore_errors=True)
        for checkpoint in output_dir.glob("checkpoint-*"):
            shutil.rmtree(checkpoint, ignore_errors=True)
        if not args.keep_finetuned_models:  # the numbers are what the report needs; weights are large at real scale
            for weights in output_dir.glob("*.safetensors"):
                weights.unlink()
    best = max(dev_curve, key=lambda point: point["score"]) if dev_curve else None
    return {"predictions": predictions, "train_seconds": metrics.get("train_runtime"),
            "train_examples": metrics.get("train_samples"), "epochs_run": dev_curve[-1]["epoch"] if dev_curve else None,
            "best_epoch": best["epoch"] if best else None, "dev_score": best["score"] if best else None,
            "dev_curve": dev_curve, "learning_rate": training_args.learning_rate, "max_epochs": epochs,
            # The frozen network's passes: sentences computed once and read back after (None: no memo).
            "frozen_layers": {name: metrics.get(f"frozen_layers_{name}")
                              for name in ("computed", "loaded", "reused", "bytes", "bytes_written", "compute_seconds",
                                           "load_seconds", "saved_seconds")}
            if "frozen_layers_computed" in metrics else None,
            # Its best evaluation was its last: early stopping never ended it, the epoch cap did, and more training
            # might still have helped. Reported (results.json "capped"), not hidden.
            "capped": bool(dev_curve) and best is dev_curve[-1] and len(dev_curve) > 1}


def cell_learning_rate(family: str, variant: str, scale: Scale) -> float:
    """The learning rate a cell trains with when no sweep picks one: the head's when the pretrained part is frozen,
    else the family's fine-tuning rate."""
    return scale.head_learning_rate if variant == "frozen" else scale.finetune_learning_rate(family)


def sweeps_learning_rate(family: str, variant: str, task: str, main_size: bool = True) -> bool:
    """Whether a cell picks its learning rate from ``Scale.learning_rate_sweep`` on its dev split: the Transformers'
    cells that train every weight (fine-tuned, and from scratch so that "pretraining helps" compares two tuned
    cells) on the understanding tasks at the main table's size (a rate that suits one Transformer and task can leave
    another at chance). Generation is not swept (no verdict compares it, and its cells cost the most), nor the
    learning curves' smaller sizes (both sides keep the family's own rate there)."""
    from .settings import LINEAGE_FAMILIES

    return (variant in ("finetuned", "scratch") and LINEAGE_FAMILIES[family].sweep_learning_rate
            and TASKS[task].understanding and main_size)


# A cell that did not train is no evidence: it is flagged and left out of every verdict (the report lists it).
ONE_CLASS_SHARE = 0.95  # the most frequent predicted label (tag, for labeling) covers at least this share
NEVER_MOVED = 0.005  # its best dev score is less than this above its first evaluation's


def training_flags(run: dict) -> list[str]:
    """Why one seed's cell is no evidence ([] when it trained): "one class" (it predicts one label for at least
    ``ONE_CLASS_SHARE`` of the validation units: tokens for labeling, examples otherwise) or "never moved" (its dev
    score never rose ``NEVER_MOVED`` above its first evaluation). Tasks whose predictions are not labels (generation,
    QA, intent and slots) get the dev-curve check only."""
    flags = []
    predictions = run.get("predictions") or []
    labels = None
    if TASKS[run["task"]].kind == "sequence_labeling":
        labels = [tag for sentence in predictions for tag in sentence]
    elif TASKS[run["task"]].kind in ("classification", "sentence_pairs", "multiple_choice"):
        labels = list(predictions)
    if labels:
        most = max(Counter(labels).values())
        if most >= ONE_CLASS_SHARE * len(labels):
            flags.append("one class")
    curve = [point["score"] for point in run.get("dev_curve") or []]
    if len(curve) > 1 and max(curve) - curve[0] < NEVER_MOVED:
        flags.append("never moved")
    return flags


def task_head_for(family: str, variant: str, kind: str) -> str | None:
    """The recipes' ``--task_head`` for a cell: in the frozen regime the families that have a choice (GPT and BERT)
    take the head the others always have (``FROZEN_TASK_HEAD``), so that frozen cells compare representations,
    not heads; None (the config's linear head) otherwise."""
    from ..registry import family_classes

    config_class, _ = family_classes(library_family(family))
    if variant != "frozen" or kind not in SHARED_HEAD_KINDS or not hasattr(config_class, "task_head"):
        return None
    return FROZEN_TASK_HEAD


# The dev score that picks a cell's best checkpoint (the recipes' evaluation metric names).
BEST_MODEL_METRIC = {"generation": "bleu", "question_answering": "f1", "intent_and_slots": "exact_match"}


# transformers groups by length within mega-batches of len // (4 × batch) batches: 8 batches make two.
GROUPED_BATCHES = 8


def examples_in(train_file: str) -> int:
    with open(train_file, encoding="utf-8") as f:
        return sum(1 for line in f if line.strip())


def schedule_for(train_file: str, scale: Scale, args: LineageArguments) -> tuple[int, int]:
    """(the most epochs a cell may train, the updates between two dev evaluations). Epochs: ``--finetune-epochs``
    when given; else the scale's, or enough for ``small_set_updates`` when the labelled set is small (100 examples are
    4 updates an epoch: 15 epochs would stop before the model learns). Evaluations: every epoch, but
    at most every ``scale.min_steps // 4`` updates, so a small set is not evaluated after every few updates."""
    steps_per_epoch = max(1, math.ceil(examples_in(train_file) / scale.finetune_batch_size))
    every = max(steps_per_epoch, scale.min_steps // 4)
    if args.finetune_epochs:
        return math.ceil(args.finetune_epochs), steps_per_epoch
    return max(math.ceil(scale.finetune_epochs), math.ceil(small_set_updates(scale) / steps_per_epoch)), every


def sampling_strategy(train_file: str, scale: Scale) -> str:
    """How a cell draws its training batches. ``group_by_length`` (transformers' ``LengthGroupedSampler``: random
    mega-batches of ``len // (4 × batch)`` batches, at most 50, each sorted by length) when the set holds at least
    ``GROUPED_BATCHES`` batches, so that a mega-batch spans two or more: a BiLSTM runs as many time steps as its
    batch's longest sentence, and grouped batches cut the default run's fine-tuning from 982 to 685 s (ELMo's
    cells 40-50 %; docs/lineage.md, "Wall time"), as AllenNLP's bucket iterator did for ELMo's own task models.
    Below that a mega-batch is one batch and grouping changes nothing but the random stream: ``random``, as before."""
    return "group_by_length" if examples_in(train_file) >= GROUPED_BATCHES * scale.finetune_batch_size else "random"


def memo_totals(finetuning: list) -> dict | None:
    """The frozen layers' memo over the cells this invocation ran (reused cells count nothing): sentences the frozen
    networks computed, read from ``$HF_LINEAGE_CACHE/frozen-layers`` and reused from memory, bytes written there, the
    seconds spent in the networks and reading the folder, and the network seconds it spared (each run's own
    estimate, ``LayersMemo.summary``; None where no run could price it). None when no cell kept a memo."""
    runs = [run for cell in finetuning if not cell.get("reused") for run in cell.get("frozen_layers") or []
            if run and (run.get("computed") or run.get("loaded"))]  # a table look-up's memo never runs
    if not runs:
        return None
    totals = {name: sum(run.get(name) or 0 for run in runs)
              for name in ("computed", "loaded", "reused", "bytes_written", "compute_seconds", "load_seconds")}
    priced = [run["saved_seconds"] for run in runs if run.get("saved_seconds") is not None]
    totals["saved_seconds"] = sum(priced) if priced else None
    return {"runs": len(runs), **{name: round(value, 1) if isinstance(value, float) else value
                                  for name, value in totals.items()}}


def small_set_updates(scale: Scale) -> int:
    """The fewest updates a cell may be given by its epoch count: its cap when the labelled set is small (early
    stopping usually ends it sooner, never before ``scale.min_steps``). At 1.5 × min_steps, cells at 100 and 300
    examples often had their best evaluation last (stopped by the cap, still learning); 4 × leaves them room."""
    return 4 * scale.min_steps


def early_stopping_after(min_steps: int, early_stopping_patience: int):
    """transformers' ``EarlyStoppingCallback`` that never stops before ``min_steps`` updates (a randomly initialised
    LSTM often sits on a plateau for its first epochs; patience alone would end it there). The best checkpoint is
    still tracked from the first evaluation."""
    from transformers import EarlyStoppingCallback

    class EarlyStoppingAfter(EarlyStoppingCallback):
        def on_evaluate(self, args, state, control, metrics, **kwargs):
            super().on_evaluate(args, state, control, metrics, **kwargs)
            if state.global_step < min_steps:
                self.early_stopping_patience_counter = 0
                control.should_training_stop = False

    return EarlyStoppingAfter(early_stopping_patience=early_stopping_patience)


def read_predictions(kind: str, output_dir: Path, validation_file: str | None = None) -> list:
    """The recipe's prediction file, in the scorer's order: per sentence its tags (labeling), per example its label
    (classification, pairs), per distinct source its generated text (generation), per question its answer (QA),
    per utterance its intent and tags (intent and slots)."""
    if kind == "sequence_labeling":
        sentences, current = [], []
        for line in (output_dir / "predictions.conll").read_text(encoding="utf-8").split("\n"):
            if line.strip():
                current.append(line.rsplit(" ", 1)[1])
            elif current:
                sentences.append(current)
                current = []
        return sentences + ([current] if current else [])
    if kind == "generation":
        return (output_dir / "generated_predictions.txt").read_text(encoding="utf-8").split("\n")[:-1]
    if kind == "question_answering":  # per question its answer text ("" = no answer), in the validation file's order
        answers = json.loads((output_dir / "predict_predictions.json").read_text(encoding="utf-8"))
        with open(validation_file, encoding="utf-8") as f:
            return [answers[json.loads(line)["id"]] for line in f if line.strip()]
    if kind == "intent_and_slots":  # per utterance [intent, its BIO tags]
        with open(output_dir / "predictions.jsonl", encoding="utf-8") as f:
            return [[row["intent"], row["slots"]] for row in map(json.loads, f)]
    with open(output_dir / "predictions.tsv", encoding="utf-8", newline="") as f:
        rows = [row["prediction"] for row in csv.DictReader(f, delimiter="\t")]
    return [int(row) for row in rows] if kind == "multiple_choice" else rows  # a choice's index


def cell_variants(task: str, family: str, variants: list[str]) -> list[str]:
    """The variants run for a (task, family): on understanding tasks the requested ones and always the main table's,
    on generation the family's own."""
    if not TASKS[task].understanding:
        return [main_variant(family, understanding=False)]
    return [v for v in VARIANTS if v in variants or v == main_variant(family)]


def pretrained_variant(family: str, variants: list[str]) -> str:
    """The pretrained side of the learning curves: fine-tuned when asked for (the same trainable network as scratch,
    only the starting weights differ), else the way the family's paper used it."""
    return "finetuned" if "finetuned" in variants else main_variant(family)
