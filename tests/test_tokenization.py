import json
import os
import subprocess
import sys

import pytest
import transformers
from transformers import AutoTokenizer

from hf_lineage.tokenization import (
    train_bpe_tokenizer,
    train_wordlevel_tokenizer,
    train_wordpiece_tokenizer,
    word_counts,
)

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A quick movement of the enemy will jeopardize six gunboats!",
    "The five boxing wizards jump quickly, don't they?",
    "Pack my box with five dozen liquor jugs.",
    "How vexingly quick daft zebras jump; the fox watches.",
    "Jackdaws love my big sphinx of quartz.",
    "The café served a naïve résumé to the fiancée.",
    "Crème brûlée and piñata are borrowed words.",
    "我爱北京天安门。",
    "北京是中国的首都。",
    "Tokenizers split words into pieces: playing, played, player, plays.",
    "Running runners run; jumping jumpers jump.",
    "HELLO World, hello world, Hello WORLD.",
] * 3

WORDS = [  # pre-tokenised, PTB-style: counts the = 6, cat = 3, dog = 3, sat = 2, on = 2, mat = 1, ran = 1
    "the cat sat on the mat",
    "the dog sat on the <unk>",
    "the cat ran",
    "the dog <unk> dog cat",
]


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def words_file(tmp_path):
    path = tmp_path / "words.txt"
    path.write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    return path


def tokens(tok, text):
    return tok.convert_ids_to_tokens(tok(text, add_special_tokens=False)["input_ids"])


# --------------------------------------------------------------------------------------------- WordPiece (BERT)


@pytest.fixture
def wordpiece(corpus_file):
    return train_wordpiece_tokenizer([corpus_file], vocab_size=300, min_frequency=1)


def test_wordpiece_specials_and_pair_encoding(wordpiece):
    tok = wordpiece
    assert tok.convert_ids_to_tokens([0, 1, 2, 3, 4]) == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    ids = (tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.mask_token_id)
    assert ids == (0, 1, 2, 3, 4)
    assert tok.model_max_length == 512
    assert tok.model_input_names == ["input_ids", "token_type_ids", "attention_mask"]

    a, b = tokens(tok, "the quick fox"), tokens(tok, "jumps over")
    enc = tok("the quick fox", "jumps over")
    assert tok.convert_ids_to_tokens(enc["input_ids"]) == ["[CLS]", *a, "[SEP]", *b, "[SEP]"]
    assert enc["token_type_ids"] == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    assert tok.convert_ids_to_tokens(tok("the fox")["input_ids"]) == ["[CLS]", "the", "fox", "[SEP]"]

    batch = tok(["the fox", "the quick brown fox"], padding=True)
    assert batch["input_ids"][0][-1] == 0 and batch["attention_mask"][0][-1] == 0


def test_wordpiece_cjk_one_char_per_token(wordpiece):
    assert tokens(wordpiece, "我爱北京") == ["我", "爱", "北", "京"]
    assert tokens(wordpiece, "北京abc首都") == ["北", "京", *tokens(wordpiece, "abc"), "首", "都"]
    assert tokens(wordpiece, "龍") == ["[UNK]"]  # unseen CJK char: one unknown token, not merged with neighbours


def test_wordpiece_continuation_pieces(wordpiece):
    pieces = tokens(wordpiece, "quickplayers")  # unseen as a whole word
    assert len(pieces) > 1 and all(p.startswith("##") for p in pieces[1:]) and not pieces[0].startswith("##")
    assert wordpiece.decode(wordpiece("the quickplayers")["input_ids"], skip_special_tokens=True) == "the quickplayers"
    assert "[UNK]" in tokens(wordpiece, "the §§ dog")


def test_wordpiece_lowercase_and_accents(corpus_file):
    uncased = train_wordpiece_tokenizer([corpus_file], vocab_size=300, min_frequency=1)
    assert tokens(uncased, "HELLO World") == tokens(uncased, "hello world") == ["hello", "world"]
    assert tokens(uncased, "Café") == tokens(uncased, "cafe")  # uncased BERT also strips accents

    cased = train_wordpiece_tokenizer([corpus_file], vocab_size=300, min_frequency=1, lowercase=False)
    assert tokens(cased, "HELLO")[0].startswith("H") and tokens(cased, "hello")[0].startswith("h")
    assert "é" in "".join(tokens(cased, "café"))

    keep_accents = train_wordpiece_tokenizer([corpus_file], vocab_size=300, min_frequency=1, strip_accents=False)
    assert "é" in "".join(tokens(keep_accents, "Café")) and tokens(keep_accents, "HELLO") == ["hello"]


@pytest.mark.parametrize("vocab_size", [20, 60, 150])
def test_wordpiece_vocab_size_respected(corpus_file, vocab_size):
    tok = train_wordpiece_tokenizer([corpus_file], vocab_size=vocab_size, min_frequency=1)
    assert len(tok) <= vocab_size
    assert len(tok) >= vocab_size * 0.8  # a rich enough corpus fills most of the budget


FIDELITY_SENTENCES = [
    "The quick brown fox, surprisingly, jumped!",
    "Café au lait, naïve résumé; CRÈME brûlée.",
    "我爱北京天安门，北京欢迎你。",
    "Unseen xylophonist zigzagged ... (quizzically) -- 42%?",
    "don't   stop\tbelieving \u00a0 ok",
]


@pytest.mark.parametrize("lowercase", [True, False])
def test_wordpiece_matches_transformers_bert(corpus_file, tmp_path, lowercase):
    """Our tokenizer must tokenize exactly as transformers' own BERT tokenizers given our vocab."""
    ours = train_wordpiece_tokenizer([corpus_file], vocab_size=300, min_frequency=1, lowercase=lowercase)
    vocab_file = tmp_path / "vocab.txt"
    vocab = ours.get_vocab()
    vocab_file.write_text("".join(t + "\n" for t in sorted(vocab, key=vocab.get)), encoding="utf-8")

    # The legacy pure-Python BasicTokenizer + WordpieceTokenizer is an independent implementation of BERT's
    # algorithm; v5's BertTokenizer takes the vocab path as `vocab` (it silently ignores `vocab_file`).
    references = [
        transformers.BertTokenizerLegacy(vocab_file=str(vocab_file), do_lower_case=lowercase),
        transformers.BertTokenizer(vocab=str(vocab_file), do_lower_case=lowercase),
    ]
    for sentence in FIDELITY_SENTENCES:
        expected = ours(sentence)["input_ids"]
        assert expected.count(ours.unk_token_id) < len(expected) - 2  # not trivially all-unknown
        for reference in references:
            assert reference(sentence)["input_ids"] == expected, (type(reference).__name__, sentence)
        assert references[0](sentence, "the fox", return_token_type_ids=True).data == ours(sentence, "the fox").data


# --------------------------------------------------------------------------------------------------- BPE (GPT)


def test_byte_level_bpe_encodes_anything_and_decodes_exactly(corpus_file):
    tok = train_bpe_tokenizer([corpus_file], vocab_size=400, min_frequency=1)
    assert tok.convert_ids_to_tokens([0, 1, 2]) == ["<pad>", "<unk>", "<|endoftext|>"]
    assert (tok.pad_token, tok.unk_token, tok.bos_token, tok.eos_token) == ("<pad>", "<unk>", "<|endoftext|>",
                                                                           "<|endoftext|>")
    assert tok.model_input_names == ["input_ids", "attention_mask"] and tok.model_max_length == 512
    assert len(tok) <= 400
    for text in ["The quick brown fox.", "  leading spaces\tand tabs\n", "emoji 🙂🚀 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
                 "Ωμέγα, кириллица, العربية, 日本語", "\x00 control \x7f bytes"]:
        ids = tok(text)["input_ids"]
        assert tok.unk_token_id not in ids
        assert tok.decode(ids) == text
    ids = tok("the fox")["input_ids"]
    assert tok.eos_token_id not in ids and tok.bos_token_id not in ids  # causal LM: nothing added
    assert len(tokens(tok, "the quick")) < len("the quick")  # merges were learned


def test_byte_level_bpe_rejects_vocab_smaller_than_alphabet():
    with pytest.raises(ValueError, match="too small"):
        train_bpe_tokenizer(iterator=CORPUS, vocab_size=100)


def test_char_bpe_uses_end_of_word_suffix_and_unk(corpus_file):
    tok = train_bpe_tokenizer([corpus_file], vocab_size=200, min_frequency=1, byte_level=False, lowercase=True)
    assert tok.convert_ids_to_tokens([0, 1, 2]) == ["<pad>", "<unk>", "<|endoftext|>"]
    assert len(tok) <= 200
    pieces = tokens(tok, "Quick foxes")
    assert pieces[-1].endswith("</w>") and sum(p.endswith("</w>") for p in pieces) == 2
    assert tokens(tok, "QUICK") == tokens(tok, "quick")
    assert tokens(tok, "fox ¤ fox").count("<unk>") == 1
    assert tok.decode(tok("the quick fox.")["input_ids"]) == "the quick fox ."
    cased = train_bpe_tokenizer([corpus_file], vocab_size=200, min_frequency=1, byte_level=False)
    assert tokens(cased, "QUICK") != tokens(cased, "quick")


# -------------------------------------------------------------------------------------- word level (NNLM, w2v)


def test_wordlevel_frequency_order_min_count_and_unk(words_file):
    tok = train_wordlevel_tokenizer([words_file], min_count=2)
    vocab = tok.get_vocab()
    assert tok.convert_ids_to_tokens([0, 1, 2, 3]) == ["<pad>", "<unk>", "<s>", "</s>"]
    assert (tok.pad_token_id, tok.unk_token_id, tok.bos_token_id, tok.eos_token_id) == (0, 1, 2, 3)
    # by count, ties alphabetical: the 6; cat 3, dog 3; on 2, sat 2; mat, ran (1 < min_count) -> <unk>
    assert sorted(vocab, key=vocab.get)[4:] == ["the", "cat", "dog", "on", "sat"]
    assert tok("the mat ran <unk> zebra")["input_ids"] == [4, 1, 1, 1, 1]
    assert tok.model_input_names == ["input_ids", "attention_mask"] and tok.model_max_length == 1_000_000
    # Every word decodes with the space before it, so a decoded continuation joins the text it continues.
    assert tok.decode(tok("the cat sat")["input_ids"]) == " the cat sat"

    counts = word_counts(tok)
    assert list(counts) == sorted(vocab, key=vocab.get)
    # <unk>: two literal ones from the corpus plus mat and ran
    assert counts == {"<pad>": 0, "<unk>": 4, "<s>": 0, "</s>": 0, "the": 6, "cat": 3, "dog": 3, "on": 2, "sat": 2}


def test_wordlevel_max_vocab_size_lowercase_and_iterator(words_file):
    batches = [[line.upper() for line in WORDS[:2]], [line.upper() for line in WORDS[2:]]]
    tok = train_wordlevel_tokenizer(iterator=batches, max_vocab_size=7, lowercase=True)
    assert tok.convert_ids_to_tokens(list(range(4, len(tok)))) == ["the", "cat", "dog"]
    assert word_counts(tok)["<unk>"] == 20 - 12  # 20 corpus words, 12 of them kept
    from_file = train_wordlevel_tokenizer([words_file], max_vocab_size=7)
    assert from_file.get_vocab() == tok.get_vocab() and word_counts(from_file) == word_counts(tok)


# ----------------------------------------------------------------------------------------- shared behaviour


TRAINERS = {
    "wordpiece": lambda f: train_wordpiece_tokenizer([f], vocab_size=300, min_frequency=1),
    "bpe": lambda f: train_bpe_tokenizer([f], vocab_size=400, min_frequency=1),
    "char_bpe": lambda f: train_bpe_tokenizer([f], vocab_size=200, min_frequency=1, byte_level=False),
    "wordlevel": lambda f: train_wordlevel_tokenizer([f], min_count=2),
}


@pytest.mark.parametrize("kind", TRAINERS)
def test_save_and_load_with_plain_auto_tokenizer(kind, corpus_file, tmp_path):
    tok = TRAINERS[kind](corpus_file)
    tok.save_pretrained(tmp_path / "saved")
    config = json.loads((tmp_path / "saved" / "tokenizer_config.json").read_text())
    assert "hf_lineage" not in json.dumps(config)  # loadable without this package
    loaded = AutoTokenizer.from_pretrained(tmp_path / "saved")

    assert loaded.special_tokens_map == tok.special_tokens_map
    assert loaded.get_vocab() == tok.get_vocab()
    assert loaded.model_input_names == tok.model_input_names
    assert loaded.model_max_length == tok.model_max_length
    for text in CORPUS[:13] + ["unseen words ¤ 🙂"]:
        assert loaded(text).data == tok(text).data
        assert loaded(text, "second segment").data == tok(text, "second segment").data
        assert loaded.decode(tok(text)["input_ids"]) == tok.decode(tok(text)["input_ids"])
    if kind == "wordlevel":
        assert word_counts(loaded) == word_counts(tok)
        assert word_counts(loaded)["the"] == sum(line.split().count("the") for line in CORPUS)
        loaded.save_pretrained(tmp_path / "again")  # counts must survive repeated round-trips too
        assert word_counts(AutoTokenizer.from_pretrained(tmp_path / "again")) == word_counts(tok)


def test_word_counts_requires_wordlevel_tokenizer(wordpiece):
    with pytest.raises(ValueError, match="no word counts"):
        word_counts(wordpiece)


ALL_TRAINERS = [train_wordpiece_tokenizer, train_bpe_tokenizer, train_wordlevel_tokenizer]


@pytest.mark.parametrize("train", ALL_TRAINERS)
def test_bad_input_raises(train, corpus_file, tmp_path):
    with pytest.raises(ValueError, match="exactly one"):
        train()
    with pytest.raises(ValueError, match="exactly one"):
        train([corpus_file], iterator=CORPUS)
    with pytest.raises(ValueError, match="not found: .*missing.txt"):
        train([corpus_file, tmp_path / "missing.txt"])
    with pytest.raises(ValueError, match="empty"):
        train([])
    with pytest.raises(ValueError, match="single string"):
        train(iterator="the cat sat")


# ------------------------------------------------------------------------------------------------ reproducibility

_TRAIN_AND_DUMP = """
import json
import sys

from hf_lineage.tokenization import train_bpe_tokenizer, train_wordpiece_tokenizer

path = sys.argv[1]
lines = open(path, encoding="utf-8").read().splitlines()
for tok in [
    train_wordpiece_tokenizer([path], vocab_size=300, min_frequency=1),
    train_wordpiece_tokenizer([path], vocab_size=75, min_frequency=1),  # limit_alphabet (35) cuts among tied chars
    train_wordpiece_tokenizer(iterator=[lines[:20], lines[20:]], vocab_size=200, min_frequency=1, lowercase=False),
    train_bpe_tokenizer([path], vocab_size=400, min_frequency=1),
    train_bpe_tokenizer([path], vocab_size=200, min_frequency=1, byte_level=False),
    train_bpe_tokenizer(iterator=lines, vocab_size=75, min_frequency=1, byte_level=False, lowercase=True),  # same
]:
    print(json.dumps(json.loads(tok.backend_tokenizer.to_str())))  # ASCII: one line each
"""


def test_trainers_are_reproducible_across_processes(corpus_file):
    """Same corpus, same settings: the same tokenizer.json, whatever the process's hash seeds or thread count
    (`tokenizers` seeds its hash maps at random in every process)."""
    runs = [subprocess.Popen([sys.executable, "-c", _TRAIN_AND_DUMP, str(corpus_file)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "RAYON_NUM_THREADS": threads, "TOKENIZERS_PARALLELISM": "true"})
            for threads in ("1", "2")]
    outputs = []
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
        outputs.append(out.strip().split("\n"))
    assert len(outputs[0]) == 6
    for i, (first, second) in enumerate(zip(*outputs)):
        assert json.loads(first) == json.loads(second), f"tokenizer {i} differs between the two processes"


# Lines where a word-level fast path could part from the tokenizer: a literal <unk>, an added token inside a word,
# the separators only Python splits at, a blank line, a line longer than MAX_SENTENCE_WORDS, Unicode spaces.
AWKWARD_LINES = ["the cat <unk> sat", "a<s>b the </s>", "x\x1cy the\x1fcat", "   ", "the cat " * 6000,
                 "é\u00a0z ünïcode\u2003cat\u3000dog", "tab\tand\nnewline"]


def test_word_level_fast_paths_split_and_encode_exactly_as_the_tokenizer():
    """Counting splits with str.split where it agrees with the WhitespaceSplit pre-tokenizer, and word2vec's corpus
    encoder looks words up instead of calling the tokenizer: both must give the tokenizer's own words and ids,
    also for the separators Python alone splits at, added tokens inside words, Unicode spaces and long lines."""
    import numpy as np
    from tokenizers import pre_tokenizers

    import hf_lineage.word_vector_trainers.word2vec as word2vec_cpu
    from hf_lineage.tokenization.trainers import plain_wordlevel_vocabulary, whitespace_words
    from hf_lineage.word_vector_trainers.word2vec_sampling import chunk_sentence

    lines = AWKWARD_LINES
    split = pre_tokenizers.WhitespaceSplit()
    for line in lines:
        assert whitespace_words(line) == [w for w, _ in split.pre_tokenize_str(line)], repr(line)
    assert "x\x1cy".split() == ["x", "y"] and whitespace_words("x\x1cy") == ["x\x1cy"]  # why the check exists
    tokenizer = train_wordlevel_tokenizer(iterator=[*lines, "a b the cat"], min_count=2)  # rare words: <unk>
    counts = word_counts(train_wordlevel_tokenizer(iterator=lines))
    assert counts["x\x1cy"] == 1 and "x" not in counts and counts["cat"] == 6002
    assert plain_wordlevel_vocabulary(tokenizer) is not None
    assert plain_wordlevel_vocabulary(train_wordlevel_tokenizer(iterator=lines, lowercase=True)) is None
    fast = word2vec_cpu.encode_corpus(tokenizer, lines)
    backend = tokenizer.backend_tokenizer
    expected = [np.asarray(e.ids, dtype=np.int32) for e in backend.encode_batch(
        [line for line in lines if line.strip()], add_special_tokens=False)]
    pieces = [p for ids in expected for p in chunk_sentence(ids)]
    np.testing.assert_array_equal(fast[0], np.concatenate(pieces))
    np.testing.assert_array_equal(np.diff(fast[1]), [len(p) for p in pieces])
    assert len(pieces) > len(expected)  # the long line was cut into sentences of MAX_SENTENCE_WORDS
    assert backend.encode("a<s>b", add_special_tokens=False).tokens == ["<unk>", "<s>", "<unk>"]


@pytest.mark.parametrize("min_count", [1, 2])
def test_word2vec_counts_and_encodes_in_one_pass_as_in_two(tmp_path, monkeypatch, min_count):
    """train_word2vec counts the vocabulary in the same pass as it encodes the corpus (read_and_encode_corpus; files
    in numba, first_seen_ids): the tokenizer, its stored counts, the ids and the sentence starts must be
    train_wordlevel_tokenizer's and then encode_corpus's, for lines, for files the numba pass reads (Windows line
    ends, a lone carriage return, \\x0b and \\x1c, non-ASCII letters, no final newline, thousands of words) and for
    files it leaves to the line-by-line pass (Unicode spaces, an added token inside a word)."""
    import numpy as np

    import hf_lineage.word_vector_trainers.word2vec as word2vec_cpu

    monkeypatch.setattr(word2vec_cpu, "_CHECKED_BYTES", 16)  # the files are checked in many pieces
    awkward = tmp_path / "awkward.txt"
    awkward.write_text("\n".join(AWKWARD_LINES) + "\n", encoding="utf-8")
    plain = [tmp_path / "a.txt", tmp_path / "b.txt"]
    plain[0].write_bytes(("the cat <unk> sat\r\n\r\n  x\x1cy the\x0bcat\x0c </s>\nél ünï 猫 the\n"
                          + "the cat " * 6000 + "\n" + " ".join(f"w{i % 3000}" for i in range(9000))).encode())
    plain[1].write_bytes("the dog\r\nsat on\rthe cat <unk>".encode())
    assert word2vec_cpu._first_seen_in_files([str(f) for f in plain]) is not None  # the numba pass reads these
    spaces, inside = tmp_path / "spaces.txt", tmp_path / "inside.txt"
    spaces.write_text("the cat sat on the mat\n" * 3 + "é\u00a0z the\u3000cat the\n", encoding="utf-8")
    inside.write_text("the cat sat on the mat\n" * 3 + "a<s>b the cat\n", encoding="utf-8")
    for left in (awkward, spaces, inside):
        assert word2vec_cpu._first_seen_in_files([str(left)]) is None
    for corpus in (AWKWARD_LINES + ["a b the cat"], [str(f) for f in plain], [str(awkward), str(plain[1])],
                   [str(spaces)], [str(inside)]):
        lines, expected = word2vec_cpu.read_corpus(corpus, None, min_count)
        ids, starts = word2vec_cpu.encode_corpus(expected, lines())
        tokenizer, one_pass_ids, one_pass_starts = word2vec_cpu.read_and_encode_corpus(corpus, None, min_count)
        assert tokenizer.backend_tokenizer.to_str() == expected.backend_tokenizer.to_str()
        assert word_counts(tokenizer) == word_counts(expected)
        np.testing.assert_array_equal(one_pass_ids, ids)
        np.testing.assert_array_equal(one_pass_starts, starts)
    with pytest.raises(ValueError, match="empty"):
        word2vec_cpu.read_and_encode_corpus(["", "  "])
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \r\n")
    with pytest.raises(ValueError, match="empty.txt holds no words"):
        word2vec_cpu.read_and_encode_corpus(str(empty))
    invalid = tmp_path / "invalid.txt"
    invalid.write_bytes(b"the cat sat on the mat\n" * 3 + b"caf\xe9\n")
    with pytest.raises(UnicodeDecodeError):  # as reading it line by line always did
        word2vec_cpu.read_and_encode_corpus(str(invalid))
