"""Tokenizer training for the hf_lineage model families (WordPiece for BERT, BPE for GPT, word-level for NNLM and
word2vec). See `hf_lineage.tokenization.trainers` for details."""

from .trainers import (
    train_bpe_tokenizer,
    train_wordlevel_tokenizer,
    train_wordpiece_tokenizer,
    word_counts,
    wordlevel_tokenizer_from_vocabulary,
)

__all__ = ["train_bpe_tokenizer", "train_wordlevel_tokenizer", "train_wordpiece_tokenizer", "word_counts",
           "wordlevel_tokenizer_from_vocabulary"]
