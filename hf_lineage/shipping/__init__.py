"""The shipped checkpoints' making and shipping, in one place: ``build`` pretrains every family once under one equal
budget into ``hf_lineage/checkpoints/<family>`` (the lineage's pretraining stage run once per family) and ``cli`` is
``hf-lineage checkpoints`` (list, build, push, export). It sits above the lineage it runs; the folders themselves and
``hf_lineage.checkpoints.path(family)`` stay in ``hf_lineage.checkpoints``, data low in the layers, so that every layer
(the lineage, the minimal pairs' model names) may find a shipped folder."""
