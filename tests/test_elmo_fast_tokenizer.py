"""ELMo's fast tokenizer (issue 35): ``LineageElmoTokenizerFast`` gives exactly what ``LineageElmoTokenizer`` gives
(word ids, character ids, masks, segments), plus what transformers' run_ner.py and run_qa.py need from a fast
tokenizer — ``word_ids()``, offsets, overflowing windows — and it is what ``AutoTokenizer`` loads, for a saved
folder, the shipped checkpoint and a Hub-style folder read with ``trust_remote_code`` alone."""

import itertools
import json
import re

import pytest
import torch
from datasets import Dataset
from transformers import (
    AutoConfig,
    AutoModelForTokenClassification,
    AutoTokenizer,
    DataCollatorForTokenClassification,
    DataCollatorWithPadding,
    PreTrainedTokenizerFast,
    Trainer,
    TrainingArguments,
)

import hf_lineage
from hf_lineage import LineageElmoConfig, LineageElmoTokenizer, LineageElmoTokenizerFast
from hf_lineage.models.tokenization_lineage_elmo import WHITESPACE

from conftest import run_without_hf_lineage

VOCAB = ["<pad>", "<UNK>", "<S>", "</S>", "the", "cat", "sat", "a", "dog", ",", ".", "é", "ünï", "σοφος", "x"]
KEYS = ("input_ids", "attention_mask", "token_type_ids", "special_tokens_mask", "char_ids")
TEXTS = ["the cat sat", "", "   ", "The CAT, sat.", "ünï Ünï σοφος ΣΟΦΟΣ", "a<S>b </S> x", "é e\u0301 😀 東京",
         "tab\tnew\nline\x1cfs\u3000wide\u00a0nbsp", "zero\u200bwidth", "x" * 80, "<UNK> <pad> zebra"]
WORDS = [["The", "cat", ""], [], ["a b", "  ", "Zebra,", "<S>"], ["x"]]


def pair_of_tokenizers(**kwargs):
    return LineageElmoTokenizer(vocab=VOCAB, **kwargs), LineageElmoTokenizerFast(vocab=VOCAB, **kwargs)


def assert_same(slow, fast, *args, **kwargs):
    kwargs = {"return_special_tokens_mask": True, "return_token_type_ids": True, **kwargs}
    expected, got = slow(*args, **kwargs), fast(*args, **kwargs)
    for key in KEYS:
        a, b = expected[key], got[key]
        a, b = (a.tolist(), b.tolist()) if torch.is_tensor(a) else (a, b)
        assert a == b, (args, kwargs, key)


@pytest.mark.parametrize("lowercase,mark_sentence_start", [(False, True), (True, True), (False, False)])
def test_fast_gives_what_the_slow_tokenizer_gives(lowercase, mark_sentence_start):
    slow, fast = pair_of_tokenizers(lowercase=lowercase, mark_sentence_start=mark_sentence_start)
    assert fast.is_fast and len(fast) == len(slow) and fast.get_vocab() == slow.get_vocab()
    for text in TEXTS:
        assert_same(slow, fast, text)
    for first, second in itertools.product(TEXTS[:6], repeat=2):  # pairs, an empty sentence among them
        assert_same(slow, fast, first, second)
    assert_same(slow, fast, TEXTS, padding=True)
    assert_same(slow, fast, TEXTS, TEXTS[::-1], padding="max_length", max_length=60, return_tensors="pt")
    assert_same(slow, fast, TEXTS, padding=True, pad_to_multiple_of=8, padding_side="left", return_tensors="pt")
    for words in WORDS:  # empty words, a word holding a space, an added token
        assert_same(slow, fast, words, is_split_into_words=True)
    assert_same(slow, fast, WORDS, is_split_into_words=True, padding=True, return_tensors="pt")
    assert_same(slow, fast, WORDS, WORDS[::-1], is_split_into_words=True, padding=True)
    assert_same(slow, fast, "the cat", add_special_tokens=False)
    assert slow.decode(slow("the zebra sat")["input_ids"]) == fast.decode(fast("the zebra sat")["input_ids"])


def test_truncation_keeps_the_same_words():
    """Every strategy, side, pair shape and length where a cut can be made (the fast tokenizer refuses to cut a
    sentence it was told to cut to nothing or less, where the slow one returns too much or an empty sentence)."""
    slow, fast = pair_of_tokenizers()
    words = ["the", "cat", "zebra", "a", "dog", "yak", "x"]
    for side in ("right", "left"):
        slow.truncation_side = fast.truncation_side = side
        for n1, n2 in itertools.product(range(6), [None, *range(6)]):
            first, second = " ".join(words[:n1]), None if n2 is None else " ".join(words[-n2:] if n2 else [])
            special = 2 if second is None else 4
            for max_length, strategy in itertools.product(range(special + 1, special + 12),
                                                          ("longest_first", "only_first", "only_second")):
                if strategy == "only_second" and second is None:
                    continue
                excess = n1 + (n2 or 0) + special - max_length
                cut = {"only_first": n1, "only_second": n2}.get(strategy)
                if excess > 0 and cut is not None and excess >= cut:
                    continue
                assert_same(slow, fast, first, second, truncation=strategy, max_length=max_length)
    fast.truncation_side = "right"
    words_out = fast(["the", "cat", "zebra"], is_split_into_words=True, truncation=True, max_length=4)
    assert words_out.word_ids() == [None, 0, 1, None]


def test_an_unknown_word_keeps_its_own_characters_and_the_offsets_point_at_it():
    fast = LineageElmoTokenizerFast(vocab=VOCAB, lowercase=True)
    text = "The  Zebra, sat"
    enc = fast(text, return_offsets_mapping=True)
    assert fast.convert_ids_to_tokens(enc["input_ids"]) == ["<S>", "the", "<UNK>", "sat", "</S>"]
    assert [text[a:b] for a, b in enc["offset_mapping"][1:-1]] == ["The", "Zebra,", "sat"]
    assert enc["offset_mapping"][0] == enc["offset_mapping"][-1] == (0, 0)
    assert enc.word_ids() == [None, 0, 1, 2, None]
    assert enc["char_ids"][2] == fast.char_ids_of("zebra,")  # its characters (lowercased), not <UNK>'s
    assert enc["char_ids"][0] == fast.char_ids_of("<S>") and enc["char_ids"][-1] == fast.char_ids_of("</S>")
    words = fast([["New", "York", ""], ["is", "big"]], is_split_into_words=True, padding=True,
                 return_offsets_mapping=True)
    assert words.word_ids(0) == [None, 0, 1, None] and words.word_ids(1) == [None, 0, 1, None]
    assert words["offset_mapping"][0][1:3] == [(0, 3), (0, 4)]  # offsets inside each pre-split word
    assert words["char_ids"][0][2] == fast.char_ids_of("york")
    pair = fast("the cat", "a zebra")
    assert pair.sequence_ids() == [None, 0, 0, None, None, 1, 1, None]
    assert pair["char_ids"][6] == fast.char_ids_of("zebra")


def test_the_split_is_str_split():
    """The fast tokenizer splits on exactly the characters ``str.split()`` does (the ASCII separators included),
    and lowercases as ``str.lower`` (a word-final capital sigma becomes ς)."""
    everything = [chr(c) for c in range(0x110000) if 0xD800 > c or c > 0xDFFF]
    assert [c for c in everything if re.fullmatch(WHITESPACE, c)] == [c for c in everything if c.isspace()]
    fast = LineageElmoTokenizerFast(vocab=VOCAB, lowercase=True)
    text = "x".join(c for c in everything if c.isspace()) + "x\u200bx\x1bx"
    assert len(fast(text)["input_ids"]) == len(text.split()) + 2
    assert fast.convert_ids_to_tokens(fast("ΣΟΦΟΣ")["input_ids"]) == ["<S>", "σοφος", "</S>"]


def test_overflowing_windows_carry_their_characters():
    """run_qa.py's call: question and passage, only the passage cut, windows overlapping by ``stride``."""
    fast = LineageElmoTokenizerFast(vocab=VOCAB)
    question, passage = "what sat", "the cat sat on a mat near the dog by a river bank"
    enc = fast([question], [passage], truncation="only_second", max_length=10, stride=2,
               return_overflowing_tokens=True, return_offsets_mapping=True, padding="max_length")
    assert len(enc["input_ids"]) > 1 and set(enc["overflow_to_sample_mapping"]) == {0}
    for i, (ids, chars, offsets) in enumerate(zip(enc["input_ids"], enc["char_ids"], enc["offset_mapping"])):
        assert len(ids) == len(chars) == 10
        for k, sequence in enumerate(enc.sequence_ids(i)):
            if sequence is not None:
                source = passage if sequence == 1 else question
                assert chars[k] == fast.char_ids_of(source[offsets[k][0]:offsets[k][1]])
        assert all(row == [0] * 50 for row, mask in zip(chars, enc["attention_mask"][i]) if not mask)
    tensors = fast([question], [passage], truncation="only_second", max_length=10, stride=2,
                   return_overflowing_tokens=True, padding=True, return_tensors="pt")
    assert tensors["char_ids"].shape == (len(enc["input_ids"]), 10, 50)


def test_pad_and_the_collators_pad_char_ids():
    slow, fast = pair_of_tokenizers()
    for tokenizer in (slow, fast):
        features = [tokenizer("a dog"), tokenizer("the cat sat on the mat")]
        collated = DataCollatorWithPadding(tokenizer)(features)
        assert collated["char_ids"].shape == (2, 8, 50) and (collated["char_ids"][0, 4:] == 0).all()
        left = tokenizer.pad(features, padding_side="left", return_tensors="pt")
        assert (left["char_ids"][0, :4] == 0).all() and left["input_ids"][0, :4].tolist() == [0] * 4
    words = fast([["a", "dog"], ["the", "cat", "sat"]], is_split_into_words=True)
    features = [{**{k: v[i] for k, v in words.items()}, "labels": [-100] + [1] * (len(words["input_ids"][i]) - 2)
                 + [-100]} for i in range(2)]
    batch = DataCollatorForTokenClassification(fast)(features)
    assert batch["char_ids"].shape == (2, 5, 50) and batch["labels"][0].tolist() == [-100, 1, 1, -100, -100]


def test_settings_follow_the_tokenizer_through_saving(tmp_path):
    fast = LineageElmoTokenizerFast(vocab=VOCAB, lowercase=True)
    fast.mark_sentence_start = False  # as the generation recipe sets it: the template follows
    assert fast("The cat")["input_ids"] == [4, 5, 3]
    assert fast("the", "cat", return_token_type_ids=True)["token_type_ids"] == [0, 0, 1, 1]
    fast.save_pretrained(tmp_path)
    assert {"tokenizer.json", "vocab.txt", "tokenization_lineage_elmo.py"} <= {p.name for p in tmp_path.iterdir()}
    auto_map = json.loads((tmp_path / "tokenizer_config.json").read_text())["auto_map"]["AutoTokenizer"]
    assert auto_map == ["tokenization_lineage_elmo.LineageElmoTokenizer",
                        "tokenization_lineage_elmo.LineageElmoTokenizerFast"]
    LineageElmoConfig.from_named("tiny", vocab_size=len(VOCAB)).save_pretrained(tmp_path)
    for loaded in (AutoTokenizer.from_pretrained(tmp_path), LineageElmoTokenizer.from_pretrained(tmp_path)):
        assert loaded("The cat")["input_ids"] == [4, 5, 3] and loaded.lowercase
    assert type(AutoTokenizer.from_pretrained(tmp_path)) is LineageElmoTokenizerFast


def test_vocabularies_without_specials_and_strict_tokenizers_behave_as_the_slow_one():
    slow, fast = (cls(vocab=["<S>", "</S>", "the", "cat"]) for cls in (LineageElmoTokenizer, LineageElmoTokenizerFast))
    assert (fast.unk_token_id, fast.pad_token_id) == (slow.unk_token_id, slow.pad_token_id) == (4, 5)
    assert_same(slow, fast, ["the zebra", "cat"], padding=True)
    strict = LineageElmoTokenizerFast(vocab=["<S>", "</S>", "the"], unk_token=None)
    assert strict(["the"])["input_ids"] == [[0, 2, 1]]
    with pytest.raises(ValueError, match="unk_token=None"):
        strict(["the zebra"])


def test_auto_tokenizer_returns_the_fast_tokenizer_for_saved_folders(tmp_path):
    config = LineageElmoConfig.from_named("tiny", vocab_size=len(VOCAB))
    for name, cls in (("slow", LineageElmoTokenizer), ("fast", LineageElmoTokenizerFast)):
        cls(vocab=VOCAB).save_pretrained(tmp_path / name)  # a folder written before the fast tokenizer, and now
        config.save_pretrained(tmp_path / name)
        loaded = AutoTokenizer.from_pretrained(tmp_path / name)
        assert type(loaded) is LineageElmoTokenizerFast and isinstance(loaded, PreTrainedTokenizerFast)
        assert type(LineageElmoTokenizer.from_pretrained(tmp_path / name)) is LineageElmoTokenizer
        assert_same(LineageElmoTokenizer(vocab=VOCAB), loaded, TEXTS, padding=True)


def test_the_pretraining_tokenizer_is_the_fast_one():
    from hf_lineage.objectives.elmo import DataCollatorForElmo, elmo_tokenizer_from_corpus

    tokenizer = elmo_tokenizer_from_corpus(iterator=["the cat sat", "the dog"])
    assert type(tokenizer) is LineageElmoTokenizerFast
    batch = DataCollatorForElmo(tokenizer)([{"words": ["the", "cat"]}, {"words": ["dog"]}])
    dog = tokenizer.convert_tokens_to_ids("dog")
    assert batch["char_ids"].shape == (2, 4, 50) and batch["labels"][1].tolist() == [2, dog, 3, -100]


def test_the_shipped_checkpoint_loads_the_fast_tokenizer():
    folder = hf_lineage.checkpoints.path("elmo")
    fast, slow = AutoTokenizer.from_pretrained(folder), LineageElmoTokenizer.from_pretrained(folder)
    assert type(fast) is LineageElmoTokenizerFast and type(slow) is LineageElmoTokenizer
    assert fast.model_max_length == slow.model_max_length == 512 and len(fast) == len(slow) == 8000
    assert_same(slow, fast, ["The bank of the river , said Mr. Quixotically .", ""], padding=True)
    assert_same(slow, fast, "Who sat ?", "The cat sat on the mat .", truncation="only_second", max_length=8)


def test_a_hub_folder_loads_the_fast_tokenizer_with_trust_remote_code_alone(tmp_path):
    folder = hf_lineage.checkpoints.path("elmo")
    # The shipped folder holds no code: saving the loaded config and tokenizer writes it, with the auto_map naming it.
    AutoConfig.from_pretrained(folder).save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(folder).save_pretrained(tmp_path)
    assert {"configuration_lineage_elmo.py", "tokenization_lineage_elmo.py"} <= {p.name for p in tmp_path.iterdir()}
    expected = AutoTokenizer.from_pretrained(folder)(["the cat zebra"], return_offsets_mapping=True)
    out = run_without_hf_lineage(f"""
from transformers import AutoTokenizer
tokenizer = AutoTokenizer.from_pretrained({str(tmp_path)!r}, trust_remote_code=True)
enc = tokenizer(["the cat zebra"], return_offsets_mapping=True)
print(type(tokenizer).__name__, tokenizer.is_fast, enc.word_ids(0) == [None, 0, 1, 2, None])
print(enc["input_ids"] == {expected["input_ids"]!r} and enc["char_ids"] == {expected["char_ids"]!r})
""", cwd=tmp_path)
    assert out.split()[-4:] == ["LineageElmoTokenizerFast", "True", "True", "True"]


def test_run_ner_style_fine_tuning_of_the_shipped_checkpoint(tmp_path):
    """transformers' run_ner.py, condensed: it refuses a tokenizer that is not a PreTrainedTokenizerFast, aligns
    labels with ``word_ids()``, pads with DataCollatorForTokenClassification and trains with the plain Trainer."""
    folder = hf_lineage.checkpoints.path("elmo")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert isinstance(tokenizer, PreTrainedTokenizerFast) and tokenizer.is_fast
    data = Dataset.from_dict({"tokens": [["EU", "rejects", "German", "call"], ["Peter", "Blackburn"],
                                         ["BRUSSELS", "1996-08-22"], ["The", "Quixotic", "plan", "failed", "."]],
                              "ner_tags": [[1, 0, 2, 0], [3, 4], [1, 0], [0, 0, 0, 0, 0]]})

    def tokenize_and_align_labels(examples):
        tokenized = tokenizer(examples["tokens"], truncation=True, max_length=16, is_split_into_words=True)
        labels = []
        for i, tags in enumerate(examples["ner_tags"]):
            previous, row = None, []
            for word in tokenized.word_ids(batch_index=i):
                row.append(-100 if word is None or word == previous else tags[word])
                previous = word
            labels.append(row)
        tokenized["labels"] = labels
        return tokenized

    train = data.map(tokenize_and_align_labels, batched=True, remove_columns=data.column_names)
    assert train[0]["labels"] == [-100, 1, 0, 2, 0, -100] and len(train[0]["char_ids"]) == 6
    model = AutoModelForTokenClassification.from_pretrained(folder, num_labels=5)
    args = TrainingArguments(output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=4, report_to=[],
                             use_cpu=True, save_strategy="no", disable_tqdm=True, log_level="error")
    trainer = Trainer(model=model, args=args, train_dataset=train,
                      data_collator=DataCollatorForTokenClassification(tokenizer))
    result = trainer.train()
    assert result.global_step == 1 and torch.isfinite(torch.tensor(result.training_loss))


def test_the_recipes_read_the_fast_tokenizer_as_they_read_the_slow_one():
    from hf_lineage.models.pipeline_lineage_question_answering import encode_question_context
    from hf_lineage.tasks.labeling import tokenize_and_align

    slow, fast = pair_of_tokenizers()
    examples = {"tokens": [["the", "cat", "sat"], ["a", "zebra"]], "tags": [["O", "B", "O"], ["O", "B"]]}
    by_slow, by_fast = (tokenize_and_align(examples, t, {"O": 0, "B": 1}, 16) for t in (slow, fast))
    for key in ("input_ids", "char_ids", "labels", "first_tokens"):
        assert by_slow[key] == by_fast[key]
    context = "the cat sat on a mat near the dog by a river bank"
    windows = encode_question_context(fast, ["what sat"], [context], max_length=10, doc_stride=2)
    assert len(windows["input_ids"]) > 1 and set(windows["example_index"]) == {0}
    for ids, chars, offsets in zip(windows["input_ids"], windows["char_ids"], windows["offset_mapping"]):
        assert len(ids) == len(chars) == len(offsets)
        passage = [(k, span) for k, span in enumerate(offsets) if span is not None]
        assert passage and all(chars[k] == fast.char_ids_of(context[a:b]) for k, (a, b) in passage)
        assert all(context[a:b] in context.split() for _, (a, b) in passage)  # whole words
