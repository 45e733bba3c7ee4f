"""``hf-lineage xling``: multilingual BERT's zero-shot cross-lingual transfer, measured (after Pires et al. 2019,
"How multilingual is Multilingual BERT?").

One BERT pre-trained on English and German text at once (no parallel data; one WordPiece vocabulary; languages
weighted p ∝ q^0.7 as multilingual BERT was: ``hf_lineage.data.languages``) is fine-tuned for UPOS tagging on English
alone and tags German and French without ever seeing a German or French label. French is the control: the model never
read French, so what it transfers there comes from what French shares with English and German on the surface (word
pieces, numbers, punctuation, names). Each seed runs the whole chain:

1. ``pretrain``: the multilingual model, and an English-only model of the same size, vocabulary size, steps, batch and
   sequence length (the comparison (b): what the German text adds);
2. ``english``: each model fine-tuned on English UPOS (UD EWT; early stopping on an English dev split), then tagging
   each target language's test set (zero shot) and the English validation set;
3. ``ceiling``: the multilingual model fine-tuned on the target language's own labels (its UD dev set, a tenth kept
   for early stopping), tagging its test set: what target supervision would give (c).

Baselines, deterministic: the most frequent tag of each word in the English training labels (the zero-shot baseline:
the same supervision as the models') and in the target's dev labels (the in-language one), unknown words getting the
most frequent tag overall (d). The vocabulary overlap is the share of the target test set's word pieces (types and
tokens) that occur in the English fine-tuning data, per model's vocabulary, and zero-shot accuracy is broken down by
how many of a word's pieces English fine-tuning saw. The report (``transfer_report``) gives every score with a 95 %
interval over seeds and sentences, and a verdict only where an interval excludes no difference.

No stage reads a target-language label before scoring: zero-shot predictions are made from the target test set's
words alone (``predict_tags`` takes words), and the English fine-tuning never opens a target file.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

from .. import samples as _samples
from ..data.languages import MBERT_ALPHA, language_files
from ..lineage.settings import SAMPLE_PATHS, SCALES, LineageArguments, LineageError
from .transfer_report import SOURCE, read_rows, score_run, write_report

CROSSLINGUAL = _samples.CROSSLINGUAL
# What the offline run reads: English WikiText-2 and UD German GSD dev text (never a test sentence) to pre-train on;
# English UD EWT labels to fine-tune on; German and French UD GSD test sets to transfer to, their dev sets for the
# ceiling.
DEFAULT_PRETRAINING_TEXT = {"en": str(SAMPLE_PATHS["labeling"][0].parent / "corpus.train.txt"),
                            "de": str(CROSSLINGUAL / "de.text.txt")}
DEFAULT_TARGETS = {language: {"test": str(CROSSLINGUAL / f"{language}.test.jsonl"),
                              "dev": str(CROSSLINGUAL / f"{language}.dev.jsonl")} for language in ("de", "fr")}
# Pre-training steps per model at each scale (batch and sequence length are the scale's). At tiny, 8,000 steps of
# 32 × 64 tokens (about 16M tokens, 9 minutes of one 2-core EPYC's core per model): at 2,000 steps (loss 7.0) the
# fine-tuned tagger was below the most-frequent-tag baseline even on English (docs/crosslingual.md); the shipped
# English checkpoint had 20,364.
PRETRAIN_STEPS = {"tiny": 8000, "small": 20_000, "base": 100_000}
ENGLISH_DEV_SENTENCES = 200
CEILING_DEV_SHARE = 0.1  # of the target dev set, kept for early stopping when fine-tuning on the rest


@dataclass
class CrosslingualArguments:
    """Every option of ``hf-lineage xling``."""

    output_dir: str = "xling_report"
    scale: str = "tiny"
    pretraining_text: list[str] = field(
        default_factory=lambda: [f"{language}={path}" for language, path in DEFAULT_PRETRAINING_TEXT.items()])
    targets: dict = field(default_factory=lambda: dict(DEFAULT_TARGETS))  # language → {"test": path, "dev": path}
    source_train: str = str(SAMPLE_PATHS["labeling"][0])
    source_validation: str = str(SAMPLE_PATHS["labeling"][1])
    source_sentences: int = 2000  # English labelled sentences to fine-tune on
    language_alpha: float = MBERT_ALPHA
    pretrain_steps: int | None = None  # None: the scale's
    finetune_epochs: float | None = None  # the most epochs a fine-tuning cell trains (None: the lineage scale's rule)
    seeds: int = 4
    # Pre-training seeds (None: one per seed, each seed then a whole chain). Fewer: seed i fine-tunes the models of
    # pre-training seed i mod N, and the intervals hold fine-tuning variance and only N models' pre-training variance.
    # The default, 4 fine-tuning seeds on 2 pre-training seeds, is the documented run's: 45-90 minutes on 2 CPU cores.
    pretraining_seeds: int | None = 2
    seed: int = 0
    workers: int | None = None  # fine-tuning cells at once in child processes (None: the CPU cores, at most 4)
    rerun: bool = False


def check_arguments(args: CrosslingualArguments) -> dict[str, list[str]]:
    """Everything checked before any stage runs; returns the pre-training text per language."""
    if args.scale not in SCALES:
        raise LineageError(f"--scale must be one of {', '.join(SCALES)}, got {args.scale!r}")
    try:
        texts = language_files(args.pretraining_text)
    except ValueError as error:
        raise LineageError(str(error).replace("--train-file", "--pretraining-text")) from None
    if not texts or SOURCE not in texts or len(texts) < 2:
        raise LineageError("--pretraining-text needs English and at least one more language, each as LANG=PATH "
                           "(e.g. en=wiki.train.tokens de=train.de)")
    paths = [p for ps in texts.values() for p in ps] + [args.source_train, args.source_validation]
    paths += [p for target in args.targets.values() for p in target.values()]
    for path in paths:
        if not os.path.isfile(path):
            raise LineageError(f"{path}: no such file")
    if not args.targets or SOURCE in args.targets:
        raise LineageError("--target: give at least one target language other than English")
    if args.seeds < 1 or args.source_sentences < 1 or any(value is not None and value <= 0 for value in
                                                          (args.pretrain_steps, args.finetune_epochs)):
        raise LineageError("--seeds, --source-sentences, --pretrain-steps and --finetune-epochs must be positive")
    if args.pretraining_seeds is not None and args.pretraining_seeds < 1:
        raise LineageError("--pretraining-seeds must be positive")
    if not 0 <= args.language_alpha <= 1:
        raise LineageError(f"--language-alpha must be in [0, 1], got {args.language_alpha}")
    return texts


# --------------------------------------------------------------------------- the stages' work


def pretrain_model(name: str, texts: dict[str, list[str]], args: CrosslingualArguments, seed: int,
                   folder: Path) -> dict:
    """One BERT through the engine: every model of a run gets the scale's size, vocabulary size, batch, sequence
    length and the same number of steps, whatever text it reads."""
    from ..pretraining.dispatch import PretrainArguments, pretrain

    scale = SCALES[args.scale]
    config, overrides, training = scale.family_sizes("bert")
    run = PretrainArguments(
        family="bert", output_dir=str(folder / "model"), config=config, overrides=dict(overrides),
        train_file=[f"{language}={path}" for language, paths in texts.items() for path in paths],
        language_alpha=args.language_alpha, vocab_size=scale.vocab_size, max_seq_length=scale.max_seq_length,
        per_device_batch_size=scale.batch_size, max_steps=args.pretrain_steps or PRETRAIN_STEPS[args.scale],
        seed=seed, report_to="none", log_every=50, **training)
    pretrain(run)
    trained = json.loads((folder / "model" / "train_results.json").read_text())
    return {"model": str(folder / "model"), "languages": trained["languages"], "steps": trained["step"],
            "train_seconds": trained["train_runtime"], "tokens_seen": trained["tokens_seen"],
            "final_train_loss": next((e["train_loss"] for e in reversed(trained["log_history"])
                                      if "train_loss" in e), None)}


def finetune_and_tag(model_dir: str, data: dict, tag_files: dict[str, str], args: CrosslingualArguments, seed: int,
                     folder: Path) -> dict:
    """Fine-tune ``model_dir`` on ``data`` (train and dev: the lineage's labeling cell, early stopping and the best
    checkpoint on dev), then tag each of ``tag_files`` (name → JSON lines) from its words alone: every evaluation set,
    English or target, is read only by ``predict_tags``, never by the fine-tuning."""
    from ..lineage.finetuning import finetune

    lineage_args = LineageArguments(keep_finetuned_models=True, seed=seed, finetune_epochs=args.finetune_epochs)
    cell = finetune("bert", "labeling", "finetuned", Path(model_dir), {**data, "validation": data["dev"]},
                    SCALES[args.scale], lineage_args, seed, folder)
    tagged = {name: predict_tags(folder / "model", [row["tokens"] for row in read_rows(path)])
              for name, path in tag_files.items()}
    for weights in (folder / "model").glob("*.safetensors"):  # the predictions are what the report needs
        weights.unlink()
    return {"tagged": tagged, **{key: cell[key] for key in ("dev_score", "best_epoch", "epochs_run", "train_seconds")}}


def predict_tags(model_dir: Path, sentences: list[list[str]], batch_size: int = 64) -> list[list[str]]:
    """Each sentence's UPOS tags from a fine-tuned tagger, read at each word's first piece — from the words alone."""
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from ..tasks.labeling import tokenize_and_align, word_predictions

    model = AutoModelForTokenClassification.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    labels = [model.config.id2label[i] for i in range(len(model.config.id2label))]
    tags = []
    for start in range(0, len(sentences), batch_size):
        batch = sentences[start:start + batch_size]
        encoding = tokenize_and_align({"tokens": batch}, tokenizer, {}, max_length=tokenizer.model_max_length)
        first_tokens = encoding.pop("first_tokens")
        inputs = tokenizer.pad(dict(encoding), return_tensors="pt")
        with torch.no_grad():
            logits = model(**inputs).logits
        tags.extend(word_predictions(logits.numpy(), first_tokens, labels, fallback="X")[0])
    return tags


def write_rows(rows: list[dict], path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    return str(path)


def split_with_labels_covered(rows: list[dict], held: int) -> tuple[list[dict], list[dict]]:
    """(train, dev): the last ``held`` sentences for early stopping, less any with a tag the rest lacks (moved to
    training: the recipe refuses a dev tag it was never trained on)."""
    train, dev = list(rows[:-held]), []
    seen = {tag for row in train for tag in row["tags"]}
    for row in rows[-held:]:
        if set(row["tags"]) <= seen:
            dev.append(row)
        else:
            train.append(row)
            seen.update(row["tags"])
    return train, dev


def english_data(args: CrosslingualArguments, folder: Path) -> dict:
    """The English fine-tuning data: the first ``source_sentences`` sentences of the training file to train on, the
    last ``ENGLISH_DEV_SENTENCES`` for early stopping."""
    rows = read_rows(args.source_train)
    if len(rows) <= ENGLISH_DEV_SENTENCES:
        raise LineageError(f"{args.source_train}: {len(rows)} sentences leave none to train on after the "
                           f"{ENGLISH_DEV_SENTENCES} kept for early stopping")
    pool, held = rows[:-ENGLISH_DEV_SENTENCES], rows[-ENGLISH_DEV_SENTENCES:]
    train, dev = split_with_labels_covered(pool[:args.source_sentences] + held, len(held))
    return {"train": write_rows(train, folder / "en.train.jsonl"), "dev": write_rows(dev, folder / "en.dev.jsonl")}


def ceiling_data(language: str, files: dict, folder: Path) -> dict:
    """The in-language ceiling's data: the target dev set less its last tenth (kept for early stopping) to train on,
    less every dev sentence that is also a test sentence (UD GSD's dev and test share a few stock phrases: 6 German,
    1 French). Its test set is tagged like the zero-shot models' (``predict_tags``)."""
    test = {tuple(row["tokens"]) for row in read_rows(files["test"])}
    rows = [row for row in read_rows(files["dev"]) if tuple(row["tokens"]) not in test]
    train, dev = split_with_labels_covered(rows, max(1, round(CEILING_DEV_SHARE * len(rows))))
    return {"train": write_rows(train, folder / f"{language}.train.jsonl"),
            "dev": write_rows(dev, folder / f"{language}.dev.jsonl")}


# --------------------------------------------------------------------------- the run


def run(args: CrosslingualArguments) -> dict:
    """The whole experiment; returns results.json's content and writes the report into ``args.output_dir``."""
    from ..machine.precision import describe_machine
    from ..experiments.stages import Stages

    texts = check_arguments(args)
    started = time.time()
    output_dir = Path(args.output_dir)
    seeds = [args.seed + i for i in range(args.seeds)]
    print(describe(args, texts), flush=True)
    models = {"multilingual": texts, "english": {SOURCE: texts[SOURCE]}}
    pretraining_seeds = seeds[:args.pretraining_seeds or len(seeds)]  # at most one per fine-tuning seed
    total = len(pretraining_seeds) * len(models) + len(seeds) * (len(models) + len(args.targets))
    stages = Stages(output_dir, total, args.rerun, command="hf-lineage xling")
    data_folder = output_dir / "data"
    english = english_data(args, data_folder)
    ceilings = {language: ceiling_data(language, files, data_folder) for language, files in args.targets.items()}
    target_tests = {language: files["test"] for language, files in args.targets.items()}
    evaluated = {SOURCE: args.source_validation, **target_tests}
    spec_base = {"scale": args.scale, "alpha": args.language_alpha, "steps": args.pretrain_steps}
    cell_spec = {**spec_base, **({"epochs": args.finetune_epochs} if args.finetune_epochs else {})}
    records = {}
    for seed in pretraining_seeds:
        for name, model_texts in models.items():
            records[name, seed] = stages.run(f"pretrain/{name}-seed{seed}", {**spec_base, "texts": model_texts,
                                                                               "seed": seed},
                                             partial(pretrain_model, name, model_texts, args, seed))
    # the models each fine-tuning seed starts from
    pretrained = {(name, seed): records[name, pretraining_seeds[i % len(pretraining_seeds)]]
                  for i, seed in enumerate(seeds) for name in models}
    jobs = []
    for seed in seeds:  # a cell whose model failed to pre-train is left out (the report lists the failure)
        for name in models:
            model = pretrained[name, seed]["result"].get("model")
            if model is None:
                continue
            spec = {**cell_spec, "model": model, "data": english, "tag": evaluated, "seed": seed,
                    "sentences": args.source_sentences}
            jobs.append((f"english/{name}-seed{seed}", spec,
                         partial(finetune_and_tag, model, english, evaluated, args, seed)))
        model = pretrained["multilingual", seed]["result"].get("model")
        for language, data in ceilings.items() if model else ():
            tag = {language: target_tests[language]}
            spec = {**cell_spec, "model": model, "data": data, "tag": tag, "seed": seed}
            jobs.append((f"ceiling/{language}-seed{seed}", spec,
                         partial(finetune_and_tag, model, data, tag, args, seed)))
    workers = args.workers if args.workers is not None else min(os.cpu_count() or 1, 4)
    cells = dict(zip([name for name, _, _ in jobs], stages.run_many(jobs, workers)))
    results = score_run(args, seeds, pretrained, cells, english, ceilings, records)
    results.update(command=" ".join(["hf-lineage", "xling", *sys.argv[2:]]) if sys.argv[1:2] == ["xling"] else None,
                   machine=describe_machine(), created=time.strftime("%Y-%m-%d %H:%M:%S"), arguments=asdict(args),
                   seconds_total=round(time.time() - started, 1),
                   # what the stages took when they ran (a re-run that reuses them takes seconds)
                   stage_seconds={"pretraining": round(sum(r["seconds"] for r in records.values()), 1),
                                  "fine-tuning": round(sum(c["seconds"] for c in cells.values()), 1)})
    write_report(results, output_dir)
    return results


def describe(args: CrosslingualArguments, texts: dict) -> str:
    steps = args.pretrain_steps or PRETRAIN_STEPS[args.scale]
    pretraining_seeds = min(args.pretraining_seeds or args.seeds, args.seeds)
    return (f"hf-lineage xling: {pretraining_seeds} pre-training seed(s) x (BERT on "
            f"{'+'.join(texts)} with α = {args.language_alpha:g}, and on English alone: {args.scale} size, {steps:,} "
            f"steps each), {args.seeds} fine-tuning seed(s) x (each model fine-tuned on "
            f"{args.source_sentences:,} English UPOS sentences and tested zero-shot on "
            f"{', '.join(args.targets)}; in-language ceilings on each target's dev labels); report in "
            f"{args.output_dir}")

