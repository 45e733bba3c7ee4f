"""The engine's data step: the tokenizer and the prepared examples (read, tokenised and, for ``--streaming``,
packed lazily by the family's objective), then the loaders that draw them in a reproducible order."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import torch

from ..data.examples import EpochPermutationSampler, SeededExamples, StreamedExamples, corpus_paths, load_text
from .errors import PretrainError
from .resume import start_output_dir

# Worker processes that collate batches (BERT's masking and pairing, padding) while a GPU computes. On a CPU they would
# take cores from the computation itself, so the batches are made in the main process there.
DATALOADER_WORKERS_ON_GPU = 2


def load_data(args, objective, accelerator, output_dir: Path, base=None):
    """(tokenizer, config, train examples, eval examples or None). The main process goes first: it trains the
    tokenizer and fills the datasets cache, which the others then read. Nothing is written to the output directory
    until the data has been checked. A continued run (``base``, ``base_model.load_base``) keeps its base's tokenizer
    and config."""
    from transformers import AutoTokenizer

    with accelerator.main_process_first():
        raw_train = load_text(args, args.train_file, "train", streaming=args.streaming)
        raw_eval = load_text(args, args.validation_file, "validation")
        if base is not None:
            tokenizer = base.tokenizer
        elif args.tokenizer:
            tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
        elif args.resume_from or not accelerator.is_main_process:
            tokenizer = AutoTokenizer.from_pretrained(str(output_dir))
        else:
            texts = None if args.train_file else (row["text"] for row in islice(raw_train, 1_000_000))
            tokenizer = objective.train_tokenizer(corpus_paths(args.train_file), texts)
        config = base.config if base is not None else objective.build_config(args.config, tokenizer, args.overrides)
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
            start_output_dir(args, tokenizer, output_dir)
    return tokenizer, config, train_examples, eval_examples


@dataclass
class Loaders:
    """The training and evaluation loaders, and what the loop tells which epoch it is in."""

    train_data: SeededExamples | StreamedExamples
    sampler: EpochPermutationSampler | None  # None when streaming: the stream's own order
    train: torch.utils.data.DataLoader
    eval: torch.utils.data.DataLoader | None

    def set_epoch(self, epoch: int) -> None:
        self.train_data.epoch = epoch
        if self.sampler is not None:
            self.sampler.epoch = epoch


def build_loaders(args, objective, tokenizer, train_examples, eval_examples) -> Loaders:
    """Loaders whose batches are made by ``--dataloader-num-workers`` processes (their masking depends on the example's
    seed, not on the process that draws it) and, for a GPU, in pinned memory."""
    collate = objective.collator(tokenizer)
    on_gpu = torch.cuda.is_available()
    workers = args.dataloader_num_workers
    if workers is None:
        workers = DATALOADER_WORKERS_ON_GPU if on_gpu and not args.streaming else 0
    loading = dict(collate_fn=collate, num_workers=workers, pin_memory=on_gpu)
    if args.streaming:
        sampler, train_data = None, StreamedExamples(train_examples, args.seed)
    else:
        train_data = SeededExamples(train_examples, args.seed)
        sampler = EpochPermutationSampler(len(train_data), args.seed)
    train_loader = torch.utils.data.DataLoader(
        train_data, batch_size=args.per_device_batch_size, sampler=sampler, drop_last=True, **loading,
    )
    eval_loader = None
    if eval_examples is not None:
        eval_data = SeededExamples(eval_examples, args.seed)  # epoch stays 0: the same masks at every evaluation
        eval_loader = torch.utils.data.DataLoader(eval_data, batch_size=args.per_device_eval_batch_size, **loading)
    return Loaders(train_data, sampler, train_loader, eval_loader)
