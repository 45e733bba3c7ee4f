"""svd's pre-training objective: what the family decides (vocabulary, config fields) for its own trainer.

    hf-lineage pretrain svd --train-file corpus.txt --output-dir out/svd --config levy2015 --set window=2

Nothing is trained by gradient descent, so the engine has no part in it (``engine_trains = False``): ``pretrain()``
hands every run to ``hf_lineage.cpu.svd`` (``train_svd``: counts, PPMI and a truncated SVD).
"""

from __future__ import annotations

from ..cpu.word2vec_sampling import check_vocabulary, trainable_counts
from ..models import LineageSvdConfig
from ..tokenization import train_wordlevel_tokenizer
from ..tokenization.trainers import WORD_COUNTS_KEY
from . import PretrainingObjective


class SvdObjective(PretrainingObjective):
    """Levy et al. (2015): a word-level vocabulary of the words seen at least ``min_count`` times, one pass over the
    corpus to count, then PPMI and a truncated SVD (``train_svd``). The config's fields are the method's
    hyperparameters (``--set window=2 --set eig=0``); ``--seed`` seeds the randomized SVD."""

    family = "svd"
    model_class_name = "LineageSvdModel"
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
        return {**LineageSvdConfig.named_sizes[self.args.config], **self.args.overrides}

    def train_tokenizer(self, files, texts):
        min_count = self.config_fields().get("min_count", LineageSvdConfig.min_count)
        tokenizer = train_wordlevel_tokenizer(files=files, iterator=texts, min_count=min_count,
                                              max_vocab_size=self.args.vocab_size)
        check_vocabulary(trainable_counts(tokenizer.init_kwargs[WORD_COUNTS_KEY], tokenizer.all_special_ids,
                                          min_count), min_count)
        return tokenizer
