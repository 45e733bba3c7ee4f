"""Tiny stand-ins for the published word vectors of the standard set (``hf_lineage.convert.releases.published_releases()``), put
into a Hugging Face Hub cache under the real repository ids, so that with that cache and ``HF_HUB_OFFLINE=1``
``hf-lineage convert word2vec fse/word2vec-google-news-300`` and ``hf-lineage convert glove
stanfordnlp/glove/glove.6B.zip#glove.6B.300d.txt`` read them: the conversions are tested without the network and
without the real 3.6 GB and 1 GB.

Each is the real thing in miniature: fse's GoogleNews copy is a gensim ``KeyedVectors`` saved as
``word2vec-google-news-300.model`` with its array beside it in ``.model.vectors.npy``, cased, phrases joined by ``_``
(``New_York``), ``</s>`` as its first word and the counts gensim makes up when it reads the C tool's file; Stanford's
``glove.6B.zip`` holds ``glove.6B.300d.txt``, header-less text, lowercased (a few dimensions, not 300). Their words are
those of a few hundred sentences of the package's embedded samples (``hf_lineage/samples/lineage/``), most frequent
first, so a task on those samples finds few unknown words. Seeded: the same files every call.

    >>> from standins_vectors import save_glove_standin, save_word2vec_standin
    >>> from standins_transformers import use_hub_cache
    >>> save_word2vec_standin(tmp_path / "hub"); save_glove_standin(tmp_path / "hub")
    >>> use_hub_cache(monkeypatch, tmp_path / "hub")   # HF_HUB_CACHE and HF_HUB_OFFLINE=1, here and in subprocesses
    >>> convert("word2vec", ["fse/word2vec-google-news-300"], tmp_path / "word2vec")
"""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np

from conftest import REPO
from standins_transformers import snapshot_folder, use_hub_cache  # noqa: F401  (use_hub_cache: for the callers)

SAMPLES = REPO / "hf_lineage" / "samples" / "lineage"
STANDIN_SENTENCES = 400  # of each sample file below
WORD2VEC_DIM = 24
GLOVE_DIM = 20
DECIMAL = "%.6g"  # Stanford's files: about 6 significant digits
# Joined by word2phrase in the real file; kept whatever the samples hold.
PHRASES = ["New_York", "Los_Angeles", "United_States", "Barack_Obama"]


def standin_words(lowercase: bool = False) -> list[str]:
    """The words of the first ``STANDIN_SENTENCES`` sentences of the labelling (UD English EWT) and classification
    (E2E) samples, most frequent first (ties alphabetical), lowercased with ``lowercase``."""
    counts = Counter()
    with open(SAMPLES / "labeling.train.jsonl", encoding="utf-8") as f:
        for _, line in zip(range(STANDIN_SENTENCES), f):
            counts.update(json.loads(line)["tokens"])
    with open(SAMPLES / "classification.train.jsonl", encoding="utf-8") as f:
        for _, line in zip(range(STANDIN_SENTENCES), f):
            counts.update(json.loads(line)["sentence"].split())
    if lowercase:
        lowered = Counter()
        for word, count in counts.items():
            lowered[word.lower()] += count
        counts = lowered
    return [word for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


def word2vec_standin_vectors() -> tuple[list[str], np.ndarray]:
    """GoogleNews in miniature: ``</s>`` first (as in the real file), the samples' words (cased), the phrases."""
    words = ["</s>", *standin_words(), *PHRASES]
    words = list(dict.fromkeys(words))
    rng = np.random.default_rng(2013)
    return words, rng.standard_normal((len(words), WORD2VEC_DIM)).astype(np.float32)


def save_word2vec_standin(cache_dir, repo_id: str = "fse/word2vec-google-news-300") -> Path:
    """fse's gensim copy of GoogleNews-vectors-negative300 in miniature, in the Hub cache ``cache_dir`` as
    ``repo_id``; returns the snapshot folder."""
    from gensim.models import KeyedVectors

    words, vectors = word2vec_standin_vectors()
    kv = KeyedVectors(WORD2VEC_DIM, dtype=np.float32)
    kv.add_vectors(words, vectors)
    for index, word in enumerate(words):  # what gensim's load_word2vec_format makes up without a vocabulary file
        kv.set_vecattr(word, "count", len(words) - index)
    snapshot = snapshot_folder(cache_dir, repo_id)
    name = repo_id.split("/")[-1] + ".model"
    kv.save(str(snapshot / name), separately=["vectors"])  # NAME.model + NAME.model.vectors.npy, as on the Hub
    return snapshot


def glove_standin_vectors() -> tuple[list[str], np.ndarray]:
    """glove.6B in miniature: the samples' words lowercased, vectors with the 6 decimals Stanford's files have."""
    words = standin_words(lowercase=True)
    rng = np.random.default_rng(2014)
    values = rng.standard_normal((len(words), GLOVE_DIM)) * 0.4
    # What the file's text reads back as: the float32 nearest each written decimal.
    return words, np.array([[float(DECIMAL % v) for v in row] for row in values.tolist()], dtype=np.float32)


def glove_text(words, vectors) -> str:
    """Stanford's header-less text: ``word v1 ... vd`` per line."""
    return "".join(f"{word} {' '.join(DECIMAL % v for v in row)}\n" for word, row in zip(words, vectors.tolist()))


def save_glove_standin(cache_dir, repo_id: str = "stanfordnlp/glove") -> Path:
    """Stanford's ``glove.6B.zip`` holding ``glove.6B.300d.txt`` in miniature, in the Hub cache ``cache_dir`` as
    ``repo_id`` (the standard set reads ``stanfordnlp/glove/glove.6B.zip#glove.6B.300d.txt``); returns the snapshot
    folder."""
    words, vectors = glove_standin_vectors()
    snapshot = snapshot_folder(cache_dir, repo_id)
    with zipfile.ZipFile(snapshot / "glove.6B.zip", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        # A fixed date: the same archive bytes every call.
        info = zipfile.ZipInfo("glove.6B.300d.txt", date_time=(2014, 8, 27, 0, 0, 0))
        archive.writestr(info, glove_text(words, vectors), compress_type=zipfile.ZIP_DEFLATED)
    return snapshot
