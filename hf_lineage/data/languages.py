"""Several languages in one pre-training corpus, weighted as multilingual BERT weighted them.

Multilingual BERT (Devlin et al., the ``multilingual.md`` notes of google-research/bert, 2018) was trained on the
Wikipedias of 104 languages at once, with no parallel data: one WordPiece vocabulary and one model. Because a large
language would otherwise drown a small one, each language's share of the data is smoothed exponentially: with
``q_i`` language i's share of the corpus, it is drawn with probability

    p_i = q_i^α / Σ_j q_j^α,    α = 0.7,

so small languages are over-sampled and large ones under-sampled (α = 1: the corpus as it is; α = 0: every language
alike). The same weighting is applied to the text the WordPiece vocabulary is trained on and to the pre-training
sequences. Here a language is given as ``--train-file LANG=PATH`` (repeatable); its share ``q_i`` is of whitespace
words for the vocabulary's sample and of pre-training sequences for the examples.

The draw is a fixed resampling, reproducible from the seed: language i's lines (or sequences) are kept
``⌊r_i⌋`` times each, and ``round((r_i - ⌊r_i⌋)·n_i)`` of them once more, chosen without replacement, where
``r_i = p_i / q_i`` — so the drawn shares are exactly ``p_i`` (up to rounding) and the total stays the corpus size.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

MBERT_ALPHA = 0.7
# "en=corpus.txt", "de=/data/train.de", "zh-Hans=...": a language code (ISO 639, optionally a subtag), "=", a path.
_TAGGED = re.compile(r"^(?P<language>[a-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})?)=(?P<path>.+)$")


def language_files(entries: Sequence[str] | None) -> dict[str, list[str]] | None:
    """``{"en": [paths], "de": [paths]}`` from ``--train-file`` entries written ``LANG=PATH`` (a language may have
    several files), in the order first given; None when no entry is tagged. Tagged and plain entries are not mixed:
    every file's language must be known to weight it."""
    if not entries:
        return None
    matches = [_TAGGED.match(entry) for entry in entries]
    if not any(matches):
        return None
    untagged = [entry for entry, match in zip(entries, matches) if not match]
    if untagged:
        raise ValueError(f"--train-file mixes language-tagged (LANG=PATH) and plain files: give every file its "
                         f"language, e.g. en={untagged[0]}")
    files: dict[str, list[str]] = {}
    for match in matches:
        files.setdefault(match["language"], []).append(match["path"])
    return files


def plain_paths(entries: Sequence[str] | None) -> list[str] | None:
    """The paths of ``--train-file`` entries, language tags removed."""
    files = language_files(entries)
    if files is None:
        return list(entries) if entries else entries
    return [path for paths in files.values() for path in paths]


def smoothed_probabilities(sizes: Mapping[str, float], alpha: float = MBERT_ALPHA) -> dict[str, float]:
    """``p_i = q_i^α / Σ_j q_j^α`` with ``q_i = sizes[i] / Σ sizes``: each language's probability of being drawn."""
    if not 0 <= alpha <= 1:
        raise ValueError(f"the language smoothing exponent α must be in [0, 1] (mBERT: 0.7), got {alpha}")
    if not sizes or any(size <= 0 for size in sizes.values()):
        raise ValueError(f"every language needs some text; sizes: {dict(sizes)}")
    total = sum(sizes.values())
    weights = {language: (size / total) ** alpha for language, size in sizes.items()}
    norm = sum(weights.values())
    return {language: weight / norm for language, weight in weights.items()}


def resample(count: int, factor: float, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``count`` items drawn ``factor`` times over: each ``⌊factor⌋`` times, plus
    ``round(frac(factor)·count)`` of them once more, chosen without replacement; in index order."""
    whole = int(np.floor(factor))
    extra = int(round((factor - whole) * count))
    drawn = np.concatenate([np.repeat(np.arange(count), whole), rng.choice(count, size=extra, replace=False)])
    return np.sort(drawn, kind="stable")


def smoothed_draw(groups: Mapping[str, Sequence], alpha: float, seed: int) -> tuple[dict[str, np.ndarray], dict]:
    """Per language, the indices of its items to keep so that languages are drawn with ``p_i ∝ q_i^α`` (``q_i``: its
    share of all items), and a report of the draw: items, share, probability and items drawn per language."""
    sizes = {language: len(items) for language, items in groups.items()}
    probabilities = smoothed_probabilities(sizes, alpha)
    total = sum(sizes.values())
    rng = np.random.default_rng(seed)
    drawn, report = {}, {}
    for language, size in sizes.items():
        factor = probabilities[language] * total / size
        drawn[language] = resample(size, factor, rng)
        report[language] = {"items": size, "share": size / total, "probability": probabilities[language],
                            "drawn": int(len(drawn[language]))}
    return drawn, report


def read_language_lines(files: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Every non-empty line of each language's files."""
    lines = {}
    for language, paths in files.items():
        lines[language] = []
        for path in paths:
            with open(path, encoding="utf-8") as f:
                lines[language].extend(line for line in (raw.strip() for raw in f) if line)
    return lines


def words_per_language(lines: Mapping[str, Sequence[str]]) -> dict[str, int]:
    return {language: sum(len(line.split()) for line in text) for language, text in lines.items()}


def smoothed_text(lines: Mapping[str, Sequence[str]], alpha: float, seed: int) -> tuple[Iterator[str], dict]:
    """The text a shared vocabulary is trained on: each language's lines drawn so that its share of the *words* is
    ``p_i ∝ q_i^α`` (mBERT: "the word counts are weighted the same way as the data"). Returns the lines and a report
    per language (words, share, probability, words drawn)."""
    words = words_per_language(lines)
    probabilities = smoothed_probabilities(words, alpha)
    total = sum(words.values())
    rng = np.random.default_rng(seed)
    chosen, report = [], {}
    for language, text in lines.items():
        factor = probabilities[language] * total / words[language]
        indices = resample(len(text), factor, rng)
        chosen.append((text, indices))
        report[language] = {"words": words[language], "share": words[language] / total,
                            "probability": probabilities[language],
                            "words_drawn": int(sum(len(text[i].split()) for i in indices))}
    return (text[i] for text, indices in chosen for i in indices), report


def describe_languages(report: Mapping[str, dict], alpha: float) -> str:
    """A line per language (words, vocabulary weight, sequences drawn) for the start of a run."""
    rows = [f"  {language}: {entry['words']:,} words ({entry['share']:.1%} of the corpus; {entry['probability']:.1%} "
            f"of the vocabulary's sample), {entry['sequences']:,} sequences ({entry['sequence_share']:.1%}) drawn "
            f"{entry['sequences_drawn']:,} times ({entry['sequence_probability']:.1%})"
            for language, entry in report.items()]
    return f"languages, smoothed with α = {alpha:g} (p_i ∝ q_i^α):\n" + "\n".join(rows)


def languages_card(report: Mapping[str, dict], alpha: float) -> str:
    """The model card's table of the languages a model was pre-trained on."""
    rows = "\n".join(f"| {language} | {entry['words']:,} | {entry['share']:.1%} | {entry['probability']:.1%} | "
                     f"{entry['sequences']:,} | {entry['sequences_drawn']:,} ({entry['sequence_probability']:.1%}) |"
                     for language, entry in report.items())
    return (f"\n## Languages\n\nOne model and one WordPiece vocabulary for {len(report)} languages, no parallel data. "
            f"Each language's share q was smoothed as multilingual BERT's was, p ∝ q^α with α = {alpha:g}, for the "
            "vocabulary's training text (by words) and for the pre-training sequences.\n\n"
            "| language | words | share of words | share of the vocabulary's sample | sequences | sequences drawn "
            f"(share) |\n|---|---|---|---|---|---|\n{rows}\n")
