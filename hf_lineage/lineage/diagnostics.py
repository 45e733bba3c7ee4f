"""Why a labeling score is where it is: accuracy on the validation words the labelled training set contains and on
those it does not, and for the word-level families (whose tokenizers map an unknown word to ``<unk>``) the words
outside their vocabulary.

A tagger trained on 1,000 sentences meets many words it has never seen labelled; a word-level family also meets
words it never saw in pretraining, which reach it only as ``<unk>``. Splitting the score this way shows which of the
two limits a family: ``hf-lineage lineage`` puts the result in ``results.json`` (``labeling_words``) and the report.
"""

from __future__ import annotations

import numpy as np

from .settings import LINEAGE_FAMILIES


def word_level_families() -> list[str]:
    """Families whose tokenizer has one id per word and ``<unk>`` for every other word. ELMo reads characters, GPT and
    BERT subwords: every word reaches them."""
    return [name for name, family in LINEAGE_FAMILIES.items() if family.word_level]


def unknown_words(tokenizer, words) -> set:
    """The words ``tokenizer`` turns into its unknown token (or into pieces including it)."""
    words = sorted(set(words))
    if not words or tokenizer.unk_token_id is None:
        return set()
    # One single-word sequence each: the ids of one word, and no warning about a sequence longer than the model's.
    encoded = tokenizer([[word] for word in words], is_split_into_words=True, add_special_tokens=False)
    return {word for word, ids in zip(words, encoded["input_ids"]) if tokenizer.unk_token_id in ids}


def _accuracy(correct: np.ndarray, mask: np.ndarray):
    return float(correct[mask].mean()) if mask.any() else None


def labeling_words(train_rows, validation_rows, systems: dict, vocabularies: dict) -> dict:
    """Accuracy of each system on all validation words, on those seen in the labelled training set and on the
    unseen ones; for each word-level family also on the words outside its vocabulary.

    ``systems``: name → (family or None, per-sentence correctness arrays in validation order, as
    ``scoring.Scored.units`` holds them: 0/1, or the mean over seeds). ``vocabularies``: family → the set of
    validation word forms its tokenizer does not know (``unknown_words``)."""
    seen = {word for row in train_rows for word in row["tokens"]}
    words = [word for row in validation_rows for word in row["tokens"]]
    is_unseen = np.asarray([word not in seen for word in words])
    outside = {family: np.asarray([word in unknown for word in words]) for family, unknown in vocabularies.items()}
    rows = []
    for name, (family, units) in systems.items():
        correct = np.concatenate([np.asarray(sentence, dtype=float) for sentence in units]) if units else np.zeros(0)
        if len(correct) != len(words):
            raise ValueError(f"{name}: {len(correct)} scored words for {len(words)} validation words")
        row = {"system": name, "family": family, "all": _accuracy(correct, np.ones(len(words), bool)),
               "seen": _accuracy(correct, ~is_unseen), "unseen": _accuracy(correct, is_unseen)}
        if family in outside:
            row["outside_vocabulary"] = _accuracy(correct, outside[family])
            row["inside_vocabulary"] = _accuracy(correct, ~outside[family])
        rows.append(row)
    return {"validation_words": len(words), "unseen_share": float(is_unseen.mean()) if words else 0.0,
            "outside_vocabulary_share": {family: float(mask.mean()) for family, mask in outside.items()},
            "systems": rows}
