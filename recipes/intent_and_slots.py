#!/usr/bin/env python
"""Fine-tune any lineage model for joint intent classification and slot filling (Chen, Zhuo & Wang 2019): one model,
an intent per utterance and a BIO slot tag per word, trained on the sum of both losses. Metrics: intent accuracy,
slot F1 (seqeval) and exact match (intent and every tag right).

    python recipes/intent_and_slots.py --model_name_or_path out/bert \\
        --train_file data/atis/train --validation_file data/atis/dev \\
        --do_train --do_eval --output_dir ft/bert-atis

Data: ATIS / SNIPS folders as Goo et al. (2018) and JointBERT ship them (``seq.in``, ``seq.out``, ``label``,
line-aligned), or ``.jsonl`` files of ``{"words": [...], "slots": [...], "intent": "..."}``. A small sample ships
with the package: hf_lineage/samples/slots/slots.{train,validation}.jsonl (from E2E NLG, CC BY-SA 4.0).

Runs the same under ``accelerate launch`` or ``torchrun``. Options: ``--help``; details:
hf_lineage/tasks/intent_and_slots.py.
"""

import sys

from hf_lineage.tasks import TASKS, run_cli

main = TASKS["intent_and_slots"].main  # main(argv=None) -> the metrics of all_results.json

if __name__ == "__main__":
    sys.exit(run_cli(main))
