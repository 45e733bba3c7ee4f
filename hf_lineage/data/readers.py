"""Readers for the task data formats the recipes take: CoNLL-2003, CoNLL-U, GLUE TSV, TREC, parallel text, E2E CSV,
and ``read_file``, which picks the reader for a file by its name, then its header, then its first lines:

==========================================  ====================================================================
file                                        read as
==========================================  ====================================================================
``*.conllu``                                CoNLL-U (Universal Dependencies): FORM and a tag column
                                            (``conllu_column``, default UPOS)
``*.conll``, ``eng.*``, ``deu.*``           CoNLL-2003: word and NER tag (IOB1 converted to IOB2;
                                            ``conll_tag_column=1`` for POS)
``*.tsv`` with GLUE's header                GLUE TSV (SST-2, MRPC with its byte-order mark, RTE, ...)
``*.csv`` with ``mr`` and ``ref`` columns   E2E NLG (one row per reference)
other ``*.csv``/``*.tsv``/``*.json(l)``     a table, read as transformers' examples read it
any other name, by content                  CoNLL-U; CoNLL-2003 (``-DOCSTART-`` or IOB tags in the last column,
                                            e.g. ``train.txt``); TREC (``COARSE:fine question`` lines,
                                            ``train_5500.label``; ``trec_labels="coarse"|"fine"``)
``PREFIX`` with ``languages=("de", "en")``  parallel text ``PREFIX.de`` / ``PREFIX.en`` (Multi30k)
a folder of ``seq.in``, ``seq.out``,        intent and slots (``read_intent_and_slots``; ATIS / SNIPS as Goo et
``label``; ``.jsonl`` of ``words``,         al. 2018 and JointBERT ship them, or JSON lines) → ``words``,
``slots``, ``intent``                       ``slots``, ``intent``
==========================================  ====================================================================

Each returns a ``datasets.Dataset`` whose columns are the ones transformers' example scripts use — ``tokens`` and
``tags`` for sequence labeling, ``sentence`` or ``sentence1``/``sentence2`` and ``label`` for classification,
``source``/``target`` for generation — so a local CSV/JSON file with those columns and these formats go through the
same code. A malformed line raises ``DataFormatError`` (a ValueError) naming the file and the line.

Example::

    >>> from hf_lineage.data.readers import read_conll2003, read_file, read_glue_tsv
    >>> ner = read_conll2003("conll2003/eng.train")          # doctest: +SKIP
    >>> ner[0]["tokens"], ner[0]["tags"]                       # doctest: +SKIP
    (['EU', 'rejects', 'German', 'call', ...], ['B-ORG', 'O', 'B-MISC', 'O', ...])
    >>> read_glue_tsv("glue_mrpc/train.tsv").column_names     # doctest: +SKIP
    ['label', 'sentence1', 'sentence2']
    >>> read_file("trec/train_5500.label", trec_labels="fine")[0]["label"]  # doctest: +SKIP
    'DESC:manner'
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import datasets


class DataFormatError(ValueError):
    """A data file that does not have the format it was read as; the message names the file and line."""

    def __init__(self, path, line_number: int | None, problem: str):
        where = f"{path}:{line_number}" if line_number is not None else str(path)
        super().__init__(f"{where}: {problem}")


def _lines(path):
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    # utf-8-sig drops a byte-order mark (GLUE's MRPC files start with one).
    with open(path, encoding="utf-8-sig") as f:
        for number, line in enumerate(f, start=1):
            yield number, line.rstrip("\n").rstrip("\r")


def _dataset(rows: list[dict], path, what: str) -> datasets.Dataset:
    if not rows:
        raise DataFormatError(path, None, f"no {what} found (empty file?)")
    return datasets.Dataset.from_list(rows)


# --- sequence labeling --------------------------------------------------------------------------------------------


def iob1_to_iob2(tags: list[str]) -> list[str]:
    """IOB1 (``I-`` starts a chunk unless it follows the same type; ``B-`` only between adjacent chunks of one type,
    as in CoNLL-2003's files) → IOB2 (every chunk starts with ``B-``), the scheme seqeval scores by default.

    >>> iob1_to_iob2(["I-ORG", "I-ORG", "O", "I-PER", "B-PER"])
    ['B-ORG', 'I-ORG', 'O', 'B-PER', 'B-PER']
    """
    out, previous = [], "O"
    for tag in tags:
        if tag.startswith("I-") and (previous == "O" or previous[2:] != tag[2:]):
            tag = "B-" + tag[2:]
        out.append(tag)
        previous = tag
    return out


def read_conll2003(path, tag_column: int = 3, scheme: str = "IOB2") -> datasets.Dataset:
    """CoNLL-2003 (``word POS chunk NER`` per line, blank lines between sentences, ``-DOCSTART-`` lines between
    documents) → ``tokens``, ``tags`` (the NER column by default, converted from the files' IOB1 to IOB2; pass
    ``scheme="IOB1"`` to keep it, ``tag_column=1`` for POS)."""
    rows, tokens, tags, columns = [], [], [], None
    for number, line in _lines(path):
        if not line.strip():
            if tokens:
                rows.append({"tokens": tokens, "tags": iob1_to_iob2(tags) if scheme == "IOB2" else tags})
            tokens, tags = [], []
            continue
        fields = line.split()
        if fields[0] == "-DOCSTART-":
            continue
        if columns is None:
            columns = len(fields)
            if columns <= tag_column:
                raise DataFormatError(path, number, f"{columns} columns, but the tags are read from column "
                                                    f"{tag_column + 1}; is this a CoNLL-2003 file?")
        if len(fields) != columns:
            raise DataFormatError(path, number, f"expected {columns} space-separated columns like the lines "
                                                f"before, found {len(fields)}: {line!r}")
        tokens.append(fields[0])
        tags.append(fields[tag_column])
    if tokens:
        rows.append({"tokens": tokens, "tags": iob1_to_iob2(tags) if scheme == "IOB2" else tags})
    return _dataset(rows, path, "sentences")


CONLLU_COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")


def read_conllu(path, column: str = "upos") -> datasets.Dataset:
    """CoNLL-U (Universal Dependencies) → ``tokens`` (FORM) and ``tags`` (UPOS by default, any column by name).
    Comment lines, multi-word token ranges (``3-4``) and empty nodes (``5.1``) are skipped: tags belong to the
    syntactic words."""
    if column not in CONLLU_COLUMNS:
        raise ValueError(f"column must be one of {CONLLU_COLUMNS}, got {column!r}")
    index = CONLLU_COLUMNS.index(column)
    rows, tokens, tags = [], [], []
    for number, line in _lines(path):
        if not line.strip():
            if tokens:
                rows.append({"tokens": tokens, "tags": tags})
            tokens, tags = [], []
            continue
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 10:
            raise DataFormatError(path, number, f"a CoNLL-U word line has 10 tab-separated columns, found "
                                                f"{len(fields)}: {line!r}")
        if "-" in fields[0] or "." in fields[0]:
            continue
        tokens.append(fields[1])
        tags.append(fields[index])
    if tokens:
        rows.append({"tokens": tokens, "tags": tags})
    return _dataset(rows, path, "sentences")


# --- classification and sentence pairs ----------------------------------------------------------------------------

# GLUE's column names → the recipes' ones; columns not listed (ids, indices) are dropped.
GLUE_COLUMNS = {
    "sentence": "sentence", "label": "label", "Quality": "label", "#1 String": "sentence1",
    "#2 String": "sentence2", "sentence1": "sentence1", "sentence2": "sentence2", "question": "sentence1",
    "question1": "sentence1", "question2": "sentence2", "premise": "sentence1", "hypothesis": "sentence2",
}


def read_glue_tsv(path) -> datasets.Dataset:
    """A GLUE task's TSV (SST-2, MRPC, RTE, ...; header row, MRPC's byte-order mark tolerated) → ``sentence`` or
    ``sentence1``/``sentence2``, and ``label`` when the file has labels (GLUE's unlabeled test files do not).
    Labels stay as the file writes them (``0``/``1``, ``entailment``/``not_entailment``); the recipes map names to
    ids. Text is taken verbatim: GLUE's quotes are not CSV quoting."""
    lines = _lines(path)
    try:
        _, header = next(lines)
    except StopIteration:
        raise DataFormatError(path, None, "empty file") from None
    names = header.split("\t")
    keep = {i: GLUE_COLUMNS[name] for i, name in enumerate(names) if name in GLUE_COLUMNS}
    if not any(v.startswith("sentence") for v in keep.values()):
        raise DataFormatError(path, 1, f"no text column in the header {names}; expected GLUE columns such as "
                                       "'sentence', 'sentence1'/'sentence2' or '#1 String'/'#2 String'")
    rows = []
    for number, line in lines:
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != len(names):
            raise DataFormatError(path, number, f"{len(fields)} tab-separated fields, the header has {len(names)}")
        rows.append({keep[i]: fields[i] for i in keep})
    return _dataset(rows, path, "examples")


# TREC question classification (Li & Roth 2002): ``COARSE:fine question words`` per line.
TREC_LINE = re.compile(r"([A-Z]+):(\S+) (.*\S.*)")
TREC_LABELS = ("coarse", "fine")


def read_trec(path, labels: str = "coarse") -> datasets.Dataset:
    """TREC question classification as distributed (``train_5500.label``, ``TREC_10.label``; one
    ``COARSE:fine question`` per line, e.g. ``DESC:manner How did serfdom develop in and then leave Russia ?``) →
    ``sentence``, ``label``: the coarse class (``DESC``, TREC-6) or, with ``labels="fine"``, the whole
    ``DESC:manner`` (TREC-50; fine names such as ``other`` recur under several coarse classes).

    The original training file is not valid UTF-8 (one Latin-1 byte), so a line that is not UTF-8 is read as
    Latin-1."""
    if labels not in TREC_LABELS:
        raise ValueError(f"TREC labels must be one of {TREC_LABELS}, got {labels!r}")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    rows = []
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError:
                line = raw.decode("latin-1")
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            match = TREC_LINE.fullmatch(line)
            if match is None:
                raise DataFormatError(path, number, f"a TREC line is 'COARSE:fine question', e.g. 'DESC:manner How "
                                                    f"did serfdom develop ?'; found {line!r}")
            coarse, fine, question = match.groups()
            rows.append({"sentence": question, "label": coarse if labels == "coarse" else f"{coarse}:{fine}"})
    return _dataset(rows, path, "questions")


def sniff_format(path, max_lines: int = 50) -> str | None:
    """The format of a data file whose name does not say it, from its first lines: ``"conllu"``, ``"conll2003"``,
    ``"trec"`` or None. CoNLL-2003 is usually distributed as ``train.txt``, TREC as ``train_5500.label``.

    * CoNLL-U: ``# sent_id``/``# text`` comments or word lines of 10 tab-separated columns starting with an id;
    * CoNLL-2003: a ``-DOCSTART-`` line, or lines of the same number (at least 2) of space-separated columns whose
      last is an IOB tag (``O``, ``B-X``, ``I-X``) — so a POS-tagged file without NER needs ``.conll`` in its name;
    * TREC: every line ``COARSE:fine question``.
    """
    lines = []
    with open(path, "rb") as f:
        for raw in f:
            line = raw.decode("utf-8", errors="replace").lstrip("\ufeff").rstrip("\r\n")
            if line.strip():
                lines.append(line)
            if len(lines) >= max_lines:
                break
    if not lines:
        return None
    words = [line for line in lines if not line.startswith("#")]
    if any(line.startswith(("# sent_id", "# text")) for line in lines) or (words and all(
            len(line.split("\t")) == 10 and re.fullmatch(r"\d+([-.]\d+)?", line.split("\t")[0]) for line in words)):
        return "conllu"
    if all(TREC_LINE.fullmatch(line) for line in lines):
        return "trec"
    if lines[0].startswith("-DOCSTART-"):
        return "conll2003"
    widths = {len(line.split()) for line in lines}
    if len(widths) == 1 and widths.pop() >= 2 and all(
            re.fullmatch(r"O|[BIES]-\S+", line.split()[-1]) for line in lines):
        return "conll2003"
    return None


# --- generation ---------------------------------------------------------------------------------------------------


def read_parallel_text(source_path, target_path) -> datasets.Dataset:
    """Two line-aligned files (Multi30k's ``train.de`` / ``train.en``) → ``source``, ``target``."""
    sources = [line for _, line in _lines(source_path)]
    targets = [line for _, line in _lines(target_path)]
    if len(sources) != len(targets):
        raise DataFormatError(target_path, None, f"{len(targets)} lines, but {source_path} has {len(sources)}; "
                                                 "parallel files must be line-aligned")
    return _dataset([{"source": s, "target": t} for s, t in zip(sources, targets)], source_path, "sentence pairs")


def read_e2e_csv(path) -> datasets.Dataset:
    """The E2E NLG challenge's CSV (``mr``: meaning representation, ``ref``: one human reference per row) →
    ``source`` (the MR), ``target`` (the reference). An MR with several references appears once per reference."""
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None or not {"mr", "ref"} <= set(reader.fieldnames):
            raise DataFormatError(path, 1, f"expected the columns 'mr' and 'ref', found {reader.fieldnames}")
        rows = []
        for row in reader:
            if row["mr"] is None or row["ref"] is None:
                raise DataFormatError(path, reader.line_num, "missing the 'mr' or 'ref' field")
            rows.append({"source": row["mr"], "target": row["ref"]})
    return _dataset(rows, path, "examples")


def read_table(path) -> datasets.Dataset:
    """A local CSV, TSV or JSON(-lines) file, read the way transformers' example scripts read ``--train_file``."""
    suffix = Path(path).suffix.lower()
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    if os.path.getsize(path) == 0:
        raise DataFormatError(path, None, "empty file")
    if suffix in (".json", ".jsonl"):
        return datasets.load_dataset("json", data_files=str(path), split="train")
    if suffix in (".csv", ".tsv"):
        return datasets.load_dataset("csv", data_files=str(path), split="train",
                                     delimiter="\t" if suffix == ".tsv" else ",")
    raise DataFormatError(path, None, f"unsupported extension {suffix!r}; use .csv, .tsv, .json or .jsonl")


# --- any file, by its name and content ----------------------------------------------------------------------------


def read_file(path, conllu_column: str = "upos", conll_tag_column: int = 3, trec_labels: str = "coarse",
              languages: tuple[str, str] | None = None) -> datasets.Dataset:
    """A task-data file read by the reader its name, header or first lines call for (the module docstring's table).

    ``conllu_column``, ``conll_tag_column`` and ``trec_labels`` go to the CoNLL-U, CoNLL-2003 and TREC readers.
    ``languages=(source, target)``: a ``path`` that is not a file is the prefix of parallel text files
    ``path.source`` and ``path.target``."""
    if languages is not None and not os.path.isfile(path):
        source, target = (f"{path}.{language}" for language in languages)
        if os.path.isfile(source):
            return read_parallel_text(source, target)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    if os.path.getsize(path) == 0:
        raise DataFormatError(path, None, "empty file")
    name, suffix = Path(path).name.lower(), Path(path).suffix.lower()
    if suffix == ".conllu":
        return read_conllu(path, column=conllu_column)
    if suffix == ".conll" or name.startswith(("eng.", "deu.")):
        return read_conll2003(path, tag_column=conll_tag_column)
    if suffix in (".tsv", ".csv"):
        with open(path, encoding="utf-8-sig") as f:
            header = f.readline().rstrip("\r\n")
        if suffix == ".tsv" and any(column in GLUE_COLUMNS for column in header.split("\t")):
            return read_glue_tsv(path)
        if suffix == ".csv" and {"mr", "ref"} <= {c.strip().strip('"') for c in header.split(",")}:
            return read_e2e_csv(path)
    if suffix in (".tsv", ".csv", ".json", ".jsonl"):
        return read_table(path)
    # Other names (CoNLL-2003 comes as train.txt, TREC as train_5500.label): the first lines say what it is.
    sniffed = sniff_format(path)
    if sniffed == "conllu":
        return read_conllu(path, column=conllu_column)
    if sniffed == "conll2003":
        return read_conll2003(path, tag_column=conll_tag_column)
    if sniffed == "trec":
        return read_trec(path, labels=trec_labels)
    raise DataFormatError(
        path, None, f"unknown format {suffix or name!r}, and the first lines are not CoNLL-2003, CoNLL-U or TREC: "
                    "expected .conll/eng.* (CoNLL-2003), .conllu, .tsv (GLUE), .csv (E2E or a table), .json/.jsonl, "
                    "or a parallel-text prefix with --source_lang/--target_lang")


# --- joint intent classification and slot filling ----------------------------------------------------------------

# The files of the folder format of Goo et al. (2018) and JointBERT's ATIS / SNIPS copies, line-aligned: utterance
# words, their BIO slot tags, the intent.
INTENT_AND_SLOTS_FILES = ("seq.in", "seq.out", "label")


def read_intent_and_slots_folder(path) -> datasets.Dataset:
    """ATIS / SNIPS as Goo et al. (2018) and JointBERT ship them: a folder (or its ``seq.in``) holding the
    line-aligned files ``seq.in`` (the words of one utterance per line, space-separated), ``seq.out`` (a BIO tag per
    word) and ``label`` (the intent) → ``words``, ``slots``, ``intent``. Different line counts or a line whose
    word and tag counts differ raise ``DataFormatError`` naming the file and line."""
    folder = Path(path).parent if Path(path).name == "seq.in" else Path(path)
    missing = [name for name in INTENT_AND_SLOTS_FILES if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder}: no {', '.join(missing)} (an intent-and-slots folder holds "
                                f"{', '.join(INTENT_AND_SLOTS_FILES)}, line-aligned)")
    words, tags, intents = ([line for _, line in _lines(folder / name)] for name in INTENT_AND_SLOTS_FILES)
    for name, lines in (("seq.out", tags), ("label", intents)):
        if len(lines) != len(words):
            raise DataFormatError(folder / name, None, f"{len(lines)} lines, but {folder / 'seq.in'} has "
                                                       f"{len(words)}; the files must be line-aligned")
    rows = []
    for number, (utterance, tagging, intent) in enumerate(zip(words, tags, intents), start=1):
        rows.append(_intent_and_slots_row(utterance.split(), tagging.split(), intent.strip(), number,
                                          folder / "seq.in", folder / "seq.out", folder / "label"))
    return _dataset(rows, folder / "seq.in", "utterances")


def read_intent_and_slots_jsonl(path) -> datasets.Dataset:
    """One ``{"words": [...], "slots": [...], "intent": "..."}`` per line → ``words``, ``slots``, ``intent``
    (``tokens`` / ``tags`` are read as ``words`` / ``slots``; ``slots`` and ``intent`` may be missing from every
    line of a file to predict on). A malformed line, or one whose word and tag counts differ, raises
    ``DataFormatError`` naming the file and line."""
    import json

    rows = []
    for number, line in _lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataFormatError(path, number, f"not JSON ({error.msg})") from None
        if not isinstance(record, dict):
            raise DataFormatError(path, number, "expected an object {\"words\": [...], \"slots\": [...], "
                                                "\"intent\": ...}")
        words = record.get("words", record.get("tokens"))
        tags = record.get("slots", record.get("tags"))
        if not isinstance(words, list) or not words or not all(isinstance(w, str) for w in words):
            raise DataFormatError(path, number, "'words' must be a non-empty list of strings")
        if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)):
            raise DataFormatError(path, number, "'slots' must be a list of strings (one BIO tag per word)")
        intent = record.get("intent")
        if intent is not None and not isinstance(intent, str):
            raise DataFormatError(path, number, f"'intent' must be a string, got {intent!r}")
        rows.append(_intent_and_slots_row(words, tags, intent, number, path, path, path))
    has = {key: [row[key] is not None for row in rows] for key in ("slots", "intent")}
    for key, present in has.items():
        if any(present) and not all(present):
            number = present.index(False) + 1
            raise DataFormatError(path, None, f"utterance {number} has no {key!r}, others have: give it on every "
                                              "line or on none")
        if not any(present):
            for row in rows:
                del row[key]
    return _dataset(rows, path, "utterances")


def _intent_and_slots_row(words, tags, intent, number, words_path, tags_path, intent_path) -> dict:
    if not words:
        raise DataFormatError(words_path, number, "an empty utterance")
    if tags is not None and len(tags) != len(words):
        raise DataFormatError(tags_path, number, f"{len(tags)} slot tags for {len(words)} words")
    if intent is not None and not intent:
        raise DataFormatError(intent_path, number, "no intent")
    return {"words": list(words), "slots": None if tags is None else list(tags), "intent": intent}


def read_intent_and_slots(path) -> datasets.Dataset:
    """Intent-and-slots data in either format: a folder or ``seq.in`` file (Goo et al. 2018 / JointBERT), or a
    ``.json``/``.jsonl`` file of ``{"words", "slots", "intent"}`` lines."""
    if os.path.isdir(path) or Path(path).name == "seq.in":
        return read_intent_and_slots_folder(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file or folder")
    if Path(path).suffix.lower() in (".json", ".jsonl"):
        return read_intent_and_slots_jsonl(path)
    raise DataFormatError(path, None, "not an intent-and-slots file: expected a folder holding seq.in, seq.out and "
                                      "label (ATIS / SNIPS as Goo et al. 2018 ship them) or a .jsonl file of "
                                      "{\"words\", \"slots\", \"intent\"} lines")
