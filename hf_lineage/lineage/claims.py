"""The claims of the seeds, judged from the lineage's numbers by rules fixed before any number is looked at.

``evaluate_claims(results, scored, baselines)`` returns one verdict per claim with its rule, its evidence and every
pairwise comparison behind it. With ``scored`` (the cells' pooled per-unit values from ``scoring``), two systems are
compared on the same validation units by a paired bootstrap and, with several seeds, seed by seed; results without
them (a results dict written by hand) fall back to a binomial noise band. Deterministic, no network.
"""

from __future__ import annotations

import math
from collections import Counter

from ..experiments.baselines import TRAINED_BASELINES
from .scoring import DECISION_RULE
from .settings import LINEAGE_FAMILIES, ablations, family_label



def claim_groups(*groups: str) -> list[str]:
    """The families whose ``claim_group`` is one of ``groups``, in lineage order. The claims' groups are the static
    families (a vector per word) and each contextual family on its own ("static < ELMo < GPT < BERT"); the count-based
    root ("root") counts as static only where a claim says so ("contextual beats static")."""
    return [name for name, family in LINEAGE_FAMILIES.items() if family.claim_group in groups]


def contextual_families() -> list[str]:
    return [name for name, family in LINEAGE_FAMILIES.items() if family.claim_group == name]

NOISE_RULE = (
    DECISION_RULE + " (Results without per-unit predictions, e.g. written by hand, fall back to a noise band: for a "
    "metric that is an accuracy over n validation units (words for labeling, examples otherwise), margin = 1.96 · "
    "sqrt(p(1 − p) · 2 / n) with p = (a + b) / 2 — two independent binomial proportions, normal approximation, about "
    "95 %. A claimed a < b holds when b − a > margin, is reversed when a − b > margin, and is within noise otherwise. "
    "A metric that is not an accuracy gets margin 0 (no noise estimate).) Only understanding tasks count, and only "
    "cells that ran to the end."
)
CLAIMS = {
    "understanding_order": (
        "Static word vectors < ELMo < GPT < BERT on understanding tasks.",
        "Each family's cell in the regime named. 'Static' is the better of NNLM and "
        "word2vec on each task, which is generous to static vectors. On each task the groups that have a score are "
        "compared in the claimed order, each with the next one that has a score (static < ELMo, ELMo < GPT, "
        "GPT < BERT; across a gap when a group has none). Not tested: no task has scores for two groups. "
        "Confirmed: no comparison is reversed and more than half hold. Not confirmed: some pair is reversed on more "
        "than half of the tasks it was compared on, or the groups' scores averaged over the tasks they all have are "
        "out of the claimed order while at least one comparison is reversed. Inconclusive: anything else. ",
    ),
    "bidirectional": (
        "Bidirectional context beats unidirectional context.",
        "BERT (bidirectional) against GPT (unidirectional; same size and pretraining budget), both in the regime "
        "named, on each understanding task. Not tested: no task "
        "has both. Confirmed: BERT > GPT holds on more than half of the tasks and is reversed on none. Not "
        "confirmed: reversed on more than half. Inconclusive: anything else. ",
    ),
    "pretraining_helps": (
        "Pretraining beats training from scratch on small labelled data.",
        "For every family and understanding task with both a from-scratch cell (same architecture, random "
        "initialisation, every parameter trained) and a fine-tuned cell (the same network and training, pretrained "
        "weights): fine-tuned against scratch. Not tested: no such pair. Confirmed: pretrained > scratch holds "
        "for more than half of the pairs and is reversed for none. Not confirmed: reversed for more than half. "
        "Inconclusive: anything else. ",
    ),
    "beats_baselines": (
        "Every family learns each understanding task beyond what counting gets.",
        "For every family and understanding task: the family's best cell at the main table's labelled-set size "
        "against the strongest counting baseline computed on the same split (majority class; for labeling, the most "
        "frequent tag per word; for QA, no answer or answer by counting; for intent and slots, the majority intent "
        "with each word's most frequent tag). Confirmed: every family holds on every task. Not confirmed: some family is "
        "reversed on some task. Inconclusive: anything else. The bag-of-words logistic regressions are shown "
        "beside it, but are trained models, not trivial baselines. ",
    ),
    "contextual_beats_static": (
        "Contextual representations beat static word vectors on tasks that need context.",
        "On each task built to need context (a bag of words stays near the majority class: by default the two word "
        "order tasks), each contextual family (ELMo, GPT, BERT) against the best static family on that task "
        "(NNLM, word2vec and, when run, PPMI-SVD: generous to static vectors). Confirmed: more than half of the comparisons hold and none is reversed. Not "
        "confirmed: more than half reversed. Inconclusive: anything else. ",
    ),
    "pretraining_helps_small": (
        "With fewer labelled examples (the learning curves' smaller sizes), pretraining beats training from scratch.",
        "On the learning-curve tasks, for every family and every labelled-set size below the main table's: the "
        "pretrained cell against the from-scratch cell of the same architecture. Confirmed: more than half of the "
        "comparisons hold and none is reversed. Not confirmed: more than half reversed. Inconclusive: anything "
        "else. ",
    ),
    "little_data": (
        "Pretraining helps most when labelled data is scarce.",
        "On the learning-curve tasks, for every family with a pretrained and a from-scratch curve: the gain "
        "(pretrained − scratch) at the smallest labelled-set size against the gain at the largest, on the same "
        "validation units. The shrink (gain at the smallest size − gain at the largest) gets its own 95 % interval "
        "from the same two-level bootstrap (units drawn once for the four cells, each cell's seeds drawn with "
        "replacement). Confirmed: for more than half of the families and tasks the gain at the smallest size holds "
        "and the shrink's interval lies above 0. Not confirmed: the pretrained curve is below scratch at the "
        "smallest size, or the shrink's interval lies below 0 (the gain grows with data), for more than half. "
        "Inconclusive: anything else. ",
    ),
    # BERT's ablations (issue 45; Devlin et al. 2018, table 5), judged only when they ran (``--families bert
    # bert-no-nsp bert-ltr``).
    "bidirectional_key": (
        "Bidirectionality is the key factor in BERT: the same network trained left to right does worse.",
        "On each task built to need context (as for 'contextual beats static': its gate passed), BERT without NSP "
        "against BERT's architecture trained as a left-to-right LM (is_decoder, no NSP), both pretrained on the "
        "same data with the same word budget, so that only the direction differs (Devlin et al.'s 'No NSP' against "
        "'LTR & No NSP'). Confirmed: more than half of the comparisons hold and none is reversed, and, where BERT "
        "with NSP ran too, the mean direction gap exceeds the mean size of the NSP effect on the same tasks (a key "
        "factor outweighs the other ingredient). Not confirmed: more than half reversed. Inconclusive: anything "
        "else. ",
    ),
    "nsp_little": (
        "Next-sentence prediction matters little.",
        "On each understanding task, BERT (masked LM + NSP) against BERT without NSP (the same [CLS] A [SEP] B [SEP] "
        "pairs and budget, the NSP loss dropped). 'Little' is fixed up front as an equivalence margin of "
        "{margin:g} in the score (Devlin et al.'s NSP effect was under 1 point on MNLI, MRPC, SST-2 and SQuAD and 3.5 "
        "on QNLI): a comparison is **small** when the 95 % interval of the difference lies inside ±{margin:g}, "
        "**large** when the difference holds or is reversed beyond noise and exceeds {margin:g}, **undecided** "
        "otherwise (an interval too wide to tell). Confirmed: more than half small and none large. Not confirmed: "
        "more than half large. Inconclusive: anything else. ",
    ),
    # Zero-shot (issue 52): judged on the BLiMP sample of the zero-shot stage (``zero_shot_stage.py``), when it ran.
    "grammar_order": (
        "Each generation knows more grammar: n-gram < NNLM < ELMo < GPT < BERT (BLiMP minimal pairs, zero-shot).",
        "Each language model of the run and the Kneser-Ney n-gram trained on the pretraining text, scored zero-shot on "
        "the embedded BLiMP sample (accuracy: the mean over paradigms, a tie counting half; ELMo: its two directions "
        "summed; BERT: PLL-word-l2r). The models present are compared in the claimed order, each with the next one "
        "present. A comparison's 95 % interval is a paired percentile bootstrap over the pairs (1,000 resamples, "
        "each drawing within every paradigm the same pairs for both models); it **holds** when that interval lies "
        "above 0, is **reversed** when it lies below, and is within noise otherwise. No seeds: zero-shot scoring "
        "trains nothing, and the interval covers the sampling of the pairs, not pretraining noise (one pretrained "
        "model per family). Not tested: fewer than two models scored. Confirmed: more than half hold and none is "
        "reversed. Not confirmed: more than half reversed. Inconclusive: anything else. ",
    ),
}
# "Little" for ``nsp_little``: the largest difference in score (an accuracy: 2 points) that counts as no effect.
NSP_MARGIN = 0.02


def _name(family):
    return family_label(family)


# ---------------------------------------------------------------------------------------------------------------
# Reading the results dict
# ---------------------------------------------------------------------------------------------------------------


def _check_results(results, keys):
    if not isinstance(results, dict):
        raise ValueError(f"results must be a dict, got {type(results).__name__}")
    missing = [key for key in keys if key not in results]
    if missing:
        raise ValueError(f"results is missing {', '.join(repr(k) for k in missing)}")
    if not isinstance(results.get("tasks", {}), dict):
        raise ValueError("results['tasks'] must be a dict of task name -> task description")


def _cells(results):
    """Index the fine-tuning cells: ``{(family, task, variant): cell}`` and ``{(family, task): main cell}``."""
    by_variant, main = {}, {}
    main_size = results.get("main_train_size")
    for cell in results.get("finetuning") or []:
        if main_size is not None and cell.get("train_size", main_size) != main_size:
            continue  # a learning-curve cell
        for key in ("family", "task", "variant"):
            if key not in cell:
                raise ValueError(f"a results['finetuning'] entry has no {key!r}: {cell!r}")
        key = (cell["family"], cell["task"], cell["variant"])
        if key in by_variant:
            raise ValueError(f"results['finetuning'] has two cells for family {key[0]!r}, task {key[1]!r}, "
                             f"variant {key[2]!r}")
        by_variant[key] = cell
        if cell.get("main"):
            if key[:2] in main:
                raise ValueError(f"results['finetuning'] has two main cells for family {key[0]!r}, task {key[1]!r}")
            main[key[:2]] = cell
    return by_variant, main


def _score(cell):
    """The cell's score when it ran to the end, trained (not flagged: ``finetuning.training_flags``) and has a finite
    one, else None."""
    if not cell or cell.get("status") != "ok" or cell.get("flags"):
        return None
    score = cell.get("score")
    if score is None:
        return None
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise ValueError(f"the score of {cell.get('family')} × {cell.get('task')} ({cell.get('variant')}) is not a "
                         f"number: {score!r}")
    if not math.isfinite(score):
        return None
    return float(score)


def _understanding_tasks(results):
    return [name for name, task in results["tasks"].items() if task.get("understanding")]


def _validation_units(task):
    units = task.get("validation_units")
    return units if units else task.get("validation_examples")


def _is_accuracy(metric):
    return "accuracy" in (metric or "").lower()


# ---------------------------------------------------------------------------------------------------------------
# The claims
# ---------------------------------------------------------------------------------------------------------------


def noise_margin(a: float, b: float, n: int) -> float:
    """The 95 % noise band for the difference of two accuracies ``a`` and ``b``, each measured on ``n`` units:
    ``1.96 * sqrt(p * (1 - p) * 2 / n)`` with ``p = (a + b) / 2`` (two independent binomial proportions, normal
    approximation)::

        >>> round(noise_margin(0.70, 0.80, 300), 4)
        0.0693
    """
    if n is None or n <= 0:
        raise ValueError(f"noise_margin needs a positive number of units n, got {n!r}")
    p = (a + b) / 2
    p = min(max(p, 0.0), 1.0)  # guards against a score a hair outside [0, 1] from float sums
    return 1.96 * math.sqrt(p * (1 - p) * 2 / n)


def _compare(task_name, task, lower, a, higher, b, units=None, **extra):
    """One claimed ``lower < higher`` comparison on one task, with its outcome: from the paired bootstrap over the
    same validation units and the seeds' agreement when ``units`` (the two sides' ``scoring.Scored``) are given, else
    from the binomial noise band."""
    if units is not None and all(u is not None for u in units):
        from .scoring import compare

        paired = compare(task_name, units[1], units[0])
        return {"task": task_name, "lower": lower, "higher": higher, "lower_score": a, "higher_score": b,
                "difference": paired["difference"], "interval": paired["interval"],
                "seed_differences": paired["seed_differences"], "margin": None, "noise_estimate": True,
                "outcome": paired["outcome"], **extra}
    n = _validation_units(task)
    noise_estimate = _is_accuracy(task.get("metric")) and bool(n)
    margin = noise_margin(a, b, n) if noise_estimate else 0.0
    difference = b - a
    if difference > margin:
        outcome = "holds"
    elif -difference > margin:
        outcome = "reversed"
    else:
        outcome = "within noise"
    return {"task": task_name, "lower": lower, "higher": higher, "lower_score": a, "higher_score": b,
            "difference": difference, "margin": margin, "noise_estimate": noise_estimate, "outcome": outcome,
            **extra}


def _margin_text(comparison):
    if comparison.get("interval"):
        low, high = comparison["interval"]
        return f"95 % interval of the difference [{low:+.3f}, {high:+.3f}]"
    return f"margin {comparison['margin']:.3f}" if comparison["noise_estimate"] else "no noise estimate"


def _describe(comparison):
    """``static (word2vec) 0.520 < ELMo 0.480 (reversed, margin 0.043)``."""
    return (f"{comparison['lower']} {comparison['lower_score']:.3f} < {comparison['higher']} "
            f"{comparison['higher_score']:.3f} ({comparison['outcome']}, {_margin_text(comparison)})")


def _base(outcome):
    """"holds (one seed)" counts as "holds" for a verdict, which ``_claim`` then marks as one seed's."""
    return outcome.removesuffix(" (one seed)")


def _counts(comparisons):
    return Counter(_base(c["outcome"]) for c in comparisons)


def _tally(comparisons):
    counts = _counts(comparisons)
    return (f"{counts['holds']} of {len(comparisons)} comparisons hold, {counts['reversed']} reversed, "
            f"{counts['within noise']} within noise.")


def _majority_verdict(comparisons):
    """The verdict shared by the claims that are a set of like comparisons."""
    if not comparisons:
        return "not tested"
    counts = _counts(comparisons)
    if counts["holds"] > len(comparisons) / 2 and not counts["reversed"]:
        return "confirmed"
    if counts["reversed"] > len(comparisons) / 2:
        return "not confirmed"
    return "inconclusive"


ONE_SEED_VERDICTS = {"confirmed": "suggested (one seed)", "not confirmed": "contradicted (one seed)"}


def _claim(claim_id, verdict, evidence, comparisons):
    """A verdict that rests on one seed's comparisons cannot be "confirmed": without several seeds the seed spread
    is unknown, so it becomes "suggested (one seed)" (or "contradicted (one seed)")."""
    sentence, rule = CLAIMS[claim_id]
    if any(len(c.get("seed_differences") or []) == 1 for c in comparisons):  # hand-written results have none
        verdict = ONE_SEED_VERDICTS.get(verdict, verdict)
    return {"id": claim_id, "claim": sentence, "rule": rule + NOISE_RULE, "verdict": verdict, "evidence": evidence,
            "comparisons": comparisons}


def _units(scored, cell):
    if not scored or not cell:
        return None
    return scored.get((cell["task"], cell["family"], cell["variant"], cell.get("train_size")))


# The regimes a comparison between families is made in, never across: the pretrained features fixed under one head
# for every family (a learned scalar mix of its layers, a BiLSTM, a classifier), or every pretrained weight trained.
REGIMES = {"frozen": "frozen features, the same scalar-mix + BiLSTM head for every family",
           "finetuned": "every family fine-tuned"}


def _regime_cells(by_variant, regime):
    """``{(family, task): cell}`` of one regime at the main table's size."""
    return {(family, task): cell for (family, task, variant), cell in by_variant.items() if variant == regime}


def _in_regime(claim, regime):
    """A family-against-family claim judged in one regime: its id, sentence and rule name the regime."""
    return {**claim, "id": f"{claim['id']}_{regime}", "regime": regime,
            "claim": f"{claim['claim'].removesuffix('.')} ({REGIMES[regime]}).",
            "rule": f"Within one regime ({REGIMES[regime]}): every cell compared is the family's {regime} cell. "
                    + claim["rule"]}


def _excluded(results):
    """The cells left out of every verdict because they did not train, in words (empty when none)."""
    flagged = [c for c in results.get("finetuning") or [] if c.get("status") == "ok" and c.get("flags")]
    if not flagged:
        return ""
    return ("Left out of every verdict (did not train): " + "; ".join(
        f"{_name(c['family'])} {c['variant']} on {c['task']} @{c.get('train_size')} ({', '.join(c['flags'])})"
        for c in flagged) + ".")


def _understanding_order(results, cells, scored=None):
    groups = ("static", *contextual_families())
    comparisons, scores = [], {}  # scores: {task: {group: score}}
    per_task_text = []
    for task_name in _understanding_tasks(results):
        task = results["tasks"][task_name]
        present = {}  # group -> (label, score, units), in the claimed order
        static = [(family, _score(cells.get((family, task_name)))) for family in claim_groups("static")]
        static = [(family, score) for family, score in static if score is not None]
        if static:
            family, score = max(static, key=lambda fs: fs[1])  # ties keep the first, NNLM
            present["static"] = (f"static ({_name(family)})", score, _units(scored, cells.get((family, task_name))))
        for family in contextual_families():
            score = _score(cells.get((family, task_name)))
            if score is not None:
                present[family] = (_name(family), score, _units(scored, cells.get((family, task_name))))
        scores[task_name] = {group: score for group, (_, score, _) in present.items()}
        order = [group for group in groups if group in present]
        task_comparisons = [
            _compare(task_name, task, present[low][0], present[low][1], present[high][0], present[high][1],
                     units=(present[low][2], present[high][2]), pair=f"{low}<{high}")
            for low, high in zip(order, order[1:])
        ]
        comparisons += task_comparisons
        if task_comparisons:
            per_task_text.append(f"{task_name}: " + "; ".join(_describe(c) for c in task_comparisons))

    groups_with_scores = [g for g in groups if any(g in s for s in scores.values())]
    if not comparisons:
        have = ", ".join(groups_with_scores) or "none"
        return _claim("understanding_order", "not tested",
                      f"No understanding task has scores for two of the four groups (groups with any score: {have}).",
                      [])

    # A pair reversed on most of the tasks where it was compared.
    pairs = sorted({c["pair"] for c in comparisons}, key=lambda p: [groups.index(g) for g in p.split("<")])
    pair_reversed = [p for p in pairs
                     if sum(_base(c["outcome"]) == "reversed" for c in comparisons if c["pair"] == p)
                     > sum(c["pair"] == p for c in comparisons) / 2]
    # The order of the averages, over the tasks on which every group with a score has one.
    common = [t for t, s in scores.items() if s and all(g in s for g in groups_with_scores)]
    average_text, average_out_of_order = "", False
    if common and len(groups_with_scores) >= 2:
        means = {g: sum(scores[t][g] for t in common) / len(common) for g in groups_with_scores}
        average_out_of_order = any(means[low] >= means[high]
                                   for low, high in zip(groups_with_scores, groups_with_scores[1:]))
        average_text = (f"Averaged over {', '.join(common)}: "
                        + ", ".join(f"{'static' if g == 'static' else _name(g)} {means[g]:.3f}"
                                    for g in groups_with_scores)
                        + (" (out of the claimed order)." if average_out_of_order else " (in the claimed order)."))
    else:
        average_text = "No task has scores for every group, so there is no averaged order."
    any_reversed = any(_base(c["outcome"]) == "reversed" for c in comparisons)

    verdict = _majority_verdict(comparisons)
    if verdict != "confirmed":
        verdict = "not confirmed" if pair_reversed or (average_out_of_order and any_reversed) else "inconclusive"
    evidence = " ".join(
        [". ".join(per_task_text) + ".", average_text, _tally(comparisons)]
        + ([f"Reversed on most of the tasks compared: {', '.join(p.replace('<', ' < ') for p in pair_reversed)}."]
           if pair_reversed else [])
    )
    return _claim("understanding_order", verdict, evidence, comparisons)


def _pretrained_cell(by_variant, family, task_name):
    """The fine-tuned cell: the same trainable network as the from-scratch one, only its starting weights differ
    (a frozen cell against scratch would also compare a frozen network with a trained one)."""
    return by_variant.get((family, task_name, "finetuned"))


def _bidirectional(results, cells, scored=None):
    comparisons = []
    for task_name in _understanding_tasks(results):
        gpt, bert = cells.get(("gpt", task_name)), cells.get(("bert", task_name))
        if _score(gpt) is None or _score(bert) is None:
            continue
        comparisons.append(_compare(task_name, results["tasks"][task_name], f"GPT ({gpt['variant']})", _score(gpt),
                                    f"BERT ({bert['variant']})", _score(bert),
                                    units=(_units(scored, gpt), _units(scored, bert))))
    if not comparisons:
        return _claim("bidirectional", "not tested",
                      "No understanding task has scores for both GPT and BERT.", [])
    evidence = "; ".join(f"{c['task']}: {_describe(c)}" for c in comparisons) + ". " + _tally(comparisons)
    return _claim("bidirectional", _majority_verdict(comparisons), evidence, comparisons)


def _pretraining_helps(results, by_variant, scored=None):
    comparisons, per_family = [], []
    tasks = _understanding_tasks(results)
    for family in results["families"]:
        family_comparisons = []
        for task_name in tasks:
            scratch = by_variant.get((family, task_name, "scratch"))
            pretrained = _pretrained_cell(by_variant, family, task_name)
            if _score(scratch) is None or _score(pretrained) is None:
                continue
            family_comparisons.append(_compare(
                task_name, results["tasks"][task_name], f"{_name(family)} from scratch", _score(scratch),
                f"{_name(family)} pretrained ({pretrained['variant']})", _score(pretrained),
                units=(_units(scored, scratch), _units(scored, pretrained)), family=family,
                variant=pretrained["variant"]))
        if family_comparisons:
            per_family.append(f"{_name(family)}: " + "; ".join(
                f"{c['task']} {c['higher_score']:.3f} ({c['variant']}) vs scratch {c['lower_score']:.3f} "
                f"({c['outcome']}, {_margin_text(c)})"
                for c in family_comparisons))
        comparisons += family_comparisons
    if not comparisons:
        return _claim("pretraining_helps", "not tested",
                      "No family has both a from-scratch and a pretrained score on an understanding task.", [])
    sizes = []
    for task_name in dict.fromkeys(c["task"] for c in comparisons):
        examples = results["tasks"][task_name].get("train_examples")
        if examples:
            sizes.append(f"{task_name} {examples:,}")
    size_text = f" Labelled training examples: {', '.join(sizes)}." if sizes else ""
    evidence = ". ".join(per_family) + "." + size_text + " " + _tally(comparisons)
    return _claim("pretraining_helps", _majority_verdict(comparisons), evidence, comparisons)


def _beats_baselines(results, by_variant, scored, baselines):
    comparisons = []
    for task_name in _understanding_tasks(results):
        rows = [b for b in results["baselines"].get(task_name) or [] if b["name"] not in TRAINED_BASELINES]
        if not rows:
            continue
        strongest = max(rows, key=lambda b: b["score"])
        for family in results["families"]:
            cells = [c for (f, t, _), c in by_variant.items()
                     if f == family and t == task_name and _score(c) is not None]
            if not cells:
                continue
            best = max(cells, key=_score)
            units = None
            if scored and baselines:
                baseline = (baselines.get(task_name) or {}).get(strongest["name"])  # a scoring.Scored
                if baseline is not None:
                    units = (baseline, _units(scored, best))
            comparisons.append(_compare(task_name, results["tasks"][task_name], strongest["name"], strongest["score"],
                                        f"{_name(family)} ({best['variant']})", _score(best), units=units,
                                        family=family))
    if not comparisons:
        return _claim("beats_baselines", "not tested", "No understanding task has both baselines and scores.", [])
    counts = _counts(comparisons)
    verdict = ("confirmed" if counts["holds"] == len(comparisons) else
               "not confirmed" if counts["reversed"] else "inconclusive")
    below = [f"{c['higher']} on {c['task']}" for c in comparisons if _base(c["outcome"]) != "holds"]
    evidence = _tally(comparisons) + (f" Not beating the baseline: {', '.join(below)}." if below else "")
    return _claim("beats_baselines", verdict, evidence, comparisons)


def _little_data(results, scored):
    curves = _curves(results)
    comparisons, texts = [], []
    for (task_name, family), sides in curves.items():
        pretrained = _curve_variant(sides)
        if pretrained is None or "scratch" not in sides:
            continue
        sizes = sorted(set(sides[pretrained]) & set(sides["scratch"]))
        if len(sizes) < 2:
            continue
        small, large = sizes[0], sizes[-1]
        cells = {(v, n): sides[v][n] for v in (pretrained, "scratch") for n in (small, large)}
        first = _compare(task_name, results["tasks"][task_name], f"{_name(family)} scratch @{small}",
                         _score(cells["scratch", small]), f"{_name(family)} {pretrained} @{small}",
                         _score(cells[pretrained, small]),
                         units=(_units(scored, cells["scratch", small]), _units(scored, cells[pretrained, small])),
                         family=family)
        gain_small = _score(cells[pretrained, small]) - _score(cells["scratch", small])
        gain_large = _score(cells[pretrained, large]) - _score(cells["scratch", large])
        units = [_units(scored, cells[key]) for key in
                 ((pretrained, small), ("scratch", small), (pretrained, large), ("scratch", large))]
        shrink = None
        if all(u is not None for u in units):
            from .scoring import contrast

            shrink = contrast(task_name, units, (1, -1, -1, 1))
        shrink_outcome = ("no interval" if shrink is None else "holds" if shrink["interval"][0] > 0 else
                          "reversed" if shrink["interval"][1] < 0 else "within noise")
        first.update(gain_small=gain_small, gain_large=gain_large, shrinks=gain_small > gain_large,
                     shrink=None if shrink is None else shrink["difference"],
                     shrink_interval=None if shrink is None else shrink["interval"], shrink_outcome=shrink_outcome)
        comparisons.append(first)
        interval = ("" if shrink is None else
                    f"; shrink {shrink['difference']:+.3f} [{shrink['interval'][0]:+.3f}, {shrink['interval'][1]:+.3f}]"
                    f" ({shrink_outcome})")
        texts.append(f"{_name(family)} on {task_name}: gain {gain_small:+.3f} at {small}, {gain_large:+.3f} at "
                     f"{large} ({first['outcome']} at {small}{interval})")
    if not comparisons:
        return _claim("little_data", "not tested", "No family has both learning curves at two sizes.", [])
    # Without per-unit values (results written by hand) the shrink has no interval: its sign decides.
    supported = sum(_base(c["outcome"]) == "holds"
                    and (c["shrink_outcome"] == "holds" or (c["shrink_outcome"] == "no interval" and c["shrinks"]))
                    for c in comparisons)
    against = sum(_base(c["outcome"]) == "reversed" or c["shrink_outcome"] == "reversed" for c in comparisons)
    verdict = ("confirmed" if supported > len(comparisons) / 2 else
               "not confirmed" if against > len(comparisons) / 2 else "inconclusive")
    evidence = "; ".join(texts) + f". {supported} of {len(comparisons)} show a real gain at the smallest size that " \
        "shrinks with more data beyond noise."
    return _claim("little_data", verdict, evidence, comparisons)


def _gate_failure(task_name, gate):
    """Why a context task that failed its gate (``scoring.context_gate``) is left out, in words."""
    names = {"bag_of_words": "bag-of-words", "edge_words": "edge-word"}
    majority = gate.get("majority")
    failed = [f"the {names.get(key, key)} baseline scores "
              + (f"{gate[key]:.2f}" if gate.get(key) is not None else "nothing") for key in gate.get("failed_by") or []]
    allowed = (f"majority {majority:.2f} + {gate.get('margin', 0.10):.2f} allowed" if majority is not None
               else "no majority-class score")
    return f"{task_name}: not used, {' and '.join(failed) or 'its gate failed'} ({allowed})"


def _contextual_beats_static(results, cells, scored=None):
    comparisons, texts, skipped = [], [], []
    for task_name, task in results["tasks"].items():
        if not (task.get("understanding") and task.get("needs_context")):
            continue
        gate = task.get("context_gate")
        if gate is not None and not gate.get("passes"):  # solved without context: it cannot test the claim
            skipped.append(_gate_failure(task_name, gate))
            continue
        static = [(f, _score(cells.get((f, task_name)))) for f in claim_groups("static", "root")]
        static = [(f, score) for f, score in static if score is not None]
        if not static:
            continue
        best_static, static_score = max(static, key=lambda fs: fs[1])
        for family in contextual_families():
            cell = cells.get((family, task_name))
            if _score(cell) is None:
                continue
            comparison = _compare(task_name, task, f"static ({_name(best_static)})", static_score, _name(family),
                                  _score(cell), units=(_units(scored, cells[(best_static, task_name)]),
                                                       _units(scored, cell)), family=family)
            comparisons.append(comparison)
            texts.append(f"{task_name}: {_describe(comparison)}")
    left_out = "".join(f" {text}." for text in skipped)
    if not comparisons:
        return _claim("contextual_beats_static", "not tested",
                      "No context task has both a static and a contextual family's score." + left_out, [])
    return _claim("contextual_beats_static", _majority_verdict(comparisons), "; ".join(texts) + ". "
                  + _tally(comparisons) + left_out, comparisons)


def _pretraining_helps_small(results, scored=None):
    main_size = results.get("main_train_size")
    comparisons, texts = [], []
    for (task_name, family), sides in _curves(results).items():
        pretrained = _curve_variant(sides)
        if pretrained is None or "scratch" not in sides:
            continue
        for size in sorted(set(sides[pretrained]) & set(sides["scratch"])):
            if main_size is not None and size >= main_size:
                continue
            scratch, trained = sides["scratch"][size], sides[pretrained][size]
            comparison = _compare(task_name, results["tasks"][task_name], f"{_name(family)} scratch @{size}",
                                  _score(scratch), f"{_name(family)} {pretrained} @{size}", _score(trained),
                                  units=(_units(scored, scratch), _units(scored, trained)), family=family, size=size)
            comparisons.append(comparison)
            texts.append(f"{_name(family)} on {task_name} @{size}: {_score(trained) - _score(scratch):+.3f} "
                         f"({comparison['outcome']}, {_margin_text(comparison)})")
    if not comparisons:
        return _claim("pretraining_helps_small", "not tested",
                      "No family has a pretrained and a from-scratch cell below the main table's size.", [])
    return _claim("pretraining_helps_small", _majority_verdict(comparisons), "; ".join(texts) + ". "
                  + _tally(comparisons), comparisons)


def _curve_variant(sides):
    """The pretrained side of a learning curve: the variant with a cell at the most sizes (fine-tuned before frozen
    on a tie: the same trainable network as scratch); None without one."""
    pretrained = [v for v in sides if v != "scratch"]
    return max(pretrained, key=lambda v: (len(sides[v]), v == "finetuned")) if pretrained else None


def _curves(results):
    """``{(task, family): {variant: {size: cell}}}`` of the learning-curve tasks (cells at several sizes)."""
    curves = {}
    for cell in results.get("finetuning") or []:
        if cell.get("train_size") is None or _score(cell) is None:
            continue
        curves.setdefault((cell["task"], cell["family"]), {}).setdefault(cell["variant"], {})[cell["train_size"]] = cell
    return {key: sides for key, sides in curves.items()
            if any(len(sizes) > 1 for sizes in sides.values())}


def _ablation_cells(cells, task_name, *families):
    """The ablation families' cells on one task, or None unless every one has a score."""
    found = [cells.get((family, task_name)) for family in families]
    return found if all(_score(cell) is not None for cell in found) else None


def _nsp_effect(comparison, margin=NSP_MARGIN):
    """``nsp_little``'s reading of one comparison: "small", "large" or "undecided" (see its rule)."""
    difference = comparison["difference"]
    low, high = comparison.get("interval") or (difference - comparison["margin"], difference + comparison["margin"])
    if -margin <= low and high <= margin:
        return "small"
    if _base(comparison["outcome"]) in ("holds", "reversed") and abs(difference) > margin:
        return "large"
    return "undecided"


def _nsp_little(results, cells, scored=None):
    comparisons = []
    for task_name in _understanding_tasks(results):
        pair = _ablation_cells(cells, task_name, "bert-no-nsp", "bert")
        if pair is None:
            continue
        without, bert = pair
        comparison = _compare(task_name, results["tasks"][task_name], f"BERT no NSP ({without['variant']})",
                              _score(without), f"BERT ({bert['variant']})", _score(bert),
                              units=(_units(scored, without), _units(scored, bert)))
        comparisons.append({**comparison, "effect": _nsp_effect(comparison)})
    claim_id = "nsp_little"
    if not comparisons:
        return _claim(claim_id, "not tested", "No understanding task has scores for both BERT and BERT no NSP.", [])
    effects = Counter(c["effect"] for c in comparisons)
    verdict = ("confirmed" if effects["small"] > len(comparisons) / 2 and not effects["large"] else
               "not confirmed" if effects["large"] > len(comparisons) / 2 else "inconclusive")
    evidence = ("; ".join(f"{c['task']}: {_describe(c)}, NSP effect {c['effect']}" for c in comparisons)
                + f". {effects['small']} small, {effects['large']} large, {effects['undecided']} undecided (margin "
                f"±{NSP_MARGIN:g}).")
    claim = _claim(claim_id, verdict, evidence, comparisons)
    return {**claim, "rule": claim["rule"].replace("{margin:g}", f"{NSP_MARGIN:g}")}


def _bidirectional_key(results, cells, scored=None):
    comparisons, skipped, nsp_sizes = [], [], []
    for task_name, task in results["tasks"].items():
        if not (task.get("understanding") and task.get("needs_context")):
            continue
        gate = task.get("context_gate")
        if gate is not None and not gate.get("passes"):
            skipped.append(_gate_failure(task_name, gate))
            continue
        pair = _ablation_cells(cells, task_name, "bert-ltr", "bert-no-nsp")
        if pair is None:
            continue
        ltr, both_ways = pair
        comparisons.append(_compare(task_name, task, f"BERT left-to-right ({ltr['variant']})", _score(ltr),
                                    f"BERT no NSP ({both_ways['variant']})", _score(both_ways),
                                    units=(_units(scored, ltr), _units(scored, both_ways))))
        with_nsp = cells.get(("bert", task_name))
        if _score(with_nsp) is not None:
            nsp_sizes.append(abs(_score(with_nsp) - _score(both_ways)))
    left_out = "".join(f" {text}." for text in skipped)
    if not comparisons:
        return _claim("bidirectional_key", "not tested",
                      "No context task has scores for both BERT no NSP and BERT left-to-right." + left_out, [])
    verdict = _majority_verdict(comparisons)
    direction = sum(c["difference"] for c in comparisons) / len(comparisons)
    weighed = ""
    if len(nsp_sizes) == len(comparisons):
        nsp = sum(nsp_sizes) / len(nsp_sizes)
        weighed = f" Mean direction gap {direction:+.3f} against a mean NSP effect of size {nsp:.3f}."
        if verdict == "confirmed" and direction <= nsp:
            verdict = "inconclusive"
    evidence = "; ".join(f"{c['task']}: {_describe(c)}" for c in comparisons) + ". " + _tally(comparisons) + weighed
    return _claim("bidirectional_key", verdict, evidence + left_out, comparisons)


def _grammar_order(zero_shot: dict):
    """The grammar claim from the zero-shot stage's paired differences (``zero_shot_stage.score_zero_shot``), by
    the same majority rule as the other family orders."""
    from .zero_shot_stage import system_label

    comparisons = []
    for d in zero_shot["blimp"]["differences"]:
        low, high = d["interval"]
        outcome = ("within noise" if low is None else "holds" if low > 0 else "reversed" if high < 0
                   else "within noise")
        comparisons.append({"task": "BLiMP (zero-shot)", "lower": system_label(d["lower"]),
                            "higher": system_label(d["higher"]), "lower_score": d["lower_score"],
                            "higher_score": d["higher_score"], "difference": d["difference"],
                            "interval": d["interval"] if low is not None else None, "seed_differences": None,
                            "margin": None,
                            "noise_estimate": low is not None, "outcome": outcome,
                            "pair": f"{d['lower']}<{d['higher']}"})
    if not comparisons:
        return _claim("grammar_order", "not tested", "Fewer than two models were scored on BLiMP.", [])
    evidence = "; ".join(_describe(c) for c in comparisons) + ". " + _tally(comparisons)
    return _claim("grammar_order", _majority_verdict(comparisons), evidence, comparisons)


def evaluate_claims(results: dict, scored: dict | None = None, baselines: dict | None = None) -> list[dict]:
    """Judge the seeds' three claims from ``results``' scores, each by the rule stated with it.

    Returns one dict per claim — ``id``, ``claim`` (the sentence), ``rule`` (how the verdict is decided, in words),
    ``verdict`` (``"confirmed"``, ``"not confirmed"``, ``"inconclusive"`` or ``"not tested"``), ``evidence`` (the
    numbers behind it) and ``comparisons`` (one dict per pairwise comparison: task, the two sides and their scores,
    difference, margin, outcome)::

        >>> claims = evaluate_claims(results)                       # doctest: +SKIP
        >>> [(c["id"], c["verdict"]) for c in claims]               # doctest: +SKIP
        [('understanding_order', 'inconclusive'), ('bidirectional', 'confirmed'), ('pretraining_helps', 'confirmed')]
    """
    _check_results(results, ("families", "tasks", "finetuning"))
    # BERT's ablations (when they ran) have claims of their own; the lineage's claims are the lineage families'.
    ablated = ablations(results["families"])
    everything, results = results, {**results, "families": [f for f in results["families"] if f not in ablated],
                                    "finetuning": [c for c in results["finetuning"] if c.get("family") not in ablated]}
    by_variant, _ = _cells(results)
    claims = []
    for regime in REGIMES:
        cells = _regime_cells(by_variant, regime)
        claims += [_in_regime(_understanding_order(results, cells, scored), regime),
                   _in_regime(_bidirectional(results, cells, scored), regime),
                   _in_regime(_contextual_beats_static(results, cells, scored), regime)]
    claims.append(_pretraining_helps(results, by_variant, scored))
    if results.get("baselines"):
        claims.append(_beats_baselines(results, by_variant, scored, baselines))
    if results.get("curve_sizes"):
        claims.append(_pretraining_helps_small(results, scored))
        claims.append(_little_data(results, scored))
    if ablated:
        all_cells, _ = _cells(everything)
        families = set(everything["families"])
        for regime in REGIMES:
            cells = _regime_cells(all_cells, regime)
            if {"bert-no-nsp", "bert-ltr"} <= families:
                claims.append(_in_regime(_bidirectional_key(everything, cells, scored), regime))
            if {"bert", "bert-no-nsp"} <= families:
                claims.append(_in_regime(_nsp_little(everything, cells, scored), regime))
    excluded = _excluded(results)
    if excluded:
        for claim in claims:
            claim["evidence"] += " " + excluded
    zero_shot = everything.get("zero_shot") or {}
    if zero_shot.get("status") == "ok" and zero_shot.get("blimp"):  # no fine-tuning cell: nothing excluded here
        claims.append(_grammar_order(zero_shot))
    return claims


def multiplicity(claims: list[dict]) -> dict:
    """How many comparisons the verdicts rest on, and how many would hold by chance alone: each comparison's 95 %
    interval excludes 0 on its own side with probability at most 2.5 % when the two systems are equal, so among
    ``n`` comparisons about ``0.025 n`` would "hold" (and as many be "reversed") with no real difference. The
    verdicts need more than half of their comparisons to hold, a bar chance alone does not reach, but a single
    comparison is one of many."""
    comparisons = [c for claim in claims for c in claim.get("comparisons") or []]
    counts = _counts(comparisons)
    n = len(comparisons)
    return {"comparisons": n, "holds": counts["holds"], "reversed": counts["reversed"],
            "expected_by_chance_per_direction": round(0.025 * n, 1),
            "note": (f"The verdicts rest on {n} comparisons, each judged at 95 %: with no real difference anywhere, "
                     f"about {0.025 * n:.1f} would hold and as many be reversed by chance alone (the seed rules make "
                     f"that rarer still). {counts['holds']} hold and {counts['reversed']} are reversed. A verdict "
                     "needs most of its comparisons to agree, which chance alone does not give; one comparison on "
                     "its own is weak evidence.")}
