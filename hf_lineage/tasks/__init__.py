"""Fine-tuning recipes for the task types of the lineage, for every family, as a library.

The scripts in ``recipes/`` are thin wrappers around these modules:

====================  ==============================  =============================================================
module                script                          task
====================  ==============================  =============================================================
``labeling``          ``sequence_labeling.py``        NER, POS: a tag per word (seqeval entity F1 / accuracy)
``classification``    ``classification.py``,          a label per sentence (SST-2), per sentence pair (MRPC, RTE):
                      ``sentence_pairs.py``           accuracy, macro-F1 (and F1 of the positive class)
``generation``        ``generation.py``               translation (Multi30k), data-to-text (E2E): sacreBLEU, ROUGE
``intent_and_slots``  ``intent_and_slots.py``         an intent per utterance and a BIO slot tag per word, one model
                                                      (ATIS, SNIPS): intent accuracy, slot F1, exact match
====================  ==============================  =============================================================

Each module has ``main(argv)`` (a command line, as the script takes it) and ``run(model_args, data_args,
training_args)``; both return the metrics written to ``all_results.json``. What they share, in the order a run
meets it: ``arguments`` (the argument dataclasses, ``parse_arguments``, ``run_cli``), ``data`` (the splits in the
task's columns, label maps; the file formats themselves are read by ``hf_lineage.data.readers``) and ``training``
(loading a model that can do the task, ``--freeze_base``, the Trainer mixin and model card, train/evaluate/predict).

Example::

    >>> from hf_lineage.tasks import classification
    >>> classification.main(["--model_name_or_path", "out/gpt", "--train_file", "sst2/train.tsv",
    ...                      "--validation_file", "sst2/dev.tsv", "--do_train", "--do_eval",
    ...                      "--output_dir", "ft/gpt-sst2"])["eval_accuracy"]  # doctest: +SKIP
"""

from .arguments import DataTrainingArguments, ModelArguments, parse_arguments, run_cli
from .data import read_data_file, standardize

__all__ = ["DataTrainingArguments", "ModelArguments", "parse_arguments", "read_data_file", "run_cli", "standardize"]
