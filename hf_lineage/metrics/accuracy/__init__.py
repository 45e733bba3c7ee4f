# An evaluate metric module; load it with hf_lineage.metrics.load("accuracy").
