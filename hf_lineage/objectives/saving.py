"""The folder a pre-trained model is saved as, by every trainer (the engine's loop and word2vec's CPU trainer):
model, tokenizer, generation defaults and model card via ``save_pretrained``, loadable with the Auto classes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..registry import FAMILIES, family_of_config
from . import generation_config_for


def save_final(model, tokenizer, output_dir: Path, card_extra: str) -> None:
    """Model, tokenizer and model card via ``save_pretrained``, atomically: everything is written to a temporary
    folder and moved in, ``config.json`` last — a folder without it is not a loadable model."""
    from transformers.tokenization_utils_base import VERY_LARGE_INTEGER

    staging = output_dir / ".final.partial"
    if staging.exists():
        shutil.rmtree(staging)
    # The tokenizer's limit is what the model accepts (its positions; none for the recurrent and n-gram families),
    # not the pre-training block size: pipelines and the recipes truncate to it.
    tokenizer.model_max_length = getattr(model.config, "max_position_embeddings", None) or VERY_LARGE_INTEGER
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
    card.write_text(card.read_text() + card_extra)
    names = sorted(os.listdir(staging), key=lambda n: n == "config.json")
    for name in names:
        os.replace(staging / name, output_dir / name)
    staging.rmdir()
