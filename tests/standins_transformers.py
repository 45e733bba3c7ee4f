"""Tiny stand-ins for transformers' own published BERT and OpenAI GPT, put into a Hugging Face Hub cache under the
real repository ids, so that with that cache and ``HF_HUB_OFFLINE=1``
``from_pretrained("google-bert/bert-base-uncased")`` loads them: the conversion of a Hub id (``hf-lineage convert
bert|gpt ID``) is tested without the network and without the real 440 MB.

Each is the real thing in miniature: a ``BertForPreTraining`` (2 layers, hidden 32) with an uncased WordPiece
``BertTokenizer`` whose vocabulary is trained on a few sentences, and an ``OpenAIGPTLMHeadModel`` with an
``OpenAIGPTTokenizer`` whose BPE vocabulary and merges (``</w>``-suffixed, lowercased, BERT's pre-tokenizer: what
transformers' OpenAI GPT tokenizer reads) are trained on the same sentences. Seeded and trained reproducibly: the
same files every call, in any process. They take about 0.1 s once transformers is imported.

    >>> from standins_transformers import save_bert_standin, use_hub_cache
    >>> save_bert_standin(tmp_path / "hub")                  # google-bert/bert-base-uncased
    >>> use_hub_cache(monkeypatch, tmp_path / "hub")   # HF_HUB_CACHE and HF_HUB_OFFLINE=1, here and in subprocesses
    >>> BertForPreTraining.from_pretrained("google-bert/bert-base-uncased")   # the stand-in
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

# The sentences the stand-ins' vocabularies are trained on (accents and capitals: the uncased tokenizers lowercase
# and strip accents, so "Café" and "cafe" read the same).
STANDIN_TEXT = [
    "The quick brown fox jumps over the lazy dog.",
    "Language models predict the next word from the previous words.",
    "BERT masks fifteen percent of the tokens and predicts them.",
    "Paris is the capital of France, and Berlin is the capital of Germany.",
    "The cat sat on the mat; the dog sat on the log.",
    "A café in Zürich serves crème brûlée to naïve tourists.",
    "Neural networks learn distributed representations of words.",
    "OpenAI's GPT reads books: 7,000 unpublished novels of adventure, fantasy and romance.",
]
# A fixed commit hash: the snapshot's folder name and what refs/main points to.
STANDIN_REVISION = "5ca1ab1e" * 5


def snapshot_folder(cache_dir, repo_id: str, revision: str = STANDIN_REVISION) -> Path:
    """``cache_dir/models--OWNER--NAME/snapshots/REVISION``, with ``refs/main`` naming it: the Hub cache's layout
    (files sit in the snapshot itself; the cache's blobs/ are optional)."""
    repository = Path(cache_dir) / ("models--" + repo_id.replace("/", "--"))
    (repository / "refs").mkdir(parents=True, exist_ok=True)
    (repository / "refs" / "main").write_text(revision)
    snapshot = repository / "snapshots" / revision
    snapshot.mkdir(parents=True, exist_ok=True)
    return snapshot


def use_hub_cache(monkeypatch, cache_dir) -> None:
    """Make ``cache_dir`` the Hub cache and go offline, for this process (huggingface_hub read its environment when
    imported: its constants are set too) and for the processes it starts (the environment)."""
    import huggingface_hub

    monkeypatch.setenv("HF_HUB_CACHE", str(cache_dir))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache_dir))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def bert_standin_tokenizer():
    """An uncased ``BertTokenizer`` (lowercasing, accents stripped) on a WordPiece vocabulary of ``STANDIN_TEXT``.

    The vocabulary comes from hf_lineage's trainer, which is reproducible across processes (``tokenizers``' own
    trainers are not); the tokenizer is transformers' class, as the real release's is."""
    from transformers import BertTokenizer

    from hf_lineage.tokenization import train_wordpiece_tokenizer

    trained = train_wordpiece_tokenizer(iterator=STANDIN_TEXT, vocab_size=200, min_frequency=1, lowercase=True)
    vocab = dict(sorted(trained.get_vocab().items(), key=lambda item: item[1]))
    return BertTokenizer(vocab=vocab, do_lower_case=True)


def gpt_standin_tokenizer():
    """An ``OpenAIGPTTokenizer`` on a character BPE vocabulary and merges of ``STANDIN_TEXT`` (lowercased words,
    ``</w>`` ending a word: OpenAI's format), with ``<unk>`` as its only special token, as the real release."""
    from transformers import OpenAIGPTTokenizer

    from hf_lineage.tokenization import train_bpe_tokenizer

    trained = train_bpe_tokenizer(iterator=STANDIN_TEXT, vocab_size=250, min_frequency=1, byte_level=False,
                                  lowercase=True)
    model = json.loads(trained.backend_tokenizer.to_str())["model"]
    # The trainer's <pad> and <|endoftext|> are not OpenAI GPT's: dropped, the other ids closed up in their order.
    tokens = [t for t, _ in sorted(model["vocab"].items(), key=lambda item: item[1])
              if t not in (trained.pad_token, trained.eos_token)]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    return OpenAIGPTTokenizer(vocab={t: i for i, t in enumerate(tokens)}, merges=merges)


def save_bert_standin(cache_dir, repo_id: str = "google-bert/bert-base-uncased") -> Path:
    """A tiny ``BertForPreTraining`` with its uncased ``BertTokenizer`` in the Hub cache ``cache_dir`` as
    ``repo_id``; returns the snapshot folder."""
    from transformers import BertConfig, BertForPreTraining

    tokenizer = bert_standin_tokenizer()
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512, pad_token_id=tokenizer.pad_token_id)
    model = BertForPreTraining(config).eval()
    snapshot = snapshot_folder(cache_dir, repo_id)
    model.save_pretrained(snapshot)
    tokenizer.save_pretrained(snapshot)
    return snapshot


def save_gpt_standin(cache_dir, repo_id: str = "openai-community/openai-gpt") -> Path:
    """A tiny ``OpenAIGPTLMHeadModel`` with its ``OpenAIGPTTokenizer`` in the Hub cache ``cache_dir`` as
    ``repo_id``; returns the snapshot folder."""
    from transformers import OpenAIGPTConfig, OpenAIGPTLMHeadModel

    tokenizer = gpt_standin_tokenizer()
    torch.manual_seed(0)
    # 512 positions, as the release has: the lineage's probes read sentences of up to a hundred tokens.
    config = OpenAIGPTConfig(vocab_size=len(tokenizer), n_positions=512, n_embd=32, n_layer=2, n_head=2)
    model = OpenAIGPTLMHeadModel(config).eval()
    snapshot = snapshot_folder(cache_dir, repo_id)
    model.save_pretrained(snapshot)
    tokenizer.save_pretrained(snapshot)
    return snapshot


__all__ = ["STANDIN_TEXT", "save_bert_standin", "save_gpt_standin", "snapshot_folder", "use_hub_cache"]
