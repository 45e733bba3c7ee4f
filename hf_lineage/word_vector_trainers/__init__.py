"""The word-vector trainers: static word vectors trained by their own code on one machine's CPU cores, not by the
engine's loop.

* ``word2vec`` — the C tool's Hogwild SGD (``word2vec.py``, ``hf_lineage.train_word2vec``), its numba kernels on
  plain arrays (``word2vec_kernels.py``, importing nothing from the package) and the vocabulary's tables
  (``word2vec_sampling.py``: counts, Huffman tree, noise distribution, subsampling), which the engine's word2vec
  objective and its collator read too;
* ``svd`` — co-occurrence counts, PPMI and a truncated SVD (``svd.py``, ``hf_lineage.train_svd``, on
  ``cooccurrence.py``): nothing the engine could step.
* ``glove`` — GloVe's weighted least squares on the same counts, 1/d-weighted (``glove.py``,
  ``hf_lineage.train_glove``): AdaGrad over the non-zero counts in a numba kernel, not over token sequences.

A family names its trainer in its registry entry (``hf_lineage.registry.Family.cpu_trainer``);
``hf_lineage.pretraining.pretrain`` chooses between it and the engine (``--backend``: ``use_cpu_backend``) and
calls the trainer with its own typed arguments (``Word2VecTrainingArguments``, ``SvdTrainingArguments``,
``GloveTrainingArguments``), which the
family's objective builds. Nothing here reads the engine's ``PretrainArguments`` or imports ``hf_lineage.engine``.
"""
