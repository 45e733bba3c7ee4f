"""The zero-shot stage of ``hf-lineage lineage``: each pretrained language model asked directly, with no task head.

Every family that defines a probability of a sentence (NNLM, ELMo, GPT, BERT; the static-vector families do not) and
an interpolated Kneser-Ney n-gram trained on the pretraining text are scored by the scorers of ``hf-lineage evaluate
minimal-pairs`` (``hf_lineage.minimal_pairs``: the same text preparation, scorings, ties and bootstrap), on two sets of
minimal pairs at once:

- **order_pairs** (when the run has that task): each validation pair is a minimal pair too, the original sentence
  against its rotation (the same words); a model gets it right when it gives the original the higher score. The
  report shows this beside the supervised cells, on the same validation units (never the test data);
- **grammar** (``--blimp-pairs``, default ``BLIMP_PAIRS``; 0 turns it off): the BLiMP sample the package embeds
  (``hf_lineage/samples/blimp/sample.jsonl``), accuracy as the mean over BLiMP's paradigms with 95 % bootstrap
  intervals over pairs, BLiMP's published rows beside, and the claim "n-gram < NNLM < ELMo < GPT < BERT"
  (``claims``), judged on the paired differences computed here.

One stage (``stages/zero-shot``), reused like the others while its spec (models and their weights, data, n-gram,
seed) is unchanged. It uses the first seed's pretrained models (zero-shot scoring has no fine-tuning seed) and took
37 s for the shipped checkpoints on a 2-core CPU (docs/lineage.md, "Wall time"); a checkpoint that runs frozen only on this CPU
(``settings.frozen_only_families``: over 50 M parameters) is not scored (BERT-base's PLL alone would take most of an
hour on two cores); ``hf-lineage evaluate minimal-pairs`` scores it on any machine.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..minimal_pairs.model_specs import DEFAULT_NGRAM_ORDER, NGRAM
from .settings import BLIMP_SAMPLE_PAIRS, family_label

ORDER_TASK = "order_pairs"
# The pairs per paradigm the grammar section scores by default: all of the embedded sample's (docs/lineage.md, "Wall
# time", for what the stage costs).
BLIMP_PAIRS = BLIMP_SAMPLE_PAIRS
NGRAM_LABEL = f"Kneser-Ney {DEFAULT_NGRAM_ORDER}-gram"
# The scoring each kind of model is judged by in the table's main column and in the claim, chosen by the method's
# merits and not by which scores higher: a causal LM's and the n-gram's sum of log-probabilities, ELMo's two
# directions summed (the whole biLM), BERT's PLL-word-l2r (Kauf & Ivanova 2023: plain PLL scores a word split into
# pieces from its own other pieces, which inflates multi-piece words, and BLiMP's pairs often differ in a word that
# the 8,000-piece vocabulary splits). On the shipped BERT plain PLL scores a little higher on both pair sets
# (docs/minimal_pairs.md); every scoring is in the results and the grammar table.
PRIMARY = {"causal": "sum", "ngram": "sum", "elmo": "forward+backward", "masked": "PLL-word-l2r"}
# The claimed order of the grammar claim: the count-based n-gram first, then the lineage's language models.
GRAMMAR_ORDER = (NGRAM, "nnlm", "elmo", "gpt", "bert")


def blimp_pairs(args) -> int:
    """Pairs per paradigm of the grammar section (0: off)."""
    return BLIMP_PAIRS if args.blimp_pairs is None else args.blimp_pairs


def zero_shot_wanted(tasks, args) -> bool:
    return ORDER_TASK in tasks or blimp_pairs(args) > 0


def system_label(system: str) -> str:
    """"elmo" → "ELMo", "kneser-ney" → "Kneser-Ney 5-gram"."""
    return NGRAM_LABEL if system == NGRAM else family_label(system)


def _sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def run_zero_shot_stage(stages, pretraining: dict, task_data: dict, args, ngram_files=None, skipped=()) -> dict | None:
    """The ``zero-shot`` stage on each family's first-seed model that pretrained (``skipped``: families left out,
    each named in the result); None when there is nothing to score. ``ngram_files``: the n-gram's training text
    (None: the embedded WikiText-2 sample)."""
    from ..minimal_pairs.pairs import embedded_sample

    models = {family: records[0]["model"] for family, records in pretraining.items()
              if records and records[0]["status"] == "ok" and family not in skipped}
    order = task_data.get(ORDER_TASK) or {}
    order_file = order["files"]["validation"] if order.get("status") == "ok" else None
    n = blimp_pairs(args)
    sample = embedded_sample() if n else None
    if not order_file and not sample:
        return None
    seed = args.seed
    spec = {"models": models, "weights": {f: pretraining[f][0].get("weights_sha256") for f in models},
            "order_pairs": order_file and {"file": order_file, "sha256": _sha256(order_file)},
            "blimp": sample and {"file": str(sample), "sha256": _sha256(sample), "pairs_per_paradigm": n},
            "ngram": {"order": 5, "files": list(ngram_files or [])}, "primary": PRIMARY, "seed": seed}
    record = stages.run("zero-shot", spec, lambda folder: score_zero_shot(
        models, order_file, sample, n, ngram_files, seed, skipped=list(skipped)))
    return {"status": record["status"], "error": record["error"], "seconds": record["seconds"],
            "reused": record["reused"], **record["result"]}


def order_pairs_as_minimal_pairs(path) -> list:
    """The order_pairs validation rows as minimal pairs, in file order (the supervised cells' validation units): the
    original sentence (``label`` "first": ``sentence1``) against its rotation."""
    from ..minimal_pairs.pairs import MinimalPair
    from .stage_data import read_task_file

    rows = read_task_file(ORDER_TASK, path)
    pairs = []
    for i, (first, second, label) in enumerate(zip(rows["sentence1"], rows["sentence2"], rows["label"])):
        if str(label) not in ("first", "second"):
            raise ValueError(f"{path}: row {i + 1}: label {label!r} is neither 'first' nor 'second'")
        good, bad = (first, second) if str(label) == "first" else (second, first)
        pairs.append(MinimalPair(good, bad, ORDER_TASK, ORDER_TASK, "word order", str(i), str(path), i + 1))
    return pairs


def score_zero_shot(models: dict, order_file, sample, n: int, ngram_files, seed: int, resamples: int = 1000,
                    skipped=(), device: str | None = None) -> dict:
    """Both pair sets scored by every model of ``models`` ({family: folder}) and the n-gram, in one pass per model
    (``minimal_pairs.zero_shot.evaluate_models``), then summarised apart. JSON-ready; ``order_pairs.systems[*].units``
    are the per-pair outcomes (1, 0, 0.5 for a tie) that ``experiment`` keeps out of results.json."""
    import time

    import torch

    started = time.perf_counter()
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    # One torch thread on a CPU, as the fine-tuning workers: these tiny models gain little from a second thread, and
    # with anything else on the cores two threads ran this stage 7x slower (286 s against 40 s, docs/lineage.md).
    threads = torch.get_num_threads()
    if device == "cpu":
        torch.set_num_threads(1)
    try:
        return _score(models, order_file, sample, n, ngram_files, seed, resamples, skipped, device, started)
    finally:
        torch.set_num_threads(threads)


def _score(models, order_file, sample, n, ngram_files, seed, resamples, skipped, device, started) -> dict:
    import time

    from ..minimal_pairs.model_specs import resolve_model
    from ..minimal_pairs.pairs import read_pairs
    from ..minimal_pairs.tallies import (
        PairOutcomes,
        canonical_groups,
        load_published,
        paired_difference,
        published_summary,
        summarize,
    )
    from ..minimal_pairs.zero_shot import evaluate_models
    from .statistics import seed_and_unit_interval

    specs = [resolve_model(f"{family}={folder}") for family, folder in models.items()]
    specs.append(resolve_model(f"{NGRAM}={NGRAM}:{DEFAULT_NGRAM_ORDER}", ngram_train_files=ngram_files))
    blimp = read_pairs(sample, limit=n) if sample else []
    order = order_pairs_as_minimal_pairs(order_file) if order_file else []
    evaluated = evaluate_models(specs, blimp + order, device=device, ngram_train_files=ngram_files, resamples=0,
                                seed=seed)
    primary, scorings, no_probability = {}, {}, []
    for model in evaluated["models"]:
        if not model["sentence_probability"]:
            no_probability.append(model["label"])
            continue
        for name in model["systems"]:
            variant = evaluated["systems"][name]["variant"]
            scorings[name] = {"system": model["label"], "variant": variant,
                              "scoring": evaluated["systems"][name]["scoring"]}
            if variant == PRIMARY[model["kind"]]:
                primary[model["label"]] = name
    outcomes = evaluated["pair_outcomes"]

    def part(start, stop):
        return {name: PairOutcomes(o.right[start:stop], o.tie[start:stop]) for name, o in outcomes.items()}

    result = {"systems": [m["label"] for m in evaluated["models"]], "no_sentence_probability": no_probability,
              "skipped": list(skipped), "primary": primary, "scorings": scorings,
              "models": [{key: m.get(key) for key in ("label", "source", "kind", "text_format", "seconds", "notes")}
                         for m in evaluated["models"]],
              "ngram": {"order": 5, "trained_on": "; ".join(next(m["notes"] for m in evaluated["models"]
                                                                 if m["label"] == NGRAM))
                        # The package holds only the start of the text the shipped checkpoints read.
                        + ("" if ngram_files else ", the start of the WikiText-2 training text that the shipped "
                           "checkpoints read whole")},
              "device": device, "order_pairs": None, "blimp": None}
    if order:
        entries = {}
        for name, outcome in part(len(blimp), len(blimp) + len(order)).items():
            units = outcome.right
            low, high = seed_and_unit_interval("sentence_pairs", [units], n=resamples, seed=seed)
            entries[name] = {**scorings[name], "score": float(units.mean()), "interval": [low, high],
                             "ties": int(outcome.tie.sum()), "units": units.tolist()}
        result["order_pairs"] = {"file": str(order_file), "pairs": len(order), "systems": entries}
    if blimp:
        published = load_published()
        subset = part(0, len(blimp))
        summary = summarize(blimp, subset, resamples=resamples, seed=seed, canonical=canonical_groups(published))
        systems = {name: {**scorings[name], "overall": entry["overall"], "fields": entry["fields"],
                          "phenomena": entry["phenomena"]} for name, entry in summary.items()}
        rows = published_summary(blimp, published)
        present = [s for s in GRAMMAR_ORDER if s in primary]
        differences = []
        for lower, higher in zip(present, present[1:]):
            difference = paired_difference(blimp, subset[primary[higher]], subset[primary[lower]], resamples, seed)
            differences.append({"lower": lower, "higher": higher,
                                "lower_score": systems[primary[lower]]["overall"]["accuracy"],
                                "higher_score": systems[primary[higher]]["overall"]["accuracy"],
                                "difference": difference["difference"],
                                "interval": [difference["low"], difference["high"]]})
        result["blimp"] = {
            "file": str(sample), "pairs": len(blimp), "pairs_per_paradigm": n,
            "paradigms": len({p.paradigm for p in blimp}), "systems": systems,
            "published": {"source": published["source"], "license": published["license"],
                          "rows": published["rows"],
                          "overall": {row: entry["overall"]["accuracy"] for row, entry in rows.items()}},
            "differences": differences, "resamples": resamples, "seed": seed}
    result["scoring_seconds"] = round(time.perf_counter() - started, 1)
    return result


def versus_supervised(zero_shot: dict | None, finetuning: list, scored: dict, main_size, seed: int) -> dict | None:
    """The best zero-shot system on order_pairs (its primary scoring) against the best supervised cell at the main
    table's size that trained, on the same validation units: ``scoring.compare``'s paired bootstrap (units drawn
    once for both, the cell's seeds with replacement) and outcome. None when either side is missing."""
    import numpy as np

    from .scoring import Scored, compare

    if not zero_shot or zero_shot.get("status") != "ok" or not zero_shot.get("order_pairs"):
        return None
    systems = zero_shot["order_pairs"]["systems"]
    entries = [(system, systems[name]) for system, name in (zero_shot.get("primary") or {}).items()
               if name in systems]
    cells = [c for c in finetuning if c["task"] == ORDER_TASK and c["train_size"] == main_size
             and c["status"] == "ok" and not c.get("flags") and c.get("score") is not None
             and (ORDER_TASK, c["family"], c["variant"], main_size) in scored]
    if not entries or not cells:
        return None
    system, entry = max(entries, key=lambda item: item[1]["score"])  # ties keep the first, in the run's order
    cell = max(cells, key=lambda c: c["score"])
    units = np.asarray(entry["units"], dtype=float)
    mine = Scored({"score": entry["score"], "seed_scores": [entry["score"]]}, units, [units])
    result = compare(ORDER_TASK, mine, scored[(ORDER_TASK, cell["family"], cell["variant"], main_size)], seed=seed)
    return {"zero_shot": system, "zero_shot_score": entry["score"], "family": cell["family"],
            "variant": cell["variant"], "cell_score": cell["score"], "difference": result["difference"],
            "interval": result["interval"], "outcome": result["outcome"]}


def without_units(zero_shot: dict | None) -> dict | None:
    """The stage's result as results.json keeps it: the per-pair outcomes left out (as the cells' are)."""
    if not zero_shot or not zero_shot.get("order_pairs"):
        return zero_shot
    systems = {name: {k: v for k, v in entry.items() if k != "units"}
               for name, entry in zero_shot["order_pairs"]["systems"].items()}
    return {**zero_shot, "order_pairs": {**zero_shot["order_pairs"], "systems": systems}}


def order_pairs_cell(zero_shot: dict | None, system: str) -> dict | None:
    """The order_pairs zero-shot entry of a family (or the n-gram) in its primary scoring; None when not scored."""
    if not zero_shot or zero_shot.get("status") != "ok" or not zero_shot.get("order_pairs"):
        return None
    name = (zero_shot.get("primary") or {}).get(system)
    return zero_shot["order_pairs"]["systems"].get(name) if name else None
