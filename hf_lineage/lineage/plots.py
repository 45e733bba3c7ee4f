"""The lineage report's PNG plots (matplotlib's Agg backend, no display): pretraining curves, downstream scores,
frozen vs fine-tuned vs scratch, and the learning curves."""

from __future__ import annotations

import math
import os

from .claims import (
    _cells,
    _check_results,
    _curves,
    _is_accuracy,
    _name,
    _score,
    _understanding_tasks,
)
from .settings import LINEAGE_FAMILIES, VARIANTS

VARIANT_COLORS = {"frozen": "tab:gray", "finetuned": "tab:blue", "scratch": "tab:orange"}


def _color(family):
    return LINEAGE_FAMILIES[family].color if family in LINEAGE_FAMILIES else None


PLOT_CAPTIONS = {
    "learning_curves.png": "Learning curves: score against labelled training examples, pretrained (solid) vs from "
                           "scratch (dashed), with 95 % bootstrap bands; dotted lines are the baselines.",
    "pretraining_curves.png": "Pretraining: training loss against words seen, one panel per family (the objectives "
                              "differ, so the losses are not on one scale); dots: validation loss.",
    "downstream_scores.png": "Downstream scores per task, each family used as its paper uses it (the main table), "
                             "with 95 % intervals over seeds and validation units; black lines are the baselines.",
    "frozen_vs_finetuned.png": "Understanding tasks: the pretrained network frozen (only the task head / task "
                               "encoder trained), fine-tuned, and the same architecture trained from scratch, with "
                               "95 % intervals.",
}


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
            ax.plot([p[x_key] for p in curve], [p["train_loss"] for p in curve], color=_color(family),
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
    # as many columns as fit the figure's width (a label takes about 2.4 inches), the rest on more rows
    columns = max(1, min(len(labels), int(fig.get_figwidth() / 2.4)))
    fig.legend([handles[label] for label in labels], labels, loc="lower center", ncol=columns, fontsize=8,
               frameon=False)
    return math.ceil(len(labels) / max(columns, 1))  # legend rows



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
                    ax.bar(x, score, width, color=_color(family), label=_name(family),
                           **_error_bar(cell, score))
                _bar_label(ax, x, score, (cell or {}).get("status"))
        for j, task_name in enumerate(task_names):  # each baseline as a line across its task's bars
            for k, baseline in enumerate((results.get("baselines") or {}).get(task_name) or []):
                if baseline.get("score") is not None:
                    ax.hlines(baseline["score"], j - 0.45, j + 0.45, colors="black",
                              linestyles=BASELINE_STYLES[k % len(BASELINE_STYLES)], linewidth=1,
                              label=f"baseline: {baseline['name']}")
        ax.set_xticks(range(len(task_names)))
        ax.set_xlim(-0.5, len(task_names) - 0.5)
        ax.set_xticklabels(task_names, fontsize=8)
        _score_axis(ax, metric, f"{metric} (main variant)")
    baseline_labels = [f"baseline: {b['name']}" for rows in (results.get("baselines") or {}).values() for b in rows]
    _finish_bar_figure(plt, fig, axes, [_name(f) for f in families] + list(dict.fromkeys(baseline_labels)),
                       "Downstream scores per task (error bars: 95 % interval over seeds and validation units)", path)
    return True


BASELINE_STYLES = ("dotted", "dashed", "dashdot")


def _error_bar(cell, score):
    """``yerr`` for a bar: its 95 % interval (over seeds and validation units), as distances from the score."""
    interval = (cell or {}).get("interval")
    if not interval or any(v is None for v in interval):
        return {}
    low, high = interval
    return {"yerr": [[max(score - low, 0.0)], [max(high - score, 0.0)]], "capsize": 2,
            "error_kw": {"elinewidth": 0.8}}


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
    rows = _legend_below(fig, axes[0], legend)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0.035 + 0.035 * rows, 1, 1))
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
                    ax.bar(x, score, width, color=VARIANT_COLORS[variant], label=variant, **_error_bar(cell, score))
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
                ax.plot(sizes, scores, style, marker="o", color=_color(family),
                        label=f"{_name(family)} {variant}")
                ax.fill_between(sizes, low, high, color=_color(family), alpha=0.1)
        for b in (results.get("baselines") or {}).get(task) or []:
            ax.axhline(b["score"], color="black", linewidth=0.8, linestyle=":")
            ax.annotate(b["name"], (ax.get_xlim()[0], b["score"]), fontsize=7, va="bottom")
        ax.set_xscale("log")
        ax.set_xlabel("labelled training examples")
        ax.set_ylabel(results["tasks"][task].get("metric", "score"))
        ax.set_title(task)
        ax.legend(fontsize=7)
    fig.suptitle("Pretrained (solid) vs from scratch (dashed)\ndotted: baselines (main-table training size)",
                 fontsize=10)
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
