"""``python -m hf_lineage.lineage`` (e.g. under ``accelerate launch``): the same as ``hf-lineage lineage``."""

import sys

from .cli import main

sys.exit(main())
