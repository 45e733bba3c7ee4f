"""Fast CPU kernels written with numba, on plain arrays (kept out of ``hf_lineage.models``, whose files ship with the
weights). They import nothing from the package: the objectives level builds models and tokenizers and calls them
(``hf_lineage.train_word2vec`` is ``hf_lineage.objectives.word2vec_cpu``)."""
