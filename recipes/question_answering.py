#!/usr/bin/env python
"""Fine-tune any lineage model for extractive question answering (SQuAD v1.1 / v2.0): start and end logits per
token, answers read back with doc stride, n-best spans and a maximum answer length as transformers' run_qa.py does;
exact match and F1, plus a passage-only baseline and AddSent-style distractors next to the normal score.

    python recipes/question_answering.py --model_name_or_path out/bert --dataset_name squad_v2 \\
        --version_2_with_negative --do_train --do_eval --output_dir ft/bert-squad2

Offline, on the shipped E2E-derived sample (SQuAD 2.0 style):

    SAMPLES=$(python -c 'from hf_lineage import samples; print(samples.path("qa"))')
    python recipes/question_answering.py --model_name_or_path out/bert --version_2_with_negative \\
        --train_file $SAMPLES/qa.train.jsonl --validation_file $SAMPLES/qa.validation.jsonl \\
        --do_train --do_eval --output_dir ft/bert-e2e-qa

Runs the same under ``accelerate launch`` or ``torchrun``. Options: ``--help``; details:
hf_lineage/tasks/question_answering.py.
"""

import sys

from hf_lineage.tasks import TASKS, run_cli

main = TASKS["question_answering"].main  # main(argv=None) -> the metrics of all_results.json

if __name__ == "__main__":
    sys.exit(run_cli(main))
