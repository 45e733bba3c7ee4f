"""svd's pre-training objective: what the family decides (vocabulary, config fields) for its own trainer.

    hf-lineage pretrain svd --train-file corpus.txt --output-dir out/svd --config levy2015 --set window=2

Nothing is trained by gradient descent, so the engine has no part in it (``engine_trains = False``): ``pretrain()``
hands every run to ``hf_lineage.word_vector_trainers.svd`` (``train_svd``: counts, PPMI and a truncated SVD) with the
arguments ``cpu_trainer_arguments`` builds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..word_vector_trainers.word2vec_sampling import check_vocabulary, trainable_counts
from ..models import LineageSvdConfig
from ..tokenization import train_wordlevel_tokenizer
from ..tokenization.trainers import WORD_COUNTS_KEY
from . import PretrainingObjective

if TYPE_CHECKING:  # the trainer's module imports SciPy and numba, read only when it trains
    from ..word_vector_trainers.svd import SvdTrainingArguments


class SvdObjective(PretrainingObjective):
    """Levy et al. (2015): a word-level vocabulary of the words seen at least ``min_count`` times, one pass over the
    corpus to count, then PPMI and a truncated SVD (``train_svd``). The config's fields are the method's
    hyperparameters (``--set window=2 --set eig=0``); ``--seed`` seeds the randomized SVD."""

    family = "svd"
    model_class_name = "LineageSvdModel"
    config_class = LineageSvdConfig  # whose named sizes and min_count this reads (glove's objective: its own)
    defaults = dict(PretrainingObjective.defaults, vocab_size=None)  # the vocabulary is min_count's
    tiny_defaults = {}
    engine_trains = False
    # The engine's options: a factorisation has no steps, batches, optimiser, checkpoints or validation loss.
    cpu_backend_ignores = (
        "dataset_name", "streaming", "resume_from", "max_steps", "max_train_seconds", "max_seq_length",
        "per_device_batch_size", "per_device_eval_batch_size", "gradient_accumulation_steps", "learning_rate",
        "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon", "lr_scheduler", "warmup_ratio", "warmup_steps",
        "max_grad_norm", "checkpoint_every", "eval_every", "num_epochs", "validation_file", "stream_buffer_documents",
        "dataloader_num_workers", "torch_compile",
    )

    def config_fields(self) -> dict:
        return {**self.config_class.named_sizes[self.args.config], **self.args.overrides}

    def train_tokenizer(self, files, texts):
        min_count = self.config_fields().get("min_count", self.config_class.min_count)
        tokenizer = train_wordlevel_tokenizer(files=files, iterator=texts, min_count=min_count,
                                              max_vocab_size=self.args.vocab_size)
        check_vocabulary(trainable_counts(tokenizer.init_kwargs[WORD_COUNTS_KEY], tokenizer.all_special_ids,
                                          min_count), min_count)
        return tokenizer

    def cpu_trainer_arguments(self) -> SvdTrainingArguments:
        """The trainer's arguments: the run's vocabulary (``--tokenizer``, or trained here), config fields and seed."""
        from ..word_vector_trainers.svd import SvdTrainingArguments

        args = self.args
        if args.tokenizer:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
        else:
            tokenizer = self.train_tokenizer(args.train_file, None)
        return SvdTrainingArguments(train_files=list(args.train_file), output_dir=args.output_dir, tokenizer=tokenizer,
                                    config_fields=self.config_fields(), seed=args.seed,
                                    overwrite_output_dir=args.overwrite_output_dir)
