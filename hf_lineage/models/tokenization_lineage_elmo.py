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

Two classes give the same ids: ``LineageElmoTokenizer`` (Python) and ``LineageElmoTokenizerFast`` (a `tokenizers`
WordLevel pipeline, what ``AutoTokenizer`` returns), which adds what transformers' ``run_ner.py`` and ``run_qa.py``
need: ``word_ids()``, ``offset_mapping`` and overflowing windows.

This file is copied next to a saved tokenizer so that ``AutoTokenizer.from_pretrained(folder,
trust_remote_code=True)`` works without hf_lineage: it imports only transformers (and tokenizers, which it needs).
"""

import os

from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import WordLevel
from transformers import PreTrainedTokenizer, PreTrainedTokenizerFast
from transformers.tokenization_utils_base import BatchEncoding, PaddingStrategy, TruncationStrategy

VOCAB_FILES_NAMES = {"vocab_file": "vocab.txt"}
FAST_VOCAB_FILES_NAMES = {"vocab_file": "vocab.txt", "tokenizer_file": "tokenizer.json"}

# What ``str.split()`` splits on (``str.isspace``): Unicode's White_Space and the ASCII separators \x1c-\x1f, which
# tokenizers' ``WhitespaceSplit`` keeps inside words. The fast tokenizer splits on exactly these.
WHITESPACE = "[\t-\r\x1c- \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+"
# ``str.lower`` (with ``lowercase``) makes a capital sigma that ends a word "ς", by Unicode's Final_Sigma condition;
# tokenizers' ``Lowercase`` makes every one "σ". The fast tokenizer applies the condition first.
FINAL_SIGMA = r"(?<=\p{Cased}\p{Case_Ignorable}*)\u03a3(?!\p{Case_Ignorable}*\p{Cased})"

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


def read_vocabulary(vocab_file=None, vocab=None) -> list[str]:
    """The words of a vocabulary file (one per line, in id order) or list, checked."""
    if (vocab_file is None) == (vocab is None):
        raise ValueError("Give exactly one of vocab_file (one word per line) or vocab (a list of words)")
    if vocab is None:
        with open(vocab_file, encoding="utf-8") as f:
            vocab = [line.rstrip("\n") for line in f]
    if len(set(vocab)) != len(vocab):
        raise ValueError("The vocabulary lists a word twice")
    if any(not w or any(c.isspace() for c in w) for w in vocab):
        raise ValueError("Vocabulary entries must be non-empty and contain no whitespace")
    return list(vocab)


def longest_first_lengths(first: int, second: int, budget: int) -> tuple[int, int]:
    """How many words of each sentence of a pair ``truncation="longest_first"`` keeps within ``budget``, as
    tokenizers' ``LongestFirst`` decides (so both ELMo tokenizers cut a pair alike): the shorter sentence stays whole
    if the longer one, cut to fit beside it, is still at least as long; otherwise each keeps half, the odd word going
    to the longer (to the second when they are equally long)."""
    short, long = sorted((first, second))
    long_kept = short if short > budget else max(short, budget - short)
    short_kept = short
    if short_kept + long_kept > budget:
        short_kept, long_kept = budget // 2, budget // 2 + budget % 2
    if first > second:
        return long_kept, short_kept
    return short_kept, long_kept


class ElmoCharactersMixin:
    """What both ELMo tokenizers share: a token's character ids, the vocabulary's, and ``char_ids`` padded with
    the word ids."""

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


class LineageElmoTokenizer(ElmoCharactersMixin, PreTrainedTokenizer):
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
        vocab = read_vocabulary(vocab_file, vocab)
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
            if total > max_length and pair is not None and truncation_strategy == TruncationStrategy.LONGEST_FIRST:
                # The pair is cut as the fast tokenizer cuts it (PreTrainedTokenizer.truncate_sequences may keep the
                # odd word in the other sentence).
                kept = longest_first_lengths(len(words), len(pair), max(max_length - n_special, 0))
                cut = lambda ws, n: ws[:n] if self.truncation_side == "right" else ws[len(ws) - n:]  # noqa: E731
                words, pair = cut(words, kept[0]), cut(pair, kept[1])
            elif total > max_length:
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


class LineageElmoTokenizerFast(ElmoCharactersMixin, PreTrainedTokenizerFast):
    """``LineageElmoTokenizer`` as a `tokenizers` pipeline: a WordLevel model over the same vocabulary, the same
    whitespace split (and lowercasing with ``lowercase``), ``<S> ... </S>`` added by its post-processor. It gives
    the same ``input_ids``, ``char_ids``, ``attention_mask``, ``token_type_ids`` and ``special_tokens_mask``, and
    what only a fast tokenizer has: ``word_ids()``, ``return_offsets_mapping`` and ``return_overflowing_tokens``.

    A token's characters are read from the text it came from (its offsets), not from the vocabulary: an unknown word
    is ``<UNK>`` to the softmax but keeps its own characters. Saved, it writes ``tokenizer.json`` and ``vocab.txt``,
    so ``LineageElmoTokenizer.from_pretrained`` reads the folder too.

    Example::

        >>> tok = LineageElmoTokenizerFast(vocab=["<pad>", "<UNK>", "<S>", "</S>", "the", "cat"])
        >>> enc = tok(["the", "cat", "purred"], is_split_into_words=True)
        >>> enc["input_ids"], enc.word_ids()
        ([2, 4, 5, 1, 3], [None, 0, 1, 2, None])
    """

    vocab_files_names = FAST_VOCAB_FILES_NAMES
    model_input_names = ["input_ids", "char_ids", "attention_mask"]
    padding_side = "right"  # as LineageElmoTokenizer: the backward LSTM reads each row from its last real word
    slow_tokenizer_class = LineageElmoTokenizer

    def __init__(self, vocab_file=None, vocab=None, tokenizer_file=None, max_characters_per_token=50, lowercase=False,
                 bos_token="<S>", eos_token="</S>", unk_token="<UNK>", pad_token="<pad>", mark_sentence_start=True,
                 **kwargs):
        if max_characters_per_token < 3:
            raise ValueError(f"max_characters_per_token must be >= 3, got {max_characters_per_token}")
        self.max_characters_per_token = max_characters_per_token
        self.lowercase = lowercase
        self._mark_sentence_start = mark_sentence_start
        if tokenizer_file is None and kwargs.get("tokenizer_object") is None:
            words = read_vocabulary(vocab_file, vocab)
            # Special tokens the vocabulary lacks get the ids the slow tokenizer appends them with; in the model's
            # vocabulary, since WordLevel needs its unknown-word token there.
            known = set(words)
            words += [str(t) for t in dict.fromkeys((bos_token, eos_token, unk_token, pad_token))
                      if t is not None and str(t) not in known]
            # With unk_token=None an unknown word is an error, as in the slow tokenizer (WordLevel then finds no
            # stand-in).
            unk = str(unk_token) if unk_token is not None else "<no unknown-word token>"
            self._tokenizer = Tokenizer(WordLevel({w: i for i, w in enumerate(words)}, unk_token=unk))
        super().__init__(tokenizer_file=tokenizer_file, max_characters_per_token=max_characters_per_token,
                         lowercase=lowercase, bos_token=bos_token, eos_token=eos_token, unk_token=unk_token,
                         pad_token=pad_token, mark_sentence_start=mark_sentence_start, **kwargs)
        # Set from the arguments whatever the backend was read from, so that the settings of tokenizer_config.json
        # (or of from_pretrained's arguments) are the ones used.
        self._tokenizer.normalizer = normalizers.Sequence([
            normalizers.Replace(Regex(FINAL_SIGMA), "\u03c2"), normalizers.Lowercase()]) if lowercase else None
        self._tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(WHITESPACE), behavior="removed")
        # Every word with the space before it, as LineageElmoTokenizer.convert_tokens_to_string.
        self._tokenizer.decoder = decoders.Replace(Regex("^"), " ")
        self.update_post_processor()

    @classmethod
    def convert_to_native_format(cls, trust_remote_code=False, **kwargs):
        # __init__ reads tokenizer.json (else vocab.txt) itself, however the class was found.
        return kwargs

    @property
    def mark_sentence_start(self) -> bool:
        return self._mark_sentence_start

    @mark_sentence_start.setter
    def mark_sentence_start(self, value: bool):
        # The generation recipe turns it off on a loaded tokenizer: the template must follow.
        self._mark_sentence_start = value
        self.update_post_processor()

    def update_post_processor(self):
        """``<S> a </S>`` and ``<S> a </S> <S> b </S>``, each sentence of a pair in its own segment (without
        ``mark_sentence_start``: ``a </S>`` and ``a </S> b </S>``), as ``LineageElmoTokenizer`` builds them."""
        bos, eos = str(self.bos_token), str(self.eos_token)
        marked = [bos, "$", eos] if self._mark_sentence_start else ["$", eos]

        def sentence(sequence, segment):
            return " ".join(f"{sequence if piece == '$' else piece}:{segment}" for piece in marked)

        special = [(piece, self.convert_tokens_to_ids(piece)) for piece in marked if piece != "$"]
        self._tokenizer.post_processor = processors.TemplateProcessing(
            single=sentence("$A", 0), pair=f"{sentence('$A', 0)} {sentence('$B', 1)}", special_tokens=special)

    def save_vocabulary(self, save_directory, filename_prefix=None):
        path = os.path.join(save_directory, (filename_prefix + "-" if filename_prefix else "") + "vocab.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(self.convert_ids_to_tokens(list(range(len(self))))) + "\n")
        return (path,)

    def _save_pretrained(self, save_directory, file_names, legacy_format=None, filename_prefix=None):
        # tokenizer.json for this class, and vocab.txt for LineageElmoTokenizer.
        file_names = super()._save_pretrained(save_directory, file_names, legacy_format, filename_prefix)
        return file_names + self.save_vocabulary(save_directory, filename_prefix)

    def _encode_plus(self, text, text_pair=None, is_split_into_words=False, return_tensors=None,
                     return_overflowing_tokens=False, **kwargs):
        if is_split_into_words:
            batched = isinstance(text, (list, tuple)) and bool(text) and isinstance(text[0], (list, tuple))
        else:
            batched = isinstance(text, (list, tuple))
        # One input is encoded as a batch of one: the base class would drop an empty second sentence of a pair.
        texts = text if batched else [text]
        pairs = text_pair if batched or text_pair is None else [text_pair]
        try:
            encoded = super()._encode_plus(texts, pairs, is_split_into_words=is_split_into_words,
                                           return_overflowing_tokens=return_overflowing_tokens, **kwargs)
        except Exception as error:
            if self.unk_token is None and "Missing" in str(error):
                raise ValueError("A word is not in the vocabulary and the tokenizer has no unknown-word token "
                                 "(unk_token=None) to stand for it") from None
            raise
        samples = encoded.get("overflow_to_sample_mapping", range(len(texts)))
        added = self.added_tokens_encoder
        char_ids = []
        for encoding, sample in zip(encoded.encodings, samples):
            sources = (texts[sample], pairs[sample] if pairs is not None else None)
            char_ids.append([self._token_char_ids(token, sources, sequence, word, span, is_split_into_words, added)
                             for token, sequence, word, span in zip(encoding.tokens, encoding.sequence_ids,
                                                                    encoding.word_ids, encoding.offsets)])
        data = {**encoded, "char_ids": char_ids}
        if not batched and return_tensors is None and not return_overflowing_tokens:
            data = {key: value[0] for key, value in data.items()}
        return BatchEncoding(data, encoded.encodings, tensor_type=return_tensors)

    def _token_char_ids(self, token, sources, sequence, word, span, is_split_into_words, added):
        if sequence is None:  # a sentence marker or padding
            return self.char_ids_of(token)
        source = sources[sequence][word] if is_split_into_words else sources[sequence]
        piece = source[span[0]:span[1]]
        # As LineageElmoTokenizer.tokenize: added tokens are found before (and kept out of) lowercasing.
        return self.char_ids_of(piece.lower() if self.lowercase and piece not in added else piece)


__all__ = ["LineageElmoTokenizer", "LineageElmoTokenizerFast", "word_to_char_ids", "marker_char_ids"]
