"""Continued pre-training (``--init-from FOLDER|HUB_ID``): the model a run starts from instead of a fresh one, as
transformers' ``run_mlm.py --model_name_or_path`` does (domain adaptation, ULMFiT's second stage, more steps on a
converted bert-base).

The base is a saved lineage model of the family being trained, or transformers' own model of that family (its
record's ``transformers_base``: BERT's ``BertForPreTraining``, OpenAI GPT's ``OpenAIGPTLMHeadModel``), converted on
load by ``hf_lineage.convert.from_transformers``. Its tokenizer and config are kept: options that would contradict
them (``--tokenizer``, ``--vocab-size``, ``--config``, checked before anything is read by
``pretraining.arguments.check_continuable``; a ``--set`` that changes a weight's shape) are refused before anything
is written, as is a base of another family.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch

from ..registry import FAMILIES, family_classes, family_of_model_type, family_spec
from .errors import PretrainError

# Keys of a saved config.json that say where it came from, not what the model is.
PROVENANCE_KEYS = ("architectures", "auto_map", "transformers_version", "_name_or_path", "model_type")


@dataclass
class BaseModel:
    """The model a continued run starts from, with its tokenizer."""

    model: Any  # None once continued_model has handed its weights to the run
    tokenizer: Any
    config: Any  # the run's: the base's, with the --set overrides that keep its weights' shapes
    init_from: str  # as given: a folder or a Hub id
    converted_from: str | None  # "transformers BertForPreTraining" when converted on load
    newly_initialised: list[str]  # weights of the pre-training heads the base did not hold

    def describe(self, name=str) -> str:
        """What the run continues; ``name`` says how to write the base (the card names a local folder by its last
        part: it is published)."""
        return (f"continuing {self.config.model_type} from {name(self.init_from)}"
                + (f" (converted from {self.converted_from})" if self.converted_from else ""))

    def record(self, name=str) -> dict:
        """What the pretraining record says of the base: ``init_from`` (written by ``name``), ``converted_from`` when
        converted."""
        return {"init_from": name(self.init_from), **({"converted_from": self.converted_from} if self.converted_from else {})}


def read_config(init_from: str) -> tuple[str, dict]:
    """(where the base loads from, its config.json): a folder, or a Hub id, whose config.json alone is fetched here
    (transformers' ``from_pretrained`` then fetches only the files it loads, not a repository's every format)."""
    path = Path(init_from).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise PretrainError(f"--init-from {init_from}: the folder holds no config.json (not a saved model)")
        return str(path), json.loads((path / "config.json").read_text())
    if init_from.startswith(("/", ".", "~")) or len(Path(init_from).parts) > 2 or path.exists():
        raise PretrainError(f"--init-from {init_from}: no such folder")
    from huggingface_hub import hf_hub_download

    try:
        return init_from, json.loads(Path(hf_hub_download(init_from, "config.json")).read_text())
    except Exception as error:  # offline, no such repository, an invalid id: all say the same to the user
        reason = " ".join(str(error).split())[:300]
        raise PretrainError(f"--init-from {init_from}: no such folder here, and the Hub model {init_from} could not "
                            f"be fetched ({type(error).__name__}: {reason})") from None


def load_base(args, objective, given) -> BaseModel:
    """The base model with its weights (float32, for training), its tokenizer and the run's config, checked against
    the run's (settled) arguments; ``given``: the options the command line gave."""
    from transformers import AutoTokenizer

    source, saved_config = read_config(args.init_from)
    model_type = saved_config.get("model_type")
    family = family_of_model_type(model_type or "")
    _, modeling = family_classes(args.family)
    model_class = getattr(modeling, objective.model_class_name)
    converted_from = None
    transformers_base = family_spec(args.family).transformers_base  # converted on load
    if family == args.family:
        model, info = model_class.from_pretrained(source, dtype=torch.float32, output_loading_info=True)
    elif transformers_base is not None and model_type == transformers_base.model_type:
        model, info, converted_from = _converted(transformers_base.class_name, source)
    else:
        accepted = f"a lineage-{args.family} model" + (
            f" or transformers' {transformers_base.class_name} ({transformers_base.model_type})"
            if transformers_base is not None else "")
        hint = f"; `hf-lineage pretrain {family} --init-from` continues it" if family else ""
        raise PretrainError(f"--init-from {args.init_from} holds a {model_type or 'model of unknown type'} model; "
                            f"`hf-lineage pretrain {args.family}` continues {accepted}{hint}")
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError) as error:
        raise PretrainError(f"--init-from {args.init_from}: its tokenizer does not load ({error})") from None
    if len(tokenizer) > model.config.vocab_size:
        raise PretrainError(f"--init-from {args.init_from}: its tokenizer has {len(tokenizer)} tokens, more than the "
                            f"model's vocab_size {model.config.vocab_size}")
    base = BaseModel(model, tokenizer, None, args.init_from, converted_from, sorted(set(info["missing_keys"])))
    default_sequence_length(args, base, given)
    base.config = continued_config(args, objective, base)
    return base


def _converted(class_name: str, source: str):
    """transformers' ``class_name`` at ``source``, as the lineage model (``convert.from_transformers``)."""
    import transformers

    from ..convert import from_transformers

    source, info = getattr(transformers, class_name).from_pretrained(source, dtype=torch.float32,
                                                                     output_loading_info=True)
    model = from_transformers(source)
    model.config._name_or_path = source.config._name_or_path
    return model, info, f"transformers {class_name}"


def continued_config(args, objective, base: BaseModel):
    """The run's config: the base's, with the ``--set`` overrides that leave every weight's shape as it is (dropout,
    say), through the family's ``build_config`` so that its checks (``--max-seq-length`` against the positions, ...)
    and the state it keeps for the run are the same as a fresh run's."""
    config = base.model.config
    given = dict(args.overrides)
    refused = [name for name in given if name in objective.set_options]
    if refused:
        raise PretrainError(f"--init-from {args.init_from} keeps that model's tokenizer: drop --set "
                            + ", ".join(refused))
    names = {f.name for f in fields(type(config))} - set(PROVENANCE_KEYS)
    kept = {k: v for k, v in config.to_dict().items() if k in names}
    reshaping = [name for name in given if given[name] != kept.get(name) and _changes_weights(base.model, name,
                                                                                            given[name])]
    if reshaping:
        now = ", ".join(f"{name}={kept.get(name)!r}" for name in reshaping)
        raise PretrainError(f"--set {', '.join(f'{n}={given[n]!r}' for n in reshaping)} contradicts the model of "
                            f"--init-from {args.init_from} ({now}): it changes the shape of its weights")
    # Every field is given, so the named size only starts what the base's fields then replace.
    return objective.build_config(FAMILIES[args.family].paper_size, base.tokenizer, {**kept, **given})


def _changes_weights(model, name: str, value) -> bool:
    """Whether setting config field ``name`` to ``value`` changes the names or shapes of the model's weights (built
    on the meta device: no memory, no initialisation)."""
    config = type(model.config).from_dict({**model.config.to_dict(), name: value})
    with torch.device("meta"):
        other = type(model)(config)
    shapes = lambda m: {k: tuple(v.shape) for k, v in m.state_dict().items()}  # noqa: E731
    return shapes(other) != shapes(model)


def continued_model(objective, args, base: BaseModel):
    """The model the run trains: the loaded base itself, or, when ``--set`` changed its config (a dropout), its
    weights in a model built from the run's config (modules read their config when built). The base lets go of it:
    one copy of the weights for the run."""
    model, base.model = base.model, None
    if args.overrides:
        rebuilt = type(model)(base.config)
        rebuilt.load_state_dict(model.state_dict())
        model = rebuilt
    objective.init_model(model)
    if base.newly_initialised:
        print(f"note: {base.init_from} has no {', '.join(base.newly_initialised)}: newly initialised",
              file=sys.stderr, flush=True)
    return model


def default_sequence_length(args, base: BaseModel, given) -> None:
    """Without ``--max-seq-length``, a run on a base with fewer positions than the family's default length reads
    sequences as long as its positions (``run_clm.py`` caps its block size at the model's limit likewise)."""
    positions = getattr(base.model.config, "max_position_embeddings", None)
    if "max_seq_length" not in given and positions and args.max_seq_length > positions:
        args.max_seq_length = positions


__all__ = ["BaseModel", "continued_model", "load_base"]
