#!/usr/bin/env python
"""Fine-tune any lineage model for generation — translation (Multi30k parallel text), data-to-text (E2E CSV),
summarisation-style tables — with Seq2SeqTrainer: GPT, NNLM, word2vec and ELMo as causal LMs over
``source <eos> target <eos>``, BERT as the encoder of an EncoderDecoderModel (BERT decoder, or
``--decoder_model_name_or_path`` a lineage GPT). sacreBLEU and ROUGE with ``--predict_with_generate``.

    python recipes/generation.py --model_name_or_path out/gpt \\
        --train_file multi30k/train --validation_file multi30k/val \\
        --source_lang de --target_lang en --do_train --do_eval --predict_with_generate --output_dir ft/gpt-de-en

Runs the same under ``accelerate launch`` or ``torchrun``. Options: ``--help``; details:
hf_lineage/tasks/generation.py.
"""

import sys

from hf_lineage.tasks import TASKS, run_cli

main = TASKS["generation"].main  # main(argv=None) -> the metrics of all_results.json

if __name__ == "__main__":
    sys.exit(run_cli(main))
