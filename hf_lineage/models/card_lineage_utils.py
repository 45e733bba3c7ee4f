"""Model cards of the lineage models: the Markdown a saved folder carries as README.md and the YAML metadata the Hub
reads from it (``license``, ``datasets``, ``language``, ``pipeline_tag``, ``base_model``, ``tags``, ``model-index``),
written through huggingface_hub's ``ModelCard``/``ModelCardData`` so the YAML is the Hub's own.

This file is copied next to a saved model with the modeling files (``modeling_lineage_utils`` imports it), so it
imports only huggingface_hub and the standard library.
"""

import os
import re
from typing import TYPE_CHECKING

# huggingface_hub's card classes are imported by the functions that write cards: their module imports the Hub client
# (half a second), and the tables here are read by command lines that only parse their options.
if TYPE_CHECKING:
    from huggingface_hub import EvalResult, ModelCardData

# The tag that marks a card as hf_lineage's: a card with it is kept when a model is pushed (``keep_lineage_card``).
LIBRARY_TAG = "hf-lineage"
# hf_lineage's licence, which covers its code and the weights a person trains with it. The data's own licence (the
# shipped checkpoints read WikiText-2, CC BY-SA) is stated in the card's text.
LICENSE = "apache-2.0"

# The Hub's task of a head, by the end of its class name (``LineageBertForMaskedLM``, ``AutoModelForCausalLM``).
PIPELINE_TAGS = {
    "ForQuestionAnswering": "question-answering",
    "ForTokenClassification": "token-classification",
    "ForIntentAndSlots": "token-classification",
    "ForSequenceClassification": "text-classification",
    "ForMultipleChoice": "multiple-choice",
    "ForMaskedLM": "fill-mask",
    "ForCausalLM": "text-generation",
}
# A pre-training class is read as what it predicts: BERT's masked words, ELMo's next words (both ways). word2vec's
# output layer is no language model, so its folder is word vectors (feature-extraction), as is every base model.
PRETRAINING_PIPELINE_TAGS = {"lineage-bert": "fill-mask", "lineage-elmo": "text-generation"}

# Data files the lineage reads by name, and the Hub dataset they are from (WikiText-2, Merity et al. 2016).
KNOWN_DATA_FILES = {
    f"wiki.{split}.{kind}": "Salesforce/wikitext" for split in ("train", "valid", "test") for kind in ("tokens", "raw")
}
# The language of a known Hub dataset, for the card of a model trained on it alone.
KNOWN_DATASET_LANGUAGES = {"Salesforce/wikitext": "en"}
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def pipeline_tag(class_name: str, model_type: str = "") -> str | None:
    """The Hub's ``pipeline_tag`` of a model class (or Auto class) name; None for a name that is not a model's."""
    for suffix, tag in PIPELINE_TAGS.items():
        if class_name.endswith(suffix):
            return tag
    if class_name.endswith("ForPreTraining"):
        return PRETRAINING_PIPELINE_TAGS.get(model_type, "feature-extraction")
    if class_name.endswith("Model"):
        return "feature-extraction"
    return None


def hub_id(name) -> str | None:
    """``name`` when it can only be a Hub repository id; None for a path on this machine (or nothing): a card never
    names a folder of the machine it was written on."""
    name = str(name or "")
    return name if HUB_ID.match(name) and not os.path.exists(name) else None


def public_name(source) -> str:
    """How a card's text names a model or data source: a path on this machine (or a file prefix in one of its
    folders, as parallel text ``PREFIX.mr``/``PREFIX.en`` is given) by its last part (the card is published; the
    trainer's folders are nobody's business), anything else (a Hub id) as it is."""
    source = str(source or "")
    folder = os.path.dirname(source)
    local = os.path.exists(source) or bool(folder) and os.path.isdir(folder)
    return os.path.basename(os.path.normpath(source)) if source and local else source


def hub_dataset_ids(sources) -> list[str]:
    """The Hub ids of the data a model was trained on, for the card's ``datasets``: a file the lineage knows by name
    (``wiki.train.tokens``) as its dataset's id, a Hub id as it is; any other local file or folder is left out.
    ``LANG=PATH`` (a multilingual corpus) is read as its path."""
    ids = []
    for source in sources or ():
        source = str(source).split("=", 1)[-1]
        found = KNOWN_DATA_FILES.get(os.path.basename(source.rstrip("/"))) or hub_id(source)
        if found and found not in ids:
            ids.append(found)
    return ids


def card_data(model_type: str, class_name: str, *, base_model=None, datasets=(), language=(), license=LICENSE,
              model_name=None, eval_results=None, tags=()) -> "ModelCardData":
    """The card's metadata: ``tags`` hold ``hf-lineage`` and the model type; ``base_model`` and ``datasets`` only as
    Hub ids; ``model-index`` when ``eval_results`` (``EvalResult``s) are given."""
    from huggingface_hub import ModelCardData

    return ModelCardData(
        library_name="transformers", license=license, language=list(language) or None,
        datasets=hub_dataset_ids(datasets) or None, base_model=hub_id(base_model),
        pipeline_tag=pipeline_tag(class_name, model_type),
        tags=list(dict.fromkeys(t for t in (LIBRARY_TAG, model_type, *tags) if t)),
        model_name=model_name if eval_results else None, eval_results=eval_results or None,
    )


def card_text(data: "ModelCardData", body: str) -> str:
    """README.md: ``data`` as the YAML header, then ``body``."""
    return f"---\n{data.to_yaml()}\n---\n\n{body.lstrip()}"


def update_card(text: str, **metadata) -> str:
    """``text`` (a card, with or without a YAML header) with the ``metadata`` fields set; None or an empty list
    leaves one as it is. ``datasets`` and ``base_model`` are kept to Hub ids."""
    from huggingface_hub import ModelCard

    card = ModelCard(text)
    if metadata.get("datasets"):
        metadata["datasets"] = hub_dataset_ids(metadata["datasets"])
    if "base_model" in metadata:
        metadata["base_model"] = hub_id(metadata["base_model"])
    for name, value in metadata.items():
        if value is not None and not (isinstance(value, (list, tuple)) and not value):
            setattr(card.data, name, list(value) if isinstance(value, tuple) else value)
    return str(card)


def model_index_results(results: dict, task_type: str, dataset_id: str, dataset_name: str, dataset_config=None,
                 split: str = "validation") -> "list[EvalResult]":
    """``model-index`` entries of a run's evaluation metrics (``eval_accuracy``, ``eval_f1``, ...; numbers only)."""
    from huggingface_hub import EvalResult

    return [EvalResult(task_type=task_type, dataset_type=dataset_id, dataset_name=dataset_name,
                       dataset_config=dataset_config, dataset_split=split, metric_type=name.removeprefix("eval_"),
                       metric_value=value)
            for name, value in sorted(results.items())
            if name.startswith("eval_") and isinstance(value, (int, float)) and not isinstance(value, bool)
            and not any(word in name for word in ("runtime", "per_second", "samples", "epoch", "loss"))]


def model_card(model, base_model=None, **metadata) -> str:
    """A short model card: what the model is, its sizes, and how to load it with or without hf_lineage; its metadata
    from the model's class (``pipeline_tag``), its config (the base model it was loaded from, when that is a Hub id)
    and ``metadata`` (``datasets``, ``language``, ...)."""
    config = model.config
    sizes = {
        k: v
        for k, v in config.to_diff_dict().items()
        if isinstance(v, (int, float, str, bool)) and not k.startswith("_") and k not in ("transformers_version",)
    }
    rows = "\n".join(f"| `{k}` | `{v}` |" for k, v in sorted(sizes.items()))
    source = getattr(config, "_name_or_path", "") or ""
    base_model = hub_id(source) if base_model is None else hub_id(base_model)
    base = f"`{base_model}`" if base_model else "a local checkpoint" if source else "trained from scratch"
    n_params = sum(p.numel() for p in model.parameters())
    data = card_data(config.model_type, type(model).__name__, base_model=base_model, **metadata)
    return card_text(data, f"""
# {type(model).__name__}

A `{config.model_type}` model from [hf_lineage](https://pypi.org/project/hf-lineage/): the lineage of NLP
pretraining as Hugging Face models. {n_params:,} parameters. Base model: {base}.

Paper: {getattr(config, "paper", None) or "see the hf_lineage documentation"}

## Use

```python
# with hf_lineage installed
import hf_lineage
from transformers import AutoModel, AutoTokenizer
model = AutoModel.from_pretrained("<this folder or repo>")

# without it: the modeling code ships with the weights
model = AutoModel.from_pretrained("<this folder or repo>", trust_remote_code=True)
```

## Configuration

| field | value |
|---|---|
{rows}
""")


def keep_lineage_card(path: str, model, repo_id: str) -> None:
    """Before ``push_to_hub`` uploads a folder: transformers has just written the Hub repo's card, or its generic
    one, over the card ``save_pretrained`` wrote (``path``). A lineage card (the repo's own, a recipe's with its
    results) stays, as transformers keeps a repo's card; any other is replaced by this model's, with its tags."""
    from huggingface_hub import ModelCard

    found = ModelCard.load(path) if os.path.isfile(path) else None
    if found is not None and LIBRARY_TAG in (found.data.tags or []):
        return
    source = getattr(model.config, "_name_or_path", "")
    ours = ModelCard(model_card(model, base_model="" if source == repo_id else None))
    for tag in (found.data.tags if found is not None else None) or []:
        if tag not in ours.data.tags:
            ours.data.tags.append(tag)
    ours.save(path)
