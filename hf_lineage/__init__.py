"""hf_lineage: NNLM, word2vec, ELMo, GPT and BERT (and count-based SVD vectors) as first-class Hugging Face models.

``import hf_lineage`` registers every family with transformers' Auto* classes::

    import hf_lineage
    from transformers import AutoConfig, AutoModelForMaskedLM
    config = AutoConfig.for_model("lineage-bert", **hf_lineage.LineageBertConfig.named_sizes["tiny"])
    model = AutoModelForMaskedLM.from_config(config)
"""

__version__ = "0.1.0.dev0"

from .models import *  # noqa: F401,F403  (the public model and config classes)
from .models import __all__ as _models_all
from .registry import FAMILIES, AutoModelForIntentAndSlots, intent_and_slots_model_class, register_all
from .contextual import ContextualVectors
from .objectives.svd import train_svd
from .objectives.word2vec_cpu import train_word2vec
from .vectors import WordVectors

register_all()

__all__ = ["AutoModelForIntentAndSlots", "ContextualVectors", "FAMILIES", "WordVectors", "intent_and_slots_model_class",
           "register_all", "train_svd", "train_word2vec", *_models_all]
