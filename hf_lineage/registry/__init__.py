"""The families and their registration with transformers' Auto classes.

A family is one record in ``FAMILIES`` (a ``Family``, in ``registry.families``): its configuration and modeling
modules in ``hf_lineage.models`` (the modeling module's ``AUTO_CLASSES`` table maps an Auto class name to the family's
class for it; registration reads that table, and so does ``save_pretrained`` when it writes ``auto_map``), its
tokenizer class if it has its own, its pre-training objective, the rules the task recipes follow per family, its
release and transformers base, and what the lineage experiment needs (``Family.lineage``). This module derives what
transformers and PEFT read from those records and registers them.
"""

import ast
import importlib
import importlib.abc
import importlib.util
import sys
import threading
from collections import OrderedDict
from pathlib import Path

from .families import FAMILIES, Family


def family_spec(family: str) -> Family:
    """The ``FAMILIES`` entry of a family name, or a ValueError listing the known ones."""
    if family not in FAMILIES:
        raise ValueError(f"Unknown family {family!r}; known families: {', '.join(FAMILIES)}")
    return FAMILIES[family]


def word_vector_model_types() -> set[str]:
    """The model types of the families with one vector per word (``Family.word_vectors``): ``{"lineage-svd", ...}``."""
    return {f"lineage-{name}" for name, family in FAMILIES.items() if family.word_vectors}


def hidden_layer_names(model_type: str, count: int) -> list[str]:
    """The names of a model's ``count`` hidden states, as the analyses label them: ``["embeddings", "layer 1", ...]``,
    or its family's own words (``Family.layer_words``: ELMo's ``["token", "biLSTM 1", ...]``)."""
    family = family_of_model_type(model_type)
    first, rest = FAMILIES[family].layer_words if family else Family.layer_words
    return [first] + [f"{rest} {i}" for i in range(1, count)]


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


def _auto_model_class_for_intent_and_slots():
    from transformers.models.auto.auto_factory import _BaseAutoModelClass, _LazyAutoMapping

    class AutoModelForIntentAndSlots(_BaseAutoModelClass):
        """The Auto class of the joint intent-classification and slot-filling heads (``<Family>ForIntentAndSlots``),
        which transformers has no Auto class for: ``from_pretrained`` / ``from_config`` build the family's class, as
        transformers' own Auto classes do, for every lineage family (each modeling module's ``LINEAGE_AUTO_CLASSES``).

        A saved head's ``config.json`` names its class under this name in ``auto_map``, and its modeling files are
        saved with it, so without hf_lineage ``transformers.dynamic_module_utils.get_class_from_dynamic_module(
        config.auto_map["AutoModelForIntentAndSlots"], folder)`` gives the class (trust_remote_code)."""

        _model_mapping = _LazyAutoMapping(OrderedDict(), OrderedDict())

    AutoModelForIntentAndSlots.__module__ = __name__
    AutoModelForIntentAndSlots.__qualname__ = "AutoModelForIntentAndSlots"
    return AutoModelForIntentAndSlots


# Built on first use (``registry.AutoModelForIntentAndSlots``, PEP 562), since transformers' auto_factory imports torch.
_LAZY_NAMES = {"AutoModelForIntentAndSlots", "LINEAGE_AUTO_CLASSES"}
_lazy_lock = threading.RLock()


def __getattr__(name):
    if name in _LAZY_NAMES:
        with _lazy_lock:
            if "LINEAGE_AUTO_CLASSES" not in globals():
                auto_class = _auto_model_class_for_intent_and_slots()
                # hf_lineage's own Auto classes, by the names the modeling modules' LINEAGE_AUTO_CLASSES tables use.
                lineage_auto_classes = {"AutoModelForIntentAndSlots": auto_class}
                for family in FAMILIES:
                    _add_model_entries(family, "LINEAGE_AUTO_CLASSES", lambda _: auto_class._model_mapping)
                globals().update(AutoModelForIntentAndSlots=auto_class, LINEAGE_AUTO_CLASSES=lineage_auto_classes)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def intent_and_slots_model_class(config):
    """The ``*ForIntentAndSlots`` class of a config's family (a ValueError for a config of another library)."""
    mapping = __getattr__("AutoModelForIntentAndSlots")._model_mapping
    if type(config) not in mapping:
        raise ValueError(f"{type(config).__name__} ({getattr(config, 'model_type', '?')}) is not a lineage family: no "
                         "joint intent-and-slots head")
    return mapping[type(config)]


def family_classes(family: str):
    """(config class, modeling module) of a family, e.g. ``family_classes("bert")``."""
    spec = family_spec(family)
    modeling = spec.modeling if "." in spec.modeling else f"hf_lineage.models.{spec.modeling}"
    return load_object(spec.config), importlib.import_module(modeling)


def register_family(family: str) -> None:
    """Register one family with the Auto classes now, importing its configuration and modeling modules (``import
    hf_lineage`` registers every family lazily instead: see ``register_all``)."""
    import transformers
    from transformers import AutoConfig, AutoTokenizer, PreTrainedTokenizerFast

    config_class, modeling = family_classes(family)
    AutoConfig.register(config_class.model_type, config_class, exist_ok=True)
    config_class.register_for_auto_class("AutoConfig")
    for auto_name, class_name in modeling.AUTO_CLASSES.items():
        model_class = getattr(modeling, class_name)
        getattr(transformers, auto_name).register(config_class, model_class, exist_ok=True)
        # Marks the class as custom code so save_pretrained copies the modeling files next to the weights.
        model_class.register_for_auto_class(auto_name)
    lineage_auto_classes = __getattr__("LINEAGE_AUTO_CLASSES")
    for auto_name, class_name in getattr(modeling, "LINEAGE_AUTO_CLASSES", {}).items():
        model_class = getattr(modeling, class_name)
        lineage_auto_classes[auto_name].register(config_class, model_class, exist_ok=True)
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

    from ..models.pipeline_lineage_question_answering import LineageQuestionAnsweringPipeline

    registered = transformers_pipelines.PIPELINE_REGISTRY.supported_tasks.get("question-answering", {})
    if registered.get("impl") is not LineageQuestionAnsweringPipeline:  # register_pipeline warns when overwriting
        transformers_pipelines.PIPELINE_REGISTRY.register_pipeline(
            "question-answering", pipeline_class=LineageQuestionAnsweringPipeline,
            pt_model=AutoModelForQuestionAnswering, default=QUESTION_ANSWERING_DEFAULT, type="text",
        )
    getattr(transformers_pipelines, "REMOVED_TASKS", {}).pop("question-answering", None)


def peft_lora_target_modules() -> dict[str, list[str]]:
    """LoRA's default target modules per model type (what ``LoraConfig()`` without ``target_modules`` adapts), from
    each family's ``lora_targets``: ``{"lineage-bert": ["query", "value"], ...}``."""
    return {f"lineage-{name}": list(spec.lora_targets) for name, spec in FAMILIES.items() if spec.lora_targets}


def register_peft_targets() -> None:
    """Add the lineage Transformers to PEFT's default LoRA targets, when PEFT (an optional dependency) is installed;
    the table is the dict ``LoraModel`` reads, updated in place."""
    if importlib.util.find_spec("peft") is None:
        return
    try:
        from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as mapping
    except ImportError:  # a PEFT too old or broken: LoRA still works with explicit target_modules
        return
    for model_type, modules in peft_lora_target_modules().items():
        mapping.setdefault(model_type, list(modules))


# --------------------------------------------------------------------------------------------- lazy registration
#
# ``import hf_lineage`` registers every family, yet imports neither transformers' Auto modules nor torch (transformers'
# configuration_utils imports torch) nor any configuration or modeling file of ours. Two mechanisms, both plain Python:
#
# 1. Registration runs when transformers' Auto module for it is imported (at once if it already is): an import hook
#    (``_AfterImport``, a ``sys.meta_path`` finder that wraps the module's loader and calls back once the module has
#    run) for ``transformers.models.auto.configuration_auto`` / ``modeling_auto`` / ``tokenization_auto``,
#    ``transformers.pipelines`` and ``peft.utils.constants``. The callbacks import nothing: they only add entries.
# 2. The entries are those transformers' own ``register`` API stores, in the mapping's ``_extra_content`` dict (where
#    ``AutoConfig.register``, ``AutoModel*.register`` and ``AutoTokenizer.register`` put a registered class, and
#    which every lookup of the mapping reads first), but that dict is swapped for ``_LazyRegistrations``, a dict that
#    performs our pending ``register`` calls on its first read (importing the configuration modules: the keys are
#    config classes) and holds the model classes as ``_Ref`` names, imported on their first lookup
#    (``AutoModelForCausalLM.from_pretrained`` of a GPT folder imports ``modeling_lineage_gpt`` alone). transformers'
#    own Auto mappings are lazy by name the same way, but only for modules under ``transformers.models``.
#
# Our own configuration, modeling and tokenizer modules get the same hook: when one is imported, by whatever route, its
# classes are marked with their Auto class name (``register_for_auto_class``), as registration did before, so
# ``save_pretrained`` copies their files next to the weights and writes ``auto_map``.


class _Ref:
    """A ``module:Name`` to import when the entry is first read."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def load(self):
        return getattr(importlib.import_module(self.module), self.name)

    def __reduce__(self):
        return _Ref, (self.module, self.name)

    def __repr__(self):
        return f"<hf_lineage: {self.module}.{self.name}, imported on first use>"


def _resolved(value):
    if isinstance(value, _Ref):
        return value.load()
    if isinstance(value, tuple) and any(isinstance(v, _Ref) for v in value):
        return tuple(_resolved(v) for v in value)
    return value


class _LazyRegistrations(dict):
    """An Auto mapping's ``_extra_content`` (a plain dict in transformers) that runs ``pending`` registrations on its
    first read and imports ``_Ref`` values on lookup. Every read method resolves, so transformers code that reads the
    dict directly (``values()``, ``items()``, ``dict(...)``, pickling) sees classes, never a ``_Ref``."""

    def __init__(self, *args):
        super().__init__(*args)
        self.pending = []  # zero-argument callables, each a transformers register(...) call
        self._lock = threading.RLock()

    def _materialize(self):
        if self.pending:
            with self._lock:
                while self.pending:
                    self.pending.pop(0)()

    def _get(self, key):
        value = dict.__getitem__(self, key)
        if isinstance(value, (_Ref, tuple)):
            loaded = _resolved(value)
            if loaded is not value:
                dict.__setitem__(self, key, loaded)
                value = loaded
        return value

    def __getitem__(self, key):
        self._materialize()
        return self._get(key)

    def get(self, key, default=None):
        self._materialize()
        return self._get(key) if dict.__contains__(self, key) else default

    def __contains__(self, key):
        self._materialize()
        return dict.__contains__(self, key)

    def __setitem__(self, key, value):
        self._materialize()  # pending registrations first, so a later one wins as it would have
        dict.__setitem__(self, key, value)

    def __delitem__(self, key):
        self._materialize()
        dict.__delitem__(self, key)

    def pop(self, key, *default):
        self._materialize()
        if dict.__contains__(self, key):
            value = self._get(key)
            dict.__delitem__(self, key)
            return value
        return dict.pop(self, key, *default)

    def setdefault(self, key, default=None):
        self._materialize()
        return dict.setdefault(self, key, default) if not dict.__contains__(self, key) else self._get(key)

    def update(self, *args, **kwargs):
        self._materialize()
        dict.update(self, *args, **kwargs)

    def __len__(self):
        self._materialize()
        return dict.__len__(self)

    def __iter__(self):
        self._materialize()
        return iter(list(dict.keys(self)))

    def keys(self):
        self._materialize()
        return dict.keys(self)

    def values(self):
        self._materialize()
        return [self._get(key) for key in list(dict.keys(self))]

    def items(self):
        self._materialize()
        return [(key, self._get(key)) for key in list(dict.keys(self))]

    def copy(self):
        return dict(self.items())

    def __eq__(self, other):
        return dict(self.items()) == (dict(other.items()) if isinstance(other, dict) else other)

    __hash__ = None

    def __repr__(self):
        return repr(dict(self.items()))

    def __reduce__(self):
        return dict, (dict(self.items()),)


def _lazy_extra_content(mapping) -> _LazyRegistrations:
    """The mapping's ``_extra_content`` as a ``_LazyRegistrations`` (what it held is kept)."""
    content = mapping._extra_content
    if not isinstance(content, _LazyRegistrations):
        content = _LazyRegistrations(dict.items(content) if isinstance(content, dict) else content.items())
        mapping._extra_content = content
    return content


def _module_name(module: str) -> str:
    return module if "." in module else f"hf_lineage.models.{module}"


def _config_ref(family: str) -> _Ref:
    module, name = FAMILIES[family].config.split(":")
    return _Ref(_module_name(module), name)


_TABLES: dict = {}


def _source_tree(module: str) -> ast.Module:
    """A module's source, parsed, without running it (hf_lineage.models' files are found in that folder)."""
    spec = importlib.util.find_spec(module) if not module.startswith("hf_lineage.models.") else None
    origin = spec.origin if spec else Path(__file__).parent.parent / "models" / f"{module.rsplit('.', 1)[1]}.py"
    return ast.parse(Path(origin).read_text(encoding="utf-8"))


def _config_facts(family: str) -> tuple[str, list[str]]:
    """A family's ``model_type`` and the names of its config's ``named_sizes``: from the class when it is imported
    already, else read from its source (``_config_facts_in_source``), else from the class, imported."""
    module = _module_name(FAMILIES[family].config.split(":")[0])
    found = None if module in sys.modules else _config_facts_in_source(family)
    if found is None:
        config_class = load_object(FAMILIES[family].config)
        found = config_class.model_type, list(config_class.named_sizes)
    return found


def _config_facts_in_source(family: str) -> tuple[str, list[str]] | None:
    """``_config_facts`` read from the config class's own body with ``ast`` (importing the class imports torch,
    through transformers' ``PreTrainedConfig``); None when the body does not hold both as literals (a subclass that
    inherits its sizes)."""
    module, name = FAMILIES[family].config.split(":")
    try:
        tree = _source_tree(_module_name(module))
    except (OSError, SyntaxError, ImportError):
        return None
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            for item in node.body:
                if isinstance(item, ast.Assign) and len(item.targets) == 1:
                    target = item.targets[0]
                elif isinstance(item, ast.AnnAssign):
                    target = item.target
                else:
                    continue
                if isinstance(target, ast.Name) and item.value is not None:
                    found[target.id] = item.value
    model_type, sizes = found.get("model_type"), found.get("named_sizes")
    if isinstance(model_type, ast.Constant) and isinstance(model_type.value, str) and isinstance(sizes, ast.Dict) \
            and all(isinstance(key, ast.Constant) and isinstance(key.value, str) for key in sizes.keys):
        return model_type.value, [key.value for key in sizes.keys]
    return None


def family_summary(family: str) -> dict:
    """What ``hf-lineage families`` lists of a family, found without importing its classes (torch): ``model_type``,
    ``named_sizes`` (the config's size names) and ``classes`` (its modeling module's Auto classes, then hf_lineage's
    own, as ``AUTO_CLASSES`` and ``LINEAGE_AUTO_CLASSES`` name them), each read from the source as registration reads
    them."""
    model_type, sizes = _config_facts(family)
    tables = _auto_tables(family)
    classes = list(dict.fromkeys([*tables["AUTO_CLASSES"].values(), *tables["LINEAGE_AUTO_CLASSES"].values()]))
    return {"model_type": model_type, "named_sizes": sizes, "classes": classes}


def _auto_tables(family: str) -> dict:
    """The ``AUTO_CLASSES`` and ``LINEAGE_AUTO_CLASSES`` tables of a family's modeling module, read from its source
    with ``ast`` (dict literals), so registering does not import it; imported instead when they are not literals."""
    module = _module_name(FAMILIES[family].modeling)
    loaded = sys.modules.get(module)
    # A module still being imported (it imported transformers' Auto modules before defining its tables, and so set
    # off this registration) has no AUTO_CLASSES yet: its source says what they will be.
    if loaded is not None and hasattr(loaded, "AUTO_CLASSES"):
        return {table: dict(getattr(loaded, table, {})) for table in ("AUTO_CLASSES", "LINEAGE_AUTO_CLASSES")}
    if module not in _TABLES:
        tables = None
        try:
            tree = _source_tree(module)
            found = {}
            for node in tree.body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                        and node.targets[0].id in ("AUTO_CLASSES", "LINEAGE_AUTO_CLASSES"):
                    found[node.targets[0].id] = ast.literal_eval(node.value)
            if "AUTO_CLASSES" in found:
                tables = {"AUTO_CLASSES": found["AUTO_CLASSES"],
                          "LINEAGE_AUTO_CLASSES": found.get("LINEAGE_AUTO_CLASSES", {})}
        except (OSError, ValueError, SyntaxError, ImportError):
            tables = None
        if tables is None:  # not literals: the module itself says
            imported = importlib.import_module(module)
            tables = {table: dict(getattr(imported, table, {})) for table in ("AUTO_CLASSES", "LINEAGE_AUTO_CLASSES")}
        _TABLES[module] = tables
    return _TABLES[module]


def _add_model_entries(family: str, table: str, mapping_of) -> None:
    """Pending ``mapping_of(auto_name).register(config class, model class)`` for each entry of a family's table."""
    module = _module_name(FAMILIES[family].modeling)
    for auto_name, class_name in _auto_tables(family)[table].items():
        mapping = mapping_of(auto_name)
        if mapping is not None:
            _lazy_extra_content(mapping).pending.append(
                lambda mapping=mapping, config=_config_ref(family), model=_Ref(module, class_name):
                mapping.register(config.load(), model, exist_ok=True))


def _register_configs(configuration_auto) -> None:
    content = _lazy_extra_content(configuration_auto.CONFIG_MAPPING)
    for family in FAMILIES:
        # AutoConfig.register(model_type, config class): its only check (the class's model_type) is test_registry's.
        content.pending.append(lambda family=family: configuration_auto.CONFIG_MAPPING.register(
            f"lineage-{family}", _config_ref(family), exist_ok=True))


def _register_models(modeling_auto) -> None:
    def mapping_of(auto_name):
        auto_class = getattr(modeling_auto, auto_name, None)
        return getattr(auto_class, "_model_mapping", None)

    for family in FAMILIES:
        _add_model_entries(family, "AUTO_CLASSES", mapping_of)


def _register_tokenizers(tokenization_auto) -> None:
    content = _lazy_extra_content(tokenization_auto.TOKENIZER_MAPPING)

    def register(family):
        spec = FAMILIES[family]
        config_class = _config_ref(family).load()
        if spec.tokenizer:
            slow = load_object(spec.tokenizer)
            fast = load_object(spec.fast_tokenizer) if spec.fast_tokenizer else None
            # A slow/fast pair: transformers 5's AutoTokenizer returns the fast class (it ignores use_fast), also for
            # a folder whose tokenizer_config.json names the slow one.
            tokenization_auto.AutoTokenizer.register(config_class, slow_tokenizer_class=slow,
                                                     fast_tokenizer_class=fast, exist_ok=True)
        else:
            # Our tokenizers are plain `tokenizers` pipelines in the generic fast class, so a saved folder loads
            # anywhere.
            from transformers import PreTrainedTokenizerFast

            tokenization_auto.AutoTokenizer.register(config_class, tokenizer_class=PreTrainedTokenizerFast,
                                                     exist_ok=True)

    for family in FAMILIES:
        content.pending.append(lambda family=family: register(family))


QUESTION_ANSWERING_PIPELINE_MODULE = "hf_lineage.models.pipeline_lineage_question_answering"


def _register_pipelines(pipelines) -> None:
    module = sys.modules.get(QUESTION_ANSWERING_PIPELINE_MODULE)
    if module is not None and not hasattr(module, "LineageQuestionAnsweringPipeline"):
        # Our pipeline module, imported first, is importing ``transformers.pipelines`` for its base class and has not
        # defined its own yet: ``_pipeline_module_ran`` registers the task once it has (importing it here is a
        # circular import; save_pretrained was the first caller to meet it).
        return
    register_question_answering_pipeline()


def _pipeline_module_ran(module) -> None:
    if "transformers.pipelines" in sys.modules:
        register_question_answering_pipeline()


def _register_peft(constants) -> None:
    mapping = getattr(constants, "TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING", None)
    if mapping is not None:
        for model_type, modules in peft_lora_target_modules().items():
            mapping.setdefault(model_type, list(modules))


def _mark_config(family: str, module) -> None:
    """What ``register_for_auto_class`` does: save_pretrained copies the file and names the class in auto_map."""
    getattr(module, FAMILIES[family].config.split(":")[1])._auto_class = "AutoConfig"


def _mark_modeling(module) -> None:
    for table in ("AUTO_CLASSES", "LINEAGE_AUTO_CLASSES"):
        for auto_name, class_name in getattr(module, table, {}).items():
            getattr(module, class_name)._auto_class = auto_name


def _mark_tokenizers(names, module) -> None:
    for name in names:
        getattr(module, name)._auto_class = "AutoTokenizer"


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``callbacks[name](module)`` once module ``name`` has run, whoever imports it (a ``sys.meta_path`` finder:
    it asks the finders after it for the module's spec and wraps its loader; the module's ``__loader__`` and
    ``__spec__.loader`` are the original ones again once it has run)."""

    def __init__(self):
        self.callbacks = {}

    def find_spec(self, name, path=None, target=None):
        if name not in self.callbacks:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _CallbackLoader(spec.loader, self.callbacks[name])
        return spec


class _CallbackLoader(importlib.abc.Loader):
    def __init__(self, loader, callbacks):
        self.loader, self.callbacks = loader, callbacks

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        try:
            self.loader.exec_module(module)
        finally:
            if getattr(module, "__loader__", None) is self:
                module.__loader__ = self.loader
            if getattr(getattr(module, "__spec__", None), "loader", None) is self:
                module.__spec__.loader = self.loader
        for callback in list(self.callbacks):
            callback(module)

    def __getattr__(self, name):  # get_source, get_resource_reader, is_package, ...
        return getattr(self.loader, name)


_HOOK = _AfterImport()
_DONE: dict = {}  # (module name, key) -> the module object its callback last ran for


def _when_imported(name: str, key: str, callback) -> None:
    """``callback(module)`` now if module ``name`` is imported, and each time it is (again); one callback per key."""
    def once(module):
        if _DONE.get((name, key)) is not module:
            _DONE[(name, key)] = module
            callback(module)

    once.key = key
    callbacks = _HOOK.callbacks.setdefault(name, [])
    if not any(getattr(c, "key", None) == key for c in callbacks):
        callbacks.append(once)
    if _HOOK not in sys.meta_path:
        sys.meta_path.insert(0, _HOOK)
    if name in sys.modules:
        once(sys.modules[name])


def register_all() -> None:
    """Register every family with transformers' Auto classes (``AutoConfig``, ``AutoModel*``, ``AutoTokenizer``,
    hf_lineage's ``AutoModelForIntentAndSlots``), the question-answering pipeline and PEFT's LoRA targets, lazily:
    each takes effect when transformers' module for it is imported (now if it is), and the model classes are imported
    on their first lookup. Idempotent; ``import hf_lineage`` calls it."""
    with _lazy_lock:
        for family, spec in FAMILIES.items():
            _when_imported(_module_name(spec.config.split(":")[0]), f"config:{family}",
                           lambda module, family=family: _mark_config(family, module))
            _when_imported(_module_name(spec.modeling), "modeling", _mark_modeling)
            tokenizers = {}
            for reference in (spec.tokenizer, spec.fast_tokenizer):
                if reference:
                    module, name = reference.split(":")
                    tokenizers.setdefault(_module_name(module), []).append(name)
            for module, names in tokenizers.items():
                _when_imported(module, f"tokenizers:{','.join(names)}",
                               lambda module, names=tuple(names): _mark_tokenizers(names, module))
        _when_imported("transformers.models.auto.configuration_auto", "registry", _register_configs)
        _when_imported("transformers.models.auto.modeling_auto", "registry", _register_models)
        _when_imported("transformers.models.auto.tokenization_auto", "registry", _register_tokenizers)
        _when_imported("transformers.pipelines", "registry", _register_pipelines)
        _when_imported(QUESTION_ANSWERING_PIPELINE_MODULE, "registry", _pipeline_module_ran)
        _when_imported("peft.utils.constants", "registry", _register_peft)
