"""``hf-lineage xling``'s scores, verdicts, vocabulary overlap, report and plot (the run: ``transfer``).

Every score is per-word UPOS accuracy; its interval is the 95 % two-level bootstrap of the lineage report
(``experiments.statistics.seed_and_unit_interval``: sentences and seeds resampled, so it holds both sources of noise),
and every comparison a paired difference with the same resampling. A verdict is given only where the interval of the
difference excludes zero.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from ..experiments.baselines import most_frequent_tag
from ..experiments.statistics import point_estimate, seed_and_unit_difference, seed_and_unit_interval, unit_scores

SOURCE = "en"  # the language every zero-shot model is fine-tuned on
# The systems, in the report's order: name → (what it is, what it was trained on).
SYSTEMS = {
    "multilingual": "BERT pre-trained on every --pretraining-text language, fine-tuned on English labels (zero shot "
                    "on the targets)",
    "english-only": "BERT of the same size and budget pre-trained on English alone, fine-tuned on English labels",
    "ceiling": "the multilingual BERT fine-tuned on the target language's own labels (its dev set)",
    "mft-english": "most frequent tag of each word in the English training labels, else the most frequent tag",
    "mft-target": "most frequent tag of each word in the target's dev labels (the ceiling's training data)",
}
CELLS = {"multilingual": "english/multilingual", "english-only": "english/english", "ceiling": "ceiling/{language}"}
COMPARISONS = (
    ("multilingual", "english-only", "what pre-training on the other languages' text adds to zero-shot transfer"),
    ("multilingual", "mft-english", "transfer beyond the tags of the English words it shares"),
    ("ceiling", "multilingual", "what target-language labels add over zero shot"),
)
BUCKETS = ("none", "some", "all")  # how many of a target word's pieces occur in the English fine-tuning data


def read_rows(path: str) -> list[dict]:
    """A JSON-lines file's rows ({"tokens": [...], "tags": [...]} here)."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def score_run(args, seeds, pretrained, cells, english, ceilings, pretraining_records) -> dict:
    """results.json's numbers from the stages' records."""
    evaluated = {SOURCE: args.source_validation, **{lang: files["test"] for lang, files in args.targets.items()}}
    gold = {language: read_rows(path) for language, path in evaluated.items()}
    english_train = read_rows(english["train"])
    failed = sorted(name for name, record in {**cells, **{f"pretrain/{m}-seed{s}": r for (m, s), r in
                                                           pretraining_records.items()}}.items()
                    if record["status"] != "ok")
    predictions = {}  # (system, language) → one tag list per sentence, per seed
    for language in evaluated:
        for system, cell in CELLS.items():
            if system == "ceiling" and language == SOURCE:
                continue
            records = [cells.get(f"{cell.format(language=language)}-seed{seed}") for seed in seeds]
            if all(r and r["status"] == "ok" for r in records):
                predictions[system, language] = [r["result"]["tagged"][language] for r in records]
        predictions["mft-english", language] = [most_frequent_tag(english_train, gold[language])]
        if language != SOURCE:
            predictions["mft-target", language] = [most_frequent_tag(read_rows(ceilings[language]["train"]),
                                                                     gold[language])]
    units = {key: [unit_scores("labeling", tags, [row["tags"] for row in gold[key[1]]], by_sentence=True)
                   for tags in per_seed] for key, per_seed in predictions.items()}
    scores = {language: {system: score_entry(units[system, language]) for system in SYSTEMS
                         if (system, language) in units} for language in evaluated}
    return {
        "seeds": seeds, "failed_stages": failed, "systems": SYSTEMS, "scores": scores,
        "comparisons": comparisons(units, evaluated),
        "overlap": vocabulary_overlap(pretrained, seeds, english_train, gold, units),
        "pretraining": {f"{name}-seed{seed}": record["result"] for (name, seed), record in pretraining_records.items()},
        "pretraining_seeds": sorted({seed for _, seed in pretraining_records}),
        "words": {language: sum(len(row["tokens"]) for row in rows) for language, rows in gold.items()},
        "sentences": {language: len(rows) for language, rows in gold.items()},
        "english_training_sentences": len(english_train),
    }


def score_entry(per_seed_units: list) -> dict:
    per_seed = [point_estimate("labeling", units) for units in per_seed_units]
    low, high = seed_and_unit_interval("labeling", per_seed_units)
    return {"score": sum(per_seed) / len(per_seed), "interval": [low, high], "seed_scores": per_seed}


def comparisons(units: dict, evaluated: dict) -> list[dict]:
    out = []
    for language in evaluated:
        if language == SOURCE:
            continue
        for a, b, question in COMPARISONS:
            if (a, language) not in units or (b, language) not in units:
                continue
            difference = seed_and_unit_difference(units[a, language], units[b, language], "labeling")
            if difference.low > 0:
                verdict = f"{a} higher"
            elif difference.high < 0:
                verdict = f"{b} higher"
            else:
                verdict = "no difference shown"
            out.append({"language": language, "a": a, "b": b, "question": question, "difference": difference.difference,
                        "interval": [difference.low, difference.high], "verdict": verdict})
    return out


def word_pieces(tokenizer, sentences: list[list[str]]) -> list[list[list[str]]]:
    """Each word's WordPiece pieces, sentence by sentence."""
    return [[tokenizer.tokenize(word) for word in words] for words in sentences]


def vocabulary_overlap(pretrained, seeds, english_train, gold, units) -> dict:
    """Per model and target: the share of the target test set's word pieces that occur in the English fine-tuning
    data (types, tokens, and Pires et al.'s |E ∩ T| / |E ∪ T| of types), averaged over the seeds' vocabularies, and
    zero-shot accuracy by how many of a word's pieces English fine-tuning saw (pooled over seeds)."""
    from transformers import AutoTokenizer

    out = {}
    for system, model in (("multilingual", "multilingual"), ("english-only", "english")):
        out[system] = {}
        for language in gold:
            if language == SOURCE:
                continue
            shares, buckets = [], {bucket: [0, 0.0] for bucket in BUCKETS}
            for i, seed in enumerate(seeds):
                record = pretrained[model, seed]
                if record["status"] != "ok":
                    continue
                tokenizer = AutoTokenizer.from_pretrained(record["result"]["model"])
                seen = {p for sentence in word_pieces(tokenizer, [r["tokens"] for r in english_train])
                        for word in sentence for p in word}
                target = word_pieces(tokenizer, [row["tokens"] for row in gold[language]])
                counts = Counter(p for sentence in target for word in sentence for p in word)
                types = set(counts)
                shares.append({"types": len(types & seen) / len(types),
                               "tokens": sum(c for p, c in counts.items() if p in seen) / sum(counts.values()),
                               "pires": len(types & seen) / len(types | seen)})
                correct = units.get((system, language))
                for s, sentence in enumerate(target):
                    for w, pieces in enumerate(sentence):
                        known = sum(p in seen for p in pieces)
                        bucket = "all" if pieces and known == len(pieces) else "some" if known else "none"
                        buckets[bucket][0] += 1
                        if correct is not None:
                            buckets[bucket][1] += float(correct[i][s][w])
            if not shares:
                continue
            out[system][language] = {
                **{key: sum(share[key] for share in shares) / len(shares) for key in ("types", "tokens", "pires")},
                # words per seed's vocabulary (the counts are summed over the seeds), accuracy pooled over seeds
                "by_word": {bucket: {"words": round(n / len(shares)),
                                     "accuracy": (right / n if n and (system, language) in units else None)}
                            for bucket, (n, right) in buckets.items()},
            }
    return out


# --------------------------------------------------------------------------- report


LABELS = {"multilingual": "multilingual BERT, English labels", "english-only": "English-only BERT, English labels",
          "ceiling": "multilingual BERT, target labels (ceiling)", "mft-english": "most frequent tag, English labels",
          "mft-target": "most frequent tag, target labels"}


def write_report(results: dict, output_dir: Path) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    plot = write_plot(results, output_dir / "xling.png")
    results["plot"] = plot
    (output_dir / "results.json").write_text(json.dumps(results, indent=2, ensure_ascii=False))
    (output_dir / "report.md").write_text(report_markdown(results))
    print(f"hf-lineage xling: report in {output_dir / 'report.md'}", flush=True)


def _cell(entry: dict | None) -> str:
    if entry is None:
        return "—"
    low, high = entry["interval"]
    return f"{entry['score']:.3f} [{low:.3f}, {high:.3f}]"


def report_markdown(results: dict) -> str:
    languages = list(results["scores"])
    header = "| system | " + " | ".join(f"{lang} ({results['words'][lang]:,} words)" for lang in languages) + " |"
    rows = [f"| {LABELS[system]} | " + " | ".join(_cell(results["scores"][lang].get(system)) for lang in languages)
            + " |" for system in SYSTEMS]
    verdicts = [f"| {c['language']} | {LABELS[c['a']]} − {LABELS[c['b']]} | {c['difference']:+.3f} "
                f"[{c['interval'][0]:+.3f}, {c['interval'][1]:+.3f}] | {c['verdict']} | {c['question']} |"
                for c in results["comparisons"]]
    overlap = []
    for system, per_language in results["overlap"].items():
        for language, entry in per_language.items():
            by_word = ", ".join(f"{bucket} {v['words']:,} words" + (f" {v['accuracy']:.3f}" if v["accuracy"] is not None
                                                                   else "") for bucket, v in entry["by_word"].items())
            overlap.append(f"| {system} | {language} | {entry['types']:.1%} | {entry['tokens']:.1%} | "
                           f"{entry['pires']:.1%} | {by_word} |")
    languages_seen = next(iter(results["pretraining"].values()), {}).get("languages", {})
    arguments = results.get("arguments", {})
    return "\n".join([
        "# Zero-shot cross-lingual transfer: multilingual BERT", "",
        f"Command: `{results.get('command') or 'hf-lineage xling'}`  ",
        f"Machine: {results.get('machine')}. Stages: pre-training {results['stage_seconds']['pretraining']:,.0f} s, "
        f"fine-tuning {results['stage_seconds']['fine-tuning']:,.0f} s. Fine-tuning seeds {results['seeds']}; "
        f"pre-training seeds {results['pretraining_seeds']} (fine-tuning seed i starts from pre-training seed i mod "
        f"{len(results['pretraining_seeds'])}'s models).", "",
        f"Pre-training languages of the multilingual model (α = {arguments.get('language_alpha')}): "
        + ", ".join(f"{lang} {entry['words']:,} words, {entry['sequence_probability']:.0%} of sequences"
                    for lang, entry in languages_seen.items()) + ". Fine-tuning: "
        f"{results['english_training_sentences']:,} English UPOS sentences.", "",
        "## UPOS accuracy (mean over seeds, 95 % interval over seeds and sentences)", "",
        "English labels only, except where a row says otherwise: on German and French, zero shot; on English, "
        "in-language.", "", header,
        "|---|" + "---|" * len(languages), *rows, "",
        "## Comparisons (a verdict only where the interval excludes zero)", "",
        "| language | difference | value [95 % interval] | verdict | question |", "|---|---|---|---|---|",
        *verdicts, "",
        "## Vocabulary overlap with the English fine-tuning data", "",
        "Share of the target test set's word pieces seen in the English fine-tuning sentences (types, tokens; Pires et "
        "al.'s |E ∩ T| / |E ∪ T|), and zero-shot accuracy by how many of a word's pieces were seen (none, some, "
        "all).", "", "| model | target | types | tokens | Pires | words and accuracy by pieces seen |",
        "|---|---|---|---|---|---|",
        *overlap, "",
        "## What these numbers do and do not show", "",
        "They compare models of one size and budget on one pair of pre-training corpora and one English labelled set; "
        "the intervals hold seed-to-seed and sentence-sampling variance, not the variance of other corpora, sizes or "
        "hyper-parameters (none was tuned on any target data). French was never in the pre-training text: transfer "
        "there can only come from what French shares with the pre-training languages on the surface. The ceiling "
        "is trained on the target's dev labels (the UD train files are not available here), so it is a ceiling for "
        "this amount of target supervision only.",
        *([f"", f"Failed stages: {', '.join(results['failed_stages'])}."] if results["failed_stages"] else []),
        "", f"![scores and overlap]({Path(results['plot']).name})" if results.get("plot") else "", ""])


def write_plot(results: dict, path: Path) -> str | None:
    """Left: accuracy per language and system with 95 % intervals; right: zero-shot accuracy by how many of a word's
    pieces the English fine-tuning data holds."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    languages = list(results["scores"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.8 / len(SYSTEMS)
    for i, system in enumerate(SYSTEMS):
        xs, ys, errors = [], [], [[], []]
        for j, language in enumerate(languages):
            entry = results["scores"][language].get(system)
            if entry is None:
                continue
            xs.append(j + (i - (len(SYSTEMS) - 1) / 2) * width)
            ys.append(entry["score"])
            errors[0].append(entry["score"] - entry["interval"][0])
            errors[1].append(entry["interval"][1] - entry["score"])
        left.bar(xs, ys, width, yerr=errors, capsize=2, label=LABELS[system])
    left.set_xticks(range(len(languages)), languages)
    left.set_ylabel("UPOS accuracy")
    left.set_ylim(0, 1)
    left.set_title("UPOS accuracy (95 % interval: seeds and sentences)")
    left.legend(fontsize=7, loc="lower left")
    for system, per_language in results["overlap"].items():
        for language, entry in per_language.items():
            points = [(bucket, v["accuracy"]) for bucket, v in entry["by_word"].items() if v["accuracy"] is not None
                      and v["words"] >= 20]
            if points:
                right.plot([BUCKETS.index(b) for b, _ in points], [a for _, a in points], marker="o",
                           label=f"{system} → {language} (token overlap {entry['tokens']:.0%})")
    right.set_xticks(range(len(BUCKETS)), [f"{b} of its pieces" for b in BUCKETS])
    right.set_ylim(0, 1)
    right.set_ylabel("zero-shot UPOS accuracy")
    right.set_title("Zero shot by word pieces seen in English fine-tuning")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)
