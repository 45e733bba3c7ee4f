"""Deprecated: 0.1.0's address of ``hf_lineage.vectors.contextual``, which it is (the same module); warns."""

import sys
import warnings

from .vectors import contextual

warnings.warn("hf_lineage.contextual is deprecated: import from hf_lineage.vectors.contextual",
              FutureWarning, stacklevel=2)
sys.modules[__name__] = contextual
