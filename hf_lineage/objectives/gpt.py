"""GPT's pre-training objective: a left-to-right language model on contiguous blocks of text."""

from __future__ import annotations

import torch.nn.functional as F

from ..data import DataCollatorForCausalLM, pack_into_blocks
from ..data.next_sentence import looks_like_wikitext, split_line
from ..models import LineageGPTConfig
from ..models.modeling_lineage_gpt import shift_labels
from ..tokenization import train_bpe_tokenizer
from . import PretrainingObjective

# Lines per datasets.map batch. Packing drops each batch's tail shorter than a block, so batches are kept large.
MAP_BATCH_LINES = 1000


class GPTObjective(PretrainingObjective):
    """Radford et al. (2018), section 4.1: "Adam with a max learning rate of 2.5e-4, increased linearly from zero
    over the first 2000 updates and annealed to 0 using a cosine schedule ... minibatches of 64 randomly sampled,
    contiguous sequences of 512 tokens ... L2 regularization with w = 0.01 on all non bias or gain weights"
    (decoupled, as AdamW; the engine exempts biases and LayerNorm gains); a BPE vocabulary of 40,000 merges.
    OpenAI's released code uses β = (0.9, 0.999), ε = 1e-8 and clips the gradient norm at 1.

    Text is read line by line and packed into blocks of ``max_seq_length`` tokens, lines joined by newlines and
    documents separated by ``<|endoftext|>``. A document ends at a blank line; in WikiText, where blank lines
    separate paragraphs, a document is an article (it starts at a `` = Title = `` heading).

    The warmup is a number of updates (2000); ``--warmup-ratio`` given without ``--warmup-steps`` replaces it.
    """

    family = "gpt"
    model_class_name = "LineageGPTForCausalLM"
    defaults = dict(
        PretrainingObjective.defaults, learning_rate=2.5e-4, weight_decay=0.01, adam_beta1=0.9, adam_beta2=0.999,
        adam_epsilon=1e-8, lr_scheduler="cosine", warmup_steps=2000, max_grad_norm=1.0, max_seq_length=512,
        per_device_batch_size=64, vocab_size=40000,
    )
    # A smoke run has far fewer than 2000 updates: warm up over the first 5 % instead.
    tiny_defaults = dict(PretrainingObjective.tiny_defaults, warmup_steps=None, warmup_ratio=0.05)
    perplexity_of = "loss"

    def __init__(self, args):
        super().__init__(args)
        if args.warmup_ratio is not None and args.warmup_steps is None:
            self.defaults = {k: v for k, v in type(self).defaults.items() if k != "warmup_steps"}

    def train_tokenizer(self, files, texts):
        # Byte-level BPE (GPT-2's): any text encodes without <unk> and decodes back exactly.
        return train_bpe_tokenizer(files=files, iterator=texts, vocab_size=self.args.vocab_size,
                                   model_max_length=self.args.max_seq_length)

    def build_config(self, size, tokenizer, overrides):
        config = LineageGPTConfig.from_named(size, **{
            "vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id,
            "bos_token_id": tokenizer.eos_token_id, "eos_token_id": tokenizer.eos_token_id, **overrides,
        })
        if self.args.max_seq_length > config.max_position_embeddings:
            raise ValueError(
                f"--max-seq-length {self.args.max_seq_length} exceeds the config's context, max_position_embeddings "
                f"{config.max_position_embeddings}"
            )
        return config

    def _blocks(self, dataset, tokenizer, split, first_lines, streaming=False):
        """Tokenize line by line, then pack into blocks; both ``datasets.map``, so cached and parallel for files,
        lazy for streams."""
        wikitext = looks_like_wikitext(first_lines)
        eos = tokenizer.eos_token_id

        def tokenize(batch):
            texts = [line + "\n" for line in batch["text"] if line.strip()]
            ids = iter(tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"] if texts else [])
            rows, previous_blank = [], False
            for line in batch["text"]:
                blank = not line.strip()
                # <|endoftext|> where a document starts: once per run of blank lines, before a WikiText article.
                # (OpenAI GPT's own tokenizer, a converted base's, has no end-of-text token: documents just follow.)
                row = ([eos] if eos is not None and split_line(line, wikitext)[0] and not (blank and previous_blank)
                       else [])
                rows.append(row if blank else row + next(ids))
                previous_blank = blank
            return {"input_ids": rows}

        def options(desc):
            return {} if streaming else dict(num_proc=self.args.preprocessing_num_workers, desc=f"{desc} {split}")

        tokenized = dataset.map(tokenize, batched=True, batch_size=MAP_BATCH_LINES, remove_columns=["text"],
                                **options("Tokenizing"))
        return tokenized.map(pack_into_blocks, batched=True, batch_size=MAP_BATCH_LINES,
                             fn_kwargs={"block_size": self.args.max_seq_length}, **options("Packing"))

    def prepare(self, dataset, tokenizer, split):
        blocks = self._blocks(dataset, tokenizer, split, dataset[:1000]["text"])
        if len(blocks) == 0:
            raise ValueError(
                f"The {split} text has fewer tokens than one block of --max-seq-length {self.args.max_seq_length}"
            )
        return blocks

    def prepare_stream(self, dataset, tokenizer, split):
        """Blocks in the order of the stream (each is a contiguous stretch of text; the stream is not shuffled)."""
        first_lines = [row["text"] for row in dataset.take(1000)]
        if not any(line.strip() for line in first_lines):
            raise ValueError(f"The {split} text has no tokens (first 1000 lines are blank)")
        blocks = self._blocks(dataset, tokenizer, split, first_lines, streaming=True)

        def examples(epoch):
            yield from blocks

        return examples

    def collator(self, tokenizer):
        # Packed blocks need no padding: a tokenizer without a pad token (OpenAI GPT's) pads with id 0, never read.
        pad = tokenizer.pad_token_id
        return DataCollatorForCausalLM(pad_token_id=0 if pad is None else pad)

    def loss_counts(self, batch):
        # Every position but the last of a row predicts the next token: count what is predicted, not what is input.
        return {"num_items_in_batch": (shift_labels(batch["labels"]) != -100).sum()}

    def eval_sums(self, outputs, batch):
        labels = shift_labels(batch["labels"])  # (B, T)
        logits = outputs.logits.float()  # (B, T, V)
        token_loss = F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=-100, reduction="none")  # (B, T)
        predicted = labels != -100
        correct = ((logits.argmax(-1) == labels) & predicted).float()
        count = predicted.sum(1).float()
        return {"loss": (token_loss.sum(1), count), "accuracy": (correct.sum(1), count)}
