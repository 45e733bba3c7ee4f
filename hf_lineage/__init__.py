"""hf_lineage: NNLM, word2vec, ELMo, GPT and BERT (and count-based SVD vectors) as first-class Hugging Face models.

``import hf_lineage`` registers every family with transformers' Auto* classes::

    import hf_lineage
    from transformers import AutoConfig, AutoModelForMaskedLM
    config = AutoConfig.for_model("lineage-bert", **hf_lineage.LineageBertConfig.named_sizes["tiny"])
    model = AutoModelForMaskedLM.from_config(config)
"""

__version__ = "0.2.0.dev0"

from . import checkpoints  # noqa: F401  (hf_lineage.checkpoints.path("bert"): the shipped pretrained folders)
from .models import __all__ as _models_all
from .registry import FAMILIES, intent_and_slots_model_class, register_all

# Lazy: each registration takes effect when transformers' Auto module for it is imported, and a model class is imported
# on its first lookup, so ``import hf_lineage`` imports neither torch nor a modeling file (registry.register_all).
register_all()

# Imported on first use (PEP 562): the trainers and vector tools pull in scikit-learn, SciPy and numba, and the model
# and config classes torch and transformers' modeling utilities, which a user loading a model through the Auto
# classes needs only for that model, and the CLI printing its help not at all.
_LAZY = {"ContextualVectors": "vectors.contextual", "train_glove": "word_vector_trainers.glove",
         "train_svd": "word_vector_trainers.svd",
         "train_word2vec": "word_vector_trainers.word2vec", "WordVectors": "vectors",
         "AutoModelForIntentAndSlots": "registry", **dict.fromkeys(_models_all, "models")}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_LAZY})

__all__ = ["AutoModelForIntentAndSlots", "ContextualVectors", "FAMILIES", "WordVectors", "checkpoints",
           "intent_and_slots_model_class",
           "register_all", "train_glove", "train_svd", "train_word2vec", *_models_all]
