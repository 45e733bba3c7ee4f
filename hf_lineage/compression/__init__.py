"""Making trained models small: attention-head pruning (``pruning``), dynamic int8 quantization of the Linear and
LSTM layers (``quantization``) and task distillation into shallower or older students (``distillation``). The
recipes' own code, over ``hf_lineage.tasks``' skeleton: ``prune_heads_recipe`` (``recipes/prune_heads.py``) and
``distillation_recipe`` (``recipes/distillation.py``)."""
