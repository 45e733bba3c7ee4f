"""``pretrain()``: one pre-training run, checked once here and handed to the engine or to the family's own trainer.

    hf-lineage pretrain word2vec --train-file corpus.txt --output-dir out/w2v   # no GPU: word2vec's own CPU trainer
    hf-lineage pretrain bert --config tiny --train-file corpus.txt --output-dir out/bert   # the engine

or from Python::

    from hf_lineage.pretraining import PretrainArguments, pretrain
    pretrain(PretrainArguments(family="bert", train_file=["corpus.txt"], output_dir="out/bert", max_steps=100))

This module sits above both backends. The backend is chosen first, from the options as given (``use_cpu_backend``);
the arguments are then settled and checked once, for that backend (``arguments.settle_arguments``), and handed down.
Then either the engine runs (``hf_lineage.engine.run_engine``) or the family's CPU trainer (its registry entry's
``cpu_trainer``: ``hf_lineage.word_vector_trainers``) is called with its own typed arguments, which the family's
objective builds (``cpu_trainer_arguments``): the trainers read no ``PretrainArguments``.
"""

from __future__ import annotations

import os

import torch

from ..engine import push_if_asked, run_engine
from ..objectives import get_objective
from ..registry import FAMILIES, load_object
from .arguments import (
    PretrainArguments,
    PretrainError,
    check_continuable,
    given_options,
    option_flags,
    settle_arguments,
)

__all__ = ["BACKENDS", "PretrainArguments", "PretrainError", "pretrain", "use_cpu_backend"]

BACKENDS = ("auto", "engine", "cpu")


def pretrain(args: PretrainArguments) -> str:
    """Pre-train ``args.family``; returns the output directory, which then holds a ``save_pretrained`` model."""
    objective = get_objective(args.family, args)
    given = given_options(args)
    check_continuable(args, given)
    # The backend first, from the options as given (before the family's defaults fill them in).
    on_cpu = use_cpu_backend(args, objective, given)
    settle_arguments(args, objective, on_cpu)
    if not on_cpu:
        return run_engine(args, objective, given)
    trainer = FAMILIES[args.family].cpu_trainer
    print(f"hf-lineage pretrain {args.family}: config {args.config}" + (f" with {args.overrides}" if args.overrides
          else "") + f", its own CPU trainer ({trainer.split(':')[0]}), float32 on the CPU", flush=True)
    output = load_object(trainer)(objective.cpu_trainer_arguments())
    push_if_asked(args, output)
    return output


def use_cpu_backend(args: PretrainArguments, objective, given=frozenset()) -> bool:
    """Whether ``--backend`` picks the family's own CPU trainer (``hf_lineage.word_vector_trainers``: word2vec's numba
    Hogwild SGD, svd's factorisation) over the engine: ``cpu`` asks for it (as does every backend but ``engine`` for a
    family the engine cannot train, svd), ``auto`` takes it when the family has one, no GPU is visible, one process
    runs, the corpus is local files, no run is resumed and no option in ``given`` is one the CPU trainer would ignore
    (``--max-steps``, ...). A choice the arguments make impossible is a ``PretrainError``."""
    if args.backend not in BACKENDS:
        raise PretrainError(f"--backend must be one of {', '.join(BACKENDS)}, got {args.backend!r}")
    backend = args.backend
    if not objective.engine_trains:  # only the family's own trainer can train it (svd: counts and an SVD)
        if backend == "engine":
            raise PretrainError(f"{args.family} is not trained by the engine: use --backend cpu (or auto)")
        backend = "cpu"
    if backend == "engine":
        return False
    one_process = int(os.environ.get("WORLD_SIZE", "1")) == 1
    ignored = set(given) & set(objective.cpu_backend_ignores)
    has_cpu_trainer = FAMILIES[args.family].cpu_trainer is not None
    if backend == "cpu":
        if not has_cpu_trainer:
            raise PretrainError(f"{args.family} has no CPU backend; use --backend engine")
        if not args.train_file or args.streaming or not one_process:
            raise PretrainError("--backend cpu trains one process on --train-file (no --dataset-name, --streaming "
                                "or multi-process launch); use --backend engine for those")
        if ignored and not objective.engine_trains:
            raise PretrainError(f"{args.family} is trained by its own code, not the engine: it does not use "
                                f"{option_flags(ignored)}; drop them")
        if ignored:
            raise PretrainError(f"--backend cpu ({args.family}'s own trainer) does not use {option_flags(ignored)}; "
                                "drop them or use --backend engine (or auto), which honours them")
        return True
    return (has_cpu_trainer and one_process and bool(args.train_file) and not args.streaming
            and not args.resume_from and not ignored and not torch.cuda.is_available())
