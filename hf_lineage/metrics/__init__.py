"""Metrics as ``evaluate`` modules that load from the package, with no network.

``evaluate.load("accuracy")`` downloads the metric's script from the Hub; these are the same metrics as local
modules, so ``evaluate.load(path)`` works offline and in CI::

    >>> from hf_lineage import metrics
    >>> metrics.load("seqeval").compute(predictions=[["B-PER", "O"]], references=[["B-PER", "O"]])["overall_f1"]
    1.0
    >>> import evaluate; evaluate.load(metrics.path("accuracy"))  # the same module through evaluate itself

Shipped: ``accuracy``, ``f1`` (binary, or macro/micro/weighted averages over any number of classes), ``seqeval``
(entity precision/recall/F1 over IOB/IOB2 tags, plus token accuracy), ``sacrebleu`` (corpus BLEU) and ``rouge``
(ROUGE-1/2/L/Lsum F-measures) and ``squad`` (exact match and F1 of extractive answers, SQuAD v1.1 / v2.0). seqeval,
sacreBLEU and rouge_score do the scoring, as in the Hub's modules.
"""

from pathlib import Path

import evaluate

METRICS = ("accuracy", "f1", "seqeval", "sacrebleu", "rouge", "squad")


def path(name: str) -> str:
    """Folder of a shipped metric, for ``evaluate.load``."""
    if name not in METRICS:
        raise ValueError(f"Unknown metric {name!r}; shipped metrics: {', '.join(METRICS)}")
    return str(Path(__file__).parent / name)


def load(name: str, **kwargs) -> evaluate.EvaluationModule:
    """``evaluate.load`` of a shipped metric (no network)."""
    return evaluate.load(path(name), **kwargs)
