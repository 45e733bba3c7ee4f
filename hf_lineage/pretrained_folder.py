"""The folder a pre-trained model is saved as, by every trainer (the engine's loop and the CPU trainers): model,
tokenizer, generation defaults and model card via ``save_pretrained``, loadable with the Auto classes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from .registry import FAMILIES, family_of_config

# ``model_max_length`` of a family without positions (NNLM, word2vec, svd, ELMo). They read any length — an
# n-gram window, word vectors, an LSTM — but transformers' tools need a finite one: with none (1e30) run_clm.py
# falls back to blocks of 1,024 with a warning and run_glue.py / run_ner.py cannot cap --max_seq_length. 512, the
# shipped transformers' context, so that every family gets the same longest input. Not the pre-training sequence
# length: pipelines and the recipes truncate to this limit, and ELMo's 64 (NNLM's 256) would cut task inputs
# (passages) the model reads well.
NO_POSITIONS_MAX_LENGTH = 512


def save_final(model, tokenizer, output_dir: Path, card_extra: str, languages=None) -> None:
    """Model, tokenizer and model card via ``save_pretrained``, atomically: everything is written to a temporary
    folder and moved in, ``config.json`` last — a folder without it is not a loadable model. ``languages`` (codes)
    go in the card's metadata, where the Hub reads them."""
    staging = output_dir / ".final.partial"
    if staging.exists():
        shutil.rmtree(staging)
    # The tokenizer's limit is what the model accepts (its positions; NO_POSITIONS_MAX_LENGTH for the recurrent and
    # n-gram families), not the pre-training block size: pipelines and the recipes truncate to it.
    positions = getattr(model.config, "max_position_embeddings", None)
    tokenizer.model_max_length = positions or NO_POSITIONS_MAX_LENGTH
    if hasattr(model, "set_vocabulary_characters"):
        # ELMo reads words through their characters: with its vocabulary's characters stored, the saved LM takes
        # word ids alone, which is all generate() and the text-generation pipeline give it.
        model.set_vocabulary_characters(tokenizer)
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    family = family_of_config(model.config)
    if family and FAMILIES[family].causal_lm:
        # The folder loads as AutoModelForCausalLM whatever class was pre-trained (word2vec's and ELMo's cannot
        # generate themselves): it ships the generation defaults, which replace those derived from the config.
        generation_config_for(tokenizer).save_pretrained(staging)
    card = staging / "README.md"
    text = card.read_text()
    if languages:
        text = text.replace("\nlibrary_name:", "\nlanguage:\n" + "".join(f"- {code}\n" for code in languages)
                            + "library_name:", 1)
    card.write_text(text + card_extra)
    names = sorted(os.listdir(staging), key=lambda n: n == "config.json")
    for name in names:
        os.replace(staging / name, output_dir / name)
    staging.rmdir()


def generation_config_for(tokenizer, special: dict[str, Any] | None = None, **settings):
    """The ``GenerationConfig`` a checkpoint ships: pad, bos and eos (``special``, default the tokenizer's), and
    neither ``<unk>`` nor padding ever generated — with a word-level vocabulary ``<unk>`` stands for every rare word
    and is often the likeliest next token, so greedy output would be mostly ``<unk>``. ``settings`` are further
    ``GenerationConfig`` fields (``max_new_tokens``, ``num_beams``, ...)."""
    from transformers import GenerationConfig

    if special is None:
        special = {"pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id,
                   "eos_token_id": tokenizer.eos_token_id}
    # A token that ends or starts generation stays allowed, even where it doubles as <unk> or padding.
    needed = {special.get("eos_token_id"), special.get("bos_token_id"), special.get("decoder_start_token_id")}
    never = [i for i in dict.fromkeys([tokenizer.unk_token_id, special.get("pad_token_id")])
             if i is not None and i not in needed]
    return GenerationConfig(**special, suppress_tokens=never or None, **settings)
