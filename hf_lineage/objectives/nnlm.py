"""The NNLM's pre-training objective (Bengio et al. 2003): predict every word of the corpus from the n − 1 words
before it.

The corpus is one stream of words: each non-blank line followed by ``</s>``, the stream preceded by n − 1
context-start words (``</s>`` too, by default), so the first word is predicted "at the start of a sentence" like
every other sentence's first word. The stream is cut into overlapping blocks::

    block k = stream[k·L : k·L + L + n − 1]          L = max_seq_length − (n − 1) predicted words per block
    labels  = -100 for its first n − 1 words (context only: the previous block predicted them), then the words

so every word of the stream after the initial context is predicted exactly once, always from its full n − 1-word
context, and no word is lost at block ends (the last block is shorter and padded by the collator).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..models import LineageNNLMConfig
from ..models.modeling_lineage_nnlm import shift_labels
from ..tokenization import train_wordlevel_tokenizer
from . import PretrainingObjective

# Options of the word-level tokenizer, given as `--set name=value` with the config overrides and removed from
# them before the config is built. min_count 4: the paper merged the words seen at most 3 times into one symbol.
TOKENIZER_OPTIONS = {"min_count": 4, "lowercase": False}


def word_stream(lines, eos_token_id: int, start_token_id: int, context_size: int) -> np.ndarray:
    """Token ids of the lines (a list of id lists, or a pyarrow list array) → one int64 stream:
    ``context_size`` start words, then each non-empty line followed by ``eos_token_id``.

    >>> word_stream([[5, 6], [], [7]], eos_token_id=3, start_token_id=3, context_size=2).tolist()
    [3, 3, 5, 6, 3, 7, 3]
    """
    if hasattr(lines, "flatten"):  # pyarrow ListArray: no Python list per line
        import pyarrow as pa

        if isinstance(lines, pa.ChunkedArray):
            lines = lines.combine_chunks()
        words = lines.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
        offsets = lines.offsets.to_numpy()
        offsets = offsets - offsets[0]  # a sliced array's offsets start where its slice does
    else:
        words = np.fromiter((i for line in lines for i in line), dtype=np.int64)
        offsets = np.cumsum([0] + [len(line) for line in lines])
    ends = offsets[1:][np.diff(offsets) > 0]  # where each non-empty line ends: </s> goes there
    words = np.insert(words, ends, eos_token_id)
    return np.concatenate([np.full(context_size, start_token_id, dtype=np.int64), words])


class NNLMBlocks(torch.utils.data.Dataset):
    """The overlapping blocks of a word stream (see the module docstring), made on the fly from the stream.

    >>> blocks = NNLMBlocks(np.arange(10), context_size=2, block_length=5)
    >>> [blocks[k]["input_ids"] for k in range(len(blocks))], blocks[0]["labels"]
    ([[0, 1, 2, 3, 4], [3, 4, 5, 6, 7], [6, 7, 8, 9]], [-100, -100, 2, 3, 4])
    """

    def __init__(self, stream: np.ndarray, context_size: int, block_length: int):
        if block_length <= context_size:
            raise ValueError(
                f"max_seq_length ({block_length}) must exceed the context size n - 1 ({context_size}): each block "
                "starts with n - 1 context words and must predict at least one more"
            )
        self.stream, self.context_size, self.block_length = stream, context_size, block_length
        self.stride = block_length - context_size  # words predicted per block
        self.num_predicted = max(0, len(stream) - context_size)

    def __len__(self):
        return -(-self.num_predicted // self.stride)  # ceil

    def __getitem__(self, k):
        if not 0 <= k < len(self):
            raise IndexError(k)
        ids = self.stream[k * self.stride : k * self.stride + self.block_length].tolist()
        return {"input_ids": ids, "labels": [-100] * self.context_size + ids[self.context_size :]}


@dataclass
class DataCollatorForNNLM:
    """Stacks ``{"input_ids", "labels"}`` blocks into (B, T) tensors; a shorter block (the stream's last) is
    right-padded with ``pad_token_id`` (label -100) and the batch gets an ``attention_mask``."""

    pad_token_id: int = 0

    def __call__(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        T = max(len(e["input_ids"]) for e in examples)
        input_ids = torch.full((len(examples), T), self.pad_token_id, dtype=torch.long)
        labels = torch.full((len(examples), T), -100, dtype=torch.long)
        attention_mask = torch.zeros(len(examples), T, dtype=torch.long)
        for i, e in enumerate(examples):
            n = len(e["input_ids"])
            input_ids[i, :n] = torch.tensor(e["input_ids"])
            labels[i, :n] = torch.tensor(e["labels"])
            attention_mask[i, :n] = 1
        batch = {"input_ids": input_ids, "labels": labels}
        if not bool(attention_mask.all()):
            batch["attention_mask"] = attention_mask
        return batch


class NNLMObjective(PretrainingObjective):
    """Bengio et al. (2003), section 4: a word-level vocabulary in which "rare words with frequency ≤ 3 were
    merged into a single symbol" (``--set min_count=4``, the default here), and the log-likelihood of every word
    given its n − 1 predecessors, maximised by stochastic gradient ascent with the learning rate decreasing as
    ε_t = ε_0 / (1 + r·t) (ε_0 = 10⁻³, r = 10⁻⁸) and a weight-decay penalty on the weights and on C, not on the
    biases; training stopped early on the validation perplexity.

    The defaults here are not the paper's per-example SGD, which ran in parallel on a cluster of CPUs; they are
    what ``benchmarks/bench_nnlm_brown.py`` trains with on a 2-core CPU: the engine's AdamW (its decoupled weight
    decay, when asked for with ``--weight-decay``, applies to the weights and C and not to the biases, like the
    paper's penalty) at 3e-3 decaying linearly to zero, mini-batches of 16 blocks of 256 words; regularisation
    comes from the config's dropout (``--set embedding_dropout=0.1 --set hidden_dropout=0.3``) and from
    stopping early on validation (``--eval-every``).

    Blocks overlap by n − 1 words (see the module docstring), so ``--max-seq-length`` counts the context words
    too. Evaluation reports ``loss`` (mean negative log-likelihood per predicted word, ``</s>`` included),
    ``perplexity`` and ``accuracy`` (next word).
    """

    family = "nnlm"
    model_class_name = "LineageNNLMForCausalLM"
    defaults = dict(
        PretrainingObjective.defaults, learning_rate=3e-3, weight_decay=0.0, lr_scheduler="linear",
        warmup_ratio=0.0, max_grad_norm=1.0, max_seq_length=256, per_device_batch_size=16, vocab_size=None,
    )
    perplexity_of = "loss"
    # The output layer only where a word is predicted: (N, V) logits, the rows ``eval_sums`` reads (the model's
    # default is transformers' (B, T, V); the loss is the same).
    forward_kwargs = {"sparse_logits": True}
    set_options = tuple(TOKENIZER_OPTIONS)  # --set min_count=N, --set lowercase=true

    def __init__(self, args):
        super().__init__(args)
        self.config = None

    def _tokenizer_options(self):
        options = {**TOKENIZER_OPTIONS}
        options.update({k: v for k, v in self.args.overrides.items() if k in TOKENIZER_OPTIONS})
        if not isinstance(options["min_count"], int) or options["min_count"] < 1:
            raise ValueError(f"min_count must be a positive integer, got {options['min_count']!r}")
        return options

    def train_tokenizer(self, files, texts):
        options = self._tokenizer_options()
        tokenizer = train_wordlevel_tokenizer(files=files, iterator=texts, max_vocab_size=self.args.vocab_size,
                                              model_max_length=self.args.max_seq_length, **options)
        if len(tokenizer) <= len(tokenizer.all_special_tokens):
            raise ValueError(
                f"The vocabulary is empty: no word of the training text occurs at least min_count="
                f"{options['min_count']} times (lower it with --set min_count=N)"
            )
        return tokenizer

    def build_config(self, size, tokenizer, overrides):
        self._tokenizer_options()  # validates them on a resumed run too
        overrides = {k: v for k, v in overrides.items() if k not in TOKENIZER_OPTIONS}
        self.config = LineageNNLMConfig.from_named(size, **{
            "vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id,
            "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
            "context_start_token_id": tokenizer.eos_token_id, **overrides,
        })
        if self.args.max_seq_length <= self.config.context_size:
            raise ValueError(
                f"--max-seq-length {self.args.max_seq_length} must exceed the context size n - 1 "
                f"({self.config.context_size}): each block starts with n - 1 context words"
            )
        return self.config

    def _stream_start(self, tokenizer):
        return self.config.context_start_token_id, self.config.context_size, tokenizer.eos_token_id

    def prepare(self, dataset, tokenizer, split):
        start, n1, eos = self._stream_start(tokenizer)

        def tokenize(batch):
            return {"input_ids": tokenizer(batch["text"], add_special_tokens=False, verbose=False)["input_ids"]}

        tokenized = dataset.map(tokenize, batched=True, batch_size=1000, remove_columns=["text"],
                                num_proc=self.args.preprocessing_num_workers, desc=f"Tokenizing {split}")
        stream = word_stream(tokenized.with_format("arrow")["input_ids"], eos, start, n1)
        blocks = NNLMBlocks(stream, n1, self.args.max_seq_length)
        if len(blocks) == 0:
            raise ValueError(f"The {split} text has no words")
        return blocks

    def prepare_stream(self, dataset, tokenizer, split):
        """The same blocks, cut while the lines stream in (the stream is not shuffled)."""
        start, n1, eos = self._stream_start(tokenizer)
        block_length = self.args.max_seq_length

        def examples(epoch):
            buffer = [start] * n1
            for row in dataset:
                ids = tokenizer(row["text"], add_special_tokens=False)["input_ids"]
                if ids:
                    buffer += ids + [eos]
                while len(buffer) >= block_length:
                    yield {"input_ids": buffer[:block_length], "labels": [-100] * n1 + buffer[n1:block_length]}
                    buffer = buffer[block_length - n1 :]  # the next block's context: the last n − 1 words
            if len(buffer) > n1:
                yield {"input_ids": buffer, "labels": [-100] * n1 + buffer[n1:]}

        return examples

    def collator(self, tokenizer):
        return DataCollatorForNNLM(pad_token_id=tokenizer.pad_token_id)

    def loss_counts(self, batch):
        # Position t predicts word t + 1: count the predicted words, not the inputs.
        return {"num_items_in_batch": (shift_labels(batch["labels"]) != -100).sum()}

    def eval_sums(self, outputs, batch):
        # With ``sparse_logits`` (forward_kwargs) the model computes logits only where a word is predicted: (N, V),
        # rows in this order.
        targets = shift_labels(batch["labels"])  # (B, T)
        predicting = targets != -100
        example = predicting.nonzero()[:, 0]  # which example each logits row belongs to
        logits = outputs.logits.float()  # (N, V)
        token_loss = F.cross_entropy(logits, targets[predicting], reduction="none")  # (N,)
        correct = (logits.argmax(-1) == targets[predicting]).float()
        B = targets.shape[0]
        per_example = lambda values: torch.zeros(B, device=values.device).index_add_(0, example, values)  # noqa: E731
        count = predicting.sum(1).float()
        return {"loss": (per_example(token_loss), count), "accuracy": (per_example(correct), count)}
