"""Dynamic int8 quantization of any lineage model's ``nn.Linear`` and ``nn.LSTM`` layers, for CPU inference.

Dynamic quantization (Jacob et al. 2018; PyTorch's "dynamic" mode): each layer's weights are stored as int8 with one
scale per tensor; at run time each input is quantized on the fly with its own range, the matmul runs in int8 with
int32 accumulation (fbgemm / oneDNN kernels) and the result comes back as float. No calibration data, no training.

    model = quantize_dynamic_int8("ft/bert")           # a saved folder, or a model already in memory
    save_quantized(model, "ft/bert-int8", tokenizer)   # config.json + quantization.json + quantized_model.pt
    model = load_quantized("ft/bert-int8")             # the same outputs as the in-memory quantized model

or from the shell: ``hf-lineage quantize ft/bert ft/bert-int8``.

What is quantized, family by family: every ``nn.Linear`` (BERT's and GPT's attention and feed-forward projections,
poolers and classifiers; NNLM's hidden layer; ELMo's highway and projection layers; every family's task heads) and
every plain ``nn.LSTM`` (the static families' and ELMo's task BiLSTM). Left in float, on purpose:

* a Linear whose weight is tied to another parameter (GPT's and BERT's LM heads share the input embeddings: an int8
  copy would untie them) and BERT's LM decoder, whose weight the prediction head reads directly;
* ELMo's biLM layers (``LineageElmoLSTMLayer``): LSTMs with a projection (``proj_size``), which PyTorch's dynamic
  quantized LSTM does not support, and with their own forward (state, lengths, clipping). A step-by-step loop with
  int8 matmuls is slower than the fused float LSTM (docs/quantization.md has the measurement);
* embeddings, convolutions (ELMo's character CNN, the static families' CNN encoder) and layer norms: dynamic int8
  covers Linear and recurrent layers only.

Backend: ``torch.ao.quantization.quantize_dynamic``. PyTorch 2.10+ flags ``torch.ao.quantization`` as deprecated in
favour of torchao, but torchao's int8 configs run *slower* than float in eager mode on CPU (they are made for
``torch.compile``) and do not cover LSTMs; docs/quantization.md has the numbers. The deprecation warnings are
silenced here (only those two messages); if a future torch removes the API, ``quantize_dynamic_int8`` raises an
ImportError saying so.

A quantized model runs on the CPU only and in inference only (no gradients through the int8 layers).
"""

from __future__ import annotations

# Importing anything of hf_lineage runs the package root, which registers the families with the Auto classes.

import copy
import json
import os
import warnings
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn

from ..folders.staged import staged_folder

FORMAT = "hf-lineage-dynamic-int8"
FORMAT_VERSION = 1
QUANTIZATION_FILE = "quantization.json"
WEIGHTS_FILE = "quantized_model.pt"
KINDS = ("Linear", "LSTM")

@contextmanager
def _quiet_deprecations():
    """torch.ao.quantization and quantized tensors warn that they are deprecated on every call (see the module
    docstring for why they are still the right backend on CPU); those warnings only are silenced."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"torch\.ao\.quantization is deprecated", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=r"torch\.quantize_per_tensor, torch\.quantize_per_channel")
        warnings.filterwarnings("ignore", message=r"TypedStorage is deprecated")  # torch.save of int8 tensors
        yield


def _ao():
    try:
        from torch.ao import quantization
        from torch.ao.nn.quantized import dynamic
    except ImportError as error:  # pragma: no cover - a torch without the eager dynamic API
        raise ImportError(f"torch {torch.__version__} has no torch.ao.quantization.quantize_dynamic, which dynamic "
                          "int8 quantization uses (see docs/quantization.md)") from error
    return quantization, dynamic


def _tied_parameter_ids(model: nn.Module) -> set[int]:
    seen, tied = {}, set()
    for _, param in model.named_parameters(remove_duplicate=False):
        seen[id(param)] = seen.get(id(param), 0) + 1
    for key, count in seen.items():
        if count > 1:
            tied.add(key)
    return tied


def quantizable_modules(model: nn.Module, kinds=KINDS) -> dict[str, str]:
    """{module name: "Linear" or "LSTM"} for the layers ``quantize_dynamic_int8`` replaces in ``model``: every
    ``nn.Linear`` and plain ``nn.LSTM`` without a projection, except those listed in the module docstring."""
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise ValueError(f"cannot quantize {unknown}: dynamic int8 covers {list(KINDS)}")
    tied = _tied_parameter_ids(model)
    chosen = {}
    for parent_name, parent in model.named_modules():
        for child_name, module in parent.named_children():
            name = f"{parent_name}.{child_name}" if parent_name else child_name
            if "Linear" in kinds and type(module) is nn.Linear:
                if id(module.weight) in tied:
                    continue
                chosen[name] = "Linear"
            # Exactly nn.LSTM: a subclass (ELMo's biLM layer) has its own forward that the int8 LSTM would lose.
            elif "LSTM" in kinds and type(module) is nn.LSTM and not module.proj_size:
                chosen[name] = "LSTM"
    return chosen


def quantized_modules(model: nn.Module) -> dict[str, str]:
    """{module name: "Linear" or "LSTM"} for the layers of ``model`` that are dynamic int8 now."""
    _, dynamic = _ao()
    found = {}
    for name, module in model.named_modules():
        if isinstance(module, dynamic.Linear):
            found[name] = "Linear"
        elif isinstance(module, dynamic.LSTM):
            found[name] = "LSTM"
    return found


def _apply(model: nn.Module, modules: dict[str, str]) -> nn.Module:
    quantization, _ = _ao()
    spec = {name: quantization.default_dynamic_qconfig for name in modules}
    with _quiet_deprecations():
        quantization.quantize_dynamic(model, spec, dtype=torch.qint8, inplace=True)
    missing = sorted(set(modules) - set(quantized_modules(model)))
    if missing:
        raise RuntimeError(f"these layers were not quantized: {missing}")
    return model


def lineage_model_type(path) -> str:
    """The ``model_type`` of the lineage model saved in folder ``path``; a ValueError or FileNotFoundError naming
    the problem when there is no folder, no config.json, or a model that is not one of hf_lineage's families."""
    from ..registry import FAMILIES, family_classes

    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"{str(path)!r} is not a folder: give the folder a model was saved to")
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise FileNotFoundError(f"{str(path)!r} has no config.json: it is not a saved model")
    try:
        model_type = json.loads(config_file.read_text(encoding="utf-8")).get("model_type")
    except (json.JSONDecodeError, AttributeError) as error:
        raise ValueError(f"{config_file} is not a valid config.json: {error}") from error
    known = {family_classes(family)[0].model_type for family in FAMILIES}
    if model_type not in known:
        raise ValueError(f"{str(path)!r} holds a {model_type!r} model, not an hf_lineage one "
                         f"({', '.join(sorted(known))}); quantize other models in memory with "
                         "quantize_dynamic_int8(model)")
    return model_type


def _model_class(config, architecture: str | None):
    """The lineage class named ``architecture`` (config.architectures[0]) in the config's family, else AutoModel's."""
    from ..registry import FAMILIES, family_classes

    for family in FAMILIES:
        config_class, modeling = family_classes(family)
        if config_class.model_type == config.model_type:
            if architecture and hasattr(modeling, architecture):
                return getattr(modeling, architecture)
            return getattr(modeling, modeling.AUTO_CLASSES["AutoModel"])
    raise ValueError(f"{config.model_type!r} is not an hf_lineage model type")


def load_float_model(path) -> nn.Module:
    """The float lineage model saved in ``path``, in the class its config names (e.g. the fine-tuned classifier)."""
    from transformers import AutoConfig

    lineage_model_type(path)
    config = AutoConfig.from_pretrained(path)
    architecture = (config.architectures or [None])[0]
    return _model_class(config, architecture).from_pretrained(path).eval()


def quantize_dynamic_int8(model_or_path, kinds=KINDS, inplace: bool = False) -> nn.Module:
    """A dynamic int8 copy of a model (or of the lineage model saved in a folder): its ``nn.Linear`` and ``nn.LSTM``
    layers (``kinds``) replaced by PyTorch's dynamic quantized ones, on the CPU, in eval mode. The model passed in is
    left as it was unless ``inplace``. Raises ValueError when nothing in the model can be quantized."""
    if isinstance(model_or_path, (str, os.PathLike)):
        model, inplace = load_float_model(model_or_path), True
    elif isinstance(model_or_path, nn.Module):
        model = model_or_path
    else:
        raise TypeError(f"quantize_dynamic_int8 takes a model or a folder, got {type(model_or_path).__name__}")
    if quantized_modules(model):
        raise ValueError(f"{type(model).__name__} is already quantized")
    modules = quantizable_modules(model, kinds)
    if not modules:
        raise ValueError(f"{type(model).__name__} has no {' or '.join(kinds)} layer that dynamic int8 can quantize")
    if not inplace:
        model = copy.deepcopy(model)
    return _apply(model.cpu().eval(), modules)


def model_size_bytes(model: nn.Module) -> int:
    """Bytes of the model's state as ``torch.save`` writes it (int8 weights count one byte each)."""
    import io

    buffer = io.BytesIO()
    with _quiet_deprecations():
        torch.save(model.state_dict(), buffer)
    return buffer.tell()


def save_quantized(model: nn.Module, output_dir, tokenizer=None, overwrite: bool = False) -> Path:
    """Write a quantized lineage model (and its tokenizer) to ``output_dir``: ``config.json``, ``quantization.json``
    (the format, the quantized layers, torch's version) and ``quantized_model.pt`` (the state dict, int8 weights and
    float rest). Written to a temporary folder beside ``output_dir`` and renamed into place at the end, so a failure
    never leaves a half-written folder. An existing, non-empty ``output_dir`` is refused unless ``overwrite``."""
    modules = quantized_modules(model)
    if not modules:
        raise ValueError("save_quantized takes a quantized model (quantize_dynamic_int8's result); save a float "
                         "model with save_pretrained")
    config = getattr(model, "config", None)
    if config is None or not hasattr(config, "save_pretrained"):
        raise ValueError(f"{type(model).__name__} has no transformers config to save with it")
    out = Path(output_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        raise ValueError(f"{str(out)!r} exists and is not empty; choose another output folder (or overwrite=True)")
    with staged_folder(out) as staging:
        config = copy.deepcopy(config)  # the model's own config is left as it was
        config.architectures = [type(model).__name__]
        config.save_pretrained(staging)
        with _quiet_deprecations():
            torch.save(model.state_dict(), staging / WEIGHTS_FILE)
        info = {"format": FORMAT, "format_version": FORMAT_VERSION,
                "method": "dynamic int8 (torch.ao quantize_dynamic)",
                "architecture": type(model).__name__, "modules": modules, "torch_version": torch.__version__,
                "engine": torch.backends.quantized.engine}
        (staging / QUANTIZATION_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        if tokenizer is not None:
            tokenizer.save_pretrained(staging)
    return out


def is_quantized_folder(path) -> bool:
    return (Path(path) / QUANTIZATION_FILE).is_file()


def load_quantized(path) -> nn.Module:
    """The quantized model ``save_quantized`` wrote to ``path``, in eval mode on the CPU: the float architecture
    is built from config.json, the same layers are quantized, then the saved int8 state is loaded into them."""
    from transformers import AutoConfig

    folder = Path(path)
    if not is_quantized_folder(folder):
        raise FileNotFoundError(f"{str(path)!r} has no {QUANTIZATION_FILE}: not a folder save_quantized wrote "
                                "(a float model loads with from_pretrained)")
    info = json.loads((folder / QUANTIZATION_FILE).read_text(encoding="utf-8"))
    if info.get("format") != FORMAT or info.get("format_version", 0) > FORMAT_VERSION:
        raise ValueError(f"{folder / QUANTIZATION_FILE} is format {info.get('format')!r} version "
                         f"{info.get('format_version')}; this hf_lineage reads {FORMAT!r} up to {FORMAT_VERSION}")
    lineage_model_type(folder)
    config = AutoConfig.from_pretrained(folder)
    model_class = _model_class(config, info["architecture"])
    if model_class.__name__ != info["architecture"]:
        raise ValueError(f"{info['architecture']!r} is not a class of {config.model_type!r}")
    model = model_class(config).eval()
    _apply(model, info["modules"])
    with _quiet_deprecations():
        # weights_only: tensors and, for the int8 LSTMs, their packed cell parameters (TorchBind script objects
        # that rebuild from tensors), nothing that runs arbitrary code.
        with torch.serialization.safe_globals([torch.ScriptObject]):
            state = torch.load(folder / WEIGHTS_FILE, map_location="cpu", weights_only=True)
        model.load_state_dict(state, strict=True)
    if hasattr(model, "tie_weights"):
        model.tie_weights()
    return model.eval()


def quantize_folder(model_dir, output_dir, kinds=KINDS, overwrite: bool = False) -> Path:
    """``hf-lineage quantize``: the lineage model in ``model_dir`` quantized and saved, with its tokenizer, to
    ``output_dir``. Bad input (no folder, not a lineage model, an occupied output) raises before anything is
    written."""
    from transformers import AutoTokenizer

    lineage_model_type(model_dir)
    out = Path(output_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        raise ValueError(f"{str(out)!r} exists and is not empty; choose another output folder (or --overwrite)")
    if Path(model_dir).resolve() == out.resolve():
        raise ValueError("the output folder must differ from the model's folder")
    model = quantize_dynamic_int8(model_dir, kinds=kinds)
    folder = Path(model_dir)
    has_tokenizer = any((folder / name).is_file() for name in ("tokenizer_config.json", "tokenizer.json", "vocab.txt"))
    tokenizer = AutoTokenizer.from_pretrained(folder) if has_tokenizer else None
    return save_quantized(model, out, tokenizer=tokenizer, overwrite=overwrite)
