"""The evaluation's files, from ``zero_shot.evaluate_models``' results: ``minimal_pairs.json`` (everything),
``minimal_pairs.md`` (the tables, BLiMP's published rows beside ours), ``minimal_pairs.png`` (accuracy by phenomenon,
intervals as error bars, published rows as markers) and, when asked, ``pair_scores.jsonl`` (every pair's two scores per
scoring). ``write_outputs`` writes them into a staging folder beside the output folder and moves it into place whole,
so a failure leaves nothing half-written there."""

from __future__ import annotations

import json
from pathlib import Path

from ..folders.staged import staged_folder

JSON_FILE, MARKDOWN_FILE, PLOT_FILE, PAIR_SCORES_FILE = ("minimal_pairs.json", "minimal_pairs.md", "minimal_pairs.png",
                                                         "pair_scores.jsonl")
PUBLISHED_MARK = "†"
CITATION = ("Warstadt, Parrish, Liu, Mohananey, Peng, Wang and Bowman (2020), BLiMP: The Benchmark of Linguistic "
            "Minimal Pairs for English, TACL 8: 377-392")


def _cell(entry, interval=True) -> str:
    if not entry or entry.get("accuracy") is None:
        return "—"
    text = f"{entry['accuracy']:.3f}"
    if interval and entry.get("low") is not None:
        text += f" [{entry['low']:.3f}, {entry['high']:.3f}]"
    return text


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def _row(cells) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def _table(header, rows) -> list[str]:
    return [_row(header), _row(["---"] * len(header)), *(_row(r) for r in rows)]


def markdown(results: dict, command: str | None = None) -> str:
    """The report as Markdown."""
    data, method, systems = results["data"], results["method"], results["systems"]
    published = results["published"]
    rows = published["summary"]
    lines = ["# Minimal pairs: what each model knows of grammar, with no task head", ""]
    if command:
        lines += [f"`{command}`", ""]
    lines += [
        f"{_count(data['pairs'], 'pair')} in {_count(data['paradigms'], 'paradigm')} "
        f"({_count(len(data['phenomena']), 'phenomenon', 'phenomena')}, {_count(len(data['fields']), 'field')}) "
        f"from {', '.join(Path(f).name for f in data['files'][:3])}"
        + (f" and {len(data['files']) - 3} more files" if len(data['files']) > 3 else "") + ".",
        "",
        *([("Grouped as BLiMP's published tables group them, not as their data files say: " + "; ".join(
            f"{uid} ({' / '.join(moved['data'])} → {' / '.join(moved['published'])})"
            for uid, moved in data["regrouped"].items()) + "."), ""] if data.get("regrouped") else []),
        "A pair is right when the model scores the grammatical sentence higher. A tie (the two sentences are the same "
        "input to the model, e.g. two words both out of its vocabulary, or equal scores) counts as half; `ties` says "
        "how many there were, and the columns beside it give the accuracy with ties counted wrong and counted right "
        "(lm-evaluation-harness counts them right). Accuracy over a field, a phenomenon or the whole set is the mean "
        f"of its paradigms' accuracies, as BLiMP reports it. Intervals: {method['interval']} ({method['resamples']:,} "
        f"resamples, seed {method['seed']}). Rows marked {PUBLISHED_MARK} are BLiMP's published figures "
        "(on all 1,000 pairs of each paradigm, averaged over the paradigms present here).",
        "",
        "## Overall and by field",
        "",
    ]
    fields = data["fields"]
    header = ["system", "scoring", "mean over paradigms [95 % CI]", "ties", "ties as wrong", "ties as right",
              *fields]
    body = []
    for name, system in systems.items():
        overall = system["overall"]
        body.append([f"**{name}**", system["scoring"], _cell(overall), f"{overall['ties']:,} / {overall['pairs']:,}",
                     f"{overall['accuracy_ties_wrong']:.3f}", f"{overall['accuracy_ties_right']:.3f}",
                     *(_cell(system["fields"].get(f), interval=False) for f in fields)])
    for row, summary in rows.items():
        body.append([f"{row} {PUBLISHED_MARK}", published["rows"][row], _cell(summary["overall"]), "", "", "",
                     *(_cell(summary["fields"].get(f)) for f in fields)])
    lines += _table(header, body)
    silent = [m for m in results["models"] if not m["sentence_probability"]]
    if silent:
        lines += ["", "No sentence probability, so no accuracy here (none is invented): " + "; ".join(
            f"**{m['label']}** ({m['notes'][0].removesuffix(': no accuracy') if m['notes'] else 'no language model'})"
            for m in silent) + "."]
    for level, title in (("phenomena", "By phenomenon"), ("paradigms", "By paradigm")):
        names = list(systems) + [f"{row} {PUBLISHED_MARK}" for row in rows]
        groups = sorted({g for s in systems.values() for g in s[level]} | {g for r in rows.values() for g in r[level]})
        lines += ["", f"## {title}", ""]
        body = []
        for group in groups:
            cells = [_cell(s[level].get(group)) for s in systems.values()]
            cells += [_cell(r[level].get(group)) for r in rows.values()]
            ties = "".join(f" {s[level][group]['ties']}" if s[level].get(group) else " —" for s in systems.values())
            body.append([group, *cells, ties.strip()])
        lines += _table([level[:-1] if level == "paradigms" else "phenomenon", *names, "ties (ours, in order)"], body)
    lines += ["", "## Models and how each reads a sentence", ""]
    body = []
    for model in results["models"]:
        example = model.get("example") or {}
        case = "" if "lowercases" not in model else ("; lowercased by its tokenizer" if model["lowercases"]
                                                     else "; case kept")
        reads = f"`{example['reads']}`" if example else "—"
        body.append([f"**{model['label']}**", model["source"], model["kind"],
                     f"{model['text_format']}: {model['text_format_why']}{case}", reads,
                     f"{model['seconds']:.1f}" if "seconds" in model else "—",
                     "; ".join(model["notes"]) or ""])
    example = next((m["example"]["sentence"] for m in results["models"] if m.get("example")), "")
    lines += _table(["model", "source", "kind", "text preparation", f"reads “{example}” as", "seconds", "notes"],
                    body)
    machine = results["machine"]
    lines += ["", f"Seconds: loading and scoring, on {machine['cpu']} ({machine['device']}"
              + (f", {machine['threads']} torch threads" if machine.get("threads") else "") + ").", "",
              "## Published rows", "",
              f"{PUBLISHED_MARK} {published['source']}. License: {published['license']} "
              f"(https://creativecommons.org/licenses/by/4.0/). Cite: {CITATION}.", ""]
    return "\n".join(lines)


def plot(results: dict, path) -> None:
    """Accuracy by phenomenon (and over all) for every system, 95 % intervals as error bars, BLiMP's published rows
    as markers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    systems, rows = results["systems"], results["published"]["summary"]
    groups = ["overall", *results["data"]["phenomena"]]

    def entry(summary, group):
        return summary["overall"] if group == "overall" else summary["phenomena"].get(group)

    height = max(4.0, 1.2 + len(groups) * (0.2 + 0.1 * max(1, len(systems))))
    figure, axis = plt.subplots(figsize=(11, height))
    y = np.arange(len(groups))[::-1].astype(float)
    width = 0.8 / max(1, len(systems))
    colors = plt.get_cmap("tab10")
    for k, (name, system) in enumerate(systems.items()):
        values = [entry(system, g) or {} for g in groups]
        accuracy = np.array([v.get("accuracy", np.nan) for v in values])
        low = np.array([v.get("low") if v.get("low") is not None else np.nan for v in values])
        high = np.array([v.get("high") if v.get("high") is not None else np.nan for v in values])
        error = np.vstack([accuracy - low, high - accuracy])
        offset = y + 0.4 - width * (k + 0.5)
        axis.barh(offset, accuracy, height=width, color=colors(k % 10), label=name,
                  xerr=None if np.isnan(error).all() else error, error_kw={"elinewidth": 0.8, "capsize": 1.5})
    markers = "oDs^*v"
    for k, (row, summary) in enumerate(rows.items()):
        values = [(entry(summary, g) or {}).get("accuracy") for g in groups]
        values = np.array([np.nan if v is None else v for v in values])
        axis.scatter(values, y, marker=markers[k % len(markers)], facecolors="none", edgecolors="black", zorder=3,
                     label=f"{row} {PUBLISHED_MARK}")
    axis.axvline(0.5, color="grey", linewidth=0.8, linestyle=":")
    axis.set_yticks(y)
    axis.set_yticklabels([g.replace("_", " ") for g in groups])
    axis.set_xlim(0, 1.02)
    axis.set_xlabel("accuracy (mean over paradigms; ties count 0.5)")
    axis.set_title("Minimal pairs, zero-shot: accuracy by phenomenon")
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)  # beside, not over
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def json_ready(results: dict) -> dict:
    """The results without the per-pair arrays (``pair_outcomes``), for ``minimal_pairs.json``."""
    return {key: value for key, value in results.items() if key != "pair_outcomes"}


def pair_score_lines(results: dict, pairs):
    """One JSON line per pair: where it is, and per scoring its two scores and outcome."""
    outcomes = results["pair_outcomes"]
    for i, pair in enumerate(pairs):
        row = {"file": pair.file, "line": pair.line, "UID": pair.paradigm, "pairID": pair.pair_id}
        for name, outcome in outcomes.items():
            row[name] = {"good": float(outcome.good[i]), "bad": float(outcome.bad[i]),
                         "right": float(outcome.right[i]), "tie": bool(outcome.tie[i])}
        yield json.dumps(row) + "\n"


def write_outputs(results: dict, output_dir, *, command: str | None = None, pairs=None, overwrite: bool = False
                  ) -> Path:
    """Write the files into ``output_dir`` (created; an existing non-empty one only with ``overwrite``, replaced
    whole): staged beside it, moved into place at the end."""
    out = Path(output_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        raise FileExistsError(f"--output-dir {out}: exists and is not empty (give --overwrite to replace it)")
    with staged_folder(out) as staging:
        record = json_ready(results)
        if command:
            record = {"command": command, **record}
        (staging / JSON_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        (staging / MARKDOWN_FILE).write_text(markdown(results, command), encoding="utf-8")
        plot(results, staging / PLOT_FILE)
        if pairs is not None:
            with open(staging / PAIR_SCORES_FILE, "w", encoding="utf-8") as f:
                f.writelines(pair_score_lines(results, pairs))
    return out
