"""What a ``--models`` argument names, and how that model is scored, decided before anything is loaded.

An argument is ``[LABEL=]SOURCE``; SOURCE is, in this order:

1. ``kneser-ney`` or ``kneser-ney:ORDER`` (ORDER 2-5, default 5): the interpolated Kneser-Ney n-gram LM, trained here
   on ``--ngram-train-file`` or, by default, the WikiText-2 text the package embeds (the first 600,000 words of
   ``wiki.train.tokens``, on whose whole the shipped checkpoints were pretrained);
2. a shipped checkpoint's name (``svd``, ``nnlm``, ``word2vec``, ``glove``, ``elmo``, ``gpt``, ``bert``: the folder
   ``hf_lineage.checkpoints.path(name)`` gives, as ``hf-lineage lineage`` fine-tunes it; a local folder of that name
   is ``./gpt``);
3. a local folder with a ``config.json`` (a lineage folder, or any transformers model's);
4. otherwise a Hugging Face Hub model id (``gpt2``, ``google-bert/bert-base-uncased``), resolved by transformers.

The kind of scoring follows from the config (``kind_of_config``): ``causal`` (lineage GPT and NNLM, GPT-2, OpenAI GPT,
any ``*ForCausalLM``/``*LMHeadModel``), ``masked`` (lineage BERT, transformers' BERT and other ``*ForMaskedLM``),
``elmo`` (its two language models), ``vectors`` (svd, word2vec, GloVe: no sentence probability) and ``ngram``; a
folder whose ``pretraining.json`` says it has no sentence probability (a converted AllenNLP ELMo: the release has no
softmax) is ``unscored``, listed with that reason like the vectors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..convert.sources import looks_like_model_id
from .pairs import MinimalPairsError
from .text_preparation import corpus_style, text_style

NGRAM = "kneser-ney"
NGRAM_ORDERS = (2, 3, 4, 5)
DEFAULT_NGRAM_ORDER = 5
KINDS = ("causal", "masked", "elmo", "vectors", "unscored", "ngram")
VECTORS_WHY = "static word vectors define no probability of a sentence"


@dataclass(frozen=True)
class ModelSpec:
    """One model to score: ``label`` names its rows; ``folder`` is local (None for a Hub id or the n-gram);
    ``source`` says where it comes from, in the report's words."""

    argument: str
    label: str
    kind: str
    source: str
    folder: Path | None = None
    hub_id: str | None = None
    family: str | None = None  # the lineage family, None for another library's model
    order: int | None = None  # the n-gram's
    text_style: str = "raw"
    text_style_reason: str = ""
    unscored_why: str = ""  # a folder of a scored family that gives no sentence probability: why (kind "unscored")

    @property
    def sentence_probability(self) -> bool:
        return self.kind not in ("vectors", "unscored")

    @property
    def why_no_probability(self) -> str:
        return VECTORS_WHY if self.kind == "vectors" else self.unscored_why


def _ngram_order(source: str) -> int | None:
    """The order of a ``kneser-ney[:ORDER]`` source; None for anything else."""
    name, _, order = source.partition(":")
    if name.lower() != NGRAM:
        return None
    if not order:
        return DEFAULT_NGRAM_ORDER
    if not order.isdigit() or int(order) not in NGRAM_ORDERS:
        raise MinimalPairsError(f"--models {source}: the Kneser-Ney order is one of "
                                f"{', '.join(map(str, NGRAM_ORDERS))} ({NGRAM}:5 is a 5-gram)")
    return int(order)


def kind_of_config(config: dict) -> str:
    """How a model of this config (``config.json``'s content) is scored; a MinimalPairsError for a model with no
    language model head this command knows."""
    from ..registry import FAMILIES, family_of_model_type

    model_type = config.get("model_type") or ""
    architectures = config.get("architectures") or []
    family = family_of_model_type(model_type)
    causal_head = any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in architectures)
    if family is not None:  # a lineage family: its registry record says (``Family.head_free_scoring``)
        scoring = FAMILIES[family].head_free_scoring
        if scoring is None or (FAMILIES[family].word_vectors and not causal_head):
            return "vectors"  # svd, word2vec, GloVe: vectors only (NNLM's folders are its causal LM)
        return scoring
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    causal = model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    masked = model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES
    if causal and (config.get("is_decoder") or causal_head or not masked):
        return "causal"
    if masked:
        return "masked"
    raise MinimalPairsError(f"model type {model_type!r} ({', '.join(architectures) or 'no architectures'}) has neither "
                            "a causal nor a masked language model head: no sentence score to compare")


def _read_config(folder: Path, argument: str) -> dict:
    try:
        return json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except ValueError as error:
        raise MinimalPairsError(f"--models {argument}: {folder / 'config.json'} is not JSON ({error})") from None


def _hub_config(model_id: str, argument: str) -> dict:
    """A Hub model's config: from the local cache when it is there (offline too), else fetched; a MinimalPairsError
    naming the argument otherwise, at once for a near miss of a shipped name (``gtp``)."""
    import difflib

    from huggingface_hub.utils import logging as hub_logging
    from transformers import AutoConfig

    from .. import checkpoints

    try:
        return AutoConfig.from_pretrained(model_id, local_files_only=True).to_dict()
    except Exception:
        pass
    unknown = (f"unknown model {argument!r}: not {NGRAM}[:ORDER], a shipped checkpoint "
               f"({', '.join(checkpoints.FAMILIES)}), a local folder with a config.json")
    close = difflib.get_close_matches(model_id.lower(), [*checkpoints.FAMILIES, NGRAM], n=1, cutoff=0.6)
    if close:
        raise MinimalPairsError(f"{unknown}, nor a Hub model in the cache (did you mean {close[0]}?)")
    verbosity = hub_logging.get_verbosity()
    hub_logging.set_verbosity_error()  # the Hub client's retry notes: the one line below says what happened
    try:
        return AutoConfig.from_pretrained(model_id).to_dict()
    except Exception as error:  # offline, not found, gated: transformers' own error, named
        first = (str(error).strip().splitlines() or ["no message"])[0]
        raise MinimalPairsError(f"{unknown}, nor a Hub model that could be loaded ({type(error).__name__}: "
                                f"{first})") from None
    finally:
        hub_logging.set_verbosity(verbosity)


def resolve_model(argument: str, text_format: str = "auto", ngram_train_files=None) -> ModelSpec:
    """The ``ModelSpec`` of one ``--models`` argument (see the module docstring); a MinimalPairsError naming the
    argument when it names nothing this command can score. ``ngram_train_files``: the n-gram's training text
    (None: the embedded WikiText-2 sample), whose format is the n-gram's text style."""
    from .. import checkpoints

    label, sep, source = argument.partition("=")
    if not sep:
        label, source = "", argument
    elif not label or not source:
        raise MinimalPairsError(f"--models {argument}: LABEL=SOURCE needs both")
    order = _ngram_order(source)
    if order is not None:
        style, why = text_style(None, text_format) if text_format != "auto" else corpus_style(ngram_train_files)
        return ModelSpec(argument, label or f"{NGRAM}:{order}", "ngram", f"Kneser-Ney {order}-gram", order=order,
                         text_style=style, text_style_reason=why)
    if source in checkpoints.FAMILIES:
        folder, where = checkpoints.path(source), f"shipped checkpoint ({source})"
    elif Path(source).expanduser().is_dir():
        folder = Path(source).expanduser()
        if not (folder / "config.json").is_file():
            raise MinimalPairsError(f"--models {argument}: no config.json in {folder} (not a saved model folder)")
        where = str(source)
    elif looks_like_model_id(source):
        config = _hub_config(source, argument)
        style, why = text_style(None, text_format)
        return ModelSpec(argument, label or source, kind_of_config(config), f"Hub: {source}", hub_id=source,
                         text_style=style, text_style_reason=why)
    else:
        raise MinimalPairsError(f"unknown model {argument!r}: no such folder, and not {NGRAM}[:ORDER], a shipped "
                                f"checkpoint ({', '.join(checkpoints.FAMILIES)}) or a Hub model id")
    config = _read_config(folder, argument)
    from ..registry import family_of_model_type

    try:
        kind = kind_of_config(config)
    except MinimalPairsError as error:
        raise MinimalPairsError(f"--models {argument}: {error}") from None
    style, why = text_style(folder, text_format)
    unscored = pretraining_record(folder).get("no_sentence_probability") or ""
    return ModelSpec(argument, label or (source if source in checkpoints.FAMILIES else folder.resolve().name),
                     "unscored" if unscored else kind, where, folder=folder,
                     family=family_of_model_type(config.get("model_type") or ""), text_style=style,
                     text_style_reason=why, unscored_why=unscored)


def pretraining_record(folder) -> dict:
    """The folder's ``pretraining.json`` (a lineage or converted folder's record), {} when it has none or it is not
    JSON (then nothing in it changes how the model is scored)."""
    try:
        return json.loads((Path(folder) / "pretraining.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def resolve_models(arguments, text_format: str = "auto", ngram_train_files=None) -> list[ModelSpec]:
    """Every ``--models`` argument resolved, labels unique."""
    specs = [resolve_model(a, text_format, ngram_train_files) for a in arguments]
    labels = [s.label for s in specs]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise MinimalPairsError(f"--models: {', '.join(twice)} named twice (give one a label: LABEL=SOURCE)")
    return specs
