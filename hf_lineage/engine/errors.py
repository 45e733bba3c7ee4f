"""``PretrainError``: a pre-training run's bad input, said in one line. The engine raises it (a base model that does
not fit, data too short for one step, a loss that is not finite) and so do the checks above it
(``hf_lineage.pretraining``), which settle the arguments before they reach the engine: defined here, once, in the
lowest layer that raises it."""


class PretrainError(ValueError):
    """Bad input detected before training starts; the message names the problem."""


__all__ = ["PretrainError"]
