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

One job per model and pair set (``stages/zero-shot-<system>-<pairs>``), each reused like the other stages while its
model, weights and pairs are unchanged; the jobs run in the fine-tuning workers beside the cells (a large model's
scoring is among the run's longest jobs, so it starts first), and the main process puts their per-pair outcomes
together. The stage uses the first seed's pretrained models (zero-shot scoring has no fine-tuning seed): 37 s for the
shipped checkpoints on a 2-core CPU (docs/lineage.md, "Wall time"); at full size BERT-base's PLL is most of it, about
40 one-thread minutes for both pair sets (docs/published.md). A folder without a sentence probability (word vectors, a
converted AllenNLP ELMo: the release has no softmax) is listed with the reason, not scored.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..minimal_pairs.model_specs import DEFAULT_NGRAM_ORDER, NGRAM, VECTORS_WHY
from .settings import BLIMP_SAMPLE_PAIRS, LINEAGE_FAMILIES, family_label

ORDER_TASK = "order_pairs"
# The pairs per paradigm the grammar section scores by default: all of the embedded sample's (docs/lineage.md, "Wall
# time", for what the stage costs).
BLIMP_PAIRS = BLIMP_SAMPLE_PAIRS
NGRAM_LABEL = f"Kneser-Ney {DEFAULT_NGRAM_ORDER}-gram"


def grammar_order() -> tuple[str, ...]:
    """The claimed order of the grammar claim: the count-based n-gram first, then the lineage's language models
    (``LineageFamily.in_grammar_claim``) in lineage order."""
    return (NGRAM, *(family for family, spec in LINEAGE_FAMILIES.items() if spec.in_grammar_claim))


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


@dataclass
class ZeroShotPlan:
    """The zero-shot stage as jobs: one per language model (and the n-gram) and pair set, each its own stage
    (``stages/zero-shot-<system>-<pairs>``, reused while its model, weights and pairs are unchanged), so that they run
    in the fine-tuning workers beside the cells (``experiment.run_finetuning_stages``), and ``combine`` puts their
    outcomes together in the main process (accuracies, intervals, differences: cheap)."""

    models: dict  # family -> folder, every family asked (word vectors too: listed as having no probability)
    order_file: str | None
    sample: Path | None
    n: int
    ngram_files: list | None
    seed: int
    unscored: dict  # label -> why it has no sentence probability (static vectors, a release without its softmax)
    jobs: list  # (name, spec, work) for ``Stages.run_many``
    costs: list  # each job's estimated seconds on one CPU thread, for the pool's longest-first order

    def weighed_jobs(self) -> list:
        """[(job, estimated seconds)], as ``experiment.run_finetuning_stages`` takes them."""
        return list(zip(self.jobs, self.costs))

    def combine(self, records: list[dict], resamples: int = 1000) -> dict:
        """The stage's result from the jobs' records (``jobs``' order): the status, error, seconds (summed over the
        jobs, worker-seconds) and reuse of them all, and ``summarize_zero_shot``'s summary when every job ran."""
        failed = [r for r in records if r["status"] != "ok"]
        record = {"status": "failed" if failed else "ok", "error": failed[0]["error"] if failed else None,
                  "seconds": round(sum(r["seconds"] or 0 for r in records), 1),
                  "reused": bool(records) and all(r.get("reused") for r in records)}
        if failed:
            return record
        return {**record, **summarize_zero_shot([r["result"] for r in records], [job[1] for job in self.jobs],
                                                self, resamples)}


def plan_zero_shot(pretraining: dict, task_data: dict, args, ngram_files=None) -> ZeroShotPlan | None:
    """The jobs of the ``zero-shot`` stage on each family's first-seed model that pretrained; None when there is
    nothing to score. ``ngram_files``: the n-gram's training text (None: the embedded WikiText-2 sample)."""
    from ..minimal_pairs.model_specs import resolve_model
    from ..minimal_pairs.pairs import embedded_sample

    models = {family: records[0]["model"] for family, records in pretraining.items()
              if records and records[0]["status"] == "ok"}
    order = task_data.get(ORDER_TASK) or {}
    order_file = order["files"]["validation"] if order.get("status") == "ok" else None
    n = blimp_pairs(args)
    sample = embedded_sample() if n else None
    if not order_file and not sample:
        return None
    sets = ([("blimp", str(sample), {"pairs_per_paradigm": n})] if sample else []) + (
        [(ORDER_TASK, order_file, {})] if order_file else [])
    specs = {family: resolve_model(f"{family}={folder}") for family, folder in models.items()}
    specs[NGRAM] = resolve_model(f"{NGRAM}={NGRAM}:{DEFAULT_NGRAM_ORDER}", ngram_train_files=ngram_files)
    unscored = {label: spec.why_no_probability for label, spec in specs.items() if not spec.sentence_probability}
    jobs, costs = [], []
    for label, spec in specs.items():
        if label in unscored:
            continue
        weights = pretraining[label][0].get("weights_sha256") if label in pretraining else None
        for pair_set, file, extra in sets:
            job_spec = {"system": label, "model": models.get(label), "weights": weights, "pairs": pair_set,
                        "file": file, "sha256": _sha256(file), **extra,
                        **({"ngram": {"order": DEFAULT_NGRAM_ORDER, "files": list(ngram_files or []),
                                      "sha256": [_sha256(f) for f in ngram_files or []]}} if label == NGRAM else {})}
            work = functools.partial(score_pair_set, spec.argument, pair_set, file, n, ngram_files,
                                     cache_file=cache_file(job_spec))
            jobs.append((f"zero-shot-{label}-{pair_set}", job_spec, work))
            costs.append(scoring_seconds(spec, pair_set, n, order.get("validation_examples") or 0))
    return ZeroShotPlan(models, order_file, sample, n, list(ngram_files) if ngram_files else None, args.seed,
                        unscored, jobs, costs)


def run_zero_shot_stage(stages, pretraining: dict, task_data: dict, args, ngram_files=None, workers: int = 0
                        ) -> dict | None:
    """The whole stage on its own: ``plan_zero_shot``'s jobs (``workers`` at a time; 0: in this process), combined.
    ``hf-lineage lineage`` runs the jobs in its fine-tuning pool instead."""
    plan = plan_zero_shot(pretraining, task_data, args, ngram_files)
    if plan is None:
        return None
    return plan.combine(stages.run_many(plan.jobs, workers))


# One-thread seconds of the scorings at BERT-base's 110 M parameters, measured on the 2-core Zen 3 (2026-12-06,
# full-size stand-ins, docs/published.md): PLL scores a sentence of t tokens with t masked copies of t tokens,
# 2.7 ms per copy-token; a causal LM or ELMo reads it once, about 4.5 ms a token (the vocabulary layer at every
# position). Sentences: BLiMP's about 11 tokens, order_pairs' (UD EWT) about 17.
PLL_SECONDS_PER_TOKEN = 2.7e-3 / 110e6  # per copy-token and parameter
READ_SECONDS_PER_TOKEN = 4.5e-3 / 110e6  # per token and parameter
SENTENCE_TOKENS = {"blimp": 11, ORDER_TASK: 17}


def scoring_seconds(spec, pair_set: str, n: int, validation_examples: int) -> float:
    """A rough estimate of one job's seconds on one CPU thread (the n-gram's and small models' are a few seconds)."""
    from ..minimal_pairs.model_specs import pretraining_record

    if spec.kind == "ngram" or spec.folder is None:
        return 5.0
    parameters = pretraining_record(spec.folder).get("parameters") or 0
    sentences = 2 * (67 * n if pair_set == "blimp" else validation_examples)
    tokens = SENTENCE_TOKENS[pair_set]
    if spec.kind == "masked":
        return 5.0 + sentences * tokens * tokens * parameters * PLL_SECONDS_PER_TOKEN
    return 5.0 + sentences * tokens * parameters * READ_SECONDS_PER_TOKEN


def estimated_seconds(folders: dict, tasks, args, validation_examples: int) -> float:
    """The zero-shot jobs' estimated one-thread seconds in all, for the plan printed at a run's start (``folders``:
    family -> its model folder)."""
    from ..minimal_pairs.model_specs import resolve_model

    sets = (["blimp"] if blimp_pairs(args) else []) + ([ORDER_TASK] if ORDER_TASK in tasks else [])
    specs = [resolve_model(f"{family}={folder}") for family, folder in folders.items()]
    return sum(scoring_seconds(spec, pair_set, blimp_pairs(args), validation_examples)
               for spec in specs if spec.sentence_probability for pair_set in sets) + 5.0 * len(sets)


def cache_file(job_spec: dict) -> Path | None:
    """Where a job's result is kept across runs and run folders: ``$HF_LINEAGE_CACHE/zero-shot/<key>.json``, the key
    a hash of what makes the result what it is (the model's weights, the pairs' content, the n-gram's text, this
    package's version; not the paths), as the frozen layers' memo keys by content. None for a model whose weights
    have no hash (one this run pretrains: its stage is reused within the run folder only)."""
    from .. import __version__
    from ..convert.sources import cache_root

    if job_spec["system"] != NGRAM and not job_spec.get("weights"):
        return None
    key = {name: value for name, value in job_spec.items() if name not in ("model", "file")}
    if "ngram" in key:
        key["ngram"] = {name: value for name, value in key["ngram"].items() if name != "files"}
    digest = hashlib.sha256(json.dumps({**key, "version": __version__}, sort_keys=True).encode()).hexdigest()
    return cache_root() / "zero-shot" / f"{digest[:32]}.json"


def score_pair_set(argument: str, pair_set: str, file: str, n: int, ngram_files, folder=None,
                   device: str | None = None, cache_file: Path | None = None) -> dict:
    """One job: the model of ``argument`` (``minimal_pairs.model_specs.resolve_model``) on one pair set (``"blimp"``:
    the first ``n`` pairs of each paradigm of ``file``; ``order_pairs``: the validation file's rows). JSON-ready:
    the model's entry, its scorings and every pair's outcome. ``folder``: the stage's (unused: nothing is written);
    ``cache_file``: read instead of scoring when it is there (``"cached": True``), written when scored."""
    if cache_file is not None and Path(cache_file).is_file():
        try:
            cached = json.loads(Path(cache_file).read_text())
            from ..minimal_pairs.model_specs import resolve_model

            # The same weights under another path (another run folder): this run's path is the one to show.
            cached["model"]["source"] = resolve_model(argument, ngram_train_files=ngram_files).source
            return {**cached, "cached": True}
        except (ValueError, KeyError, TypeError):
            pass  # not JSON (written by something else): scored again and replaced
    result = _score_pair_set(argument, pair_set, file, n, ngram_files, device)
    if cache_file is not None:
        cache_file = Path(cache_file)
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        partial = cache_file.with_name(f"{cache_file.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps(result))
        partial.replace(cache_file)  # whole or absent, also with two runs writing it at once
    return {**result, "cached": False}


def _score_pair_set(argument, pair_set, file, n, ngram_files, device) -> dict:
    import torch

    from ..minimal_pairs.model_specs import resolve_model
    from ..minimal_pairs.pairs import read_pairs
    from ..minimal_pairs.zero_shot import evaluate_models

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    # One torch thread on a CPU, as the fine-tuning workers: the shipped models gain little from a second thread, and
    # with anything else on the cores two threads ran this stage 7x slower (286 s against 40 s, docs/lineage.md).
    threads = torch.get_num_threads()
    if device == "cpu":
        torch.set_num_threads(1)
    try:
        spec = resolve_model(argument, ngram_train_files=ngram_files)
        pairs = read_pairs(file, limit=n) if pair_set == "blimp" else order_pairs_as_minimal_pairs(file)
        evaluated = evaluate_models([spec], pairs, device=device, ngram_train_files=ngram_files, resamples=0)
    finally:
        torch.set_num_threads(threads)
    [model] = evaluated["models"]
    outcomes = evaluated["pair_outcomes"]
    return {"model": {key: model.get(key) for key in ("label", "source", "kind", "text_format", "seconds", "notes")},
            "device": device,
            "systems": {name: {"variant": entry["variant"], "scoring": entry["scoring"]}
                        for name, entry in evaluated["systems"].items()},
            "right": {name: outcome.right.tolist() for name, outcome in outcomes.items()},
            "tie": {name: outcome.tie.tolist() for name, outcome in outcomes.items()}}


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


def summarize_zero_shot(results: list[dict], job_specs: list[dict], plan: ZeroShotPlan, resamples: int = 1000
                        ) -> dict:
    """Both pair sets summarised apart from the jobs' ``score_pair_set`` results (``job_specs``: which system and pair
    set each is). JSON-ready; ``order_pairs.systems[*].units`` are the per-pair outcomes (1, 0, 0.5 for a tie) that
    ``experiment`` keeps out of results.json."""
    import numpy as np

    from ..minimal_pairs.pairs import read_pairs
    from ..minimal_pairs.scorers import SCORERS
    from ..minimal_pairs.tallies import (
        PairOutcomes,
        canonical_groups,
        load_published,
        paired_difference,
        published_summary,
        summarize,
    )
    from ..experiments.statistics import seed_and_unit_interval

    seed = plan.seed
    models, primary, scorings, outcomes = {}, {}, {}, {"blimp": {}, ORDER_TASK: {}}
    for result, job in zip(results, job_specs):
        model = result["model"]
        if model["label"] in models:  # the same model's other pair set: its time adds up
            models[model["label"]]["seconds"] = round(models[model["label"]]["seconds"] + model["seconds"], 1)
        else:
            models[model["label"]] = dict(model)
        for name, entry in result["systems"].items():
            scorings[name] = {"system": model["label"], **entry}
            if entry["variant"] == SCORERS[model["kind"]].primary:  # the table's main column and the claim's
                primary[model["label"]] = name
            outcomes[job["pairs"]][name] = PairOutcomes(np.asarray(result["right"][name], dtype=float),
                                                         np.asarray(result["tie"][name], dtype=bool))
    order = [label for label in (*plan.models, NGRAM) if label in models or label in plan.unscored]
    listed = [models.get(label) or {"label": label, "source": plan.models.get(label),
                                    "kind": "vectors" if plan.unscored[label] == VECTORS_WHY else "unscored",
                                    "text_format": None, "seconds": 0.0, "notes": [plan.unscored[label]]}
              for label in order]
    result = {"systems": order, "no_sentence_probability": [label for label in order if label in plan.unscored],
              "jobs": len(results), "jobs_from_cache": sum(bool(r.get("cached")) for r in results),
              "why_no_sentence_probability": {label: plan.unscored[label] for label in order
                                              if label in plan.unscored},
              "primary": primary, "scorings": scorings, "models": listed,
              "ngram": {"order": DEFAULT_NGRAM_ORDER,
                        "trained_on": "; ".join(models[NGRAM]["notes"])
                        # The package holds only the start of the text the shipped checkpoints read.
                        + ("" if plan.ngram_files else ", the start of the WikiText-2 training text that the shipped "
                           "checkpoints read whole")},
              "device": next((r["device"] for r in results), "cpu"), "order_pairs": None, "blimp": None}
    if plan.order_file:
        entries = {}
        for name, outcome in outcomes[ORDER_TASK].items():
            units = outcome.right
            low, high = seed_and_unit_interval("sentence_pairs", [units], n=resamples, seed=seed)
            entries[name] = {**scorings[name], "score": float(units.mean()), "interval": [low, high],
                             "ties": int(outcome.tie.sum()), "units": units.tolist()}
        pairs = len(next(iter(outcomes[ORDER_TASK].values())).right) if entries else 0
        result["order_pairs"] = {"file": str(plan.order_file), "pairs": pairs, "systems": entries}
    if plan.sample:
        blimp = read_pairs(plan.sample, limit=plan.n)
        published = load_published()
        subset = outcomes["blimp"]
        summary = summarize(blimp, subset, resamples=resamples, seed=seed, canonical=canonical_groups(published))
        systems = {name: {**scorings[name], "overall": entry["overall"], "fields": entry["fields"],
                          "phenomena": entry["phenomena"]} for name, entry in summary.items()}
        rows = published_summary(blimp, published)
        present = [s for s in grammar_order() if s in primary]
        differences = []
        for lower, higher in zip(present, present[1:]):
            difference = paired_difference(blimp, subset[primary[higher]], subset[primary[lower]], resamples, seed)
            differences.append({"lower": lower, "higher": higher,
                                "lower_score": systems[primary[lower]]["overall"]["accuracy"],
                                "higher_score": systems[primary[higher]]["overall"]["accuracy"],
                                "difference": difference["difference"],
                                "interval": [difference["low"], difference["high"]]})
        result["blimp"] = {
            "file": str(plan.sample), "pairs": len(blimp), "pairs_per_paradigm": plan.n,
            "paradigms": len({p.paradigm for p in blimp}), "systems": systems,
            "published": {"source": published["source"], "license": published["license"],
                          "rows": published["rows"],
                          "overall": {row: entry["overall"]["accuracy"] for row, entry in rows.items()}},
            "differences": differences, "resamples": resamples, "seed": seed}
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
