"""A release of transformers' own models (BERT, OpenAI GPT) as ``hf-lineage convert`` reads it: one local folder
or Hub id, loaded by transformers' ``from_pretrained`` (the Hub cache; offline with ``HF_HUB_OFFLINE=1``), and the
converted lineage model's outputs checked against the release's before anything is written. Shared by
``convert.bert.release`` and ``convert.gpt.release``."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import transformers

from ..registry import family_spec

# The sentences the conversion checks the outputs on (capitals and accents: what the uncased models normalise).
CHECK_SENTENCES = ["The quick brown fox jumps over the lazy dog.", "A café in Zürich serves crème brûlée.",
                   "Hello!"]
# Largest |difference| accepted between the release's outputs and the converted model's, relative to the largest
# |output| (at least 1): float32 rounding is about 1e-6 of it; a weight put in the wrong place is of its order.
TOLERANCE = 1e-4


def outputs_notes(differences: dict[str, float]) -> str:
    measured = ", ".join(f"{name} {value:.1e}" for name, value in differences.items())
    return (f"\nChecked at conversion: on {len(CHECK_SENTENCES)} sentences (a padded batch) the largest difference "
            f"between the release's outputs in transformers and this model's was {measured}.\n")


@dataclass
class LoadedRelease:
    """A transformers release as read: its model (float32, eval mode), tokenizer, and where it came from."""

    model: Any
    tokenizer: Any
    source: str  # the Hub id, or a local folder's name
    hub_id: str | None  # None for a local folder
    newly_initialised: list[str]  # the model's weights the checkpoint did not hold


def load_transformers_release(family: str, sources: list[str]) -> LoadedRelease:
    """transformers' own model of ``family`` (its record's ``transformers_base``) and its tokenizer from ``sources``:
    one local folder or one Hub id, fetched by transformers' own ``from_pretrained`` (the HF cache; offline with
    ``HF_HUB_OFFLINE=1``), which takes only the config, the weights and the tokenizer's files. Every problem is a ``ConversionError``
    naming the source."""
    from .sources import ConversionError, one_line

    if len(sources) != 1:
        raise ConversionError(f"{family} takes one source, a transformers folder or a Hub model id (e.g. "
                              f"{_example_id(family)}); got {len(sources)}: {' '.join(map(str, sources)) or 'none'}")
    base = family_spec(family).transformers_base
    model_type, class_name = base.model_type, base.class_name
    source, hub_id = _resolve(family, str(sources[0]))
    config = _read_config(source, hub_id)
    found = config.get("model_type")
    if found != model_type:
        hint = ("; it is a lineage folder already, which loads as it is" if str(found).startswith("lineage-")
                else f"; `hf-lineage convert {family}` reads transformers' {family_spec(family).transformers_base.name}")
        raise ConversionError(f"{source}: holds a model of type {found!r}, not {model_type!r}{hint}")
    try:
        # Heads the checkpoint lacks are initialised from the seed, without touching the caller's random state.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            model, info = getattr(transformers, class_name).from_pretrained(source, dtype=torch.float32,
                                                                           output_loading_info=True)
        tokenizer = transformers.AutoTokenizer.from_pretrained(source)
    except Exception as error:  # missing weights file, unreadable tokenizer, an interrupted download
        raise ConversionError(f"{source}: does not load as transformers' {class_name} with its tokenizer "
                              f"({type(error).__name__}: {one_line(error)})") from None
    for how_it_was_loaded in _LOADING_KWARGS:  # transformers keeps them among what save_pretrained writes
        tokenizer.init_kwargs.pop(how_it_was_loaded, None)
    if len(tokenizer) > model.config.vocab_size:
        raise ConversionError(f"{source}: its tokenizer has {len(tokenizer)} tokens, more than the model's "
                              f"vocab_size {model.config.vocab_size}")
    # A tied copy (the MLM decoder's bias) is listed as missing when only its original is stored.
    missing = sorted(k for k in set(info["missing_keys"]) if not _TIED_COPY.search(k))
    name = hub_id or Path(source).expanduser().resolve().name
    return LoadedRelease(model.eval(), tokenizer, name, hub_id, missing)


# from_pretrained's own arguments, which transformers 5 leaves in the tokenizer's init_kwargs (and so in the saved
# tokenizer_config.json): how this copy was fetched, not what the tokenizer is.
_LOADING_KWARGS = ("is_local", "local_files_only", "cache_dir", "force_download", "proxies", "token", "revision",
                   "subfolder", "_commit_hash")
_TIED_COPY = re.compile(r"(cls\.predictions\.decoder\.(weight|bias)|lm_head\.weight)$")


def _example_id(family: str) -> str:
    """A Hub id of transformers' own model of ``family`` (its record's ``transformers_base``), for messages."""
    return family_spec(family).transformers_base.example_id


def _resolve(family: str, source: str) -> tuple[str, str | None]:
    """(what ``from_pretrained`` is given, the Hub id or None): a local folder, else an ``OWNER/NAME`` Hub id."""
    from .sources import ConversionError, looks_like_hub_id

    path = Path(source).expanduser()
    if path.is_dir():
        return str(path), None
    if path.exists():
        raise ConversionError(f"{source}: a file, where a transformers model folder or a Hub model id was expected")
    if looks_like_hub_id(source) and source.count("/") == 1:
        return source, source
    raise ConversionError(f"{source}: no such folder, nor a Hub model id OWNER/NAME (e.g. {_example_id(family)})")


def _read_config(source: str, hub_id: str | None) -> dict:
    """The release's config.json, read before any weights are fetched (a model of another type is refused at once)."""
    from .sources import ConversionError, one_line

    if hub_id is None:
        path = Path(source) / "config.json"
        if not path.is_file():
            raise ConversionError(f"{source}: the folder holds no config.json (not a saved transformers model)")
    else:
        from huggingface_hub import constants, hf_hub_download

        try:
            path = Path(hf_hub_download(hub_id, "config.json"))
        except Exception as error:  # no such repository, offline without it in the cache, a gated one
            where = ("not in the Hugging Face Hub cache, and HF_HUB_OFFLINE is set" if constants.HF_HUB_OFFLINE
                     else "not found on the Hugging Face Hub or in its cache")
            raise ConversionError(f"{hub_id}: no such local folder, and {where} "
                                  f"({type(error).__name__}: {one_line(error)})") from None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConversionError(f"{source}: its config.json does not read ({one_line(error)})") from None


def check_same_outputs(loaded: LoadedRelease, lineage, logits: list[str]) -> dict[str, float]:
    """The largest |difference| between the release's model and the converted one on ``CHECK_SENTENCES`` (a
    right-padded batch with its attention mask), per output: every layer's hidden states and each of ``logits``
    (output names, the same in both); a ``ConversionError`` when one is over ``TOLERANCE`` (relative)."""
    from .sources import ConversionError

    tokenizer = loaded.tokenizer
    rows = [tokenizer(sentence)["input_ids"] for sentence in CHECK_SENTENCES]
    length = max(map(len, rows))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0  # masked: never read
    input_ids = torch.tensor([row + [pad] * (length - len(row)) for row in rows])
    attention_mask = torch.tensor([[1] * len(row) + [0] * (length - len(row)) for row in rows])
    real = attention_mask.bool()
    with torch.no_grad():
        theirs, ours = (model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
                        for model in (loaded.model, lineage))
    # Per output (every layer's hidden states, each of the logits): (name, largest |difference|, largest |value| of
    # the release's). The check is relative to the output's size: a trained model's activations (tens) carry float32
    # rounding of another size than a fresh one's (units).
    measured = [("hidden states", (a[real] - b[real]).abs().max().item(), a[real].abs().max().item())
                for a, b in zip(theirs.hidden_states, ours.hidden_states)]
    for name in logits:
        a, b = getattr(theirs, name), getattr(ours, name)
        a, b = (a[real], b[real]) if a.dim() == 3 else (a, b)
        measured.append((name.replace("_", " "), (a - b).abs().max().item(), a.abs().max().item()))
    over = [f"{name} by {d:.2e}" for name, d, size in measured if not d <= TOLERANCE * max(1.0, size)]
    if over:
        raise ConversionError(f"{loaded.source}: the converted model's outputs differ from the release's "
                              f"({', '.join(over)}; tolerance {TOLERANCE} relative to the largest output)")
    differences = {}
    for name, d, _ in measured:
        differences[name] = max(d, differences.get(name, 0.0))
    return differences
