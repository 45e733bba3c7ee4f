"""Deprecated: 0.1.0's address of ``hf_lineage.folders.pretrained``, which it is (the same module); warns."""

import sys
import warnings

from .folders import pretrained

warnings.warn("hf_lineage.pretrained_folder is deprecated: import from hf_lineage.folders.pretrained",
              FutureWarning, stacklevel=2)
sys.modules[__name__] = pretrained
