"""Scores with their uncertainty, the same way for models and baselines: each system's predictions on the validation
set become per-unit values (tokens grouped by sentence, rows, or one BLEU statistics row per meaning
representation), a score, a 95 % bootstrap interval over those units and, over seeds, the mean and spread.

The pooled per-unit values of a cell (averaged over its seeds; for BLEU, the statistics summed over seeds) are kept
in memory as ``Scored.units`` so that claims compare two systems on the same units (a paired bootstrap,
``statistics.paired_bootstrap_difference``); they are not written to ``results.json``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..experiments import baselines, statistics
from .settings import TASKS

BOOTSTRAP_RESAMPLES = 1000


@dataclass
class Scored:
    summary: dict  # JSON-ready: score, interval, seed_scores, spread (and generation's repetition)
    units: object  # the pooled per-unit values (see the module docstring)
    per_seed_units: list | None = None  # each seed's per-unit values: the seed-and-unit bootstrap resamples them


def gold_of(task: str, validation) -> list:
    """What a prediction is scored against: tag lists, labels, or each MR's references (generation)."""
    kind = TASKS[task].kind
    if kind == "sequence_labeling":
        return list(validation["tags"])
    if kind == "generation":
        return baselines.mr_groups(validation)[1]
    if kind == "question_answering":  # each question's gold answer texts (none: unanswerable)
        return [list(answers["text"]) for answers in validation["answers"]]
    if kind == "intent_and_slots":  # each utterance's [intent, tags]
        return [[intent, list(slots)] for intent, slots in zip(validation["intent"], validation["slots"])]
    return list(validation["label"])


def unit_values(task: str, predictions: list, gold: list):
    kind = TASKS[task].kind
    if kind == "generation":
        if len(predictions) != len(gold):
            raise ValueError(f"{len(predictions)} generated outputs for {len(gold)} meaning representations")
        return statistics.bleu_statistics(predictions, gold)
    if kind in ("question_answering", "intent_and_slots"):
        if len(predictions) != len(gold):
            raise ValueError(f"{len(predictions)} predictions for {len(gold)} gold units")
        if kind == "question_answering":
            return np.asarray([question_f1(p, g) for p, g in zip(predictions, gold)], dtype=float)
        return np.asarray([p[0] == g[0] and list(p[1]) == list(g[1]) for p, g in zip(predictions, gold)], dtype=float)
    return statistics.unit_scores(kind, predictions, gold, by_sentence=kind == "sequence_labeling")


def question_f1(prediction: str, answers: list[str]) -> float:
    """SQuAD's token F1 of one answer against the best of its gold answers (the shipped squad metric's own
    normalisation); a question without answers counts 1 only for the empty prediction (SQuAD 2.0)."""
    from ..metrics.squad.squad import normalize_answer, token_f1

    golds = [a for a in answers if normalize_answer(a)] or [""]
    return max(token_f1(prediction, gold) for gold in golds)


def score_predictions(task: str, per_seed_predictions: list[list], gold: list, seed: int = 0) -> Scored:
    """One system's score over its seeds: ``score`` is the mean of the seeds' scores (generation: the BLEU of all
    seeds' outputs pooled), ``interval`` the 95 % bootstrap interval over seeds and validation units (each resample
    draws the units and the seeds, so it holds validation sampling noise and seed-to-seed training noise; one seed:
    units only), ``spread`` the seeds' standard deviation, min and max."""
    kind = TASKS[task].kind
    values = [unit_values(task, predictions, gold) for predictions in per_seed_predictions]
    seed_scores = [statistics.point_estimate(kind, v) for v in values]
    if kind == "sequence_labeling":
        pooled = [np.mean(sentence, axis=0) for sentence in zip(*values)]
    elif kind == "generation":
        pooled = np.sum(values, axis=0)
    else:
        pooled = np.mean(values, axis=0)
    low, high = statistics.seed_and_unit_interval(kind, values, n=BOOTSTRAP_RESAMPLES, seed=seed)
    spread = statistics.mean_and_spread(seed_scores)
    # BLEU is a corpus statistic: over seeds, the score is that of the pooled outputs (what the interval is of),
    # not the mean of the seeds' BLEUs, which can fall outside it when seeds disagree.
    score = statistics.point_estimate(kind, pooled) if kind == "generation" else spread.mean
    summary = {"score": score, "interval": [low, high], "seed_scores": seed_scores,
               "spread": spread._asdict() if len(seed_scores) > 1 else None}
    if kind == "generation":
        outputs = [text for predictions in per_seed_predictions for text in predictions]
        summary["repetition"] = statistics.repetition(outputs)
        summary["mean_words"] = float(np.mean([len(text.split()) for text in outputs])) if outputs else 0.0
    return Scored(summary, pooled, values)


# How a comparison is decided (the report prints it with every claim).
DECISION_RULE = (
    "A claimed a < b is decided on the same validation units. Its 95 % interval comes from a bootstrap over both "
    "sources of noise: 1,000 resamples, each drawing the validation units once for both systems (sentences for "
    "labeling) and each system's seeds with replacement. It **holds** when that interval lies above 0, every seed's "
    "own difference is positive (a deterministic baseline is compared with every seed), and, with several seeds, "
    "the mean difference exceeds the larger of the two systems' seed standard deviations. It is **reversed** in the "
    "mirror case and **within noise** otherwise. With one seed the seed spread is unknown: an interval above 0 then "
    "gives **holds (one seed)**, which no claim counts as confirmed; run `--seeds 3` to decide."
)


def compare(task: str, better: Scored, worse: Scored, seed: int = 0) -> dict:
    """Is ``better`` really better? See ``DECISION_RULE``: the seed-and-unit bootstrap interval of the difference,
    every seed's difference (a one-seed side, e.g. a deterministic baseline, against every seed of the other), and
    the difference against the seed spread."""
    kind = TASKS[task].kind
    b_values = better.per_seed_units or [better.units]
    w_values = worse.per_seed_units or [worse.units]
    difference = statistics.seed_and_unit_difference(b_values, w_values, task_kind=kind, n=BOOTSTRAP_RESAMPLES,
                                                     seed=seed)
    b_scores, w_scores = better.summary["seed_scores"], worse.summary["seed_scores"]
    if len(b_scores) == len(w_scores):
        per_seed = [b - w for b, w in zip(b_scores, w_scores)]
    elif len(w_scores) == 1 or len(b_scores) == 1:  # a deterministic side against every seed of the other
        per_seed = [b - w for b in b_scores for w in w_scores]
    else:
        raise ValueError(f"cannot pair {len(b_scores)} seeds with {len(w_scores)}")
    seeds = max(len(b_scores), len(w_scores))
    spreads = [statistics.mean_and_spread(x).std for x in (b_scores, w_scores) if len(x) > 1]
    seed_spread = max(spreads) if spreads else None
    beyond_spread = seed_spread is None or abs(difference.difference) > seed_spread
    if difference.low > 0 and all(d > 0 for d in per_seed) and beyond_spread:
        outcome = "holds" if seeds > 1 else "holds (one seed)"
    elif difference.high < 0 and all(d < 0 for d in per_seed) and beyond_spread:
        outcome = "reversed" if seeds > 1 else "reversed (one seed)"
    else:
        outcome = "within noise"
    return {"difference": difference.difference, "interval": [difference.low, difference.high],
            "seed_differences": per_seed, "seed_spread": seed_spread, "outcome": outcome}


def contrast(task: str, systems: list[Scored], weights: tuple, seed: int = 0) -> dict:
    """Σ weights[i] · score(systems[i]) over systems scored on the same validation units, with its 95 % interval from
    the two-level bootstrap (each resample draws the units once for every system, and each system's seeds with
    replacement). E.g. a difference of differences, ``(a − b) − (c − d)``: weights (1, −1, −1, 1)."""
    kind = TASKS[task].kind
    per_seed = [system.per_seed_units or [system.units] for system in systems]
    estimate, low, high = statistics.seed_and_unit_contrast(per_seed, weights, task_kind=kind,
                                                            n=BOOTSTRAP_RESAMPLES, seed=seed)
    return {"difference": estimate, "interval": [low, high]}


BASELINES = {
    # task kind → (name, description, function(train_rows, validation_rows, seed) → predictions)
    "sequence_labeling": [
        ("majority tag", "the most frequent training tag for every word",
         lambda train, validation, seed: baselines.majority_class(train, validation, "labeling")),
        ("most frequent tag per word", "each word's most frequent training tag; unknown words: the most frequent tag",
         lambda train, validation, seed: baselines.most_frequent_tag(train, validation)),
    ],
    "classification": [
        ("majority class", "the most frequent training label",
         lambda train, validation, seed: baselines.majority_class(train, validation, "classification")),
        ("bag-of-words logistic regression", "word uni- and bigram counts, C chosen by 5-fold cross-validation",
         lambda train, validation, seed: baselines.bag_of_words_logistic_regression(
             train, validation, "classification", seed)),
        (baselines.EDGE_WORDS, "the first word, the last word and the final punctuation mark, one-hot, C chosen by "
         "5-fold cross-validation: far above the majority class, the label leaks through the sentence's edges",
         lambda train, validation, seed: baselines.edge_words_logistic_regression(
             train, validation, "classification", seed)),
    ],
    "sentence_pairs": [
        ("majority class", "the most frequent training label",
         lambda train, validation, seed: baselines.majority_class(train, validation, "pairs")),
        ("bag-of-words logistic regression", "each sentence's word n-grams plus their shared words and overlap",
         lambda train, validation, seed: baselines.bag_of_words_logistic_regression(train, validation, "pairs", seed)),
        (baselines.SECOND_SENTENCE_ONLY, "the classification bag-of-words model on the second sentence alone: a "
         "partial-input check (Poliak et al. 2018); far above the majority class, the labels leak through one sentence",
         lambda train, validation, seed: baselines.bag_of_words_logistic_regression(
             baselines.second_sentence_only(train), baselines.second_sentence_only(validation), "classification",
             seed)),
        (baselines.EDGE_WORDS, "each sentence's first word, last word and final punctuation mark, one-hot, C chosen "
         "by 5-fold cross-validation: far above the majority class, the label leaks through the sentences' edges",
         lambda train, validation, seed: baselines.edge_words_logistic_regression(train, validation, "pairs", seed)),
    ],
    "question_answering": [
        ("no answer", "the empty answer for every question (F1: the share of unanswerable questions)",
         lambda train, validation, seed: baselines.no_answer(validation)),
        ("answer by counting", "naive Bayes over the question's words, choosing among the empty answer and the "
         "training answers found in the passage",
         lambda train, validation, seed: baselines.answer_by_counting(train, validation)),
    ],
    "intent_and_slots": [
        ("majority intent, most frequent tag per word", "the most frequent training intent; each word's most "
         "frequent training slot tag (unknown words: the most frequent tag)",
         lambda train, validation, seed: baselines.intent_and_slots_by_counting(train, validation)),
        (baselines.BAG_OF_WORDS_INTENT, "the classification bag-of-words logistic regression for the intent; each "
         "word's most frequent training slot tag",
         lambda train, validation, seed: baselines.intent_and_slots_by_counting(train, validation, seed,
                                                                                bag_of_words_intent=True)),
    ],
    "multiple_choice": [
        ("majority position", "the most frequent right position in training",
         lambda train, validation, seed: baselines.majority_position(train, validation)),
        ("word frequency", "the choice seen most often in the training sentences",
         lambda train, validation, seed: baselines.most_frequent_choice(train, validation)),
        ("edge word", "the choice the training sentences put most often right after the blank's left neighbour and "
         "before its right neighbour (a bigram model of the two words next to the blank)",
         lambda train, validation, seed: baselines.edge_word_choice(train, validation)),
    ],
    "generation": [
        ("nearest-MR retrieval", "the first training reference of the training MR sharing most slot values, its "
         "name and near values replaced by the validation MR's",
         lambda train, validation, seed: baselines.nearest_mr_retrieval(train, validation)),
    ],
}


# A task built to need context (``TaskSpec.needs_context``) is used for the claim "contextual beats static" only if
# neither a bag of words nor the words at the sentence's edges solve it.
CONTEXT_GATE_MARGIN = 0.10
CONTEXT_GATE_BASELINES = {"bag_of_words": "bag-of-words logistic regression", "edge_words": baselines.EDGE_WORDS}


def context_gate(baseline_summaries: list[dict]) -> dict:
    """Whether a context task passes its gate: the bag-of-words and the edge-word logistic regressions both score
    at most :data:`CONTEXT_GATE_MARGIN` (absolute) above the majority-class baseline, on the same training subset and
    validation set as the models. ``baseline_summaries`` are the task's baseline summaries (``name`` and ``score``,
    as in ``results["baselines"][task]``). Returns ``{"passes", "majority", "bag_of_words", "edge_words",
    "margin", "failed_by", "rule"}``; a missing baseline fails the gate (its score is None)."""
    scores = {s["name"]: s.get("score") for s in baseline_summaries}
    majority = scores.get("majority class")
    gate = {"majority": majority, **{key: scores.get(name) for key, name in CONTEXT_GATE_BASELINES.items()}}
    failed = [key for key in CONTEXT_GATE_BASELINES
              if majority is None or gate[key] is None or gate[key] > majority + CONTEXT_GATE_MARGIN + 1e-12]
    return {"passes": not failed, **gate, "margin": CONTEXT_GATE_MARGIN, "failed_by": failed,
            "rule": f"the bag-of-words and the edge-word (first, last word, final punctuation) logistic regressions "
                    f"both score at most {CONTEXT_GATE_MARGIN:.2f} above the majority class"}


def score_baselines(task: str, train, validation, seed: int = 0) -> list[tuple[dict, Scored]]:
    """Every baseline of the task, fitted on ``train`` (the main table's training subset) and scored on the same
    validation units as the models."""
    gold = gold_of(task, validation)
    train_rows, validation_rows = list(train), list(validation)
    scored = []
    for name, description, predict in BASELINES[TASKS[task].kind]:
        result = score_predictions(task, [predict(train_rows, validation_rows, seed)], gold, seed=seed)
        scored.append(({"name": name, "description": description, **result.summary}, result))
    return scored
