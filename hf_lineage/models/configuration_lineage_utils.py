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
