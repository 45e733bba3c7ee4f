#!/usr/bin/env python
"""Distil a fine-tuned teacher into a smaller student on the same task: the teacher's softened logits (temperature
T, weight α) and the gold labels (weight 1 − α) train the student, and unlabelled text, where given, adds examples
with the soft targets only. Students: fewer layers of a lineage BERT teacher (DistilBERT) or a BiLSTM over word2vec,
NNLM or ELMo features (Tang et al. 2019).

    python recipes/classification.py --model_name_or_path out/bert --train_file sst2/train.tsv \\
        --validation_file sst2/dev.tsv --do_train --do_eval --output_dir ft/bert-sst2
    python recipes/distillation.py --teacher_model_name_or_path ft/bert-sst2 --student bilstm-word2vec:out/word2vec \\
        --train_file sst2/train.tsv --validation_file sst2/dev.tsv --augmentation_file unlabelled.txt \\
        --temperature 2 --alpha_soft 0.5 --do_train --do_eval --output_dir distilled/bilstm-sst2
    python recipes/distillation.py --task sequence_labeling --teacher_model_name_or_path ft/bert-pos \\
        --student bert-layers:1 --train_file en_ewt-ud-train.conllu --validation_file en_ewt-ud-dev.conllu \\
        --do_train --do_eval --output_dir distilled/bert1-pos

Options: ``--help``; details: hf_lineage/compression/distillation_recipe.py and docs/distillation.md.
"""

import sys

from hf_lineage.compression import distillation_recipe
from hf_lineage.tasks import run_cli


def main(argv=None):
    # HfArgumentParser over (ModelArguments, DataTrainingArguments, TrainingArguments, DistillationArguments)
    return distillation_recipe.run(*distillation_recipe.parse_arguments(argv))


if __name__ == "__main__":
    sys.exit(run_cli(main))
