"""Pre-training objectives: what each family decides, plugged into the one engine in ``hf_lineage.engine``.

A family decides its tokenizer, its config, how raw text becomes training examples, its collator, how its loss is
normalised, its evaluation numbers and its paper's optimiser settings. The engine does everything else (data
loading, Accelerate, accumulation, clipping, schedules, checkpoints, logging, saving). A family's objective is a
subclass here, named by its entry in ``hf_lineage.registry.FAMILIES``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from .optimization import build_optimizer
from ..registry import family_spec, load_object


class PretrainingObjective:
    """Base class: the small interface between a family and the engine."""

    family: ClassVar[str]
    model_class_name: ClassVar[str]  # class in the family's modeling module, e.g. "LineageBertForPreTraining"
    # The paper's optimisation settings; every one can be overridden from the command line.
    defaults: ClassVar[dict[str, Any]] = dict(
        learning_rate=1e-4, weight_decay=0.01, adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8,
        lr_scheduler="linear", warmup_ratio=0.0, max_grad_norm=1.0, max_seq_length=128, per_device_batch_size=32,
        vocab_size=30000,
    )
    # What ``--config tiny`` (asked for: the default is the paper's, ``registry.Family.paper_size``) changes in those:
    # the papers' batches, sequences and vocabularies would make a smoke run on a laptop take seconds per step. A
    # None value removes the paper's default.
    tiny_defaults: ClassVar[dict[str, Any]] = dict(per_device_batch_size=8, max_seq_length=64, vocab_size=8000)
    # Names ``--set`` takes besides the config's fields (NNLM: its tokenizer's options).
    set_options: ClassVar[tuple[str, ...]] = ()
    # Evaluation key whose exponential is reported as perplexity (None where perplexity is not defined).
    perplexity_of: ClassVar[str | None] = None
    # Keyword arguments the engine adds to every forward call, in training and evaluation (BERT's
    # ``sparse_logits=True``: MLM logits only at the labelled positions, the fast path ``eval_sums`` reads).
    forward_kwargs: ClassVar[dict[str, Any]] = {}
    # A family with a CPU trainer (its registry entry's ``cpu_trainer``: word2vec, svd) may be trained by it instead of
    # the engine (``--backend``). False for a family that only that trainer trains (svd: counts and a factorisation,
    # no gradient steps): ``--backend auto`` always takes that trainer and ``--backend engine`` is refused.
    engine_trains: ClassVar[bool] = True
    # Options (PretrainArguments names) the family's CPU trainer does not use: given one, ``--backend auto`` takes
    # the engine and ``--backend cpu`` refuses it. And those the family never uses (on either path): refused.
    cpu_backend_ignores: ClassVar[tuple[str, ...]] = ()
    unused_options: ClassVar[tuple[str, ...]] = ()
    # Takes a multilingual corpus (``--train-file LANG=PATH``) and weights its languages (BERT: mBERT's smoothing,
    # ``hf_lineage.data.languages``); ``language_report`` then says per language what was drawn.
    multilingual: ClassVar[bool] = False
    language_report: dict | None = None
    # The switches of its objective it takes (``pretraining.arguments.OBJECTIVE_OPTIONS``: BERT's NSP, masking
    # rate and split); the others are refused.
    objective_options: ClassVar[tuple[str, ...]] = ()

    def __init__(self, args):
        self.args = args

    def train_tokenizer(self, files: list[str] | None, texts) -> Any:
        raise NotImplementedError

    def build_config(self, size: str, tokenizer, overrides: dict[str, Any]):
        raise NotImplementedError

    def prepare(self, dataset, tokenizer, split: str):
        """Turn a ``datasets`` dataset with a ``text`` column into the examples the collator takes."""
        raise NotImplementedError

    def prepare_stream(self, dataset, tokenizer, split):
        """For ``--streaming``: given a ``datasets.IterableDataset`` with a ``text`` column, return a function of the
        epoch that yields the examples the collator takes, deterministically for a given epoch."""
        raise ValueError(f"{self.family} does not support --streaming")  # a clear CLI error, not a traceback

    def collator(self, tokenizer):
        raise NotImplementedError

    def loss_counts(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Counts the model divides its summed losses by (``num_items_in_batch`` …), for this micro-batch.

        The engine sums them over the accumulation window and all processes before the forward passes, so the
        gradient of a global batch does not depend on how it is split.
        """
        return {"num_items_in_batch": (batch["labels"] != -100).sum()}

    def eval_sums(self, outputs, batch) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """Per-example (sum, count) pairs of each evaluation number; the engine reports sum / count."""
        raise NotImplementedError

    def objective_record(self) -> dict | None:
        """What the run's objective was, for ``pretraining.json`` and the model card, where the family's switches
        (``objective_options``) can change it; None: always its paper's."""
        return None

    def init_model(self, model) -> None:
        """Called on the freshly built model, before training: a family may store data-derived state in it (word2vec
        stores its vocabulary counts). Default: nothing."""

    def cpu_trainer_arguments(self):
        """A family with its own CPU trainer (its registry entry's ``cpu_trainer``): that trainer's typed arguments
        (``hf_lineage.word_vector_trainers``), from the run's settled ``PretrainArguments``."""
        raise NotImplementedError(f"{self.family} has no CPU trainer")

    def build_optimizer(self, model, args) -> torch.optim.Optimizer:
        """The optimiser the engine steps; default: AdamW with the usual no-decay groups
        (``hf_lineage.objectives.optimization.build_optimizer``). word2vec overrides it with plain SGD."""
        return build_optimizer(model, args)


def objective_class(family: str) -> type[PretrainingObjective]:
    """The ``PretrainingObjective`` subclass of a family (its registry entry's ``objective``)."""
    return load_object(family_spec(family).objective)


def get_objective(family: str, args) -> PretrainingObjective:
    return objective_class(family)(args)
