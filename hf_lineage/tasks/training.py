"""From a checkpoint to a fine-tuned model and its card, the skeleton every task's ``run`` follows around
transformers' ``Trainer``, one step a function, in the order a run meets them:

``start`` (nothing to do? logging, seed) → ``checked_config`` (a family that cannot do the task is refused before
anything is built) → the task's labels → ``task_config`` (labels, ``--freeze_base`` and ``--task_head`` as config
overrides) →
``load_model`` (model, tokenizer, GPT's task tokens, ``--freeze_base`` for the rest) → ``encode_splits`` →
``make_trainer`` (with ``card_info`` for the model card) → ``train_evaluate_predict``.

A task module keeps what differs: its columns, labels, encoding, metrics, head and prediction files.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import datasets
import transformers
from huggingface_hub import ModelCard
from transformers import AutoConfig, AutoTokenizer, set_seed

from ..data.gpt_tasks import add_gpt_task_tokens, set_gpt_task_template
from ..models.card_lineage_utils import (card_data, hub_dataset_ids, hub_id, model_index_results, pipeline_tag,
                                         public_name)
from ..registry import FAMILIES, Family, family_classes, family_of_config, family_of_model_type
from .recipe_arguments import TASK_NAMES, DataTrainingArguments, ModelArguments, check_actions
from .splits import Split

# The config flag that freezes a family's pretrained features in its own task heads (NNLM and word2vec: the vectors;
# ELMo: the biLM). Families without one (BERT, GPT) are frozen by turning off the gradients of ``model.base_model``.
FREEZE_FLAGS = ("freeze_vectors", "freeze_bilm")
# The rules of a model from another library: ``Family``'s defaults (first token of a word, no task tokens, left
# padding allowed).
OTHER_LIBRARY_RULES = Family(config="", modeling="", objective="", paper_size="")


# --------------------------------------------------------------------------- model


def start(training_args) -> None:
    """The first lines of every run: refuse one with nothing to do or a precision the device lacks, log as asked,
    seed everything."""
    check_actions(training_args)
    check_precision(training_args)
    setup_logging(training_args)
    set_seed(training_args.seed)


def check_precision(training_args) -> None:
    """--bf16 / --fp16 only where the training device computes it natively (``hf_lineage.machine.precision``): on a CPU
    without it Trainer's autocast would run slower than float32 and fail in every LSTM (the static families' and
    ELMo's task heads), so it is refused before anything is built."""
    from ..machine.precision import PrecisionError, choose_precision, device_kind

    precision = "bf16" if training_args.bf16 else "fp16" if training_args.fp16 else "no"
    try:
        choose_precision(precision, named=True, device=device_kind(training_args.use_cpu), asked=f"--{precision}",
                         fix=f"drop --{precision} (float32)")
    except PrecisionError as error:
        raise ValueError(str(error)) from None


def family_of(config) -> str:
    return config.model_type.removeprefix("lineage-")


def family_rules(config) -> Family:
    """The registry entry of a lineage config's family (its rules: which token of a word is labelled, GPT's task
    tokens, left padding); another library's model gets the defaults (``Family``'s field defaults)."""
    family = family_of_config(config)
    return FAMILIES[family] if family else OTHER_LIBRARY_RULES


def load_config(model_args: ModelArguments, path: str | None = None, **overrides):
    path = path or model_args.config_name or model_args.model_name_or_path
    try:
        return AutoConfig.from_pretrained(path, **model_args.hub_kwargs(), **overrides)
    except OSError as error:
        raise ValueError(f"Cannot load a model config from {path!r}: {error}") from None


def require_auto_class(config, auto_class, task: str, path: str) -> None:
    """A clear error for a checkpoint whose family has no class for the task (before anything is built)."""
    if type(config) not in auto_class._model_mapping:
        raise ValueError(
            f"{path} is a {family_of(config)!r} model (model_type {config.model_type!r}), a model that cannot do "
            f"{TASK_NAMES.get(task, task)}: its family has no {auto_class.__name__} class"
        )


def checked_config(model_args: ModelArguments, auto_class, task: str, path: str | None = None):
    """The checkpoint's config, refused with a clear error when its family has no ``auto_class`` for ``task``."""
    config = load_config(model_args, path)
    require_auto_class(config, auto_class, task, path or model_args.model_name_or_path)
    return config


def task_config(model_args: ModelArguments, config, **overrides):
    """The config the task model is built from: the checkpoint's with the task's ``overrides`` (its labels, ...)
    and ``--freeze_base`` where the family's heads read a freeze flag (``config`` is the checkpoint's)."""
    return load_config(model_args, **overrides, **freeze_overrides(config, model_args.freeze_base),
                       **task_head_overrides(config, model_args.task_head))


def load_model(model_args: ModelArguments, auto_class, config, gpt_task_tokens: bool = False):
    """(model, tokenizer) for the task, the model built by ``auto_class`` with ``config`` (``task_config``'s).

    ``gpt_task_tokens``: GPT's ``<s> $ <e>`` join the vocabulary (new embedding rows, learned in fine-tuning) and
    the tokenizer applies the paper's input transformation itself, so the saved folder's pipelines read input as it
    was fine-tuned. ``--freeze_base`` comes last, on the model as it will be trained."""
    tokenizer = load_tokenizer(model_args)
    model = auto_class.from_pretrained(model_args.model_name_or_path, config=config, **model_args.hub_kwargs())
    if gpt_task_tokens:
        add_gpt_task_tokens(tokenizer, model)
        set_gpt_task_template(tokenizer)
    if not freeze_overrides(config, model_args.freeze_base):  # otherwise the heads freeze themselves
        freeze_base_model(model, model_args.freeze_base)
    if getattr(model_args, "cache_frozen_features", False) and hasattr(model, "remember_frozen_layers"):
        model.remember_frozen_layers(folder=frozen_layers_folder())
    return model, tokenizer


def frozen_layers_folder() -> Path:
    """Where ``--cache_frozen_features`` keeps a frozen network's layers between runs: ``$HF_LINEAGE_CACHE/
    frozen-layers`` (default ``~/.cache/hf_lineage/frozen-layers``), one subfolder per network's weights."""
    from ..convert.sources import cache_root

    return cache_root() / "frozen-layers"


def load_tokenizer(model_args: ModelArguments, path: str | None = None):
    path = path or model_args.tokenizer_name or model_args.model_name_or_path
    try:
        return AutoTokenizer.from_pretrained(path, **model_args.hub_kwargs())
    except OSError as error:
        raise ValueError(f"Cannot load a tokenizer from {path!r}: {error}") from None


def freeze_overrides(config, freeze_base: bool | None) -> dict:
    """Config overrides for ``--freeze_base`` in families whose task heads read a freeze flag."""
    flag = next((f for f in FREEZE_FLAGS if hasattr(config, f)), None)
    return {flag: freeze_base} if flag is not None and freeze_base is not None else {}


def task_head_overrides(config, task_head: str | None) -> dict:
    """``--task_head`` as a config override, for the families that have a choice (GPT and BERT: ``task_head``)."""
    if task_head is None:
        return {}
    if not hasattr(config, "task_head"):
        raise ValueError(f"--task_head: a {family_of(config)!r} model has no choice of task head (only GPT and BERT; "
                         "the static-vector families and ELMo always read their features through the task encoder)")
    return {"task_head": task_head}


def freeze_base_model(model, freeze_base: bool | None) -> None:
    """``--freeze_base`` for the models without a freeze flag: turn off the gradients of the pretrained part
    (``model.base_model``; an encoder-decoder's encoder). The task layers keep training."""
    if not freeze_base:
        return
    base = model.encoder if isinstance(model, transformers.EncoderDecoderModel) else model.base_model
    if base is model:
        raise ValueError(f"--freeze_base: cannot tell the pretrained part of {type(model).__name__} from its task "
                         "layers (no base_model_prefix)")
    for param in base.parameters():
        param.requires_grad_(False)


def parameter_counts(model) -> dict[str, int]:
    params = list(model.parameters())
    return {"parameters": sum(p.numel() for p in params),
            "trainable_parameters": sum(p.numel() for p in params if p.requires_grad)}


def sequence_length_limit(requested: int, tokenizer, config) -> int:
    """``requested``, capped by the tokenizer's and the model's position limits (NNLM, word2vec and ELMo have none)."""
    limits = [requested, getattr(tokenizer, "model_max_length", None) or requested]
    positions = getattr(config, "max_position_embeddings", None)
    if positions:
        limits.append(positions)
    return int(min(limits))


def encode_splits(splits: dict[str, Split], function, fn_kwargs: dict, data_args: DataTrainingArguments,
                  desc: str = "Tokenizing") -> dict:
    """Every split's dataset mapped in batches through ``function(examples, **fn_kwargs)``, its columns replaced."""
    return {name: split.dataset.map(function, batched=True, remove_columns=split.dataset.column_names,
                                    fn_kwargs=fn_kwargs, num_proc=data_args.preprocessing_num_workers,
                                    desc=f"{desc} {name}")
            for name, split in splits.items()}


# --------------------------------------------------------------------------- outputs


class RecipeTrainerMixin:
    """What the recipes add to Trainer (a mixin, before the Trainer class in the bases):

    * hf_lineage's model card (base model, data, metrics, how it was trained) as README.md, in place of Trainer's
      own: ``trainer.create_model_card()`` after training, and ``push_to_hub`` uploads the same card;
    * every input the tokenizer makes reaches the model: Trainer drops dataset columns that are not named arguments
      of ``forward`` (the heads name ``char_ids`` now; this keeps any other tokenizer input too)."""

    card_info: dict | None = None

    def _get_eval_sampler(self, eval_dataset):
        """Evaluation and prediction read the data in its own order. transformers 5 groups evaluation batches by
        length too when ``train_sampling_strategy="group_by_length"``, and ``trainer.predict`` then returns its
        predictions in that shuffled order: every prediction file a recipe writes (one row per input, in the input's
        order) would pair inputs with other inputs' predictions, silently."""
        if self.args.train_sampling_strategy != "group_by_length" or eval_dataset is None:
            return super()._get_eval_sampler(eval_dataset)
        from torch.utils.data import SequentialSampler

        # What Trainer itself does without grouping: sequential in one process, accelerate's sharding in several.
        return SequentialSampler(eval_dataset) if self.args.world_size <= 1 else None

    def _set_signature_columns_if_needed(self):
        super()._set_signature_columns_if_needed()
        names = getattr(self.processing_class, "model_input_names", None) or []
        self._signature_columns += [name for name in names if name not in self._signature_columns]

    def create_model_card(self, **kwargs):
        if not self.is_world_process_zero():
            return
        info = self.card_info or {}
        path = os.path.join(self.args.output_dir, "README.md")
        results = {}
        results_file = os.path.join(self.args.output_dir, "all_results.json")
        if os.path.exists(results_file):
            with open(results_file, encoding="utf-8") as f:
                results = json.load(f)
        with open(path, "w", encoding="utf-8") as f:
            f.write(model_card(info, results, self.args))


def paper_of(model_type: str) -> str:
    """The paper of a lineage model type (its config class's ``paper``), for a card written from a model type."""
    family = family_of_model_type(model_type)
    if family:
        return family_classes(family)[0].paper
    return "see the hf_lineage documentation"


def model_card(info: dict, results: dict, args) -> str:
    """Markdown with a YAML header (the Hub's metadata: license, datasets and base model as Hub ids only, language,
    pipeline tag, tags, the run's evaluation metrics as ``model-index``): base model, family, task, data, the run's
    metrics, training settings, use."""
    base = info.get("base_model", "")
    model_type = info.get("model_type", "")
    task = info.get("task", "")
    auto_class = info.get("auto_class", "AutoModel")
    sources = [info["dataset_name"]] if info.get("dataset_name") else [
        split_info["source"] for split_info in info.get("data", {}).values()]
    hub_datasets = hub_dataset_ids(sources)
    validation = info.get("data", {}).get("validation", {}).get("source", "")
    # model-index names the evaluation data: its Hub id (and configuration), or the local file's name.
    dataset_id = hub_datasets[0] if hub_datasets else "local"
    dataset_name = ("/".join(filter(None, [dataset_id, info.get("dataset_config_name")])) if hub_datasets
                    else os.path.basename(validation.split(" ")[0]) or "local data")
    evaluation = model_index_results(results, pipeline_tag(auto_class) or task, dataset_id, dataset_name,
                                     info.get("dataset_config_name"))
    data = card_data(model_type, auto_class, base_model=base, datasets=hub_datasets, language=base_languages(base),
                     model_name=Path(args.output_dir).name, eval_results=evaluation, tags=[task.replace("_", "-")])
    header = ["---", data.to_yaml(), "---"]
    data_rows = "\n".join(f"| {split} | `{public_name(split_info['source'])}` | {split_info['examples']:,} |"
                          for split, split_info in info.get("data", {}).items())
    metric_rows = "\n".join(f"| `{k}` | {v:.4f} |" if isinstance(v, float) else f"| `{k}` | {v} |"
                            for k, v in sorted(results.items()) if "runtime" not in k and "per_second" not in k)
    settings = {
        "learning_rate": args.learning_rate, "num_train_epochs": args.num_train_epochs,
        "max_steps": args.max_steps, "per_device_train_batch_size": args.per_device_train_batch_size,
        "seed": args.seed, **info.get("settings", {}),
    }
    setting_rows = "\n".join(f"| `{k}` | `{v}` |" for k, v in settings.items())
    return "\n".join(header) + f"""

# {Path(args.output_dir).name}

A `{model_type}` model fine-tuned for {TASK_NAMES.get(task, task)} with hf_lineage's `recipes/{task}.py`
recipe. Base model: {f"`{base}`" if hub_id(base) else f"a local checkpoint, `{public_name(base)}`"}.

Paper: {paper_of(model_type)}

## Data

| split | data | examples |
|---|---|---|
{data_rows}

## Results

| metric | value |
|---|---|
{metric_rows}

## Training

| setting | value |
|---|---|
{setting_rows}

## Use

```python
import hf_lineage  # registers the lineage families (or pass trust_remote_code=True without it)
from transformers import {auto_class}, AutoTokenizer
model = {auto_class}.from_pretrained("<this folder or repo>")
tokenizer = AutoTokenizer.from_pretrained("<this folder or repo>")
```
"""


def base_languages(base: str) -> list[str]:
    """The languages of a base model in a local folder, from its card's metadata (a fine-tuned model reads what its
    base read); none for a Hub id, whose card is not fetched for this."""
    card = os.path.join(base or "", "README.md")
    if not os.path.isfile(card):
        return []
    language = ModelCard.load(card).data.language or []
    return [language] if isinstance(language, str) else list(language)


def split_card_data(splits: dict[str, Split], data_args: DataTrainingArguments) -> dict:
    return {"data": {name: {"source": split.source, "examples": len(split.dataset)} for name, split in splits.items()},
            "dataset_name": data_args.dataset_name, "dataset_config_name": data_args.dataset_config_name}


def card_info(task: str, model_args: ModelArguments, data_args: DataTrainingArguments, config,
              splits: dict[str, Split], auto_class, **settings) -> dict:
    """What the model card says of a run (``model_card``): base model, family, task, data and ``settings``."""
    return {"base_model": model_args.model_name_or_path, "model_type": config.model_type, "task": task,
            "auto_class": getattr(auto_class, "__name__", auto_class), **split_card_data(splits, data_args),
            "settings": settings}


def make_trainer(trainer_class, model, tokenizer, training_args, encoded: dict, collator, card: dict, **kwargs):
    """``trainer_class`` on the encoded ``train`` and ``validation`` splits, writing ``card`` (``card_info``) as the
    model card; ``kwargs`` are the rest of its arguments (``compute_metrics``, ``callbacks``, ...)."""
    trainer = trainer_class(model=model, args=training_args, train_dataset=encoded.get("train"),
                            eval_dataset=encoded.get("validation"), processing_class=tokenizer, data_collator=collator,
                            **kwargs)
    trainer.card_info = card
    return trainer


def logits_of(predictions):
    """The model's first output as Trainer gathers outputs (a tuple when the model returns more than one)."""
    return predictions[0] if isinstance(predictions, tuple) else predictions


def predict(trainer, test_dataset, scored: bool = True):
    """``trainer.predict`` on the test split; without gold labels there (``scored=False``) nothing is scored."""
    if not scored:
        trainer.compute_metrics = None
    return trainer.predict(test_dataset, metric_key_prefix="predict")


def train_evaluate_predict(trainer, encoded: dict, write_predictions=None, save_tokenizers=()):
    """The end of every recipe: train (resuming if asked), save model + tokenizer, evaluate, predict, write
    all_results.json and the model card, push if asked. ``encoded`` holds the ``train``, ``validation`` and
    ``test`` datasets the run needs; ``write_predictions(trainer, test_dataset)`` returns the prediction metrics
    after writing its files. Returns every metric, keyed like all_results.json."""
    training_args = trainer.args
    train_dataset, eval_dataset, test_dataset = (encoded.get(name) for name in ("train", "validation", "test"))
    results = {}
    if training_args.do_train:
        outcome = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
        metrics = dict(outcome.metrics, train_samples=len(train_dataset), **parameter_counts(trainer.model))
        trainer.save_model()  # the model and its tokenizer (processing_class)
        for subfolder, tokenizer in save_tokenizers:
            if trainer.is_world_process_zero():
                tokenizer.save_pretrained(os.path.join(training_args.output_dir, subfolder))
        trainer.log_metrics("train", metrics)
        trainer.save_metrics("train", metrics)
        trainer.save_state()
        results.update(metrics)
    if training_args.do_eval:
        metrics = trainer.evaluate(eval_dataset=eval_dataset)
        metrics["eval_samples"] = len(eval_dataset)
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)
        results.update(metrics)
    if training_args.do_predict:
        metrics = write_predictions(trainer, test_dataset)
        metrics["predict_samples"] = len(test_dataset)
        trainer.log_metrics("predict", metrics)
        trainer.save_metrics("predict", metrics)
        results.update(metrics)
    memo = getattr(trainer.model, "frozen_layers_memo", None)  # --cache_frozen_features: what it kept and saved
    if memo is not None:  # after prediction: the whole run's sentences (frozen_layers_results.json)
        metrics = {f"frozen_layers_{name}": value for name, value in memo.summary().items() if value is not None}
        trainer.log_metrics("frozen_layers", metrics)
        trainer.save_metrics("frozen_layers", metrics)
        results.update(metrics)
    trainer.create_model_card()
    if training_args.push_to_hub:
        trainer.push_to_hub()
    return results


def setup_logging(training_args) -> None:
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                        handlers=[logging.StreamHandler(sys.stdout)])
    level = training_args.get_process_log_level()
    logging.getLogger("hf_lineage").setLevel(level)
    datasets.utils.logging.set_verbosity(level)
    transformers.utils.logging.set_verbosity(level)
