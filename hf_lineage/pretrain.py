"""The one pre-training engine every family shares, on Accelerate: one CPU, one GPU or many machines.

    hf-lineage pretrain bert --config tiny --train-file corpus.txt --output-dir out/bert
    accelerate launch --config_file recipes/accelerate/multi_gpu.yaml -m hf_lineage.pretrain bert ...

or from Python::

    from hf_lineage.pretrain import PretrainArguments, pretrain
    pretrain(PretrainArguments(family="bert", train_file=["corpus.txt"], output_dir="out/bert", max_steps=100))

The family's ``PretrainingObjective`` (``hf_lineage.objectives``) decides the tokenizer, the examples, the collator,
the loss normalisation and the paper's optimiser defaults; this module does the rest, the same way for everyone.

Reproducibility is exact by construction:

* Data order is a permutation drawn from ``seed + epoch``; masking is drawn per example from a seed derived from
  (seed, epoch, index) — so neither depends on the number of processes or on where a run was resumed.
* Losses are sums divided by counts over the whole accumulated, all-process batch (``loss_counts``), so one
  process with batch 8 and two processes with batch 4 compute the same gradient.
* A checkpoint holds the model, optimiser, scheduler, every RNG and the position in the epoch; resuming after a
  SIGKILL continues bit for bit. Dropout draws from each process's RNG and therefore does depend on the number
  of processes: runs with dropout are reproducible for a fixed world size, not across world sizes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from contextlib import nullcontext
from dataclasses import MISSING, asdict, dataclass, field, fields
from itertools import islice
from pathlib import Path

import torch

RUN_FILE = "run_args.json"
STATE_FILE = "engine_state.json"
# Arguments that define *what* is trained; a resumed run must agree on all of them.
IDENTITY_FIELDS = (
    "family", "config", "overrides", "train_file", "validation_file", "dataset_name", "dataset_config", "tokenizer",
    "vocab_size", "max_seq_length", "seed", "per_device_batch_size", "gradient_accumulation_steps",
)


@dataclass
class PretrainArguments:
    """Every option of ``hf-lineage pretrain``. ``None`` means "the family's default" (from its paper)."""

    family: str
    output_dir: str
    config: str = "tiny"
    overrides: dict = field(default_factory=dict)
    train_file: list[str] | None = None
    validation_file: list[str] | None = None
    dataset_name: str | None = None
    dataset_config: str | None = None
    text_column: str = "text"
    streaming: bool = False
    stream_buffer_documents: int = 1000
    tokenizer: str | None = None
    vocab_size: int | None = None
    max_seq_length: int | None = None
    seed: int = 42
    max_steps: int | None = None
    num_epochs: float = 1.0
    max_train_seconds: float | None = None
    per_device_batch_size: int | None = None
    per_device_eval_batch_size: int | None = None
    gradient_accumulation_steps: int = 1
    learning_rate: float | None = None
    weight_decay: float | None = None
    adam_beta1: float | None = None
    adam_beta2: float | None = None
    adam_epsilon: float | None = None
    lr_scheduler: str | None = None
    warmup_ratio: float | None = None
    warmup_steps: int | None = None
    max_grad_norm: float | None = None
    mixed_precision: str = "no"
    checkpoint_every: int | None = None
    keep_checkpoints: int = 3
    resume_from: str | None = None
    eval_every: int | None = None
    max_eval_batches: int | None = None
    log_every: int = 10
    report_to: str = "tensorboard"
    preprocessing_num_workers: int | None = None
    overwrite_output_dir: bool = False
    backend: str = "auto"


class PretrainError(ValueError):
    """Bad input detected before training starts; the message names the problem."""


# --------------------------------------------------------------------------- checks before any work


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


def _check_files(paths, flag):
    for path in paths or []:
        if not os.path.isfile(path):
            raise PretrainError(f"{flag} {path}: no such file")
        if os.path.getsize(path) == 0 or not Path(path).read_text(encoding="utf-8", errors="replace").strip():
            raise PretrainError(f"{flag} {path} is empty")


def check_overrides(config_class, overrides: dict, extra=()) -> None:
    """``--set`` names must be fields of the family's config (or transformers' own keys) or one of the objective's
    ``extra`` options, checked before any data is read; whole numbers given to float fields
    (``--set initializer_range=1``) become floats. The values themselves are checked when the config is built."""
    from .models.configuration_lineage_utils import check_known_kwargs

    try:
        check_known_kwargs(config_class, {k: v for k, v in overrides.items() if k not in extra})
    except ValueError as error:
        also = f"; besides these, --set takes {', '.join(extra)}" if extra else ""
        raise PretrainError(f"--set: {error}{also}") from None
    float_fields = {f.name for f in fields(config_class) if f.type is float}
    for name, value in overrides.items():
        if name in float_fields and isinstance(value, int) and not isinstance(value, bool):
            overrides[name] = float(value)


def _identity(args) -> dict:
    return {k: getattr(args, k) for k in IDENTITY_FIELDS}


def check_arguments(args: PretrainArguments, objective) -> None:
    """Everything that can be checked without reading the data, before anything is written."""
    from .registry import family_classes

    config_class, _ = family_classes(args.family)
    if args.config not in config_class.named_sizes:
        raise PretrainError(
            f"Unknown {args.family} config {args.config!r}; choose one of {', '.join(config_class.named_sizes)}"
        )
    check_overrides(config_class, args.overrides, objective.set_options)
    if bool(args.train_file) == bool(args.dataset_name):
        raise PretrainError("Give exactly one of --train-file or --dataset-name")
    _check_files(args.train_file, "--train-file")
    _check_files(args.validation_file, "--validation-file")
    if args.streaming and args.max_steps is None:
        raise PretrainError("--streaming needs --max-steps (a stream has no known length to count epochs in)")
    if args.max_steps is None and args.num_epochs <= 0:
        raise PretrainError("--num-epochs must be positive (or give --max-steps)")
    if args.max_train_seconds is not None and args.max_train_seconds <= 0:
        raise PretrainError("--max-train-seconds must be positive")
    for name in ("per_device_batch_size", "gradient_accumulation_steps", "max_seq_length"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise PretrainError(f"--{name.replace('_', '-')} must be at least 1")
    out = Path(args.output_dir)
    if args.resume_from:
        if not (out / RUN_FILE).is_file():
            raise PretrainError(f"--resume-from given but {out} holds no run to resume ({RUN_FILE} missing)")
        previous = json.loads((out / RUN_FILE).read_text())
        different = {k: (previous.get(k), v) for k, v in _identity(args).items() if previous.get(k) != v}
        if different:
            raise PretrainError(f"{out} holds a different run; differing arguments (was, now): {different}")
        if args.resume_from != "latest" and not Path(args.resume_from).is_dir():
            raise PretrainError(f"--resume-from {args.resume_from}: no such checkpoint directory")
    elif out.exists() and any(out.iterdir()) and not args.overwrite_output_dir:
        raise PretrainError(
            f"{out} is not empty (it holds another run or other files). Use a new --output-dir, "
            "--resume-from latest to continue the run it holds, or --overwrite-output-dir."
        )


BACKENDS = ("auto", "engine", "cpu")


def given_options(args: PretrainArguments) -> set[str]:
    """The options set to something other than their default: what was asked for (before the family's defaults
    fill the rest in)."""
    given = set()
    for f in fields(PretrainArguments):
        default = f.default_factory() if f.default_factory is not MISSING else f.default
        if default is not MISSING and getattr(args, f.name) != default:
            given.add(f.name)
    return given


def _flags(names) -> str:
    return ", ".join("--" + name.replace("_", "-") for name in sorted(names))


def use_cpu_backend(args: PretrainArguments, objective, given=frozenset()) -> bool:
    """Whether ``--backend`` picks the family's own CPU trainer (word2vec's numba Hogwild SGD) over the engine:
    ``cpu`` asks for it, ``auto`` takes it when the family has one, no GPU is visible, one process runs, the corpus
    is local files and no option in ``given`` is one the CPU trainer would ignore (``--max-steps``, ...)."""
    if args.backend not in BACKENDS:
        raise PretrainError(f"--backend must be one of {', '.join(BACKENDS)}, got {args.backend!r}")
    if args.backend == "engine":
        return False
    one_process = int(os.environ.get("WORLD_SIZE", "1")) == 1
    ignored = set(given) & set(objective.cpu_backend_ignores)
    if args.backend == "cpu":
        if not objective.has_cpu_backend:
            raise PretrainError(f"{args.family} has no CPU backend; use --backend engine")
        if not args.train_file or args.streaming or not one_process:
            raise PretrainError("--backend cpu trains one process on --train-file (no --dataset-name, --streaming "
                                "or multi-process launch); use --backend engine for those")
        if ignored:
            raise PretrainError(f"--backend cpu ({args.family}'s own trainer) does not use {_flags(ignored)}; drop "
                                "them or use --backend engine (or auto), which honours them")
        return True
    return (objective.has_cpu_backend and one_process and bool(args.train_file) and not args.streaming
            and not args.resume_from and not ignored and not torch.cuda.is_available())


def resolve_defaults(args: PretrainArguments, objective) -> PretrainArguments:
    """Fill every option left at None with the family's default: its paper's, made small for ``--config tiny``."""
    defaults = {**objective.defaults, **(objective.tiny_defaults if args.config == "tiny" else {})}
    for name, value in defaults.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    if args.per_device_eval_batch_size is None:
        args.per_device_eval_batch_size = args.per_device_batch_size
    return args


# --------------------------------------------------------------------------- data


def load_text(args, split_files, split, streaming=False):
    """A ``datasets`` dataset with one ``text`` column, from local files or the Hub (an ``IterableDataset`` when
    ``streaming``: read lazily, never held in memory or cached)."""
    import datasets

    if args.dataset_name:
        try:
            dataset = datasets.load_dataset(args.dataset_name, args.dataset_config, split=split, streaming=streaming)
        except ValueError:
            return None  # the Hub dataset has no such split
        if args.text_column != "text":
            dataset = dataset.rename_column(args.text_column, "text")
        return dataset.select_columns(["text"])
    if not split_files:
        return None
    return datasets.load_dataset("text", data_files={split: split_files}, split=split, streaming=streaming)


def mask_seed(seed: int, epoch: int, index: int) -> int:
    """The seed an example's masking is drawn from: a function of (seed, epoch, index) only, so an example is
    masked the same way whichever process, batch or resumed run draws it, and differently in each epoch."""
    return ((seed * 1_000_003 + epoch) * 1_000_000_007 + index) % (2**63 - 1)


class SeededExamples(torch.utils.data.Dataset):
    """A prepared dataset whose examples carry their ``mask_seed``."""

    def __init__(self, examples, seed: int):
        self.examples, self.seed, self.epoch = examples, seed, 0

    def __len__(self):
        return len(self.examples)

    def __getitem__(self, index):
        return {**self.examples[index], "mask_seed": mask_seed(self.seed, self.epoch, index)}


class StreamedExamples(torch.utils.data.IterableDataset):
    """The streaming counterpart: ``make_examples(epoch)`` yields examples; each gets the ``mask_seed`` of its
    position in the stream."""

    def __init__(self, make_examples, seed: int):
        self.make_examples, self.seed, self.epoch = make_examples, seed, 0

    def __iter__(self):
        for index, example in enumerate(self.make_examples(self.epoch)):
            yield {**example, "mask_seed": mask_seed(self.seed, self.epoch, index)}


class EpochPermutationSampler(torch.utils.data.Sampler):
    """Shuffles with a permutation drawn from ``seed + epoch``: the order is known in advance, equal on every
    process and after a resume, and consumes no global RNG."""

    def __init__(self, length: int, seed: int):
        self.length, self.seed, self.epoch = length, seed, 0

    def __len__(self):
        return self.length

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        return iter(torch.randperm(self.length, generator=generator).tolist())


# --------------------------------------------------------------------------- checkpoints and saving


def _checkpoints(output_dir: Path) -> list[Path]:
    root = output_dir / "checkpoints"
    done = [p for p in root.glob("step_*") if (p / STATE_FILE).is_file()] if root.is_dir() else []
    return sorted(done, key=lambda p: int(p.name.split("_")[1]))


def save_checkpoint(accelerator, output_dir: Path, state: dict, keep: int) -> None:
    """``save_state`` into a temporary folder, renamed when complete: a killed save leaves no checkpoint that
    looks usable. Keeps the last ``keep``."""
    final = output_dir / "checkpoints" / f"step_{state['step']:08d}"
    partial = final.with_name(final.name + ".partial")
    if accelerator.is_main_process and partial.exists():
        shutil.rmtree(partial)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(partial))
    if accelerator.is_main_process:
        (partial / STATE_FILE).write_text(json.dumps(state))
        os.replace(partial, final)
        for old in _checkpoints(output_dir)[:-keep]:
            shutil.rmtree(old)
    accelerator.wait_for_everyone()


def save_final(model, tokenizer, output_dir: Path, card_extra: str) -> None:
    """Model, tokenizer and model card via ``save_pretrained``, atomically: everything is written to a temporary
    folder and moved in, ``config.json`` last — a folder without it is not a loadable model."""
    from transformers.tokenization_utils_base import VERY_LARGE_INTEGER

    from .objectives import CAUSAL_LM_FAMILIES, generation_config_for

    staging = output_dir / ".final.partial"
    if staging.exists():
        shutil.rmtree(staging)
    # The tokenizer's limit is what the model accepts (its positions; none for the recurrent and n-gram families),
    # not the pre-training block size: pipelines and the recipes truncate to it.
    tokenizer.model_max_length = getattr(model.config, "max_position_embeddings", None) or VERY_LARGE_INTEGER
    if hasattr(model, "set_vocabulary_characters"):
        # ELMo reads words through their characters: with its vocabulary's characters stored, the saved LM takes
        # word ids alone, which is all generate() and the text-generation pipeline give it.
        model.set_vocabulary_characters(tokenizer)
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    if model.config.model_type.removeprefix("lineage-") in CAUSAL_LM_FAMILIES:
        # The folder loads as AutoModelForCausalLM whatever class was pre-trained (word2vec's and ELMo's cannot
        # generate themselves): it ships the generation defaults, which replace those derived from the config.
        generation_config_for(tokenizer).save_pretrained(staging)
    card = staging / "README.md"
    card.write_text(card.read_text() + card_extra)
    names = sorted(os.listdir(staging), key=lambda n: n == "config.json")
    for name in names:
        os.replace(staging / name, output_dir / name)
    staging.rmdir()


# --------------------------------------------------------------------------- the loop


def rng_states() -> dict:
    import random

    import numpy as np

    states = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_rng_states(states: dict) -> None:
    import random

    import numpy as np

    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    if "cuda" in states:
        torch.cuda.set_rng_state_all(states["cuda"])


def build_optimizer(model, args):
    """AdamW without weight decay on biases and LayerNorm weights (as BERT and GPT did)."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (no_decay if param.ndim < 2 or "LayerNorm" in name or "layer_norm" in name else decay).append(param)
    groups = [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=args.learning_rate, betas=(args.adam_beta1, args.adam_beta2),
                             eps=args.adam_epsilon)


# The positions a clock-driven learning-rate schedule is laid out over (--max-train-seconds): fine enough that the
# learning rate moves smoothly, whatever the number of steps the budget turns out to hold.
CLOCK_POSITIONS = 10_000


def set_schedule_position(scheduler, position: int) -> None:
    """Put a ``LambdaLR`` schedule at ``position`` (instead of stepping it once) and apply its learning rates."""
    scheduler.last_epoch = position
    rates = [base * schedule(position) for base, schedule in zip(scheduler.base_lrs, scheduler.lr_lambdas)]
    for group, lr in zip(scheduler.optimizer.param_groups, rates):
        group["lr"] = lr
    scheduler._last_lr = rates


def evaluate(model, dataloader, objective, accelerator, max_batches=None) -> dict[str, float]:
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


def pretrain(args: PretrainArguments) -> str:
    """Pre-train ``args.family``; returns the output directory, which then holds a ``save_pretrained`` model."""
    from accelerate import Accelerator
    from accelerate.utils import ProjectConfiguration, set_seed
    from tqdm.auto import tqdm
    from transformers import AutoTokenizer, get_scheduler

    from .objectives import get_objective
    from .registry import family_classes

    objective = get_objective(args.family, args)
    given = given_options(args)
    if set(given) & set(objective.unused_options):
        raise PretrainError(f"{args.family} pre-training does not use "
                            f"{_flags(set(given) & set(objective.unused_options))}; drop them")
    cpu_backend = use_cpu_backend(args, objective, given)
    resolve_defaults(args, objective)
    check_arguments(args, objective)
    if cpu_backend:
        if "mixed_precision" in given:
            print(f"note: --mixed-precision {args.mixed_precision} does not apply to {args.family}'s CPU trainer "
                  "(float32); --backend engine uses it", file=sys.stderr)
        return objective.train_cpu(args)
    output_dir = Path(args.output_dir)

    log_with = None if args.report_to in ("none", "", None) else args.report_to
    accelerator = Accelerator(
        mixed_precision=args.mixed_precision, log_with=log_with,
        project_config=ProjectConfiguration(project_dir=str(output_dir), logging_dir=str(output_dir / "logs")),
    )
    check_not_silently_replicated(accelerator)
    set_seed(args.seed)

    # Tokenizer and examples: the main process goes first (it trains the tokenizer and fills the datasets cache);
    # nothing is written to the output directory until the data has been checked.
    with accelerator.main_process_first():
        raw_train = load_text(args, args.train_file, "train", streaming=args.streaming)
        raw_eval = load_text(args, args.validation_file, "validation")
        if args.tokenizer:
            tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
        elif args.resume_from or not accelerator.is_main_process:
            tokenizer = AutoTokenizer.from_pretrained(str(output_dir))
        else:
            texts = None if args.train_file else (row["text"] for row in islice(raw_train, 1_000_000))
            tokenizer = objective.train_tokenizer(args.train_file, texts)
        config = objective.build_config(args.config, tokenizer, args.overrides)
        prepare = objective.prepare_stream if args.streaming else objective.prepare
        train_examples = prepare(raw_train, tokenizer, "train")
        eval_examples = objective.prepare(raw_eval, tokenizer, "validation") if raw_eval is not None else None
        global_batch = args.per_device_batch_size * accelerator.num_processes
        if not args.streaming and len(train_examples) < global_batch * args.gradient_accumulation_steps:
            raise PretrainError(
                f"{len(train_examples)} training examples are fewer than one optimisation step needs "
                f"({global_batch} × {args.gradient_accumulation_steps}); lower --per-device-batch-size"
            )
        if accelerator.is_main_process and not args.resume_from:
            if args.overwrite_output_dir and output_dir.exists():
                shutil.rmtree(output_dir)
            output_dir.mkdir(parents=True, exist_ok=True)
            (output_dir / RUN_FILE).write_text(json.dumps(_identity(args), indent=2))
            tokenizer.save_pretrained(output_dir)

    _, modeling = family_classes(args.family)
    model = getattr(modeling, objective.model_class_name)(config)
    objective.init_model(model)

    collate = objective.collator(tokenizer)
    if args.streaming:
        sampler, train_data = None, StreamedExamples(train_examples, args.seed)
    else:
        train_data = SeededExamples(train_examples, args.seed)
        sampler = EpochPermutationSampler(len(train_data), args.seed)
    train_loader = torch.utils.data.DataLoader(
        train_data, batch_size=args.per_device_batch_size, sampler=sampler, collate_fn=collate, drop_last=True,
    )
    eval_loader = None
    if eval_examples is not None:
        eval_data = SeededExamples(eval_examples, args.seed)  # epoch stays 0: the same masks at every evaluation
        eval_loader = torch.utils.data.DataLoader(eval_data, batch_size=args.per_device_eval_batch_size,
                                                  collate_fn=collate)

    steps_per_epoch = (None if args.streaming
                       else len(train_loader) // accelerator.num_processes // args.gradient_accumulation_steps)
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
    optimizer = objective.build_optimizer(model, args)
    # The scheduler is stepped by hand once per optimiser step: Accelerate's wrapper would step it once per process.
    scheduler = get_scheduler(args.lr_scheduler, optimizer, num_warmup_steps=warmup,
                              num_training_steps=schedule_length)
    model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)
    if eval_loader is not None:
        eval_loader = accelerator.prepare(eval_loader)
    accelerator.register_for_checkpointing(scheduler)

    state = {"step": 0, "epoch": 0, "batches_in_epoch": 0, "examples_seen": 0, "tokens_seen": 0,
             "train_seconds": 0.0, "log_history": []}
    resumed_rng = None
    if args.resume_from:
        checkpoint = _checkpoints(output_dir)[-1] if args.resume_from == "latest" else Path(args.resume_from)
        state = json.loads((checkpoint / STATE_FILE).read_text())
        accelerator.load_state(str(checkpoint))
        resumed_rng = rng_states()
        accelerator.print(f"Resumed from {checkpoint} at step {state['step']}")

    if log_with:
        accelerator.init_trackers("pretrain", config={k: v for k, v in asdict(args).items()
                                                      if isinstance(v, (int, float, str, bool))})
    accum, world = args.gradient_accumulation_steps, accelerator.num_processes
    progress = tqdm(total=None if time_budget else max_steps, initial=state["step"],
                    disable=not accelerator.is_local_main_process, desc=f"pretrain {args.family}")
    model.train()
    running_loss, running_steps, started = torch.zeros((), device=accelerator.device), 0, time.time()
    results, evaluated_at = {}, None
    # Non-padding tokens trained on by this process since the last log, and seconds spent in the loop; the clock
    # continues from the checkpoint's when resuming.
    tokens, loop_started = torch.zeros((), dtype=torch.long, device=accelerator.device), time.time()
    clock_start, tokens_before = loop_started - state["train_seconds"], state["tokens_seen"]
    out_of_time = False
    while state["step"] < max_steps:
        train_data.epoch = state["epoch"]
        if sampler is not None:
            sampler.epoch = state["epoch"]
        loader = train_loader
        if state["batches_in_epoch"]:
            loader = accelerator.skip_first_batches(train_loader, state["batches_in_epoch"])
        batches = iter(loader)
        step_at_epoch_start = state["step"]
        while state["step"] < max_steps:
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
                running_loss += loss.detach()
                tokens += batch["attention_mask"].sum() if "attention_mask" in batch else batch["input_ids"].numel()
            if args.max_grad_norm:
                accelerator.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            if time_budget:
                # Every process must agree on the clock (their learning rates and the stop must be identical):
                # the slowest process's elapsed time decides.
                elapsed = accelerator.reduce(torch.tensor(time.time() - clock_start, device=accelerator.device),
                                             "max").item()
                set_schedule_position(scheduler, min(schedule_length, round(schedule_length * elapsed / time_budget)))
                out_of_time = elapsed >= time_budget
            else:
                scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            state["step"] += 1
            state["batches_in_epoch"] += accum
            state["examples_seen"] += global_batch * accum
            running_steps += 1
            progress.update(1)

            if state["step"] % args.log_every == 0 or state["step"] == max_steps or out_of_time:
                train_loss = accelerator.reduce(running_loss, "sum").item() / running_steps
                state["tokens_seen"] += accelerator.reduce(tokens, "sum").item()
                tokens.zero_()
                state["train_seconds"] = time.time() - clock_start
                state["log_history"].append({
                    "step": state["step"], "examples_seen": state["examples_seen"], "tokens_seen": state["tokens_seen"],
                    "seconds": round(state["train_seconds"], 3), "train_loss": train_loss,
                    "learning_rate": scheduler.get_last_lr()[0]})
                logs = {"train/loss": train_loss, "train/learning_rate": scheduler.get_last_lr()[0],
                        "train/examples_per_second": running_steps * global_batch * accum / (time.time() - started)}
                progress.set_postfix(loss=f"{train_loss:.4f}")
                accelerator.log(logs, step=state["step"])
                running_loss.zero_()
                running_steps, started = 0, time.time()
            if eval_loader is not None and args.eval_every and state["step"] % args.eval_every == 0:
                results = evaluate(model, eval_loader, objective, accelerator, args.max_eval_batches)
                evaluated_at = state["step"]
                state["log_history"].append({"step": state["step"], "examples_seen": state["examples_seen"],
                                             "tokens_seen": state["tokens_seen"], **{f"eval_{k}": v for k, v in results.items()}})
                accelerator.log({f"eval/{k}": v for k, v in results.items()}, step=state["step"])
                accelerator.print(f"step {state['step']}: " + ", ".join(f"{k}={v:.4f}" for k, v in results.items()))
            if args.checkpoint_every and state["step"] % args.checkpoint_every == 0:
                save_checkpoint(accelerator, output_dir, state, args.keep_checkpoints)
            if out_of_time:
                break
        else:
            break  # max_steps reached inside the epoch
        if out_of_time:
            break
        state["epoch"] += 1
        state["batches_in_epoch"] = 0
    progress.close()
    train_runtime = time.time() - loop_started
    state["tokens_seen"] += accelerator.reduce(tokens, "sum").item()  # steps after the last log
    tokens = state["tokens_seen"]

    if eval_loader is not None and evaluated_at != state["step"]:
        results = evaluate(model, eval_loader, objective, accelerator, args.max_eval_batches)
        state["log_history"].append({"step": state["step"], "examples_seen": state["examples_seen"],
                                     "tokens_seen": state["tokens_seen"], **{f"eval_{k}": v for k, v in results.items()}})
        accelerator.log({f"eval/{k}": v for k, v in results.items()}, step=state["step"])
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        data = ", ".join(args.train_file) if args.train_file else f"{args.dataset_name} ({args.dataset_config})"
        summary = "\n".join(f"| {k} | {v:.4f} |" for k, v in results.items())
        card_extra = (
            f"\n## Pre-training\n\n`hf-lineage pretrain {args.family} --config {args.config}` on {data}: "
            f"{state['step']} steps of {global_batch * accum} sequences (seed {args.seed}).\n"
            + (f"\n| validation | value |\n|---|---|\n{summary}\n" if results else "")
        )
        save_final(accelerator.unwrap_model(model), tokenizer, output_dir, card_extra)
        (output_dir / "train_results.json").write_text(json.dumps(
            {"step": state["step"], "epoch": state["epoch"], "steps_per_epoch": steps_per_epoch,
             "examples_seen": state["examples_seen"], "tokens_seen": tokens, "train_runtime": train_runtime,
             "train_tokens_per_second": (tokens - tokens_before) / train_runtime, "stopped_by_clock": out_of_time, "eval": results,
             "log_history": state["log_history"]}, indent=2))
    # Trackers end here; the process group stays up (not accelerator.end_training()), so a caller that goes on
    # (hf-lineage lineage: more stages) can still synchronise. The command line tears it down on exit.
    for tracker in accelerator.trackers:
        tracker.finish()
    return str(output_dir)


# --------------------------------------------------------------------------- command line


def parse_set(pairs: list[str]) -> dict:
    """``--set name=value``: JSON where the value parses (numbers, true/false, lists), a string otherwise."""
    overrides = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise PretrainError(f"--set expects name=value, got {pair!r}")
        name, value = pair.split("=", 1)
        try:
            overrides[name] = json.loads(value)
        except json.JSONDecodeError:
            overrides[name] = value
    return overrides


FLAG_HELP = {
    "config": "named size of the family's config (e.g. tiny, base); tiny also makes the batch, sequence length and "
    "vocabulary small (8 x 64, 8000 words; word2vec's are small already) unless given",
    "train_file": "text file(s): one sentence or paragraph per line, blank lines between documents",
    "validation_file": "held-out text for periodic evaluation",
    "dataset_name": "a datasets Hub name instead of --train-file (online)",
    "streaming": "read the corpus lazily (needs --max-steps)",
    "stream_buffer_documents": "documents per buffer when streaming (BERT draws random NSP segments in it)",
    "tokenizer": "an existing tokenizer folder; default: train the family's tokenizer on the training text",
    "vocab_size": "vocabulary size of the tokenizer trained here",
    "max_steps": "optimiser steps (overrides --num-epochs)",
    "max_train_seconds": "a wall-clock budget: train until it runs out (epochs ignored; --max-steps still caps), the "
    "learning-rate schedule running on the clock (its warmup is --warmup-ratio of the budget)",
    "mixed_precision": "no, bf16 or fp16",
    "checkpoint_every": "save a resumable checkpoint every N steps",
    "keep_checkpoints": "how many recent checkpoints to keep",
    "resume_from": "'latest' or a checkpoint folder of this output dir",
    "eval_every": "evaluate on --validation-file every N steps (and always at the end)",
    "report_to": "Accelerate tracker: tensorboard, wandb, ... or none",
    "overwrite_output_dir": "delete what the output dir holds first",
    "backend": "auto, engine or cpu: cpu runs the family's own CPU trainer (word2vec: whole passes over local files, "
    "no checkpoints); auto picks it when the family has one, no GPU is visible, one process runs and no option only "
    "the engine honours (--max-steps, --checkpoint-every, --learning-rate, ...) is given",
}


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    from .objectives import OBJECTIVES

    parser = parser or argparse.ArgumentParser(prog="hf-lineage pretrain", description=__doc__.split("\n")[0])
    parser.add_argument("family", help=f"model family: {', '.join(OBJECTIVES)}")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                        help="override a field of the family's config (repeatable)")
    skip = {"family", "output_dir", "overrides"}
    for f in fields(PretrainArguments):
        if f.name in skip:
            continue
        flag = "--" + f.name.replace("_", "-")
        help_text = FLAG_HELP.get(f.name, "default: the family's (from its paper)" if f.default is None else None)
        if f.type == "bool":
            parser.add_argument(flag, action="store_true", help=help_text)
        elif f.name in ("train_file", "validation_file"):
            parser.add_argument(flag, nargs="+", help=help_text)
        else:
            kind = {"int | None": int, "float | None": float, "int": int, "float": float}.get(f.type, str)
            parser.add_argument(flag, type=kind, default=f.default, help=help_text)
    return parser


def main(argv=None) -> int:
    return run_namespace(vars(build_parser().parse_args(argv)))


def run_namespace(namespace: dict) -> int:
    from huggingface_hub.errors import StrictDataclassError

    namespace = {k: v for k, v in namespace.items() if k not in ("command", "func")}
    try:
        namespace["overrides"] = parse_set(namespace["overrides"])
        pretrain(PretrainArguments(**namespace))
    except (PretrainError, ValueError, FileNotFoundError, StrictDataclassError) as error:
        # One line, also for huggingface_hub's multi-line type errors ("Field 'x' expected int, got str").
        print(f"hf-lineage pretrain: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    finally:
        end_processes()
    return 0


def end_processes() -> None:
    """Tear down the process group a multi-process run set up (what ``accelerator.end_training()`` would do)."""
    from accelerate import PartialState

    if PartialState._shared_state:
        PartialState().destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
