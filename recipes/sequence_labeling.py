#!/usr/bin/env python
"""Fine-tune any lineage model for sequence labeling: NER (CoNLL-2003, seqeval entity F1) or POS tagging (CoNLL-U,
per-word accuracy). A tag per word, on the word's first token.

    python recipes/sequence_labeling.py --model_name_or_path out/bert \\
        --train_file conll2003/eng.train --validation_file conll2003/eng.testa \\
        --do_train --do_eval --output_dir ft/bert-ner

CoNLL-2003 files of other names (``train.txt``, ``valid.txt``) and CoNLL-U ones are recognised by their lines.

Runs the same under ``accelerate launch`` or ``torchrun``. Options: ``--help``; details: hf_lineage/tasks/labeling.py.
"""

import sys

from hf_lineage.tasks import TASKS, run_cli

main = TASKS["sequence_labeling"].main  # main(argv=None) -> the metrics of all_results.json

if __name__ == "__main__":
    sys.exit(run_cli(main))
