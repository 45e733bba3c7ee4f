"""Making trained models small: attention-head pruning (``pruning``). Distillation and quantization are to follow
(issue 20)."""
