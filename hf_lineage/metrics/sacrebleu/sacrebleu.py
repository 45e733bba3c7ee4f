"""sacreBLEU: corpus BLEU with standard tokenization (Post, 2018), via the sacrebleu package."""

import datasets
import evaluate
import sacrebleu as scb

_DESCRIPTION = "Corpus-level BLEU computed by sacreBLEU, so scores are comparable across papers (Post, 2018)."
_KWARGS = """
Args:
    predictions (list of str): one hypothesis per example.
    references (list of list of str): one or more references per example (all examples the same number).
    tokenize (str): sacreBLEU tokenizer ("13a" default, "intl", "char", "none", ...).
    lowercase (bool), smooth_method (str), smooth_value (float), force (bool), use_effective_order (bool)
Returns:
    score (BLEU, 0-100), counts, totals, precisions, bp, sys_len, ref_len
Example:
    >>> metric.compute(predictions=["a cat sat on the mat"], references=[["a cat sat on the mat"]])["score"]
    100.00000000000004
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class Sacrebleu(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION, citation="", inputs_description=_KWARGS,
            features=datasets.Features({
                "predictions": datasets.Value("string"),
                "references": datasets.Sequence(datasets.Value("string")),
            }),
        )

    def _compute(self, predictions, references, smooth_method="exp", smooth_value=None, force=False,
                 lowercase=False, tokenize=None, use_effective_order=False):
        counts = {len(refs) for refs in references}
        if len(counts) > 1:
            raise ValueError("sacreBLEU needs the same number of references for every prediction")
        # sacrebleu wants one list per reference position: [[ref 1 of each example], [ref 2 of each], ...]
        transposed = [[refs[i] for refs in references] for i in range(counts.pop() if counts else 0)]
        bleu = scb.corpus_bleu(predictions, transposed, smooth_method=smooth_method, smooth_value=smooth_value,
                               force=force, lowercase=lowercase, use_effective_order=use_effective_order,
                               **({} if tokenize is None else {"tokenize": tokenize}))
        return {"score": bleu.score, "counts": bleu.counts, "totals": bleu.totals, "precisions": bleu.precisions,
                "bp": bleu.bp, "sys_len": bleu.sys_len, "ref_len": bleu.ref_len}
