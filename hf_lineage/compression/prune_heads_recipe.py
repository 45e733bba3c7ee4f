"""The head-pruning recipe (``recipes/prune_heads.py``): a fine-tuned lineage BERT or GPT classifier (single
sentences or pairs, as ``recipes/classification.py`` / ``sentence_pairs.py`` wrote it) has its heads scored on the
training data (Michel et al.'s importance, ``hf_lineage.compression.pruning``) and is evaluated with a growing
fraction of them removed: least important first, then in random orders (the baseline the ranking must beat), and,
with ``--finetune_epochs``, again after a short fine-tuning of each pruned model. It writes ``pruning_curve.json``,
``pruning_curve.md``, ``pruning_curve.png`` and, with ``--save_fraction``, the model pruned at that fraction
(``config.pruned_heads`` set: it loads like any other checkpoint).

Reads its data exactly as the classification recipe does (``--train_file``, ``--validation_file`` or
``--dataset_name``, the same columns); ``--do_train`` and ``--do_eval`` are implied.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments

from ..tasks import recipe_arguments
from ..tasks.recipe_arguments import DataTrainingArguments, ModelArguments
from ..tasks.classification import encoding_for, make_compute_metrics
from ..tasks.splits import load_splits
from ..tasks.training import (check_precision, encode_splits, load_config, load_tokenizer, sequence_length_limit,
                              setup_logging)
from .pruning import head_importance, pruning_curve, random_importance

logger = logging.getLogger(__name__)


@dataclass
class PruningArguments:
    fractions: list[float] = field(default_factory=lambda: [0.0, 0.25, 0.5, 0.75, 1.0],
                                   metadata={"help": "fractions of all heads to remove, one curve point each"})
    finetune_epochs: float = field(default=1.0, metadata={"help": "epochs of fine-tuning after pruning (0: none)"})
    importance_examples: int = field(default=512, metadata={"help": "training examples the importance is read on"})
    pairs: bool = field(default=False, metadata={"help": "sentence pairs (sentence1, sentence2) instead of sentences"})
    save_fraction: float | None = field(default=None, metadata={"help": "save the model pruned at this fraction"})
    random_orders: int = field(default=5, metadata={"help": "random pruning orders averaged for the baseline curve"})


def parse_arguments(argv=None):
    """(ModelArguments, DataTrainingArguments, TrainingArguments, PruningArguments), as the task recipes parse."""
    return recipe_arguments.parse_arguments(argv, dataclass_types=(ModelArguments, DataTrainingArguments, TrainingArguments,
                                                            PruningArguments))


def check(pruning_args: PruningArguments, config) -> None:
    if not (str(config.model_type).startswith("lineage-") and hasattr(config, "num_attention_heads")):
        raise ValueError(f"head pruning needs a lineage Transformer classifier (attention heads: lineage-bert, "
                         f"lineage-gpt), got {config.model_type!r}")
    if pruning_args.random_orders < 1:
        raise ValueError(f"--random_orders must be at least 1, got {pruning_args.random_orders}")
    bad = [f for f in pruning_args.fractions if not 0.0 <= f <= 1.0]
    if bad or not pruning_args.fractions:
        raise ValueError(f"--fractions must be values in [0, 1], got {pruning_args.fractions}")
    if pruning_args.save_fraction is not None and pruning_args.save_fraction not in pruning_args.fractions:
        raise ValueError(f"--save_fraction {pruning_args.save_fraction} is not one of --fractions")


def encode(splits, tokenizer, config, data_args, pairs):
    label2id = {label: int(i) for label, i in config.label2id.items()}
    unknown = sorted({label for split in splits.values() for label in split.dataset["label"]} - set(label2id))
    if unknown:
        raise ValueError(f"labels {unknown} are not among the fine-tuned model's {sorted(label2id)}")
    max_length = sequence_length_limit(data_args.max_seq_length, tokenizer, config)
    function, collator = encoding_for(config, tokenizer)
    encoded = encode_splits(splits, function, dict(tokenizer=tokenizer, label2id=label2id, max_length=max_length,
                                                   pairs=pairs), data_args)
    return encoded, collator


def run(model_args, data_args, training_args, pruning_args) -> list[dict]:
    check_precision(training_args)
    setup_logging(training_args)
    # Only the curve and the chosen pruned model are outputs: no Trainer checkpoints on the way.
    training_args.do_train = training_args.do_eval = True
    training_args.save_strategy = "no"
    splits = load_splits("sentence_pairs" if pruning_args.pairs else "classification", data_args, training_args)
    config = load_config(model_args)
    check(pruning_args, config)
    path = model_args.model_name_or_path
    tokenizer = load_tokenizer(model_args)
    model = AutoModelForSequenceClassification.from_pretrained(path, **model_args.hub_kwargs())
    encoded, collator = encode(splits, tokenizer, model.config, data_args, pruning_args.pairs)
    compute_metrics = make_compute_metrics(len(model.config.id2label))

    def evaluate(candidate) -> float:
        trainer = Trainer(model=candidate, args=training_args, eval_dataset=encoded["validation"],
                          data_collator=collator, compute_metrics=compute_metrics)
        return trainer.evaluate()["eval_accuracy"]

    def finetune(candidate) -> None:
        training_args.num_train_epochs = pruning_args.finetune_epochs
        Trainer(model=candidate, args=training_args, train_dataset=encoded["train"], data_collator=collator).train()

    sample = encoded["train"].select(range(min(pruning_args.importance_examples, len(encoded["train"]))))
    loader = torch.utils.data.DataLoader(sample, batch_size=training_args.per_device_eval_batch_size,
                                         collate_fn=collator)
    importance = head_importance(model, loader)
    logger.info("head importance (layers x heads):\n%s", importance)
    ranked = pruning_curve(model, importance, pruning_args.fractions, evaluate,
                           finetune if pruning_args.finetune_epochs > 0 else None)
    shuffled = [pruning_curve(model, random_importance(importance, training_args.seed + i), pruning_args.fractions,
                              evaluate) for i in range(pruning_args.random_orders)]
    points = [dict(point, random_order_score=float(np.mean(scores)), random_order_std=float(np.std(scores)))
              for point, scores in zip(ranked, zip(*([p["score"] for p in curve] for curve in shuffled)))]
    write(points, importance, training_args.output_dir, path)
    if pruning_args.save_fraction is not None:
        save_pruned(model, importance, pruning_args.save_fraction, tokenizer, training_args.output_dir)
    return points


def save_pruned(model, importance, fraction, tokenizer, output_dir) -> None:
    from .pruning import least_important_heads

    model.prune_heads(least_important_heads(importance, fraction))
    model.save_pretrained(os.path.join(output_dir, "pruned"))
    tokenizer.save_pretrained(os.path.join(output_dir, "pruned"))


def write(points: list[dict], importance, output_dir: str, model_path: str) -> None:
    os.makedirs(output_dir, exist_ok=True)
    with open(os.path.join(output_dir, "pruning_curve.json"), "w", encoding="utf-8") as f:
        json.dump({"model": model_path, "importance": importance.tolist(), "points": points}, f, indent=2)
    after = any("score_after_finetune" in p for p in points)
    lines = ["| heads removed | heads left | parameters | accuracy (importance order) | "
             + ("after fine-tuning | " if after else "") + "accuracy (random orders: mean ± sd) |",
             "|---|---|---|---|" + ("---|" if after else "") + "---|"]
    for p in points:
        lines.append(f"| {p['heads_removed']} ({p['fraction']:.0%}) | {p['heads_left']} | {p['parameters']:,} | "
                     f"{p['score']:.3f} | " + (f"{p['score_after_finetune']:.3f} | " if after else "")
                     + f"{p['random_order_score']:.3f} ± {p['random_order_std']:.3f} |")
    with open(os.path.join(output_dir, "pruning_curve.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    plot(points, os.path.join(output_dir, "pruning_curve.png"))


def plot(points: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fractions = np.array([p["fraction"] for p in points]) * 100
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(fractions, [p["score"] for p in points], "o-", label="least important first")
    if "score_after_finetune" in points[0]:
        ax.plot(fractions, [p["score_after_finetune"] for p in points], "s-", label="... then fine-tuned")
    ax.errorbar(fractions, [p["random_order_score"] for p in points], yerr=[p["random_order_std"] for p in points],
                fmt="x--", capsize=3, label="random order (mean ± sd)")
    ax.set_xlabel("heads removed (%)")
    ax.set_ylabel("validation accuracy")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
