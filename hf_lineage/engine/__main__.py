"""``python -m hf_lineage.engine`` is ``hf-lineage pretrain``; ``accelerate launch`` runs it on many processes:

    accelerate launch --config_file recipes/accelerate/multi_gpu.yaml -m hf_lineage.engine bert ...
"""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
