"""The pretraining stage: every family through ``hf_lineage.pretraining.pretrain`` on the same corpus and
budget, and the numbers the report needs from its ``train_results.json``."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import asdict
from pathlib import Path

from ..experiments.stages import process_state
from .settings import LINEAGE_FAMILIES, REFERENCE_MACHINE, LineageArguments, LineageFamily, Scale, library_family


def count_parameters(model_dir: Path) -> dict:
    """``{"parameters": n, "buffers": m}``: the elements of ``model_dir``'s weights that are the model's parameters
    (its ``nn.Parameter``s, what ``model.num_parameters()`` counts: weights training can change, ELMo's scalar-mix
    weights included, which pretraining freezes and the task models train) and those that are buffers (constants
    saved with the weights: ELMo's characters of every vocabulary word, word2vec's word counts, svd's singular
    values). Each tensor is named by the model's own class, built on the meta device (no memory, no weights read);
    a tensor of a name the class does not know counts as a parameter."""
    from safetensors import safe_open

    buffer_names = _buffer_names(model_dir)
    counts = {"parameters": 0, "buffers": 0}
    for path in sorted(Path(model_dir).glob("*.safetensors")):
        with safe_open(str(path), framework="pt") as f:
            for name in f.keys():
                size = math.prod(f.get_slice(name).get_shape())
                counts["buffers" if name in buffer_names else "parameters"] += size
    return counts


def _buffer_names(model_dir: Path) -> set:
    """The names of the saved (persistent) buffers of the class ``model_dir``'s config.json names."""
    import torch
    from transformers import AutoConfig

    from .. import registry

    registry.register_all()
    config = AutoConfig.from_pretrained(str(model_dir))
    family = registry.family_of_config(config)
    if family is None:
        return set()
    _, modeling = registry.family_classes(family)
    # The saved class, else the family's pretraining class (a family may have no AutoModelForPreTraining entry).
    names = list(config.architectures or []) + list((getattr(modeling, "AUTO_CLASSES", None) or {}).values())
    model_class = next((getattr(modeling, name) for name in names if hasattr(modeling, name)), None)
    if model_class is None:
        return set()
    with torch.device("meta"):
        model = model_class(config)
    parameters = {name for name, _ in model.named_parameters(remove_duplicate=False)}
    return set(model.state_dict()) - parameters


def describe_size(family: str, config: dict) -> str:
    """A pretrained folder's size in words, from its config.json and the family's ``size_keys``
    (``settings.LINEAGE_FAMILIES``): "layers × width" ("2 × 64"; ELMo's LSTM width after its projection) or "64-d"
    for one vector per word (NNLM's "64-d, hidden 128"; the named config, when recorded, is the table's own column).
    A family the lineage does not list reads as one vector per word of ``vector_size``."""
    spec = LINEAGE_FAMILIES.get(family)
    widths, layers, more = spec.size_keys if spec else LineageFamily.size_keys
    width = next((config[k] for k in widths if config.get(k)), None)
    depth = next((config[k] for k in layers if config.get(k)), None)
    text = "not recorded" if width is None else (f"{depth} × {width}" if depth else f"{width}-d")
    if width is not None:
        text += "".join(f", {k.removesuffix('_size').replace('_', ' ')} {config[k]}" for k in more if config.get(k))
    return text


def pretrain_family(family: str, scale: Scale, args: LineageArguments, corpus: dict, folder: Path,
                    seed: int | None = None) -> dict:
    """One family's pretraining stage: the engine (or word2vec's CPU trainer) on the shared corpus and budget. An
    ablation (``bert-no-nsp``, ``bert-ltr``) is its library family's run with its own ``pretrain_options``."""
    from ..pretraining.dispatch import PretrainArguments, pretrain

    config, overrides, training = scale.family_sizes(family)
    model_dir = folder / "model"
    run = PretrainArguments(
        family=library_family(family), output_dir=str(model_dir), config=config, overrides=dict(overrides),
        train_file=corpus["train"], validation_file=corpus["validation"] or None, vocab_size=scale.vocab_size,
        seed=args.seed if seed is None else seed, report_to="none",
        mixed_precision=args.mixed_precision or scale.mixed_precision, log_every=5, max_eval_batches=50, **training,
        **LINEAGE_FAMILIES[family].pretrain_options)
    budget_unit = LINEAGE_FAMILIES[family].budget_unit
    if budget_unit == "steps":  # the others read whole sentences; word2vec's batch is its engine path's alone
        run.max_seq_length, run.per_device_batch_size = scale.max_seq_length, scale.batch_size
    budget_epochs = family_budget_words(family, args, scale, corpus["train_words"]) / corpus["train_words"]
    if budget_unit == "one pass":
        # One counting pass over the corpus and a factorisation, in seconds: no steps or passes for a budget to set,
        # and no validation loss.
        run.validation_file = None
    elif budget_unit == "passes":
        # word2vec's trainer (like the C tool and gensim) runs whole epochs with its learning rate decaying over
        # them all: the budget in words becomes the nearest whole number of passes, a budget in seconds the number of
        # passes a first pass says fit in it.
        epochs = max(1, round(budget_epochs))
        if args.budget_seconds:
            run.overrides["epochs"] = 1
            pretrain(PretrainArguments(**{**asdict(run), "output_dir": str(folder / "probe")}))
            one_pass = json.loads((folder / "probe" / "train_results.json").read_text())["train_runtime"]
            epochs = max(1, int(args.budget_seconds / max(one_pass, 1e-3)))
            shutil.rmtree(folder / "probe")
        run.overrides["epochs"] = epochs
    elif args.budget_seconds:
        run.max_train_seconds = args.budget_seconds
    else:
        run.num_epochs = budget_epochs
    pretrain(run)
    process_state().wait_for_everyone()  # the main process writes the model and its numbers
    trained = json.loads((model_dir / "train_results.json").read_text())
    return pretraining_result(family, config, trained, corpus["train_words"], model_dir)


def pretraining_result(family: str, config: str, trained: dict, corpus_words: int, model_dir: Path) -> dict:
    """The numbers the report needs from ``train_results.json`` (the engine's or word2vec's CPU trainer's)."""
    from ..objectives import objective_class

    result = {"config": config, "objective": LINEAGE_FAMILIES[family].objective, **count_parameters(model_dir),
              "size": describe_size(library_family(family), json.loads((model_dir / "config.json").read_text())),
              "source": "pretrained by this run", "model": str(model_dir), "validation": {}, "curve": [],
              "eval_curve": []}
    if "log_history" not in trained:  # word2vec's CPU trainer: whole passes, no loss (as the C tool and gensim)
        return {**result, "steps": None, "words_seen": trained["epochs"] * corpus_words,
                "tokens_seen": trained["raw_words"], "train_seconds": trained["train_runtime"],
                "final_train_loss": None}
    # The engine: one pass over the corpus is ``steps_per_epoch`` steps, so words seen = corpus words × passes.
    words_per_step = corpus_words / trained["steps_per_epoch"]
    # The loss its perplexity is exp of (the run's own: BERT's left-to-right ablation has a next-token loss).
    loss_key = trained.get("perplexity_of", objective_class(library_family(family)).perplexity_of)
    for entry in trained["log_history"]:
        point = {"step": entry["step"], "words_seen": round(entry["step"] * words_per_step)}
        if "train_loss" in entry:
            result["curve"].append({**point, "seconds": entry["seconds"], "train_loss": entry["train_loss"]})
        elif f"eval_{loss_key}" in entry:
            loss = entry[f"eval_{loss_key}"]
            result["eval_curve"].append({**point, "loss": loss, "perplexity": math.exp(min(loss, 50))})
    if trained["eval"]:
        if loss_key is None:  # word2vec (on the engine): a validation loss of its objective, no perplexity
            result["validation"] = {"loss": trained["eval"].get("loss")}
        else:
            loss = trained["eval"][loss_key]
            result["validation"] = {"loss": loss, "perplexity": math.exp(min(loss, 50))}
    return {**result, "steps": trained["step"], "words_seen": round(trained["step"] * words_per_step),
            "tokens_seen": trained["tokens_seen"], "train_seconds": trained["train_runtime"],
            "final_train_loss": result["curve"][-1]["train_loss"] if result["curve"] else None}


def equal_time(args: LineageArguments, scale: Scale) -> bool:
    """The default budget of a scale that has one: equal pretraining time, as calibrated corpus words."""
    return not args.budget_words and not args.budget_seconds and scale.equal_time_seconds is not None


def family_budget_words(family: str, args: LineageArguments, scale: Scale, corpus_words: int) -> float:
    if args.budget_words:
        return args.budget_words
    if equal_time(args, scale):
        return scale.equal_time_words(family)
    return scale.epochs * corpus_words


def describe_budget(args: LineageArguments, scale: Scale, corpus_words: int) -> dict:
    if args.budget_seconds:
        return {"kind": "seconds", "seconds": args.budget_seconds, "words": None, "epochs": None,
                "description": f"{args.budget_seconds:g} s of pretraining per family, measured while it runs "
                               "(word2vec: "
                               "the whole passes a first pass says fit); not reproducible run to run"}
    if equal_time(args, scale):
        words = {family: scale.equal_time_words(family) for family in args.families}
        return {"kind": "equal time", "seconds": scale.equal_time_seconds, "words": words, "epochs": None,
                "description": f"equal time: about {scale.equal_time_seconds:g} s of pretraining per family on the "
                               f"reference machine ({REFERENCE_MACHINE}), fixed as the corpus words each family reads "
                               "in that time there (so runs are reproducible): "
                               + ", ".join(f"{family} {w:,}" for family, w in words.items())
                               + " (word2vec: the nearest whole number of passes)"}
    words = args.budget_words or round(scale.epochs * corpus_words)
    epochs = words / corpus_words
    return {"kind": "words", "words": words, "seconds": None, "epochs": epochs,
            "description": f"equal data: {epochs:.3g} pass(es) over the corpus ({words:,} corpus words) per family "
                           "(word2vec: the nearest whole number of passes, at least one)"}
