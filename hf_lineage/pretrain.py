"""Deprecated: ``hf_lineage.pretrain`` (0.1.0's address of the pre-training names) and ``python -m
hf_lineage.pretrain``; use ``hf_lineage.pretraining`` and ``python -m hf_lineage.pretraining``. Nothing in the package
imports it."""

import sys
import warnings

from .data.examples import EpochPermutationSampler, SeededExamples, StreamedExamples, load_text, mask_seed
from .engine.loop import evaluate
from .engine.resume import rng_states, save_checkpoint, set_rng_states
from .objectives.optimization import build_optimizer, set_schedule_position
from .folders.pretrained import save_final
from .pretraining.arguments import (PretrainArguments, PretrainError, check_arguments, check_overrides, given_options,
                                    resolve_defaults)
from .pretraining.cli import build_parser, end_processes, main, parse_set, run_namespace
from .pretraining.dispatch import pretrain, use_cpu_backend

# A FutureWarning, not a DeprecationWarning: Python hides the latter unless it is raised in __main__, and the people
# this module's old address reaches are users running scripts and launch commands, who would then never see it.
warnings.warn("hf_lineage.pretrain is deprecated: import pretrain and PretrainArguments from hf_lineage.pretraining, "
              "and run `python -m hf_lineage.pretraining` (or `accelerate launch -m hf_lineage.pretraining`) for `-m "
              "hf_lineage.pretrain`", FutureWarning, stacklevel=2)
__all__ = [
    "EpochPermutationSampler", "PretrainArguments", "PretrainError", "SeededExamples", "StreamedExamples",
    "build_optimizer", "build_parser", "check_arguments", "check_overrides", "end_processes", "evaluate",
    "given_options", "load_text", "main", "mask_seed", "parse_set", "pretrain", "resolve_defaults", "rng_states",
    "run_namespace", "save_checkpoint", "save_final", "set_rng_states", "set_schedule_position", "use_cpu_backend",
]

if __name__ == "__main__":
    sys.exit(main())
