"""Accuracy: the fraction of predictions equal to their reference."""

import datasets
import evaluate
import numpy as np

_DESCRIPTION = "Accuracy = (number of predictions equal to the reference) / (number of predictions)."
_KWARGS = """
Args:
    predictions (list of int): predicted labels.
    references (list of int): true labels.
    normalize (bool): return the fraction (default) instead of the count.
    sample_weight (list of float): optional weights.
Returns:
    accuracy (float)
Example:
    >>> metric.compute(predictions=[0, 1, 1], references=[0, 1, 0])
    {'accuracy': 0.6666666666666666}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class Accuracy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION, citation="", inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("int64"), "references": datasets.Value("int64")}),
        )

    def _compute(self, predictions, references, normalize=True, sample_weight=None):
        correct = np.asarray(predictions) == np.asarray(references)
        weights = np.ones(len(correct)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
        total = float((correct * weights).sum())
        return {"accuracy": float(total / weights.sum()) if normalize else total}
