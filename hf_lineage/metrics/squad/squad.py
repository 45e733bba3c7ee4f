# An evaluate metric module; load it with hf_lineage.metrics.load("squad").
"""SQuAD: exact match and token F1 of extractive answers, with the official script's normalisation (v1.1 and v2.0).

Answers are normalised as SQuAD's evaluation scripts do: lower case, punctuation removed, the articles a/an/the
removed, whitespace collapsed. A prediction scores the best over its gold answers. A question without gold
answers (SQuAD 2.0's unanswerable ones) counts as answered right only by the empty prediction, as the v2.0 script
scores it; with any such question, or ``version_2=True``, the scores are also given separately for the answerable
(``HasAns_*``) and the unanswerable (``NoAns_*``) questions.
"""

import collections
import re
import string

import datasets
import evaluate

_DESCRIPTION = "SQuAD exact match and F1 (0-100), with SQuAD 2.0's HasAns/NoAns breakdown for unanswerable questions."
_KWARGS = """
Args:
    predictions (list of dict): {"id": str, "prediction_text": str} per question ("" = no answer).
    references (list of dict): {"id": str, "answers": {"text": [str, ...], "answer_start": [int, ...]}} per
        question, as in Hugging Face's squad / squad_v2 datasets; empty lists for an unanswerable question.
    version_2 (bool): report HasAns/NoAns scores even when every question has an answer.
Returns:
    exact_match, f1 (percentages), total; with unanswerable questions or version_2 also HasAns_exact_match,
    HasAns_f1, HasAns_total, NoAns_exact_match, NoAns_f1, NoAns_total.
Example:
    >>> metric.compute(predictions=[{"id": "1", "prediction_text": "the Eiffel Tower"}],
    ...                references=[{"id": "1", "answers": {"text": ["Eiffel Tower"], "answer_start": [0]}}])
    {'exact_match': 100.0, 'f1': 100.0, 'total': 1}
"""
_CITATION = """@inproceedings{rajpurkar-etal-2016-squad, title = "{SQ}u{AD}: 100,000+ Questions for Machine
Comprehension of Text", author = "Rajpurkar, Pranav and Zhang, Jian and Lopyrev, Konstantin and Liang, Percy",
booktitle = "EMNLP", year = "2016"}"""

ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower case, no punctuation, no articles, single spaces (SQuAD's ``normalize_answer``)."""
    text = "".join(ch for ch in text.lower() if ch not in PUNCTUATION)
    return " ".join(ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> int:
    return int(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    predicted, expected = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not predicted or not expected:  # v2.0: both empty is right, one empty is wrong
        return float(predicted == expected)
    common = sum((collections.Counter(predicted) & collections.Counter(expected)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class Squad(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION, citation=_CITATION, inputs_description=_KWARGS,
            features=datasets.Features({
                "predictions": {"id": datasets.Value("string"), "prediction_text": datasets.Value("string")},
                "references": {"id": datasets.Value("string"),
                               "answers": datasets.Sequence({"text": datasets.Value("string"),
                                                             "answer_start": datasets.Value("int32")})},
            }),
        )

    def _compute(self, predictions, references, version_2=False):
        predicted = {p["id"]: p["prediction_text"] for p in predictions}
        groups = {"HasAns": [], "NoAns": []}
        for reference in references:
            if reference["id"] not in predicted:
                raise ValueError(f"No prediction for question {reference['id']!r}")
            golds = [t for t in reference["answers"]["text"] if normalize_answer(t)] or [""]
            prediction = predicted[reference["id"]]
            scores = (max(exact_match(prediction, g) for g in golds), max(token_f1(prediction, g) for g in golds))
            groups["HasAns" if golds != [""] else "NoAns"].append(scores)

        def summary(rows, prefix=""):
            n = len(rows)
            return {f"{prefix}exact_match": 100.0 * sum(r[0] for r in rows) / n if n else 0.0,
                    f"{prefix}f1": 100.0 * sum(r[1] for r in rows) / n if n else 0.0, f"{prefix}total": n}

        result = summary(groups["HasAns"] + groups["NoAns"])
        if version_2 or groups["NoAns"]:
            result.update(summary(groups["HasAns"], "HasAns_"))
            result.update(summary(groups["NoAns"], "NoAns_"))
        return result
