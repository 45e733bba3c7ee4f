"""The word2vec C tool's vector files, text and binary, both ways: ``save_word2vec_format`` and
``load_word2vec_format``, readable and writable by the C tool, gensim and fastText (``.vec``).

Functions of plain words and arrays (the ``WordVectors`` methods of the same names call them), so this module needs
nothing of ``word_vectors``: it is below it, not beside it.
"""

from __future__ import annotations

import mmap
import os
import warnings

import numpy as np

# Lines parsed per numpy conversion when reading the text format (and written per write when saving).
_TEXT_BATCH_LINES = 8192


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
    with open(path, "rb") as f:
        if no_header:
            count, size = None, None
        else:
            count, size = _read_header(f.readline(), path)
        if count is not None and limit is not None:
            count = min(count, limit)
        if binary:
            keys, vectors = _read_binary(f, path, count, size, limit is not None, encoding, unicode_errors)
        else:
            keys, vectors = _read_text(f, path, count, size, limit, encoding, unicode_errors)
    keep = _first_occurrences(keys, path)
    if keep is not None:
        keys, vectors = [keys[i] for i in keep], vectors[keep]
    if not keys:
        raise ValueError(f"{path}: the file holds no vectors (empty vocabulary).")
    counts = None if fvocab is None else _read_counts(fvocab, keys, unicode_errors)
    return keys, vectors, counts


def _read_header(line: bytes, path) -> tuple[int, int]:
    parts = line.split()
    try:
        count, size = (int(p) for p in parts)
        if count < 0 or size < 1:
            raise ValueError
    except ValueError:
        raise ValueError(f"{path}: line 1 should be the header '<count> <dimensions>' (two positive integers); got "
                         f"{line[:80]!r}. Pass no_header=True for a text file without one.") from None
    return count, size


def _read_text(f, path, count, size, limit, encoding, unicode_errors) -> tuple[list[str], np.ndarray]:
    """Text records: lines of ``word v1 ... vd``, converted a batch of lines at a time by one numpy call."""
    keys: list[str] = []
    blocks: list[np.ndarray] = []
    batch: list[list[bytes]] = []  # split lines waiting for conversion
    batch_lines: list[int] = []  # their line numbers, for error messages
    wanted = count if count is not None else limit  # records to read (None: all)

    def flush():
        try:
            blocks.append(np.array([v for parts in batch for v in parts[1:]], dtype=np.float32).reshape(-1, size))
        except ValueError:  # find the line, for the message
            for line_no, parts in zip(batch_lines, batch):
                try:
                    np.array(parts[1:], dtype=np.float32)
                except ValueError:
                    raise ValueError(f"{path}: line {line_no}: non-numeric value in the vector of "
                                     f"{parts[0][:80]!r}.") from None
            raise
        batch.clear()
        batch_lines.clear()

    line_no = 1 if count is not None else 0  # the header is line 1
    for line_no, line in enumerate(f, start=line_no + 1):
        parts = line.split()
        if wanted is not None and len(keys) == wanted:
            if limit is not None:
                break
            if parts:
                raise ValueError(f"{path}: line {line_no}: more records than the {count} the header announces.")
            continue  # trailing blank lines
        if not parts:
            if count is None:
                continue  # blank lines are tolerated in a header-less file
            raise ValueError(f"{path}: line {line_no}: empty line where vector {len(keys) + 1} of {count} "
                             "was expected.")
        if size is None:  # header-less file: the first line gives the dimensions
            size = len(parts) - 1
            if size < 1:
                raise ValueError(f"{path}: line {line_no}: a word with no vector values.")
        if len(parts) != size + 1:
            raise ValueError(f"{path}: line {line_no}: {len(parts) - 1} values for {parts[0][:80]!r}, "
                             f"expected {size}.")
        try:
            keys.append(parts[0].decode(encoding, errors=unicode_errors))
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: line {line_no}: word is not valid {encoding} ({e.reason}); pass "
                             "unicode_errors='ignore' or 'replace' for files cut mid-character by the C tool."
                             ) from None
        batch.append(parts)
        batch_lines.append(line_no)
        if len(batch) == _TEXT_BATCH_LINES:
            flush()
    if batch:
        flush()
    if count is not None and len(keys) < count:
        raise ValueError(f"{path}: the header announces {count} vectors but the file ends after {len(keys)} "
                         f"(line {line_no}); is it truncated, or binary (binary=True)?")
    vectors = np.concatenate(blocks) if blocks else np.zeros((0, size or 1), dtype=np.float32)
    return keys, vectors


def _read_binary(f, path, count, size, limited, encoding, unicode_errors) -> tuple[list[str], np.ndarray]:
    """Binary records: ``word``, a space, ``size`` little-endian float32, optionally a newline (the C tool writes
    one, gensim does not); each vector is copied straight from the (memory-mapped) file with ``np.frombuffer``."""
    record_bytes = 4 * size
    keys: list[str] = []
    vectors = np.empty((count, size), dtype=np.float32)
    header_end = f.tell()
    f.seek(0, os.SEEK_END)
    file_size = f.tell()
    if file_size == header_end:
        if count:
            raise ValueError(f"{path}: the header announces {count} vectors but the file ends after it.")
        return keys, vectors
    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        pos = header_end
        for i in range(count):
            while buf[pos : pos + 1] in (b"\n", b"\r"):  # the newline ending the previous record
                pos += 1
            space = buf.find(b" ", pos, pos + 10_000)
            if space < 0:
                where = "the file ends" if pos >= file_size else "no word ends within 10,000 bytes"
                raise ValueError(f"{path}: record {i + 1} of {count} (byte offset {pos}): {where}; the file is "
                                 "truncated, not binary (binary=False?), or the header count is wrong.")
            if space + 1 + record_bytes > file_size:
                raise ValueError(f"{path}: record {i + 1} of {count} (byte offset {pos}) is truncated: "
                                 f"{file_size - space - 1} bytes left for a {record_bytes}-byte vector.")
            try:
                keys.append(buf[pos:space].decode(encoding, errors=unicode_errors))
            except UnicodeDecodeError as e:
                raise ValueError(f"{path}: record {i + 1} (byte offset {pos}): word is not valid {encoding} "
                                 f"({e.reason}); pass unicode_errors='ignore' or 'replace'.") from None
            vectors[i] = np.frombuffer(buf, dtype="<f4", count=size, offset=space + 1)
            pos = space + 1 + record_bytes
        if not limited and buf[pos:file_size].strip():
            raise ValueError(f"{path}: more data after the {count} records the header announces (byte offset "
                             f"{pos}); is the header count wrong?")
    return keys, vectors


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


def _first_occurrences(keys: list[str], path) -> list[int] | None:
    """Indices keeping each word's first record, or None when no word repeats (gensim keeps the first, too)."""
    seen: dict[str, int] = {}
    keep = [i for i, key in enumerate(keys) if seen.setdefault(key, i) == i]
    if len(keep) == len(keys):
        return None
    duplicated = sorted({keys[i] for i in set(range(len(keys))) - set(keep)})
    warnings.warn(f"{path}: {len(keys) - len(keep)} duplicate word(s) ({', '.join(map(repr, duplicated[:5]))}"
                  f"{', ...' if len(duplicated) > 5 else ''}); keeping the first vector of each.", stacklevel=4)
    return keep
