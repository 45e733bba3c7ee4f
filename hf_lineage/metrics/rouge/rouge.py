"""ROUGE (Lin, 2004) F-measures via Google's rouge_score package."""

import datasets
import evaluate
from rouge_score import rouge_scorer, scoring

_DESCRIPTION = "ROUGE-N overlap of n-grams and ROUGE-L longest common subsequence (Lin, 2004), F-measure."
_KWARGS = """
Args:
    predictions (list of str), references (list of str, or list of list of str: the best-scoring reference counts)
    rouge_types (list of str): default ["rouge1", "rouge2", "rougeL", "rougeLsum"] (rougeLsum splits on newlines).
    use_stemmer (bool): Porter stemming before matching.
    use_aggregator (bool): True (default) gives the bootstrap mid F-measure; False one score per example.
Example:
    >>> metric.compute(predictions=["the cat sat"], references=["the cat sat"])["rouge1"]
    1.0
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class Rouge(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION, citation="", inputs_description=_KWARGS,
            features=[
                datasets.Features({"predictions": datasets.Value("string"),
                                   "references": datasets.Sequence(datasets.Value("string"))}),
                datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
            ],
        )

    def _compute(self, predictions, references, rouge_types=None, use_aggregator=True, use_stemmer=False):
        rouge_types = rouge_types or ["rouge1", "rouge2", "rougeL", "rougeLsum"]
        scorer = rouge_scorer.RougeScorer(rouge_types=rouge_types, use_stemmer=use_stemmer)
        aggregator = scoring.BootstrapAggregator() if use_aggregator else None
        per_example = []
        for prediction, reference in zip(predictions, references):
            refs = [reference] if isinstance(reference, str) else list(reference)
            score = scorer.score_multi(refs, prediction)
            if aggregator is not None:
                aggregator.add_scores(score)
            else:
                per_example.append(score)
        if aggregator is not None:
            return {key: float(value.mid.fmeasure) for key, value in aggregator.aggregate().items()}
        return {key: [float(score[key].fmeasure) for score in per_example] for key in rouge_types}
