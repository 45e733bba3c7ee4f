"""The one pre-training engine every family shares, on Accelerate: one CPU, one GPU or many machines.

    hf-lineage pretrain bert --config tiny --train-file corpus.txt --output-dir out/bert
    accelerate launch --config_file recipes/accelerate/multi_gpu.yaml -m hf_lineage.pretrain bert ...

or from Python::

    from hf_lineage.engine import PretrainArguments, pretrain
    pretrain(PretrainArguments(family="bert", train_file=["corpus.txt"], output_dir="out/bert", max_steps=100))

The family's ``PretrainingObjective`` (``hf_lineage.objectives``) decides the tokenizer, the examples, the collator,
the loss normalisation and the paper's optimiser defaults; the engine does the rest, the same way for everyone.
``pretrain()`` below is the whole run, step by step; each step lives in the module it names. Its first step picks
the backend (``--backend``, ``pretrain_arguments.use_cpu_backend``): a family with its own CPU trainer (word2vec, svd:
``hf_lineage.cpu``) may be trained there instead, and the rest of ``pretrain()`` is the engine.

* ``pretrain_arguments`` — ``PretrainArguments``, the choice of backend and the checks made before any work;
* ``base_model``   — continued pre-training (``--init-from``): the saved model a run starts from, and its checks;
* ``loaders``      — tokenizer, examples and loaders (the reproducible samplers are ``hf_lineage.data.examples``);
* ``loop``         — the accelerator, the step plan, the training loop and its evaluation;
* ``resume``       — the run's folder, checkpoints and resume;
* ``results``      — the model card and ``train_results.json`` (the folder itself: ``hf_lineage.pretrained_folder``);
* ``command_line`` — ``hf-lineage pretrain``.

Reproducibility is exact by construction: data order and masking depend on (seed, epoch, index) only, never on the
number of processes or where a run was resumed (``hf_lineage.data.examples``); losses are normalised by counts over
the whole accumulated, all-process batch (``loop``); a checkpoint holds every RNG and the position in the epoch, so
resuming after a SIGKILL continues bit for bit (``resume``).
"""

from __future__ import annotations

from pathlib import Path

from ..data.languages import describe_languages
from ..objectives import get_objective
from ..registry import FAMILIES, family_classes, load_object
from ..pretrained_folder import push_folder
from .base_model import check_continuable, continued_model, load_base
from .pretrain_arguments import (PretrainArguments, PretrainError, given_options, hub_model_id, settle_arguments,
                                 use_cpu_backend)
from .resume import resume
from .loaders import build_loaders, load_data
from .loop import Run, build_scheduler, describe_run, plan_training, start_accelerator, train
from .results import save_run

__all__ = ["PretrainArguments", "PretrainError", "pretrain"]


def pretrain(args: PretrainArguments) -> str:
    """Pre-train ``args.family``; returns the output directory, which then holds a ``save_pretrained`` model."""
    objective = get_objective(args.family, args)
    given = given_options(args)
    check_continuable(args, given)
    # The backend first: the family's own CPU trainer (word2vec's, svd's: hf_lineage.cpu) or the engine below.
    on_cpu = use_cpu_backend(args, objective, given)
    settle_arguments(args, objective, on_cpu)
    if on_cpu:
        trainer = FAMILIES[args.family].cpu_trainer
        print(f"hf-lineage pretrain {args.family}: config {args.config}" + (f" with {args.overrides}" if args.overrides
              else "") + f", its own CPU trainer ({trainer.split(':')[0]}), float32 on the CPU", flush=True)
        output = load_object(trainer)(args, objective)
        push_if_asked(args, output)
        return output

    # A continued run's base model, tokenizer and config (--init-from), checked before anything is written.
    base = load_base(args, objective, given) if args.init_from else None
    output_dir = Path(args.output_dir)
    accelerator = start_accelerator(args)
    tokenizer, config, train_examples, eval_examples = load_data(args, objective, accelerator, output_dir, base)
    model = continued_model(objective, args, base) if base else build_model(args.family, objective, config)
    loaders = build_loaders(args, objective, tokenizer, train_examples, eval_examples)
    plan = plan_training(args, loaders.train, accelerator.num_processes)
    accelerator.print(describe_run(args, model, plan, accelerator, base), flush=True)
    if objective.language_report:
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


def push_if_asked(args: PretrainArguments, output_dir) -> None:
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
