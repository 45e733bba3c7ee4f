"""``python -m hf_lineage.pretraining`` (and ``accelerate launch -m hf_lineage.pretraining``): ``hf-lineage
pretrain``."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
