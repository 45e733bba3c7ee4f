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
"""

from __future__ import annotations

import numpy as np
import torch

from ..models import LineageWord2VecConfig, LineageWord2VecForPreTraining
from ..tokenization.trainers import WORDLEVEL_SPECIALS, _unique, wordlevel_tokenizer_from_vocabulary


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


__all__ = ["from_gensim"]
