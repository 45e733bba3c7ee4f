#!/usr/bin/env python
"""Fine-tune any lineage model to classify single sentences (SST-2 sentiment; any labels, any number of classes):
accuracy and macro-F1 (and F1 of the positive class with two classes).

    python recipes/classification.py --model_name_or_path out/gpt \\
        --train_file glue_sst2/train.tsv --validation_file glue_sst2/dev.tsv \\
        --do_train --do_eval --output_dir ft/gpt-sst2
    python recipes/classification.py --model_name_or_path out/bert --train_file trec/train_5500.label \
        --validation_file trec/TREC_10.label --trec_labels fine --do_train --do_eval --output_dir ft/bert-trec50

Runs the same under ``accelerate launch`` or ``torchrun``. Options: ``--help``; details:
hf_lineage/tasks/classification.py.
"""

import sys

from hf_lineage.tasks import TASKS, run_cli

main = TASKS["classification"].main  # main(argv=None) -> the metrics of all_results.json

if __name__ == "__main__":
    sys.exit(run_cli(main))
