"""seqeval: entity-level precision, recall and F1 for sequence labeling (CoNLL's conlleval scoring)."""

import importlib

import datasets
import evaluate
from seqeval.metrics import accuracy_score, classification_report

_DESCRIPTION = """Entity-level scores as CoNLL-2000's conlleval computes them, via the seqeval package: an entity
counts as correct only if its type and both boundaries match. Also token-level accuracy (for POS tagging)."""
_KWARGS = """
Args:
    predictions (list of list of str): predicted tags per sentence.
    references (list of list of str): true tags per sentence.
    scheme (str): None (conlleval's lenient decoding, default) or "IOB2"/"IOE2"/"IOBES"/... for strict mode.
    mode (str): "strict" to use `scheme` strictly.
    zero_division: value when a ratio is 0/0 (default 0).
Returns:
    overall_precision, overall_recall, overall_f1, overall_accuracy, and for each entity type a dict with
    precision, recall, f1 and number.
Example:
    >>> metric.compute(predictions=[["B-PER", "I-PER", "O"]], references=[["B-PER", "I-PER", "O"]])["overall_f1"]
    1.0
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class Seqeval(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION, citation="", inputs_description=_KWARGS,
            features=datasets.Features({
                "predictions": datasets.Sequence(datasets.Value("string")),
                "references": datasets.Sequence(datasets.Value("string")),
            }),
        )

    def _compute(self, predictions, references, scheme=None, mode=None, zero_division=0, suffix=False):
        if scheme is not None:
            scheme = getattr(importlib.import_module("seqeval.scheme"), scheme)
        report = classification_report(y_true=references, y_pred=predictions, suffix=suffix, output_dict=True,
                                       scheme=scheme, mode=mode, zero_division=zero_division)
        report.pop("macro avg")
        report.pop("weighted avg")
        overall = report.pop("micro avg")
        scores = {
            entity: {"precision": float(s["precision"]), "recall": float(s["recall"]), "f1": float(s["f1-score"]),
                     "number": int(s["support"])}
            for entity, s in report.items()
        }
        scores["overall_precision"] = float(overall["precision"])
        scores["overall_recall"] = float(overall["recall"])
        scores["overall_f1"] = float(overall["f1-score"])
        scores["overall_accuracy"] = float(accuracy_score(y_true=references, y_pred=predictions))
        return scores
