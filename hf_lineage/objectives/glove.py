"""glove's pre-training objective: what the family decides (vocabulary, config fields) for its own trainer.

    hf-lineage pretrain glove --train-file corpus.txt --output-dir out/glove --config pennington2014 --set epochs=50

The fit is AdaGrad over the non-zero co-occurrence counts, not the engine's batches of token sequences
(``engine_trains = False``): ``pretrain()`` hands every run to ``hf_lineage.word_vector_trainers.glove``
(``train_glove``: counts, then the weighted least squares) with the arguments ``cpu_trainer_arguments`` builds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..models import LineageGloveConfig
from .svd import SvdObjective

if TYPE_CHECKING:  # the trainer's module imports SciPy and numba, read only when it trains
    from ..word_vector_trainers.glove import GloveTrainingArguments


class GloveObjective(SvdObjective):
    """Pennington et al. (2014): svd's word-level vocabulary of the words seen at least ``min_count`` times and its
    counting pass (1/d-weighted), then the weighted least squares (``train_glove``). The config's fields are the
    method's hyperparameters (``--set x_max=50 --set epochs=25``); ``--seed`` seeds the initial vectors and the
    shuffle."""

    family = "glove"
    model_class_name = "LineageGloveModel"
    config_class = LineageGloveConfig

    def cpu_trainer_arguments(self) -> GloveTrainingArguments:
        """The trainer's arguments: the run's vocabulary (``--tokenizer``, or trained here), config fields and seed."""
        from ..word_vector_trainers.glove import GloveTrainingArguments

        svd = super().cpu_trainer_arguments()
        return GloveTrainingArguments(train_files=svd.train_files, output_dir=svd.output_dir, tokenizer=svd.tokenizer,
                                      config_fields=svd.config_fields, seed=svd.seed,
                                      overwrite_output_dir=svd.overwrite_output_dir)
