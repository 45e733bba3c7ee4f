"""Mixed precision by what the device computes: bf16 or fp16 autocast only where the hardware runs it natively.

A CPU without native bf16 (no AVX512-BF16 or AMX: AMD before Zen 4, Intel before Cooper Lake) emulates it: a 768 ×
3072 linear layer under bf16 autocast ran 5.6× slower than in float32 on a 2-core Zen 3, and oneDNN cannot run an
LSTM under it at all ("could not create a primitive descriptor for the LSTM forward propagation primitive"), so the
task heads, ELMo and every generation cell would fail in the middle of a run. fp16 on a CPU is the same story (its
own instruction set, AVX512-FP16 or AMX-FP16). Hence one rule for every command that takes a precision
(``hf-lineage lineage``, ``hf-lineage pretrain``, the fine-tuning recipes):

- a precision the command picked itself (a lineage scale's default) falls back to float32 where the device lacks
  it, and the command says so at its start;
- a precision the user named is refused with one line before anything runs, naming the CPU and the way out
  (``--mixed-precision no``): on such a CPU it would be slower than float32 and would fail on every LSTM.

``HF_LINEAGE_CPU_PRECISIONS`` overrides what the CPU is taken to support (a comma-separated list, e.g. ``bf16``, or
``none``): the tests simulate either kind of machine with it, and it reaches the worker processes a run starts.

Nothing here imports torch at import time (``import hf_lineage`` stays light).
"""

from __future__ import annotations

import os
import platform

CPU_PRECISIONS_VARIABLE = "HF_LINEAGE_CPU_PRECISIONS"
LOW_PRECISIONS = ("bf16", "fp16")


class PrecisionError(ValueError):
    """A mixed precision the user named that the device cannot run; the message names the device and the fix."""


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or the platform's processor string elsewhere."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "this CPU"


def cpu_supports(precision: str) -> bool:
    """Whether this CPU computes ``precision`` ("bf16" or "fp16") natively, as oneDNN, which runs torch's CPU
    autocast, sees it (``HF_LINEAGE_CPU_PRECISIONS`` overrides)."""
    forced = os.environ.get(CPU_PRECISIONS_VARIABLE)
    if forced is not None:
        return precision in {p.strip() for p in forced.lower().split(",")}
    import torch

    check = {"bf16": "_is_mkldnn_bf16_supported", "fp16": "_is_mkldnn_fp16_supported"}[precision]
    try:
        return bool(getattr(torch.ops.mkldnn, check)())
    except (AttributeError, RuntimeError):  # a torch without the probe: the instruction sets it is made of
        cpu = torch.cpu
        if precision == "bf16":
            return bool(cpu._is_avx512_bf16_supported() or cpu._is_amx_tile_supported())
        return bool(cpu._is_amx_fp16_supported())


def device_kind(use_cpu: bool = False) -> str:
    """"cuda" where a run would train on a GPU (one is visible and ``use_cpu`` is not asked), else "cpu"."""
    import torch

    return "cpu" if use_cpu or not torch.cuda.is_available() else "cuda"


def supports(precision: str, device: str) -> bool:
    """Whether ``device`` ("cpu" or "cuda") runs ``precision`` ("no", "bf16", "fp16") natively."""
    if precision == "no":
        return True
    if device == "cuda":
        import torch

        return precision == "fp16" or torch.cuda.is_bf16_supported()
    return cpu_supports(precision)


def device_description(device: str) -> str:
    if device == "cuda":
        import torch

        return f"this GPU ({torch.cuda.get_device_name(0)})"
    return f"this CPU ({cpu_name()})"


def missing_reason(precision: str, device: str) -> str:
    """Why ``device`` does not run ``precision``, in a few words."""
    if device == "cuda":
        return f"{device_description(device)} has no native {precision}"
    sets = "AVX512-BF16 or AMX" if precision == "bf16" else "AVX512-FP16 or AMX-FP16"
    return (f"{device_description(device)} has no native {precision} ({sets}): it would emulate it, slower than "
            f"float32, and cannot run an LSTM in it")


def choose_precision(requested: str, *, named: bool, device: str, asked: str | None = None,
                     fix: str = "run with --mixed-precision no (float32)") -> tuple[str, str]:
    """The precision to run and why, for ``requested`` ("no", "bf16" or "fp16") on ``device``.

    ``named``: the user asked for it (refused with ``PrecisionError`` where the device lacks it, the message naming
    the option as ``asked``, default ``--mixed-precision REQUESTED``, and ending in ``fix``); otherwise it is a
    default that falls back to float32 ("no").

        >>> choose_precision("no", named=False, device="cpu")
        ('no', 'float32')
    """
    if requested not in ("no", *LOW_PRECISIONS):
        raise PrecisionError(f"--mixed-precision must be one of no, {', '.join(LOW_PRECISIONS)}, got {requested!r}")
    if requested == "no":
        return "no", "float32"
    if supports(requested, device):
        return requested, f"{requested} autocast ({device_description(device)} computes it natively)"
    if named:
        raise PrecisionError(f"{asked or '--mixed-precision ' + requested}: {missing_reason(requested, device)}; "
                             f"{fix}")
    return "no", f"float32, not the default {requested}: {missing_reason(requested, device)}"


def describe_machine() -> str:
    """What a run ran on, in one line, recorded beside its wall times by the lineage, crosslingual and checkpoint
    builds (machines here differ up to 2x, so a time means little without the CPU's model): ``"x86_64, AMD EPYC 7B13,
    2 CPU cores, 2 torch thread(s), no GPU, torch 2.13.0+cpu, 1 process(es)"`` (processes: the launch's
    ``WORLD_SIZE``)."""
    import torch

    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return (f"{platform.machine()}, {cpu_name()}, {os.cpu_count()} CPU cores, {torch.get_num_threads()} torch "
            f"thread(s), {device}, torch {torch.__version__}, {int(os.environ.get('WORLD_SIZE', '1'))} process(es)")
