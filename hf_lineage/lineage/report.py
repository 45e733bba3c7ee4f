"""The report of ``hf-lineage lineage``: the seeds' claims judged from the numbers, the plots, and ``report.md``.

The orchestrator (``hf_lineage.lineage.experiment``) runs the experiment, collects every number in one ``results``
dict (pretraining per family, one cell per family × task × variant, see ``experiment.py`` for the schema) and then
calls the three functions here, in this order, so each step's output is kept in ``results.json`` too::

    >>> from hf_lineage.lineage.report import evaluate_claims, write_plots, write_report
    >>> results["claims"] = evaluate_claims(results)              # doctest: +SKIP
    >>> results["plots"] = write_plots(results, "report")         # doctest: +SKIP
    >>> write_report(results, "report")                           # doctest: +SKIP
    'report/report.md'

The claims are decided by rules written down before any number is looked at (``evaluate_claims`` returns the rule
with each verdict). A difference between two accuracies counts only when it is larger than the sampling noise of the
validation sets: ``margin = 1.96 * sqrt(p * (1 - p) * 2 / n)`` with ``p = (a + b) / 2`` (two independent binomial
proportions over ``n`` units each, normal approximation, ~95 %). Within that band a comparison is "within noise",
and a claim whose comparisons are mostly within noise is "inconclusive": nothing is forced.

Everything here is deterministic, reads nothing but ``results`` and needs no network; plots use matplotlib's Agg
backend (no display).
"""

from __future__ import annotations

import math
import os
from collections import Counter

# How the report names the families (the registry's names are lower case).
FAMILY_NAMES = {"nnlm": "NNLM", "word2vec": "word2vec", "elmo": "ELMo", "gpt": "GPT", "bert": "BERT"}
VARIANTS = ("frozen", "finetuned", "scratch")
# Families whose validation perplexity is a causal-LM perplexity, and the unit it is per.
CAUSAL_LM_UNITS = {"nnlm": "word", "elmo": "word", "gpt": "BPE token"}
# Not a language model: no perplexity, whatever a results dict says.
NO_PERPLEXITY = {"word2vec"}
# One colour per family and per variant, the same in every plot.
FAMILY_COLORS = {"nnlm": "tab:brown", "word2vec": "tab:olive", "elmo": "tab:green", "gpt": "tab:blue",
                 "bert": "tab:red"}
VARIANT_COLORS = {"frozen": "tab:gray", "finetuned": "tab:blue", "scratch": "tab:orange"}
PLOT_CAPTIONS = {
    "learning_curves.png": "Learning curves: score against labelled training examples, pretrained (solid) vs from "
                           "scratch (dashed), with 95 % bootstrap bands; dotted lines are the baselines.",
    "pretraining_curves.png": "Pretraining: training loss against words seen, one panel per family (the objectives "
                              "differ, so the losses are not on one scale); dots: validation loss.",
    "downstream_scores.png": "Downstream scores per task, each family used as its paper uses it (the main table).",
    "frozen_vs_finetuned.png": "Understanding tasks: the pretrained network frozen (only the task head / task "
                               "encoder trained), fine-tuned, and the same architecture trained from scratch.",
}

NOISE_RULE = (
    "Two scores are compared on the same validation units: the paired bootstrap (1,000 resamples of the units — "
    "sentences for labeling — scoring both systems on each) gives a 95 % interval of the difference, and with "
    "several seeds each seed's difference is computed too. A claimed a < b holds when the interval lies above 0 and "
    "every seed agrees; it is reversed in the mirror case, and within noise otherwise. (Results without per-unit "
    "predictions, e.g. written by hand, fall back to a noise band: for a metric that is an accuracy over n validation units (words "
    "for labeling, examples otherwise), margin = 1.96 · sqrt(p(1 − p) · 2 / n) with p = (a + b) / 2 — two independent "
    "binomial proportions, normal approximation, about 95 %. A claimed a < b holds when b − a > margin, is reversed "
    "when a − b > margin, and is within noise otherwise. A metric that is not an accuracy gets margin 0 (no noise "
    "estimate). Only understanding tasks count, and only cells that ran to the end."
)
CLAIMS = {
    "understanding_order": (
        "Static word vectors < ELMo < GPT < BERT on understanding tasks.",
        "Each family is used as its paper uses it (the main table's cells). 'Static' is the better of NNLM and "
        "word2vec on each task, which is generous to static vectors. On each task the groups that have a score are "
        "compared in the claimed order, each with the next one that has a score (static < ELMo, ELMo < GPT, "
        "GPT < BERT; across a gap when a group has none). Not tested: no task has scores for two groups. "
        "Confirmed: no comparison is reversed and more than half hold. Not confirmed: some pair is reversed on more "
        "than half of the tasks it was compared on, or the groups' scores averaged over the tasks they all have are "
        "out of the claimed order while at least one comparison is reversed. Inconclusive: anything else. ",
    ),
    "bidirectional": (
        "Bidirectional context beats unidirectional context.",
        "BERT (bidirectional) against GPT (unidirectional; same size and pretraining budget), both fine-tuned (each "
        "family's fine-tuned cell; its main cell when it has none), on each understanding task. Not tested: no task "
        "has both. Confirmed: BERT > GPT holds on more than half of the tasks and is reversed on none. Not "
        "confirmed: reversed on more than half. Inconclusive: anything else. ",
    ),
    "pretraining_helps": (
        "Pretraining beats training from scratch on small labelled data.",
        "For every family and understanding task with both a from-scratch cell (same architecture, random "
        "initialisation, every parameter trained) and a pretrained cell (the fine-tuned one when it exists, else "
        "the main one): pretrained against scratch. Not tested: no such pair. Confirmed: pretrained > scratch holds "
        "for more than half of the pairs and is reversed for none. Not confirmed: reversed for more than half. "
        "Inconclusive: anything else. ",
    ),
    "beats_baselines": (
        "Every family learns each understanding task beyond what counting gets.",
        "For every family and understanding task: the family's best cell at the main table's labelled-set size "
        "against the strongest counting baseline computed on the same split (majority class; for labeling, the most "
        "frequent tag per word). Confirmed: every family holds on every task. Not confirmed: some family is "
        "reversed on some task. Inconclusive: anything else. The bag-of-words logistic regression is shown beside "
        "it, but is a trained model, not a trivial baseline. ",
    ),
    "little_data": (
        "Pretraining helps most when labelled data is scarce.",
        "On the learning-curve tasks, for every family with a pretrained and a from-scratch curve: the gain "
        "(pretrained − scratch) at the smallest labelled-set size against the gain at the largest. Confirmed: the "
        "gain at the smallest size holds (pretrained > scratch there) and is larger than at the largest size for "
        "more than half of the families and tasks. Not confirmed: the pretrained curve is below scratch at the "
        "smallest size for more than half. Inconclusive: anything else. ",
    ),
}


def _name(family):
    return FAMILY_NAMES.get(family, family)


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
    """The cell's score when it ran to the end and has a finite one, else None."""
    if not cell or cell.get("status") != "ok":
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


def _tally(comparisons):
    counts = Counter(c["outcome"] for c in comparisons)
    return (f"{counts['holds']} of {len(comparisons)} comparisons hold, {counts['reversed']} reversed, "
            f"{counts['within noise']} within noise.")


def _majority_verdict(comparisons):
    """The verdict shared by the claims that are a set of like comparisons."""
    if not comparisons:
        return "not tested"
    counts = Counter(c["outcome"] for c in comparisons)
    if counts["holds"] > len(comparisons) / 2 and not counts["reversed"]:
        return "confirmed"
    if counts["reversed"] > len(comparisons) / 2:
        return "not confirmed"
    return "inconclusive"


def _claim(claim_id, verdict, evidence, comparisons):
    sentence, rule = CLAIMS[claim_id]
    return {"id": claim_id, "claim": sentence, "rule": rule + NOISE_RULE, "verdict": verdict, "evidence": evidence,
            "comparisons": comparisons}


def _units(scored, cell):
    if not scored or not cell:
        return None
    return scored.get((cell["task"], cell["family"], cell["variant"], cell.get("train_size")))


def _understanding_order(results, main, scored=None):
    groups = ("static", "elmo", "gpt", "bert")
    comparisons, scores = [], {}  # scores: {task: {group: score}}
    per_task_text = []
    for task_name in _understanding_tasks(results):
        task = results["tasks"][task_name]
        present = {}  # group -> (label, score, units), in the claimed order
        static = [(family, _score(main.get((family, task_name)))) for family in ("nnlm", "word2vec")]
        static = [(family, score) for family, score in static if score is not None]
        if static:
            family, score = max(static, key=lambda fs: fs[1])  # ties keep the first, NNLM
            present["static"] = (f"static ({_name(family)})", score, _units(scored, main.get((family, task_name))))
        for family in ("elmo", "gpt", "bert"):
            score = _score(main.get((family, task_name)))
            if score is not None:
                present[family] = (_name(family), score, _units(scored, main.get((family, task_name))))
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
                     if sum(c["outcome"] == "reversed" for c in comparisons if c["pair"] == p)
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
    any_reversed = any(c["outcome"] == "reversed" for c in comparisons)

    verdict = _majority_verdict(comparisons)
    if verdict != "confirmed":
        verdict = "not confirmed" if pair_reversed or (average_out_of_order and any_reversed) else "inconclusive"
    evidence = " ".join(
        [". ".join(per_task_text) + ".", average_text, _tally(comparisons)]
        + ([f"Reversed on most of the tasks compared: {', '.join(p.replace('<', ' < ') for p in pair_reversed)}."]
           if pair_reversed else [])
    )
    return _claim("understanding_order", verdict, evidence, comparisons)


def _pretrained_cell(by_variant, main, family, task_name):
    """The fine-tuned cell when it has a score, else the main cell (the way the family's paper uses it)."""
    cell = by_variant.get((family, task_name, "finetuned"))
    if _score(cell) is not None:
        return cell
    return main.get((family, task_name))


def _bidirectional(results, by_variant, main, scored=None):
    comparisons = []
    for task_name in _understanding_tasks(results):
        gpt = _pretrained_cell(by_variant, main, "gpt", task_name)
        bert = _pretrained_cell(by_variant, main, "bert", task_name)
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


def _pretraining_helps(results, by_variant, main, scored=None):
    comparisons, per_family = [], []
    tasks = _understanding_tasks(results)
    for family in results["families"]:
        family_comparisons = []
        for task_name in tasks:
            scratch = by_variant.get((family, task_name, "scratch"))
            pretrained = _pretrained_cell(by_variant, main, family, task_name)
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
        rows = [b for b in results["baselines"].get(task_name) or [] if b["name"] != "bag-of-words logistic regression"]
        if not rows:
            continue
        strongest = max(rows, key=lambda b: b["score"])
        for family in results["families"]:
            cells = [c for (f, t, _), c in by_variant.items() if f == family and t == task_name and _score(c) is not None]
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
    counts = Counter(c["outcome"] for c in comparisons)
    verdict = ("confirmed" if counts["holds"] == len(comparisons) else
               "not confirmed" if counts["reversed"] else "inconclusive")
    below = [f"{c['higher']} on {c['task']}" for c in comparisons if c["outcome"] != "holds"]
    evidence = _tally(comparisons) + (f" Not beating the baseline: {', '.join(below)}." if below else "")
    return _claim("beats_baselines", verdict, evidence, comparisons)


def _little_data(results, scored):
    curves = _curves(results)
    comparisons, texts = [], []
    for (task_name, family), sides in curves.items():
        pretrained = next((v for v in sides if v != "scratch"), None)
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
        first.update(gain_small=gain_small, gain_large=gain_large, shrinks=gain_small > gain_large)
        comparisons.append(first)
        texts.append(f"{_name(family)} on {task_name}: gain {gain_small:+.3f} at {small}, {gain_large:+.3f} at "
                     f"{large} ({first['outcome']} at {small})")
    if not comparisons:
        return _claim("little_data", "not tested", "No family has both learning curves at two sizes.", [])
    supported = sum(c["outcome"] == "holds" and c["shrinks"] for c in comparisons)
    reversed_ = sum(c["outcome"] == "reversed" for c in comparisons)
    verdict = ("confirmed" if supported > len(comparisons) / 2 else
               "not confirmed" if reversed_ > len(comparisons) / 2 else "inconclusive")
    evidence = "; ".join(texts) + f". {supported} of {len(comparisons)} show a real gain at the smallest size that " \
        "shrinks with more data."
    return _claim("little_data", verdict, evidence, comparisons)


def _curves(results):
    """``{(task, family): {variant: {size: cell}}}`` of the learning-curve tasks (cells at several sizes)."""
    curves = {}
    for cell in results.get("finetuning") or []:
        if cell.get("train_size") is None or _score(cell) is None:
            continue
        curves.setdefault((cell["task"], cell["family"]), {}).setdefault(cell["variant"], {})[cell["train_size"]] = cell
    return {key: sides for key, sides in curves.items()
            if any(len(sizes) > 1 for sizes in sides.values())}


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
    by_variant, main = _cells(results)
    claims = [_understanding_order(results, main, scored), _bidirectional(results, by_variant, main, scored),
              _pretraining_helps(results, by_variant, main, scored)]
    if results.get("baselines"):
        claims.append(_beats_baselines(results, by_variant, scored, baselines))
    if results.get("curve_sizes"):
        claims.append(_little_data(results, scored))
    return claims


# ---------------------------------------------------------------------------------------------------------------
# The plots
# ---------------------------------------------------------------------------------------------------------------


def _pretraining_curves(plt, results, path):
    from matplotlib.ticker import EngFormatter

    families = results["families"]
    pretraining = results.get("pretraining") or {}
    series = {}
    for family in families:
        stage = pretraining.get(family) or {}
        curve = [p for p in stage.get("curve") or [] if p.get("train_loss") is not None]
        evals = [p for p in stage.get("eval_curve") or [] if p.get("loss") is not None]
        # No evaluation curve: the final validation loss, at the end of training, is still one point.
        final = (stage.get("validation") or {}).get("loss")
        if not evals and final is not None and stage.get("words_seen"):
            evals = [{"words_seen": stage["words_seen"], "loss": final}]
        series[family] = (curve, evals, stage)
    if not any(curve or evals for curve, evals, _ in series.values()):
        return False

    ncols = min(3, len(families))
    nrows = math.ceil(len(families) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.4 * ncols, 3.3 * nrows), squeeze=False)
    for ax, family in zip(axes.flat, families):
        curve, evals, stage = series[family]
        # Words seen is the shared budget's unit; a curve without it falls back to steps.
        x_key = "words_seen" if all(p.get("words_seen") is not None for p in curve + evals) else "step"
        if curve:
            ax.plot([p[x_key] for p in curve], [p["train_loss"] for p in curve], color=FAMILY_COLORS.get(family),
                    linewidth=1.2, label="train loss")
        if evals and all(p.get(x_key) is not None for p in evals):
            ax.plot([p[x_key] for p in evals], [p["loss"] for p in evals], "o", color="black", markersize=4,
                    label="validation loss")
        title = _name(family) + (f" — {stage['objective']}" if stage.get("objective") else "")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("words seen" if x_key == "words_seen" else "step", fontsize=8)
        ax.set_ylabel("loss", fontsize=8)
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))
        ax.tick_params(labelsize=7)
        if curve or evals:
            ax.legend(fontsize=7)
        else:
            ax.text(0.5, 0.5, f"no curve ({stage.get('status', 'not run')})", ha="center", va="center",
                    transform=ax.transAxes, fontsize=9, color="gray")
            ax.set_xticks([])
            ax.set_yticks([])
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(families):]:
        ax.set_visible(False)
    fig.suptitle("Pretraining loss (each family its own objective: not one scale)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _bar_label(ax, x, score, status):
    """A value above a bar, or the reason there is no bar."""
    if score is not None:
        ax.text(x, score, f"{score:.2f}", ha="center", va="bottom", fontsize=6, rotation=90)
    elif status == "failed":
        ax.text(x, 0, "failed", ha="center", va="bottom", fontsize=6, rotation=90, color="red")


def _legend_below(fig, axes, order):
    """One legend for all panels, below them, in ``order`` (a label is listed once, whichever panel drew it)."""
    handles = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    labels = [label for label in order if label in handles]
    fig.legend([handles[label] for label in labels], labels, loc="lower center", ncol=len(labels), fontsize=8,
               frameon=False)


def _downstream_scores(plt, results, path):
    _, main = _cells(results)
    families, tasks = results["families"], results["tasks"]
    # Grouped bars share a y axis, so tasks are grouped by metric (accuracy and BLEU are not one scale).
    by_metric = {}
    for task_name, task in tasks.items():
        if any(_score(main.get((f, task_name))) is not None for f in families):
            by_metric.setdefault(task.get("metric") or "score", []).append(task_name)
    if not by_metric:
        return False
    widths = [max(len(names), 1) for names in by_metric.values()]
    fig, axes = plt.subplots(1, len(by_metric), figsize=(1.6 + 1.9 * sum(widths), 4.2), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    width = 0.8 / len(families)
    for ax, (metric, task_names) in zip(axes[0], by_metric.items()):
        for i, family in enumerate(families):
            for j, task_name in enumerate(task_names):
                cell = main.get((family, task_name))
                x = j - 0.4 + width * (i + 0.5)
                score = _score(cell)
                if score is not None:
                    ax.bar(x, score, width, color=FAMILY_COLORS.get(family), label=_name(family))
                _bar_label(ax, x, score, (cell or {}).get("status"))
        ax.set_xticks(range(len(task_names)))
        ax.set_xlim(-0.5, len(task_names) - 0.5)
        ax.set_xticklabels(task_names, fontsize=8)
        _score_axis(ax, metric, f"{metric} (main variant)")
    _finish_bar_figure(plt, fig, axes, [_name(f) for f in families], "Downstream scores per task", path)
    return True


def _score_axis(ax, metric, title):
    ax.set_ylabel(metric, fontsize=9)
    ax.set_title(title, fontsize=10)
    if _is_accuracy(metric):
        ax.set_ylim(0, 1.1)
    else:
        ax.margins(y=0.15)  # room for the value labels above the highest bar
        ax.set_ylim(bottom=0)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(axis="y", alpha=0.3)


def _finish_bar_figure(plt, fig, axes, legend, title, path):
    _legend_below(fig, axes[0], legend)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _frozen_vs_finetuned(plt, results, path):
    by_variant, _ = _cells(results)
    families = results["families"]
    tasks = _understanding_tasks(results)
    if not any(_score(by_variant.get((f, t, v))) is not None for f in families for t in tasks for v in VARIANTS):
        return False
    fig, axes = plt.subplots(1, len(tasks), figsize=(0.6 + 0.9 * len(families) * len(tasks), 4.0), squeeze=False)
    width = 0.8 / len(VARIANTS)
    for ax, task_name in zip(axes[0], tasks):
        metric = results["tasks"][task_name].get("metric") or "score"
        for i, variant in enumerate(VARIANTS):
            for j, family in enumerate(families):
                cell = by_variant.get((family, task_name, variant))
                x = j - 0.4 + width * (i + 0.5)
                score = _score(cell)
                if score is not None:
                    ax.bar(x, score, width, color=VARIANT_COLORS[variant], label=variant)
                _bar_label(ax, x, score, (cell or {}).get("status"))
        ax.set_xticks(range(len(families)))
        ax.set_xlim(-0.5, len(families) - 0.5)
        ax.set_xticklabels([_name(f) for f in families], fontsize=8)
        _score_axis(ax, metric, task_name)
    _finish_bar_figure(plt, fig, axes, list(VARIANTS), "Frozen vs fine-tuned vs from scratch (understanding tasks)",
                       path)
    return True


def _learning_curves(plt, results, path):
    curves = _curves(results)
    tasks = list(dict.fromkeys(task for task, _ in curves))
    if not tasks:
        return False
    fig, axes = plt.subplots(1, len(tasks), figsize=(5.5 * len(tasks), 4), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        for (t, family), sides in curves.items():
            if t != task:
                continue
            for variant, by_size in sides.items():
                sizes = sorted(by_size)
                scores = [_score(by_size[n]) for n in sizes]
                low = [by_size[n]["interval"][0] if by_size[n].get("interval") else s for n, s in zip(sizes, scores)]
                high = [by_size[n]["interval"][1] if by_size[n].get("interval") else s for n, s in zip(sizes, scores)]
                style = "--" if variant == "scratch" else "-"
                ax.plot(sizes, scores, style, marker="o", color=FAMILY_COLORS.get(family),
                        label=f"{_name(family)} {variant}")
                ax.fill_between(sizes, low, high, color=FAMILY_COLORS.get(family), alpha=0.1)
        for b in (results.get("baselines") or {}).get(task) or []:
            ax.axhline(b["score"], color="black", linewidth=0.8, linestyle=":")
            ax.annotate(b["name"], (ax.get_xlim()[0], b["score"]), fontsize=7, va="bottom")
        ax.set_xscale("log")
        ax.set_xlabel("labelled training examples")
        ax.set_ylabel(results["tasks"][task].get("metric", "score"))
        ax.set_title(task)
        ax.legend(fontsize=7)
    fig.suptitle("Pretrained (solid) vs from scratch (dashed); dotted: baselines (main-table training size)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def write_plots(results: dict, output_dir) -> list[str]:
    """Draw the report's PNG plots into ``output_dir`` and return their file names (relative to it).

    ``pretraining_curves.png`` (train loss against words seen, one panel per family), ``downstream_scores.png``
    (main-variant score per task and family) and ``frozen_vs_finetuned.png`` (per understanding task: frozen,
    fine-tuned and from-scratch bars per family). Missing or failed numbers leave gaps; a plot with no number at
    all is not written and not listed::

        >>> write_plots(results, "report")                          # doctest: +SKIP
        ['pretraining_curves.png', 'downstream_scores.png', 'frozen_vs_finetuned.png']
    """
    _check_results(results, ("families", "tasks"))
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window: the experiment runs on servers and in CI
    import matplotlib.pyplot as plt

    os.makedirs(output_dir, exist_ok=True)
    written = []
    for name, draw in (("pretraining_curves.png", _pretraining_curves),
                       ("downstream_scores.png", _downstream_scores),
                       ("frozen_vs_finetuned.png", _frozen_vs_finetuned),
                       ("learning_curves.png", _learning_curves)):
        # "Software" is matplotlib's only PNG metadata by default (no date): the files are reproducible.
        if draw(plt, results, os.path.join(output_dir, name)):
            written.append(name)
    return written


# ---------------------------------------------------------------------------------------------------------------
# report.md
# ---------------------------------------------------------------------------------------------------------------


class _Footnotes:
    """Markdown footnotes, numbered in order of first use; the same text gets the same number."""

    def __init__(self):
        self.texts = {}

    def mark(self, text):
        label = self.texts.setdefault(_one_line(text), f"[^{len(self.texts) + 1}]")
        return label

    def since(self, start):
        """Definitions of the footnotes numbered after ``start`` (printed under the table that uses them)."""
        return [f"{label}: {text}" for text, label in self.texts.items() if int(label[2:-1]) > start]


def _one_line(text):
    return " ".join(str(text).split())


def _cell_text(text):
    return _one_line(text).replace("|", "\\|")


def _number(value, digits=3):
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{value:.{digits}f}"


def _count(value):
    return "—" if value is None else f"{value:,}"


def _footnote_block(notes, start):
    definitions = notes.since(start)
    return [""] + definitions if definitions else []


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _score_cell(cell, notes, where):
    """A fine-tuning cell as the tables show it: the score, "failed" with a footnote, or "—" (not run)."""
    if cell is None:
        return "—"
    status = cell.get("status")
    score = _score(cell)
    if score is not None:
        return _with_interval(cell) + (" †" if cell.get("reused") else "")
    if status == "failed":
        return "failed" + notes.mark(f"{where} failed: {cell.get('error') or 'no error message recorded'}")
    if status == "skipped":
        return "—" + (notes.mark(f"{where} skipped: {cell['error']}") if cell.get("error") else "")
    return "—"


def _with_interval(entry, digits=3):
    """``0.912 [0.905, 0.919] ±0.004``: the score, its 95 % bootstrap interval, the seeds' standard deviation."""
    if entry.get("score") is None:
        return "—"
    text = f"{entry['score']:.{digits}f}"
    if entry.get("interval"):
        low, high = entry["interval"]
        text += f" [{low:.{digits}f}, {high:.{digits}f}]"
    if (entry.get("spread") or {}).get("std") is not None:
        text += f" ±{entry['spread']['std']:.{digits}f}"
    return text


def _baseline_rows(results, tasks):
    rows = []
    names = dict.fromkeys(b["name"] for task in tasks for b in (results.get("baselines") or {}).get(task) or [])
    for name in names:
        row = [f"*baseline:* {name}", "—"]
        for task in tasks:
            entry = next((b for b in (results.get("baselines") or {}).get(task) or [] if b["name"] == name), None)
            row.append(_with_interval(entry) if entry else "—")
        rows.append(row)
    return rows


def _generation_table(results):
    cells = [c for c in results.get("finetuning") or [] if c["task"] == "generation" and _score(c) is not None]
    baselines = (results.get("baselines") or {}).get("generation") or []
    if not cells and not baselines:
        return []
    rows = [[_name(c["family"]), c["variant"], _with_interval(c, 2), _number(c.get("repetition")),
             _number(c.get("mean_words"), 1)] for c in cells]
    rows += [[f"*baseline:* {b['name']}", "—", _with_interval(b, 2), _number(b.get("repetition")),
              _number(b.get("mean_words"), 1)] for b in baselines]
    return ["", "Generation in detail: corpus BLEU (sacreBLEU, 0–100) of one greedy output per meaning "
            "representation against all its references, with its 95 % bootstrap interval over meaning "
            "representations; repetition: the share of an output's word 3-grams that repeat an earlier one in it "
            "(mean over outputs; human references are near 0); mean output length in words.", ""] + _table(
        ["system", "used as", "BLEU", "repetition", "words"], rows)


def _curves_section(results):
    curves = _curves(results)
    if not curves:
        return ["No learning curves were run."]
    sizes = results.get("curve_sizes") or sorted({n for sides in curves.values() for v in sides.values() for n in v})
    rows = []
    for (task, family), sides in curves.items():
        for variant, by_size in sides.items():
            rows.append([task, _name(family), variant] + [
                _with_interval(by_size[n]) if n in by_size else "—" for n in sizes])
    return (["Pretrained against from scratch as the labelled set grows (the smaller sets are nested in the larger "
             "ones; each cell trains until its dev split stops improving). Scores with 95 % bootstrap intervals.",
             ""] + _table(["task", "family", "variant"] + [f"{n:,} examples" for n in sizes], rows))


def _time_split(results):
    split = results.get("time_split") or {}
    if not split:
        return []
    total = sum(split.values())
    return ["", "Where the time went: " + ", ".join(
        f"{name} {seconds:,.0f} s ({100 * seconds / total:.0f} %)" for name, seconds in split.items()) + "."]


def _summary(results):
    families = results["families"]
    tasks = results["tasks"]
    corpus = results.get("corpus") or {}
    budget = results.get("budget") or {}
    corpus_text = f"the {corpus['name']}" if corpus.get("name") else "an unrecorded corpus"
    sizes = [f"{corpus[k]:,} {label} words" for k, label in (("train_words", "training"),
                                                                 ("validation_words", "validation"))
             if corpus.get(k)]
    if corpus.get("license"):
        sizes.append(f"license {corpus['license']}")
    if sizes:
        corpus_text += f" ({'; '.join(sizes)})"
    budget_text = budget.get("description")
    if not budget_text:
        if budget.get("kind") == "seconds" and budget.get("seconds"):
            budget_text = f"{budget['seconds']:,} seconds of training per family"
        elif budget.get("words"):
            budget_text = f"{budget['words']:,} words of training per family"
        else:
            budget_text = "budget not recorded"
    task_text = ", ".join(f"{name} ({task.get('dataset', 'unnamed data')})" for name, task in tasks.items())
    seconds = results.get("seconds_total")
    time_text = f"{seconds / 60:.1f} minutes ({seconds:,.0f} s) in all" if seconds is not None else "an unrecorded time"
    stage_seconds = results.get("stage_seconds")
    if seconds is not None and stage_seconds and stage_seconds > seconds:  # some stages were reused
        time_text = (f"{stage_seconds / 60:.1f} minutes ({stage_seconds:,.0f} s) of stages, {seconds:,.0f} s of "
                     "them in this invocation (the others reused from an earlier run)")
    machine = results.get("machine") or "an unrecorded machine"
    return (
        f"`hf-lineage lineage` pretrained {len(families)} "
        f"{'family' if len(families) == 1 else 'families'} ({', '.join(_name(f) for f in families)}) at scale "
        f"`{results.get('scale', '?')}` on {corpus_text}, each with the same budget: {budget_text}. It then "
        f"trained each on {len(tasks)} task {'type' if len(tasks) == 1 else 'types'} — {task_text} — with the "
        f"recipes' code. Seeds {', '.join(map(str, results.get('seeds') or [results.get('seed', '?')]))}; {time_text} on {machine}. Command: "
        f"`{results.get('command', 'hf-lineage lineage')}` (hf-lineage {results.get('version', '?')}, "
        f"{results.get('created', 'date not recorded')}). Every number below is also in `results.json`."
    )


def _main_table(results, notes):
    _, main = _cells(results)
    main_variant = results.get("main_variant") or {}
    tasks = results["tasks"]
    header = ["family", "used as"] + [
        f"{name}: {_cell_text(task.get('dataset', '?'))} ({_cell_text(task.get('metric', '?'))})"
        for name, task in tasks.items()]
    rows, reused = [], False
    for family in results["families"]:
        usual = main_variant.get(family, "")
        row = [_name(family), usual or "—"]
        for task_name in tasks:
            cell = main.get((family, task_name))
            text = _score_cell(cell, notes, f"{_name(family)} × {task_name} ({cell and cell.get('variant')})")
            if cell is not None and cell.get("variant") != usual and _score(cell) is not None:
                text += f" ({cell['variant']})"  # e.g. generation, where frozen networks cannot learn the format
            reused |= " †" in text
            row.append(text)
        rows.append(row)
    rows += _baseline_rows(results, list(tasks))
    lines = _table(header, rows)
    if reused:
        lines += ["", "† reused from an earlier run's results in this output directory."]
    return lines


def _perplexity_cell(family, stage, notes):
    perplexity = (stage.get("validation") or {}).get("perplexity")
    if family in NO_PERPLEXITY:
        return "—" + notes.mark(
            "word2vec is not a language model: it has no perplexity, and its loss is its own training objective's "
            "(the negative-sampling loss by default), on no common scale with the other families.")
    if perplexity is None:
        return "—"
    if family == "bert":
        return _number(perplexity, 2) + notes.mark(
            "BERT's perplexity is exp of the masked-LM loss: each masked token is predicted from the context on both "
            "sides, so it is not comparable with the causal language models' perplexities.")
    if family in CAUSAL_LM_UNITS:
        return _number(perplexity, 2) + notes.mark(
            "NNLM, ELMo and GPT report causal-LM perplexities, per token of each family's own tokenization: per word "
            "for NNLM and ELMo (ELMo's is the geometric mean of its forward and backward LMs'), per BPE token for "
            "GPT. Perplexities over different tokenizations are not directly comparable; NNLM against ELMo (same "
            "unit) is the closest comparison, and even there the vocabularies may differ.")
    return _number(perplexity, 2)


def _pretraining_table(results, notes):
    pretraining = results.get("pretraining") or {}
    header = ["family", "objective", "config", "parameters", "words seen", "steps", "time (s)", "final train loss",
              "validation loss", "perplexity", "status"]
    rows = []
    for family in results["families"]:
        stage = pretraining.get(family)
        if stage is None:
            rows.append([_name(family)] + ["—"] * 9 + ["not run"])
            continue
        status = stage.get("status", "?")
        if status == "failed":
            status += notes.mark(f"{_name(family)} pretraining failed: "
                                 f"{stage.get('error') or 'no error message recorded'}")
        elif status == "skipped" and stage.get("error"):
            status += notes.mark(f"{_name(family)} pretraining skipped: {stage['error']}")
        elif stage.get("reused"):
            status += " (reused)"
        seconds = stage.get("seconds")
        rows.append([
            _name(family), _cell_text(stage.get("objective") or "—"), _cell_text(stage.get("config") or "—"),
            _count(stage.get("parameters")), _count(stage.get("words_seen")), _count(stage.get("steps")),
            "—" if seconds is None else f"{seconds:,.1f}", _number(stage.get("final_train_loss")),
            _number((stage.get("validation") or {}).get("loss")), _perplexity_cell(family, stage, notes), status,
        ])
    return _table(header, rows)


def _claims_section(results):
    claims = results.get("claims")
    if not claims:
        return ["The claims were not evaluated for this report."]
    lines = ["The claims of the papers this project follows, each decided by a rule fixed before the numbers were "
             "seen; a verdict is never forced. " + NOISE_RULE]
    for i, claim in enumerate(claims, 1):
        rule = claim["rule"].removesuffix(NOISE_RULE).strip()  # the shared noise rule is printed once, above
        lines += ["", f"### {i}. {claim['claim']}", "", f"**Verdict: {claim['verdict']}.**", "",
                  f"Rule: {rule}", "", f"Evidence: {claim['evidence']}"]
        if claim.get("comparisons"):
            rows = [[c["task"], f"{_cell_text(c['lower'])} < {_cell_text(c['higher'])}",
                     f"{c['lower_score']:.3f}", f"{c['higher_score']:.3f}", f"{c['difference']:+.3f}",
                     _uncertainty(c), c["outcome"]]
                    for c in claim["comparisons"]]
            lines += [""] + _table(["task", "claimed", "lower", "higher", "difference", "95 % interval / margin",
                                    "outcome"], rows)
    return lines


def _uncertainty(comparison):
    if comparison.get("interval"):
        low, high = comparison["interval"]
        return f"[{low:+.3f}, {high:+.3f}]"
    return f"±{comparison['margin']:.3f}" if comparison.get("noise_estimate") else "no estimate"


def _variants_table(results, notes):
    by_variant, _ = _cells(results)
    tasks = _understanding_tasks(results)
    main_variant = results.get("main_variant") or {}
    header = ["family", "variant"] + [f"{t} ({_cell_text(results['tasks'][t].get('metric', '?'))})" for t in tasks]
    rows = []
    for family in results["families"]:
        for variant in VARIANTS:
            cells = [by_variant.get((family, t, variant)) for t in tasks]
            if all(cell is None for cell in cells):
                continue
            label = variant + (" (main)" if main_variant.get(family) == variant else "")
            rows.append([_name(family), label] + [
                _score_cell(cell, notes, f"{_name(family)} × {t} ({variant})") for t, cell in zip(tasks, cells)])
    if not rows:
        return ["No frozen, fine-tuned or from-scratch cells ran on an understanding task."]
    return _table(header, rows)


def _failures(results):
    lines = []
    for family in results["families"]:
        stage = (results.get("pretraining") or {}).get(family) or {}
        if stage.get("status") in ("failed", "skipped") and (stage.get("status") == "failed" or stage.get("error")):
            lines.append(f"- pretraining {_name(family)}: {stage['status']} — "
                         f"{_one_line(stage.get('error') or 'no error message recorded')}")
    for cell in results.get("finetuning") or []:
        if cell.get("status") in ("failed", "skipped") and (cell.get("status") == "failed" or cell.get("error")):
            lines.append(f"- fine-tuning {_name(cell['family'])} × {cell['task']} ({cell['variant']}): "
                         f"{cell['status']} — {_one_line(cell.get('error') or 'no error message recorded')}")
    return lines or ["None: every stage that was requested ran to the end."]


def _caveats(results):
    scale = results.get("scale", "?")
    budget = (results.get("budget") or {}).get("description") or "not recorded"
    size = "tiny models and minutes of training" if scale == "tiny" else "models and budgets far below the papers'"
    return [
        f"- Scale `{scale}`: {size}; budget: {budget}. Differences within the noise band are called inconclusive, "
        "not read as a ranking.",
        f"- One seed ({results.get('seed', '?')}). The noise band covers the sampling of the validation sets only, "
        "not the spread between training runs with other seeds, which at this scale can be as large; a verdict "
        "here is a verdict about this run.",
        "- The band treats the units of an accuracy as independent. Words of one sentence are not, so for sequence "
        "labeling the band is, if anything, too narrow.",
        "- The main table uses each family as its paper does (static vectors and ELMo as frozen features under a "
        "task encoder, GPT and BERT fine-tuned), so it compares the approaches, not only the networks; the frozen / "
        "fine-tuned / scratch table separates the two.",
        "- Pretraining losses and perplexities are on different scales across families (objectives and "
        "tokenizations differ; see the notes under the pretraining table); the same budget is the same number of "
        "corpus words, not the same compute.",
        "- The papers made their claims at far larger scale (BERT base: 110 M parameters, 3.3 B words of "
        "pretraining). A claim that this run does not confirm is not thereby refuted at that scale, and one it "
        "confirms is not thereby proven.",
    ]


def write_report(results: dict, output_dir) -> str:
    """Write ``report.md`` into ``output_dir`` and return its path.

    It prints what is already in ``results``: the claims (``results["claims"]``, from ``evaluate_claims``) and the
    plots (``results["plots"]``, from ``write_plots``) are embedded when present; this function computes neither::

        >>> results["claims"] = evaluate_claims(results)            # doctest: +SKIP
        >>> results["plots"] = write_plots(results, "report")       # doctest: +SKIP
        >>> write_report(results, "report")                         # doctest: +SKIP
        'report/report.md'
    """
    _check_results(results, ("families", "tasks", "finetuning", "pretraining"))
    notes = _Footnotes()
    lines = ["# The lineage of NLP pretraining, run end to end", "", _summary(results), "",
             "## Downstream scores", "",
             "Each family on each task type, used as its paper uses it (“used as”: frozen = the pretrained network "
             "frozen, only the task head or task encoder trained; finetuned = every parameter trained from the "
             "pretrained checkpoint), each trained until a dev split carved from its training data stopped "
             "improving, the best epoch kept. Each score has its 95 % bootstrap interval over the validation units "
             "in brackets and, with several seeds, ± the seeds' standard deviation (the score is their mean). The "
             "baselines are computed on the same training subset and validation set. — means not run.", ""]
    start = len(notes.texts)
    lines += _main_table(results, notes)
    lines += _footnote_block(notes, start)
    lines += _generation_table(results)
    lines += _time_split(results)

    lines += ["", "## Pretraining", "",
              "Every family saw the same corpus with the same budget. Losses are each family's own objective.", ""]
    start = len(notes.texts)
    lines += _pretraining_table(results, notes)
    lines += _footnote_block(notes, start)

    lines += ["", "## The claims", ""] + _claims_section(results)

    lines += ["", "## Frozen vs fine-tuned vs from scratch", "",
              "The understanding tasks for every variant that ran: frozen (pretrained network frozen, task head and "
              "task encoder trained), finetuned (every parameter trained from the pretrained checkpoint), scratch "
              "(same architecture, random initialisation, every parameter trained). (main) marks the main table's "
              "variant.", ""]
    start = len(notes.texts)
    lines += _variants_table(results, notes)
    lines += _footnote_block(notes, start)

    lines += ["", "## Learning curves", ""] + _curves_section(results)

    plots = results.get("plots") or []
    lines += ["", "## Plots", ""]
    if plots:
        for name in plots:
            caption = PLOT_CAPTIONS.get(name, name)
            lines += [f"![{caption}]({name})", "", f"*{caption}*", ""]
    else:
        lines += ["No plots were drawn (no data, or plots not requested).", ""]

    lines += ["## Failed stages", ""] + _failures(results)
    if results.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {_one_line(note)}" for note in results["notes"]]
    lines += ["", "## What these numbers do and do not show", ""] + _caveats(results)

    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, "report.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines).rstrip() + "\n")
    return path
