"""``PretrainArguments``, every option of ``hf-lineage pretrain``, and the checks run on them before any work: what
can be refused without reading the data is refused before anything is written. ``settle_arguments`` is the one place
they are settled (the family's defaults filled in, then checked); the engine and the CPU trainers below receive them
settled. The choice of backend, which reads them first, is ``hf_lineage.pretraining.dispatch``'s."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path

from ..engine import hub_model_id
from ..engine.errors import PretrainError
from ..folders.pretrained import check_push
from ..registry import FAMILIES

# BERT's pre-training objective, switchable for its ablations (Devlin et al. 2018, section 5.1 and appendix C.2):
# next-sentence prediction on or off, the share of tokens masked, and what becomes of them. Refused for a family whose
# objective does not take them (``PretrainingObjective.objective_options``).
OBJECTIVE_OPTIONS = ("next_sentence_prediction", "mlm_probability", "mask_split")


@dataclass
class PretrainArguments:
    """Every option of ``hf-lineage pretrain``. ``None`` means "the family's default" (from its paper)."""

    family: str
    output_dir: str
    init_from: str | None = None  # continue a saved model (a folder or a Hub id) instead of starting from scratch
    config: str | None = None  # a named size of the family's config; None: its paper's (``Family.paper_size``)
    overrides: dict = field(default_factory=dict)
    train_file: list[str] | None = None  # paths, or LANG=PATH for a multilingual corpus (hf_lineage.data.languages)
    language_alpha: float = 0.7  # p_i ∝ q_i^α over the languages of a multilingual corpus (mBERT's 0.7)
    validation_file: list[str] | None = None
    dataset_name: str | None = None
    dataset_config: str | None = None
    text_column: str = "text"
    streaming: bool = False
    stream_buffer_documents: int = 1000
    tokenizer: str | None = None
    vocab_size: int | None = None
    max_seq_length: int | None = None
    # BERT's objective (``OBJECTIVE_OPTIONS``; None: its paper's). Without next-sentence prediction the examples are
    # the same [CLS] A [SEP] B [SEP] pairs (B random half the time) and only the NSP loss is dropped: Devlin et al.'s
    # "No NSP" row. mlm_probability: the share of each sequence's tokens predicted (run_mlm.py's name); mask_split:
    # of those, the shares replaced by [MASK], by a random token and left unchanged (transformers'
    # mask_replace_prob, random_replace_prob and the rest).
    next_sentence_prediction: bool | None = None
    mlm_probability: float | None = None
    mask_split: tuple[float, float, float] | None = None
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
    dataloader_num_workers: int | None = None  # None: DATALOADER_WORKERS_ON_GPU on a GPU, 0 on a CPU
    torch_compile: bool = False
    overwrite_output_dir: bool = False
    backend: str = "auto"
    push_to_hub: bool = False
    hub_model_id: str | None = None  # None: the output folder's name, in the token's own namespace (as Trainer)


def settle_arguments(args: PretrainArguments, objective, cpu_backend: bool) -> None:
    """Refuse what the family does not use, fill in its defaults and check the rest, for the backend chosen
    (``dispatch.use_cpu_backend``): the family's own CPU trainer (``cpu_backend``) or the engine."""
    given = given_options(args)
    foreign = set(given) & set(OBJECTIVE_OPTIONS) - set(objective.objective_options)
    if foreign:
        raise PretrainError(f"{objective_flags(args, foreign)}: BERT's pre-training objective (masked LM and "
                            f"next-sentence prediction); {args.family} pre-training does not take them")
    if set(given) & set(objective.unused_options):
        raise PretrainError(f"{args.family} pre-training does not use "
                            f"{option_flags(set(given) & set(objective.unused_options))}; drop them")
    resolve_defaults(args, objective)
    check_arguments(args, objective)
    if cpu_backend and "mixed_precision" in given:
        print(f"note: --mixed-precision {args.mixed_precision} does not apply to {args.family}'s CPU trainer "
              "(float32); --backend engine uses it", file=sys.stderr)
    if not cpu_backend:
        check_precision(args)


# Options that choose the tokenizer or the size, which a continued run (``--init-from``) takes from its base.
SET_BY_THE_BASE = ("tokenizer", "vocab_size", "config")


def check_continuable(args, given) -> None:
    """Refuse, before anything is read, what a continued run cannot do: a family only its CPU trainer makes, and
    options that choose the tokenizer or the size, which come from the base."""
    if not args.init_from:
        return
    if FAMILIES[args.family].not_continuable:
        raise PretrainError(f"--init-from: {FAMILIES[args.family].not_continuable}")
    from ..objectives import objective_class

    if not objective_class(args.family).engine_trains:  # a family only its own trainer makes, from nothing (glove)
        raise PretrainError(f"--init-from: {args.family} is made by its own CPU trainer alone, which starts from "
                            "nothing; train it on the combined corpus instead")
    if args.backend == "cpu":
        raise PretrainError("--init-from continues on the engine; drop --backend cpu")
    contradicting = [name for name in SET_BY_THE_BASE if name in given]
    if contradicting:
        flags = ", ".join("--" + name.replace("_", "-") for name in contradicting)
        raise PretrainError(f"--init-from {args.init_from} keeps that model's tokenizer and config: drop {flags}")


def check_precision(args: PretrainArguments) -> None:
    """--mixed-precision the engine's device computes natively (``hf_lineage.machine.precision``), or one line before
    anything is built: bf16 on a CPU without it would run slower than float32 and fail in ELMo's LSTMs."""
    from ..machine.precision import PrecisionError, choose_precision, device_kind

    # Accelerate trains on the CPU when told so (accelerate launch --cpu, ACCELERATE_USE_CPU) even beside a GPU.
    use_cpu = os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true", "yes")
    try:
        choose_precision(args.mixed_precision, named=True, device=device_kind(use_cpu))
    except PrecisionError as error:
        raise PretrainError(str(error)) from None


def objective_flags(args: PretrainArguments, names) -> str:
    """The objective options as given on the command line (``--no-next-sentence-prediction``, not its field)."""
    flags = option_flags(set(names) - {"next_sentence_prediction"})
    if "next_sentence_prediction" in names:
        no = "" if args.next_sentence_prediction else "no-"
        flags = ", ".join(filter(None, [f"--{no}next-sentence-prediction", flags]))
    return flags


def check_objective(args: PretrainArguments, objective) -> None:
    """BERT's objective options (after the family's defaults): a rate in (0, 1), a split of three shares that sum to
    1, and for BERT's architecture trained left to right (``--set is_decoder=true``, Devlin et al.'s "LTR & No
    NSP") no NSP and no masking: its [CLS] sees only itself, and it predicts every next token, none masked."""
    if "next_sentence_prediction" in args.overrides:
        raise PretrainError("--set next_sentence_prediction: use --no-next-sentence-prediction (the data and the "
                            "loss follow it, not only the config)")
    if "mlm_probability" not in objective.objective_options:
        return
    if not 0 < args.mlm_probability < 1:
        raise PretrainError(f"--mlm-probability must be in (0, 1) (BERT: 0.15), got {args.mlm_probability}")
    split = args.mask_split
    if len(split) != 3 or min(split) < 0 or abs(sum(split) - 1) > 1e-6:
        raise PretrainError(f"--mask-split takes three shares >= 0 that sum to 1 ([MASK], a random token, unchanged; "
                            f"BERT: 0.8,0.1,0.1), got {','.join(f'{x:g}' for x in split)}")
    if args.overrides.get("is_decoder"):
        # Either one other than the paper's (its defaults fill them in before these checks)
        masking = [name for name in ("mlm_probability", "mask_split")
                   if json.dumps(getattr(args, name)) != json.dumps(objective.defaults[name])]
        if masking:
            raise PretrainError(f"--set is_decoder=true trains BERT left to right on every next token: nothing is "
                                f"masked, drop {option_flags(masking)}")
        if args.next_sentence_prediction:
            raise PretrainError("--set is_decoder=true trains BERT left to right, where [CLS] sees only itself: add "
                                "--no-next-sentence-prediction (Devlin et al.'s \"LTR & No NSP\")")


def _check_files(paths, flag):
    for path in paths or []:
        if not os.path.isfile(path):
            raise PretrainError(f"{flag} {path}: no such file")
        if not _has_text(path):
            raise PretrainError(f"{flag} {path} is empty")
        problem = _not_text(path)
        if problem:
            raise PretrainError(f"{flag} {path}: not a UTF-8 text file ({problem}); give plain text, one document "
                                "or sentence per line")


def _has_text(path) -> bool:
    """Whether the file holds anything but whitespace, read until the first word: a corpus is not loaded whole
    just to check it (the check held a 20 M-word file in memory, the largest allocation of a --streaming run)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        while chunk := f.read(1 << 16):
            if chunk.strip():
                return True
    return False


# The bytes of a corpus file read to tell text from a binary file (a model, an archive) before anything runs; the
# rest is decoded as the corpus is read.
TEXT_CHECK_BYTES = 1 << 20


def _not_text(path) -> str | None:
    """Why the start of ``path`` is not UTF-8 text (NUL bytes, invalid UTF-8, with the byte offset), or None."""
    with open(path, "rb") as f:
        head = f.read(TEXT_CHECK_BYTES)
    nul = head.find(b"\0")
    if nul >= 0:
        return f"a NUL byte at byte {nul}"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(head) - 3:  # a character cut by the read's end is not an error
            return f"invalid UTF-8 at byte {error.start}"
    return None


def check_overrides(config_class, overrides: dict, extra=()) -> None:
    """``--set`` names must be fields of the family's config (or transformers' own keys) or one of the objective's
    ``extra`` options, checked before any data is read; whole numbers given to float fields
    (``--set initializer_range=1``) become floats. The values themselves are checked when the config is built."""
    from ..models.configuration_lineage_utils import check_known_kwargs

    try:
        check_known_kwargs(config_class, {k: v for k, v in overrides.items() if k not in extra})
    except ValueError as error:
        also = f"; besides these, --set takes {', '.join(extra)}" if extra else ""
        raise PretrainError(f"--set: {error}{also}") from None
    float_fields = {f.name for f in fields(config_class) if f.type is float}
    for name, value in overrides.items():
        if name in float_fields and isinstance(value, int) and not isinstance(value, bool):
            overrides[name] = float(value)


def check_arguments(args: PretrainArguments, objective) -> None:
    """Everything that can be checked without reading the data, before anything is written."""
    from ..data.examples import corpus_paths  # torch: imported here, not by `hf-lineage pretrain --help`
    from ..registry import family_classes

    config_class, _ = family_classes(args.family)
    if args.config not in config_class.named_sizes:
        raise PretrainError(
            f"Unknown {args.family} config {args.config!r}; choose one of {', '.join(config_class.named_sizes)}"
        )
    check_overrides(config_class, args.overrides, objective.set_options)
    check_objective(args, objective)
    if bool(args.train_file) == bool(args.dataset_name):
        raise PretrainError("Give exactly one of --train-file or --dataset-name")
    check_languages(args, objective)
    _check_files(corpus_paths(args.train_file), "--train-file")
    _check_files(corpus_paths(args.validation_file), "--validation-file")
    if args.streaming and args.max_steps is None:
        raise PretrainError("--streaming needs --max-steps (a stream has no known length to count epochs in)")
    if args.max_steps is None and args.num_epochs <= 0:
        raise PretrainError("--num-epochs must be positive (or give --max-steps)")
    if args.max_train_seconds is not None and args.max_train_seconds <= 0:
        raise PretrainError("--max-train-seconds must be positive")
    if args.dataloader_num_workers is not None and args.dataloader_num_workers < 0:
        raise PretrainError("--dataloader-num-workers must be 0 (the main process) or more")
    if args.streaming and args.dataloader_num_workers:
        raise PretrainError("--dataloader-num-workers with --streaming: every worker would read the whole stream; "
                            "drop one of them")
    for name in ("per_device_batch_size", "gradient_accumulation_steps", "max_seq_length"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise PretrainError(f"--{name.replace('_', '-')} must be at least 1")
    check_hub_arguments(args)
    check_output_dir(args, objective)


def check_output_dir(args: PretrainArguments, objective) -> None:
    """A new run's output folder is empty (or ``--overwrite-output-dir``); a resumed one holds the same run (its
    ``run_args.json``, which the engine wrote: ``engine.resume``)."""
    from ..engine.resume import IDENTITY_DEFAULTS, RUN_FILE, run_identity  # torch: not for --help

    out = Path(args.output_dir)
    if args.resume_from:
        if not (out / RUN_FILE).is_file():
            raise PretrainError(f"--resume-from given but {out} holds no run to resume ({RUN_FILE} missing)")
        previous = json.loads((out / RUN_FILE).read_text())
        previous = {**IDENTITY_DEFAULTS, **{k: objective.defaults.get(k) for k in OBJECTIVE_OPTIONS}, **previous}
        now = json.loads(json.dumps(run_identity(args)))  # as RUN_FILE holds it (a tuple is a list there)
        previous = json.loads(json.dumps(previous))
        different = {k: (previous.get(k), v) for k, v in now.items() if previous.get(k) != v}
        if different:
            raise PretrainError(f"{out} holds a different run; differing arguments (was, now): {different}")
        if args.resume_from != "latest" and not Path(args.resume_from).is_dir():
            raise PretrainError(f"--resume-from {args.resume_from}: no such checkpoint directory")
    elif out.exists() and any(out.iterdir()) and not args.overwrite_output_dir:
        raise PretrainError(
            f"{out} is not empty (it holds another run or other files). Use a new --output-dir, "
            "--resume-from latest to continue the run it holds, or --overwrite-output-dir."
        )


def check_hub_arguments(args: PretrainArguments) -> None:
    """``--push-to-hub`` is refused before training when it could not push at the end (no token, a malformed id)."""
    if args.hub_model_id and not args.push_to_hub:
        raise PretrainError("--hub-model-id names where --push-to-hub pushes; add --push-to-hub")
    if args.push_to_hub:
        try:
            check_push(hub_model_id(args))
        except ValueError as error:
            raise PretrainError(f"--push-to-hub: {error}") from None


def check_languages(args: PretrainArguments, objective) -> None:
    """A multilingual corpus (``--train-file LANG=PATH``, repeated): only for a family whose objective weights
    languages (``multilingual``: BERT), on local files read whole, with α in [0, 1]."""
    from ..data.examples import named_languages

    try:
        languages = named_languages(args.train_file)
        named_languages(args.validation_file)  # validation files may be tagged too; they are read as they are
    except ValueError as error:
        raise PretrainError(str(error)) from None
    if languages is None:
        if "language_alpha" in given_options(args):
            raise PretrainError("--language-alpha weights the languages of a multilingual corpus; give the training "
                                "files as --train-file LANG=PATH (e.g. --train-file en=en.txt --train-file de=de.txt)")
        return
    if not objective.multilingual:
        raise PretrainError(f"language-tagged --train-file (LANG=PATH) is multilingual BERT's pre-training; "
                            f"{args.family} takes plain files")
    if args.streaming:
        raise PretrainError("--streaming with language-tagged --train-file: each language's share is drawn from its "
                            "whole text, which a stream does not have; drop --streaming")
    if not 0 <= args.language_alpha <= 1:
        raise PretrainError(f"--language-alpha must be in [0, 1] (mBERT: 0.7), got {args.language_alpha}")


def given_options(args: PretrainArguments) -> set[str]:
    """The options set to something other than their default: what was asked for (before the family's defaults
    fill the rest in)."""
    given = set()
    for f in fields(PretrainArguments):
        default = f.default_factory() if f.default_factory is not MISSING else f.default
        if default is not MISSING and getattr(args, f.name) != default:
            given.add(f.name)
    return given


def option_flags(names) -> str:
    return ", ".join("--" + name.replace("_", "-") for name in sorted(names))


def resolve_defaults(args: PretrainArguments, objective) -> PretrainArguments:
    """Fill every option left at None with the family's default: its paper's, made small for ``--config tiny``."""
    if args.config is None:
        args.config = FAMILIES[args.family].paper_size
    defaults = {**objective.defaults, **(objective.tiny_defaults if args.config == "tiny" else {})}
    for name, value in defaults.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    if args.per_device_eval_batch_size is None:
        args.per_device_eval_batch_size = args.per_device_batch_size
    return args
