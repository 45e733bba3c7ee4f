#!/usr/bin/env python
"""Fine-tune any lineage model on sentence pairs: paraphrase (MRPC) or entailment (RTE). BERT reads the pair as two
segments, GPT through the paper's transformations (``--pair_task entailment|similarity``), NNLM/word2vec/ELMo encode
each sentence on its own. Accuracy, macro-F1, F1.

    python recipes/sentence_pairs.py --model_name_or_path out/bert \\
        --train_file glue_mrpc/train.tsv --validation_file glue_mrpc/dev.tsv \\
        --do_train --do_eval --output_dir ft/bert-mrpc

Runs the same under ``accelerate launch`` or ``torchrun``. Options: ``--help``; details:
hf_lineage/tasks/classification.py.
"""

import sys

from hf_lineage.tasks import TASKS, run_cli

main = TASKS["sentence_pairs"].main  # main(argv=None) -> the metrics of all_results.json

if __name__ == "__main__":
    sys.exit(run_cli(main))
