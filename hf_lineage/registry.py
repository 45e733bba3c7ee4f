"""The families: what the library knows of each, in one entry, and their registration with transformers' Auto classes.

A family is one entry in ``FAMILIES`` (a ``Family``): its configuration and modeling modules in ``hf_lineage.models``
(the modeling module's ``AUTO_CLASSES`` table maps an Auto class name to the family's class for it; registration
reads that table, and so does ``save_pretrained`` when it writes ``auto_map``), its tokenizer class if it has its
own, its pre-training objective, and the few rules the task recipes follow per family. What the lineage experiment
needs (sizes per scale, budgets, learning rates, plot colours) is the other table, ``hf_lineage.lineage.settings``.
"""

import importlib
import importlib.util
from collections import OrderedDict
from dataclasses import dataclass

import transformers
from transformers import AutoConfig, AutoTokenizer, PreTrainedTokenizerFast
from transformers.models.auto.auto_factory import _BaseAutoModelClass, _LazyAutoMapping


@dataclass(frozen=True)
class Family:
    """One family's library facts. Module names are in ``hf_lineage.models``; ``"module:Class"`` strings are read on
    first use, so registering a family imports only its configuration and modeling modules."""

    config: str  # "configuration_lineage_gpt:LineageGPTConfig"
    modeling: str  # "modeling_lineage_gpt", whose AUTO_CLASSES table names the classes
    objective: str  # its pre-training objective for the engine, "hf_lineage.objectives.gpt:GPTObjective"
    # The named size of its paper's configuration, what ``hf-lineage pretrain FAMILY`` trains unless ``--config`` says
    # otherwise (as ``BertConfig()`` is BERT-base and gensim's ``Word2Vec()`` the C tool's); ``tiny`` is for tests.
    paper_size: str
    # Its own CPU trainer, ``function(settled PretrainArguments, objective) -> output dir``, which ``pretrain()`` may
    # pick instead of the engine (``--backend``); imported only then (numba, scikit-learn).
    cpu_trainer: str | None = None
    # Its own tokenizer class (ELMo's also gives character ids) and that class's `tokenizers`-backed twin, which
    # AutoTokenizer returns; None: a `tokenizers` pipeline in the generic PreTrainedTokenizerFast, so a saved folder
    # loads anywhere.
    tokenizer: str | None = None
    fast_tokenizer: str | None = None
    # A left-to-right language model: its checkpoints ship a generation config and generate
    # (``AutoModelForCausalLM``, ``pipeline("text-generation")``). BERT's causal head only serves as the decoder of an
    # ``EncoderDecoderModel``, so BERT is not one.
    causal_lm: bool = False
    # Sequence labelling tags a word at its last token for a model that reads left to right (GPT, NNLM), else at its
    # first.
    labels_last_token: bool = False
    # Generation can continue a left-padded batch of prompts (ELMo's forward LSTM reads padding as input: its prompts
    # are generated in groups of equal length instead).
    left_padding: bool = True
    # One vector per word of a word-level vocabulary, whatever the sentence (NNLM, word2vec, svd, glove): the analyses
    # read its input embeddings as ``WordVectors`` (``word_vector_model_types``).
    word_vectors: bool = False
    # GPT's task input transformations (Radford et al. 2018, fig. 1): start, delimiter and extract tokens added to
    # the vocabulary when fine-tuning on sentence pairs and question answering.
    task_tokens: bool = False


# In lineage order: the count-based root (PPMI-SVD, Levy et al. 2015) first.
FAMILIES = {
    "svd": Family("configuration_lineage_svd:LineageSvdConfig", "modeling_lineage_svd",
                  "hf_lineage.objectives.svd:SvdObjective", "levy2015",
                  cpu_trainer="hf_lineage.word_vector_trainers.svd:pretrain_svd",
                  causal_lm=True, word_vectors=True),
    "nnlm": Family("configuration_lineage_nnlm:LineageNNLMConfig", "modeling_lineage_nnlm",
                   "hf_lineage.objectives.nnlm:NNLMObjective", "mlp1", causal_lm=True, labels_last_token=True,
                   word_vectors=True),
    "word2vec": Family("configuration_lineage_word2vec:LineageWord2VecConfig", "modeling_lineage_word2vec",
                       "hf_lineage.objectives.word2vec:Word2VecObjective", "mikolov2013",
                       cpu_trainer="hf_lineage.word_vector_trainers.word2vec:pretrain_word2vec", causal_lm=True,
                       word_vectors=True),
    "glove": Family("configuration_lineage_glove:LineageGloveConfig", "modeling_lineage_glove",
                    "hf_lineage.objectives.glove:GloveObjective", "pennington2014",
                    cpu_trainer="hf_lineage.word_vector_trainers.glove:pretrain_glove", causal_lm=True,
                    word_vectors=True),
    "elmo": Family("configuration_lineage_elmo:LineageElmoConfig", "modeling_lineage_elmo",
                   "hf_lineage.objectives.elmo:ElmoObjective", "original",
                   tokenizer="tokenization_lineage_elmo:LineageElmoTokenizer",
                   fast_tokenizer="tokenization_lineage_elmo:LineageElmoTokenizerFast", causal_lm=True,
                   left_padding=False),
    "gpt": Family("configuration_lineage_gpt:LineageGPTConfig", "modeling_lineage_gpt",
                  "hf_lineage.objectives.gpt:GPTObjective", "gpt", causal_lm=True, labels_last_token=True,
                  task_tokens=True),
    "bert": Family("configuration_lineage_bert:LineageBertConfig", "modeling_lineage_bert",
                   "hf_lineage.objectives.bert:BertObjective", "base"),
}


def family_spec(family: str) -> Family:
    """The ``FAMILIES`` entry of a family name, or a ValueError listing the known ones."""
    if family not in FAMILIES:
        raise ValueError(f"Unknown family {family!r}; known families: {', '.join(FAMILIES)}")
    return FAMILIES[family]


def word_vector_model_types() -> set[str]:
    """The model types of the families with one vector per word (``Family.word_vectors``): ``{"lineage-svd", ...}``."""
    return {f"lineage-{name}" for name, family in FAMILIES.items() if family.word_vectors}


def family_of_model_type(model_type: str) -> str | None:
    """The family name of a lineage model type (``"gpt"`` for ``lineage-gpt``); None for another library's."""
    family = model_type.removeprefix("lineage-")
    return family if family in FAMILIES and model_type == f"lineage-{family}" else None


def family_of_config(config) -> str | None:
    """The family name of a lineage config; None for another library's config."""
    return family_of_model_type(getattr(config, "model_type", ""))


def load_object(reference: str, package: str = "hf_lineage.models"):
    """The object a ``"module:Name"`` string names (a bare module name is taken from ``package``)."""
    module, name = reference.split(":")
    return getattr(importlib.import_module(module if "." in module else f"{package}.{module}"), name)


class AutoModelForIntentAndSlots(_BaseAutoModelClass):
    """The Auto class of the joint intent-classification and slot-filling heads (``<Family>ForIntentAndSlots``),
    which transformers has no Auto class for: ``from_pretrained`` / ``from_config`` build the family's class, as
    transformers' own Auto classes do, for every lineage family (each modeling module's ``LINEAGE_AUTO_CLASSES``).

    A saved head's ``config.json`` names its class under this name in ``auto_map``, and its modeling files are
    saved with it, so without hf_lineage ``transformers.dynamic_module_utils.get_class_from_dynamic_module(
    config.auto_map["AutoModelForIntentAndSlots"], folder)`` gives the class (trust_remote_code)."""

    _model_mapping = _LazyAutoMapping(OrderedDict(), OrderedDict())


# hf_lineage's own Auto classes, by the names the modeling modules' LINEAGE_AUTO_CLASSES tables use.
LINEAGE_AUTO_CLASSES = {"AutoModelForIntentAndSlots": AutoModelForIntentAndSlots}


def intent_and_slots_model_class(config):
    """The ``*ForIntentAndSlots`` class of a config's family (a ValueError for a config of another library)."""
    if type(config) not in AutoModelForIntentAndSlots._model_mapping:
        raise ValueError(f"{type(config).__name__} ({getattr(config, 'model_type', '?')}) is not a lineage family: no "
                         "joint intent-and-slots head")
    return AutoModelForIntentAndSlots._model_mapping[type(config)]


def family_classes(family: str):
    """(config class, modeling module) of a family, e.g. ``family_classes("bert")``."""
    spec = family_spec(family)
    modeling = spec.modeling if "." in spec.modeling else f"hf_lineage.models.{spec.modeling}"
    return load_object(spec.config), importlib.import_module(modeling)


def register_family(family: str) -> None:
    config_class, modeling = family_classes(family)
    AutoConfig.register(config_class.model_type, config_class, exist_ok=True)
    config_class.register_for_auto_class("AutoConfig")
    for auto_name, class_name in modeling.AUTO_CLASSES.items():
        model_class = getattr(modeling, class_name)
        getattr(transformers, auto_name).register(config_class, model_class, exist_ok=True)
        # Marks the class as custom code so save_pretrained copies the modeling files next to the weights.
        model_class.register_for_auto_class(auto_name)
    for auto_name, class_name in getattr(modeling, "LINEAGE_AUTO_CLASSES", {}).items():
        model_class = getattr(modeling, class_name)
        LINEAGE_AUTO_CLASSES[auto_name].register(config_class, model_class, exist_ok=True)
        # register_for_auto_class accepts only transformers' own names; save_pretrained reads this attribute to
        # copy the modeling files and name the class in auto_map.
        model_class._auto_class = auto_name
    spec = FAMILIES[family]
    if spec.tokenizer:
        slow = load_object(spec.tokenizer)
        fast = load_object(spec.fast_tokenizer) if spec.fast_tokenizer else None
        # A slow/fast pair: transformers 5's AutoTokenizer returns the fast class (it ignores use_fast), also for a
        # folder whose tokenizer_config.json names the slow one.
        AutoTokenizer.register(config_class, slow_tokenizer_class=slow, fast_tokenizer_class=fast, exist_ok=True)
        for tokenizer_class in (slow, fast):
            if tokenizer_class is not None:
                # save_pretrained copies the tokenizer's file and names it in auto_map, for trust_remote_code.
                tokenizer_class.register_for_auto_class("AutoTokenizer")
        return
    # Our tokenizers are plain `tokenizers` pipelines in the generic fast class, so a saved folder loads anywhere.
    AutoTokenizer.register(config_class, tokenizer_class=PreTrainedTokenizerFast, exist_ok=True)


# transformers 4's default for the task, so ``pipeline("question-answering")`` without a model picks what it did.
QUESTION_ANSWERING_DEFAULT = {"model": {"pt": ("distilbert/distilbert-base-cased-distilled-squad", "564e9b5")}}


def register_question_answering_pipeline() -> None:
    """``pipeline("question-answering", model=...)`` for every extractive QA model, a lineage family's or
    transformers' own: hf_lineage's pipeline (``models/pipeline_lineage_question_answering.py``) registered for the
    task with transformers' ``PIPELINE_REGISTRY``, as transformers documents for adding a pipeline.

    transformers 5 removed its own question-answering pipeline and lists the task in ``pipelines.REMOVED_TASKS``:
    ``pipeline()`` checks that table (``_resolve_deprecated_task``, which raises ``KeyError: 'The task
    question-answering has been removed from transformers...'``) *before* it looks the task up in the registry, so
    registering alone is not enough. The table is read on every call and offers no other switch, so the entry is
    taken out of it once the task has an implementation again; ``check_task`` and ``get_supported_tasks`` then
    name the task as well. A folder whose config names the pipeline in ``custom_pipelines`` (every saved lineage
    QA model) would be served before either check, from its own copy of the file, and only with
    ``trust_remote_code=True``: a lineage config leaves that entry out when it is loaded in a process where this
    registration serves the task (``RegisteredPipelinesMixin``), so the folder needs no remote code here."""
    from transformers import AutoModelForQuestionAnswering
    from transformers import pipelines as transformers_pipelines

    from .models.pipeline_lineage_question_answering import LineageQuestionAnsweringPipeline

    registered = transformers_pipelines.PIPELINE_REGISTRY.supported_tasks.get("question-answering", {})
    if registered.get("impl") is not LineageQuestionAnsweringPipeline:  # register_pipeline warns when overwriting
        transformers_pipelines.PIPELINE_REGISTRY.register_pipeline(
            "question-answering", pipeline_class=LineageQuestionAnsweringPipeline,
            pt_model=AutoModelForQuestionAnswering, default=QUESTION_ANSWERING_DEFAULT, type="text",
        )
    getattr(transformers_pipelines, "REMOVED_TASKS", {}).pop("question-answering", None)


# LoRA's default target modules per model type (what ``LoraConfig()`` without ``target_modules`` adapts), as PEFT
# has them for transformers' BERT ("query", "value"); lineage GPT's self-attention uses the same names.
PEFT_LORA_TARGET_MODULES = {"lineage-bert": ["query", "value"], "lineage-gpt": ["query", "value"]}


def register_peft_targets() -> None:
    """Add the lineage Transformers to PEFT's default LoRA targets, when PEFT (an optional dependency) is installed;
    the table is the dict ``LoraModel`` reads, updated in place."""
    if importlib.util.find_spec("peft") is None:
        return
    try:
        from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as mapping
    except ImportError:  # a PEFT too old or broken: LoRA still works with explicit target_modules
        return
    for model_type, modules in PEFT_LORA_TARGET_MODULES.items():
        mapping.setdefault(model_type, list(modules))


def register_all() -> None:
    for family in FAMILIES:
        register_family(family)
    register_question_answering_pipeline()
    register_peft_targets()
