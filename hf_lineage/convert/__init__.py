"""Import and export between lineage models and other implementations.

``from_transformers(model)`` turns a transformers model into the matching lineage model with the same weights;
``to_transformers(model)`` goes back, through the converter module of each family with a transformers base (its
registry record's ``transformers_base.converter``)::

    >>> from transformers import BertForPreTraining
    >>> from hf_lineage.convert import from_transformers, to_transformers
    >>> lineage = from_transformers(BertForPreTraining.from_pretrained("google-bert/bert-base-uncased"))
    >>> to_transformers(lineage).save_pretrained("exported")   # loads with plain transformers
"""

import importlib


def _converter_modules() -> tuple[str, ...]:
    """The converter modules of this folder, one per family with a transformers base; each has CLASS_PAIRS
    {transformers class name: lineage class name}, from_/to_transformers. Imported on the first conversion (they
    import torch and the model classes), so that importing this package (``hf-lineage convert --help``) does not."""
    from ..registry import FAMILIES

    return tuple(spec.transformers_base.converter for spec in FAMILIES.values() if spec.transformers_base)


def __getattr__(name):
    """The converter modules, and ``from_gensim`` (a trained gensim Word2Vec -> (LineageWord2VecForPreTraining,
    tokenizer)), imported on first use (PEP 562)."""
    if name in _converter_modules():
        return importlib.import_module(f".{name}", __name__)
    if name == "from_gensim":
        from .word2vec import from_gensim

        return from_gensim
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _converter_for(class_name: str, lineage_side: bool):
    converters = [importlib.import_module(f".{name}", __name__) for name in _converter_modules()]
    for converter in converters:
        names = converter.CLASS_PAIRS.values() if lineage_side else converter.CLASS_PAIRS.keys()
        if class_name in names:
            return converter
    known = sorted(n for c in converters for n in (c.CLASS_PAIRS.values() if lineage_side else c.CLASS_PAIRS))
    raise ValueError(f"No converter for {class_name}; supported: {', '.join(known)}")


def from_transformers(model):
    """A lineage model with the weights of the given transformers model (eval mode)."""
    return _converter_for(type(model).__name__, lineage_side=False).from_transformers(model)


def to_transformers(model):
    """The transformers model with the weights of the given lineage model (eval mode)."""
    return _converter_for(type(model).__name__, lineage_side=True).to_transformers(model)


__all__ = ["from_gensim", "from_transformers", "to_transformers"]
