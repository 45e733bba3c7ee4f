"""``hf-lineage convert glove SOURCE``: Stanford's published GloVe vectors as a lineage GloVe folder.

    >>> from hf_lineage.convert.releases import convert
    >>> convert("glove", ["glove.6B.zip#glove.6B.300d.txt"], "glove-6B-300d", max_vocab=200_000)  # doctest: +SKIP
    >>> hf_lineage.WordVectors.from_pretrained("glove-6B-300d").most_similar("frog")              # doctest: +SKIP

What is read: Stanford's header-less text (``glove.6B.*d.txt``, ``glove.42B.300d.txt``, ``glove.840B.300d.txt``,
``glove.twitter.27B.*d.txt``; lines ``word v1 ... vd``, d read from the first lines), the variant with a word2vec
``count dim`` header line (what gensim's ``glove2word2vec`` writes), gzip-compressed text, a gensim ``KeyedVectors``
holding GloVe's vectors, and any of these inside a zip as ``ARCHIVE.zip#MEMBER`` (Stanford ships zips). glove.840B has
a few "words" with spaces in them (``at & t``): the vector is the last d fields of a line, the word everything before.

What maps to what: the published vectors are W + W̃ (the sum of the word and context vectors, as glove.c saves them
with ``model 2``); there are no biases nor separate W, W̃ in the release, so there is nothing else to hold. They become
``LineageGloveModel.word_vectors`` — its input embeddings, what ``WordVectors.from_pretrained`` and the task models'
first layer read — bit for bit (float32), after the tokenizer's specials ``<pad> <unk> <s> </s>`` (ids 0-3, zero
rows). A published word spelled like a special takes that special's id and keeps its vector there, as
``from_gensim`` does. The tokenizer lowercases when the vocabulary is lowercase (6B, 42B, twitter) and keeps case
when it has capitals (840B), and splits on whitespace.
"""

from __future__ import annotations

import re

from ..models import LineageGloveConfig, LineageGloveModel
from .sources import ConversionError
from .word2vec import (
    VectorsFile,
    bare_vectors_model,
    hub_repository,
    load_gensim,
    locate,
    source_name,
    table_from_keyed_vectors,
    table_notes,
    vectors_tokenizer,
)

PENNINGTON_2014_BIBTEX = """@inproceedings{pennington2014glove,
  title     = {{G}lo{V}e: Global Vectors for Word Representation},
  author    = {Pennington, Jeffrey and Socher, Richard and Manning, Christopher D.},
  booktitle = {Proceedings of the 2014 Conference on Empirical Methods in Natural Language Processing (EMNLP)},
  pages     = {1532--1543},
  year      = {2014},
  publisher = {Association for Computational Linguistics},
  url       = {https://aclanthology.org/D14-1162}
}"""

# Stanford's releases (https://nlp.stanford.edu/projects/glove/), by the name their files carry: tokens of the corpus
# the vectors were trained on, as the project page states them. Published under the Open Data Commons Public Domain
# Dedication and License (PDDL) v1.0.
_PAGE = "the GloVe project page, https://nlp.stanford.edu/projects/glove/"
STANFORD_RELEASES = {
    "glove.6b": (6_000_000_000, f"6 B tokens of Wikipedia 2014 + Gigaword 5 ({_PAGE})"),
    "glove.42b": (42_000_000_000, f"42 B tokens of Common Crawl ({_PAGE})"),
    "glove.840b": (840_000_000_000, f"840 B tokens of Common Crawl ({_PAGE})"),
    "glove.twitter.27b": (27_000_000_000, f"27 B tokens of 2 B tweets ({_PAGE})"),
}
# The same vectors as gensim KeyedVectors on the Hub (fse/glove-wiki-gigaword-300, ...), as gensim-data names them.
_GENSIM_DATA_NAMES = {"glove-wiki-gigaword": "glove.6b", "glove-twitter": "glove.twitter.27b"}


def _stanford_release(file: VectorsFile, source: str) -> str | None:
    text = f"{source} {file.path.name}".lower()
    for alias, name in _GENSIM_DATA_NAMES.items():
        text = text.replace(alias, name)
    return next((name for name in sorted(STANFORD_RELEASES, key=len, reverse=True) if name in text), None)


def release(sources: list[str], max_vocab: int | None):
    """The published GloVe vectors at ``sources`` (one file: a path, a URL, ``ARCHIVE.zip#MEMBER``, a Hub file) as a
    ``Release`` of a ``LineageGloveModel`` and its word-level tokenizer (see the module docstring). ``max_vocab``
    keeps the file's first words (Stanford's files are in frequency order) and reads no further."""
    from .releases import Release

    if len(sources) != 1:
        raise ConversionError(f"glove takes one source (a vectors file, e.g. glove.6B.zip#glove.6B.300d.txt); got "
                              f"{len(sources)}")
    source = str(sources[0])
    file = locate(source)
    kind = file.kind()
    counts = None
    if kind == "binary":
        raise file.error("the word2vec C tool's binary format, which GloVe does not publish: convert it with "
                         "`hf-lineage convert word2vec`")
    if kind == "gensim":
        loaded = load_gensim(file)
        table, counts = table_from_keyed_vectors(getattr(loaded, "wv", loaded), max_vocab, file)
        del loaded
    else:
        table = file.read_table(max_vocab, spaced_words=True)
    # glove.6B, 42B and twitter were lowercased before counting; 840B was not. Capitals (ASCII: the lowercased
    # releases have none) in the vocabulary mean a cased release, whose tokenizer must keep case.
    cased = re.search(r"[A-Z]", "\n".join(table.words)) is not None
    vocab_size, dim = table.vectors.shape
    # The paper's settings (section 4.2; 50 iterations below 300 dimensions), not read from the file: it has none.
    config = LineageGloveConfig.from_named("pennington2014", vocab_size=vocab_size, vector_size=dim,
                                           epochs=100 if dim >= 300 else 50)
    model = bare_vectors_model(LineageGloveModel, config, table.vectors)
    tokenizer = vectors_tokenizer(table, counts, lowercase=not cased)

    spaced = sum(" " in word for word in table.words)
    notes = [
        "Tokenizer: word level, split on whitespace only, "
        + ("case kept: the vocabulary has capitals (a cased release, as glove.840B)" if cased else
           "lowercased: the vocabulary is lowercase (as glove.6B, 42B and twitter.27B, counted on lowercased text)")
        + ". GloVe's corpora were tokenized with the Stanford tokenizer (punctuation split off), so give it text "
        "tokenized that way. Ids 0-3 are the specials `<pad> <unk> <s> </s>` (zero vectors); the published words "
        "follow in the file's order (most frequent first).",
        "Vectors: the published ones, bit for bit, as `LineageGloveModel.word_vectors` (the input embeddings: what "
        "`WordVectors` and the task models read). They are W + W̃, the sum of GloVe's word and context vectors; "
        "the release has neither the biases nor W and W̃ apart, so pre-training cannot continue from it. "
        "config.json's training fields are the paper's settings (Pennington et al. 2014, section 4.2), not read "
        "from the file.",
        *table_notes(table),
    ]
    if spaced:
        notes.append(f"{spaced:,} published word(s) contain spaces (e.g. {next(w for w in table.words if ' ' in w)!r}):"
                     " they keep their vectors, but a whitespace tokenizer never produces them.")
    if max_vocab is not None:
        notes.append(f"--max-vocab {max_vocab:,}: the file's first {max_vocab:,} words (most frequent first) only.")
    stanford = _stanford_release(file, source)
    words_seen, words_from = STANFORD_RELEASES.get(stanford, (None, "not stated by the file"))
    if stanford is None:
        notes.append("License: not known from the file (not one of Stanford's releases by name): check the "
                     "source's terms.")
    return Release(model=model, tokenizer=tokenizer, source=source_name(source),
                   license="pddl" if stanford else "other", citation=PENNINGTON_2014_BIBTEX,
                   words_seen=words_seen, words_seen_from=words_from, base_model=hub_repository(source),
                   notes="\n\n".join(notes))


__all__ = ["PENNINGTON_2014_BIBTEX", "STANFORD_RELEASES", "release"]
