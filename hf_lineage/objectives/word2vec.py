"""word2vec's pre-training objective: what the family decides on the engine (``--backend engine``).

    hf-lineage pretrain word2vec --backend engine --set architecture=skipgram --train-file ... --output-dir ...

The engine and word2vec's CPU trainer (``hf_lineage.word_vector_trainers.word2vec``, ``hf_lineage.train_word2vec``)
train the same model on the same vocabulary and write the same folder (model, tokenizer, ``train_results.json``);
``hf_lineage.pretraining.pretrain`` picks between them (``--backend``). The CPU trainer's arguments
(``cpu_trainer_arguments``: tokenizer, config fields and validation loss) come from this objective; both take their
vocabulary tables from ``hf_lineage.word_vector_trainers.word2vec_sampling``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from ..word_vector_trainers.word2vec_sampling import (
    MAX_SENTENCE_WORDS,
    DataCollatorForWord2Vec,
    check_vocabulary,
    chunk_sentence,
    trainable_counts,
)
from ..models import LineageWord2VecConfig
from ..tokenization import train_wordlevel_tokenizer
from ..tokenization.trainers import WORD_COUNTS_KEY
from . import PretrainingObjective

if TYPE_CHECKING:  # the trainer's module imports numba, which a run on the engine does not need
    from ..word_vector_trainers.word2vec import Word2VecTrainingArguments


class Word2VecObjective(PretrainingObjective):
    """Mikolov et al. (2013): examples are sentences (lines, cut at 10,000 words as gensim does), a word-level
    vocabulary of the words seen at least ``min_count`` times, and the collator draws subsampling, windows and
    noise words per example (``DataCollatorForWord2Vec``).

    Optimiser: plain SGD (no momentum, no weight decay, so rows absent from a batch do not move, as in the C tool)
    with the learning rate decaying linearly to 0. The loss is the mean over the batch's training items, so the
    step one item gets is ``learning_rate / items per batch``; the default ``learning_rate`` is the C tool's
    alpha (0.025) times the items of a default batch, about 64 sentences × 120 items. Epochs are the config's
    ``epochs`` (``--set epochs=N``; ``--num-epochs`` sets the same).
    """

    family = "word2vec"
    model_class_name = "LineageWord2VecForPreTraining"
    defaults = dict(
        PretrainingObjective.defaults, learning_rate=200.0, weight_decay=0.0, lr_scheduler="linear",
        warmup_ratio=0.0, max_grad_norm=0.0, max_seq_length=MAX_SENTENCE_WORDS, per_device_batch_size=64,
        vocab_size=None,
    )
    # Already small (a batch is 64 sentences, the learning rate is scaled to it, the vocabulary is min_count's).
    tiny_defaults = {}
    # The CPU trainer runs whole passes over local files with the config's alpha → min_alpha schedule and no
    # checkpoints: given any of these, --backend auto takes the engine, which honours them. (It computes in float32:
    # --mixed-precision, a GPU speed setting, gets a note instead, so that the lineage's bf16 scales keep it.)
    cpu_backend_ignores = (
        "dataset_name", "streaming", "resume_from", "max_steps", "max_train_seconds", "max_seq_length",
        "per_device_batch_size", "gradient_accumulation_steps", "learning_rate", "lr_scheduler", "warmup_ratio",
        "warmup_steps", "max_grad_norm", "checkpoint_every", "eval_every", "dataloader_num_workers", "torch_compile",
    )
    # Plain SGD (both backends) has no weight decay and no Adam moments; only BERT reads the stream buffer and weights
    # the languages of a multilingual corpus; neither trainer continues saved vectors (engine.base_model says why).
    unused_options = ("weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon", "stream_buffer_documents",
                      "language_alpha", "init_from")

    def config_fields(self) -> dict:
        args = self.args
        fields = {**LineageWord2VecConfig.named_sizes.get(args.config, {}), **args.overrides}
        if args.num_epochs not in (None, 1.0):
            # Whole passes: the learning rate decays linearly over all of them (as in the C tool and gensim).
            if args.num_epochs != int(args.num_epochs) or args.num_epochs < 1:
                raise ValueError(f"word2vec trains whole passes over the corpus: --num-epochs must be a whole "
                                 f"number, got {args.num_epochs:g}")
            if "epochs" in args.overrides and args.overrides["epochs"] != int(args.num_epochs):
                raise ValueError(f"--num-epochs {args.num_epochs:g} and --set epochs={args.overrides['epochs']} "
                                 "disagree (they set the same thing); give one")
            fields["epochs"] = int(args.num_epochs)
        return fields

    def train_tokenizer(self, files, texts):
        min_count = self.config_fields().get("min_count", LineageWord2VecConfig.min_count)
        tokenizer = train_wordlevel_tokenizer(files=files, iterator=texts, min_count=min_count,
                                              max_vocab_size=self.args.vocab_size)
        check_vocabulary(self.counts(tokenizer), min_count)
        return tokenizer

    def cpu_trainer_arguments(self) -> Word2VecTrainingArguments:
        """The CPU trainer's arguments: the run's vocabulary (``--tokenizer``, or trained as on the engine), config
        fields and seed, and with ``--validation-file`` the engine's validation loss (``evaluate``)."""
        from ..word_vector_trainers.word2vec import Word2VecTrainingArguments

        args = self.args
        if args.tokenizer:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
        else:
            tokenizer = self.train_tokenizer(args.train_file, None)
        validation = (lambda model, tokenizer: self.evaluate(model, tokenizer, args)) if args.validation_file else None
        return Word2VecTrainingArguments(
            train_files=list(args.train_file), output_dir=args.output_dir, tokenizer=tokenizer,
            config_fields=self.config_fields(), seed=args.seed, overwrite_output_dir=args.overwrite_output_dir,
            validation=validation,
        )

    def counts(self, tokenizer) -> np.ndarray:
        if tokenizer.init_kwargs.get(WORD_COUNTS_KEY) is None:
            raise ValueError("word2vec needs a tokenizer with word counts (from train_wordlevel_tokenizer)")
        min_count = self.config_fields().get("min_count", LineageWord2VecConfig.min_count)
        return trainable_counts(tokenizer.init_kwargs[WORD_COUNTS_KEY], tokenizer.all_special_ids, min_count)

    def build_config(self, size, tokenizer, overrides):
        config = LineageWord2VecConfig.from_named(size, **{
            "vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id,
            "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id, **self.config_fields(),
        })
        self.args.num_epochs = config.epochs
        self._config, self._counts = config, self.counts(tokenizer)
        return config

    def prepare(self, dataset, tokenizer, split):
        max_words = self.args.max_seq_length  # longer sentences are cut into pieces (gensim: 10,000 words)

        def tokenize(batch):
            texts = [line for line in batch["text"] if line.strip()]
            ids = tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"] if texts else []
            return {"input_ids": [piece for sentence in ids for piece in chunk_sentence(sentence, max_words)]}

        examples = dataset.map(tokenize, batched=True, remove_columns=["text"],
                               num_proc=self.args.preprocessing_num_workers, desc=f"Tokenizing {split}")
        if len(examples) == 0:
            raise ValueError(f"The {split} text is empty: it holds no words")
        return examples

    def prepare_stream(self, dataset, tokenizer, split):
        """The same sentences, tokenized as the lines stream in (the stream is not shuffled)."""
        max_words = self.args.max_seq_length

        def examples(epoch):
            for row in dataset:
                if row["text"].strip():
                    ids = tokenizer(row["text"], add_special_tokens=False, verbose=False)["input_ids"]
                    for piece in chunk_sentence(ids, max_words):
                        yield {"input_ids": piece}

        return examples

    def collator(self, tokenizer):
        return DataCollatorForWord2Vec(self._counts, self._config)

    def init_model(self, model):
        # The counts the Huffman tree and the noise distribution come from travel with the weights.
        model.word_counts.copy_(torch.from_numpy(self._counts))

    def loss_counts(self, batch):
        # torch.full, not torch.tensor: a fill on the device, where a copy from the host would wait for the GPU
        return {"num_items_in_batch": torch.full((), batch["labels"].shape[0], device=batch["labels"].device)}

    def eval_sums(self, outputs, batch):
        losses = outputs.item_losses.float()
        return {"loss": (losses.sum()[None], torch.ones(1, device=losses.device) * losses.numel())}

    def build_optimizer(self, model, args):
        return torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=args.learning_rate,
                               momentum=0.0, weight_decay=0.0)

    def evaluate(self, model, tokenizer, args) -> dict:
        """The validation loss the engine reports (mean loss per training item, items drawn as in training with
        the seeds of the engine's evaluation), on ``--validation-file``: the CPU trainer reports it too."""
        from itertools import islice

        from ..data.examples import SeededExamples, load_text

        self._config, self._counts = model.config, model.word_counts.numpy()
        examples = self.prepare(load_text(args, args.validation_file, "validation"), tokenizer, "validation")
        loader = torch.utils.data.DataLoader(SeededExamples(examples, args.seed), collate_fn=self.collator(tokenizer),
                                             batch_size=args.per_device_eval_batch_size)
        total, count = 0.0, 0
        model.eval()
        with torch.no_grad():
            for batch in islice(loader, args.max_eval_batches):
                (sums, counts), = self.eval_sums(model(**batch, **self.loss_counts(batch)), batch).values()
                total, count = total + sums.double().sum().item(), count + counts.sum().item()
        return {"loss": total / count if count else float("nan")}
