"""Caches: the cache's name across transformers versions (``cache`` / ``past_key_values``), and the state an LSTM
language model carries from step to step (``LSTMStateCache``) with what ``generate`` needs of such a model.

This file is copied next to a saved model with the modeling files that import it (transformers follows same-folder
``from .x import`` lines), so it imports only torch, transformers and same-folder siblings.
"""

import warnings

import torch
from transformers.modeling_outputs import CausalLMOutputWithPast
from transformers.utils import ModelOutput


# transformers 5.24 renamed the cache, as a forward argument and as an output field, from ``past_key_values`` to
# ``cache`` (the old name is deprecated until 5.40); earlier releases know only ``past_key_values``. generate() hands the
# cache to forward under the installed version's name and reads it back from the output under that name, so every
# lineage forward accepts both names (``cache_argument``) and returns the cache under the installed one
# (``CACHE_FIELD``). Without this, generation under 5.24 silently started a new cache at every step.
CACHE_FIELD = "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"


def cache_argument(cache, past_key_values):
    """The cache a forward was given, under either name: ``cache`` (transformers >= 5.24) or ``past_key_values``
    (older transformers, and code written for them). Where the installed transformers names it ``cache``, the old
    name still works with transformers' own deprecation warning (its models warn the same way; generate() and
    EncoderDecoderModel pass ``cache`` there, so only code written for the old name sees it)."""
    if cache is not None and past_key_values is not None:
        raise ValueError("Pass the cache once, as `cache` or as `past_key_values` (its name before transformers "
                         "5.24), not both")
    if past_key_values is not None and CACHE_FIELD == "cache":
        warnings.warn("`past_key_values` is deprecated since transformers 5.24 for lineage models. Use `cache` "
                      "instead.", FutureWarning, stacklevel=3)
    return past_key_values if cache is None else cache


def with_cache(cache) -> dict:
    """``{CACHE_FIELD: cache}``: keyword arguments that put a cache into any transformers output class."""
    return {CACHE_FIELD: cache}


def output_cache(output: ModelOutput):
    """The cache in a transformers output (None when there is none), whatever the installed version calls it."""
    return output.get(CACHE_FIELD)


class LSTMStateCache:
    """The state a stack of LSTMs carries from one call to the next: ``h`` (L, B, H) and ``c`` (L, B, C), and how
    many input positions it has read.

    Recurrent models have no attention keys and values to put in a ``DynamicCache``; like transformers' own
    recurrent models (``MambaCache``, ``xLSTMCache``) they carry their state in a class of their own, which
    ``generate`` passes from step to step as it passes any cache. The models update it in place, as a
    ``DynamicCache`` is updated. What generation calls on it:

    - ``get_seq_length()``: positions read so far; the model's ``prepare_inputs_for_generation`` feeds only the
      input positions after them.
    - ``reorder_cache(beam_idx)``: beam search keeps the states of the beams it keeps.

    Carrying the state across consecutive segments of a stream (truncated backpropagation through time)::

        >>> out = model(input_ids=segment_1, use_cache=True)                                   # doctest: +SKIP
        >>> out = model(input_ids=segment_2, cache=out.cache.detach(), use_cache=True)        # doctest: +SKIP
    """

    is_compileable = False

    def __init__(self, h: torch.Tensor, c: torch.Tensor, seen_tokens: int = 0):
        if h.dim() != 3 or c.dim() != 3 or h.shape[:2] != c.shape[:2]:
            raise ValueError(f"An LSTM state is h (layers, batch, hidden) and c (layers, batch, cell) with the same "
                             f"layers and batch; got h {tuple(h.shape)} and c {tuple(c.shape)}")
        self.h, self.c, self.seen_tokens = h, c, seen_tokens

    @classmethod
    def from_arguments(cls, cache, past_key_values):
        """The state a forward was given under either name (see ``cache_argument``), as an ``LSTMStateCache``."""
        return cls.from_state(cache_argument(cache, past_key_values))

    @classmethod
    def from_state(cls, state):
        """Accepts an ``LSTMStateCache`` as it is, or a tuple ``(h, c)`` (what these models returned before)."""
        if state is None or isinstance(state, cls):
            return state
        if isinstance(state, (tuple, list)) and len(state) == 2 and all(torch.is_tensor(s) for s in state):
            return cls(*state)
        raise ValueError(f"Expected an LSTMStateCache or a tuple (h, c) of tensors as the LSTM state, got "
                         f"{type(state).__name__}")

    @property
    def batch_size(self) -> int:
        return self.h.shape[1]

    def update(self, h: torch.Tensor, c: torch.Tensor, num_positions: int) -> "LSTMStateCache":
        """The state after ``num_positions`` more input positions: h (L, B, H) and c (L, B, C)."""
        self.h, self.c = h, c
        self.seen_tokens += num_positions
        return self

    @classmethod
    def advanced(cls, state, h: torch.Tensor, c: torch.Tensor, num_positions: int) -> "LSTMStateCache":
        """``state`` updated in place (as a ``DynamicCache`` is), or a new state when there was none."""
        return cls(h, c, num_positions) if state is None else state.update(h, c, num_positions)

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.seen_tokens

    @property
    def is_linear(self) -> list[bool]:
        # transformers >= 5.24 slices the prompt by get_seq_length() only for caches with a sequence axis; a
        # recurrent state has none (the model's prepare_inputs_for_generation does the slicing).
        return [True] * self.h.shape[0]

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self.h = self.h.index_select(1, beam_idx.to(self.h.device))
        self.c = self.c.index_select(1, beam_idx.to(self.c.device))

    def detach(self) -> "LSTMStateCache":
        """A copy cut from the autograd graph: carry the state between training segments, not their graph."""
        return LSTMStateCache(self.h.detach(), self.c.detach(), self.seen_tokens)

    def __repr__(self):
        return (f"LSTMStateCache(layers={self.h.shape[0]}, batch={self.batch_size}, hidden={self.h.shape[2]}, "
                f"cell={self.c.shape[2]}, seen_tokens={self.seen_tokens})")


class LSTMStateGenerationMixin:
    """What ``generate`` needs from a language model that carries an ``LSTMStateCache`` (ELMo's forward LM,
    the static-vector families' LSTM LM). Comes before ``GenerationMixin`` in the bases."""

    # A recurrent state cannot be rewound to an earlier position: generate() refuses assisted decoding.
    _is_stateful = True

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the state is an LSTM's (h, c), not attention keys and values: the forward builds it

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, cache=None,
                                      **kwargs):
        """After the first step only the positions the state has not read (one new token per row), with a mask of
        ones (a row that already ended gets padding from generate(); its state runs on harmlessly and its output
        is thrown away). Other inputs (e.g. ELMo's char_ids) are dropped: new words come as ids alone."""
        state = LSTMStateCache.from_arguments(cache, past_key_values)
        inputs = {"logits_to_keep": 1, "use_cache": kwargs.get("use_cache", True)}
        for key in ("return_dict", "output_attentions", "output_hidden_states"):
            if key in kwargs:
                inputs[key] = kwargs[key]
        if state is None:
            inputs.update(input_ids=input_ids, attention_mask=attention_mask)
        else:
            new = input_ids[:, state.get_seq_length():]
            inputs.update(input_ids=new, attention_mask=torch.ones_like(new), **with_cache(state))
        return inputs
