"""The labeling diagnosis of ``hf-lineage lineage``: accuracy on seen and unseen words, and outside a vocabulary."""

import numpy as np
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from hf_lineage.lineage import diagnostics, report

TRAIN = [{"tokens": ["the", "cat", "sat"], "tags": ["DET", "NOUN", "VERB"]}]
VALIDATION = [{"tokens": ["the", "dog", "sat"], "tags": ["DET", "NOUN", "VERB"]},
              {"tokens": ["a", "cat"], "tags": ["DET", "NOUN"]}]


def word_level_tokenizer(words):
    vocab = {"<unk>": 0, **{w: i + 1 for i, w in enumerate(words)}}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")


def test_unknown_words_are_those_the_tokenizer_maps_to_unk():
    tokenizer = word_level_tokenizer(["the", "sat", "cat"])
    assert diagnostics.unknown_words(tokenizer, ["the", "dog", "sat", "a", "cat", "dog"]) == {"dog", "a"}


def test_accuracy_is_split_by_seen_unseen_and_vocabulary():
    # "dog" and "a" are unseen in the labelled set; "dog" alone is outside the vocabulary.
    tagger = [np.array([1.0, 0.0, 1.0]), np.array([1.0, 1.0])]  # wrong on "dog" only
    averaged = [np.array([1.0, 0.5, 1.0]), np.array([0.0, 1.0])]  # a mean over two seeds
    result = diagnostics.labeling_words(TRAIN, VALIDATION, {"tagger": ("word2vec", tagger), "other": (None, averaged)},
                                        {"word2vec": {"dog"}})
    assert result["validation_words"] == 5 and result["unseen_share"] == pytest.approx(2 / 5)
    assert result["outside_vocabulary_share"] == {"word2vec": pytest.approx(1 / 5)}
    tagger_row, other_row = result["systems"]
    assert tagger_row == {"system": "tagger", "family": "word2vec", "all": pytest.approx(0.8), "seen": 1.0,
                          "unseen": 0.5, "outside_vocabulary": 0.0, "inside_vocabulary": 1.0}
    assert other_row["all"] == pytest.approx(0.7) and other_row["seen"] == pytest.approx(1.0)
    assert other_row["unseen"] == pytest.approx(0.25) and "outside_vocabulary" not in other_row


def test_units_that_do_not_match_the_validation_words_are_refused():
    with pytest.raises(ValueError, match="4 scored words for 5 validation words"):
        diagnostics.labeling_words(TRAIN, VALIDATION, {"short": (None, [np.ones(2), np.ones(2)])}, {})


def test_the_report_shows_the_split_and_the_bound_it_implies():
    tagger = [np.array([1.0, 0.0, 1.0]), np.array([1.0, 1.0])]
    words = diagnostics.labeling_words(TRAIN, VALIDATION, {"word2vec frozen": ("word2vec", tagger)},
                                       {"word2vec": {"dog"}})
    text = "\n".join(report._labeling_words_section({"labeling_words": words}))
    assert "| word2vec frozen | 0.800 | 1.000 | 0.500 | 0.000 |" in text
    assert "unseen (40.0 %)" in text and "outside word2vec's vocabulary (20.0 %)" in text
    # At most 0.6 + 0.4 * 0.5 = 0.8 with every seen word right; 0.90 would take (0.9 - 0.6) / 0.4 on unseen words.
    assert "at most 0.800 overall" in text and "0.90 overall would take 0.750 on the unseen words" in text
    assert report._labeling_words_section({}) == []
