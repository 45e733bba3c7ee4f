"""``report.md`` of ``hf-lineage lineage``: the tables, the claims' verdicts and the plots, from the results dict.

The claims are judged in ``claims.py`` and the plots drawn in ``plots.py``; this module writes ``report.md``.
The orchestrator (``hf_lineage.lineage.experiment``) runs the experiment, collects every number in one ``results``
dict (pretraining per family, one cell per family × task × variant, see ``experiment.py`` for the schema) and then
calls the three functions here, in this order, so each step's output is kept in ``results.json`` too::

    >>> from hf_lineage.lineage.report import evaluate_claims, write_plots, write_report
    >>> results["claims"] = evaluate_claims(results)              # doctest: +SKIP
    >>> results["plots"] = write_plots(results, "report")         # doctest: +SKIP
    >>> write_report(results, "report")                           # doctest: +SKIP
    'report/report.md'

The claims are decided by rules written down before any number is looked at (``claims.evaluate_claims`` returns
the rule with each verdict): a difference counts only when its paired bootstrap interval excludes zero and every
seed agrees. Within that, a comparison is "within noise", and a claim whose comparisons are mostly within noise is
"inconclusive": nothing is forced.

Everything here is deterministic, reads nothing but ``results`` and needs no network; plots use matplotlib's Agg
backend (no display).
"""

from __future__ import annotations

import math
import os

from ..registry import FAMILIES
from .claims import (  # noqa: F401 - evaluate_claims and noise_margin are part of this module's public names
    NOISE_RULE,
    _cells,
    _check_results,
    _curves,
    _name,
    _score,
    _understanding_tasks,
    evaluate_claims,
    noise_margin,
)
from .plots import PLOT_CAPTIONS, write_plots  # noqa: F401
from .probing import report_lines as probing_lines
from .zero_shot_stage import NGRAM, ORDER_TASK, order_pairs_cell, system_label
from .settings import LINEAGE_FAMILIES, VARIANTS, family_label, library_family


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


def _reads_pair_as_one_sequence(family: str) -> bool:
    """Its paper reads a sentence pair as one sequence (``Family.pair_as_one_sequence``: GPT, BERT, BERT's
    ablations), which a siamese run does not."""
    spec = FAMILIES.get(library_family(family))
    return spec is not None and spec.pair_as_one_sequence


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
        return (_with_interval(cell) + (" †" if cell.get("reused") else "")
                + (" (capped)" + notes.mark(CAPPED_NOTE) if cell.get("capped") else ""))
    if status == "ok" and cell.get("flags") and cell.get("score") is not None:
        return (f"({_with_interval(cell)}, did not train: {', '.join(cell['flags'])})"
                + notes.mark(f"{where}: {FLAGGED_NOTE}"))
    if status == "failed":
        return "failed" + notes.mark(f"{where} failed: {cell.get('error') or 'no error message recorded'}")
    if status == "skipped":
        return "—" + (notes.mark(f"{where} skipped: {cell['error']}") if cell.get("error") else "")
    return "—"


CAPPED_NOTE = ("capped: in some seed the best dev evaluation was the last one, so the epoch cap ended the training "
               "(it might have gone on improving); the score stands, with that caveat.")
FLAGGED_NOTE = ("did not train, left out of every verdict: “one class” = it predicts one label for at least 95 % of "
                "the validation units; “never moved” = its dev score never rose half a point above its first "
                "evaluation; “at majority” = it trained, but its score is not above its task's majority baseline "
                "beyond noise (the paired bootstrap interval of the difference reaches 0).")


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


def _labeling_words_section(results):
    """Where the labeling accuracy is lost: words the labelled set never showed, words outside a vocabulary."""
    words = results.get("labeling_words")
    if not words or not words.get("systems"):
        return []
    shares = words.get("outside_vocabulary_share") or {}
    families = [f for f in shares if any(r.get("family") == f for r in words["systems"])]
    header = ["system", "all words", f"seen in the labelled set ({100 * (1 - words['unseen_share']):.1f} %)",
              f"unseen ({100 * words['unseen_share']:.1f} %)"] + [
        f"outside {_name(f)}'s vocabulary ({100 * shares[f]:.1f} %)" for f in families]
    rows = []
    for row in words["systems"]:
        rows.append([row["system"]] + [_number(row.get(k)) for k in ("all", "seen", "unseen")] + [
            _number(row.get("outside_vocabulary")) if row.get("family") == f else "" for f in families])
    best = max((r for r in words["systems"] if r.get("family")), key=lambda r: r["all"] or 0, default=None)
    lines = ["", "## Labeling: seen and unseen words", "",
             f"Token accuracy on the {words['validation_words']:,} validation words, split by whether the labelled "
             "training set contains the word form, and for the word-level families by whether their tokenizer "
             "knows it (an unknown word reaches them as `<unk>`, whatever it is). Mean over seeds.", ""]
    lines += _table(header, rows)
    if best is not None and best["seen"] is not None and best["unseen"] is not None and words["unseen_share"]:
        share = words["unseen_share"]
        needed = (0.90 - (1 - share) * best["seen"]) / share
        lines += ["", f"The best system here, {best['system']}, tags seen words at {best['seen']:.3f} and unseen ones "
                  f"at {best['unseen']:.3f}. With {100 * share:.1f} % of the words unseen, it would reach at most "
                  f"{1 - share + share * best['unseen']:.3f} overall with every seen word right; keeping its seen-word "
                  f"accuracy, 0.90 overall would take " + (
                      f"{needed:.3f} on the unseen words." if needed <= 1 else "more than every unseen word right.")]
    return lines


def _time_split(results):
    split = results.get("time_split") or {}
    total = sum(split.values())
    if not total:
        return []
    lines = ["", "Where this invocation's time went (reused stages count nothing): " + ", ".join(
        f"{name} {seconds:,.0f} s ({100 * seconds / total:.0f} %)" for name, seconds in split.items()) + "."]
    if results.get("frozen_layers_memo"):
        lines += ["", memo_sentence(results["frozen_layers_memo"])]
    return lines


def memo_sentence(memo: dict) -> str:
    """The frozen layers' memo in one sentence (the run's log and the report's timing paragraph)."""
    saved = memo.get("saved_seconds")
    return (f"The frozen layers' memo (`--no-frozen-feature-memo` turns it off), over {memo['runs']} frozen run(s): "
            f"{memo['computed']:,} sentences run through a frozen network ({memo['compute_seconds']:,.0f} s), "
            f"{memo['loaded']:,} read from the cache folder ({memo['load_seconds']:,.0f} s), {memo['reused']:,} read "
            f"back from memory; {memo['bytes_written'] / 2**20:,.1f} MiB written to "
            "`$HF_LINEAGE_CACHE/frozen-layers/`; "
            + (f"about {saved:,.0f} s of forward passes spared (each sentence read back priced at its network's "
               "measured time per computed sentence)." if saved is not None
               else "the time spared is not known (no run computed a sentence to price it)."))


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
    if results.get("pretrained_anew", True):
        pretrained_text = (
            f"`hf-lineage lineage` pretrained {len(families)} "
            f"{'family' if len(families) == 1 else 'families'} ({', '.join(_name(f) for f in families)}) at scale "
            f"`{results.get('scale', '?')}` on {corpus_text}, each with the same budget: {budget_text}.")
    else:
        pretrained_text = (
            f"`hf-lineage lineage` fine-tuned {len(families)} pretrained "
            f"{'family' if len(families) == 1 else 'families'} ({', '.join(_name(f) for f in families)}) — "
            f"{budget_text} — on {corpus_text}. Every seed fine-tunes the same pretrained weights, so the seeds "
            "measure fine-tuning noise, not pretraining noise (`--pretrain --seeds N` pretrains each seed anew).")
    return (
        f"{pretrained_text} It then "
        f"trained each on {len(tasks)} task {'type' if len(tasks) == 1 else 'types'} — {task_text} — with the "
        f"recipes' code. Seeds {', '.join(map(str, results.get('seeds') or [results.get('seed', '?')]))}; "
        f"{time_text} on {machine}. Command: "
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
            if (tasks[task_name].get("kind") == "sentence_pairs" and _reads_pair_as_one_sequence(family)
                    and results.get("pair_encoding") == "siamese"):
                text += notes.mark(
                    "GPT and BERT read a pair siamese here, as the other families do: each sentence encoded on its "
                    "own, mean-pooled, classified from [u, v, |u − v|, u * v] (Sentence-BERT, Reimers & Gurevych "
                    "2019), not as their papers' one sequence (`--pair-encoding cross`), on which the tiny "
                    "Transformers stay near chance.")
            reused |= " †" in text
            row.append(text)
        rows.append(row)
    rows += _baseline_rows(results, list(tasks))
    zero_shot = results.get("zero_shot") or {}
    if zero_shot.get("order_pairs"):  # the zero-shot column beside the supervised ones, and the n-gram's row
        header.append(f"{ORDER_TASK} zero-shot: the pretrained LM's own probabilities, no head (accuracy)")
        families = list(results["families"])
        for row, family in zip(rows, families):
            cell = order_pairs_cell(zero_shot, family)
            if cell is not None:
                row.append(_with_interval(cell))
            elif family in (zero_shot.get("no_sentence_probability") or []):
                why = (zero_shot.get("why_no_sentence_probability") or {}).get(
                    family, "static word vectors define no probability of a sentence")
                row.append("—" + notes.mark(f"{why}: no zero-shot score."))
            else:
                row.append("—")
        for row in rows[len(families):]:
            row.append("—")
        ngram = order_pairs_cell(zero_shot, NGRAM)
        if ngram is not None:
            rows.append([f"*zero-shot only:* {system_label(NGRAM)}", "—"] + ["—"] * len(tasks)
                        + [_with_interval(ngram)])
    lines = _table(header, rows)
    if reused:
        lines += ["", "† reused from an earlier run's results in this output directory."]
    return lines


def _perplexity_cell(family, stage, notes):
    perplexity = (stage.get("validation") or {}).get("perplexity")
    kind = LINEAGE_FAMILIES[family].perplexity if family in LINEAGE_FAMILIES else None
    if kind == "none":  # not a language model: no perplexity, whatever a results dict says
        return "—" + notes.mark(
            "word2vec is not a language model: it has no perplexity, and its loss is its own training objective's "
            "(the negative-sampling loss by default), on no common scale with the other families.")
    if perplexity is None:
        return "—"
    if kind == "masked":
        return _number(perplexity, 2) + notes.mark(
            "BERT's perplexity is exp of the masked-LM loss: each masked token is predicted from the context on both "
            "sides, so it is not comparable with the causal language models' perplexities.")
    if kind == "causal":
        return _number(perplexity, 2) + notes.mark(
            "NNLM, ELMo and GPT report causal-LM perplexities, per token of each family's own tokenization: per word "
            "for NNLM and ELMo (ELMo's is the geometric mean of its forward and backward LMs'), per BPE token for "
            "GPT. Perplexities over different tokenizations are not directly comparable; NNLM against ELMo (same "
            "unit) is the closest comparison, and even there the vocabularies may differ.")
    return _number(perplexity, 2)


def _family_budget(stage: dict) -> str | None:
    """A pretrained folder's own budget as its record states it (a shipped checkpoint's ``budget``), in short."""
    budget = stage.get("budget") or {}
    if budget.get("kind") == "seconds" and budget.get("seconds"):
        return f"{budget['seconds']:,.0f} s"
    if budget.get("words"):
        passes = f", {budget['epochs']:g} passes" if budget.get("epochs") else ""
        return f"{budget['words']:,} words{passes}"
    return None


def _same_budget_sentence(results) -> str:
    """Whether every family had the same pretraining budget, in words; where they differ, each family's."""
    if (results.get("budget") or {}).get("kind") == "mixed checkpoints":
        return ("Each family's checkpoint is named by its source; only those from one build saw the same corpus with "
                "the same budget.")
    budgets = {family: _family_budget(stage) for family, stage in (results.get("pretraining") or {}).items()
               if stage and "shipped" in stage}
    if len(set(budgets.values())) > 1:
        groups = {}
        for family, budget in budgets.items():
            groups.setdefault(budget or "not recorded", []).append(_name(family))
        return ("Every family saw the same corpus, but not the same budget: "
                + "; ".join(f"{', '.join(names)}: {budget}" for budget, names in groups.items()) + ".")
    return "Every family saw the same corpus with the same budget."


def _pretraining_table(results, notes):
    """One row per family: what it pretrained on, its size (config.json's layers × width; parameters, buffers apart),
    the words it read ("not recorded" for a fine-tuned folder without a pretraining record), its losses and where
    the checkpoint came from."""
    pretraining = results.get("pretraining") or {}
    header = ["family", "objective", "config", "size", "parameters", "buffers", "budget", "words seen", "steps",
              "time (s)", "final train loss", "validation loss", "perplexity", "status", "source"]
    rows = []
    for family in results["families"]:
        stage = pretraining.get(family)
        if stage is None:
            rows.append([_name(family)] + ["—"] * 12 + ["not run", "—"])
            continue
        status = stage.get("status", "?")
        if status == "failed":
            status += notes.mark(f"{_name(family)} pretraining failed: "
                                 f"{stage.get('error') or 'no error message recorded'}")
        elif status == "skipped" and stage.get("error"):
            status += notes.mark(f"{_name(family)} pretraining skipped: {stage['error']}")
        elif "shipped" in stage:  # a pretrained folder this run fine-tuned: its own training time
            status += " (shipped checkpoint)" if stage["shipped"] else " (--checkpoints folder)"
        elif stage.get("reused"):
            status += " (reused)"
        seconds = stage.get("train_seconds") if "shipped" in stage else stage.get("seconds")
        unrecorded = "not recorded" if "shipped" in stage else "—"  # a folder's record may lack what it read
        words = stage.get("words_seen")
        words_cell = unrecorded if words is None else _count(words)
        if stage.get("words_seen_from"):  # a converted release: the figure its paper or card gives, named
            words_cell += notes.mark(f"{_name(family)}: words seen as stated by {stage['words_seen_from']}")
        rows.append([
            _name(family), _cell_text(stage.get("objective") or "—"), _cell_text(stage.get("config") or unrecorded),
            _cell_text(stage.get("size") or "—"), _count(stage.get("parameters")), _count(stage.get("buffers")),
            _cell_text(_family_budget(stage) or "—"), words_cell, _count(stage.get("steps")),
            "—" if seconds is None else f"{seconds:,.1f}", _number(stage.get("final_train_loss")),
            _number((stage.get("validation") or {}).get("loss")), _perplexity_cell(family, stage, notes), status,
            _cell_text(stage.get("source") or ("pretrained by this run" if "shipped" not in stage else "—")),
        ])
    lines = _table(header, rows)
    if any(stage and stage.get("buffers") for stage in pretraining.values()):
        lines += ["", "Parameters are the weights training can change (`nn.Parameter`s, as `num_parameters()` "
                  "counts them); buffers are constants saved with them (ELMo's characters of every vocabulary word, "
                  "word2vec's word counts, PPMI-SVD's singular values), counted apart."]
    return lines


def _claims_section(results):
    claims = results.get("claims")
    if not claims:
        return ["The claims were not evaluated for this report."]
    lines = ["The claims of the papers this project follows, each decided by a rule fixed before the numbers were "
             "seen; a verdict is never forced. " + NOISE_RULE]
    if (results.get("budget") or {}).get("kind") == "mixed checkpoints":
        lines += ["", "**Unequal budgets.** The families' checkpoints come from different sources (see the "
                  "pretraining table: sizes, words read and sources differ), so every verdict between families "
                  "compares models of unequal size and pretraining budget: it says which checkpoint transfers better "
                  "here, not which method is better at equal cost."]
    frozen_only = (results.get("frozen_only") or {}).get("families")
    if frozen_only:
        lines += ["", f"**Frozen only.** {', '.join(_name(f) for f in frozen_only)}: over "
                  f"{results['frozen_only']['above_parameters'] // 1_000_000} M parameters on a machine without a "
                  "GPU, so only the frozen regime ran (no fine-tuned, scratch or learning-curve cells); claims that "
                  "need those cells are not measured for them."]
    if results.get("multiplicity"):
        lines += ["", f"**Multiplicity.** {results['multiplicity']['note']}"]
    if results.get("more_seeds"):
        more = results["more_seeds"]
        lines += ["", f"**Seeds.** Seed standard deviation above {more['std_above']} on {', '.join(more['tasks'])}: "
                      f"those tasks ran seeds {', '.join(map(str, more['seeds']))} too."]
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


def _learned_enough_section(results):
    rows = results.get("learned_enough") or []
    if not rows:
        return []
    lines = ["", "## Did each contextual model learn enough to be compared?", "",
             "A family whose pretrained representation knows less than word identity, or whose frozen features or "
             "fine-tuned network lose to the same network trained from scratch, did not learn enough in its budget for its verdicts to say "
             "much about its kind of model; its pretraining loss over the last third of its curve (the pretraining "
             "curves plot) shows whether the budget stopped it while it was still learning.", ""]
    table = [[_name(r["family"]),
              "—" if r["best_probe"] is None else f"{r['best_probe']:.3f} ({r['best_probe_layer']})",
              _number(r["per_word_majority"]), _number(r["frozen_labeling"]), _number(r.get("finetuned_labeling")),
              _number(r["scratch_labeling"]),
              "—" if not r["pretraining_loss_last_third"] else
              "{:.2f} → {:.2f}".format(*r["pretraining_loss_last_third"]),
              {True: "yes", False: "no", None: "not measured"}[r["enough"]]] for r in rows]
    lines += _table(["family", "best UPOS probe (layer)", "per-word majority", "labeling frozen",
                     "labeling fine-tuned", "labeling scratch",
                     "pretraining loss, last third", "learnt enough"], table)
    lines += [""] + [f"- {_name(r['family'])}: {r['why']}." for r in rows if r["why"]]
    return lines


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
    zero_shot = results.get("zero_shot") or {}
    if zero_shot.get("status") == "failed":
        error = _one_line(zero_shot.get("error") or "no error message recorded")
        lines.append(f"- zero-shot scoring: failed — {error}")
    return lines or ["None: every stage that was requested ran to the end."]


def _caveats(results):
    scale = results.get("scale", "?")
    budget = (results.get("budget") or {}).get("description") or "not recorded"
    size = ("models of about 64 dimensions" if scale == "tiny" else "models and budgets far below the papers'")
    seeds = results.get("seeds") or [results.get("seed", "?")]
    seed_text = (f"{len(seeds)} seeds ({', '.join(map(str, seeds))}): a score is their mean, ± their standard "
                 "deviation, and a claimed difference must hold in every seed and exceed the seeds' spread"
                 if len(seeds) > 1 else
                 f"one seed ({seeds[0]}): the intervals cover the sampling of the validation set, not the spread "
                 "between training runs with other seeds, so no claim can be confirmed, only suggested (`--seeds 3` "
                 "decides)")
    zero_shot = [] if not (results.get("zero_shot") or {}).get("status") == "ok" else [
        "- The zero-shot scores train nothing: their intervals cover the sampling of the pairs alone, so the grammar "
        "claim needs no seeds to be confirmed; like every number here, they say nothing of pretraining noise (one "
        "pretrained model per family)."]
    return [
        f"- Scale `{scale}`: {size}; budget: {budget}.",
        f"- {seed_text}. Differences inside the intervals are called within noise, not read as a ranking.",
        "- Intervals are 95 % percentile bootstraps (1,000 resamples) over the validation units — sentences for "
        "labeling, since the words of a sentence are not independent; meaning representations for generation — and, "
        "with several seeds, over the seeds too.",
        "- Every cell was trained until its dev split (carved from the training data) stopped improving and the best "
        "epoch was kept, with the learning rates of the notes below; the fine-tuned Transformers picked theirs from a "
        "3-point sweep on that dev split, never on the validation data. Cells that did not train (one class, or a "
        "dev score that never moved) are shown in brackets and left out of every verdict; cells stopped by the epoch "
        "cap are marked (capped).",
        "- The main table uses each family as its paper does (static vectors and ELMo as frozen features under a "
        "task encoder, GPT and BERT fine-tuned), so it compares approaches and heads, not only representations; "
        "no verdict compares families across regimes: the family-against-family claims are judged within the frozen "
        "regime (the same scalar-mix + BiLSTM head over every family's features) and within the fine-tuned regime "
        "(every family fine-tuned; GPT and BERT with their papers' linear heads, the others with their BiLSTM task "
        "encoder), each on its own.",
        "- Pretraining losses and perplexities are on different scales across families (objectives and "
        "tokenizations differ; see the notes under the pretraining table).",
        "- The papers made their claims at far larger scale (BERT base: 110 M parameters, 3.3 B words of "
        "pretraining). A claim that this run does not confirm is not thereby refuted at that scale, and one it "
        "confirms is not thereby proven.",
    ] + zero_shot


# ---------------------------------------------------------------------------------------------------------------
# The zero-shot stage (zero_shot_stage.py): the order_pairs sentence under the main table, the grammar section
# ---------------------------------------------------------------------------------------------------------------


def _zero_shot_text(entry) -> str:
    text = f"{entry['accuracy' if 'accuracy' in entry else 'score']:.3f}"
    low, high = (entry.get("low"), entry.get("high")) if "accuracy" in entry else tuple(entry.get("interval") or
                                                                                        (None, None))
    if low is not None:
        text += f" [{low:.3f}, {high:.3f}]"
    return text


def _order_pairs_sentence(results: dict) -> list[str]:
    """Under the main table: what the zero-shot column is and what its difference from the supervised cells means."""
    zero_shot = results.get("zero_shot")
    if not zero_shot or not zero_shot.get("order_pairs"):
        if zero_shot and zero_shot.get("status") == "failed":
            return ["", f"The zero-shot stage failed: {zero_shot.get('error')}"]
        return []
    best = max(((system, order_pairs_cell(zero_shot, system)) for system in zero_shot["systems"]),
               key=lambda item: item[1]["score"] if item[1] else -1)
    # Every regime's cell at the main table's size that trained: the best supervised route, whichever it is.
    cells = [c for c in results.get("finetuning") or [] if c.get("task") == ORDER_TASK
             and c.get("train_size", results.get("main_train_size")) == results.get("main_train_size")
             and c.get("status") == "ok" and not c.get("flags") and c.get("score") is not None]
    supervised = max(cells, key=lambda c: c["score"], default=None)
    text = ("order_pairs zero-shot: each pretrained language model asked directly which sentence of a validation pair "
            "is more probable (the same validation pairs as the supervised columns; the original sentence should "
            "be), with no task head and no labelled example; the Kneser-Ney row is an n-gram trained on the "
            f"pretraining text: {zero_shot['ngram']['trained_on'].removeprefix('trained on ')}. "
            "Scorings: the sum of log-probabilities (NNLM, GPT, the n-gram), ELMo's two directions summed, BERT's "
            "pseudo-log-likelihood (PLL-word-l2r); a tie (the same score) counts half. 95 % bootstrap intervals over "
            "the pairs. ")
    if best[1] is not None:
        text += f"Best zero-shot: {system_label(best[0])} {_zero_shot_text(best[1])}"
        if supervised is not None:
            low, high = supervised.get("interval") or (None, None)
            text += (f"; best supervised cell: {family_label(supervised['family'])} ({supervised['variant']}) "
                     f"{supervised['score']:.3f}" + (f" [{low:.3f}, {high:.3f}]" if low is not None else ""))
        versus = zero_shot["order_pairs"].get("versus_supervised")
        if versus:
            low, high = versus["interval"]
            text += (f"; zero-shot − supervised {versus['difference']:+.3f}, 95 % interval [{low:+.3f}, {high:+.3f}] "
                     f"on the same pairs ({versus['outcome']})")
        text += (". The difference is what the route costs, not what the models know: zero-shot reads the "
                 "pretrained LM's own probabilities, which pretraining trained for exactly this comparison, while a "
                 "supervised cell must learn, from "
                 f"{results.get('main_train_size') or 'a few'} labelled pairs, a new head over the model's features "
                 "(frozen) or a new use of the whole network (fine-tuned); a supervised cell below the zero-shot "
                 "score means that head did not recover what the LM already knew.")
    return ["", text]


def _grammar_lines(results: dict) -> list[str]:
    """The section "What each language model knows of grammar (zero-shot)" (empty when the grammar part did not
    run)."""
    zero_shot = results.get("zero_shot")
    if not zero_shot:
        return []
    title = ["", "## What each language model knows of grammar (zero-shot)", ""]
    if zero_shot.get("status") != "ok":
        return title + [f"The zero-shot stage failed: {zero_shot.get('error')}"]
    blimp = zero_shot.get("blimp")
    if not blimp:
        return []
    published = blimp["published"]
    lines = title + [
        f"BLiMP (Warstadt et al. 2020; {published['license']}): {blimp['pairs']:,} minimal pairs, "
        f"{blimp['pairs_per_paradigm']} of each of its {blimp['paradigms']} paradigms (the sample the package "
        "embeds), a grammatical and an ungrammatical sentence that differ in one place. A model gets a pair right "
        "when it scores the grammatical sentence higher, with no task head and no training: each pretrained "
        "language model of this run and an interpolated Kneser-Ney 5-gram trained on the pretraining text "
        f"({zero_shot['ngram']['trained_on'].removeprefix('trained on ')}); the scorers of `hf-lineage evaluate "
        "minimal-pairs` (docs/minimal_pairs.md; each model reads the sentences as its pretraining text was written). "
        "Accuracy is the mean over paradigms (BLiMP's), a tie counts half (ties: the two sentences the same input "
        f"to the model, e.g. both words out of its vocabulary), with its 95 % bootstrap interval over pairs "
        f"({blimp['resamples']:,} resamples, seed {blimp['seed']}). BLiMP's published models, each on all 1,000 "
        "pairs of the same paradigms and trained on far more text, are shown beside.", ""]
    rows = []
    primary = set((zero_shot.get("primary") or {}).values())
    for system in zero_shot["systems"]:
        for name, entry in blimp["systems"].items():
            if entry["system"] != system:
                continue
            overall = entry["overall"]
            label = system_label(system) + ("" if entry["variant"] == "sum" else f" ({entry['variant']})")
            if name in primary and entry["variant"] != "sum":
                label += " ‡"
            rows.append([label, _zero_shot_text(overall), f"{overall['ties']:,}",
                         " ".join(f"{field} {value['accuracy']:.2f}" for field, value in entry["fields"].items())])
    rows += [[f"*BLiMP published:* {row}", "—" if value is None else f"{value:.3f}", "—", "—"]
             for row, value in published["overall"].items()]
    lines += _table(["model", "accuracy (mean over paradigms) [95 %]", "ties", "by field"], rows)
    notes = []
    if any(entry["variant"] != "sum" for entry in blimp["systems"].values()):
        notes.append("‡ the scoring the claim uses for that model (chosen by the method, not by its score: "
                     "ELMo's whole biLM; BERT's PLL-word-l2r, which does not score a word from its own pieces).")
    if zero_shot.get("no_sentence_probability"):
        why = zero_shot.get("why_no_sentence_probability")  # absent from runs before 2026-12-06: vectors only
        unscored = ("; ".join(f"{family_label(label)} ({why[label]})" for label in zero_shot["no_sentence_probability"])
                    if why else ", ".join(map(family_label, zero_shot["no_sentence_probability"]))
                    + " (static word vectors)")
        notes.append(f"No sentence probability, not scored: {unscored}.")
    if zero_shot.get("skipped"):
        notes.append(f"Not scored: {', '.join(map(family_label, zero_shot['skipped']))} (over 50 M parameters on a "
                     "machine without a GPU; `hf-lineage evaluate minimal-pairs` scores it).")
    jobs = "jobs" in zero_shot  # its jobs ran in the fine-tuning workers (runs since 2026-12-06)
    cached = (f", {zero_shot['jobs_from_cache']} of its {zero_shot['jobs']} jobs read from "
              "`$HF_LINEAGE_CACHE/zero-shot/`" if zero_shot.get("jobs_from_cache") else "")
    notes.append(f"This stage took {zero_shot.get('seconds') or 0:.0f} s" + (" of the workers' time" if jobs else "")
                 + cached
                 + (" (reused from an earlier run)" if zero_shot.get("reused") else "")
                 + f" on {zero_shot.get('device', 'cpu')}"
                 + (", the order_pairs zero-shot column included." if zero_shot.get("order_pairs") else "."))
    lines += [""] + notes
    claim = next((c for c in results.get("claims") or [] if c["id"] == "grammar_order"), None)
    if claim is not None:
        lines += ["", f"{claim['claim']} **Verdict: {claim['verdict']}** ({claim['evidence']} The rule is under "
                      "\"The claims\".)"]
    return lines


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
             "improving, the best epoch kept. Each score has its 95 % bootstrap interval in brackets (resampling the "
             "validation units and, with several seeds, the seeds: it holds both sources of noise) and, with several "
             "seeds, ± the seeds' standard deviation (the score is their mean). The "
             "baselines are computed on the same training subset and validation set. — means not run.", ""]
    start = len(notes.texts)
    lines += _main_table(results, notes)
    lines += _footnote_block(notes, start)
    lines += _order_pairs_sentence(results)
    lines += _generation_table(results)
    lines += _time_split(results)
    lines += _labeling_words_section(results)

    lines += ["", "## Pretraining", "",
              _same_budget_sentence(results) + " Losses are each family's own objective.", ""]
    start = len(notes.texts)
    lines += _pretraining_table(results, notes)
    lines += _footnote_block(notes, start)

    lines += ["", "## The claims", ""] + _claims_section(results)

    lines += ["", "## Frozen vs fine-tuned vs from scratch", "",
              "The understanding tasks for every variant that ran: frozen (pretrained network frozen; every family "
              "gets the same head over it: a learned scalar mix of its layers, a BiLSTM task encoder, a classifier), "
              "finetuned (every parameter trained from the pretrained checkpoint), scratch "
              "(same architecture, random initialisation, every parameter trained). (main) marks the main table's "
              "variant.", ""]
    start = len(notes.texts)
    lines += _variants_table(results, notes)
    lines += _footnote_block(notes, start)

    lines += _learned_enough_section(results)
    lines += ["", "## Learning curves", ""] + _curves_section(results)
    lines += probing_lines(results.get("probes"))
    lines += _grammar_lines(results)

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
