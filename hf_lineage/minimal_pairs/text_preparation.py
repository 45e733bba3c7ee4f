"""Each model reads a minimal pair's sentences as its pre-training text was written, and this module is the one place
that decides how.

BLiMP's sentences are plain English (``Mary doesn't like herself.``). The shipped checkpoints were pretrained on
WikiText-2's tokenized release, whose text is split differently, and a model scored on text written otherwise meets
words it never saw (``herself.``, ``doesn't``: out of a word-level vocabulary, so ``<unk>``). Two styles:

``wikitext``  WikiText's tokenization, as its files show it (``wiki.train.tokens``): punctuation split from words
              (``herself .``), clitics split *at the apostrophe* (``doesn 't``, ``can 't``, ``Mary 's``; the file
              holds ``doesn 't`` 54 times and ``does n't`` never), a plural possessive's apostrophe alone
              (``students '``), hyphens, commas and points inside words and numbers as ``@-@``, ``@,@``, ``@.@``
              (``ex @-@ wives``, ``1 @,@ 000``). Words are joined by single spaces after a leading space, as each
              WikiText line starts (byte-level BPE reads ``Ġword`` for a word after a space).
``raw``       the sentence as it is: what a model pretrained on ordinary text (GPT-2, BERT's releases) reads, through
              its own tokenizer.

Case is not changed here: every tokenizer of the package lowercases by itself exactly when its pre-training did (BERT's
``BertNormalizer(lowercase=True)``, the word-level and ELMo tokenizers' ``lowercase`` option), so the shipped BERT
reads ``mary`` and the shipped NNLM, ELMo and GPT read ``Mary``, as in pre-training (``lowercases`` reports which).

Which style a model gets (``text_style``): ``--text-format`` when it is given; else the folder's own record: a
``"text_format"`` entry in its ``pretraining.json``, or a pre-training corpus that is WikiText (the record's corpus
files, dataset, name or license, or the card's ``datasets``: ``wiki.train.tokens``, ``Salesforce/wikitext``, the
embedded WikiText-2 sample ``corpus.train.txt``); anything else (a Hub model, a converted release) reads ``raw``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

STYLES = ("wikitext", "raw")

# Punctuation WikiText writes as a token of its own when it leads or ends a word.
_LEADING = "\"'([{“‘"
_TRAILING = ".,;:!?\"')]}”’"
_CLITIC = re.compile(r"^(.+?)('(?:[A-Za-z]+))$")  # can't -> can 't, Mary's -> Mary 's, they're -> they 're
_INSIDE = re.compile(r"(?<=[^\W_])([-,.])(?=[^\W_])")  # ex-wives, 1,000, 3.5 (between letters or digits)
_WIKITEXT_NAME = re.compile(r"wikitext|wiki\.(train|valid|test)\.tokens|^corpus\.(train|validation)\.txt$", re.I)


def wikitext_words(sentence: str) -> list[str]:
    """A sentence as WikiText's tokenized release writes it, word by word.

    >>> wikitext_words("Mary doesn't like the students' ex-wives.")
    ['Mary', 'doesn', "'t", 'like', 'the', 'students', "'", 'ex', '@-@', 'wives', '.']
    >>> wikitext_words('It cost 1,000 dollars, (roughly) 3.5 "units"?')
    ['It', 'cost', '1', '@,@', '000', 'dollars', ',', '(', 'roughly', ')', '3', '@.@', '5', '"', 'units', '"', '?']
    """
    words = []
    for raw in sentence.split():
        leading, trailing = [], []
        while len(raw) > 1 and raw[0] in _LEADING:
            leading.append(raw[0])
            raw = raw[1:]
        while raw and raw[-1] in _TRAILING and (len(raw) > 1 or not (leading or trailing)):
            if raw[-1] == "'" and len(raw) > 1 and not raw[-2].isalpha():
                break
            trailing.insert(0, raw[-1])
            raw = raw[:-1]
        core = []
        if raw:
            clitic = _CLITIC.match(raw)
            parts = [clitic.group(1), clitic.group(2)] if clitic else [raw]
            for part in parts:
                core += [f"@{piece}@" if i % 2 else piece for i, piece in enumerate(_INSIDE.split(part)) if piece]
        words += leading + core + trailing
    return words


def prepare(sentence: str, style: str) -> str:
    """The text a model of ``style`` reads for ``sentence`` (see the module docstring).

    >>> prepare("Mary doesn't like herself.", "wikitext")
    " Mary doesn 't like herself ."
    >>> prepare("Mary doesn't like herself.", "raw")
    "Mary doesn't like herself."
    """
    if style == "wikitext":
        return " " + " ".join(wikitext_words(sentence))
    if style == "raw":
        return sentence
    raise ValueError(f"unknown text format {style!r}; choose from {', '.join(STYLES)}")


def describe(style: str) -> str:
    """The style in words, for the report."""
    if style == "wikitext":
        return ("WikiText's tokenization: punctuation split, clitics split at the apostrophe (doesn't → doesn 't), "
                "@-@ inside words")
    return "the sentence as it is (the model's own tokenizer)"


def _wikitext_entry(values) -> str | None:
    """The first of a record's corpus entries (file names, ``LANG=FILE``, a dataset id, a name, a license) that
    names WikiText; None when none does."""
    for value in values:
        if isinstance(value, str) and value:
            name = value.split("=", 1)[-1]
            if _WIKITEXT_NAME.search(Path(name).name) or "wikitext" in name.lower():
                return value
    return None


def recorded_style(folder) -> tuple[str, str]:
    """(style, why) from what a pretrained folder records of its pre-training text; ``raw`` when it records none."""
    folder = Path(folder)
    record_file = folder / "pretraining.json"
    if record_file.is_file():
        try:
            record = json.loads(record_file.read_text(encoding="utf-8"))
        except ValueError:
            record = {}
        if record.get("text_format") in STYLES:
            return record["text_format"], f"pretraining.json: text_format {record['text_format']!r}"
        corpus = record.get("corpus") or {}
        if isinstance(corpus, dict):
            values = [*(corpus.get("files") or []), corpus.get("dataset"), corpus.get("name"), corpus.get("license")]
            entry = _wikitext_entry(values)
            if entry:
                return "wikitext", f"pretrained on WikiText (pretraining.json's corpus: {entry})"
    card = folder / "README.md"
    if card.is_file():
        head = card.read_text(encoding="utf-8", errors="replace").split("\n---", 1)[0]
        datasets = re.findall(r"^- (\S+)$", head, flags=re.M)
        entry = _wikitext_entry(datasets)
        if entry:
            return "wikitext", f"pretrained on WikiText (the model card's datasets: {entry})"
    return "raw", "no WikiText pre-training recorded: the sentence as it is"


def text_style(folder=None, given: str = "auto") -> tuple[str, str]:
    """(style, why) for a model: ``given`` unless it is ``auto``; else the folder's record (``raw`` without one)."""
    if given != "auto":
        if given not in STYLES:
            raise ValueError(f"unknown text format {given!r}; choose from auto, {', '.join(STYLES)}")
        return given, f"--text-format {given}"
    if folder is None:
        return "raw", "a Hub model: the sentence as it is"
    return recorded_style(folder)


def corpus_style(files=None) -> tuple[str, str]:
    """(style, why) of a text an n-gram model is trained on: ``wikitext`` for the embedded WikiText-2 sample
    (``files`` None) or a file with WikiText's article headings in its first 1,000 lines, else ``raw``."""
    if not files:
        return "wikitext", "trained on the WikiText-2 sample the package embeds"
    from itertools import islice

    from ..data.next_sentence import looks_like_wikitext

    for name in files:
        with open(name, encoding="utf-8") as f:
            if looks_like_wikitext(islice(f, 1000)):
                return "wikitext", f"trained on WikiText ({Path(name).name} has its article headings)"
    return "raw", "the training text is not WikiText: the sentence as it is, words split at spaces"


def lowercases(tokenizer) -> bool:
    """Whether a tokenizer lowercases its input (it reads ``The`` as it reads ``the``)."""
    def ids(text):
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    return ids(" The cat") == ids(" the cat")
