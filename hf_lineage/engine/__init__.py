"""The one pre-training engine every family shares, on Accelerate: one CPU, one GPU or many machines.

    hf-lineage pretrain bert --config tiny --train-file corpus.txt --output-dir out/bert
    accelerate launch --config_file recipes/accelerate/multi_gpu.yaml -m hf_lineage.pretraining bert ...

or from Python (``hf_lineage.pretraining.pretrain`` settles the arguments, then hands the run to this engine or to
the family's own CPU trainer, ``hf_lineage.word_vector_trainers``)::

    from hf_lineage.pretraining import PretrainArguments, pretrain
    pretrain(PretrainArguments(family="bert", train_file=["corpus.txt"], output_dir="out/bert", max_steps=100))

The family's ``PretrainingObjective`` (``hf_lineage.objectives``) decides the tokenizer, the examples, the collator,
the loss normalisation and the paper's optimiser defaults; the engine does the rest, the same way for everyone.
``run_engine()`` below is the whole run, step by step, on arguments settled and checked above it
(``hf_lineage.pretraining``: ``PretrainArguments``, ``settle_arguments``), which this folder never imports; each step
lives in the module it names.

* ``base_model``   — continued pre-training (``--init-from``): the saved model a run starts from, and its checks;
* ``loaders``      — tokenizer, examples and loaders (the reproducible samplers are ``hf_lineage.data.examples``);
* ``loop``         — the accelerator, the step plan, the training loop and its evaluation;
* ``resume``       — the run's folder, checkpoints and resume;
* ``results``      — the model card and ``train_results.json`` (the folder itself: ``hf_lineage.folders.pretrained``);
* ``errors``       — ``PretrainError``, a run's bad input in one line, which the checks above raise too.

The command line, ``hf-lineage pretrain`` (``python -m hf_lineage.pretraining``), and the dispatch between this engine
and the CPU trainers are ``hf_lineage.pretraining``, above this folder, which imports nothing of it.

Reproducibility is exact by construction: data order and masking depend on (seed, epoch, index) only, never on the
number of processes or where a run was resumed (``hf_lineage.data.examples``); losses are normalised by counts over
the whole accumulated, all-process batch (``loop``); a checkpoint holds every RNG and the position in the epoch, so
resuming after a SIGKILL continues bit for bit (``resume``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..folders.pretrained import push_folder
from ..registry import family_classes
from .errors import PretrainError

if TYPE_CHECKING:
    from ..objectives import PretrainingObjective

__all__ = ["PretrainError", "run_engine"]


def run_engine(args, objective: PretrainingObjective, given: set[str]) -> str:
    """Pre-train ``args.family`` on the engine, from arguments ``hf_lineage.pretraining.pretrain`` has checked and
    settled (a ``PretrainArguments``; ``given``: the options as the caller gave them); returns the output directory,
    which then holds a ``save_pretrained`` model."""
    # The steps' modules (torch, Accelerate, datasets) are imported here, when a run starts, so that importing the
    # engine (``hf-lineage pretrain --help`` reads this docstring) imports none of them.
    from .base_model import continued_model, load_base
    from .loaders import build_loaders, load_data
    from .loop import Run, build_scheduler, describe_run, plan_training, start_accelerator, train
    from .results import save_run
    from .resume import resume

    # A continued run's base model, tokenizer and config (--init-from), checked before anything is written.
    base = load_base(args, objective, given) if args.init_from else None
    output_dir = Path(args.output_dir)
    accelerator = start_accelerator(args)
    tokenizer, config, train_examples, eval_examples = load_data(args, objective, accelerator, output_dir, base)
    model = continued_model(objective, args, base) if base else build_model(args.family, objective, config)
    loaders = build_loaders(args, objective, tokenizer, train_examples, eval_examples)
    plan = plan_training(args, loaders.train, accelerator.num_processes)
    accelerator.print(describe_run(args, model, plan, accelerator, base), flush=True)
    if objective.language_report:  # a multilingual corpus (--train-file LANG=PATH)
        from ..data.languages import describe_languages

        accelerator.print(describe_languages(objective.language_report, args.language_alpha), flush=True)
    optimizer = objective.build_optimizer(model, args)
    scheduler = build_scheduler(args, optimizer, plan)
    model, optimizer, loaders.train = accelerator.prepare(model, optimizer, loaders.train)
    if loaders.eval is not None:
        loaders.eval = accelerator.prepare(loaders.eval)
    accelerator.register_for_checkpointing(scheduler)
    state, resumed_rng = resume(args, accelerator, output_dir)

    run = Run(args, objective, accelerator, model, optimizer, scheduler, tokenizer, loaders, plan, output_dir, base)
    outcome = train(run, state, resumed_rng)
    save_run(run, state, outcome)
    # Trackers end here; the process group stays up (not accelerator.end_training()), so a caller that goes on
    # (hf-lineage lineage: more stages) can still synchronise. The command line tears it down on exit.
    for tracker in accelerator.trackers:
        tracker.finish()
    if accelerator.is_main_process:
        push_if_asked(args, output_dir)
    return str(output_dir)


def hub_model_id(args) -> str:
    """Where ``--push-to-hub`` pushes: ``--hub-model-id``, or the output folder's name."""
    return args.hub_model_id or Path(args.output_dir).resolve().name


def push_if_asked(args, output_dir) -> None:
    """``--push-to-hub``: the saved folder to the Hub (checked before training: ``check_hub_arguments``). A failed
    push leaves the folder as it is and says how to push it again."""
    if not args.push_to_hub:
        return
    repo_id = hub_model_id(args)
    try:
        url = push_folder(output_dir, repo_id, f"hf-lineage pretrain {args.family} --config {args.config}")
    except OSError as error:  # huggingface_hub's HTTP and offline errors are OSErrors
        raise PretrainError(f"the model is saved in {output_dir}, but pushing it to {repo_id} failed "
                            f"({type(error).__name__}: {' '.join(str(error).split())}); push it again with "
                            f"`hf upload {repo_id} {output_dir}`") from None
    print(f"hf-lineage pretrain {args.family}: pushed {output_dir} to {url}", flush=True)


def build_model(family: str, objective, config):
    """The family's pre-training model, freshly initialised (from the seed), with the objective's data-derived state."""
    _, modeling = family_classes(family)
    model = getattr(modeling, objective.model_class_name)(config)
    objective.init_model(model)
    return model
