"""What the experiment commands share (``hf-lineage lineage``, ``hf-lineage xling``, ``hf-lineage evaluate``): a run as
reusable stages (``stages``: each stage's spec, record and folder, jobs in worker processes), the trivial baselines on
the same split (``baselines``: majority, per-word majority, bag of words, edge words) and the uncertainty of a score
(``statistics``: bootstrap intervals over units and seeds, paired differences). Each imports nothing of hf_lineage."""
