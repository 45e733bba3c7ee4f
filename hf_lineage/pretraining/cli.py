"""``hf-lineage pretrain`` (and ``python -m hf_lineage.pretraining``, the module ``accelerate launch -m`` runs): one
flag per field of ``PretrainArguments``, the run handed to ``dispatch.pretrain``, which settles the arguments and
picks the engine or the family's own CPU trainer::

    python -m hf_lineage.pretraining bert --config tiny --train-file corpus.txt --output-dir out/bert
    accelerate launch --config_file recipes/accelerate/multi_gpu.yaml -m hf_lineage.pretraining bert ...
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields

from .. import engine
from .arguments import PretrainArguments, PretrainError


def parse_set(pairs: list[str]) -> dict:
    """``--set name=value``: JSON where the value parses (numbers, true/false, lists), a string otherwise."""
    overrides = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise PretrainError(f"--set expects name=value, got {pair!r}")
        name, value = pair.split("=", 1)
        try:
            overrides[name] = json.loads(value)
        except json.JSONDecodeError:
            overrides[name] = value
    return overrides


def parse_mask_split(text: str) -> tuple[float, ...]:
    """``--mask-split 0.8,0.1,0.1``: the shares of the masked tokens replaced by [MASK], by a random token and kept
    (checked, with their sum, before anything is written: ``arguments.check_objective``)."""
    try:
        return tuple(float(share) for share in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected three shares like 0.8,0.1,0.1, got {text!r}") from None


FLAG_HELP = {
    "init_from": "continue pre-training a saved model, a folder or a Hub id (run_mlm.py's --model_name_or_path): a "
    "lineage model of FAMILY, or transformers' BertForPreTraining (bert) / OpenAIGPTLMHeadModel (gpt), converted; its "
    "tokenizer and config are kept (no --tokenizer, --vocab-size, --config or --set that reshapes a weight)",
    "config": "named size of the family's config (default: its paper's: bert base, gpt gpt, elmo original, nnlm mlp1, "
    "word2vec mikolov2013, svd levy2015); tiny, for smoke runs and tests, also makes the batch, sequence length and "
    "vocabulary small (8 x 64, 8000 words; word2vec's are small already) unless given",
    "train_file": "text file(s): one sentence or paragraph per line, blank lines between documents (repeatable); "
    "LANG=PATH for a multilingual corpus (BERT: --train-file en=en.txt --train-file de=de.txt)",
    "language_alpha": "a multilingual corpus's smoothing: language i drawn with probability ∝ (its share)^α, for the "
    "vocabulary and the sequences (mBERT: 0.7; 1: as given)",
    "validation_file": "held-out text for periodic evaluation",
    "dataset_name": "a datasets Hub name instead of --train-file (online)",
    "streaming": "read the corpus lazily (needs --max-steps)",
    "stream_buffer_documents": "documents per buffer when streaming (BERT draws random NSP segments in it)",
    "tokenizer": "an existing tokenizer folder; default: train the family's tokenizer on the training text",
    "vocab_size": "vocabulary size of the tokenizer trained here",
    "max_steps": "optimiser steps (overrides --num-epochs)",
    "max_train_seconds": "a wall-clock budget: train until it runs out (epochs ignored; --max-steps still caps), the "
    "learning-rate schedule running on the clock (its warmup is --warmup-ratio of the budget)",
    "mixed_precision": "no, bf16 or fp16 (only where the device computes it natively; refused on a CPU without it)",
    "checkpoint_every": "save a resumable checkpoint every N steps",
    "keep_checkpoints": "how many recent checkpoints to keep",
    "resume_from": "'latest' or a checkpoint folder of this output dir",
    "eval_every": "evaluate on --validation-file every N steps (and always at the end)",
    "report_to": "Accelerate tracker: tensorboard, wandb, ... or none",
    "overwrite_output_dir": "delete what the output dir holds first",
    "dataloader_num_workers": "processes that make the batches while the model trains (default: 2 on a GPU, 0 on a "
    "CPU, where they would take cores from the computation)",
    "torch_compile": "compile the model with torch.compile (inductor) before training: faster steps on a GPU after a "
    "compilation of a minute or more; off by default",
    "push_to_hub": "after training, push the model folder (model, tokenizer, card, train_results.json; not the "
    "checkpoints) to the Hugging Face Hub; needs a token (`hf auth login` or HF_TOKEN), checked before training",
    "hub_model_id": "the Hub repository to push to (NAME or OWNER/NAME; default: the output folder's name)",
    "next_sentence_prediction": "bert: train next-sentence prediction (the default, as the paper); "
    "--no-next-sentence-prediction drops its loss and keeps the same [CLS] A [SEP] B [SEP] pairs (Devlin et al.'s "
    "\"No NSP\" ablation); with --set is_decoder=true, BERT's architecture trained left to right (\"LTR & No NSP\")",
    "mlm_probability": "bert: the share of each sequence's tokens masked and predicted (default 0.15)",
    "mask_split": "bert: of the masked tokens, the shares replaced by [MASK], by a random token and left unchanged, "
    "summing to 1 (default 0.8,0.1,0.1)",
    "backend": "auto, engine or cpu: cpu runs the family's own CPU trainer (word2vec: whole passes over local files, "
    "no checkpoints); auto picks it when the family has one, no GPU is visible, one process runs and no option only "
    "the engine honours (--max-steps, --checkpoint-every, --learning-rate, ...) is given",
}


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    from ..registry import FAMILIES

    parser = parser or argparse.ArgumentParser(prog="hf-lineage pretrain", description=description())
    parser.add_argument("family", help=f"model family: {', '.join(FAMILIES)}")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                        help="override a field of the family's config (repeatable)")
    skip = {"family", "output_dir", "overrides"}
    for f in fields(PretrainArguments):
        if f.name in skip:
            continue
        flag = "--" + f.name.replace("_", "-")
        help_text = FLAG_HELP.get(f.name, "default: the family's (from its paper)" if f.default is None else None)
        if f.type == "bool":
            parser.add_argument(flag, action="store_true", help=help_text)
        elif f.type == "bool | None":  # on by the family's default: --no-FLAG turns it off
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        elif f.name == "mask_split":
            parser.add_argument(flag, type=parse_mask_split, metavar="MASK,RANDOM,KEEP", help=help_text)
        elif f.name in ("train_file", "validation_file"):
            parser.add_argument(flag, nargs="+", action="extend", help=help_text)
        else:
            kind = {"int | None": int, "float | None": float, "int": int, "float": float}.get(f.type, str)
            parser.add_argument(flag, type=kind, default=f.default, help=help_text)
    return parser


def description() -> str:
    """The command's one-line description: the first line of the engine's docstring."""
    return engine.__doc__.split("\n")[0]


def main(argv=None) -> int:
    return run_namespace(vars(build_parser().parse_args(argv)))


def run_namespace(namespace: dict) -> int:
    from huggingface_hub.errors import StrictDataclassError

    from .dispatch import pretrain  # torch: imported when a run starts, not for the parser or --help

    namespace = {k: v for k, v in namespace.items() if k not in ("command", "func")}
    try:
        namespace["overrides"] = parse_set(namespace["overrides"])
        pretrain(PretrainArguments(**namespace))
    except (PretrainError, ValueError, FileNotFoundError, StrictDataclassError) as error:
        # One line, also for huggingface_hub's multi-line type errors ("Field 'x' expected int, got str").
        print(f"hf-lineage pretrain: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    finally:
        end_processes()
    return 0


def end_processes() -> None:
    """Tear down the process group a multi-process run set up (what ``accelerator.end_training()`` would do)."""
    from accelerate import PartialState

    if PartialState._shared_state:
        PartialState().destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
