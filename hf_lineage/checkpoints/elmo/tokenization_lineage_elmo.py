"""ELMo's tokenizer: whitespace-separated words, each given its word id (for the softmax targets) and its character
ids (for the character CNN).

Character ids follow bilm-tf's ``UnicodeCharsVocabulary`` and AllenNLP's ``ELMoCharacterMapper``, so published
weights read them as they were trained:

* a word is its UTF-8 bytes (0-255) between a begin-of-word marker (258) and an end-of-word marker (259), and the
  rest of its ``max_characters_per_token`` (50) slots hold the padding character (260);
* words longer than the cap keep their first ``max_characters_per_token - 2`` bytes (48): the CNN sees a truncated
  word, the word id is unaffected;
* the sentence markers ``<S>`` and ``</S>`` are not spelled out: each is one special character (256 and 257) between
  the word markers;
* every id is then shifted by +1 (AllenNLP's convention) so 0 means "no token here": a padded position's characters
  are all 0, which the model's character embedding maps to zeros.

``__call__`` returns ``input_ids`` (B, T), ``char_ids`` (B, T, 50) and ``attention_mask``; with
``add_special_tokens`` (the default) every sentence is wrapped in ``<S> ... </S>`` as the biLM was trained
(``mark_sentence_start=False``: only ``</S>`` is added, the ``source </S>`` prompts of the generation recipes). Both
id kinds are padded together by ``tokenizer.pad`` (so ``DataCollatorWithPadding`` works) and by
``tokenizer(batch, padding=True, return_tensors="pt")``.

This file is copied next to a saved tokenizer so that ``AutoTokenizer.from_pretrained(folder,
trust_remote_code=True)`` works without hf_lineage: it imports only transformers.
"""

import os

from transformers import PreTrainedTokenizer
from transformers.tokenization_utils_base import BatchEncoding, PaddingStrategy, TruncationStrategy

VOCAB_FILES_NAMES = {"vocab_file": "vocab.txt"}

# bilm-tf's character ids, before AllenNLP's +1 shift.
BEGINNING_OF_SENTENCE_CHARACTER = 256  # <S>
END_OF_SENTENCE_CHARACTER = 257  # </S>
BEGINNING_OF_WORD_CHARACTER = 258
END_OF_WORD_CHARACTER = 259
PADDING_CHARACTER = 260


def word_to_char_ids(word: str, max_characters_per_token: int = 50) -> list[int]:
    """Character ids of one word, +1 shifted (0 is reserved for padded positions).

    >>> word_to_char_ids("hi", 6)    # [bow, 'h', 'i', eow, pad, pad] + 1
    [259, 105, 106, 260, 261, 261]
    """
    ids = [PADDING_CHARACTER] * max_characters_per_token
    encoded = word.encode("utf-8", "ignore")[: max_characters_per_token - 2]  # truncation: see the module docstring
    ids[0] = BEGINNING_OF_WORD_CHARACTER
    ids[1 : len(encoded) + 1] = encoded
    ids[len(encoded) + 1] = END_OF_WORD_CHARACTER
    return [i + 1 for i in ids]


def marker_char_ids(marker: int, max_characters_per_token: int = 50) -> list[int]:
    """Character ids of a sentence marker (``BEGINNING_OF_SENTENCE_CHARACTER`` or ``END_OF_SENTENCE_CHARACTER``)."""
    ids = [PADDING_CHARACTER] * max_characters_per_token
    ids[0], ids[1], ids[2] = BEGINNING_OF_WORD_CHARACTER, marker, END_OF_WORD_CHARACTER
    return [i + 1 for i in ids]


class LineageElmoTokenizer(PreTrainedTokenizer):
    """Word ids from a vocabulary file (one word per line, in id order, as bilm-tf's ``vocab.txt``) plus character
    ids for every word, known or not.

    Text is split on whitespace (ELMo's corpora are pre-tokenized); ``is_split_into_words=True`` takes lists of
    words. Words missing from the vocabulary get ``<UNK>``'s word id but keep their own characters
    (a vocabulary without ``<UNK>`` gets it appended, like any special token it lacks; with ``unk_token=None`` an
    unknown word is a ValueError).

    Example::

        >>> tok = LineageElmoTokenizer("vocab.txt")                      # doctest: +SKIP
        >>> batch = tok(["the cat sat", "a dog"], padding=True, return_tensors="pt")   # doctest: +SKIP
        >>> batch["input_ids"].shape, batch["char_ids"].shape             # doctest: +SKIP
        (torch.Size([2, 5]), torch.Size([2, 5, 50]))
    """

    vocab_files_names = VOCAB_FILES_NAMES
    model_input_names = ["input_ids", "char_ids", "attention_mask"]
    padding_side = "right"  # the backward LSTM reads each row from its last real word: padding must be on the right

    def __init__(self, vocab_file=None, vocab=None, max_characters_per_token=50, lowercase=False, bos_token="<S>",
                 eos_token="</S>", unk_token="<UNK>", pad_token="<pad>", mark_sentence_start=True, **kwargs):
        if (vocab_file is None) == (vocab is None):
            raise ValueError("Give exactly one of vocab_file (one word per line) or vocab (a list of words)")
        if vocab is None:
            with open(vocab_file, encoding="utf-8") as f:
                vocab = [line.rstrip("\n") for line in f]
        if len(set(vocab)) != len(vocab):
            raise ValueError("The vocabulary lists a word twice")
        if any(not w or any(c.isspace() for c in w) for w in vocab):
            raise ValueError("Vocabulary entries must be non-empty and contain no whitespace")
        if max_characters_per_token < 3:
            raise ValueError(f"max_characters_per_token must be >= 3, got {max_characters_per_token}")
        self.vocab = {word: i for i, word in enumerate(vocab)}
        self.ids_to_tokens = list(vocab)
        self.max_characters_per_token = max_characters_per_token
        self.lowercase = lowercase
        # Saved with the tokenizer (an init argument kept as an attribute of the same name).
        self.mark_sentence_start = mark_sentence_start
        super().__init__(max_characters_per_token=max_characters_per_token, lowercase=lowercase,
                         bos_token=bos_token, eos_token=eos_token, unk_token=unk_token, pad_token=pad_token,
                         mark_sentence_start=mark_sentence_start, **kwargs)

    # ------------------------------------------------------------------ vocabulary

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def get_vocab(self) -> dict[str, int]:
        return {**self.vocab, **self.added_tokens_encoder}

    def _tokenize(self, text, **kwargs):
        return (text.lower() if self.lowercase else text).split()

    def _convert_token_to_id(self, token):
        if token in self.vocab:
            return self.vocab[token]
        # A vocabulary without the unknown-word token (bilm-tf's vocab.txt may lack it) gets it appended as an added
        # token at construction: unknown words take that id.
        unk_id = self.vocab.get(self.unk_token, self.added_tokens_encoder.get(self.unk_token))
        if unk_id is None:
            raise ValueError(f"{token!r} is not in the vocabulary and the tokenizer has no unknown-word token "
                             f"(unk_token=None) to stand for it")
        return unk_id

    def _convert_id_to_token(self, index):
        return self.ids_to_tokens[index] if 0 <= index < len(self.ids_to_tokens) else self.unk_token

    def convert_tokens_to_string(self, tokens):
        # Every word with the space before it: text-generation pipelines decode only the new words and append them
        # to the prompt (as the package's word-level tokenizers for NNLM and word2vec decode).
        return "".join(" " + token for token in tokens)

    def save_vocabulary(self, save_directory, filename_prefix=None):
        path = os.path.join(save_directory, (filename_prefix + "-" if filename_prefix else "") + "vocab.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(self.ids_to_tokens) + "\n")
        return (path,)

    # ------------------------------------------------------------------ special tokens

    def _marked(self, items, start, end):
        """``[start, *items, end]``, without ``start`` when ``mark_sentence_start`` is off."""
        return [start, *items, end] if self.mark_sentence_start else [*items, end]

    def build_inputs_with_special_tokens(self, token_ids_0, token_ids_1=None):
        """``<S> a </S>``, or ``<S> a </S> <S> b </S>``: each sentence of a pair keeps its own markers, as the biLM
        read sentences in pre-training (``a </S>`` and ``a </S> b </S>`` without ``mark_sentence_start``)."""
        wrap = lambda ids: self._marked(ids, self.bos_token_id, self.eos_token_id)  # noqa: E731
        return wrap(token_ids_0) + (wrap(token_ids_1) if token_ids_1 is not None else [])

    def get_special_tokens_mask(self, token_ids_0, token_ids_1=None, already_has_special_tokens=False):
        if already_has_special_tokens:
            return super().get_special_tokens_mask(token_ids_0, token_ids_1, already_has_special_tokens=True)
        mask = lambda ids: self._marked([0] * len(ids), 1, 1)  # noqa: E731
        return mask(token_ids_0) + (mask(token_ids_1) if token_ids_1 is not None else [])

    def create_token_type_ids_from_sequences(self, token_ids_0, token_ids_1=None):
        first = [0] * (len(token_ids_0) + self.num_special_tokens_to_add())
        return first if token_ids_1 is None else first + [1] * (len(token_ids_1) + self.num_special_tokens_to_add())

    def num_special_tokens_to_add(self, pair=False):
        per_sentence = 2 if self.mark_sentence_start else 1
        return 2 * per_sentence if pair else per_sentence

    # ------------------------------------------------------------------ characters

    def char_ids_of(self, word: str) -> list[int]:
        """Character ids of one token: the sentence markers get their special rows, padding gets zeros, any other
        string is spelled out byte by byte."""
        if word == self.bos_token:
            return marker_char_ids(BEGINNING_OF_SENTENCE_CHARACTER, self.max_characters_per_token)
        if word == self.eos_token:
            return marker_char_ids(END_OF_SENTENCE_CHARACTER, self.max_characters_per_token)
        if word == self.pad_token:
            return [0] * self.max_characters_per_token
        return word_to_char_ids(word, self.max_characters_per_token)

    def vocabulary_char_ids(self) -> list[list[int]]:
        """Character ids of every vocabulary word, in id order: the table a model needs to turn generated word ids
        back into characters (``LineageElmoForCausalLM.set_vocabulary_characters``)."""
        return [self.char_ids_of(self.convert_ids_to_tokens(i)) for i in range(len(self))]

    def _words(self, text, is_split_into_words):
        if isinstance(text, str):
            return self.tokenize(text)
        if isinstance(text, (list, tuple)) and all(isinstance(w, str) for w in text):
            words = [w for word in text for w in self.tokenize(word)] if is_split_into_words else list(text)
            return words
        if isinstance(text, (list, tuple)) and all(isinstance(i, int) for i in text):
            # Already word ids: the characters can only come from the vocabulary (unknown words read as <UNK>).
            return self.convert_ids_to_tokens(list(text))
        raise ValueError(f"Input must be a string, a list of words or a list of word ids, got {type(text)}")

    def _encode_plus(self, text, text_pair=None, add_special_tokens=True,
                     padding_strategy=PaddingStrategy.DO_NOT_PAD,
                     truncation_strategy=TruncationStrategy.DO_NOT_TRUNCATE, max_length=None, stride=0,
                     is_split_into_words=False, pad_to_multiple_of=None, padding_side=None, return_tensors=None,
                     return_token_type_ids=None, return_attention_mask=None, return_overflowing_tokens=False,
                     return_special_tokens_mask=False, return_length=False, verbose=True, **kwargs):
        batched = isinstance(text, (list, tuple)) and (
            (not text and not is_split_into_words)
            or (text and is_split_into_words and isinstance(text[0], (list, tuple)))
            or (text and not is_split_into_words and isinstance(text[0], (str, list, tuple)))
        )
        if batched:
            # The base class encodes each item with this method, then pads the batch with self.pad (char_ids too).
            return super()._encode_plus(
                text, text_pair, add_special_tokens, padding_strategy, truncation_strategy, max_length, stride,
                is_split_into_words, pad_to_multiple_of, padding_side, return_tensors, return_token_type_ids,
                return_attention_mask, return_overflowing_tokens, return_special_tokens_mask, return_length,
                verbose, **kwargs)
        if return_overflowing_tokens:
            raise ValueError("LineageElmoTokenizer does not return overflowing tokens")
        words = self._words(text, is_split_into_words)
        pair = self._words(text_pair, is_split_into_words) if text_pair is not None else None

        # Truncate positions, then take the words at the kept positions: ids and characters stay aligned.
        if truncation_strategy != TruncationStrategy.DO_NOT_TRUNCATE and max_length is not None:
            n_special = self.num_special_tokens_to_add(pair=pair is not None) if add_special_tokens else 0
            total = len(words) + (len(pair) if pair else 0) + n_special
            if total > max_length:
                first = list(range(len(words)))
                second = list(range(len(words), total - n_special)) if pair is not None else None
                first, second, _ = self.truncate_sequences(first, second, total - max_length, truncation_strategy,
                                                           stride)
                everything = words + (pair or [])
                words = [everything[i] for i in first]
                pair = [everything[i] for i in second] if pair is not None else None

        encoded = self.prepare_for_model(
            self.convert_tokens_to_ids(words), self.convert_tokens_to_ids(pair) if pair is not None else None,
            add_special_tokens=add_special_tokens, padding=PaddingStrategy.DO_NOT_PAD,
            truncation=TruncationStrategy.DO_NOT_TRUNCATE, return_attention_mask=False,
            return_token_type_ids=return_token_type_ids, return_special_tokens_mask=return_special_tokens_mask,
            return_length=return_length, verbose=verbose,
        )
        if add_special_tokens:
            tokens = self._marked(words, self.bos_token, self.eos_token)
            if pair is not None:
                tokens += self._marked(pair, self.bos_token, self.eos_token)
        else:
            tokens = words + (pair or [])
        encoded["char_ids"] = [self.char_ids_of(w) for w in tokens]
        # Padding, then tensors with a batch axis of 1 (as the base class returns one sequence), once every field
        # is there.
        padded = self.pad(encoded, padding=padding_strategy.value, max_length=max_length,
                          pad_to_multiple_of=pad_to_multiple_of, padding_side=padding_side,
                          return_attention_mask=return_attention_mask, verbose=verbose)
        return BatchEncoding(dict(padded), tensor_type=return_tensors, prepend_batch_axis=return_tensors is not None)

    def _pad(self, encoded_inputs, max_length=None, padding_strategy=PaddingStrategy.DO_NOT_PAD,
             pad_to_multiple_of=None, padding_side=None, return_attention_mask=None):
        before = len(encoded_inputs[self.model_input_names[0]])
        encoded_inputs = super()._pad(encoded_inputs, max_length, padding_strategy, pad_to_multiple_of,
                                      padding_side, return_attention_mask)
        difference = len(encoded_inputs[self.model_input_names[0]]) - before
        if difference and "char_ids" in encoded_inputs:
            rows = [[0] * self.max_characters_per_token for _ in range(difference)]  # no characters: padding
            char_ids = list(encoded_inputs["char_ids"])
            side = padding_side if padding_side is not None else self.padding_side
            encoded_inputs["char_ids"] = char_ids + rows if side == "right" else rows + char_ids
        return encoded_inputs


__all__ = ["LineageElmoTokenizer", "word_to_char_ids", "marker_char_ids"]
