"""``hf_lineage.pretrain``: the engine's public names where they have always been, re-exported from
``hf_lineage.engine`` (which holds the code, one module per concern). ``python -m hf_lineage.pretrain`` is
``hf-lineage pretrain``:

    accelerate launch --config_file recipes/accelerate/multi_gpu.yaml -m hf_lineage.pretrain bert ...
"""

import sys

from .data.examples import EpochPermutationSampler, SeededExamples, StreamedExamples, load_text, mask_seed
from .engine import pretrain
from .engine.pretrain_arguments import (
    PretrainArguments,
    PretrainError,
    check_arguments,
    check_overrides,
    given_options,
    resolve_defaults,
    use_cpu_backend,
)
from .engine.resume import rng_states, save_checkpoint, set_rng_states
from .engine.command_line import build_parser, end_processes, main, parse_set, run_namespace
from .engine.loop import evaluate
from .pretrained_folder import save_final
from .optimization import build_optimizer, set_schedule_position

__all__ = [
    "EpochPermutationSampler", "PretrainArguments", "PretrainError", "SeededExamples", "StreamedExamples",
    "build_optimizer", "build_parser", "check_arguments", "check_overrides", "end_processes", "evaluate",
    "given_options", "load_text", "main", "mask_seed", "parse_set", "pretrain", "resolve_defaults", "rng_states",
    "run_namespace", "save_checkpoint", "save_final", "set_rng_states", "set_schedule_position", "use_cpu_backend",
]

if __name__ == "__main__":
    sys.exit(main())
