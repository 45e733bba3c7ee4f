"""F1: the harmonic mean of precision and recall, binary or averaged over classes (as scikit-learn's f1_score)."""

import datasets
import evaluate
import numpy as np

_DESCRIPTION = "F1 = 2 * precision * recall / (precision + recall), per class or averaged (scikit-learn's definition)."
_KWARGS = """
Args:
    predictions (list of int), references (list of int)
    average (str): "binary" (default; the F1 of pos_label), "macro" (unweighted mean over classes), "micro"
        (from global counts), "weighted" (mean weighted by each class's support), or None (one F1 per class).
    pos_label (int): the positive class for average="binary" (default 1).
    labels (list of int): the classes to average over (default: every class in predictions or references).
Returns:
    f1 (float, or a list for average=None). A class with no predicted and no true examples scores 0.
Example:
    >>> metric.compute(predictions=[0, 1, 1], references=[0, 1, 0], average="macro")
    {'f1': 0.6666666666666666}
"""


def _safe_divide(a, b):
    return np.divide(a, b, out=np.zeros_like(a, dtype=float), where=b != 0)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class F1(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION, citation="", inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("int64"), "references": datasets.Value("int64")}),
        )

    def _compute(self, predictions, references, average="binary", pos_label=1, labels=None):
        predictions, references = np.asarray(predictions), np.asarray(references)
        if average == "binary":
            present = set(np.unique(np.concatenate([predictions, references])).tolist())
            if not present <= {0, 1, pos_label}:
                raise ValueError(f"average='binary' needs two classes, found {sorted(present)}; "
                                 "use average='macro' for more")
            labels = [pos_label]
        elif labels is None:
            labels = np.unique(np.concatenate([predictions, references]))
        labels = np.asarray(labels)
        tp = np.array([np.sum((predictions == c) & (references == c)) for c in labels], dtype=float)
        predicted = np.array([np.sum(predictions == c) for c in labels], dtype=float)
        support = np.array([np.sum(references == c) for c in labels], dtype=float)
        if average == "micro":
            precision, recall = _safe_divide(tp.sum(), predicted.sum()), _safe_divide(tp.sum(), support.sum())
            return {"f1": float(_safe_divide(2 * precision * recall, precision + recall))}
        precision, recall = _safe_divide(tp, predicted), _safe_divide(tp, support)
        f1 = _safe_divide(2 * precision * recall, precision + recall)
        if average in ("binary",):
            return {"f1": float(f1[0])}
        if average == "macro":
            return {"f1": float(f1.mean())}
        if average == "weighted":
            return {"f1": float((f1 * support).sum() / support.sum()) if support.sum() else 0.0}
        if average is None:
            return {"f1": f1.tolist()}
        raise ValueError(f"average must be 'binary', 'macro', 'micro', 'weighted' or None, got {average!r}")
