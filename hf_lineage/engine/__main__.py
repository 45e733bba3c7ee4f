"""``python -m hf_lineage.engine`` (and ``accelerate launch -m hf_lineage.engine``) was ``hf-lineage pretrain``'s
module; that command line is now ``hf_lineage.pretrain_cli``, above the engine (it runs ``pretrain_dispatch.pretrain``,
which runs the engine or a CPU trainer). Deprecated: this module imports nothing of the package (the engine's folder
imports nothing above it); it warns and runs the new module by name, so old launch lines keep working::

    python -m hf_lineage.pretrain_cli bert ...
    accelerate launch --config_file recipes/accelerate/multi_gpu.yaml -m hf_lineage.pretrain_cli bert ...
"""

import runpy
import sys
import warnings

if __name__ == "__main__":
    warnings.warn("`python -m hf_lineage.engine` is deprecated: run `hf-lineage pretrain ...` or `python -m "
                  "hf_lineage.pretrain_cli ...` (also under `accelerate launch -m`) with the same arguments",
                  FutureWarning, stacklevel=1)
    sys.argv[0] = "hf_lineage.pretrain_cli"
    runpy.run_module("hf_lineage.pretrain_cli", run_name="__main__", alter_sys=True)
