"""From sentence scores to accuracies: each pair right, wrong or tied; accuracy per paradigm, per field, per phenomenon
and over all, with bootstrap intervals; BLiMP's published figures over the same paradigms.

A pair is right when the grammatical sentence scores higher. A **tie** — the two sentences are the same input to the
model (say, two different words both out of its vocabulary: ``<unk>`` for both), or their scores are equal — counts
as half a pair right, and the ties are counted. (lm-evaluation-harness counts a tie as right: ``argmax`` of two equal
log-likelihoods is the first, the good sentence; counting it as wrong is as arbitrary. Half is what guessing gets.)

As BLiMP reports it, the accuracy of a field, a phenomenon or the whole set is the unweighted **mean of its paradigms'
accuracies** (each paradigm has 1,000 pairs in BLiMP; with a sample of unequal sizes the paradigms still weigh the
same). The 95 % intervals are percentile bootstrap intervals over pairs: each resample draws, within every paradigm,
as many pairs as it has, with replacement; every level's accuracy is recomputed from the resampled paradigms. The
draws are seeded per paradigm (the seed and the paradigm's name), so the same arguments give the same numbers, a
paradigm's draws do not depend on which others are present, and every model is resampled on the same pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..experiments.statistics import (
    paired_stratified_bootstrap_difference,
    stratified_bootstrap_means,
    stratified_mean,
    stratified_mean_interval,
)

LEVELS = ("fields", "phenomena", "paradigms")


@dataclass
class PairOutcomes:
    """One scoring of one model over the pairs: ``right`` 1, 0 or 0.5 (tie) per pair; ``tie`` which pairs tied;
    ``good`` and ``bad`` the two sentences' scores."""

    right: np.ndarray
    tie: np.ndarray
    good: np.ndarray | None = None
    bad: np.ndarray | None = None


def compare(good, bad, same_input=None) -> PairOutcomes:
    """Each pair's outcome from its two sentences' scores; ``same_input`` (P,) bools: the model read both alike.

    >>> compare([-3.0, -5.0, -4.0, -2.0], [-4.0, -1.0, -4.0, -9.0], [False, False, False, True]).right.tolist()
    [1.0, 0.0, 0.5, 0.5]
    """
    good, bad = np.asarray(good, dtype=float), np.asarray(bad, dtype=float)
    tie = good == bad
    if same_input is not None:
        tie |= np.asarray(same_input, dtype=bool)
    return PairOutcomes(np.where(tie, 0.5, (good > bad).astype(float)), tie, good, bad)


def score_pairs(scorer, pairs, progress: bool = False) -> dict:
    """{variant: PairOutcomes} of one scorer (``scorers.load_scorer``) over ``pairs``; each distinct sentence is
    scored once."""
    sentences = list(dict.fromkeys(s for pair in pairs for s in (pair.good, pair.bad)))
    where = {s: i for i, s in enumerate(sentences)}
    scores = scorer.score(sentences, progress=progress)
    good = np.array([where[p.good] for p in pairs], dtype=np.int64)
    bad = np.array([where[p.bad] for p in pairs], dtype=np.int64)
    same = np.array([scores.inputs[g] == scores.inputs[b] for g, b in zip(good, bad)], dtype=bool)
    return {variant: compare(values[good], values[bad], same) for variant, values in scores.variants.items()}


class Grouping:
    """Which pairs belong to which paradigm, and which paradigms to which field and phenomenon (sorted by name).
    ``canonical``: {paradigm: (field, phenomenon)} that replaces the data's own for the paradigms it names (BLiMP's
    published grouping, ``canonical_groups``); ``regrouped`` lists the paradigms it moved."""

    def __init__(self, pairs, canonical=None):
        by_paradigm, self.field_of, self.phenomenon_of = {}, {}, {}
        for i, pair in enumerate(pairs):
            by_paradigm.setdefault(pair.paradigm, []).append(i)
            self.field_of[pair.paradigm], self.phenomenon_of[pair.paradigm] = pair.field, pair.phenomenon
        self.regrouped = {}
        for paradigm, (field, phenomenon) in (canonical or {}).items():
            if paradigm in by_paradigm and (field, phenomenon) != (self.field_of[paradigm],
                                                                    self.phenomenon_of[paradigm]):
                self.regrouped[paradigm] = {"data": [self.field_of[paradigm], self.phenomenon_of[paradigm]],
                                            "published": [field, phenomenon]}
                self.field_of[paradigm], self.phenomenon_of[paradigm] = field, phenomenon
        self.paradigms = sorted(by_paradigm)
        self.indices = {p: np.array(by_paradigm[p], dtype=np.int64) for p in self.paradigms}
        self.groups = {
            "fields": _members(self.paradigms, self.field_of),
            "phenomena": _members(self.paradigms, self.phenomenon_of),
            "paradigms": {p: [p] for p in self.paradigms},
        }


def _members(paradigms, of) -> dict:
    groups = {}
    for p in paradigms:
        groups.setdefault(of[p], []).append(p)
    return dict(sorted(groups.items()))


def summarize(pairs, outcomes: dict, resamples: int = 1000, seed: int = 0, confidence: float = 0.95,
              canonical=None) -> dict:
    """Accuracies of every system (``outcomes``: name -> PairOutcomes) over all, per field, phenomenon and paradigm:
    ``{name: {"overall": entry, "fields": {f: entry}, "phenomena": {...}, "paradigms": {...}}}`` with entry
    ``{"accuracy", "low", "high", "pairs", "ties"}``; the overall entry also has the accuracy with ties counted
    wrong and counted right, and the pooled accuracy (every pair weighing the same). ``canonical``: as
    ``Grouping``'s."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    grouping = Grouping(pairs, canonical)
    names = list(outcomes)
    if not names:
        return {}
    rights = np.stack([outcomes[n].right for n in names])  # (systems, P)
    ties = np.stack([outcomes[n].tie for n in names])
    point = np.stack([rights[:, grouping.indices[p]].mean(1) for p in grouping.paradigms], axis=1)  # (systems, K)
    boot = stratified_bootstrap_means(rights, grouping.indices, resamples, seed) if resamples else None

    def entry(s, paradigms):
        columns = [grouping.paradigms.index(p) for p in paradigms]
        members = np.concatenate([grouping.indices[p] for p in paradigms])
        accuracy = float(point[s, columns].mean())
        low = high = None
        if boot is not None:
            low, high = stratified_mean_interval(boot[:, s, columns], confidence)
        return {"accuracy": accuracy, "low": low, "high": high, "pairs": int(len(members)),
                "ties": int(ties[s, members].sum())}

    summary = {}
    for s, name in enumerate(names):
        overall = entry(s, grouping.paradigms)
        tied = ties[s]
        strict = np.where(tied, 0.0, rights[s])
        lenient = np.where(tied, 1.0, rights[s])
        overall.update({
            "accuracy_ties_wrong": float(np.mean([strict[grouping.indices[p]].mean() for p in grouping.paradigms])),
            "accuracy_ties_right": float(np.mean([lenient[grouping.indices[p]].mean() for p in grouping.paradigms])),
            "pooled_accuracy": float(rights[s].mean()),
        })
        summary[name] = {"overall": overall, **{level: {group: entry(s, members)
                                                        for group, members in grouping.groups[level].items()}
                                                for level in LEVELS}}
    return summary


def paired_difference(pairs, higher: PairOutcomes, lower: PairOutcomes, resamples: int = 1000, seed: int = 0,
                      confidence: float = 0.95) -> dict:
    """``higher`` − ``lower`` in the mean over paradigms, with its percentile bootstrap interval: each resample draws
    the same pairs for both (``summarize``'s draws: ``statistics.stratified_bootstrap_means``), so the interval is of
    the paired difference. ``{"difference", "low", "high"}`` (no interval with ``resamples`` 0).

    >>> from hf_lineage.minimal_pairs.pairs import MinimalPair
    >>> pairs = [MinimalPair("a", "b", "p", "f", "t", str(i), "x", i) for i in range(4)]
    >>> paired_difference(pairs, compare([1, 1, 1, 0], [0, 0, 0, 1]), compare([0, 0, 1, 1], [1, 1, 0, 0]),
    ...                   resamples=0)
    {'difference': 0.25, 'low': None, 'high': None}
    """
    grouping = Grouping(pairs)
    if resamples:
        return paired_stratified_bootstrap_difference(higher.right, lower.right, grouping.indices, resamples, seed,
                                                      confidence)._asdict()
    difference = stratified_mean(higher.right, grouping.indices) - stratified_mean(lower.right, grouping.indices)
    return {"difference": difference, "low": None, "high": None}


def published_summary(pairs, published: dict) -> dict:
    """BLiMP's published rows over the paradigms of ``pairs``, as ``summarize`` shapes them (no intervals): a group's
    figure is the mean of its paradigms' published accuracies, None when one of them has none (a paradigm BLiMP does
    not have). Grouped as the published tables group the paradigms (``canonical_groups``)."""
    grouping = Grouping(pairs, canonical_groups(published))
    table = published.get("paradigms", {})
    summary = {}
    for row in published.get("rows", {}):
        def entry(paradigms):
            values = [table.get(p, {}).get(row) for p in paradigms]
            return {"accuracy": None if any(v is None for v in values) else float(np.mean(values))}

        summary[row] = {"overall": entry(grouping.paradigms),
                        **{level: {group: entry(members) for group, members in grouping.groups[level].items()}
                           for level in LEVELS}}
    return summary


def canonical_groups(published: dict) -> dict:
    """{paradigm: (field, phenomenon)} as BLiMP's published tables group its paradigms. Three of BLiMP's data files
    group theirs otherwise (``animate_subject_passive`` and ``animate_subject_trans``: ``s-selection``, published
    under ``argument_structure``; ``principle_A_case_2``: field ``syntax/semantics``, the others ``syntax_semantics``),
    so that the data's own grouping would give 13 phenomena and 5 fields where the paper has 12 and 4."""
    return {uid: (entry["field"], entry["phenomenon"]) for uid, entry in published.get("paradigms", {}).items()}


def load_published() -> dict:
    """The published figures the package embeds (``hf_lineage/samples/blimp/published.json``, CC BY 4.0)."""
    import json

    from .. import samples

    return json.loads(samples.path("blimp", "published.json").read_text(encoding="utf-8"))
