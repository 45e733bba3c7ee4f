"""The corpus as examples drawn reproducibly: ``load_text`` reads it, ``SeededExamples`` / ``StreamedExamples`` give
every example the seed its masking is drawn from, ``EpochPermutationSampler`` orders each epoch.

Data order is a permutation drawn from ``seed + epoch``; masking is drawn per example from a seed derived from
(seed, epoch, index) — so neither depends on the number of processes or on where a run was resumed.
"""

from __future__ import annotations

import torch


# Bytes a stream of local text is read at a time (the ``datasets`` text builder's ``chunksize``; its default is 10 MB).
STREAM_CHUNK_BYTES = 1 << 20


def named_languages(entries) -> dict[str, list[str]] | None:
    """``{language: paths}`` of ``--train-file LANG=PATH`` entries (``hf_lineage.data.languages.language_files``);
    None for plain files. Only an entry holding "=" can name a language, so a plain corpus never reaches (nor imports)
    ``hf_lineage.data.languages``."""
    if not entries or not any("=" in entry for entry in entries):
        return None
    from .languages import language_files

    return language_files(entries)


def corpus_paths(entries) -> list[str] | None:
    """The files of ``--train-file`` / ``--validation-file`` entries, language tags removed."""
    languages = named_languages(entries)
    if languages is None:
        return list(entries) if entries else entries
    return [path for paths in languages.values() for path in paths]


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
    languages = named_languages(split_files)
    if languages:  # a multilingual corpus: its text with each line's language (hf_lineage.data.languages)
        parts = []
        for language, paths in languages.items():
            part = datasets.load_dataset("text", data_files={split: paths}, split=split)
            parts.append(part.add_column("language", [language] * len(part)))
        return datasets.concatenate_datasets(parts)
    # A stream of local text is read STREAM_CHUNK_BYTES at a time: with the text builder's default (10 MB) the
    # reader's buffers kept ~200 MB more resident at 20 M words than at 2 M (benchmarks/bench_streaming_growth.py).
    kwargs = {"chunksize": STREAM_CHUNK_BYTES} if streaming else {}
    return datasets.load_dataset("text", data_files={split: split_files}, split=split, streaming=streaming, **kwargs)


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
