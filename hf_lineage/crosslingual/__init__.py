"""``hf-lineage xling``: multilingual BERT's zero-shot cross-lingual transfer, measured (after Pires et al. 2019).

An experiment of its own beside the lineage's, built from its pieces (settings and scales, stages, the labeling
fine-tuning cell, baselines and statistics): ``transfer`` runs it (pre-training, English fine-tuning, zero-shot
tagging, in-language ceilings), ``transfer_report`` scores and reports it, ``cli`` is its command line.
"""
