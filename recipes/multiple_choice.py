#!/usr/bin/env python
"""Fine-tune any lineage model for multiple choice (SWAG's columns: a context, ending0..endingN, the index of the
right one): GPT reads each choice as ``<s> context $ choice <e>``, BERT as ``[CLS] context [SEP] choice [SEP]``, the
static families and ELMo through their task encoder; a softmax over the choices. Accuracy.

    python recipes/multiple_choice.py --model_name_or_path out/gpt \\
        --train_file hf_lineage/samples/cloze/cloze.train.jsonl \\
        --validation_file hf_lineage/samples/cloze/cloze.validation.jsonl \\
        --do_train --do_eval --output_dir ft/gpt-cloze

Runs the same under ``accelerate launch`` or ``torchrun``. Options: ``--help`` (``--context_column``,
``--question_column``, ``--choice_columns``); details: hf_lineage/tasks/multiple_choice.py.
"""

import sys

from hf_lineage.tasks import TASKS, run_cli

main = TASKS["multiple_choice"].main  # main(argv=None) -> the metrics of all_results.json

if __name__ == "__main__":
    sys.exit(run_cli(main))
