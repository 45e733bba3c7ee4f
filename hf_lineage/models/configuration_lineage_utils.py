"""Configuration pieces shared by every lineage family.

This file is copied next to a saved model (see ``custom_object_save``), so it imports only transformers and
same-folder siblings.
"""

import difflib
import sys
from dataclasses import dataclass, fields
from typing import Any, ClassVar

# transformers is imported by the functions that need it: its PreTrainedConfig imports torch, and the tables here
# (PAIR_ENCODINGS, TASK_HEADS, ...) are read by command lines that parse their options without it.

# Keyword arguments a person may give besides a config's own fields: the ones transformers' ``PreTrainedConfig``
# itself accepts (its ``__post_init__`` consumes or stores them), the keys ``save_pretrained`` writes
# (``model_type``, ``auto_map``), and those that configs saved by earlier transformers releases carry. The config
# classes themselves take any key, as transformers' do (``BertConfig(batch_norm_eps=1)`` stores it as an attribute,
# and transformers' tests and other libraries rely on that); ``check_known_kwargs`` refuses the rest where a person
# types the names (``hf-lineage pretrain --set``, ``from_named``), so a typo (``--set hiden_size=8``) or another
# family's field fails there instead of being stored in config.json.
TRANSFORMERS_KEYS = frozenset({
    "model_type", "auto_map", "transformers_version", "architectures", "name_or_path", "_name_or_path",
    "_commit_hash", "torch_dtype", "dtype", "num_labels", "id2label", "label2id", "problem_type",
    "output_attentions", "output_hidden_states", "return_dict", "attn_implementation", "experts_implementation",
    "_attn_implementation_internal", "_experts_implementation_internal", "_attn_implementation_autoset",
    "per_layer_config", "tie_last_hidden_states", "chunk_size_feed_forward", "is_encoder_decoder", "is_decoder",
    "add_cross_attention", "cross_attention_hidden_size", "tie_encoder_decoder", "tie_word_embeddings",
    "pad_token_id", "bos_token_id", "eos_token_id", "sep_token_id", "decoder_start_token_id", "use_cache",
    "torchscript", "use_bfloat16", "tf_legacy_loss", "pruned_heads", "finetuning_task", "tokenizer_class",
    "prefix", "task_specific_params", "gradient_checkpointing", "rope_scaling", "rope_theta", "rope_parameters",
    "quantization_config", "custom_pipelines",
})


# Keys of the joint intent-classification and slot-filling heads (``*ForIntentAndSlots``), which every family has:
# ``intent_labels``, the intent names in id order (the slot tags are the usual ``id2label``), and
# ``slot_loss_weight``, the weight of the slot loss in their sum (default 1). Stored like transformers' own keys.
INTENT_AND_SLOTS_KEYS = frozenset({"intent_labels", "slot_loss_weight"})


def _generation_keys() -> set[str]:
    # Generation settings that old configs carry; PreTrainedConfig drops them on load (private API: guarded).
    from transformers import GenerationConfig

    try:
        return set(GenerationConfig._get_default_generation_params())
    except AttributeError:
        return set(GenerationConfig().to_dict())


def check_known_kwargs(config, kwargs: dict) -> None:
    """Refuse keyword arguments that are neither a field of ``config`` (a config or its class) nor one of
    transformers' own keys, with a ValueError naming them and the nearest field. For names a person types:
    ``from_named``'s overrides and ``hf-lineage pretrain --set`` (``check_overrides``). The config classes
    themselves accept unknown keys, as transformers' configs do."""
    from transformers import PreTrainedConfig

    config_class = config if isinstance(config, type) else type(config)
    known = sorted(f.name for f in fields(config_class))
    unknown = sorted(set(kwargs) - set(known) - TRANSFORMERS_KEYS - INTENT_AND_SLOTS_KEYS - _generation_keys())
    if not unknown:
        return
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    own = [name for name in known if name not in {f.name for f in fields(PreTrainedConfig)}]
    raise ValueError(f"{config_class.__name__} ({config_class.model_type}) has no field {', '.join(hints)}; its own "
                     f"fields are: {', '.join(own)}")


class RegisteredPipelinesMixin:
    """Every lineage config: a pipeline that a saved folder names (``custom_pipelines``) and that is also registered
    with transformers in this process is left out of the config when it is loaded.

    A saved QA model names hf_lineage's question-answering pipeline in ``custom_pipelines`` and carries its file, so
    without hf_lineage ``pipeline("question-answering", model=folder, trust_remote_code=True)`` builds it. After
    ``import hf_lineage`` the same pipeline is registered for the task, but transformers' ``pipeline()`` reads the
    folder's entry first and asks for ``trust_remote_code``; without the entry the registered pipeline serves the
    folder (and a model loaded from it) as it serves transformers' own BERT. Saving writes the entry again."""

    @classmethod
    def from_dict(cls, config_dict, **kwargs):
        return super().from_dict(without_registered_pipelines(config_dict), **kwargs)


def without_registered_pipelines(config_dict: dict) -> dict:
    """``config_dict`` without the ``custom_pipelines`` entries whose class transformers' ``PIPELINE_REGISTRY``
    already serves for the task (same file and class name); the dict itself when there are none."""
    custom = config_dict.get("custom_pipelines") or {}
    # Not imported: nothing is registered (importing the pipelines for every config load would cost seconds).
    registry = getattr(sys.modules.get("transformers.pipelines"), "PIPELINE_REGISTRY", None)
    if not custom or registry is None:
        return config_dict

    def registered(task, entry) -> bool:
        impl = registry.supported_tasks.get(task, {}).get("impl")
        return impl is not None and f"{impl.__module__.rsplit('.', 1)[-1]}.{impl.__name__}" == entry.get("impl")

    kept = {task: entry for task, entry in custom.items() if not registered(task, entry)}
    if len(kept) == len(custom):
        return config_dict
    config_dict = {key: value for key, value in config_dict.items() if key != "custom_pipelines"}
    if kept:
        config_dict["custom_pipelines"] = kept
    return config_dict


class NamedSizesMixin:
    """Gives a config class ``from_named("tiny", **overrides)`` over its ``named_sizes`` table.

    Unlike the class itself (which stores unknown keys, as transformers' configs do), ``from_named`` refuses an
    override that is no field nor a transformers key, naming the nearest field: its names are typed by a person
    (and ``hf-lineage pretrain``'s objectives build their configs through it).

    Example::

        config = LineageBertConfig.from_named("base", vocab_size=30522)
    """

    named_sizes: ClassVar[dict[str, dict[str, Any]]] = {}

    @classmethod
    def from_named(cls, name: str, **overrides):
        if name not in cls.named_sizes:
            raise ValueError(
                f"Unknown {cls.model_type} size {name!r}; choose one of {sorted(cls.named_sizes)} "
                "or build the config from keyword arguments."
            )
        check_known_kwargs(cls, overrides)
        return cls(**{**cls.named_sizes[name], **overrides})


class CheckedSizesMixin:
    """Every lineage config: its ``check_sizes()`` (each family writes its own) runs once transformers'
    ``__post_init__`` has set the fields, so a config the model cannot be built with is refused where it is made or
    loaded, with a ValueError naming the field."""

    def __post_init__(self, **kwargs):
        # Keys that are no field are stored as attributes, as transformers' configs do (its tests and other
        # libraries rely on it); names a person types (`--set`, `from_named`) are checked by check_known_kwargs.
        super().__post_init__(**kwargs)
        self.check_sizes()


# The task encoders a static-vector (or ELMo) family can put between its word features and a task classifier.
TASK_ENCODERS = ("bilstm", "lstm", "cnn", "none")
# How those word features are scaled before the task encoder.
TASK_FEATURE_NORMS = ("batch", "none")


@dataclass(kw_only=True, repr=False, eq=False)
class TaskHeadConfigMixin:
    """The downstream-task fields of the families whose task models are "features → small task encoder →
    classifier" (NNLM, word2vec, svd, ELMo), declared once here. A config lists this mixin among its bases (before
    ``PreTrainedConfig``), and transformers' dataclass takes these fields in with its own; ``check_task_fields``
    validates them."""

    task_encoder: str = "bilstm"  # "bilstm" | "lstm" | "cnn" | "none"
    task_hidden_size: int = 128  # per direction
    task_num_layers: int = 1
    task_dropout: float | int = 0.1
    # "batch": each feature dimension standardised over the batch's real tokens before the task encoder
    # (running statistics at evaluation); "none": the features as they come.
    task_feature_norm: str = "batch"


def check_task_fields(config) -> None:
    """Validate the downstream-task fields shared by the families whose task models are "features → small task
    encoder → classifier" (NNLM, word2vec, ELMo): ``task_encoder``, ``task_hidden_size``, ``task_num_layers``,
    ``task_dropout``, ``task_feature_norm``. Raises a ValueError naming the field."""
    if config.task_encoder not in TASK_ENCODERS:
        raise ValueError(f"task_encoder must be one of {TASK_ENCODERS}, got {config.task_encoder!r}")
    if config.task_feature_norm not in TASK_FEATURE_NORMS:
        raise ValueError(f"task_feature_norm must be one of {TASK_FEATURE_NORMS}, got {config.task_feature_norm!r}")
    for name in ("task_hidden_size", "task_num_layers"):
        if getattr(config, name) < 1:
            raise ValueError(f"{name} must be a positive integer, got {getattr(config, name)}")
    if not 0.0 <= config.task_dropout < 1.0:
        raise ValueError(f"task_dropout must be in [0, 1), got {config.task_dropout}")


def check_transformer_fields(config) -> None:
    """Validate the fields BERT and GPT share with transformers' own Transformer configs: ``hidden_act``,
    ``initializer_range``, ``layer_norm_eps`` and ``classifier_dropout``. Raises a ValueError naming the field."""
    from transformers.activations import ACT2FN

    if config.hidden_act not in ACT2FN:
        raise ValueError(f"hidden_act must be one of transformers' activations ({', '.join(sorted(ACT2FN))}), "
                         f"got {config.hidden_act!r}")
    for name in ("initializer_range", "layer_norm_eps"):
        if not getattr(config, name) > 0:
            raise ValueError(f"{name} must be positive, got {getattr(config, name)}")
    if config.classifier_dropout is not None and not 0.0 <= config.classifier_dropout < 1.0:
        raise ValueError(f"classifier_dropout must be in [0, 1) or None, got {config.classifier_dropout}")


PAIR_ENCODINGS = ("cross", "siamese")
# The task heads of the Transformers' token and sequence classifiers: "linear", their papers' (a linear layer on the
# last layer); "scalar_mix", the head every family shares in the lineage's frozen regime (a learned scalar mix of all
# layers, then the static families' task encoder and classifier: ``modeling_lineage_static``).
TASK_HEADS = ("linear", "scalar_mix")


def check_task_head(config) -> None:
    """``task_head`` of the Transformers, and the task-encoder fields its "scalar_mix" head reads."""
    if config.task_head not in TASK_HEADS:
        raise ValueError(f"task_head must be one of {', '.join(TASK_HEADS)}, got {config.task_head!r}")
    check_task_fields(config)


def check_pair_encoding(config) -> None:
    """``pair_encoding`` of the Transformers: how their sequence classifier reads a sentence pair."""
    if config.pair_encoding not in PAIR_ENCODINGS:
        raise ValueError(f"pair_encoding must be one of {', '.join(PAIR_ENCODINGS)}, got {config.pair_encoding!r}")


def check_pruned_heads(config) -> None:
    """Normalise ``config.pruned_heads`` to ``{layer: sorted heads}`` with int keys (JSON turns them into strings)
    and no empty entries, or None; a ValueError names a layer or head that does not exist."""
    if not config.pruned_heads:
        config.pruned_heads = None
        return
    pruned = {}
    for layer, heads in config.pruned_heads.items():
        layer, heads = int(layer), sorted({int(head) for head in heads})
        if not 0 <= layer < config.num_hidden_layers:
            raise ValueError(f"pruned_heads: layer {layer} does not exist (num_hidden_layers={config.num_hidden_layers})")
        outside = [head for head in heads if not 0 <= head < config.num_attention_heads]
        if outside:
            raise ValueError(f"pruned_heads: layer {layer} has no head {outside} "
                             f"(num_attention_heads={config.num_attention_heads})")
        if heads:
            pruned[layer] = heads
    config.pruned_heads = pruned or None
