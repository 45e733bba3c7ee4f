"""Making trained models small: attention-head pruning (``pruning``) and dynamic int8 quantization of the Linear
and LSTM layers (``quantization``). Distillation is to follow (issue 20)."""
