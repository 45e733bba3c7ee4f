"""Per-unit scores, corpus BLEU from sufficient statistics, and bootstrap uncertainty for the lineage report.

Units, per task (the same for models and baselines):

- labeling: tokens, grouped by sentence. ``unit_scores("labeling", ..., by_sentence=True)`` gives one 0/1 array per
  sentence; that list is what :func:`bootstrap_interval` and :func:`paired_bootstrap_difference` take, and they
  resample *sentences* (clusters of tokens), since the tokens of a sentence are not independent. The score of a
  resample is its per-token accuracy (correct tokens / tokens).
- classification / pairs: rows; a 1-D 0/1 array, resampled row by row; the score is the mean.
- generation: distinct MRs (one output each); the per-unit values are the sentence-level BLEU sufficient statistics of
  :func:`bleu_statistics`, an ``(units, 10)`` integer array; the score of a resample is corpus BLEU of the summed
  statistics (:func:`bleu_from_statistics`), exactly as sacrebleu computes it.

Every bootstrap is a percentile bootstrap with a fresh ``numpy.random.default_rng(seed)`` per call (same inputs and
seed → the same interval), vectorised over resamples. The stratified one (:func:`stratified_bootstrap_means`, the
minimal pairs' paradigms) seeds one generator per stratum instead, from the seed and the stratum's name.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

__all__ = [
    "BLEU_ORDER",
    "PairedDifference",
    "Spread",
    "bleu_from_statistics",
    "bleu_statistics",
    "bootstrap_interval",
    "distinct_n",
    "mean_and_spread",
    "paired_bootstrap_difference",
    "paired_stratified_bootstrap_difference",
    "point_estimate",
    "repetition",
    "stratified_bootstrap_means",
    "stratified_mean",
    "stratified_mean_interval",
    "unit_scores",
]

BLEU_ORDER = 4  # sacrebleu's default max n-gram order; statistics columns: hyp_len, ref_len, matches 1-4, totals 1-4

# "accuracy": any per-unit score in [0, 1] whose mean is the score: 0/1 correctness, or a question's token F1 (QA),
# or an utterance's exact match (intent and every slot tag right).
_KINDS = {"labeling": "labeling", "sequence_labeling": "labeling",
          "classification": "accuracy", "pairs": "accuracy", "sentence_pairs": "accuracy", "accuracy": "accuracy",
          "qa": "accuracy", "question_answering": "accuracy", "intent_slots": "accuracy",
          "intent_and_slots": "accuracy", "multiple_choice": "accuracy", "generation": "bleu", "bleu": "bleu"}


def _kind(task_kind: str) -> str:
    try:
        return _KINDS[task_kind]
    except KeyError:
        raise ValueError(f"Unknown task kind {task_kind!r}; one of {sorted(_KINDS)}") from None


# --------------------------------------------------------------------------- per-unit scores


def unit_scores(task: str, predictions, gold, by_sentence: bool = False):
    """Per-unit 0/1 correctness (float arrays) of ``predictions`` against ``gold``, in unit order.

    labeling: ``predictions`` and ``gold`` are lists of tag lists, one per sentence; the result is one flat array over
    all tokens (sentence after sentence), or with ``by_sentence=True`` a list of per-sentence arrays (the input of the
    sentence-level bootstrap). classification / pairs: lists of labels; one value per row (``by_sentence`` ignored).
    Raises ``ValueError`` when the numbers of units differ.
    """
    kind = _kind(task)
    if kind == "bleu":
        raise ValueError("generation has no 0/1 units: use bleu_statistics")
    if len(predictions) != len(gold):
        raise ValueError(f"{len(predictions)} predictions for {len(gold)} gold units")
    if kind == "accuracy":
        return np.asarray([str(p) == str(g) for p, g in zip(predictions, gold)], dtype=float)
    sentences = []
    for i, (p, g) in enumerate(zip(predictions, gold)):
        if len(p) != len(g):
            raise ValueError(f"sentence {i}: {len(p)} predicted tags for {len(g)} tokens")
        sentences.append(np.asarray([a == b for a, b in zip(p, g)], dtype=float))
    if by_sentence:
        return sentences
    return np.concatenate(sentences) if sentences else np.zeros(0)


# --------------------------------------------------------------------------- BLEU


def _bleu():
    from sacrebleu.metrics import BLEU

    # sacrebleu.corpus_bleu's defaults (13a tokenization, exp smoothing, order 4), as the generation recipe's metric.
    # force=True only silences the "looks tokenized" warning; it changes no statistic.
    return BLEU(force=True)


def bleu_statistics(outputs: Sequence[str], references_lists: Sequence[Sequence[str]]) -> np.ndarray:
    """Sentence-level BLEU sufficient statistics, an ``(len(outputs), 2 + 2 * 4)`` int64 array.

    Row i, from sacrebleu's own ``BLEU._extract_corpus_statistics`` for output i against all of
    ``references_lists[i]`` (any number ≥ 1 per output; the ragged lists are padded with ``None``, which sacrebleu
    drops): ``[hypothesis length, closest reference length, matches of 1..4-grams, totals of 1..4-grams]``, the
    columns corpus BLEU sums. ``bleu_from_statistics(bleu_statistics(o, r))`` equals
    ``sacrebleu.corpus_bleu(o, transposed r).score``.
    """
    if len(outputs) != len(references_lists):
        raise ValueError(f"{len(outputs)} outputs for {len(references_lists)} reference lists")
    if not len(outputs):
        return np.zeros((0, 2 + 2 * BLEU_ORDER), dtype=np.int64)
    if any(len(refs) == 0 for refs in references_lists):
        raise ValueError("every output needs at least one reference")
    most = max(len(refs) for refs in references_lists)
    transposed = [[refs[i] if i < len(refs) else None for refs in references_lists] for i in range(most)]
    stats = _bleu()._extract_corpus_statistics(list(outputs), transposed)
    return np.asarray(stats, dtype=np.int64).reshape(len(outputs), 2 + 2 * BLEU_ORDER)


def _bleu_of_sums(sums) -> float:
    from sacrebleu.metrics import BLEU

    s = [int(v) for v in sums]
    return float(BLEU.compute_bleu(correct=s[2:2 + BLEU_ORDER], total=s[2 + BLEU_ORDER:], sys_len=s[0],
                                   ref_len=s[1], smooth_method="exp", max_ngram_order=BLEU_ORDER).score)


def bleu_from_statistics(stats) -> float:
    """Corpus BLEU (0-100) of the statistics of :func:`bleu_statistics`: an ``(n, 10)`` array (summed over its rows)
    or an already summed row of 10; the same arithmetic as ``sacrebleu.corpus_bleu``."""
    stats = np.asarray(stats, dtype=np.int64)
    return _bleu_of_sums(stats.sum(axis=0) if stats.ndim == 2 else stats)


# --------------------------------------------------------------------------- generation diversity


def _ngrams(words: list[str], n: int) -> list[tuple]:
    return [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]


def repetition(outputs: Sequence[str], n: int = 3) -> float:
    """The mean share of an output's n-grams (default 3-grams of whitespace tokens) that repeat an n-gram occurring
    earlier in the same output, averaged over the outputs that have at least one n-gram (shorter outputs cannot
    repeat and are left out; 0.0 if none has one). "a b c a b c" → 3-grams abc, bca, cab, abc → 1/4."""
    shares = []
    for text in outputs:
        grams = _ngrams(text.split(), n)
        if grams:
            shares.append((len(grams) - len(set(grams))) / len(grams))
    return float(np.mean(shares)) if shares else 0.0


def distinct_n(outputs: Sequence[str], n: int = 2) -> float:
    """distinct-n (Li et al., 2016): distinct n-grams (whitespace tokens) over all n-grams, pooled over all outputs
    (corpus level: low when outputs repeat each other, not only themselves); 0.0 when there are none."""
    grams = Counter(g for text in outputs for g in _ngrams(text.split(), n))
    total = sum(grams.values())
    return len(grams) / total if total else 0.0


# --------------------------------------------------------------------------- bootstrap


def _as_values(kind: str, per_unit) -> np.ndarray:
    """The per-unit values whose column sums determine the score: (units, 1) for accuracy, (sentences, 2) =
    (correct tokens, tokens) for labeling, (units, 10) BLEU statistics."""
    if kind == "accuracy":
        values = np.asarray(per_unit, dtype=float)
        if values.ndim != 1:
            raise ValueError("accuracy units: a 1-D array of per-unit scores")
        return values[:, None]
    if kind == "labeling":
        if isinstance(per_unit, np.ndarray) and per_unit.dtype != object:
            raise ValueError("labeling units: a list of per-sentence 0/1 arrays (unit_scores(..., by_sentence=True)), "
                             "so that the bootstrap resamples sentences, not tokens")
        rows = [np.asarray(s, dtype=float) for s in per_unit]
        if any(r.ndim != 1 for r in rows):
            raise ValueError("labeling units: a list of per-sentence 0/1 arrays (unit_scores(..., by_sentence=True)), "
                             "so that the bootstrap resamples sentences, not tokens")
        return np.asarray([[r.sum(), r.size] for r in rows], dtype=float).reshape(len(rows), 2)
    values = np.asarray(per_unit, dtype=np.int64)
    if values.ndim != 2 or values.shape[1] != 2 + 2 * BLEU_ORDER:
        raise ValueError("generation units: the (units, 10) array of bleu_statistics")
    return values


def _scores(kind: str, sums: np.ndarray, units: int) -> np.ndarray:
    """Scores of summed values, one per row of ``sums``."""
    if kind == "accuracy":
        return sums[:, 0] / units
    if kind == "labeling":
        with np.errstate(invalid="ignore", divide="ignore"):
            return sums[:, 0] / sums[:, 1]
    return np.asarray([_bleu_of_sums(row) for row in sums.tolist()])


def _resampled_sums(values: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, k) column sums of ``n`` resamples (with replacement, of all ``units`` rows) of ``values`` (units, k);
    resamples drawn in blocks of about 4M gathered values."""
    units, k = values.shape
    out = np.empty((n, k), dtype=values.dtype)
    block = max(1, min(n, 4_000_000 // max(1, units * k)))
    for start in range(0, n, block):
        rows = min(block, n - start)
        index = rng.integers(0, units, size=(rows, units), dtype=np.int64 if units > 2**31 - 1 else np.int32)
        out[start:start + rows] = values[index].sum(axis=1)
    return out


def _check(n: int, confidence: float) -> tuple[float, float]:
    if n < 1:
        raise ValueError("n (the number of resamples) must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    tail = (1 - confidence) / 2
    return tail, 1 - tail


def point_estimate(task_kind: str, per_unit) -> float:
    """The score of all units (per-token accuracy, accuracy or corpus BLEU), the centre of the bootstrap's resamples."""
    kind = _kind(task_kind)
    values = _as_values(kind, per_unit)
    if not len(values):
        raise ValueError("no units")
    return float(_scores(kind, values.sum(axis=0)[None, :], len(values))[0])


def bootstrap_interval(task_kind: str, per_unit, n: int = 1000, seed: int = 0,
                       confidence: float = 0.95) -> tuple[float, float]:
    """(low, high): the percentile bootstrap interval of the score over ``n`` resamples of the units.

    ``task_kind``: "labeling" (``per_unit`` = list of per-sentence 0/1 arrays; sentences are resampled and the
    score is correct tokens / tokens), "classification" / "pairs" / "accuracy" (a 1-D array; units resampled, the
    score is the mean) or "generation" / "bleu" (the ``(units, 10)`` array of :func:`bleu_statistics`; units
    resampled, corpus BLEU recomputed from the summed statistics). Interval: the ``(1 - confidence) / 2`` and
    ``(1 + confidence) / 2`` quantiles (numpy's linear interpolation) of the resampled scores.
    """
    kind = _kind(task_kind)
    low_q, high_q = _check(n, confidence)
    values = _as_values(kind, per_unit)
    if not len(values):
        raise ValueError("no units")
    rng = np.random.default_rng(seed)
    scores = _scores(kind, _resampled_sums(values, n, rng), len(values))
    low, high = np.nanquantile(scores, [low_q, high_q])
    return float(low), float(high)


class PairedDifference(NamedTuple):
    difference: float  # score(a) - score(b) on all units
    low: float  # percentile bootstrap interval of the difference, the same resampled units for both systems
    high: float


def paired_bootstrap_difference(a, b, task_kind: str = "accuracy", n: int = 1000, seed: int = 0,
                                confidence: float = 0.95) -> PairedDifference:
    """score(a) - score(b) and its paired percentile bootstrap interval: every resample draws one set of units and
    scores both systems on it, so the interval reflects the difference on the same examples (a lower bound above 0:
    system a is better at this confidence). ``a`` and ``b`` are per-unit values as for :func:`bootstrap_interval`,
    over the same units in the same order (for labeling, the same sentences with the same token counts)."""
    kind = _kind(task_kind)
    low_q, high_q = _check(n, confidence)
    va, vb = _as_values(kind, a), _as_values(kind, b)
    if va.shape[0] != vb.shape[0]:
        raise ValueError(f"paired systems need the same units: {va.shape[0]} vs {vb.shape[0]}")
    if kind == "labeling" and not np.array_equal(va[:, 1], vb[:, 1]):
        raise ValueError("paired labeling systems need the same sentences (token counts differ)")
    if not len(va):
        raise ValueError("no units")
    k = va.shape[1]
    values = np.concatenate([va, vb], axis=1)
    everything = values.sum(axis=0)[None, :]
    difference = float(_scores(kind, everything[:, :k], len(va))[0] - _scores(kind, everything[:, k:], len(va))[0])
    sums = _resampled_sums(values, n, np.random.default_rng(seed))
    differences = _scores(kind, sums[:, :k], len(va)) - _scores(kind, sums[:, k:], len(va))
    low, high = np.nanquantile(differences, [low_q, high_q])
    return PairedDifference(difference, float(low), float(high))


# --------------------------------------------------------------------------- bootstrap stratified by group


def stratified_mean(values, strata: Mapping[str, np.ndarray]) -> float:
    """The unweighted mean over strata of each stratum's mean of ``values`` (units,): every stratum weighs the same,
    whatever its size (BLiMP's accuracy over paradigms)."""
    values = np.asarray(values, dtype=float)
    return float(np.mean([values[members].mean() for members in strata.values()]))


def stratified_bootstrap_means(values, strata: Mapping[str, np.ndarray], n: int = 1000, seed: int = 0) -> np.ndarray:
    """(n, systems, strata) means of each stratum's units in ``n`` resamples: every resample draws, within each
    stratum, as many of its units as it has, with replacement. ``values`` is (systems, units), ``strata`` {name: the
    indices of its units}, in the order of the last axis; every system is resampled on the same units.

    Each stratum draws from its own generator, seeded by ``seed`` and a CRC-32 of its name, so that its draws do not
    depend on which other strata are present (a subset of the minimal pairs' paradigms gives each the same interval)
    nor on the systems compared in the same call."""
    values = np.asarray(values)
    out = np.empty((n, values.shape[0], len(strata)))
    for k, (name, members) in enumerate(strata.items()):
        rng = np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])
        draws = members[rng.integers(0, len(members), size=(n, len(members)))]  # (n, units of the stratum)
        out[:, :, k] = values[:, draws].mean(-1).T  # (systems, n) -> (n, systems)
    return out


def _percentile_interval(scores: np.ndarray, confidence: float) -> tuple[float, float]:
    # np.percentile of the tails in percent, not the fractions _check gives: for some confidences (0.68) they differ in
    # the last bit, and the minimal pairs' intervals are kept as they were published.
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(scores, [tail, 100 - tail])
    return float(low), float(high)


def stratified_mean_interval(resampled_means: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """(low, high): the percentile bootstrap interval of the unweighted mean over strata, from the (n, strata) means
    of :func:`stratified_bootstrap_means` for one system (any subset of its strata: a field is the mean of its
    paradigms, resampled by the same draws)."""
    return _percentile_interval(np.asarray(resampled_means).mean(-1), confidence)


def paired_stratified_bootstrap_difference(a, b, strata: Mapping[str, np.ndarray], n: int = 1000, seed: int = 0,
                                           confidence: float = 0.95) -> PairedDifference:
    """mean over strata of ``a`` − that of ``b`` (per-unit values over the same units), and its percentile interval
    from :func:`stratified_bootstrap_means`: both systems are scored on the same drawn units, so the interval is of
    the paired difference."""
    _check(n, confidence)
    values = np.stack([np.asarray(a, dtype=float), np.asarray(b, dtype=float)])
    resampled = stratified_bootstrap_means(values, strata, n, seed).mean(-1)  # (n, 2)
    return PairedDifference(stratified_mean(a, strata) - stratified_mean(b, strata),
                            *_percentile_interval(resampled[:, 0] - resampled[:, 1], confidence))


def _seed_and_unit_scores(kind: str, systems: list[list], n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, systems) scores of a two-level bootstrap: every resample draws one set of units (shared by the systems,
    so comparisons stay paired) and, for each system on its own, its seeds with replacement; a system's score pools
    its drawn seeds on the drawn units. Its spread thus holds both validation sampling and seed-to-seed variance."""
    values = [np.stack([_as_values(kind, per_unit) for per_unit in per_seed]) for per_seed in systems]  # (S, U, k)
    units = values[0].shape[1]
    if any(v.shape[1] != units for v in values):
        raise ValueError("every system and seed must be scored on the same units")
    scores = np.empty((n, len(values)))
    for r in range(n):
        drawn = rng.integers(0, units, size=units)
        for i, v in enumerate(values):
            seeds = rng.integers(0, v.shape[0], size=v.shape[0])
            sums = v[seeds][:, drawn].sum(axis=(0, 1))
            scores[r, i] = _scores(kind, sums[None, :], units * v.shape[0])[0]
    return scores


def seed_and_unit_interval(task_kind: str, per_seed_units: list, n: int = 1000, seed: int = 0,
                           confidence: float = 0.95) -> tuple[float, float]:
    """The 95 % interval of a system's score over seeds and units (see :func:`seed_and_unit_difference`); with one
    seed, the plain bootstrap over units."""
    kind = _kind(task_kind)
    low_q, high_q = _check(n, confidence)
    scores = _seed_and_unit_scores(kind, [list(per_seed_units)], n, np.random.default_rng(seed))[:, 0]
    low, high = np.nanquantile(scores, [low_q, high_q])
    return float(low), float(high)


def seed_and_unit_difference(a_per_seed: list, b_per_seed: list, task_kind: str = "accuracy", n: int = 1000,
                             seed: int = 0, confidence: float = 0.95) -> PairedDifference:
    """mean score(a) − mean score(b) over their seeds, and a 95 % interval that holds both sources of noise: each
    resample draws the validation units once for both systems (paired) and each system's seeds with replacement.
    ``a_per_seed`` / ``b_per_seed``: one per-unit array per seed (as for :func:`bootstrap_interval`); a system with
    one seed (a deterministic baseline) keeps it. With one seed on both sides this is
    :func:`paired_bootstrap_difference`'s resampling."""
    kind = _kind(task_kind)
    low_q, high_q = _check(n, confidence)
    a_scores = [point_estimate(kind, v) for v in a_per_seed]
    b_scores = [point_estimate(kind, v) for v in b_per_seed]
    scores = _seed_and_unit_scores(kind, [list(a_per_seed), list(b_per_seed)], n, np.random.default_rng(seed))
    low, high = np.nanquantile(scores[:, 0] - scores[:, 1], [low_q, high_q])
    return PairedDifference(float(np.mean(a_scores) - np.mean(b_scores)), float(low), float(high))


def seed_and_unit_contrast(systems_per_seed: list, weights, task_kind: str = "accuracy", n: int = 1000,
                           seed: int = 0, confidence: float = 0.95) -> tuple[float, float, float]:
    """(Σ wᵢ · mean score of system i over its seeds, low, high): a weighted sum of several systems' scores on the
    same units, e.g. a difference of two differences, with the two-level bootstrap interval of
    :func:`seed_and_unit_difference` (units drawn once for all systems, each system's seeds drawn on its own)."""
    kind = _kind(task_kind)
    low_q, high_q = _check(n, confidence)
    weights = np.asarray(weights, dtype=float)
    if len(weights) != len(systems_per_seed):
        raise ValueError(f"{len(weights)} weights for {len(systems_per_seed)} systems")
    means = np.asarray([np.mean([point_estimate(kind, v) for v in per_seed]) for per_seed in systems_per_seed])
    scores = _seed_and_unit_scores(kind, [list(per_seed) for per_seed in systems_per_seed], n,
                                   np.random.default_rng(seed))
    low, high = np.nanquantile(scores @ weights, [low_q, high_q])
    return float(means @ weights), float(low), float(high)


class Spread(NamedTuple):
    mean: float
    std: float | None  # sample standard deviation (ddof=1); None for a single value
    min: float
    max: float


def mean_and_spread(values) -> Spread:
    """Mean, sample standard deviation (n - 1 in the denominator; None for one value), min and max of a score over
    seeds. ``Spread._asdict()`` gives a JSON-ready dict."""
    x = np.asarray(list(values), dtype=float)
    if not x.size:
        raise ValueError("mean_and_spread needs at least one value")
    return Spread(float(x.mean()), float(x.std(ddof=1)) if x.size > 1 else None, float(x.min()), float(x.max()))
