"""Pre-training, one way down: ``hf-lineage pretrain``'s command line (``cli``), the run's arguments (``arguments``:
``PretrainArguments``, settled and checked once by ``settle_arguments``) and the dispatch (``dispatch``: ``pretrain()``
picks the family's CPU trainer or the engine, ``use_cpu_backend``), above the engine (``hf_lineage.engine``) and the CPU
trainers (``hf_lineage.word_vector_trainers``), which receive the arguments settled and import nothing of this folder::

    python -m hf_lineage.pretraining bert --config tiny --train-file corpus.txt --output-dir out/bert
    accelerate launch --config_file recipes/accelerate/multi_gpu.yaml -m hf_lineage.pretraining bert ...

or from Python::

    from hf_lineage.pretraining import PretrainArguments, pretrain
    pretrain(PretrainArguments(family="bert", train_file=["corpus.txt"], output_dir="out/bert", max_steps=100))
"""

from .arguments import PretrainArguments, PretrainError

__all__ = ["PretrainArguments", "PretrainError", "pretrain", "use_cpu_backend"]


def __getattr__(name):
    # The dispatch imports torch: on first use, so that `hf-lineage pretrain --help` (which reads the arguments)
    # does not.
    if name in ("pretrain", "use_cpu_backend", "BACKENDS"):
        from . import dispatch

        return getattr(dispatch, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
