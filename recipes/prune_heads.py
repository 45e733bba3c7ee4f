#!/usr/bin/env python
"""Prune the attention heads of a fine-tuned lineage BERT or GPT classifier (Michel et al. 2019) and plot its score
against the fraction of heads removed, with and without a short fine-tuning after pruning.

    python recipes/classification.py --model_name_or_path out/bert --train_file train.jsonl \\
        --validation_file dev.jsonl --do_train --do_eval --output_dir ft/bert
    python recipes/prune_heads.py --model_name_or_path ft/bert --train_file train.jsonl \\
        --validation_file dev.jsonl --fractions 0 0.25 0.5 0.75 1 --finetune_epochs 1 --output_dir pruned/bert

Options: ``--help``; details: hf_lineage/compression/prune_heads_recipe.py.
"""

import sys

from hf_lineage.compression import prune_heads_recipe
from hf_lineage.tasks import run_cli


def main(argv=None):
    return prune_heads_recipe.run(*prune_heads_recipe.parse_arguments(argv))


if __name__ == "__main__":
    sys.exit(run_cli(main))
