"""``hf-lineage convert FAMILY SOURCE``: a paper's own published release as a lineage folder.

Each family's converter (``CONVERTERS``: ``function(sources, max_vocab) -> Release``) reads the release in its own
format and returns the lineage model, a tokenizer that reproduces the original's tokenization, and what the card
says of it (source, license, citation, words read). ``convert`` writes that as a folder the Auto classes load after
``import hf_lineage`` and with ``trust_remote_code`` without it, atomically: everything is written to a staging
folder beside ``OUT`` and moved in at the end, so a failure leaves nothing in ``OUT``.

``PUBLISHED`` is the standard set, one release per family, that ``hf-lineage lineage --checkpoints published``
runs on.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .sources import ConversionError


@dataclass
class Release:
    """What a converter gives back: the model and tokenizer, and what the card and the record say of them."""

    model: Any
    tokenizer: Any
    source: str  # as the user named it (a Hub id, a URL, a path's file name)
    license: str  # the Hub's license id ("apache-2.0", "mit", "pddl", "other")
    citation: str  # BibTeX of the paper
    words_seen: int | None = None  # the words the original was trained on, when known
    words_seen_from: str = ""  # where that number comes from ("Devlin et al. 2018, §3.1: BooksCorpus + Wikipedia")
    language: str = "en"
    base_model: str | None = None  # a Hub id, for the card's base_model
    notes: str = ""  # Markdown for the card: what the tokenizer reproduces, what was left out
    # Why the converted model gives no probability of a sentence although its family does (a release without its
    # language model's output layer); "" when it does. Kept in pretraining.json: zero-shot scoring reads it.
    no_sentence_probability: str = ""


@dataclass(frozen=True)
class PublishedRelease:
    """One family's entry in the standard set (``--checkpoints published``)."""

    sources: tuple[str, ...]
    name: str  # "BERT-base, uncased"
    parameters: str  # "110 M", or the vectors' shape
    words: str  # what its paper says it read: "3.3 B words of BooksCorpus + English Wikipedia"
    license: str
    max_vocab: int | None = None  # --max-vocab used for it in the standard set


# family -> "module:function" in hf_lineage.convert; imported only when that family is converted.
CONVERTERS = {
    "bert": "bert:release",
    "gpt": "gpt:release",
    "elmo": "allennlp_elmo:release",
    "word2vec": "word2vec:release",
    "glove": "glove:release",
}
# Families whose papers published no trained model.
NO_RELEASE = {
    "nnlm": "Bengio et al. (2003) published no trained model; pretrain one with `hf-lineage pretrain nnlm`",
    "svd": "PPMI-SVD (Levy, Goldberg & Dagan 2015) has no published vectors; build them with `hf-lineage pretrain svd`",
}

_ELMO = "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo/"
# Named AllenNLP releases: hf-lineage convert elmo small|medium|original|5.5B.
ELMO_RELEASES = {
    name: (f"{_ELMO}{stem}/elmo_{stem}_options.json", f"{_ELMO}{stem}/elmo_{stem}_weights.hdf5")
    for name, stem in {"small": "2x1024_128_2048cnn_1xhighway", "medium": "2x2048_256_2048cnn_1xhighway",
                       "original": "2x4096_512_2048cnn_2xhighway",
                       "5.5B": "2x4096_512_2048cnn_2xhighway_5.5B"}.items()
}

PUBLISHED = {
    "word2vec": PublishedRelease(("fse/word2vec-google-news-300",), "GoogleNews-vectors-negative300",
                                 "3 M words × 300, the first 200,000 kept", "about 100 B words of Google News",
                                 "apache-2.0", max_vocab=200_000),
    "glove": PublishedRelease(("stanfordnlp/glove/glove.6B.zip#glove.6B.300d.txt",), "glove.6B.300d",
                              "400 k words × 300, the first 200,000 kept", "6 B tokens of Wikipedia 2014 + Gigaword 5", "pddl",
                              max_vocab=200_000),
    # The paper's own size (Peters et al. 2018's 93.6 M biLM): frozen only on a CPU, which fits the published run's
    # hour there (docs/published.md, "Time and memory"; the small release's 13.6 M would be fine-tuned too).
    "elmo": PublishedRelease(ELMO_RELEASES["original"], "AllenNLP's ELMo original", "93.6 M parameters",
                             "about 0.8 B words of the 1B Word Benchmark", "apache-2.0"),
    "gpt": PublishedRelease(("openai-community/openai-gpt",), "OpenAI GPT", "117 M parameters",
                            "about 0.8 B words of BooksCorpus", "mit"),
    "bert": PublishedRelease(("google-bert/bert-base-uncased",), "BERT-base, uncased", "110 M parameters",
                             "3.3 B words of BooksCorpus + English Wikipedia", "apache-2.0"),
}


def converter(family: str):
    """The converter function of ``family``; a ConversionError naming the family when there is none."""
    if family in NO_RELEASE:
        raise ConversionError(f"{family}: no published release exists: {NO_RELEASE[family]}")
    if family not in CONVERTERS:
        from ..registry import FAMILIES

        if family in FAMILIES:  # a family of the registry with no converter: a new one, or one never released
            raise ConversionError(f"{family}: no published release to convert (the families with one: "
                                  f"{', '.join(CONVERTERS)})")
        raise ConversionError(f"unknown family {family!r}; families with a published release: "
                              f"{', '.join(CONVERTERS)}")
    import importlib

    module, name = CONVERTERS[family].split(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def read_release(family: str, sources: list[str], max_vocab: int | None = None) -> Release:
    """The release of ``family`` at ``sources`` (most families take one; ELMo an options file and a weights file, or
    a named release), converted in memory."""
    if max_vocab is not None and max_vocab < 1:
        raise ConversionError(f"--max-vocab must be a positive number of words; got {max_vocab}")
    if max_vocab is not None and family not in ("word2vec", "glove"):
        raise ConversionError(f"--max-vocab applies to word vectors (word2vec, glove), not to {family}")
    return converter(family)(list(sources), max_vocab)


def convert(family: str, sources: list[str], output_dir, *, max_vocab: int | None = None, command: str = "",
            overwrite: bool = False) -> Path:
    """Convert a published release into ``output_dir`` (a ConversionError, with nothing written there, when it
    cannot be)."""
    output_dir = Path(output_dir)
    if output_dir.exists() and (not output_dir.is_dir() or (any(output_dir.iterdir()) and not overwrite)):
        raise ConversionError(f"--output-dir {output_dir}: exists and is not empty (give --overwrite to replace it)")
    started = time.time()
    release = read_release(family, sources, max_vocab)
    created = [p for p in [output_dir.parent, *output_dir.parent.parents] if not p.exists()]  # removed on failure
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = output_dir.with_name(f".{output_dir.name}.converting-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        write_release(release, family, staging, sources=[str(s) for s in sources], command=command,
                      max_vocab=max_vocab, seconds=round(time.time() - started, 1))
        if output_dir.exists():
            shutil.rmtree(output_dir)
        os.replace(staging, output_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for parent in created:  # deepest first
            try:
                parent.rmdir()
            except OSError:
                break
        raise
    return output_dir


def write_release(release: Release, family: str, folder: Path, *, sources: list[str], command: str, max_vocab,
                  seconds) -> None:
    """Model, tokenizer, card and ``pretraining.json`` (the record the lineage report reads) into ``folder``."""
    from ..folders.pretrained import save_final

    model = release.model
    parameters = sum(p.numel() for p in model.parameters())
    save_final(model, release.tokenizer, folder, card_extra=card_section(release, command),
               languages=[release.language] if release.language else None, base_model=release.base_model)
    _finish_card(folder / "README.md", release.license, release.source)
    record = {
        "family": family, "converted_from": release.source, "sources": sources, "command": command or None,
        "words_seen": release.words_seen, "words_seen_from": release.words_seen_from or None,
        "license": release.license, "max_vocab": max_vocab, "parameters": parameters,
        "conversion_seconds": seconds,
        **({"no_sentence_probability": release.no_sentence_probability} if release.no_sentence_probability else {}),
    }
    (folder / "pretraining.json").write_text(json.dumps(record, indent=2) + "\n")


def _finish_card(card: Path, license: str, source: str) -> None:
    """The release's license in the card's metadata, and its opening line naming the release it was converted from
    (the generic card, written by ``save_pretrained``, knows no base and says "trained from scratch")."""
    import re

    from ..models.card_lineage_utils import update_card

    text = update_card(card.read_text(), license=license)
    text = re.sub(r"Base model: trained from scratch\.", f"Converted from the published release {source} (see "
                  "Source below).", text, count=1)
    card.write_text(text)


def card_section(release: Release, command: str) -> str:
    words = (f"{release.words_seen:,} words ({release.words_seen_from})" if release.words_seen
             else release.words_seen_from or "not stated by the release")
    return f"""
## Source

Converted from the published release **{release.source}** by hf_lineage; the weights are the original's, unchanged.

- Words the original was trained on: {words}
- License: {release.license} (the release's own)
- Made with: `{command or 'hf_lineage.convert.releases.convert'}`

{release.notes}

## Citation

```bibtex
{release.citation.strip()}
```
"""


__all__ = ["CONVERTERS", "ELMO_RELEASES", "NO_RELEASE", "PUBLISHED", "PublishedRelease", "Release", "convert",
           "converter", "read_release"]
