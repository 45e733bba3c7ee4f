"""Minimal-pair scores against the tools researchers use (issue 52, part 4): lm-evaluation-harness' log-likelihoods
for the causal LMs and minicons' pseudo-log-likelihoods for BERT, on the shipped checkpoints, ours and theirs in one
process, the same sentences: the largest score difference, and sentences per second of each (median of --repeats).

Both tools are given the text as our scorer reads it (each model's pretraining text style, e.g. WikiText's
``do n't``), so the comparison is of the scores, not of the text preparation; lm_eval's BLiMP task would feed the raw
sentence. lm_eval prefixes a sentence with the tokenizer's bos, else its eos (``prefix_token_id``); for the NNLM,
whose sentences start after its context-start word, it is given that id (``prefix_token_id=`` in ``--model_args``).

Needs lm_eval and minicons, which hf-lineage does not depend on:

    python -m venv --system-site-packages /tmp/lmeval && /tmp/lmeval/bin/pip install lm_eval minicons
    PYTHONPATH=. /tmp/lmeval/bin/python benchmarks/bench_minimal_pairs_tools.py \\
        --data ../shared/data/blimp --pairs-per-paradigm 4
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time


def cpu_model() -> str:
    for line in open("/proc/cpuinfo", encoding="utf-8"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def timed(function, repeats):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return result, statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="BLiMP jsonl file or folder")
    parser.add_argument("--pairs-per-paradigm", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)

    import torch
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM
    from minicons import scorer as minicons_scorer

    from hf_lineage import checkpoints
    from hf_lineage.minimal_pairs.model_specs import resolve_model
    from hf_lineage.minimal_pairs.pairs import read_pairs
    from hf_lineage.minimal_pairs.scorers import load_scorer

    torch.set_num_threads(args.threads)
    import lm_eval
    from importlib.metadata import version

    print(f"machine: {cpu_model()}, {torch.get_num_threads()} threads, torch {torch.__version__}, lm_eval "
          f"{lm_eval.__version__ if hasattr(lm_eval, '__version__') else version('lm_eval')}, minicons "
          f"{version('minicons')}")
    pairs = read_pairs([args.data], limit=args.pairs_per_paradigm)
    sentences = [s for pair in pairs for s in (pair.good, pair.bad)]
    print(f"{len(pairs)} pairs ({args.pairs_per_paradigm} per paradigm), {len(sentences)} sentences")
    rows = []
    for family in ("gpt", "nnlm"):
        spec = resolve_model(f"{family}={checkpoints.path(family)}")
        ours_scorer = load_scorer(spec)
        texts = [ours_scorer.prepared(s) for s in sentences]
        ours, ours_s = timed(lambda: ours_scorer.score_prepared(texts).variants["sum"], args.repeats)
        harness = HFLM(pretrained=ours_scorer.model, tokenizer=ours_scorer.tokenizer, batch_size=64,
                       prefix_token_id=ours_scorer.start_id)
        requests = [Instance(request_type="loglikelihood", doc={}, arguments=("", text), idx=i)
                    for i, text in enumerate(texts)]
        theirs, theirs_s = timed(lambda: [ll for ll, _ in harness.loglikelihood(requests, disable_tqdm=True)],
                                 args.repeats)
        gap = max(abs(a - b) for a, b in zip(ours, theirs))
        rows.append((family, "sum", "lm_eval HFLM.loglikelihood", gap, len(texts) / ours_s, len(texts) / theirs_s))
    spec = resolve_model(f"bert={checkpoints.path('bert')}")
    ours_scorer = load_scorer(spec)
    texts = [ours_scorer.prepared(s) for s in sentences]
    ours, ours_s = timed(lambda: ours_scorer.score_prepared(texts).variants, args.repeats)
    # minicons (0.3.39) calls ``batch_encode_plus``, which transformers 5 removed; its replacement is the call itself.
    if not hasattr(ours_scorer.tokenizer, "batch_encode_plus"):
        ours_scorer.tokenizer.batch_encode_plus = ours_scorer.tokenizer.__call__
    for variant, metric in (("PLL", "original"), ("PLL-word-l2r", "within_word_l2r")):
        theirs_scorer = minicons_scorer.MaskedLMScorer(ours_scorer.model, "cpu", tokenizer=ours_scorer.tokenizer)
        # The metric goes to sequence_score: the constructor's PLL_metric is not what sequence_score reads.
        theirs, theirs_s = timed(lambda: theirs_scorer.sequence_score(texts, reduction=lambda x: x.sum(0).item(),
                                                                      PLL_metric=metric), args.repeats)
        gap = max(abs(a - b) for a, b in zip(ours[variant], theirs))
        rows.append(("bert", variant, f"minicons MaskedLMScorer({metric})", gap, len(texts) / ours_s,
                     len(texts) / theirs_s))
    print("(ours: one pass gives both BERT scorings, so its rate is the same in both BERT rows)")
    print("\n| model | score | reference | max abs difference (nats) | ours sentences/s | theirs sentences/s | "
          "ours/theirs |\n|---|---|---|---:|---:|---:|---:|")
    for family, variant, reference, gap, ours_rate, theirs_rate in rows:
        print(f"| {family} | {variant} | {reference} | {gap:.2e} | {ours_rate:,.0f} | {theirs_rate:,.0f} | "
              f"{ours_rate / theirs_rate:.2f}× |")
    print(f"\ncommand: {' '.join(sys.argv)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
