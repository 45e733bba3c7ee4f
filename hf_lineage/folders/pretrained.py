"""The folder a pre-trained model is saved as, by every trainer (the engine's loop and the CPU trainers): model,
tokenizer, generation defaults and model card via ``save_pretrained``, loadable with the Auto classes; the code that
loads it with ``trust_remote_code``, written into a folder without it (the shipped checkpoints); and its push to the
Hugging Face Hub (``hf-lineage pretrain --push-to-hub``, ``hf-lineage checkpoints push``)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..models.card_lineage_utils import KNOWN_DATASET_LANGUAGES, hub_dataset_ids, update_card
from ..registry import FAMILIES, family_classes, family_of_config

# ``model_max_length`` of a family without positions (NNLM, word2vec, svd, ELMo). They read any length — an
# n-gram window, word vectors, an LSTM — but transformers' tools need a finite one: with none (1e30) run_clm.py
# falls back to blocks of 1,024 with a warning and run_glue.py / run_ner.py cannot cap --max_seq_length. 512, the
# shipped transformers' context, so that every family gets the same longest input. Not the pre-training sequence
# length: pipelines and the recipes truncate to this limit, and ELMo's 64 (NNLM's 256) would cut task inputs
# (passages) the model reads well.
NO_POSITIONS_MAX_LENGTH = 512


def save_final(model, tokenizer, output_dir: Path, card_extra: str, languages=None, datasets=(),
               base_model=None) -> None:
    """Model, tokenizer and model card via ``save_pretrained``, atomically: everything is written to a temporary
    folder and moved in, ``config.json`` last — a folder without it is not a loadable model. ``languages`` (codes),
    the training data (``datasets``: files or a Hub id; only Hub ids are written, a known file as its dataset's id)
    and ``base_model`` (the model training continued from; written when it is a Hub id) go in the card's metadata,
    where the Hub reads them; without ``languages``, a known dataset's language is written."""
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
    hub_datasets = hub_dataset_ids(datasets)
    languages = list(languages or dict.fromkeys(KNOWN_DATASET_LANGUAGES[d] for d in hub_datasets
                                                if d in KNOWN_DATASET_LANGUAGES))
    card.write_text(update_card(card.read_text(), language=languages or None, datasets=hub_datasets or None,
                                base_model=base_model) + card_extra)
    names = sorted(os.listdir(staging), key=lambda n: n == "config.json")
    for name in names:
        os.replace(staging / name, output_dir / name)
    staging.rmdir()


def corpus_files(corpus) -> list[str]:
    """The files of a corpus given as a path or a list of paths (none for text given in memory): what a trainer
    names as its data in the card (``save_final``'s ``datasets``)."""
    items = [corpus] if isinstance(corpus, (str, os.PathLike)) else corpus if isinstance(corpus, (list, tuple)) else []
    return [str(c) for c in items if isinstance(c, (str, os.PathLike)) and os.path.isfile(c)]


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


def write_code(folder) -> list[str]:
    """Write into a saved lineage folder the code that loads it with ``trust_remote_code`` alone, without hf_lineage,
    where it has none (the shipped checkpoints hold weights, config, tokenizer and card): the family's configuration,
    modeling and tokenizer modules with the files they import, and the ``auto_map`` naming their classes in
    ``config.json`` (and in ``tokenizer_config.json`` for a tokenizer of the family's own). The folder's model and
    tokenizer are loaded and saved aside, as a user's ``save_pretrained`` writes them, and only those files are taken
    from the save: the weights, tokenizer files and card stay as they are. Returns the names written."""
    from transformers import AutoConfig, AutoTokenizer
    from transformers.utils import logging

    folder = Path(folder)
    config = AutoConfig.from_pretrained(folder)
    family = family_of_config(config)
    if family is None:
        raise ValueError(f"{folder} holds a {config.model_type!r} model, not a lineage family's: no code to write")
    _, modeling = family_classes(family)
    # The class it was saved as (its weights load whole); a folder that names none is the base model.
    model_class = getattr(modeling, (config.architectures or [modeling.AUTO_CLASSES["AutoModel"]])[0])
    written, bars = [], logging.is_progress_bar_enabled()
    logging.disable_progress_bar()  # a step of a command, not a load the user asked for: no loading and writing bars
    try:
        with tempfile.TemporaryDirectory() as temporary:
            saved = Path(temporary)
            model_class.from_pretrained(folder).save_pretrained(saved)
            AutoTokenizer.from_pretrained(folder).save_pretrained(saved)
            for name in sorted(os.listdir(saved)):
                names_code = name == "tokenizer_config.json" and "auto_map" in json.loads((saved / name).read_text())
                if name.endswith(".py") or name == "config.json" or names_code:
                    shutil.copyfile(saved / name, folder / name)
                    written.append(name)
    finally:
        if bars:
            logging.enable_progress_bar()
    return written


# What a pretraining folder holds besides the model, left out of a push: the resumable checkpoints, the logs, the
# run's arguments (with the trainer's own paths) and an interrupted save.
NOT_PUSHED = ("checkpoints/*", "runs/*", "logs/*", "run_args.json", ".final.partial/*", "__pycache__/*", "*.pyc")


def check_push(repo_id: str, flag: str = "--hub-model-id") -> None:
    """Refuse, before any work, a push that cannot succeed: a malformed repository id, or no Hugging Face token
    (``hf auth login`` or ``HF_TOKEN``). A ValueError naming the problem."""
    from huggingface_hub import get_token
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(repo_id)
    except ValueError as error:
        raise ValueError(f"{flag} {repo_id!r} is not a Hub repository id (NAME or OWNER/NAME): "
                         f"{' '.join(str(error).split())}") from None
    if not get_token():
        raise ValueError(f"pushing to {repo_id} needs a Hugging Face token: log in with `hf auth login` or set HF_TOKEN")


def push_folder(folder, repo_id: str, commit_message: str, private: bool | None = None) -> str:
    """Upload a saved model folder (model, tokenizer, code, card, training record; not ``NOT_PUSHED``) to the Hub
    repository ``repo_id``, created if need be; returns the commit's address."""
    from huggingface_hub import HfApi

    api = HfApi()
    repo_id = api.create_repo(repo_id, private=private, exist_ok=True).repo_id
    commit = api.upload_folder(repo_id=repo_id, folder_path=str(folder), commit_message=commit_message,
                               ignore_patterns=list(NOT_PUSHED))
    return commit.commit_url
