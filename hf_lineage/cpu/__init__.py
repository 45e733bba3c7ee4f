"""The CPU trainers: families trained by their own code on one machine's cores, not by the engine's loop.

* ``word2vec`` — the C tool's Hogwild SGD (``word2vec.py``, ``hf_lineage.train_word2vec``), its numba kernels on
  plain arrays (``word2vec_kernels.py``, importing nothing from the package) and the vocabulary's tables
  (``word2vec_sampling.py``: counts, Huffman tree, noise distribution, subsampling), which the engine's word2vec
  objective and its collator read too;
* ``svd`` — co-occurrence counts, PPMI and a truncated SVD (``svd.py``, ``hf_lineage.train_svd``, on
  ``cooccurrence.py``): nothing the engine could step.

``hf_lineage.engine.pretrain`` chooses, first thing, between one of these and the engine (``--backend``:
``use_cpu_backend``), and calls the chosen one.
"""

import importlib

# family -> "module:function" that trains it from ``hf-lineage pretrain``'s arguments: ``function(args, objective)``
# returns the output directory. Imported when a run takes it: numba and scikit-learn load only then.
CPU_TRAINERS = {
    "word2vec": "hf_lineage.cpu.word2vec:pretrain_word2vec",
    "svd": "hf_lineage.cpu.svd:pretrain_svd",
}


def cpu_trainer(family: str):
    """The family's CPU trainer function (``CPU_TRAINERS``)."""
    module, name = CPU_TRAINERS[family].split(":")
    return getattr(importlib.import_module(module), name)
