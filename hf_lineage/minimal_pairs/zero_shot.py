"""The whole evaluation, as a function: resolved models scored on minimal pairs, every scoring summarised, BLiMP's
published rows beside them. ``hf-lineage evaluate minimal-pairs`` is this plus its files (``outputs``).

    >>> from hf_lineage.minimal_pairs import model_specs, pairs, zero_shot
    >>> specs = model_specs.resolve_models(["gpt", "kneser-ney:5"])                           # doctest: +SKIP
    >>> results = zero_shot.evaluate_models(specs, pairs.read_pairs("blimp/data", limit=40))   # doctest: +SKIP
    >>> results["systems"]["gpt"]["overall"]["accuracy"]                                      # doctest: +SKIP
"""

from __future__ import annotations

import platform
import time

from ..machine.precision import cpu_name
from .model_specs import ModelSpec
from .scorers import load_scorer
from .tallies import Grouping, canonical_groups, load_published, published_summary, score_pairs, summarize
from .text_preparation import describe


def system_name(spec: ModelSpec, variant: str, variants) -> str:
    """A scoring's row name: the model's label, with the variant when the model has several."""
    return spec.label if len(variants) == 1 else f"{spec.label} ({variant})"


def example_pair(pairs):
    """The pair whose sentence best shows text preparation: the first with an apostrophe, else the first."""
    return next((p for p in pairs if "'" in p.good), pairs[0])


def evaluate_models(specs, pairs, *, device: str = "cpu", batch_size: int | None = None, ngram_train_files=None,
                    resamples: int = 1000, seed: int = 0, confidence: float = 0.95, progress: bool = False,
                    log=None) -> dict:
    """Every model of ``specs`` (``model_specs.resolve_models``) scored on ``pairs`` (``pairs.read_pairs``):

    ``{"models": [per model: source, kind, text preparation, example, notes, seconds, its systems],
       "systems": {name: {"model", "variant", "scoring", "overall", "fields", "phenomena", "paradigms"}},
       "pair_outcomes": {name: PairOutcomes}, "published": {...}, "data": {...}, "method": {...}, "machine": {...}}``

    A model with static vectors only is listed with ``"sentence_probability": False`` and no system. ``log``: a
    callable given one line per model as it finishes."""
    example = example_pair(pairs)
    models, systems, outcomes = [], {}, {}
    for spec in specs:
        started = time.perf_counter()
        entry = {"label": spec.label, "argument": spec.argument, "source": spec.source, "kind": spec.kind,
                 "family": spec.family, "text_format": spec.text_style, "text_format_why": spec.text_style_reason,
                 "text_format_description": describe(spec.text_style), "sentence_probability": spec.sentence_probability,
                 "systems": [], "notes": []}
        models.append(entry)
        if not spec.sentence_probability:
            entry["notes"].append(f"{spec.why_no_probability}: no accuracy")
            if log:
                log(f"{spec.label}: {spec.why_no_probability} (listed, not scored)")
            continue
        scorer = load_scorer(spec, device=device, batch_size=batch_size, ngram_train_files=ngram_train_files)
        if scorer.lowercases is not None:
            entry["lowercases"] = scorer.lowercases
        entry["example"] = {"sentence": example.good, "reads": scorer.describe_input(example.good)}
        by_variant = score_pairs(scorer, pairs, progress=progress)
        for variant, outcome in by_variant.items():
            name = system_name(spec, variant, scorer.variants)
            outcomes[name] = outcome
            systems[name] = {"model": spec.label, "variant": variant, "scoring": scorer.variants[variant]}
            entry["systems"].append(name)
        entry["notes"] += scorer.notes
        entry["seconds"] = round(time.perf_counter() - started, 1)
        if log:
            log(f"{spec.label}: {len(pairs):,} pairs in {entry['seconds']:.1f} s")
        del scorer
    published = load_published()
    canonical = canonical_groups(published)
    for name, summary in summarize(pairs, outcomes, resamples=resamples, seed=seed, confidence=confidence,
                                   canonical=canonical).items():
        systems[name].update(summary)
    grouping = Grouping(pairs, canonical)
    return {
        "data": {"files": sorted({p.file for p in pairs}), "pairs": len(pairs), "paradigms": len(grouping.paradigms),
                 "fields": list(grouping.groups["fields"]), "phenomena": list(grouping.groups["phenomena"]),
                 "regrouped": grouping.regrouped},
        "method": {"accuracy": "mean over paradigms of each paradigm's accuracy (BLiMP's); a tie counts 0.5",
                   "interval": f"{confidence:.0%} percentile bootstrap over pairs, within each paradigm",
                   "resamples": resamples, "seed": seed, "confidence": confidence},
        "machine": {"cpu": cpu_name(), "device": device, "python": platform.python_version()},
        "models": models,
        "systems": systems,
        "pair_outcomes": outcomes,
        "published": {"source": published["source"], "license": published["license"], "rows": published["rows"],
                      "summary": published_summary(pairs, published)},
    }
