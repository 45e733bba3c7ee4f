"""Making trained models small: attention-head pruning (``pruning``), dynamic int8 quantization of the Linear and
LSTM layers (``quantization``) and task distillation into shallower or older students (``distillation``,
``distill_task``)."""
