"""Configuration pieces shared by every lineage family.

This file is copied next to a saved model (see ``custom_object_save``), so it imports only transformers and
same-folder siblings.
"""

from typing import Any, ClassVar


class NamedSizesMixin:
    """Gives a config class ``from_named("tiny", **overrides)`` over its ``named_sizes`` table.

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
        return cls(**{**cls.named_sizes[name], **overrides})


# The task encoders a static-vector (or ELMo) family can put between its word features and a task classifier.
TASK_ENCODERS = ("bilstm", "lstm", "cnn", "none")
# How those word features are scaled before the task encoder.
TASK_FEATURE_NORMS = ("batch", "none")


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
