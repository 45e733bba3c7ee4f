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


def learned_enough(results: dict) -> list[dict]:
    """Did each pretrained contextual family learn enough to be compared? Three signs, each from the run's own
    numbers: its best layer's UPOS probe against the per-word majority (a representation that knows less about
    words than their identity does has not learnt much), its frozen cell against its from-scratch cell on labeling at
    the main size (frozen pretrained features should not lose to a random network of the same shape trained on the
    task) and likewise its fine-tuned cell (pretraining that leaves fine-tuning worse than a random start gave the
    task nothing), and its pretraining loss over the last third of its curve (still falling: the budget ended its
    learning). One dict per contextual family: the numbers, ``enough`` (True when every test that could run passed;
    None when none could: no probe and no scratch cell to compare with) and ``why`` in words."""
    probes = results.get("probes") or {}
    scores = [s for s in probes.get("scores") or [] if s.get("property") == "upos"]
    cells = {(c["family"], c["variant"]): c for c in results.get("finetuning") or []
             if c["task"] == "labeling" and c.get("train_size") == results.get("main_train_size")
             and c.get("status") == "ok"}
    rows = []
    for family in results.get("families") or []:
        if LINEAGE_FAMILIES.get(family) is None or LINEAGE_FAMILIES[family].claim_group in ("static", "root"):
            continue
        layers = [s for s in scores if s["family"] == family]
        best = max(layers, key=lambda s: s["accuracy"]) if layers else None
        frozen, finetuned, scratch = (cells.get((family, variant)) for variant in ("frozen", "finetuned", "scratch"))
        curve = [p["train_loss"] for p in (results.get("pretraining") or {}).get(family, {}).get("curve") or []
                 if p.get("train_loss") is not None]
        last_third = (curve[-len(curve) // 3], curve[-1]) if len(curve) >= 3 else None
        row = {"family": family,
               "best_probe_layer": best and best["layer_name"], "best_probe": best and best["accuracy"],
               "best_probe_interval": best and best["accuracy_interval"],
               "per_word_majority": best and best["majority"],
               "frozen_labeling": frozen and frozen["score"], "finetuned_labeling": finetuned and finetuned["score"],
               "scratch_labeling": scratch and scratch["score"],
               "pretraining_loss_last_third": last_third}
        reasons = []
        if best is not None and best["accuracy_interval"][1] < best["majority"]:
            reasons.append(f"its best layer's UPOS probe ({best['layer_name']}, {best['accuracy']:.3f}) is below each "
                           f"word's most frequent tag ({best['majority']:.3f})")
        tests = 0 if best is None else 1
        for pretrained, how in ((frozen, "frozen"), (finetuned, "fine-tuned")):
            if pretrained and scratch and pretrained["score"] is not None and scratch["score"] is not None:
                tests += 1
                if pretrained["score"] < scratch["score"]:
                    reasons.append(f"{how}, it tags worse ({pretrained['score']:.3f}) than the same network trained "
                                   f"from scratch ({scratch['score']:.3f})")
        # the probe and the scratch comparisons decide; the loss curve only explains
        row["enough"] = (not reasons) if tests else None
        if last_third and last_third[1] < last_third[0] * 0.98:
            reasons.append(f"its pretraining loss was still falling when the budget ended ({last_third[0]:.2f} → "
                           f"{last_third[1]:.2f} over the last third of its curve)")
        row["why"] = "; ".join(reasons)
        rows.append(row)
    return rows
