"""A trained gensim ``Word2Vec`` as a lineage word2vec model and its word-level tokenizer.

    >>> from gensim.models import Word2Vec                                          # doctest: +SKIP
    >>> from hf_lineage.convert.word2vec import from_gensim
    >>> model, tokenizer = from_gensim(Word2Vec(sentences, sg=1, negative=5))        # doctest: +SKIP
    >>> model.save_pretrained("w2v"); tokenizer.save_pretrained("w2v")              # doctest: +SKIP
    >>> hf_lineage.WordVectors.from_pretrained("w2v").most_similar("king")          # doctest: +SKIP

What maps to what (gensim 4 → lineage):

* vocabulary: the tokenizer's specials ``<pad>=0 <unk>=1 <s>=2 </s>=3`` first, then gensim's words in gensim's
  order (ids shifted by 4); the tokenizer stores the counts as ``train_wordlevel_tokenizer`` does (``<unk>`` counts
  the corpus words gensim dropped, ``corpus_total_words`` minus the kept words' counts);
* ``wv.vectors`` → ``word2vec.input_vectors``, ``syn1neg`` → ``output_vectors`` (negative > 0), ``syn1`` →
  ``inner_node_vectors`` (hs); the specials' rows are zeros in every matrix (never trained, as in our training);
* ``word_counts``: gensim's counts, 0 for the specials, so the Huffman tree and the noise distribution rebuilt from
  them are gensim's and training can continue;
* config: ``sg`` → ``architecture``; ``vector_size``, ``window``, ``negative``, ``hs``, ``sample``,
  ``ns_exponent``, ``cbow_mean``, ``min_count``, ``alpha``, ``min_alpha``, ``epochs`` field by field.

A gensim word spelled like a special token (PTB's literal ``<unk>``) takes that special's id, vector and count, as
``train_wordlevel_tokenizer`` maps a literal ``<unk>`` to its ``<unk>`` token; ``WordVectors`` leaves specials
out, so that word is then missing there. With ``hs`` this would change the Huffman tree, so it is refused.

``release`` (``hf-lineage convert word2vec SOURCE``) converts published vectors: the C tool's binary and text files
(GoogleNews-vectors-negative300.bin), a gensim ``KeyedVectors`` or ``Word2Vec`` saved with ``save``, or a Hub
repository holding one (``fse/word2vec-google-news-300``), read straight into the model's one float32 array. Such
files hold the input vectors alone: the folder is then the bare ``LineageWord2VecModel``, with no made-up output
layer. Its sources (``locate``, ``VectorsFile``, whose ``read_table`` reads with ``vectors.formats``' reader, and
``table_from_keyed_vectors``) serve ``glove.release`` too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..models import LineageWord2VecConfig, LineageWord2VecForPreTraining, LineageWord2VecModel
from ..tokenization.trainers import WORDLEVEL_SPECIALS, _unique, wordlevel_tokenizer_from_vocabulary
from ..vectors.formats import VectorTable, looks_like_text_record, parse_header, read_binary, read_text
from .sources import ConversionError, hub_snapshot, local_file, looks_like_hub_id, one_line


def from_gensim(model) -> tuple[LineageWord2VecForPreTraining, object]:
    """``(LineageWord2VecForPreTraining, tokenizer)`` holding a trained gensim ``Word2Vec``'s vocabulary, settings,
    input vectors and output layer (see the module docstring for the mapping). The model is in eval mode.

    Example:
        >>> model, tokenizer = from_gensim(gensim.models.Word2Vec(sentences, min_count=1))  # doctest: +SKIP
    """
    _check_gensim_word2vec(model)
    kv = model.wv
    words = list(kv.index_to_key)
    gensim_counts = np.array([kv.get_vecattr(w, "count") for w in words], dtype=np.int64)

    specials = _unique(WORDLEVEL_SPECIALS)  # <pad> <unk> <s> </s>, ids 0-3
    special_id = {token: i for i, token in enumerate(specials)}
    collisions = [w for w in words if w in special_id]
    if collisions and model.hs:
        raise ValueError(f"gensim's vocabulary holds {collisions}, spelled like the tokenizer's special tokens; they "
                         "would take the specials' ids, which are never trained, and with hs=1 that changes the "
                         "Huffman tree, so gensim's syn1 would not fit. Rename these words in the corpus.")
    # row in our matrices of each gensim word
    rows = np.empty(len(words), dtype=np.int64)
    next_id = len(specials)
    for i, word in enumerate(words):
        if word in special_id:
            rows[i] = special_id[word]
        else:
            rows[i] = next_id
            next_id += 1
    vocab_size = next_id
    vocab = list(specials) + [w for w in words if w not in special_id]

    # Tokenizer: counts by id, as train_wordlevel_tokenizer stores them.
    token_counts = np.zeros(vocab_size, dtype=np.int64)
    token_counts[rows] = gensim_counts
    dropped = int(getattr(model, "corpus_total_words", 0) or 0) - int(gensim_counts.sum())
    token_counts[special_id[WORDLEVEL_SPECIALS["unk_token"]]] += max(dropped, 0)
    # gensim takes pre-tokenised text, no normalisation: whitespace split, case kept.
    tokenizer = wordlevel_tokenizer_from_vocabulary(vocab, token_counts.tolist())

    config = LineageWord2VecConfig(
        vocab_size=vocab_size, vector_size=int(kv.vector_size), architecture="skipgram" if model.sg else "cbow",
        window=int(model.window), negative=int(model.negative), hs=bool(model.hs), sample=float(model.sample),
        ns_exponent=float(model.ns_exponent), cbow_mean=bool(model.cbow_mean), min_count=int(model.min_count),
        alpha=float(model.alpha), min_alpha=float(model.min_alpha), epochs=int(model.epochs),
        pad_token_id=special_id[WORDLEVEL_SPECIALS["pad_token"]],
        bos_token_id=special_id[WORDLEVEL_SPECIALS["bos_token"]],
        eos_token_id=special_id[WORDLEVEL_SPECIALS["eos_token"]],
    )
    lineage = LineageWord2VecForPreTraining(config)
    with torch.no_grad():
        # Zeros everywhere first: the specials' rows are never trained (they are dropped from sentences, never drawn
        # as noise, have no Huffman code), and zero input rows make them neutral as a task model's first layer.
        for matrix in (lineage.word2vec.input_vectors, lineage.output_vectors, lineage.inner_node_vectors):
            if matrix is not None:
                matrix.weight.zero_()
        lineage.word2vec.input_vectors.weight[rows] = _tensor(kv.vectors[: len(words)])
        if config.negative > 0:
            lineage.output_vectors.weight[rows] = _tensor(model.syn1neg[: len(words)])
        if config.hs:
            # syn1 rows are inner nodes of the Huffman tree, not words: they keep their numbers (the tree rebuilt
            # from word_counts numbers them as gensim does).
            lineage.inner_node_vectors.weight[: len(words)] = _tensor(model.syn1[: len(words)])
        counts = token_counts.copy()
        counts[list(special_id.values())] = 0  # the specials are never trained (trainable_counts' convention)
        lineage.word_counts.copy_(torch.from_numpy(counts))
    return lineage.eval(), tokenizer


def _tensor(array) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32))


def _check_gensim_word2vec(model) -> None:
    name = type(model).__name__
    if "FastText" in name:
        raise ValueError("a gensim FastText model's word vectors include character n-gram vectors that lineage "
                         "word2vec does not have; convert its wv with WordVectors.from_gensim(model.wv) instead.")
    if not hasattr(model, "wv") or not hasattr(model, "sg"):
        hint = " (for KeyedVectors use hf_lineage.WordVectors.from_gensim)" if hasattr(model, "index_to_key") else ""
        raise ValueError(f"expected a trained gensim Word2Vec, got {name}{hint}.")
    if len(model.wv) == 0:
        raise ValueError("the gensim model has an empty vocabulary: build_vocab / train it first.")
    if "count" not in model.wv.expandos:
        raise ValueError("the gensim model's vocabulary has no counts (wv 'count' attribute): they are needed for "
                         "the Huffman tree and the noise distribution.")
    if model.negative > 0 and getattr(model, "syn1neg", None) is None:
        raise ValueError("the gensim model has negative > 0 but no syn1neg: was it trained?")
    if model.hs and getattr(model, "syn1", None) is None:
        raise ValueError("the gensim model has hs=1 but no syn1: was it trained?")


# --- Published vectors: hf-lineage convert word2vec SOURCE ---------------------------------------------------------
#
# What is below is shared with ``glove.release`` (GloVe ships its vectors in the C tool's text format, most often
# without the header line). Files are read by ``vectors.formats``' reader straight into the one float32 array the model
# will hold — the specials' rows first, then one row per published word — so converting GoogleNews (3 M × 300, 3.6 GB)
# holds the vectors once.

SPECIALS = _unique(WORDLEVEL_SPECIALS)  # <pad> <unk> <s> </s>: ids 0-3, as in every lineage word-level folder
_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_MAGIC = b"PK\x03\x04"
# Files of a Hub repository that may hold vectors (a gensim model's arrays sit beside it as NAME.model.*.npy).
_HUB_PATTERNS = ["*.model", "*.model.*", "*.kv", "*.kv.*", "*.bin", "*.bin.gz", "*.txt", "*.txt.gz", "*.vec",
                 "*.vec.gz", "*.npy"]

# The word2vec project's own release (code.google.com/archive/p/word2vec): "trained on part of Google News dataset
# (about 100 billion words)"; the code and the vectors are published under the Apache License 2.0.
_GOOGLE_NEWS_NAMES = ("googlenews-vectors-negative300", "word2vec-google-news-300")
_GOOGLE_NEWS_WORDS = 100_000_000_000
_GOOGLE_NEWS_FROM = ("about 100 billion words of Google News, as the word2vec project page states "
                     "(https://code.google.com/archive/p/word2vec/)")
MIKOLOV_2013_BIBTEX = """@inproceedings{mikolov2013distributed,
  title     = {Distributed Representations of Words and Phrases and their Compositionality},
  author    = {Mikolov, Tomas and Sutskever, Ilya and Chen, Kai and Corrado, Greg S. and Dean, Jeffrey},
  booktitle = {Advances in Neural Information Processing Systems 26 (NIPS 2013)},
  pages     = {3111--3119},
  year      = {2013},
  url       = {https://arxiv.org/abs/1310.4546}
}"""


def table_notes(table: VectorTable) -> list[str]:
    """What the card says of how a release's words were read: words spelled like specials, repeated, not UTF-8."""
    notes = []
    if table.special_words:
        notes.append(f"The published word(s) {', '.join(f'`{w}`' for w in table.special_words)} are spelled like "
                     "the tokenizer's special tokens: each takes that special's id and keeps its published "
                     "vector there (`WordVectors` leaves the specials out, so they are not among its words).")
    if table.repeated:
        notes.append(f"{len(table.repeated):,} word(s) occur twice in the file (e.g. "
                     f"{', '.join(repr(w) for w in table.repeated[:3])}); the first vector of each is kept, as "
                     "gensim keeps it.")
    if table.undecodable:
        notes.append(f"{table.undecodable:,} word(s) are not valid UTF-8 (cut mid-character by the C tool); their "
                     "bad bytes read as U+FFFD.")
    return notes


class VectorsFile:
    """One local file of vectors and how to name it in messages (the source as the user gave it)."""

    def __init__(self, path: Path, source: str):
        self.path = Path(path)
        self.label = source if str(source).endswith(self.path.name) else f"{source} ({self.path.name})"
        with open(self.path, "rb") as f:
            magic = f.read(4)
        self.gzipped = magic.startswith(_GZIP_MAGIC)
        self.zipped = magic.startswith(_ZIP_MAGIC)

    def open(self):
        """The file's bytes, decompressed when it is gzip (``.bin.gz``, ``.txt.gz``)."""
        import gzip

        return gzip.open(self.path, "rb") if self.gzipped else open(self.path, "rb", buffering=1 << 20)

    def error(self, message: str) -> ConversionError:
        return ConversionError(f"{self.label}: {message}")

    def kind(self) -> str:
        """``"gensim"`` (a pickle: gensim's ``save``), ``"binary"`` or ``"text"`` (the C tool's formats, with the
        ``count dim`` header line) or ``"headerless"`` (text without it: GloVe's), read from the content."""
        if self.zipped:
            raise self.error(f"a zip archive: name the vectors file inside it as {self.path.name}#MEMBER")
        try:
            with self.open() as f:
                head = f.read(1 << 16)
        except OSError as error:  # a damaged gzip stream
            raise self.error(f"cannot be read ({one_line(error)})") from None
        if not head.strip():
            raise self.error("the file is empty" + (" once decompressed" if self.gzipped and head == b"" else ""))
        if not self.gzipped and head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
            return "gensim"  # pickle protocol 2-5, what gensim's SaveLoad.save writes
        first, newline, rest = head.partition(b"\n")
        header = parse_header(first)
        if header is not None:
            if not rest.strip():
                raise self.error(f"holds only the header line {first[:40]!r}: the vectors it announces are missing")
            line = rest.partition(b"\n")[0]
            return "text" if looks_like_text_record(line, header[1]) else "binary"
        if looks_like_text_record(first, None):
            return "headerless"
        raise self.error(f"not a word-vectors file: neither the word2vec C tool's binary or text format (a first line "
                         f"'<count> <dimensions>'), nor header-less text ('word v1 ... vd' lines, GloVe's), nor a "
                         f"gensim model; it starts with {head[:24]!r}")

    def read_table(self, limit: int | None, spaced_words: bool = False) -> VectorTable:
        """The words and vectors of a file in the C tool's binary or text format (header or not) under the
        tokenizer's specials, its first ``limit`` words only with ``limit``; see ``formats.read_text`` for
        ``spaced_words``. A word that is not valid UTF-8 reads with U+FFFD (the notes count them): the C tool cuts
        long words mid-character, and a release is converted whole or not at all."""
        options = dict(error=self.error, specials=SPECIALS, unicode_errors="replace")
        if self.kind() == "binary":
            return read_binary(self.open, limit, **options)
        return read_text(self.open, limit, header=None, spaced_words=spaced_words, **options)


def bare_vectors_model(model_class, config, vectors: np.ndarray):
    """A lineage model whose input embeddings are ``vectors`` itself (shared with torch, not copied), built on the
    meta device so that no random matrix of the same size is allocated first."""
    with torch.device("meta"):
        model = model_class(config)
    weight = torch.from_numpy(vectors)
    if tuple(weight.shape) != tuple(model.get_input_embeddings().weight.shape):
        raise ValueError(f"vectors of shape {tuple(weight.shape)} for embeddings of shape "
                         f"{tuple(model.get_input_embeddings().weight.shape)}")
    model.get_input_embeddings().weight = torch.nn.Parameter(weight)
    left = [name for name, tensor in [*model.named_parameters(), *model.named_buffers()] if tensor.is_meta]
    if left:
        raise ValueError(f"{model_class.__name__} has weights besides the vectors, not filled: {left}")
    return model.eval()


def source_name(source: str) -> str:
    """The source as the card names it: a Hub id or URL as given, a local path by its file name."""
    archive, hash_, member = str(source).partition("#")
    path = Path(archive).expanduser()
    if path.exists():
        return path.name + hash_ + member
    return str(source)


def hub_repository(source: str) -> str | None:
    """``OWNER/NAME`` when ``source`` reads from the Hub (not a local path, not a URL)."""
    archive = str(source).partition("#")[0]
    if Path(archive).expanduser().exists() or not looks_like_hub_id(archive):
        return None
    return "/".join(archive.split("/")[:2])


def _pick_in_folder(folder: Path, source: str) -> VectorsFile:
    """The vectors file of a folder (a Hub snapshot): a gensim model first, else the one file in the C tool's format."""
    found: dict[str, list[VectorsFile]] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.name.endswith(".npy") or path.name.startswith(".") or path.suffix in (".md", ".json", ".py"):
            continue  # gensim's arrays beside its model, the repository's own files
        file = VectorsFile(path, f"{source}/{path.relative_to(folder)}")
        try:
            found.setdefault(file.kind(), []).append(file)
        except ConversionError:
            continue
    for kind in ("gensim", "binary", "text"):
        if len(found.get(kind, [])) == 1:
            return found[kind][0]
        if found.get(kind):
            names = ", ".join(str(f.path.relative_to(folder)) for f in found[kind])
            raise ConversionError(f"{source}: several vectors files ({names}); name one as {source}/FILE")
    raise ConversionError(f"{source}: holds no word2vec vectors (a gensim model, or a file in the C tool's binary or "
                          "text format)")


def locate(source: str, allow_patterns=_HUB_PATTERNS) -> VectorsFile:
    """The vectors file a source names: a local file or folder, a URL, ``ARCHIVE.zip#MEMBER``, a Hub repository
    (``OWNER/NAME``: its vectors file) or one file of it (``OWNER/NAME/FILE``; a gensim model comes with its arrays)."""
    source = str(source)
    path = Path(source).expanduser()
    if path.is_dir():
        return _pick_in_folder(path, source)
    if "#" not in source and not path.exists() and looks_like_hub_id(source) and source.count("/") == 1:
        return _pick_in_folder(hub_snapshot(source, allow_patterns=allow_patterns), source)
    file = VectorsFile(local_file(source), source)
    repository = hub_repository(source)
    if repository and "#" not in source and file.kind() == "gensim":
        # gensim keeps a large model's arrays in NAME.*.npy files beside it: fetch those too.
        name = source.split("/", 2)[2]
        snapshot = hub_snapshot(repository, allow_patterns=[name, f"{name}.*"])
        file = VectorsFile(snapshot / name, source)
    return file


def load_gensim(file: VectorsFile):
    """A gensim ``Word2Vec`` or ``KeyedVectors`` saved with ``save`` (a pickle, so only files you trust: as with
    gensim's own ``load``); large arrays are memory-mapped, not read, here."""
    try:
        from gensim.utils import SaveLoad
    except ImportError:
        raise file.error("a gensim model: reading it needs gensim (pip install gensim)") from None
    try:
        obj = SaveLoad.load(str(file.path), mmap="r")
    except Exception as error:
        raise file.error(f"not a gensim model gensim can load ({type(error).__name__}: {one_line(error)})") from None
    if hasattr(obj, "wv") and hasattr(obj, "sg") and "FastText" not in type(obj).__name__:
        return obj
    if hasattr(obj, "index_to_key") and hasattr(obj, "vectors") and "FastText" not in type(obj).__name__:
        return obj
    raise file.error(f"a gensim {type(obj).__name__}, not a Word2Vec model or KeyedVectors (word2vec's vectors)")


def _fake_counts(counts) -> bool:
    """gensim's ``load_word2vec_format`` makes counts up without a vocabulary file: ``count - index``."""
    return len(counts) > 1 and bool(np.all(np.diff(np.asarray(counts, dtype=np.int64)) == -1))


def table_from_keyed_vectors(kv, limit: int | None, file: VectorsFile) -> tuple[VectorTable, dict | None]:
    """The words and vectors of a gensim ``KeyedVectors`` (its first ``limit`` words), and their counts when real.
    A memory-mapped array is read from its ``.npy`` file a block at a time, not through the map: pages of a map
    stay resident, and would count a second copy of the vectors."""
    words = list(kv.index_to_key[:limit])
    source = kv.vectors
    if source.ndim != 2 or source.shape[0] < len(words):
        raise file.error(f"gensim vectors of shape {source.shape} for {len(words)} words")
    table = VectorTable(len(words), source.shape[1], SPECIALS)
    rows = np.array([-1 if (r := table.row_for(str(w))) is None else r for w in words], dtype=np.int64)
    block = 16384
    mapped = isinstance(source, np.memmap) and source.flags.c_contiguous and getattr(source, "filename", None)
    handle = open(source.filename, "rb") if mapped else None
    try:
        buffer = np.empty((block, source.shape[1]), dtype=source.dtype) if mapped else None
        for start in range(0, len(words), block):
            stop = min(start + block, len(words))
            if mapped:
                part = buffer[: stop - start]
                handle.seek(source.offset + start * source.strides[0])
                if handle.readinto(memoryview(part).cast("B")) != part.nbytes:
                    raise file.error(f"{Path(source.filename).name} is shorter than its header says")
            else:
                part = source[start:stop]
            keep = rows[start:stop] >= 0
            table.array[rows[start:stop][keep]] = part[keep]  # float32 as published; another dtype is cast
    finally:
        if handle is not None:
            handle.close()
    counts = None
    if "count" in getattr(kv, "expandos", {}):
        found = np.asarray(kv.expandos["count"])[: len(words)]
        if found.dtype.kind in "iu" and not _fake_counts(found):
            counts = dict(zip(map(str, words), found.tolist()))
    return table, counts


def vectors_tokenizer(table: VectorTable, counts: dict | None = None, lowercase: bool = False):
    """The word-level tokenizer of ``table``'s vocabulary (ids = rows), with the published counts (word -> count)
    when the release has real ones."""
    vocabulary = table.vocabulary()
    id_counts = None if counts is None else [int(counts.get(word, 0)) for word in vocabulary]
    return wordlevel_tokenizer_from_vocabulary(vocabulary, id_counts, lowercase=lowercase)


def _google_news(file: VectorsFile, source: str) -> bool:
    text = f"{source} {file.path.name}".lower().replace("_", "-")
    return any(name in text for name in _GOOGLE_NEWS_NAMES)


_TOKENIZATION = ("Tokenizer: word level, split on whitespace only, case kept, no punctuation splitting (the vectors' "
                 "words as the C tool read them: a phrase such as `New_York` is one token when the input writes it "
                 "with `_`). Ids 0-3 are the specials `<pad> <unk> <s> </s>` (zero vectors); the published words "
                 "follow in the file's order (most frequent first).")


def release(sources: list[str], max_vocab: int | None):
    """``hf-lineage convert word2vec SOURCE``: published word2vec vectors — the C tool's binary (``.bin``,
    ``.bin.gz``) or text format, a gensim ``KeyedVectors`` or full ``Word2Vec`` saved with ``save``, or a Hub
    repository holding one (``fse/word2vec-google-news-300``) — as a lineage word2vec folder. The format is read from
    the content. ``max_vocab`` keeps the file's first words (they are in frequency order) and reads no further.

    Bare vectors (every format but a full gensim model) have no output layer: the folder holds the bare
    ``LineageWord2VecModel`` — no made-up output vectors — and the card says so; a full ``Word2Vec`` converts with
    ``from_gensim``, output layer and counts included, so training can continue from it."""
    from .releases import Release

    if len(sources) != 1:
        raise ConversionError(f"word2vec takes one source (a vectors file, a gensim model or a Hub repository); got "
                              f"{len(sources)}")
    source = str(sources[0])
    file = locate(source)
    kind = file.kind()
    notes, counts, model = [], None, None
    if kind == "headerless":
        raise file.error("header-less text ('word v1 ... vd' lines) is GloVe's format: convert it with "
                         "`hf-lineage convert glove`; the word2vec C tool's text files start with a "
                         "'<count> <dimensions>' line")
    if kind == "gensim":
        loaded = load_gensim(file)
        if hasattr(loaded, "sg") and max_vocab is None:
            try:
                model, tokenizer = from_gensim(loaded)
            except ValueError as error:
                raise file.error(one_line(error)) from None
            notes.append(f"A full gensim `Word2Vec` ({'skip-gram' if loaded.sg else 'CBOW'}): its input vectors, "
                         "output layer (`output_vectors` = syn1neg, `inner_node_vectors` = syn1), counts and settings "
                         "are all converted (`hf_lineage.convert.from_gensim`), so training can continue from it.")
        else:
            if hasattr(loaded, "sg"):
                notes.append("A full gensim `Word2Vec`, cut to its first words by --max-vocab: only its word vectors "
                             "are converted (its output layer belongs to the whole vocabulary).")
            table, counts = table_from_keyed_vectors(getattr(loaded, "wv", loaded), max_vocab, file)
            del loaded  # its memory map
    else:
        table = file.read_table(max_vocab)
    if model is None:
        config = LineageWord2VecConfig(vocab_size=table.vectors.shape[0], vector_size=table.vectors.shape[1])
        model = bare_vectors_model(LineageWord2VecModel, config, table.vectors)
        tokenizer = vectors_tokenizer(table, counts)
        notes += [
            "Output layer: not published. The release holds the input vectors only (no syn1neg / syn1 output "
            "vectors" + ("" if counts is not None else ", no word counts") + "), so this folder holds the bare "
            "`LineageWord2VecModel`: loading it as `AutoModelForPreTraining` reports `output_vectors` and "
            "`word_counts` as missing (newly initialised, zero), and pre-training cannot continue from the "
            "published state. The vectors serve as they are: `WordVectors`, feature extraction and the task "
            "models' first layer.",
            "config.json's training fields (architecture, window, negative, sample, epochs, ...) are "
            "LineageWord2VecConfig's defaults, not the release's settings: the file does not record them.",
            *table_notes(table),
        ]
    notes.insert(0, _TOKENIZATION)
    if max_vocab is not None:
        notes.append(f"--max-vocab {max_vocab:,}: the file's first {max_vocab:,} words (most frequent first) only.")
    google = _google_news(file, source)
    return Release(
        model=model, tokenizer=tokenizer, source=source_name(source),
        license="apache-2.0" if google else "other", citation=MIKOLOV_2013_BIBTEX,
        words_seen=_GOOGLE_NEWS_WORDS if google else None,
        words_seen_from=_GOOGLE_NEWS_FROM if google else "not stated by the file",
        base_model=hub_repository(source), notes="\n\n".join(
            notes + ([] if google else ["License: not known from the file: check the source's terms."])),
    )


__all__ = ["from_gensim", "release"]
