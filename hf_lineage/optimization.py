"""Deprecated: 0.1.0's address of ``hf_lineage.objectives.optimization``, which it is (the same module); warns."""

import sys
import warnings

from .objectives import optimization

warnings.warn("hf_lineage.optimization is deprecated: import from hf_lineage.objectives.optimization",
              FutureWarning, stacklevel=2)
sys.modules[__name__] = optimization
