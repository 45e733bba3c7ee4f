"""Contextual word vectors and polysemy: the "play" example of Peters et al. (2018), Table 4.

A static vector gives "play" one point whatever the sentence; a biLM gives every occurrence its own vector, and the
nearest neighbours of an occurrence are occurrences of the same sense. ``ContextualVectors`` works with any model
that returns per-token hidden states (ELMo first; BERT, GPT, NNLM too) and its tokenizer::

    >>> from hf_lineage import ContextualVectors
    >>> cv = ContextualVectors(model, tokenizer)                                        # doctest: +SKIP
    >>> corpus = ["they play football on sunday", "the play ran for a week on broadway", ...]  # doctest: +SKIP
    >>> for sentence, similarity in cv.nearest_neighbours("play", "the kids play in the park", corpus, k=3):
    ...     print(f"{similarity:.2f}  {sentence}")                                      # doctest: +SKIP

Sentences are whitespace-tokenized words. A word's vector is the hidden state at its position — the average over its
sub-tokens for sub-word tokenizers (fast tokenizers tell which tokens belong to which word). Which state: ``layer``
None takes ELMo's first scalar mix (``elmo_representations[0]``) or, for other models, the last hidden state; an
integer takes ``hidden_states[layer]`` (for ELMo, 0 is the character-based token layer, which has no context).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class Occurrences:
    """Every occurrence of a word in some sentences: ``vectors`` (N, D), and for each the index of its sentence in
    ``sentences`` and its word position there."""

    word: str
    vectors: torch.Tensor
    sentence_index: list[int]
    position: list[int]
    sentences: list[str]

    def sentence(self, i: int) -> str:
        return self.sentences[self.sentence_index[i]]


class ContextualVectors:
    """Per-word contextual vectors from ``model`` (eval mode, no gradients) in batches of ``batch_size`` sentences.

    ``model`` may be a task or pre-training model: its ``base_model`` is used (the encoder without a head).
    """

    def __init__(self, model, tokenizer, layer: int | None = None, batch_size: int = 32):
        self.model = getattr(model, "base_model", model)
        self.tokenizer = tokenizer
        self.layer = layer
        self.batch_size = batch_size

    def _states(self, batch):
        output = self.model(**batch, output_hidden_states=True, return_dict=True)
        if self.layer is not None:
            hidden_states = getattr(output, "hidden_states", None)
            if hidden_states is None or not -len(hidden_states) <= self.layer < len(hidden_states):
                n = 0 if hidden_states is None else len(hidden_states)
                raise ValueError(f"layer={self.layer} but the model returns {n} hidden states")
            return hidden_states[self.layer]
        mixes = getattr(output, "elmo_representations", None)
        return mixes[0] if mixes else output.last_hidden_state

    @torch.no_grad()
    def embed(self, sentences: list[str]) -> list[torch.Tensor]:
        """One (n_words, D) tensor per sentence: a vector for each whitespace-separated word."""
        if isinstance(sentences, str):
            raise ValueError("embed takes a list of sentences, not one string")
        words = [s.split() for s in sentences]
        if any(not w for w in words):
            empty = [i for i, w in enumerate(words) if not w]
            raise ValueError(f"Sentences {empty} have no words")
        was_training = self.model.training
        self.model.eval()
        device = next(self.model.parameters()).device
        vectors = []
        try:
            for start in range(0, len(words), self.batch_size):
                chunk = words[start : start + self.batch_size]
                encoding = self._encode(chunk)
                special = encoding.pop("special_tokens_mask").bool()
                offsets = encoding.pop("offset_mapping", None)
                batch = {k: v.to(device) for k, v in encoding.items()}
                states = self._states(batch).float().cpu()  # (B, T, D)
                for b, sentence in enumerate(chunk):
                    word_ids = None if offsets is None else token_words(offsets[b].tolist(), special[b], sentence)
                    vectors.append(self._word_vectors(states[b], encoding, b, special[b], word_ids, len(sentence)))
        finally:
            self.model.train(was_training)
        return vectors

    def _encode(self, chunk: list[list[str]]):
        """A fast tokenizer reads each sentence as one string, as in pre-training, and returns offsets that map its
        tokens back to words: given words one by one (``is_split_into_words``), a byte-level BPE without
        ``add_prefix_space`` (lineage GPT) would encode "play" rather than the "Ġplay" it saw in running text."""
        if self.tokenizer.is_fast:
            return self.tokenizer([" ".join(words) for words in chunk], padding=True, return_tensors="pt",
                                  return_special_tokens_mask=True, return_offsets_mapping=True)
        return self.tokenizer(chunk, is_split_into_words=True, padding=True, return_tensors="pt",
                              return_special_tokens_mask=True)

    @staticmethod
    def _word_vectors(states, encoding, b, special, word_ids, n_words):
        """(T, D) token states → (n_words, D): sub-tokens averaged per word where ``word_ids`` says which word a
        token belongs to; otherwise one token per word, in order, after dropping special tokens and padding."""
        if word_ids is not None:
            out = torch.zeros(n_words, states.shape[-1])
            counts = torch.zeros(n_words)
            for t, w in enumerate(word_ids):
                if w is not None:
                    out[w] += states[t]
                    counts[w] += 1
            return out / counts.clamp(min=1)[:, None]
        real = ~special & encoding["attention_mask"][b].bool()
        if int(real.sum()) != n_words:
            raise ValueError(f"The tokenizer made {int(real.sum())} tokens of {n_words} words and cannot say which "
                             "token is which word; use a fast tokenizer or a word-level one")
        return states[real]

    def word_vectors(self, word: str, sentences: list[str]) -> Occurrences:
        """Vectors of every occurrence of ``word`` (exact, whitespace-separated) in ``sentences``."""
        hits = [(i, p) for i, s in enumerate(sentences) for p, w in enumerate(s.split()) if w == word]
        if not sentences:
            raise ValueError("No sentences given")
        if not hits:
            raise ValueError(f"{word!r} does not occur in the sentences (words are matched exactly, after splitting "
                             "on whitespace)")
        needed = sorted({i for i, _ in hits})
        embedded = dict(zip(needed, self.embed([sentences[i] for i in needed])))
        vectors = torch.stack([embedded[i][p] for i, p in hits])
        return Occurrences(word, vectors, [i for i, _ in hits], [p for _, p in hits], list(sentences))

    def nearest_neighbours(self, word: str, query: str, sentences: list[str], k: int = 5):
        """The ``k`` occurrences of ``word`` in ``sentences`` closest (cosine) to its occurrence in ``query``:
        a list of (sentence, cosine similarity), most similar first. ``query`` must contain ``word`` once."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if query.split().count(word) != 1:
            raise ValueError(f"The query must contain {word!r} exactly once: {query!r}")
        target = self.word_vectors(word, [query]).vectors[0]
        found = self.word_vectors(word, sentences)
        similarity = F.cosine_similarity(found.vectors, target[None], dim=-1)
        order = similarity.argsort(descending=True)[:k]
        return [(found.sentence(i), similarity[i].item()) for i in order.tolist()]


def token_words(offsets: list[list[int]], special, words: list[str]) -> list[int | None]:
    """The word (index in ``words``, joined by single spaces) of each token from its character offsets; None for
    special tokens and padding. A token belongs to the word holding its last character, so that a leading space
    kept in a byte-level token's offsets does not matter."""
    owner = []
    for i, word in enumerate(words):
        owner += [i] * len(word) + [None]
    return [None if is_special or end <= start else owner[end - 1]
            for (start, end), is_special in zip(offsets, special.tolist())]


def similarity_matrix(occurrences: Occurrences) -> torch.Tensor:
    """Cosine similarity between every pair of occurrences: (N, N)."""
    v = F.normalize(occurrences.vectors, dim=-1)
    return v @ v.t()


__all__ = ["ContextualVectors", "Occurrences", "similarity_matrix", "token_words"]
