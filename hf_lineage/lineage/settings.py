"""What ``hf-lineage lineage`` runs: the families, the tasks, the scales and every option, checked before anything runs.

Nothing here trains or reads data; every other stage module imports these names.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import samples as _samples
from ..convert.sources import looks_like_model_id
from ..models.configuration_lineage_utils import PAIR_ENCODINGS
from ..registry.families import FAMILIES, LineageFamily

VARIANTS = ("frozen", "finetuned", "scratch")
# The frozen regime's head, the same for every family (issue 42): a learned scalar mix of its layers → BiLSTM →
# classifier (max-pooled sentences, [u, v, |u - v|, u * v] for pairs). The static families and ELMo have no other
# head; GPT and BERT take it through the recipes' --task_head in their frozen cells of these recipes, and keep their
# papers' linear heads when fine-tuned or trained from scratch.
FROZEN_TASK_HEAD = "scalar_mix"
SHARED_HEAD_KINDS = ("sequence_labeling", "classification", "sentence_pairs")
# Every family in both regimes by default, so that each verdict compares families within one regime: frozen (the
# pretrained features fixed, one head for all) and fine-tuned (every pretrained weight trains with the task). From
# scratch (the same network, random weights) runs on the learning-curve task (labeling) at every size in any case; on
# the word-order tasks it is opt-in (``--variants frozen finetuned scratch``): there most from-scratch cells predicted
# one class (no evidence for any verdict), and leaving them out keeps the default run within 15 minutes.
DEFAULT_VARIANTS = ("frozen", "finetuned")
SAMPLES = _samples.LINEAGE
# Pairs per paradigm in the embedded BLiMP sample (hf_lineage/samples/blimp/sample.jsonl, written by
# scripts/make_blimp_samples.py): the most --blimp-pairs takes.
BLIMP_SAMPLE_PAIRS = 20


# The tiny scale's budget is equal pretraining time, fixed as the corpus words each family reads in that time on the
# reference machine (each family's ``LineageFamily.equal_time_words``, in ``hf_lineage.registry.families``, which
# tells how they were set).
REFERENCE_MACHINE = "x86_64, 2 CPU cores (AMD EPYC), no GPU, torch 2.13.0+cpu"
TINY_EQUAL_TIME_SECONDS = 50.0

_BERT = FAMILIES["bert"].lineage
_BERT_ABLATION = {"claim_group": "ablation", "in_default_run": False, "library_family": "bert",
                  "pretrain_options": {"next_sentence_prediction": False}, "in_grammar_claim": False}
# BERT's ablations (Devlin et al. 2018, table 5; issue 45), run when named: `--families bert bert-no-nsp bert-ltr
# --pretrain`. They are experiments, not families: each is BERT at its size, on its data and word budget, with one
# ingredient changed, pretrained and fine-tuned as the bert family; they have no shipped checkpoint. "No NSP": the
# same [CLS] A [SEP] B [SEP] pairs, the NSP loss dropped. "LTR & No NSP": BERT's architecture with a causal mask
# (is_decoder), trained as a left-to-right LM on those sequences, so that against "No NSP" only the direction differs
# (GPT at BERT's size would also change the tokenizer, the data format and the budget).
ABLATIONS = {
    "bert-no-nsp": replace(_BERT, label="BERT no NSP", color="tab:pink",
                           objective="masked LM only: the same pairs, no NSP loss (validation: masked LM)",
                           **_BERT_ABLATION),
    "bert-ltr": replace(_BERT, label="BERT left-to-right", color="tab:orange",
                        objective="left-to-right LM with BERT's architecture (is_decoder), no NSP",
                        sizes={scale: (config, {**overrides, "is_decoder": True}, training)
                               for scale, (config, overrides, training) in _BERT.sizes.items()},
                        perplexity="causal", **_BERT_ABLATION),
}


class _LineageFamilies(Mapping):
    """Every family ``--families`` accepts, name → ``LineageFamily``, in lineage order: each registry family's
    ``lineage`` record (read at each lookup, so a family added to ``FAMILIES`` is here too), then the ablations."""

    def _records(self) -> dict:
        return {**{name: spec.lineage for name, spec in FAMILIES.items() if spec.lineage is not None}, **ABLATIONS}

    def __getitem__(self, family: str) -> LineageFamily:
        return self._records()[family]

    def __iter__(self):
        return iter(self._records())

    def __len__(self) -> int:
        return len(self._records())


LINEAGE_FAMILIES = _LineageFamilies()


def default_families() -> list[str]:
    """The families a run takes unless ``--families`` says otherwise, in lineage order."""
    return [name for name, family in LINEAGE_FAMILIES.items() if family.in_default_run]


def library_family(family: str) -> str:
    """The registry family (``hf_lineage.registry.FAMILIES``) a lineage family is pretrained and fine-tuned as: its
    own name, or for an ablation the family it ablates ("bert-no-nsp" → "bert")."""
    spec = LINEAGE_FAMILIES.get(family)
    return (spec.library_family if spec else None) or family


def ablations(families) -> list[str]:
    """The ablation families among ``families`` (``claim_group`` "ablation"), in lineage order."""
    return [f for f, spec in LINEAGE_FAMILIES.items() if f in families and spec.claim_group == "ablation"]


def main_variant(family: str, understanding: bool = True) -> str:
    """The variant the main table shows for ``family``: on an understanding task its paper's, else (generation) its
    ``generation_variant``."""
    spec = LINEAGE_FAMILIES[family]
    return spec.main_variant if understanding else spec.generation_variant


def family_label(family: str) -> str:
    """A family's name as the report writes it ("PPMI-SVD", "ELMo"); an unknown name as given."""
    return LINEAGE_FAMILIES[family].label if family in LINEAGE_FAMILIES else family


@dataclass(frozen=True)
class TaskSpec:
    kind: str  # the recipe's task name
    dataset: str  # what the embedded sample is, for the report
    metric: str  # the score the table shows
    understanding: bool  # counted for the claims about understanding tasks
    # Built so that a bag of words cannot solve it (its bag-of-words baseline stays within 10 points of the majority
    # class) while a model that reads order and context can: the claim "contextual beats static" is judged on these.
    needs_context: bool = False
    # A pair task whose two sentences play the same role: GPT reads both orders and sums them (its paper's
    # "similarity" input transformation); None: one order.
    pair_task: str | None = None


TASKS = {
    "labeling": TaskSpec("sequence_labeling", "UD English EWT, UPOS tags", "accuracy", True),
    "order": TaskSpec("classification", "UD English EWT sentences: original word order, or rotated (its two parts "
                      "swapped)?", "accuracy", True, needs_context=True),
    "order_pairs": TaskSpec("sentence_pairs", "UD English EWT: a sentence and its rotation, which is the original?",
                            "accuracy", True, needs_context=True),
    # Two more tasks a bag of words cannot solve, run when named: at the shipped checkpoints' size GPT and BERT
    # fine-tuned on 1,000 examples stayed at chance on both (docs/lineage.md).
    "shift": TaskSpec("classification", "UD English EWT sentences: are two adjacent words swapped? (bigram shift, "
                      "Conneau et al. 2018)", "accuracy", True, needs_context=True),
    "wic": TaskSpec("sentence_pairs", "UD English EWT: one word in two sentences, the same part of speech in both?",
                    "accuracy", True, needs_context=True, pair_task="similarity"),
    "classification": TaskSpec("classification", "E2E NLG references: is the venue family-friendly? (yes, no, not "
                               "mentioned)", "accuracy", True),
    "pairs": TaskSpec("sentence_pairs", "E2E NLG references: paraphrase or not", "accuracy", True,
                      pair_task="similarity"),
    "generation": TaskSpec("generation", "E2E NLG: meaning representation to text", "bleu", False),
    # The applications of issue 21, run only when asked for (``--tasks ... qa intent_slots``): at the tiny scale
    # their 20 cells would add about a third to the default run's fine-tuning time.
    "qa": TaskSpec("question_answering", "E2E NLG references: extractive QA on the meaning representation's slots, "
                   "a third unanswerable (SQuAD 2.0 style)", "F1", True),
    "intent_slots": TaskSpec("intent_and_slots", "E2E NLG references: intent (family-friendly?) and BIO slots",
                             "exact match", True),
    # Multiple choice, GPT's fourth input transformation (issue 45), run when named (``--tasks ... cloze``): one
    # content word blanked, four words of its part of speech and frequency band to choose from. Its baselines are
    # a guess by position, by word frequency and by the words next to the blank, not the bag-of-words and edge-word
    # regressions of the context gate, so it is not counted for the contextual-vs-static claim.
    "cloze": TaskSpec("multiple_choice", "UD English EWT: a sentence with one content word blanked, which of four "
                      "words of its part of speech and frequency band fills it?", "accuracy", True),
}
# The default run: labeling and order_pairs, the word-order task the families learn at the shipped size. ``order``
# (one sentence: original or rotated?) runs when named: with its edge words held in place (issue 42) every family in
# both regimes stayed within about 0.1 of chance on it (docs/lineage.md), and with its cells the default run took
# 882 s on a 2-core CPU, no margin under 15 minutes. The E2E classification and paraphrase tasks are solved by a bag of words (word
# identity), and on generation every family stays below nearest-MR retrieval; they also run when named.
DEFAULT_TASKS = ("labeling", "order_pairs")
CONTEXT_TASKS = _samples.CONTEXT_TASKS
# Each task's embedded sample: (training file, validation file), all in the package's data home (hf_lineage/samples);
# the QA and intent-and-slots samples are the recipes' own (built from the same E2E references).
SAMPLE_PATHS = {
    **{task: (SAMPLES / f"{task}.train.{ext}", SAMPLES / f"{task}.validation.{ext}")
       for task, ext in (("labeling", "jsonl"), ("classification", "jsonl"), ("pairs", "jsonl"),
                         ("generation", "csv"))},
    **{task: (CONTEXT_TASKS / f"{task}.train.jsonl", CONTEXT_TASKS / f"{task}.validation.jsonl")
       for task in ("order", "order_pairs", "shift", "wic")},
    "qa": (_samples.QA / "qa.train.jsonl", _samples.QA / "qa.validation.jsonl"),
    "intent_slots": (_samples.SLOTS / "slots.train.jsonl", _samples.SLOTS / "slots.validation.jsonl"),
    "cloze": (_samples.CLOZE / "cloze.train.jsonl", _samples.CLOZE / "cloze.validation.jsonl"),
}


@dataclass(frozen=True)
class Scale:
    """Everything a scale fixes but what each family sets for it (``LineageFamily.sizes`` and
    ``finetune_learning_rate`` under the scale's ``name``)."""

    name: str
    epochs: float  # the default budget when ``equal_time_seconds`` is None: passes over the corpus
    corpus_words: int | None  # words of the embedded corpus sample used (None: all of it)
    vocab_size: int
    max_seq_length: int
    batch_size: int
    task_train: int  # labelled training examples per task in the main table ("small labelled data")
    task_validation: int | None  # validation examples per task (None: the whole validation file)
    finetune_epochs: float  # the most epochs a cell trains; early stopping on the dev split usually ends it sooner
    finetune_batch_size: int
    head_learning_rate: float  # when only the task layers train (frozen)
    max_target_length: int
    mixed_precision: str = "no"
    # Not None: the default budget is equal time, this many seconds of pretraining per family on the reference
    # machine (``REFERENCE_MACHINE``), fixed as each family's ``equal_time_words``. A budget in words makes a run
    # reproducible; a budget measured in seconds at run time (``--budget-seconds``) would not be. None: ``epochs``
    # passes for every family (equal data).
    equal_time_seconds: float | None = None
    dev_examples: int = 300  # carved from the training file, disjoint from every training subset: early stopping
    patience: int = 3  # epochs without a better dev score before a cell stops
    min_steps: int = 100  # updates before early stopping may end a cell
    curve_sizes: tuple = ()  # labelled-set sizes of the learning curves (the main table's ``task_train`` is one)
    curve_tasks: tuple = ("labeling",)
    # How GPT and BERT read a sentence pair (the recipes' --pair_encoding): "cross", their papers' one sequence; or
    # "siamese", each sentence encoded alone and mean-pooled, [u, v, |u - v|, u * v] (Reimers & Gurevych 2019), as
    # the static families and ELMo read pairs. The tiny Transformers stay at chance with "cross" (docs/lineage.md).
    pair_encoding: str = "cross"
    # The Transformers (``LineageFamily.sweep_learning_rate``), fine-tuned and from scratch, train once per factor of
    # their fine-tuning rate at the main table's size and keep the run with the best dev score (never the validation
    # set's); the learning curves' smaller sizes keep the family's own rate, for both.
    learning_rate_sweep: tuple = (1 / 3, 1.0, 3.0)

    def family_sizes(self, family: str) -> tuple:
        """(named config, config overrides, pretraining overrides) of ``family`` at this scale."""
        return LINEAGE_FAMILIES[family].sizes[self.name]

    def finetune_learning_rate(self, family: str) -> float:
        return LINEAGE_FAMILIES[family].finetune_learning_rate[self.name]

    def equal_time_words(self, family: str) -> int | None:
        """The corpus words of ``family``'s equal-time budget (None at a scale without one)."""
        return None if self.equal_time_seconds is None else LINEAGE_FAMILIES[family].equal_time_words


SCALES = {
    "tiny": Scale(
        name="tiny", epochs=1.0, corpus_words=None, vocab_size=8000, max_seq_length=64,
        batch_size=32, task_train=1000, task_validation=None, finetune_epochs=30.0, finetune_batch_size=32,
        head_learning_rate=1e-2, max_target_length=48,
        equal_time_seconds=TINY_EQUAL_TIME_SECONDS,
        curve_sizes=(100, 1000), dev_examples=200, pair_encoding="siamese",
    ),
    "small": Scale(
        name="small", epochs=3.0, corpus_words=None, vocab_size=30000, max_seq_length=128,
        batch_size=64, task_train=3000, task_validation=600, finetune_epochs=3.0, finetune_batch_size=32,
        head_learning_rate=1e-3, max_target_length=64,
        mixed_precision="bf16",
    ),
    # A real corpus is large: one pass by default.
    "base": Scale(
        name="base", epochs=1.0, corpus_words=None, vocab_size=30000, max_seq_length=128,
        batch_size=64, task_train=3000, task_validation=600, finetune_epochs=3.0, finetune_batch_size=32,
        head_learning_rate=1e-3, max_target_length=64,
        mixed_precision="bf16",
    ),
}


@dataclass
class LineageArguments:
    """Every option of ``hf-lineage lineage`` (``None``: the scale's default)."""

    output_dir: str = "lineage_report"
    scale: str = "tiny"
    families: list[str] = field(default_factory=default_families)
    tasks: list[str] = field(default_factory=lambda: list(DEFAULT_TASKS))
    variants: list[str] = field(default_factory=lambda: list(DEFAULT_VARIANTS))
    corpus: list[str] | None = None
    validation_corpus: list[str] | None = None
    dataset_name: str | None = None
    dataset_config: str | None = None
    text_column: str = "text"
    budget_words: int | None = None
    budget_seconds: float | None = None
    task_data: dict = field(default_factory=dict)  # task → {"train": path, "validation": path} (local files)
    task_train: int | None = None
    task_validation: int | None = None
    finetune_epochs: float | None = None
    curve_sizes: list[int] | None = None  # None: the scale's; [] turns the learning curves off
    pair_encoding: str | None = None  # GPT and BERT on pairs: "cross" or "siamese" (None: the scale's)
    seeds: int = 1  # run everything with seeds seed, seed + 1, ... and report mean and spread
    workers: int | None = None  # fine-tuning cells at once (None: the CPU cores, at most 4; 0: in this process)
    mixed_precision: str | None = None
    # Set by ``check_arguments``: the precision this run trains in and why (a scale's bf16 falls back to float32
    # where the device lacks it, ``hf_lineage.machine.precision``); said at the start and in the report's notes.
    precision_note: str | None = None
    seed: int = 0
    rerun: bool = False  # ignore finished stages
    # Pretrain every family anew (as ``--budget-*``, ``--corpus``, ``--dataset-name`` and the larger scales imply)
    # instead of fine-tuning the checkpoints the package ships (``hf_lineage.checkpoints``) or ``checkpoints``'.
    pretrain: bool = False
    # The pretrained folders fine-tuned instead of the shipped ones: "DIR" (DIR/<family> for every family) and/or
    # "FAMILY=FOLDER" items, FOLDER a local folder or a Hub model id (``checkpoint_sources``); a str is one item.
    checkpoints: str | list[str] | None = None
    keep_finetuned_models: bool = False
    # Frozen cells compute each sentence's layers of a frozen network once, not at every epoch
    # (``--no-frozen-feature-memo`` turns it off; ``hf_lineage.models.feature_memo_lineage_utils``).
    cache_frozen_features: bool = True
    # Pairs per BLiMP paradigm of the zero-shot grammar section (``zero_shot_stage.py``), from the embedded sample's 20
    # (None: all 20; 0 turns the section off). The order_pairs zero-shot column runs whenever that task does.
    blimp_pairs: int | None = None
    # Whether --variants was given: without it, on a machine without a GPU, a checkpoint of over
    # LARGE_CHECKPOINT_ON_CPU parameters runs its frozen cells only (``frozen_only_families``).
    variants_given: bool = True


# Parameters above which a checkpoint fine-tuned on a CPU-only machine gets the frozen regime alone (unless --variants
# names the regimes): BERT-base fine-tuned end to end on two cores takes hours per cell, its frozen features minutes.
LARGE_CHECKPOINT_ON_CPU = 50_000_000


def frozen_only_families(args: LineageArguments, families: list[str], parameters: dict) -> list[str]:
    """The families whose checkpoints run frozen only: over ``LARGE_CHECKPOINT_ON_CPU`` parameters (``parameters``:
    family → count) on a machine without a GPU, when --variants was not given."""
    import torch

    if args.variants_given or torch.cuda.is_available():
        return []
    return [f for f in families if (parameters.get(f) or 0) > LARGE_CHECKPOINT_ON_CPU]


class LineageError(ValueError):
    """Bad input found before any stage runs; the message names the problem."""


# --------------------------------------------------------------------------- checks and inputs


def check_arguments(args: LineageArguments) -> Scale:
    if args.scale not in SCALES:
        raise LineageError(f"--scale must be one of {', '.join(SCALES)}, got {args.scale!r}")
    for name, given, known in (("--families", args.families, LINEAGE_FAMILIES), ("--tasks", args.tasks, TASKS),
                               ("--variants", args.variants, VARIANTS)):
        unknown = [g for g in given if g not in known]
        if unknown or (not given and name != "--variants"):
            raise LineageError(f"{name}: unknown {unknown} (choose from {', '.join(known)})" if unknown
                               else f"{name} is empty")
    if args.corpus and args.dataset_name:
        raise LineageError("give --corpus or --dataset-name, not both")
    for path in (args.corpus or []) + (args.validation_corpus or []):
        if not os.path.isfile(path):
            raise LineageError(f"corpus file {path}: no such file")
    if args.pair_encoding not in (None, *PAIR_ENCODINGS):
        raise LineageError(f"--pair-encoding must be one of {', '.join(PAIR_ENCODINGS)}, got {args.pair_encoding!r}")
    if args.seeds < 1:
        raise LineageError(f"--seeds must be at least 1, got {args.seeds}")
    if any(size < 1 for size in args.curve_sizes or []) or (args.task_train is not None and args.task_train < 1):
        raise LineageError("labelled-set sizes (--task-train, --curve-sizes) must be positive")
    if args.blimp_pairs is not None and not 0 <= args.blimp_pairs <= BLIMP_SAMPLE_PAIRS:
        raise LineageError(f"--blimp-pairs must be 0 (no grammar section) to {BLIMP_SAMPLE_PAIRS} (the embedded "
                           f"sample's pairs per paradigm), got {args.blimp_pairs}")
    if args.budget_words is not None and args.budget_seconds is not None:
        raise LineageError("give --budget-words or --budget-seconds, not both")
    if (args.budget_words is not None and args.budget_words <= 0) or (
            args.budget_seconds is not None and args.budget_seconds <= 0):
        raise LineageError("the budget must be positive")
    for task, files in args.task_data.items():
        if task not in TASKS:
            raise LineageError(f"--task-data: unknown task {task!r} (tasks: {', '.join(TASKS)})")
        for split in ("train", "validation"):
            if not os.path.isfile(files.get(split) or ""):
                raise LineageError(f"--task-data {task}: {split} file {files.get(split)!r}: no such file")
    directory, replaced = checkpoint_items(args.checkpoints, args.families)
    unbuilt = [] if pretrains(args) or directory else [f for f in ablations(args.families) if f not in replaced]
    if unbuilt:
        raise LineageError(f"{', '.join(unbuilt)}: BERT's ablations have no shipped checkpoint; pretrain them with "
                           f"the others (--pretrain) or give their folders (--checkpoints {unbuilt[0]}=FOLDER)")
    if args.checkpoints:
        if args.pretrain:
            raise LineageError("give --pretrain or --checkpoints, not both")
        pretraining = [name for name, given in (("--corpus", args.corpus), ("--validation-corpus",
                       args.validation_corpus), ("--dataset-name", args.dataset_name), ("--budget-words",
                       args.budget_words), ("--budget-seconds", args.budget_seconds)) if given]
        if pretraining:
            raise LineageError(f"--checkpoints fine-tunes pretrained folders; {', '.join(pretraining)} only "
                               "pretraining reads: give one or the other")
        checkpoint_sources(args)  # every folder checked (and every Hub id downloaded) before anything runs
    if args.blimp_pairs != 0 and not (_samples.BLIMP / "sample.jsonl").is_file():
        raise LineageError(f"the embedded BLiMP sample is missing from {_samples.BLIMP} (a broken install?); "
                           "--blimp-pairs 0 runs without the grammar section")
    if not args.corpus and not args.dataset_name and not (SAMPLES / "corpus.train.txt").is_file():
        raise LineageError(f"the embedded corpus sample is missing from {SAMPLES} (a broken install?)")
    settle_precision(args, SCALES[args.scale])
    return SCALES[args.scale]


def settle_precision(args: LineageArguments, scale: Scale) -> None:
    """The run's mixed precision, by what the device computes (``hf_lineage.machine.precision``): a precision given with
    --mixed-precision that the device lacks is refused here, before any stage; the scale's own default falls back to
    float32 there (``args.mixed_precision`` then says "no", so no stage of a bf16 run elsewhere is reused)."""
    from ..machine.precision import PrecisionError, choose_precision, device_kind

    requested = args.mixed_precision or scale.mixed_precision
    try:
        precision, why = choose_precision(requested, named=args.mixed_precision is not None, device=device_kind())
    except PrecisionError as error:
        raise LineageError(str(error)) from None
    if precision != requested:
        args.mixed_precision = precision
    args.precision_note = None if requested == "no" else why


def pretrains(args: LineageArguments) -> bool:
    """Whether this run pretrains the families itself: ``--pretrain``, or any option that only pretraining reads
    (a corpus, a budget, a scale other than the shipped checkpoints' tiny one). With ``--checkpoints`` it fine-tunes
    those folders (a larger scale then sets the fine-tuning only)."""
    return bool(args.pretrain or args.corpus or args.validation_corpus or args.dataset_name or args.budget_words
                or args.budget_seconds or (args.scale != "tiny" and not args.checkpoints))


# --------------------------------------------------------------------------- --checkpoints


@dataclass(frozen=True)
class CheckpointSource:
    """Where one family's pretrained folder comes from: ``folder`` is local (a Hub id's downloaded snapshot);
    ``source`` says where it came from in the report's words ("shipped", a path, "Hub: <id>")."""

    family: str
    folder: Path
    source: str
    shipped: bool = False
    replaced: bool = False  # given as FAMILY=FOLDER
    hub_id: str | None = None


# ``--checkpoints published``: every family's release in the standard set (``convert.releases.published_releases``;
# the others keep theirs).
PUBLISHED_ITEM = "published"


def checkpoint_items(checkpoints, families=None) -> tuple[str | None, dict]:
    """``--checkpoints``' items as (DIR or None, {family: FOLDER, Hub id or release SOURCE}); ``published`` gives
    each family of ``families`` (default: all) that has a published release the value ``"published"``, unless an
    item names that family itself. A LineageError for an unknown family, a family given twice, more than one DIR or
    an empty FOLDER."""
    items = [checkpoints] if isinstance(checkpoints, str) else list(checkpoints or [])
    directory, replaced, published = None, {}, False
    for item in items:
        if item == PUBLISHED_ITEM:
            published = True
            continue
        family, sep, folder = item.partition("=")
        if not sep:
            if directory is not None:
                raise LineageError(f"--checkpoints: one DIR at most (got {directory} and {item}); name a family's "
                                   "own folder as FAMILY=FOLDER")
            directory = item
            continue
        if family not in LINEAGE_FAMILIES:
            raise LineageError(f"--checkpoints {item}: unknown family {family!r} (choose from "
                               f"{', '.join(LINEAGE_FAMILIES)})")
        if family in replaced:
            raise LineageError(f"--checkpoints: {family} given twice ({replaced[family]} and {folder})")
        if not folder:
            raise LineageError(f"--checkpoints {item}: no folder after '='")
        replaced[family] = folder
    if published:
        from ..convert.releases import published_releases

        standard_set = published_releases()
        for family in families if families is not None else LINEAGE_FAMILIES:
            if family in standard_set and family not in replaced:
                replaced[family] = PUBLISHED_ITEM
    return directory, replaced


_HUB_SNAPSHOTS: dict = {}


def hub_snapshot(model_id: str) -> Path:
    """A Hub model's local snapshot (``huggingface_hub.snapshot_download``; the Hub's cache serves it offline once
    downloaded), or a LineageError naming the id."""
    if model_id not in _HUB_SNAPSHOTS:
        try:
            from huggingface_hub import snapshot_download

            _HUB_SNAPSHOTS[model_id] = Path(snapshot_download(model_id))
        except Exception as error:  # offline, not found, gated: the hub's own error, named
            raise LineageError(f"--checkpoints: {model_id!r} is not a local folder, and the Hugging Face Hub model of "
                               f"that id could not be fetched ({type(error).__name__}: {_first_line(error)})") from None
    return _HUB_SNAPSHOTS[model_id]


def _first_line(error) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else "no message"


def checkpoint_sources(args: LineageArguments) -> dict:
    """{family: CheckpointSource} for every family of ``args.families``: the shipped checkpoint, ``DIR/<family>``
    or a ``FAMILY=FOLDER`` item's folder (a Hub id is downloaded here). A LineageError for a folder without
    config.json, a config of another family's model type, or FAMILY=FOLDER for a family not in --families (add it
    to --families: which families run is --families' decision alone)."""
    import json

    from .. import checkpoints as shipped
    from ..registry import family_of_model_type

    directory, replaced = checkpoint_items(args.checkpoints, args.families)
    absent = [family for family in replaced if family not in args.families]
    if absent:
        raise LineageError(f"--checkpoints names {', '.join(absent)}, not in --families ({' '.join(args.families)}): "
                           "add it to --families or leave it out of --checkpoints")
    if directory is not None:
        missing = [f for f in args.families
                   if f not in replaced and not (Path(directory) / f / "config.json").is_file()]
        if missing:
            raise LineageError(f"--checkpoints {directory}: no pretrained folder (with config.json) for "
                               f"{', '.join(missing)}")
    sources = {}
    for family in args.families:
        if family in replaced:
            source = replaced_source(family, replaced[family], args)
        elif directory is not None:
            source = CheckpointSource(family, Path(directory) / family, str(Path(directory) / family))
        else:
            source = CheckpointSource(family, shipped.path(family), "shipped", shipped=True)
        config_file = source.folder / "config.json"
        if not config_file.is_file():
            raise LineageError(f"--checkpoints {family}={replaced.get(family, source.folder)}: no config.json in "
                               f"{source.folder} (not a pretrained model folder)")
        try:
            model_type = json.loads(config_file.read_text()).get("model_type")
        except ValueError as error:
            raise LineageError(f"--checkpoints: {config_file} is not JSON ({error})") from None
        if family_of_model_type(model_type or "") != library_family(family):
            raise LineageError(f"--checkpoints {family}={replaced.get(family, source.folder)}: its config.json's "
                               f"model_type is {model_type!r}, not {family}'s (lineage-{family}); convert a published "
                               "model first (`hf-lineage convert`)")
        sources[family] = source
    return sources


def _lineage_model_type(config: dict, family: str) -> bool:
    from ..registry import family_of_model_type

    return family_of_model_type(config.get("model_type") or "") == library_family(family)


def replaced_source(family: str, given: str, args: LineageArguments) -> CheckpointSource:
    """The folder of a ``FAMILY=SOURCE`` item: a lineage folder (local, or a Hub id whose config is a lineage
    model's) as it is; anything ``hf-lineage convert`` reads (a transformers BERT / OpenAI GPT folder or Hub id,
    AllenNLP's ELMo files or named releases, word vector files, URLs; several files joined by ','), or
    ``published``, converted once into ``<output dir>/converted/<family>`` and reused by later runs."""
    import json

    if given == PUBLISHED_ITEM:
        from ..convert.releases import published_releases

        release = published_releases()[library_family(family)]
        return converted_source(family, list(release.sources), args, release.max_vocab,
                                f"published: {release.name}")
    from ..registry import family_of_model_type, family_spec

    record = family_spec(library_family(family))
    path = Path(given).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        try:
            config = json.loads((path / "config.json").read_text())
        except ValueError as error:
            raise LineageError(f"--checkpoints: {path / 'config.json'} is not JSON ({error})") from None
        if _lineage_model_type(config, family):
            return CheckpointSource(family, path, str(given), replaced=True)
        if family_of_model_type(config.get("model_type") or ""):  # another lineage family's folder
            raise LineageError(f"--checkpoints {family}={given}: its config.json's model_type is "
                               f"{config.get('model_type')!r}, not {family}'s (lineage-{library_family(family)})")
        return converted_source(family, [given], args)
    if path.is_dir() and record.transformers_base:  # its releases are transformers folders
        raise LineageError(f"--checkpoints {family}={given}: no config.json in {path} (not a pretrained model folder)")
    if path.exists() or "," in given or "://" in given or "#" in given:
        return converted_source(family, given.split(","), args)
    if given in record.named_releases:  # ELMo's: hf-lineage convert elmo original
        return converted_source(family, [given], args)
    if looks_like_model_id(given):
        config = _hub_config(given)
        if config is not None and _lineage_model_type(config, family):
            return CheckpointSource(family, hub_snapshot(given), f"Hub: {given}", replaced=True, hub_id=given)
        return converted_source(family, [given], args)
    raise LineageError(f"--checkpoints {family}={given}: no such folder or file (nor a URL or a Hub model id)")


def _hub_config(model_id: str) -> dict | None:
    """A Hub model's config.json (None when the repository has none, e.g. word vectors); a LineageError naming the id
    when the repository cannot be reached at all."""
    import json

    from huggingface_hub import hf_hub_download, snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError, RemoteEntryNotFoundError

    try:
        return json.loads(Path(hf_hub_download(model_id, "config.json")).read_text())
    except RemoteEntryNotFoundError:  # the repository exists and holds no config.json: word vectors, say
        return None
    except LocalEntryNotFoundError as error:  # offline, or the Hub unreachable: a repository already in the cache
        try:
            snapshot_download(model_id, local_files_only=True)
            return None
        except Exception:
            failure = error
    except Exception as error:  # no such repository, an invalid id
        failure = error
    raise LineageError(f"--checkpoints: {model_id!r} is not a local folder, and the Hugging Face Hub model of that id "
                       f"could not be fetched ({type(failure).__name__}: {_first_line(failure)})")


def converted_source(family: str, sources: list[str], args: LineageArguments, max_vocab: int | None = None,
                     label: str | None = None) -> CheckpointSource:
    """A published release converted (``convert.releases.convert``) into ``<output dir>/converted/<family>``, or the
    folder an earlier run converted from the same sources."""
    import json

    from ..convert.releases import convert
    from ..convert.sources import ConversionError

    folder = Path(args.output_dir) / "converted" / family
    record_file = folder / "pretraining.json"
    record = json.loads(record_file.read_text()) if record_file.is_file() else {}
    reused = (record.get("sources") == sources and record.get("max_vocab") == max_vocab
              and (folder / "config.json").is_file())
    # --rerun converts again (a Hub release may have a new revision), once per process: the folders are looked up
    # many times in a run.
    if not reused or (args.rerun and str(folder) not in _CONVERTED_IN_THIS_PROCESS):
        print(f"hf-lineage lineage: converting {family} from {' '.join(sources)}"
              + (f" (the {max_vocab:,} most frequent words)" if max_vocab else "") + f" into {folder}", flush=True)
        try:
            convert(library_family(family), sources, folder, max_vocab=max_vocab, overwrite=True,
                    command=f"hf-lineage convert {library_family(family)} {' '.join(sources)} --output-dir converted/{family}"
                    + (f" --max-vocab {max_vocab}" if max_vocab else ""))
        except ConversionError as error:
            raise LineageError(f"--checkpoints {family}: {error}") from None
        _CONVERTED_IN_THIS_PROCESS.add(str(folder))
    return CheckpointSource(family, folder, label or ", ".join(sources), replaced=True)


_CONVERTED_IN_THIS_PROCESS: set = set()
