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

from transformers import TrainingArguments

from hf_lineage.tasks import classification
from hf_lineage.tasks.arguments import parse_arguments, run_cli


def main(argv=None):
    # HfArgumentParser over (ModelArguments, DataTrainingArguments, TrainingArguments)
    model_args, data_args, training_args = parse_arguments(argv, TrainingArguments)
    return classification.run(model_args, data_args, training_args, pairs=True)


if __name__ == "__main__":
    sys.exit(run_cli(main))
