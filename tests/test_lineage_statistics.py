"""Baselines (hf_lineage.experiments.baselines) and uncertainty (hf_lineage.experiments.statistics) on tiny hand-made data."""

import random

import numpy as np
import pytest
import sacrebleu

from hf_lineage.experiments import baselines as B
from hf_lineage.experiments import statistics as S

# --------------------------------------------------------------------------- baselines


def test_most_frequent_tag_rules():
    train = [
        {"tokens": ["The", "dog", "runs"], "tags": ["DET", "NOUN", "VERB"]},
        {"tokens": ["The", "run", "ends"], "tags": ["DET", "NOUN", "VERB"]},
        {"tokens": ["We", "run", "home"], "tags": ["PRON", "VERB", "ADV"]},
        {"tokens": ["They", "run", "a", "dog"], "tags": ["PRON", "VERB", "DET", "NOUN"]},
        {"tokens": ["Light", "light"], "tags": ["ADJ", "NOUN"]},
    ]
    validation = [{"tokens": ["the", "run", "cat", "RUNS", "light", "LIGHT"], "tags": ["DET"] * 6}]
    # the → lowercase of "The" (DET); run → VERB 2 : NOUN 1; cat → unknown → the overall most frequent tag (NOUN 4
    # and VERB 4 tie, alphabetical: NOUN); RUNS → lowercase "runs" → VERB; light (exact) → NOUN;
    # LIGHT → lowercase pool {ADJ 1, NOUN 1}, a tie → NOUN, the more frequent overall.
    assert B.most_frequent_tag(train, validation) == [["DET", "VERB", "NOUN", "VERB", "NOUN", "NOUN"]]


def test_majority_class():
    train = [{"tokens": ["a", "b"], "tags": ["X", "Y"]}, {"tokens": ["c"], "tags": ["Y"]}]
    assert B.majority_class(train, [{"tokens": ["d", "e", "f"], "tags": ["X"] * 3}], "labeling") == [["Y"] * 3]
    rows = [{"sentence": "s", "label": label} for label in ("b", "a", "b", "a", "c")]
    assert B.majority_class(rows, rows[:2], "classification") == ["a", "a"]  # tie a/b: alphabetical
    with pytest.raises(ValueError):
        B.majority_class(rows, rows, "generation")


def test_bag_of_words_learns_punctuation_and_words():
    rng = random.Random(0)
    filler = ["red", "green", "blue", "cat", "dog", "house", "tree", "car", "road", "lake"]

    def row(i):
        words = rng.sample(filler, 4)
        question = i % 2 == 0
        label = "question" if question else "statement"
        return {"sentence": " ".join(words) + (" ?" if question else " ."), "label": label}

    train = [row(i) for i in range(60)]
    validation = [row(i) for i in range(20)]
    predictions = B.bag_of_words_logistic_regression(train, validation, "classification", seed=0)
    assert predictions == [r["label"] for r in validation]  # "?" and "." must be features
    assert predictions == B.bag_of_words_logistic_regression(train, validation, "classification", seed=0)


def test_pair_overlap_features_generalize_to_unseen_words():
    rng = random.Random(1)

    def pairs(vocabulary, count):
        out = []
        for i in range(count):
            first = rng.sample(vocabulary, 5)
            if i % 2 == 0:
                second, label = rng.sample(first, 5), "same"
            else:
                second, label = rng.sample([w for w in vocabulary if w not in first], 5), "different"
            out.append({"sentence1": " ".join(first), "sentence2": " ".join(second), "label": label})
        return out

    train = pairs([f"w{i}" for i in range(40)], 80)
    validation = pairs([f"v{i}" for i in range(40)], 40)  # no word seen in training: only overlap can tell
    predictions = B.bag_of_words_logistic_regression(train, validation, "pairs", seed=0)
    assert predictions == [r["label"] for r in validation]


def test_the_second_sentence_only_baseline_finds_a_cue_in_one_sentence_and_nothing_in_a_relation():
    from hf_lineage.lineage.scoring import BASELINES

    rng = random.Random(2)
    vocabulary = [f"w{i}" for i in range(30)]
    partial = {name: predict for name, _, predict in BASELINES["sentence_pairs"]}[B.SECOND_SENTENCE_ONLY]

    def accuracy(rows_train, rows_validation):
        predictions = partial(rows_train, rows_validation, 0)
        return np.mean([p == r["label"] for p, r in zip(predictions, rows_validation)])

    def relation(count):  # the label is whether the sentences share their words: invisible in one sentence
        rows = []
        for i in range(count):
            first = rng.sample(vocabulary, 4)
            second = rng.sample(first, 4) if i % 2 == 0 else rng.sample([w for w in vocabulary if w not in first], 4)
            rows.append({"sentence1": " ".join(first), "sentence2": " ".join(second),
                         "label": "same" if i % 2 == 0 else "different"})
        return rows

    def cue(count):  # an annotation artefact: every "different" second sentence says "not"
        return [{**r, "sentence2": r["sentence2"] + (" not" if r["label"] == "different" else "")}
                for r in relation(count)]

    assert accuracy(cue(120), cue(60)) == 1.0
    assert accuracy(relation(120), relation(200)) < 0.62
    assert B.second_sentence_only([{"sentence1": "a", "sentence2": "b", "label": "x"}]) == [
        {"sentence": "b", "label": "x"}]


def _question(question, context, *answers):
    return {"question": question, "context": context,
            "answers": {"text": list(answers), "answer_start": [context.index(a) for a in answers]}}


def test_answer_by_counting_links_question_words_to_answers_found_in_the_passage():
    train = [_question("What food does Aromi serve ?", "Aromi serves Chinese food", "Chinese"),
             _question("What food does Clowns serve ?", "Clowns serves Chinese food near Aromi", "Chinese"),
             _question("What food does Zizzi serve ?", "Zizzi serves English food", "English"),
             _question("What is Zizzi near ?", "Zizzi is near Aromi", "Aromi"),
             _question("What is Clowns near ?", "Clowns is a pub", ),  # unanswerable
             _question("What is Aromi near ?", "Aromi is near Clowns", "Clowns"),
             _question("What is Zizzi near ?", "Zizzi is near Clowns", "Clowns")]
    validation = [
        # food: of the training answers in the passage (English, Chinese), the one seen more with "food"
        _question("What food does Bibimbap serve ?", "Bibimbap serves English and Chinese food", "Chinese"),
        # only one food in the passage: found there, whatever its count
        _question("What food does Bibimbap serve ?", "Bibimbap serves English food", "English"),
        # near: the name in the passage that answered "near" questions twice beats the empty answer (once)
        _question("What is Bibimbap near ?", "Bibimbap is near Clowns", "Clowns"),
        # no training answer in the passage: nothing to pick but the empty answer
        _question("What food does Bibimbap serve ?", "Bibimbap serves Thai food"),
    ]
    assert B.answer_by_counting(train, validation) == ["Chinese", "English", "Clowns", ""]
    assert B.no_answer(validation) == [""] * 4


def test_intent_and_slots_by_counting():
    train = [{"words": ["cheap", "food", "near", "Aromi"], "slots": ["B-price", "O", "O", "B-near"], "intent": "a"},
             {"words": ["Aromi", "is", "cheap"], "slots": ["B-name", "O", "B-price"], "intent": "b"},
             {"words": ["near", "Aromi", "kids"], "slots": ["O", "B-near", "O"], "intent": "b"}]
    validation = [{"words": ["cheap", "Aromi", "unknown"]}]
    # Aromi: B-near 2, B-name 1; an unknown word: the most frequent tag overall (O)
    assert B.intent_and_slots_by_counting(train, validation) == [["b", ["B-price", "B-near", "O"]]]
    with_words = B.intent_and_slots_by_counting(train * 4, [{"words": ["kids", "near"]}], bag_of_words_intent=True)
    assert with_words[0][1] == ["O", "O"] and with_words[0][0] in ("a", "b")


def test_qa_and_intent_slots_units_score_f1_and_exact_match():
    from hf_lineage.lineage.scoring import unit_values

    f1 = unit_values("qa", ["the Sorrento", "", "Sorrento Inn", ""], [["The Sorrento"], [], ["Sorrento"], ["x"]])
    np.testing.assert_allclose(f1, [1.0, 1.0, 2 / 3, 0.0])  # SQuAD normalisation; "" right only if unanswerable
    exact = unit_values("intent_slots", [["a", ["O", "B-x"]], ["a", ["O", "O"]], ["b", ["O"]]],
                        [["a", ["O", "B-x"]], ["a", ["O", "B-x"]], ["a", ["O"]]])
    np.testing.assert_array_equal(exact, [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="2 predictions for 1 gold"):
        unit_values("qa", ["a", "b"], [["a"]])


def test_training_subsets_cover_every_intent_and_slot_tag_of_the_evaluated_data():
    import datasets

    from hf_lineage.lineage.stage_data import _subset_covering_labels

    pool = datasets.Dataset.from_list([
        {"words": ["a"], "slots": ["O"], "intent": "x"}, {"words": ["b"], "slots": ["O"], "intent": "x"},
        {"words": ["c"], "slots": ["B-s"], "intent": "x"}, {"words": ["d"], "slots": ["O"], "intent": "y"},
        {"words": ["e"], "slots": ["B-s"], "intent": "y"}])
    evaluated = datasets.Dataset.from_list([{"words": ["f", "g"], "slots": ["B-s", "O"], "intent": "y"}])
    # the first row lacks B-s and y: the first later rows with them are added (c for B-s, d for y)
    assert _subset_covering_labels(pool, [evaluated], 1, ("intent", "slots")) == ([0, 2, 3], 2)
    assert _subset_covering_labels(pool, [evaluated], 1, ()) == ([0], 0)


def test_mr_parsing_and_groups():
    assert B.parse_mr("name [ The Eagle ] , eatType [ coffee shop ] , customer rating [ 5 out of 5 ]") == {
        "name": "The Eagle", "eatType": "coffee shop", "customer rating": "5 out of 5"}
    parsed = B.parse_mr("name [ The Eagle ] , eatType [ coffee shop ] , priceRange [ £20 - 25 ]")
    assert parsed == {"name": "The Eagle", "eatType": "coffee shop", "priceRange": "£20 - 25"}
    assert B.parse_mr("name[Aromi], area[riverside]") == {"name": "Aromi", "area": "riverside"}
    rows = [{"mr": "b", "ref": "1"}, {"mr": "a", "ref": "2"}, {"mr": "b", "ref": "3"}]
    assert B.mr_groups(rows) == (["b", "a"], [["1", "3"], ["2"]])
    assert B.mr_groups([{"source": "s", "target": "t"}]) == (["s"], [["t"]])


def test_nearest_mr_retrieval_picks_and_substitutes():
    train = [
        {"mr": "name [ Alpha ] , eatType [ pub ] , food [ Thai ]", "ref": "Alpha is a Thai pub ."},
        {"mr": "name [ Beta ] , eatType [ coffee shop ] , food [ Thai ] , near [ Gamma ]",
         "ref": "Beta is a Thai coffee shop near Gamma ."},
        {"mr": "name [ Beta ] , eatType [ coffee shop ] , food [ Thai ] , near [ Gamma ]", "ref": "second ref"},
        {"mr": "name [ Zeta ] , eatType [ coffee shop ] , area [ riverside ]", "ref": "Zeta is by the river ."},
        {"mr": "name [ Eta ] , eatType [ coffee shop ] , area [ riverside ]", "ref": "Eta is by the river too ."},
    ]
    validation = [
        # overlap 2 (coffee shop, Thai) with Beta, 1 with Alpha/Zeta/Eta → Beta; names substituted; Gamma → Beta
        # and Beta → Delta at once (no chaining).
        {"mr": "name [ Delta ] , eatType [ coffee shop ] , food [ Thai ] , near [ Beta ]", "ref": "x"},
        {"mr": "name [ Delta ] , eatType [ coffee shop ] , food [ Thai ] , near [ Beta ]", "ref": "y"},
        # overlap 2 with Zeta and with Eta (same slots too): the first in the file wins.
        {"mr": "name [ Omega ] , eatType [ coffee shop ] , area [ riverside ]", "ref": "z"},
    ]
    assert B.nearest_mr_retrieval(train, validation) == [
        "Delta is a Thai coffee shop near Beta .", "Omega is by the river ."]


# --------------------------------------------------------------------------- per-unit scores and BLEU


def test_unit_scores():
    gold = [["A", "B"], ["C"]]
    flat = S.unit_scores("labeling", [["A", "X"], ["C"]], gold)
    np.testing.assert_array_equal(flat, [1, 0, 1])
    grouped = S.unit_scores("labeling", [["A", "X"], ["C"]], gold, by_sentence=True)
    assert [g.tolist() for g in grouped] == [[1, 0], [1]]
    np.testing.assert_array_equal(S.unit_scores("pairs", ["a", "b"], ["a", "a"]), [1, 0])
    with pytest.raises(ValueError):
        S.unit_scores("classification", ["a"], ["a", "b"])
    with pytest.raises(ValueError):
        S.unit_scores("labeling", [["A"]], [["A", "B"]])


OUTPUTS = [
    "The Eagle is a cheap coffee shop near Burger King .",
    "Aromi is a family friendly pub in the city centre .",
    "Nothing matches here at all",
    "Zizzi serves Italian food",
]
REFERENCES = [
    ["The Eagle is a low priced coffee shop near Burger King .", "Near Burger King , The Eagle is a cheap café ."],
    ["Aromi is a pub in the city centre .", "In the city centre , Aromi is a family friendly pub .",
     "Aromi , a pub , welcomes families in the centre ."],
    ["The Mill is a restaurant ."],
    ["Zizzi serves Italian food near the river .", "Italian food is served at Zizzi ."],
]


def test_bleu_from_statistics_equals_sacrebleu_with_ragged_references():
    stats = S.bleu_statistics(OUTPUTS, REFERENCES)
    assert stats.shape == (4, 10)
    most = max(len(r) for r in REFERENCES)
    with_none = [[r[i] if i < len(r) else None for r in REFERENCES] for i in range(most)]
    expected = sacrebleu.corpus_bleu(OUTPUTS, with_none).score
    assert 0 < expected < 100
    assert abs(S.bleu_from_statistics(stats) - expected) < 1e-9
    # The generation recipe pads by repeating the first reference: the same score.
    repeated = [[r[i] if i < len(r) else r[0] for r in REFERENCES] for i in range(most)]
    assert abs(S.bleu_from_statistics(stats) - sacrebleu.corpus_bleu(OUTPUTS, repeated).score) < 1e-9
    # Any subset of sentences: the statistics of those rows give that subset's corpus BLEU.
    subset = [0, 2, 3]
    expected = sacrebleu.corpus_bleu([OUTPUTS[i] for i in subset],
                                     [[r[i] if i < len(r) else None for r in [REFERENCES[j] for j in subset]]
                                      for i in range(2)]).score
    assert abs(S.bleu_from_statistics(stats[subset]) - expected) < 1e-9
    assert S.bleu_from_statistics(stats.sum(axis=0)) == S.bleu_from_statistics(stats)


def test_repetition_and_distinct():
    assert S.repetition(["a b c a b c"]) == pytest.approx(0.25)  # abc bca cab abc: one of four repeats
    assert S.repetition(["a b c d e f", "one two three"]) == 0.0
    assert S.repetition(["a b c a b c", "x y z w", "hi"]) == pytest.approx(0.125)  # "hi" has no 3-gram: left out
    assert S.distinct_n(["a b a b"]) == pytest.approx(2 / 3)
    assert S.distinct_n(["a b", "a b"]) == pytest.approx(0.5)


# --------------------------------------------------------------------------- bootstrap


def test_bootstrap_of_constant_is_degenerate():
    assert S.bootstrap_interval("classification", np.ones(200)) == (1.0, 1.0)
    assert S.bootstrap_interval("classification", np.zeros(200)) == (0.0, 0.0)


def test_bootstrap_half_and_half():
    x = np.tile([0.0, 1.0], 500)
    low, high = S.bootstrap_interval("pairs", x, n=1000, seed=0)
    assert low < 0.5 < high
    assert 0.05 < high - low < 0.075  # 2 × 1.96 × sqrt(0.25 / 1000) ≈ 0.062
    assert S.bootstrap_interval("pairs", x, n=1000, seed=0) == (low, high)
    assert S.bootstrap_interval("pairs", x, n=1000, seed=1) != (low, high)
    narrow = S.bootstrap_interval("pairs", x, confidence=0.5)
    assert low < narrow[0] < narrow[1] < high


def test_labeling_bootstrap_resamples_sentences():
    # 20 sentences of 50 tokens, half all right and half all wrong: 20 independent units, not 1000.
    sentences = [np.full(50, float(i % 2)) for i in range(20)]
    low, high = S.bootstrap_interval("labeling", sentences)
    token_low, token_high = S.bootstrap_interval("accuracy", np.concatenate(sentences))
    assert low < 0.5 < high
    assert high - low > 3 * (token_high - token_low)
    assert S.point_estimate("labeling", sentences) == 0.5
    # per-token accuracy (micro), not the mean of sentence accuracies
    assert S.point_estimate("labeling", [np.ones(3), np.zeros(1)]) == 0.75
    with pytest.raises(ValueError):
        S.bootstrap_interval("labeling", np.concatenate(sentences))  # a flat token array would resample tokens


def test_bleu_bootstrap():
    stats = S.bleu_statistics(OUTPUTS * 5, REFERENCES * 5)
    low, high = S.bootstrap_interval("generation", stats, n=200, seed=3)
    assert low <= S.bleu_from_statistics(stats) <= high and low < high
    assert (low, high) == S.bootstrap_interval("generation", stats, n=200, seed=3)


def test_paired_difference():
    x = np.tile([0.0, 1.0], 300)
    assert tuple(S.paired_bootstrap_difference(x, x, "pairs")) == (0.0, 0.0, 0.0)
    better = S.paired_bootstrap_difference(np.ones(600), x, "pairs")
    assert better.difference == 0.5 and 0 < better.low < 0.5 < better.high
    # Paired: a constant offset on the same units has no sampling noise at all.
    a, b = np.r_[np.ones(300), np.zeros(300)], np.r_[np.ones(300), np.zeros(300)]
    b[0] = 0.0
    shifted = S.paired_bootstrap_difference(a, b, "classification")
    assert shifted.difference == pytest.approx(1 / 600) and shifted.high - shifted.low < 0.01
    sentences = [np.ones(4), np.zeros(2), np.ones(3)]
    assert tuple(S.paired_bootstrap_difference(sentences, sentences, "labeling")) == (0.0, 0.0, 0.0)
    stats = S.bleu_statistics(OUTPUTS, REFERENCES)
    assert tuple(S.paired_bootstrap_difference(stats, stats, "generation", n=100)) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError):
        S.paired_bootstrap_difference(np.ones(3), np.ones(4))


def _stratified_reference(values, strata, n, seed):
    """stratified_bootstrap_means written out: per stratum its own generator (seed, CRC-32 of the name) drawing all
    resamples at once, as the function does (numpy's bounded integers come out differently drawn one resample at a
    time); then every mean by hand, resample by resample."""
    import zlib

    out = np.empty((n, len(values), len(strata)))
    for k, (name, members) in enumerate(strata.items()):
        draws = np.random.default_rng([seed, zlib.crc32(name.encode())]).integers(0, len(members),
                                                                                 size=(n, len(members)))
        for r in range(n):
            for system, row in enumerate(values):
                out[r, system, k] = sum(row[members[i]] for i in draws[r]) / len(members)
    return out


def _strata(sizes, rng):
    """Strata of the given sizes over interleaved units (a stratum's units are not contiguous)."""
    labels = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    return {f"stratum {k}": np.flatnonzero(labels == k) for k in range(len(sizes))}


def test_the_stratified_bootstrap_is_its_reference_computation():
    rng = np.random.default_rng(5)
    strata = _strata([7, 1, 12, 4], rng)
    halves = rng.integers(0, 3, size=(3, 24)) / 2  # 0, 0.5, 1 as the minimal pairs' outcomes: exact sums
    means = S.stratified_bootstrap_means(halves, strata, n=50, seed=11)
    assert means.shape == (50, 3, 4)
    assert np.array_equal(means, _stratified_reference(halves, strata, 50, 11))
    noisy = rng.standard_normal((2, 24))
    np.testing.assert_allclose(S.stratified_bootstrap_means(noisy, strata, n=30, seed=2),
                               _stratified_reference(noisy, strata, 30, 2), rtol=1e-12)
    # A stratum's draws are its own: the same without the other strata, in another order, in another call.
    alone = S.stratified_bootstrap_means(halves, {"stratum 2": strata["stratum 2"]}, n=50, seed=11)
    assert np.array_equal(alone[:, :, 0], means[:, :, 2])
    backwards = S.stratified_bootstrap_means(halves[:1], dict(reversed(strata.items())), n=50, seed=11)
    assert np.array_equal(backwards[:, 0, ::-1], means[:, 0])
    assert not np.array_equal(S.stratified_bootstrap_means(halves, strata, n=50, seed=12), means)

    assert S.stratified_mean(halves[0], strata) == pytest.approx(
        np.mean([halves[0][members].mean() for members in strata.values()]))
    assert S.stratified_mean([1, 1, 0, 0], {"a": np.array([0]), "b": np.array([1, 2, 3])}) == pytest.approx(2 / 3)
    low, high = S.stratified_mean_interval(means[:, 0, [0, 2]], confidence=0.9)
    assert (low, high) == tuple(np.percentile(_stratified_reference(halves, strata, 50, 11)[:, 0, [0, 2]].mean(-1),
                                              [5, 95]))


def test_the_paired_stratified_difference_is_its_reference_computation():
    rng = np.random.default_rng(8)
    strata = _strata([20, 5, 9], rng)
    a, b = rng.integers(0, 3, size=(2, 34)) / 2
    found = S.paired_stratified_bootstrap_difference(a, b, strata, n=200, seed=4, confidence=0.8)
    reference = _stratified_reference(np.stack([a, b]), strata, 200, 4).mean(-1)
    assert found.difference == pytest.approx(S.stratified_mean(a, strata) - S.stratified_mean(b, strata))
    assert (found.low, found.high) == tuple(np.percentile(reference[:, 0] - reference[:, 1], [10, 90]))
    assert found.low < found.difference < found.high
    assert tuple(S.paired_stratified_bootstrap_difference(a, a, strata, n=50)) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError):
        S.paired_stratified_bootstrap_difference(a, b, strata, n=0)


def test_mean_and_spread():
    spread = S.mean_and_spread([1.0, 2.0, 3.0])
    assert spread == (2.0, 1.0, 1.0, 3.0)
    assert spread._asdict() == {"mean": 2.0, "std": 1.0, "min": 1.0, "max": 3.0}
    assert S.mean_and_spread([0.5]).std is None


# --------------------------------------------------------------------------- seeds and units together


def test_the_seed_and_unit_bootstrap_is_the_paired_bootstrap_with_one_seed_and_widens_with_seed_noise():
    rng = np.random.default_rng(0)
    gold_a = (rng.random(400) < 0.7).astype(float)
    gold_b = (rng.random(400) < 0.6).astype(float)
    one = S.seed_and_unit_difference([gold_a], [gold_b], "accuracy", n=2000, seed=1)
    paired = S.paired_bootstrap_difference(gold_a, gold_b, "accuracy", n=2000, seed=1)
    assert one.difference == pytest.approx(paired.difference)
    assert one.low == pytest.approx(paired.low, abs=0.01) and one.high == pytest.approx(paired.high, abs=0.01)
    # Three seeds of system a that disagree (0.55, 0.70, 0.85 on the same units): the interval must be wider than
    # the units-only interval of their average.
    seeds = [(rng.random(400) < p).astype(float) for p in (0.55, 0.70, 0.85)]
    both = S.seed_and_unit_difference(seeds, [gold_b], "accuracy", n=2000, seed=1)
    units_only = S.paired_bootstrap_difference(np.mean(seeds, axis=0), gold_b, "accuracy", n=2000, seed=1)
    assert both.difference == pytest.approx(units_only.difference)
    assert both.high - both.low > 1.5 * (units_only.high - units_only.low)
    low, high = S.seed_and_unit_interval("accuracy", seeds, n=2000, seed=1)
    assert low < 0.6 and high > 0.8  # the seeds' spread is inside the interval
    with pytest.raises(ValueError, match="same units"):
        S.seed_and_unit_difference([gold_a], [gold_b[:10]], "accuracy")


def _scored(seed_scores, units=400, seed=0):
    """A Scored whose seeds are 0/1 arrays with the given accuracies (exactly, on ``units`` units)."""
    from hf_lineage.lineage.scoring import Scored

    rng = np.random.default_rng(seed)
    values = []
    for score in seed_scores:
        row = np.zeros(units)
        row[rng.permutation(units)[:round(score * units)]] = 1
        values.append(row)
    return Scored({"seed_scores": [float(v.mean()) for v in values]}, np.mean(values, axis=0), values)


def test_a_difference_holds_only_beyond_the_interval_every_seed_and_the_seed_spread():
    from hf_lineage.lineage.scoring import compare

    baseline = _scored([0.50])  # deterministic: compared with every seed of the other side
    steady = _scored([0.70, 0.71, 0.69], seed=1)
    result = compare("shift", steady, baseline)
    assert result["outcome"] == "holds" and len(result["seed_differences"]) == 3
    assert result["seed_spread"] == pytest.approx(0.01, abs=1e-9)
    # Every seed above the baseline and the pooled interval above 0, but the seeds scatter more than the gap:
    # not decided.
    scattered = _scored([0.51, 0.60, 0.75], seed=2)
    assert compare("shift", scattered, _scored([0.50] * 3, seed=3))["outcome"] == "within noise"
    # One seed: the seed spread is unknown, so the outcome says so.
    assert compare("shift", _scored([0.70]), baseline)["outcome"] == "holds (one seed)"
    assert compare("shift", baseline, _scored([0.70]))["outcome"] == "reversed (one seed)"


def test_the_pair_bag_of_words_fits_pairs_that_share_every_word():
    """Two orderings of one sentence (order_pairs) have no unshared word: the baseline still fits and predicts."""
    train = [{"sentence1": "the cat sat .", "sentence2": "sat the cat .", "label": "first"},
             {"sentence1": "sat on it we .", "sentence2": "we sat on it .", "label": "second"}] * 10
    predictions = B.bag_of_words_logistic_regression(train, train[:4], "pairs", seed=0)
    assert len(predictions) == 4 and set(predictions) <= {"first", "second"}
