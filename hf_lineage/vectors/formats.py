"""The word2vec C tool's vector files, text and binary, both ways: ``save_word2vec_format`` and
``load_word2vec_format``, readable and writable by the C tool, gensim and fastText (``.vec``).

Functions of plain words and arrays (the ``WordVectors`` methods of the same names call them), so this module needs
nothing of ``word_vectors``: it is below it, not beside it.

The package's one reader of the format: ``read_binary`` and ``read_text`` read a file into a ``VectorTable``, and
``hf-lineage convert word2vec|glove`` (``convert.word2vec``) reads published releases with them too — gzip streams,
GloVe's header-less text and its words with spaces, the tokenizer's special tokens' rows first — so that converting
GoogleNews (3 M × 300, 3.6 GB) holds its vectors once, in the array the model will own.
"""

from __future__ import annotations

import itertools
import os
import warnings
from collections.abc import Callable, Sequence

import numpy as np

# Lines parsed per numpy conversion when reading the text format (and written per write when saving).
_TEXT_BATCH_LINES = 8192
_READ_CHUNK = 1 << 22  # bytes read at a time: a binary file is streamed (a .bin.gz has no random access)
_MAX_WORD_BYTES = 10_000  # a binary record whose word is longer than this is not a record


def save_word2vec_format(path: str | os.PathLike, keys: list[str], vectors: np.ndarray,
                         counts: np.ndarray | None = None, binary: bool = False, write_header: bool = True,
                         fvocab: str | os.PathLike | None = None) -> None:
    """Writes ``keys`` and their ``vectors`` (N, d) float32 in the C tool's format (see
    ``WordVectors.save_word2vec_format``); ``fvocab`` also writes ``counts``, one ``word count`` line per word."""
    bad = next((k for k in keys if not k or len(k.split()) != 1 or k.split()[0] != k), None)
    if bad is not None:
        raise ValueError(f"word {bad!r} is empty or contains whitespace, which the word2vec format uses as the "
                         "separator: it cannot be saved in this format.")
    if fvocab is not None:
        if counts is None:
            raise ValueError("fvocab asks for the word counts, but these vectors have none (counts=None).")
        with open(fvocab, "w", encoding="utf8") as f:
            f.writelines(f"{key} {count}\n" for key, count in zip(keys, counts.tolist()))
    with open(path, "wb") as f:
        if write_header:
            f.write(f"{len(keys)} {vectors.shape[1]}\n".encode("utf8"))
        if binary:
            little_endian = vectors.astype("<f4", copy=False)
            for start in range(0, len(keys), _TEXT_BATCH_LINES):
                f.write(b"".join(key.encode("utf8") + b" " + row.tobytes() + b"\n" for key, row in
                                 zip(keys[start : start + _TEXT_BATCH_LINES],
                                     little_endian[start : start + _TEXT_BATCH_LINES])))
        else:
            row_format = " ".join(["%.9g"] * vectors.shape[1])
            for start in range(0, len(keys), _TEXT_BATCH_LINES):
                rows = vectors[start : start + _TEXT_BATCH_LINES].tolist()
                f.write("".join(f"{key} {row_format % tuple(row)}\n" for key, row in
                                zip(keys[start : start + _TEXT_BATCH_LINES], rows)).encode("utf8"))


def load_word2vec_format(path: str | os.PathLike, binary: bool = False, limit: int | None = None,
                         encoding: str = "utf8", unicode_errors: str = "strict", no_header: bool = False,
                         fvocab: str | os.PathLike | None = None) -> tuple[list[str], np.ndarray, list[int] | None]:
    """``(keys, vectors, counts)`` read from a file in the C tool's text or binary format (see
    ``WordVectors.load_word2vec_format``); ``counts`` is None without ``fvocab``."""
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a positive number of words; got {limit}.")
    if no_header and binary:
        raise ValueError("no_header is only possible with the text format: a binary file needs its header.")

    def error(message: str) -> ValueError:
        return ValueError(f"{path}: {message}")

    options = dict(error=error, encoding=encoding, unicode_errors=unicode_errors)
    if binary:
        table = read_binary(lambda: open(path, "rb"), limit, **options)
    else:
        table = read_text(lambda: open(path, "rb"), limit, header=not no_header, **options)
    if table.repeated:
        _warn_repeated(path, table.repeated)
    vectors = table.vectors
    if len(vectors) < len(table.array):  # rows left empty by repeated words or blank lines: not kept alive
        vectors = vectors.copy()
    counts = None if fvocab is None else _read_counts(fvocab, table.words, unicode_errors)
    return table.words, vectors, counts


class VectorTable:
    """The words of a vectors file and the one float32 array their vectors are read into, in file order, allocated
    once from the header's count (or the file's lines): never grown, so a file's vectors are held once.

    ``specials`` (a tokenizer's special tokens) own the array's first rows, zero — never trained, and zero rows are
    neutral as a model's first layer — unless a word of the file is spelled like one: it then takes that row
    (``from_gensim``'s rule; GoogleNews's first word is ``</s>``). A repeated word keeps its first vector, as gensim
    keeps it. ``unicode_errors`` other than ``"strict"`` decode a word that is not valid ``encoding`` (the C tool cuts
    long words mid-character) and count it in ``undecodable``."""

    def __init__(self, rows: int, dim: int, specials: Sequence[str] = (), encoding: str = "utf8",
                 unicode_errors: str = "strict"):
        self.specials = list(specials)
        self.array = np.empty((len(self.specials) + rows, dim), dtype=np.float32)
        self.array[: len(self.specials)] = 0
        self.encoding, self.unicode_errors = encoding, unicode_errors
        self.words: list[str] = []  # the file's words that took a row of their own, in file order
        self.special_words: list[str] = []  # words of the file that took a special's row
        self.repeated: list[str] = []  # every later occurrence of a word, its vector dropped
        self.undecodable = 0
        self._seen: set[str] = set()
        self._special_id = {token: i for i, token in enumerate(self.specials)}

    def decode(self, word: bytes) -> str:
        try:
            return word.decode(self.encoding)
        except UnicodeDecodeError:
            if self.unicode_errors == "strict":
                raise
            self.undecodable += 1
            return word.decode(self.encoding, errors=self.unicode_errors)

    def row_for(self, word: str) -> int | None:
        """The row the next vector of the file, ``word``'s, goes to; None for a repeated word."""
        if word in self._seen:
            self.repeated.append(word)
            return None
        self._seen.add(word)
        if word in self._special_id:
            self.special_words.append(word)
            return self._special_id[word]
        self.words.append(word)
        return len(self.specials) + len(self.words) - 1

    @property
    def vectors(self) -> np.ndarray:
        """The filled rows, the specials' first (a view: no copy)."""
        return self.array[: len(self.specials) + len(self.words)]

    def vocabulary(self) -> list[str]:
        """The word of each row of ``vectors``."""
        return self.specials + self.words


def parse_header(line: bytes) -> tuple[int, int] | None:
    """``(count, dim)`` of the C tool's header line ``count dim``, or None when the line is not one."""
    try:
        count, dim = (int(p) for p in line.split())
    except ValueError:
        return None
    return (count, dim) if count >= 0 and dim >= 1 else None


def looks_like_text_record(line: bytes, dim: int | None = None) -> bool:
    """Whether ``line`` reads as a text record ``word v1 ... vd`` (its last ``dim`` fields numbers; any ``dim`` >= 1
    when None): what tells the text format from the binary one after the same header line, and GloVe's header-less
    text from anything else."""
    parts = line.split()
    if len(parts) < 2 or (dim is not None and len(parts) < dim + 1):
        return False
    try:
        np.array(parts[-(dim or 1):], dtype=np.float32)
    except ValueError:
        return False
    return True


def _read_header(line: bytes, error) -> tuple[int, int]:
    header = parse_header(line)
    if header is None:
        raise error(f"line 1 should be the header '<count> <dimensions>' (two positive integers); got {line[:80]!r}. "
                    "Pass no_header=True for a text file without one.")
    return header


def read_binary(open_file: Callable, limit: int | None = None, error: Callable[[str], Exception] = ValueError, *,
                specials: Sequence[str] = (), encoding: str = "utf8", unicode_errors: str = "strict") -> VectorTable:
    """The binary format from ``open_file()`` (a binary stream, gzip's too): a ``count dim`` line, then records
    ``word``, a space, ``dim`` little-endian float32, and a newline the C tool writes and gensim does not. Read a
    chunk at a time, each vector copied from the chunk straight into its row; with ``limit``, the first ``limit``
    records only, and nothing after them is read (as gensim's ``limit``). A malformed file raises ``error(message)``,
    the message naming the record and its byte offset."""
    with open_file() as f:
        first = f.readline()
        count, dim = _read_header(first, error)
        wanted = count if limit is None else min(count, limit)
        table = VectorTable(wanted, dim, specials, encoding, unicode_errors)
        record = 4 * dim
        buf, pos, offset = b"", 0, len(first)  # offset: where buf starts in the file, for the messages
        for i in range(wanted):
            while True:
                while buf[pos : pos + 1] in (b"\n", b"\r"):  # the newline ending the previous record
                    pos += 1
                space = buf.find(b" ", pos, pos + _MAX_WORD_BYTES)
                if space >= 0 and space + 1 + record <= len(buf):
                    break
                chunk = b"" if space < 0 and len(buf) - pos >= _MAX_WORD_BYTES else f.read(_READ_CHUNK)
                if not chunk:  # the file ends (or no word does) before the record does
                    raise error(_no_record(i, count, record, buf, pos, space, offset, len(first)))
                buf, pos, offset = buf[pos:] + chunk, 0, offset + pos
            try:
                row = table.row_for(table.decode(buf[pos:space]))
            except UnicodeDecodeError as e:
                raise error(f"record {i + 1} (byte offset {offset + pos}): word is not valid {encoding} "
                            f"({e.reason}); pass unicode_errors='ignore' or 'replace'.") from None
            if row is not None:
                table.array[row] = np.frombuffer(buf, dtype="<f4", count=dim, offset=space + 1)
            pos = space + 1 + record
        if limit is None and not _only_whitespace_left(buf[pos:], f):
            raise error(f"more data after the {count} records the header announces (byte offset {offset + pos}); is "
                        "the header count wrong?")
    return _not_empty(table, error)


def _no_record(i: int, count: int, record: int, buf: bytes, pos: int, space: int, offset: int, header: int) -> str:
    """Why record ``i`` cannot be read from what is left, ``buf[pos:]``."""
    if offset + len(buf) == header:
        return f"the header announces {count} vectors but the file ends after it."
    if space >= 0:
        return (f"record {i + 1} of {count} (byte offset {offset + pos}) is truncated: {len(buf) - space - 1} bytes "
                f"left for a {record}-byte vector.")
    where = "the file ends" if pos >= len(buf) else f"no word ends within {_MAX_WORD_BYTES:,} bytes"
    return (f"record {i + 1} of {count} (byte offset {offset + pos}): {where}; the file is truncated, a text file "
            "read as binary, or the header count is wrong.")


def _only_whitespace_left(rest: bytes, f) -> bool:
    while not rest.strip():
        rest = f.read(_READ_CHUNK)
        if not rest:
            return True
    return False


def _not_empty(table: VectorTable, error) -> VectorTable:
    if not table.words and not table.special_words:
        raise error("the file holds no vectors (empty vocabulary).")
    return table


def read_text(open_file: Callable, limit: int | None = None, error: Callable[[str], Exception] = ValueError, *,
              header: bool | None = True, spaced_words: bool = False, specials: Sequence[str] = (),
              encoding: str = "utf8", unicode_errors: str = "strict") -> VectorTable:
    """The text format from ``open_file()`` (a binary stream; it is opened twice for a file without a header): lines
    ``word v1 ... vd`` after a ``count dim`` header line — the C tool's; ``header=False``: without it, GloVe's;
    ``header=None``: either, read from line 1. Without a header ``d`` is the number of values most of the first
    lines have, and the lines are counted first so that the array is allocated once. With ``spaced_words`` a word may
    contain spaces (glove.840B's ``at & t``): the vector is the last ``d`` fields of the line, the word everything
    before. Blank lines hold no record and are skipped; a malformed file raises ``error(message)``, the message
    naming the line."""
    with open_file() as f:
        if header is False:
            first, found = b"", None
        else:
            first = f.readline()
            found = _read_header(first, error) if header else parse_header(first)
        if found is not None:
            (count, dim), line_no, pending = found, 1, []
            rows = count if limit is None else min(count, limit)
        else:
            count, line_no, rows = None, 0, _count_lines(open_file, limit)
            pending = ([] if header is False else [first]) + list(itertools.islice(f, 100 - (header is not False)))
            dim = _guess_dimensions(pending, error)
        table = VectorTable(rows, dim, specials, encoding, unicode_errors)
        records, line_no = _read_text_records(itertools.chain(pending, f), table, rows, count, limit, line_no,
                                              spaced_words, error)
        if count is not None and records < rows:
            raise error(f"the header announces {count} vectors but the file ends after {records} (line {line_no}); "
                        "is it truncated, or a binary file read as text?")
    return _not_empty(table, error)


def _count_lines(open_file: Callable, limit: int | None) -> int:
    """Lines of the file (at most ``limit``): how many rows a header-less file can need."""
    lines, tail = 0, b""
    with open_file() as f:
        while chunk := f.read(_READ_CHUNK):
            lines += chunk.count(b"\n")
            tail = chunk[-1:]
            if limit is not None and lines >= limit:
                return limit
    return lines + (1 if tail not in (b"", b"\n") else 0)


def _guess_dimensions(lines: list[bytes], error) -> int:
    """The number of values most of ``lines`` have: a header-less file does not say, and a line of glove.840B may
    hold a word with spaces."""
    fields = [(line_no, len(line.split()) - 1) for line_no, line in enumerate(lines, start=1) if line.strip()]
    if not fields:
        raise error("the file holds no vectors (empty vocabulary).")
    counts = [n for _, n in fields]
    dim = max(set(counts), key=counts.count)
    if dim < 1:
        raise error(f"line {next(no for no, n in fields if n < 1)}: a word with no vector values.")
    return dim


def _split_record(line: bytes, dim: int, spaced_words: bool) -> tuple[bytes | None, bytes, int]:
    """``(word, values as text, number of values)`` of a text line; ``word`` None for a blank line."""
    if spaced_words:
        line = line.rstrip()  # the C tool ends each line with a space
        if line.count(b" ") > dim:  # a word with spaces in it
            word = line.rsplit(b" ", dim)[0]
        else:
            word = line.partition(b" ")[0]
        text = line[len(word) + 1 :]
        return (word, text, len(text.split())) if line else (None, b"", 0)
    parts = line.split()
    if not parts:
        return None, b"", 0
    return parts[0], line[line.find(parts[0]) + len(parts[0]) :], len(parts) - 1


def _read_text_records(lines, table: VectorTable, rows: int, count: int | None, limit: int | None, line_no: int,
                       spaced_words: bool, error) -> tuple[int, int]:
    """Reads the records of ``lines`` into ``table``, a batch of lines per numpy conversion; ``(records read, number
    of the last line)``."""
    dim = table.array.shape[1]
    records, batch = 0, []  # batch: (line number, word, values as text, row) of the lines waiting for conversion
    for line_no, line in enumerate(lines, start=line_no + 1):
        word, text, values = _split_record(line, dim, spaced_words)
        if word is None:
            continue
        if records == rows:
            if limit is not None:
                break
            raise error(f"line {line_no}: more records than the {count} the header announces."
                        if count is not None else f"line {line_no}: the file grew while it was read.")
        if values != dim:
            raise error(f"line {line_no}: {values} values for {word[:80]!r}, expected {dim}.")
        try:
            row = table.row_for(table.decode(word))
        except UnicodeDecodeError as e:
            raise error(f"line {line_no}: word is not valid {table.encoding} ({e.reason}); pass unicode_errors="
                        "'ignore' or 'replace' for files cut mid-character by the C tool.") from None
        batch.append((line_no, word, text, row))
        records += 1
        if len(batch) == _TEXT_BATCH_LINES:
            _convert_batch(batch, table, error)
    if batch:
        _convert_batch(batch, table, error)
    return records, line_no


def _convert_batch(batch: list, table: VectorTable, error) -> None:
    """The values of a batch of lines into their rows, by one numpy call; then ``batch`` is empty. Every line has
    ``dim`` fields: as many numbers as fields, and no failure, means each field was one number."""
    size = len(batch) * table.array.shape[1]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy stops at a non-number with a warning (an error in 2.x)
            vectors = np.fromstring(b" ".join(text for _, _, text, _ in batch), dtype=np.float32, sep=" ")
        if vectors.size != size:
            raise ValueError
    except (ValueError, DeprecationWarning):
        try:  # the slower parser takes a few spellings fromstring does not ("1_000"); the same float32 otherwise
            vectors = np.array([v for _, _, text, _ in batch for v in text.split()], dtype=np.float32)
        except ValueError:  # find the line, for the message
            for line_no, word, text, _ in batch:
                try:
                    np.array(text.split(), dtype=np.float32)
                except ValueError:
                    raise error(f"line {line_no}: non-numeric value in the vector of {word[:80]!r}.") from None
            raise
    rows = np.array([-1 if row is None else row for *_, row in batch], dtype=np.int64)
    keep = rows >= 0
    table.array[rows[keep]] = vectors.reshape(len(batch), -1)[keep]
    batch.clear()


def _warn_repeated(path, repeated: list[str]) -> None:
    """gensim keeps the first vector of a repeated word, too; the warning says which words lost one."""
    duplicated = sorted(set(repeated))
    warnings.warn(f"{path}: {len(repeated)} duplicate word(s) ({', '.join(map(repr, duplicated[:5]))}"
                  f"{', ...' if len(duplicated) > 5 else ''}); keeping the first vector of each.", stacklevel=4)


def _read_counts(fvocab, keys: list[str], unicode_errors: str) -> list[int]:
    """The counts of ``keys`` from a ``word count`` per line file."""
    counts = {}
    with open(fvocab, encoding="utf8", errors=unicode_errors) as f:
        for line_no, line in enumerate(f, start=1):
            parts = line.split()
            if not parts:
                continue
            try:
                word, count = parts
                counts.setdefault(word, int(count))
            except ValueError:
                raise ValueError(f"{fvocab}: line {line_no} should be 'word count'; got {line[:80]!r}.") from None
    missing = [k for k in keys if k not in counts]
    if missing:
        raise ValueError(f"{fvocab}: no count for {len(missing)} word(s) of the vectors file, e.g. {missing[:5]}.")
    return [counts[k] for k in keys]
