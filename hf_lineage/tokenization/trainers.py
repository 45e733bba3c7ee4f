"""Tokenizer trainers for the model families of hf_lineage.

Every function trains with the `tokenizers` library and returns a generic `transformers.PreTrainedTokenizerFast`
(`TokenizersBackend` in transformers v5), so a folder written by `save_pretrained` loads back with plain
`transformers.AutoTokenizer.from_pretrained(folder)`, with or without hf_lineage installed.

Training text comes either from `files` (paths to text files, one sentence per line) or from `iterator` (an
iterable of strings or of batches of strings), never both.

Training is reproducible: the same text and settings give the same tokenizer.json in every process, whatever the
thread count (`RAYON_NUM_THREADS`, `TOKENIZERS_PARALLELISM`). `tokenizers`' own BPE/WordPiece trainers (0.23) are
not: their hash maps are seeded at random in each process, and

* the `##x` (WordPiece) and `x</w>` (character BPE) forms of the alphabet get their ids in hash-map order, while ties
  between equally frequent merges are broken by those ids, so the ids, the merge order and at times the merges
  themselves change from run to run (huggingface/tokenizers#1794, #2066);
* when `limit_alphabet` drops characters, those tied in count at the cut are chosen in hash-map order.

`_train_pinned` works around both with the library's own trainers: a cheap first pass (no merges) finds the
alphabet and its `##x`/`x</w>` forms, characters tied at the `limit_alphabet` cut are kept in code-point order
(counted by a `WordLevelTrainer`, which sorts ties), and the real pass gets them all, in sorted order, as leading
special tokens, so they hold fixed ids (the library's layout: specials, alphabet, forms) and every tie between merges
is broken the same way; the extra special tokens are then removed from the added vocabulary again. Byte-level BPE
(GPT-2's) has no such forms and a fixed 256-symbol alphabet, so it trains in one ordinary pass.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

PathLike = str | os.PathLike

WORDPIECE_SPECIALS = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                      "mask_token": "[MASK]"}
BPE_SPECIALS = {"pad_token": "<pad>", "unk_token": "<unk>", "bos_token": "<|endoftext|>",
                "eos_token": "<|endoftext|>"}
WORDLEVEL_SPECIALS = {"pad_token": "<pad>", "unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"}

# Key in `init_kwargs` (hence in tokenizer_config.json) holding the word-level corpus counts, indexed by token id.
WORD_COUNTS_KEY = "word_counts"


def _check_source(files: Sequence[PathLike] | PathLike | None, iterator: Iterable | None) -> list[str] | None:
    """Validates the files/iterator choice; returns the file list as strings (None when training from `iterator`)."""
    if (files is None) == (iterator is None):
        raise ValueError("Pass exactly one training source: `files` (list of text-file paths) or `iterator` "
                         f"(iterable of strings or batches of strings); got files={files!r}, iterator={iterator!r}.")
    if iterator is not None:
        if isinstance(iterator, str):  # iterating a str would silently train on its characters
            raise ValueError("`iterator` must be an iterable of strings, not a single string; wrap it in a list.")
        return None
    files = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    if not files:
        raise ValueError("`files` is empty: give at least one text file to train on.")
    missing = [str(f) for f in files if not os.path.isfile(f)]
    if missing:
        raise ValueError(f"Training file(s) not found: {', '.join(missing)}")
    return [str(f) for f in files]


def _unique(specials: dict[str, str]) -> list[str]:
    return list(dict.fromkeys(specials.values()))  # bos and eos may share one token; keep first-seen id order


def _train(backend: Tokenizer, trainer, files: list[str] | None, iterator: Iterable | None) -> None:
    if files is not None:
        backend.train(files, trainer)  # Rust reads the files itself, much faster than a Python loop
    else:
        backend.train_from_iterator(iterator, trainer)


def _train_pinned(backend: Tokenizer, trainer_class, specials: list[str], files: list[str] | None,
                  iterator: Iterable | None, *, limit_alphabet: int | None, **trainer_kwargs) -> Tokenizer:
    """Trains `backend` (a BPE or WordPiece model with continuation prefix or end-of-word suffix) reproducibly, as the
    module docstring explains; returns the trained tokenizer (a new object: `backend` itself is left untrained).

    `trainer_kwargs` are those of `trainer_class` (`vocab_size`, `min_frequency`, `continuing_subword_prefix`,
    `end_of_word_suffix`) except `special_tokens`, `limit_alphabet` and `initial_alphabet`, which this sets.
    """
    if files is None:  # three passes over the text: keep an iterator's text in a temporary file
        with tempfile.TemporaryDirectory(prefix="hf_lineage_tokenizer_") as tmp:
            path = os.path.join(tmp, "train.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.writelines(text if text.endswith("\n") else text + "\n" for text in _texts(None, iterator))
            return _train_pinned(backend, trainer_class, specials, [path], None, limit_alphabet=limit_alphabet,
                                 **trainer_kwargs)
    untrained = backend.to_str()

    # 1. No merges (vocab_size 0): the vocabulary is the specials, every character seen and the ##x / x</w> forms.
    probe = Tokenizer.from_str(untrained)
    probe.train(files, trainer_class(**{**trainer_kwargs, "vocab_size": 0}, special_tokens=specials))
    chars = {t for t in probe.get_vocab() if len(t) == 1 and t not in specials}
    forms = {t for t in probe.get_vocab() if len(t) > 1 and t not in specials}

    # 2. The characters `limit_alphabet` keeps: the most frequent, ties in code-point order.
    if limit_alphabet is not None and len(chars) > limit_alphabet:
        counter = Tokenizer.from_str(untrained)
        counter.model = models.WordLevel()
        one_char = pre_tokenizers.Split(Regex("."), behavior="isolated")  # no whitespace is left to match
        counter.pre_tokenizer = (pre_tokenizers.Sequence([counter.pre_tokenizer, one_char])
                                 if counter.pre_tokenizer is not None else one_char)
        counter.train(files, trainers.WordLevelTrainer(vocab_size=2**31 - 1, min_frequency=0, special_tokens=[]))
        ranked = sorted(counter.get_vocab().items(), key=lambda kv: kv[1])  # by count, ties sorted by the trainer
        if {t for t, _ in ranked} != chars:
            raise RuntimeError("tokenizers counted a different alphabet in two passes over the same text")
        chars = {t for t, _ in ranked[:limit_alphabet]}
    prefix = trainer_kwargs.get("continuing_subword_prefix") or ""
    suffix = trainer_kwargs.get("end_of_word_suffix") or ""
    forms = {f for f in forms if f[len(prefix):len(f) - len(suffix)] in chars}

    # 3. The real training, with alphabet and forms at fixed ids (as special tokens, removed again below).
    alphabet = sorted(chars)
    pinned = list(dict.fromkeys([*specials, *alphabet, *sorted(forms)]))
    trained = Tokenizer.from_str(untrained)
    trained.train(files, trainer_class(**trainer_kwargs, special_tokens=pinned, initial_alphabet=alphabet,
                                       limit_alphabet=len(alphabet)))
    state = json.loads(trained.to_str())
    state["added_tokens"] = [t for t in state["added_tokens"] if t["content"] in specials]
    return Tokenizer.from_str(json.dumps(state))


def _wrap(backend: Tokenizer, specials: dict[str, str], model_max_length: int, model_input_names: list[str],
          **init_kwargs) -> PreTrainedTokenizerFast:
    # Passing model_input_names (and any extra init kwargs) to the constructor, rather than setting attributes
    # afterwards, is what makes them land in tokenizer_config.json and survive a save/load round-trip.
    return PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=model_max_length,
                                   model_input_names=model_input_names, **specials, **init_kwargs)


def train_wordpiece_tokenizer(files: Sequence[PathLike] | None = None, iterator: Iterable | None = None, *,
                              vocab_size: int = 30522, min_frequency: int = 2, lowercase: bool = True,
                              strip_accents: bool | None = None, model_max_length: int = 512,
                              limit_alphabet: int = 1000) -> PreTrainedTokenizerFast:
    """Trains BERT's WordPiece tokenizer (uncased by default, like `bert-base-uncased`).

    Normalisation and pre-tokenisation are BERT's (`BertNormalizer` + `BertPreTokenizer`): control characters are
    removed, CJK characters become one token each, text is split on whitespace and punctuation; accents are stripped
    when `strip_accents` is True, or, when it is None, whenever `lowercase` is. Continuation pieces carry `##`.
    Ids 0-4 are `[PAD] [UNK] [CLS] [SEP] [MASK]`; encodings are `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]` with
    token_type_ids 0 for the first segment and 1 for the second. The vocabulary never exceeds `vocab_size`:
    `limit_alphabet` is capped at `(vocab_size - 5) // 2` because each character may also need its `##` form.

    Example:
        >>> tok = train_wordpiece_tokenizer(["corpus.txt"], vocab_size=8000)  # doctest: +SKIP
        >>> tok("The cat sat.", "It purred.")["token_type_ids"]  # doctest: +SKIP
        [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    """
    files = _check_source(files, iterator)
    specials = WORDPIECE_SPECIALS
    backend = Tokenizer(models.WordPiece(unk_token=specials["unk_token"], continuing_subword_prefix="##"))
    backend.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                    strip_accents=strip_accents, lowercase=lowercase)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.decoder = decoders.WordPiece(prefix="##")
    backend = _train_pinned(backend, trainers.WordPieceTrainer, _unique(specials), files, iterator,
                            vocab_size=vocab_size, min_frequency=min_frequency, continuing_subword_prefix="##",
                            limit_alphabet=min(limit_alphabet, (vocab_size - len(specials)) // 2))
    cls, sep = specials["cls_token"], specials["sep_token"]
    backend.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B:1 {sep}:1",
        special_tokens=[(cls, backend.token_to_id(cls)), (sep, backend.token_to_id(sep))])
    return _wrap(backend, specials, model_max_length, ["input_ids", "token_type_ids", "attention_mask"])


def train_bpe_tokenizer(files: Sequence[PathLike] | None = None, iterator: Iterable | None = None, *,
                        vocab_size: int = 40000, min_frequency: int = 2, byte_level: bool = True,
                        lowercase: bool = False, model_max_length: int = 512) -> PreTrainedTokenizerFast:
    """Trains a BPE tokenizer for GPT-style causal language models.

    `byte_level=True` is GPT-2's byte-level BPE: the 256 byte symbols are always in the vocabulary, so any text
    (emoji, any script) encodes without `<unk>` and decodes back exactly; `vocab_size` must therefore be at least
    259 (bytes + specials). `byte_level=False` is the original GPT's (2018) character BPE: words are split on
    whitespace and punctuation, the last symbol of a word carries the `</w>` suffix, characters unseen in training
    become `<unk>`; GPT lower-cased its corpus, hence `lowercase`. Ids 0, 1, 2 are `<pad>`, `<unk>` and
    `<|endoftext|>` (both bos and eos). Nothing is added around encodings: append `eos_token_id` yourself to
    separate documents.

    Example:
        >>> tok = train_bpe_tokenizer(iterator=["some text", "more text"], vocab_size=300)  # doctest: +SKIP
        >>> tok.decode(tok("naïve 🙂")["input_ids"])  # doctest: +SKIP
        'naïve 🙂'
    """
    files = _check_source(files, iterator)
    specials = BPE_SPECIALS
    n_special = len(_unique(specials))
    if byte_level:
        alphabet = pre_tokenizers.ByteLevel.alphabet()
        if vocab_size < len(alphabet) + n_special:
            raise ValueError(f"vocab_size={vocab_size} is too small for byte-level BPE: the {len(alphabet)} byte "
                             f"symbols and {n_special} special tokens alone need {len(alphabet) + n_special}.")
        backend = Tokenizer(models.BPE(unk_token=specials["unk_token"]))
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        backend.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                      special_tokens=_unique(specials), initial_alphabet=alphabet)
    else:
        backend = Tokenizer(models.BPE(unk_token=specials["unk_token"], end_of_word_suffix="</w>"))
        backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        backend.decoder = decoders.BPEDecoder(suffix="</w>")
    if lowercase:
        backend.normalizer = normalizers.Lowercase()
    if byte_level:  # no `</w>` forms and the fixed alphabet of 256 bytes: the library's trainer is reproducible
        _train(backend, trainer, files, iterator)
    else:
        # Each character may appear both bare and with `</w>`, so cap the alphabet to keep within vocab_size.
        backend = _train_pinned(backend, trainers.BpeTrainer, _unique(specials), files, iterator,
                                vocab_size=vocab_size, min_frequency=min_frequency, end_of_word_suffix="</w>",
                                limit_alphabet=max(0, (vocab_size - n_special) // 2))
    return _wrap(backend, specials, model_max_length, ["input_ids", "attention_mask"])


def _texts(files: list[str] | None, iterator: Iterable) -> Iterator[str]:
    if files is not None:
        for path in files:
            with open(path, encoding="utf-8") as f:
                yield from f
    else:
        for item in iterator:
            if isinstance(item, str):
                yield item
            else:
                yield from item


# Python's ``str.split()`` and the ``WhitespaceSplit`` pre-tokenizer split at the same characters, except U+001C-U+001F
# (Python's information separators), which Python splits at and the pre-tokenizer does not (checked over every code
# point, tokenizers 0.23). A text without them splits the same way in about a fifth of the time.
_SPLITS_DIFFER = re.compile("[\x1c-\x1f]")


def whitespace_words(text: str, pre_tokenizer=None) -> list[str]:
    """``text`` split as the ``WhitespaceSplit`` pre-tokenizer splits it, by ``str.split`` when that is the same."""
    if _SPLITS_DIFFER.search(text) is None:
        return text.split()
    return [word for word, _ in (pre_tokenizer or pre_tokenizers.WhitespaceSplit()).pre_tokenize_str(text)]


def plain_wordlevel_vocabulary(tokenizer) -> tuple[dict[str, int], int, tuple[str, ...]] | None:
    """(vocabulary, unknown id, added tokens' texts) of a word-level tokenizer that only splits at whitespace (no
    normaliser), as ``train_wordlevel_tokenizer`` builds without ``lowercase``: a text without the added tokens
    is then encoded by looking its ``whitespace_words`` up, the same ids in a fraction of the time. None for any
    other tokenizer."""
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    if (backend.normalizer is not None or not isinstance(backend.pre_tokenizer, pre_tokenizers.WhitespaceSplit)
            or not isinstance(backend.model, models.WordLevel)):
        return None
    vocabulary = backend.get_vocab(with_added_tokens=True)
    unknown = vocabulary.get(backend.model.unk_token)
    if unknown is None:
        return None
    added = tuple(token.content for token in backend.get_added_tokens_decoder().values())
    return vocabulary, unknown, added


def train_wordlevel_tokenizer(files: Sequence[PathLike] | None = None, iterator: Iterable | None = None, *,
                              min_count: int = 1, max_vocab_size: int | None = None, lowercase: bool = False,
                              model_max_length: int = 1_000_000) -> PreTrainedTokenizerFast:
    """Builds a whitespace word-level vocabulary, for NNLM and word2vec on pre-tokenised corpora (PTB, WikiText).

    Ids 0-3 are `<pad> <unk> <s> </s>` (bos `<s>`, eos `</s>`); words follow by decreasing corpus count, ties in
    alphabetical order, as word2vec's Huffman tree and unigram table (and gensim) expect. Words seen fewer than
    `min_count` times, and those beyond `max_vocab_size` (total size, specials included), map to `<unk>`; a literal
    `<unk>` in the corpus (PTB has them) is the `<unk>` token too. Nothing is added around encodings. Every word
    decodes with a space before it (`" the cat"`), so a decoded continuation joins the text it continues.

    The corpus counts are stored, indexed by token id, in the tokenizer's init kwargs under `"word_counts"`, so they
    are written to tokenizer_config.json by `save_pretrained` and come back with `AutoTokenizer.from_pretrained`.
    Read them with `word_counts(tok)`. `<unk>` counts every corpus token that maps to it; the other specials count
    their literal occurrences (usually 0).

    Example:
        >>> tok = train_wordlevel_tokenizer(iterator=["the cat sat", "the dog"], min_count=1)  # doctest: +SKIP
        >>> tok.convert_ids_to_tokens([4, 5]), word_counts(tok)["the"]  # doctest: +SKIP
        (['the', 'cat'], 2)
    """
    files = _check_source(files, iterator)
    # Counting goes through the same Rust normalizer/pre-tokenizer as encoding, so counted words are encoded words.
    normalizer = normalizers.Lowercase() if lowercase else None
    pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    counts: Counter[str] = Counter()
    for text in _texts(files, iterator):
        if normalizer is not None:
            text = normalizer.normalize_str(text)
            counts.update(word for word, _ in pre_tokenizer.pre_tokenize_str(text))
        else:
            counts.update(whitespace_words(text, pre_tokenizer))
    return wordlevel_tokenizer_from_counts(counts, min_count=min_count, max_vocab_size=max_vocab_size,
                                           lowercase=lowercase, model_max_length=model_max_length)


def wordlevel_tokenizer_from_counts(counts: dict[str, int], *, min_count: int = 1, max_vocab_size: int | None = None,
                                    lowercase: bool = False,
                                    model_max_length: int = 1_000_000) -> PreTrainedTokenizerFast:
    """`train_wordlevel_tokenizer`'s tokenizer for corpus counts already taken (word -> count, the words as its
    pre-tokenizer splits them, lowercased with `lowercase`): the same vocabulary, ids and stored counts."""
    specials = WORDLEVEL_SPECIALS
    special_list = _unique(specials)
    counts = dict(counts)
    special_counts = {t: counts.pop(t, 0) for t in special_list}
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    max_words = None if max_vocab_size is None else max(0, max_vocab_size - len(special_list))
    kept = [(w, c) for w, c in ranked if c >= min_count][:max_words]
    special_counts[specials["unk_token"]] += sum(counts.values()) - sum(c for _, c in kept)

    vocab = special_list + [w for w, _ in kept]
    id_counts = [special_counts[t] for t in special_list] + [c for _, c in kept]
    return wordlevel_tokenizer_from_vocabulary(vocab, id_counts, lowercase=lowercase,
                                               model_max_length=model_max_length)


def wordlevel_tokenizer_from_vocabulary(vocab: Sequence[str], counts: Sequence[int] | None = None, *,
                                        lowercase: bool = False,
                                        model_max_length: int = 1_000_000) -> PreTrainedTokenizerFast:
    """The word-level tokenizer of `train_wordlevel_tokenizer` for a vocabulary given in id order (the specials
    `<pad> <unk> <s> </s>` first, as ids 0-3) and, optionally, each id's corpus count; for vocabularies that come
    from elsewhere, e.g. a gensim model (`hf_lineage.convert.from_gensim`).

    Example:
        >>> tok = wordlevel_tokenizer_from_vocabulary(["<pad>", "<unk>", "<s>", "</s>", "the"], [0, 0, 0, 0, 9])  # doctest: +SKIP
    """
    special_list = _unique(WORDLEVEL_SPECIALS)
    if list(vocab[: len(special_list)]) != special_list:
        raise ValueError(f"a word-level vocabulary starts with the specials {special_list}, got {list(vocab[:4])}")
    if counts is not None and len(counts) != len(vocab):
        raise ValueError(f"{len(counts)} counts for a vocabulary of {len(vocab)} words")
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token=WORDLEVEL_SPECIALS["unk_token"]))
    backend.normalizer = normalizers.Lowercase() if lowercase else None
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    # Each token is a whitespace-separated word, so each decodes with the space that separated it (as byte-level
    # BPE's `Ġword` does): text-generation pipelines decode only the new tokens and append them to the prompt.
    backend.decoder = decoders.Replace(Regex("^"), " ")
    extra = {} if counts is None else {WORD_COUNTS_KEY: [int(c) for c in counts]}
    return _wrap(backend, WORDLEVEL_SPECIALS, model_max_length, ["input_ids", "attention_mask"], **extra)


def word_counts(tokenizer: PreTrainedTokenizerFast) -> dict[str, int]:
    """Corpus count of every vocabulary token, in id order, for a tokenizer from `train_wordlevel_tokenizer`.

    Works on the trained object and on one reloaded with `AutoTokenizer.from_pretrained`.

    Example:
        >>> counts = word_counts(AutoTokenizer.from_pretrained("ptb-tokenizer"))  # doctest: +SKIP
    """
    ids = tokenizer.init_kwargs.get(WORD_COUNTS_KEY)
    if ids is None:
        raise ValueError("This tokenizer has no word counts: it was not built by train_wordlevel_tokenizer.")
    return dict(zip(tokenizer.convert_ids_to_tokens(list(range(len(ids)))), ids))
