"""The training loop and its evaluation: optimiser steps over accumulated, all-process batches until the step
budget or the clock runs out, with logging, periodic evaluation and checkpoints on the way.

Losses are sums divided by counts over the whole accumulated, all-process batch (``loss_counts``), so one process
with batch 8 and two processes with batch 4 compute the same gradient. Dropout draws from each process's RNG and
therefore does depend on the number of processes: runs with dropout are reproducible for a fixed world size, not
across world sizes.
"""

from __future__ import annotations

import math
import os
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import torch

from ..objectives.optimization import CLOCK_POSITIONS, set_schedule_position
from .errors import PretrainError
from .resume import save_checkpoint, set_rng_states
from .loaders import Loaders


def check_not_silently_replicated(accelerator) -> None:
    """Several processes launched (torchrun, WORLD_SIZE > 1) but Accelerate not distributed: every process would
    train its own unsynchronised copy and nothing would warn. Stop instead."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and accelerator.num_processes == 1:
        raise PretrainError(
            f"WORLD_SIZE={world} processes were launched but Accelerate is not running distributed, so each "
            "process would train an unsynchronised replica. On CPU set ACCELERATE_USE_CPU=1 and launch with "
            "`accelerate launch --multi_gpu --num_processes N` (or torchrun); on GPUs check the accelerate config."
        )


def report_to(args) -> str | None:
    """The Accelerate tracker ``--report-to`` names; None for none."""
    return None if args.report_to in ("none", "", None) else args.report_to


def start_accelerator(args):
    """The ``Accelerator`` (devices, processes, mixed precision, trackers, ``--torch-compile``), and the seed every
    process starts from. Batches reach a GPU from pinned memory with non-blocking copies (``build_loaders`` pins
    them), so the copy of the next batch overlaps the current step."""
    from accelerate import Accelerator
    from accelerate.utils import DataLoaderConfiguration, ProjectConfiguration, TorchDynamoPlugin, set_seed

    output_dir = Path(args.output_dir)
    accelerator = Accelerator(
        mixed_precision=args.mixed_precision, log_with=report_to(args),
        project_config=ProjectConfiguration(project_dir=str(output_dir), logging_dir=str(output_dir / "logs")),
        dataloader_config=DataLoaderConfiguration(non_blocking=torch.cuda.is_available()),
        # dynamic=None: compiled for the first shapes, then with dynamic shapes once they change (BERT skips
        # padding, so its shapes vary from batch to batch). Without --torch-compile, Accelerate's own config decides.
        **({"dynamo_plugin": TorchDynamoPlugin(backend="inductor", dynamic=None)} if args.torch_compile else {}),
    )
    check_not_silently_replicated(accelerator)
    set_seed(args.seed)
    return accelerator


@dataclass
class Plan:
    """How long the run is and how its learning-rate schedule is laid out."""

    steps_per_epoch: int | None  # None when streaming
    max_steps: int
    schedule_length: int  # positions of the schedule: optimiser steps, or CLOCK_POSITIONS of a time budget
    warmup: int
    time_budget: float | None  # --max-train-seconds
    global_batch: int  # sequences in one micro-batch of all processes together


def plan_training(args, train_loader, num_processes: int) -> Plan:
    steps_per_epoch = (None if args.streaming
                       else len(train_loader) // num_processes // args.gradient_accumulation_steps)
    time_budget = args.max_train_seconds
    if time_budget:
        # A wall-clock budget: train until the clock runs out (or --max-steps), and run the learning-rate schedule on
        # the clock rather than on steps (as "Cramming", Geiping & Goldstein 2023, do), so a budget that ends
        # mid-way still ends at the end of its decay. The schedule is laid out over CLOCK_POSITIONS positions.
        max_steps = args.max_steps or sys.maxsize
        schedule_length = CLOCK_POSITIONS
    else:
        max_steps = args.max_steps or max(1, math.ceil(args.num_epochs * steps_per_epoch))
        schedule_length = max_steps
    warmup = (args.warmup_steps if args.warmup_steps is not None and not time_budget
              else math.ceil(args.warmup_ratio * schedule_length))
    return Plan(steps_per_epoch, max_steps, schedule_length, warmup, time_budget,
                args.per_device_batch_size * num_processes)


def describe_run(args, model, plan: Plan, accelerator, base=None) -> str:
    """What the run will train, said before the first step: named size (or the model a continued run starts from,
    ``base``), parameters, vocabulary, sequence length, batch, length of the run, device and precision."""
    parameters = sum(p.numel() for p in model.parameters())
    vocabulary = getattr(model.config, "vocab_size", None)
    if plan.time_budget:
        length = f"{plan.time_budget:g} s of training"
        if args.max_steps:
            length += f" (at most {args.max_steps:,} steps)"
    else:
        epochs = f" ({plan.max_steps / plan.steps_per_epoch:.3g} epochs)" if plan.steps_per_epoch else ""
        length = f"{plan.max_steps:,} optimiser steps{epochs}"
    what = base.describe() if base is not None else f"config {args.config}"
    return (f"hf-lineage pretrain {args.family}: {what}"
            + (f" with {args.overrides}" if args.overrides else "")
            + (":" if base is not None else ",")
            + f" {parameters / 1e6:,.2f}M parameters, vocabulary {vocabulary:,}, sequences of {args.max_seq_length} "
            f"tokens, global batch {plan.global_batch * args.gradient_accumulation_steps} "
            f"({args.per_device_batch_size} per device x {args.gradient_accumulation_steps} accumulation x "
            f"{accelerator.num_processes} process(es)), {length}, on {accelerator.device}, precision "
            f"{accelerator.mixed_precision}")


def build_scheduler(args, optimizer, plan: Plan):
    """The learning-rate schedule, stepped by hand once per optimiser step (Accelerate's wrapper would step it once
    per process), or put at the clock's position under a time budget."""
    from transformers import get_scheduler

    return get_scheduler(args.lr_scheduler, optimizer, num_warmup_steps=plan.warmup,
                         num_training_steps=plan.schedule_length)


@dataclass
class Run:
    """A prepared run: what the loop steps, evaluates and finally saves."""

    args: Any  # hf_lineage.pretraining's PretrainArguments, settled
    objective: Any
    accelerator: Any
    model: Any
    optimizer: Any
    scheduler: Any
    tokenizer: Any
    loaders: Loaders
    plan: Plan
    output_dir: Path
    base: Any = None  # a continued run's BaseModel (--init-from); None from scratch


@dataclass
class Outcome:
    """What the loop reports for ``train_results.json``."""

    results: dict[str, float]  # the last evaluation ({} without a validation set)
    train_runtime: float  # seconds in the loop in this session (a resumed run counts from its resume)
    tokens_per_second: float  # non-padding tokens trained on in this session, per second
    stopped_by_clock: bool


class Meter:
    """The loss and the non-padding tokens this process trained on since the last log, and the clock: it continues
    from the checkpoint's when resuming."""

    def __init__(self, accelerator, state: dict):
        self.loss, self.steps, self.since = torch.zeros((), device=accelerator.device), 0, time.time()
        self.tokens, self.loop_started = torch.zeros((), dtype=torch.long, device=accelerator.device), time.time()
        self.clock_start, self.tokens_before = self.loop_started - state["train_seconds"], state["tokens_seen"]


def train(run: Run, state: dict, resumed_rng: dict | None) -> Outcome:
    """Step from ``state`` (a fresh one, or a checkpoint's) until ``run.plan`` says stop; evaluate at the end."""
    from tqdm.auto import tqdm

    args, accelerator, plan, loaders = run.args, run.accelerator, run.plan, run.loaders
    if report_to(args):
        accelerator.init_trackers("pretrain", config={k: v for k, v in asdict(args).items()
                                                      if isinstance(v, (int, float, str, bool))})
    accum = args.gradient_accumulation_steps
    progress = tqdm(total=None if plan.time_budget else plan.max_steps, initial=state["step"],
                    disable=not accelerator.is_local_main_process, desc=f"pretrain {args.family}")
    results, evaluated_at, out_of_time = {}, None, False
    if run.base is not None and loaders.eval is not None and state["step"] == 0:
        # Where a continued run starts: the base model's numbers on this run's validation data, before any step.
        results = evaluate(run.model, loaders.eval, run.objective, accelerator, args.max_eval_batches)
        evaluated_at = 0
        record_evaluation(accelerator, state, results)
        accelerator.print(f"step 0 ({run.base.init_from}): " + ", ".join(f"{k}={v:.4f}" for k, v in results.items()))
    run.model.train()
    meter = Meter(accelerator, state)
    while state["step"] < plan.max_steps:
        loaders.set_epoch(state["epoch"])
        loader = loaders.train
        if state["batches_in_epoch"]:
            loader = accelerator.skip_first_batches(loaders.train, state["batches_in_epoch"])
        batches = iter(loader)
        step_at_epoch_start = state["step"]
        while state["step"] < plan.max_steps:
            micro_batches = list(islice(batches, accum))
            if resumed_rng is not None:
                # Starting the resumed epoch's iterator drew from the global RNG, which the uninterrupted run did
                # before the checkpoint: put back the checkpoint's RNG so dropout continues bit for bit.
                set_rng_states(resumed_rng)
                resumed_rng = None
            if len(micro_batches) < accum:
                if state["step"] == step_at_epoch_start and not state["batches_in_epoch"]:
                    raise PretrainError("the training data yields fewer examples than one optimisation step")
                break  # end of the epoch
            out_of_time = optimizer_step(run, micro_batches, meter)
            state["step"] += 1
            state["batches_in_epoch"] += accum
            state["examples_seen"] += plan.global_batch * accum
            meter.steps += 1
            progress.update(1)

            if state["step"] % args.log_every == 0 or state["step"] == plan.max_steps or out_of_time:
                log_training(run, state, meter, progress)
            if loaders.eval is not None and args.eval_every and state["step"] % args.eval_every == 0:
                results = evaluate(run.model, loaders.eval, run.objective, accelerator, args.max_eval_batches)
                evaluated_at = state["step"]
                record_evaluation(accelerator, state, results)
                accelerator.print(f"step {state['step']}: " + ", ".join(f"{k}={v:.4f}" for k, v in results.items()))
            if args.checkpoint_every and state["step"] % args.checkpoint_every == 0:
                save_checkpoint(accelerator, run.output_dir, state, args.keep_checkpoints)
            if out_of_time:
                break
        else:
            break  # max_steps reached inside the epoch
        if out_of_time:
            break
        state["epoch"] += 1
        state["batches_in_epoch"] = 0
    progress.close()
    train_runtime = time.time() - meter.loop_started
    state["tokens_seen"] += accelerator.reduce(meter.tokens, "sum").item()  # steps after the last log

    if loaders.eval is not None and evaluated_at != state["step"]:
        results = evaluate(run.model, loaders.eval, run.objective, accelerator, args.max_eval_batches)
        record_evaluation(accelerator, state, results)
    return Outcome(results, train_runtime, (state["tokens_seen"] - meter.tokens_before) / train_runtime,
                   out_of_time)


def optimizer_step(run: Run, micro_batches: list[dict], meter: Meter) -> bool:
    """One optimiser step over ``micro_batches`` (the accumulation window); returns whether the clock ran out."""
    accelerator, model, objective, plan = run.accelerator, run.model, run.objective, run.plan
    accum, world = run.args.gradient_accumulation_steps, accelerator.num_processes
    counts = {}
    for batch in micro_batches:
        for name, value in objective.loss_counts(batch).items():
            counts[name] = counts.get(name, 0) + value
    counts = {name: accelerator.reduce(value, "sum") for name, value in counts.items()}
    for i, batch in enumerate(micro_batches):
        # Gradients are all-reduced (averaged) only on the last micro-batch of the step.
        with accelerator.no_sync(model) if i < accum - 1 else nullcontext():
            loss = model(**batch, **counts, **objective.forward_kwargs).loss
            # The loss is already normalised by global counts; undo DDP's averaging over processes.
            accelerator.backward(loss * world)
        meter.loss += loss.detach()
        meter.tokens += batch["attention_mask"].sum() if "attention_mask" in batch else batch["input_ids"].numel()
    if run.args.max_grad_norm:
        accelerator.clip_grad_norm_(model.parameters(), run.args.max_grad_norm)
    run.optimizer.step()
    out_of_time = False
    if plan.time_budget:
        elapsed = time.time() - meter.clock_start
        if world > 1:
            # Every process must agree on the clock (their learning rates and the stop must be identical): the
            # slowest process's elapsed time decides. One process reads its own clock: no device round trip a step.
            elapsed = accelerator.reduce(torch.tensor(elapsed, device=accelerator.device), "max").item()
        set_schedule_position(run.scheduler,
                              min(plan.schedule_length, round(plan.schedule_length * elapsed / plan.time_budget)))
        out_of_time = elapsed >= plan.time_budget
    else:
        run.scheduler.step()
    run.optimizer.zero_grad(set_to_none=True)
    return out_of_time


def log_training(run: Run, state: dict, meter: Meter, progress) -> None:
    """The mean loss since the last log, into the state's history, the tracker and the progress bar."""
    accelerator, learning_rate = run.accelerator, run.scheduler.get_last_lr()[0]
    train_loss = accelerator.reduce(meter.loss, "sum").item() / meter.steps
    if not math.isfinite(train_loss):  # every process sees the same reduced loss, so all of them stop here
        progress.close()  # the error line below the bar, not after it
        raise PretrainError(
            f"{run.args.family} diverged by step {state['step']}: training loss {train_loss}; the final model was not "
            f"saved (checkpoints already written stay in {run.output_dir / 'checkpoints'}). Lower --learning-rate "
            f"(it was {run.args.learning_rate:g}).")
    state["tokens_seen"] += accelerator.reduce(meter.tokens, "sum").item()
    meter.tokens.zero_()
    state["train_seconds"] = time.time() - meter.clock_start
    state["log_history"].append({
        "step": state["step"], "examples_seen": state["examples_seen"], "tokens_seen": state["tokens_seen"],
        "seconds": round(state["train_seconds"], 3), "train_loss": train_loss, "learning_rate": learning_rate})
    sequences = meter.steps * run.plan.global_batch * run.args.gradient_accumulation_steps
    logs = {"train/loss": train_loss, "train/learning_rate": learning_rate,
            "train/examples_per_second": sequences / (time.time() - meter.since)}
    progress.set_postfix(loss=f"{train_loss:.4f}")
    accelerator.log(logs, step=state["step"])
    meter.loss.zero_()
    meter.steps, meter.since = 0, time.time()


def record_evaluation(accelerator, state: dict, results: dict[str, float]) -> None:
    state["log_history"].append({"step": state["step"], "examples_seen": state["examples_seen"],
                                 "tokens_seen": state["tokens_seen"], **{f"eval_{k}": v for k, v in results.items()}})
    accelerator.log({f"eval/{k}": v for k, v in results.items()}, step=state["step"])


def evaluate(model, dataloader, objective, accelerator, max_batches=None) -> dict[str, float]:
    """The objective's evaluation numbers over ``dataloader`` (at most ``max_batches``), summed over all processes."""
    model.eval()
    totals: dict[str, list[torch.Tensor]] = {}
    with torch.no_grad():
        for batch in islice(dataloader, max_batches):
            outputs = model(**batch, **objective.loss_counts(batch), **objective.forward_kwargs)
            for name, (sums, counts) in objective.eval_sums(outputs, batch).items():
                sums, counts = accelerator.gather_for_metrics((sums, counts))
                acc = totals.setdefault(name, [torch.zeros((), dtype=torch.float64)] * 2)
                totals[name] = [acc[0] + sums.double().sum().cpu(), acc[1] + counts.double().sum().cpu()]
    model.train()
    results = {name: (s / c).item() if c > 0 else float("nan") for name, (s, c) in totals.items()}
    if objective.perplexity_of in results:
        results[objective.perplexity_of.replace("loss", "perplexity")] = math.exp(min(results[objective.perplexity_of], 50))
    return results
