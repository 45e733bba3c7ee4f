"""``hf-lineage convert FAMILY SOURCE``: a paper's own published release as a lineage folder.

Each family's converter (its registry record's ``release_converter``: ``function(sources, max_vocab) -> Release``)
reads the release in its own format and returns the lineage model, a tokenizer that reproduces the original's
tokenization, and what the card says of it (source, license, citation, words read). ``convert`` writes that as a
folder the Auto classes load after ``import hf_lineage`` and with ``trust_remote_code`` without it, atomically:
everything is written to a staging folder beside ``OUT`` and moved in at the end, so a failure leaves nothing in
``OUT``.

``published_releases()`` is the standard set, one release per family (each record's ``published``), that
``hf-lineage lineage --checkpoints published`` runs on.
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


def published_releases() -> dict:
    """The standard set, family → ``PublishedRelease`` (each family's ``published``), in lineage order."""
    from ..registry import FAMILIES

    return {name: spec.published for name, spec in FAMILIES.items() if spec.published}


def converter(family: str):
    """The converter function of ``family`` (its ``release_converter``); a ConversionError naming the family when
    there is none."""
    from ..registry import FAMILIES

    spec = FAMILIES.get(family)
    if spec is not None and spec.no_release:
        raise ConversionError(f"{family}: no published release exists: {spec.no_release}")
    if spec is None or not spec.release_converter:
        released = ", ".join(name for name, s in FAMILIES.items() if s.release_converter)
        if spec is not None:  # a family of the registry with no converter: a new one, or one never released
            raise ConversionError(f"{family}: no published release to convert (the families with one: {released})")
        raise ConversionError(f"unknown family {family!r}; families with a published release: {released}")
    import importlib

    module, name = spec.release_converter.split(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def read_release(family: str, sources: list[str], max_vocab: int | None = None) -> Release:
    """The release of ``family`` at ``sources`` (most families take one; ELMo an options file and a weights file, or
    a named release), converted in memory."""
    if max_vocab is not None and max_vocab < 1:
        raise ConversionError(f"--max-vocab must be a positive number of words; got {max_vocab}")
    if max_vocab is not None:
        from ..registry import FAMILIES

        vectors = [name for name, spec in FAMILIES.items() if spec.word_vectors and spec.release_converter]
        if family not in vectors:
            raise ConversionError(f"--max-vocab applies to word vectors ({', '.join(vectors)}), not to {family}")
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


__all__ = ["Release", "convert", "converter", "published_releases", "read_release"]
