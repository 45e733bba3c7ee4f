"""ELMo's pre-training objective (Peters et al. 2018): a forward and a backward language model over the same
sentences, sharing the character CNN and the softmax; the loss is their sum.

Each non-blank line of the corpus is a sentence (the 1B Word Benchmark that ELMo trained on has one sentence per
line); the tokenizer wraps it in ``<S> ... </S>``, so the forward LM predicts every word and ``</S>``, the backward
LM every word and ``<S>``. Lines longer than ``max_seq_length − 2`` words are cut into consecutive chunks of that
many words, each its own "sentence". Examples keep their words (not ids): the collator spells them into character
ids batch by batch, which keeps the prepared dataset small.

Optimisation follows bilm-tf: Adagrad with learning rate 0.2 and initial accumulator 1.0, a constant learning
rate, gradient norm clipped at 10, dropout 0.1 (the config's ``dropout``), 128 sentences per batch. bilm-tf scales
its loss by the unroll length (20) and averages the two directions; here the loss is the per-token mean of each
direction, summed, so the same learning rate takes smaller steps at first. The vocabulary keeps the
``--vocab-size`` most frequent words; for vocabularies of hundreds of thousands of words use
``--set softmax_type=sampled`` (bilm-tf's 8192 sampled negatives) or ``adaptive``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..models import LineageElmoConfig, LineageElmoTokenizer, LineageElmoTokenizerFast
from ..models.modeling_lineage_elmo import backward_targets, forward_targets
from ..tokenization import train_wordlevel_tokenizer
from . import PretrainingObjective

# train_wordlevel_tokenizer's special tokens → ELMo's (bilm-tf's vocab.txt names the sentence markers <S> </S>).
SPECIALS = {"<pad>": "<pad>", "<unk>": "<UNK>", "<s>": "<S>", "</s>": "</S>"}


def elmo_tokenizer_from_corpus(files=None, iterator=None, vocab_size=None, min_count=1, lowercase=False,
                               model_max_length=1_000_000) -> LineageElmoTokenizerFast:
    """A ``LineageElmoTokenizerFast`` (what ``AutoTokenizer`` loads the saved folder as) whose vocabulary is the
    corpus's words by decreasing frequency (the order the sampled and adaptive softmaxes assume), after
    ``<pad> <UNK> <S> </S>``.

    >>> tok = elmo_tokenizer_from_corpus(iterator=["the cat sat", "the dog"])
    >>> tok.convert_ids_to_tokens([0, 1, 2, 3, 4])
    ['<pad>', '<UNK>', '<S>', '</S>', 'the']
    """
    words = train_wordlevel_tokenizer(files=files, iterator=iterator, min_count=min_count,
                                      max_vocab_size=vocab_size, lowercase=lowercase)
    vocab = [SPECIALS.get(w, w) for w in words.convert_ids_to_tokens(list(range(len(words))))]
    return LineageElmoTokenizerFast(vocab=vocab, lowercase=lowercase, model_max_length=model_max_length)


@dataclass
class DataCollatorForElmo:
    """Examples ``{"words": [...]}`` → ``input_ids``, ``char_ids``, ``attention_mask`` (right-padded) and ``labels``
    (the word ids, -100 at padding; the model shifts them one way per direction)."""

    tokenizer: LineageElmoTokenizer | LineageElmoTokenizerFast

    def __call__(self, examples):
        batch = self.tokenizer([list(e["words"]) for e in examples], is_split_into_words=True, padding=True,
                               return_tensors="pt")
        batch = dict(batch)
        batch["labels"] = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
        return batch


class ElmoObjective(PretrainingObjective):
    family = "elmo"
    model_class_name = "LineageElmoForPreTraining"
    defaults = dict(
        PretrainingObjective.defaults, learning_rate=0.2, weight_decay=0.0, lr_scheduler="constant",
        warmup_ratio=0.0, max_grad_norm=10.0, max_seq_length=64, per_device_batch_size=128, vocab_size=793471,
    )
    perplexity_of = "loss"

    def train_tokenizer(self, files, texts):
        return elmo_tokenizer_from_corpus(files=files, iterator=texts, vocab_size=self.args.vocab_size,
                                          model_max_length=self.args.max_seq_length)

    def build_config(self, size, tokenizer, overrides):
        if not isinstance(tokenizer, (LineageElmoTokenizer, LineageElmoTokenizerFast)):
            raise ValueError("ELMo needs a LineageElmoTokenizer or LineageElmoTokenizerFast (character ids), got "
                             f"{type(tokenizer).__name__}")
        self.tokenizer = tokenizer  # init_model stores its word → characters table in the model
        return LineageElmoConfig.from_named(size, **{
            "vocab_size": len(tokenizer), "max_characters_per_token": tokenizer.max_characters_per_token,
            "pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id, **overrides,
        })

    def init_model(self, model):
        model.set_vocabulary_characters(self.tokenizer)  # so the saved model can generate from word ids

    def build_optimizer(self, model, args):
        """bilm-tf's Adagrad (initial accumulator 1.0)."""
        params = [p for p in model.parameters() if p.requires_grad]
        return torch.optim.Adagrad(params, lr=args.learning_rate, initial_accumulator_value=1.0,
                                   weight_decay=args.weight_decay)

    def _sentences(self, batch):
        chunk = self.args.max_seq_length - 2  # room for <S> and </S>
        if chunk < 1:
            raise ValueError(f"--max-seq-length {self.args.max_seq_length} leaves no room for a word next to <S> "
                             "and </S>; use at least 3")
        out = []
        for line in batch["text"]:
            words = line.split()
            out += [words[i : i + chunk] for i in range(0, len(words), chunk)]
        return {"words": out}

    def prepare(self, dataset, tokenizer, split):
        sentences = dataset.map(self._sentences, batched=True, remove_columns=dataset.column_names,
                                num_proc=self.args.preprocessing_num_workers, desc=f"Splitting {split}")
        if len(sentences) == 0:
            raise ValueError(f"The {split} text has no words (every line is blank)")
        return sentences

    def prepare_stream(self, dataset, tokenizer, split):
        sentences = dataset.map(self._sentences, batched=True, remove_columns=["text"])

        def examples(epoch):
            yield from sentences

        return examples

    def collator(self, tokenizer):
        return DataCollatorForElmo(tokenizer)

    def loss_counts(self, batch):
        # Each direction predicts one token fewer than a row holds; both predict the same number.
        return {"num_items_in_batch": (forward_targets(batch["labels"]) != -100).sum()}

    def eval_sums(self, outputs, batch):
        """Per-sentence summed losses of each direction; ``loss`` is their mean, so ``perplexity`` is the geometric
        mean of the forward and backward perplexities (bilm-tf reports the same average)."""
        labels = batch["labels"]
        backward = backward_targets(labels, batch.get("attention_mask"))
        sums = {}
        for name, logits, targets in (("forward_loss", outputs.logits, forward_targets(labels)),
                                      ("backward_loss", outputs.backward_logits, backward)):
            token_loss = F.cross_entropy(logits.float().transpose(1, 2), targets, ignore_index=-100,
                                         reduction="none")  # (B, T)
            sums[name] = token_loss.sum(1)
        count = (forward_targets(labels) != -100).sum(1).float()
        return {"loss": ((sums["forward_loss"] + sums["backward_loss"]) / 2, count),
                "forward_loss": (sums["forward_loss"], count), "backward_loss": (sums["backward_loss"], count)}
