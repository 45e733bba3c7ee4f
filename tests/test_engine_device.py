"""The engine's device-facing options, checked on the CPU (their GPU side is in ``test_cuda.py``): batches made by
worker processes are the batches the main process makes, pinned memory and workers are the GPU's defaults only,
``--torch-compile`` hands the model to torch.compile and saves the plain one, and the training loop reads nothing
back from the device at each step (a GPU would wait on every such read)."""

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from hf_lineage.engine import loaders as engine_data
from hf_lineage.pretraining.cli import main
from hf_lineage.pretraining.dispatch import PretrainArguments

SAMPLES = Path(__file__).resolve().parents[1] / "hf_lineage" / "samples" / "lineage"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    train = root / "train.txt"
    train.write_text((SAMPLES / "corpus.train.txt").read_text(encoding="utf-8")[:30_000], encoding="utf-8")
    from hf_lineage.tokenization import train_wordpiece_tokenizer

    train_wordpiece_tokenizer(files=[str(train)], vocab_size=500).save_pretrained(root / "tokenizer")
    return {"train": str(train), "tokenizer": str(root / "tokenizer")}


def pretrain(corpus, out, *extra, family="bert"):
    assert main([family, "--config", "tiny", "--train-file", corpus["train"], "--tokenizer", corpus["tokenizer"],
                 "--output-dir",
                 str(out), "--report-to", "none", "--per-device-batch-size", "4", *extra]) == 0
    return load_file(str(out / "model.safetensors"))


def test_batches_made_by_worker_processes_train_the_same_model_as_the_main_process(corpus, tmp_path):
    # BERT's masking and sentence pairing happen in the collator: in two worker processes they must still depend on
    # the example's seed only.
    steps = ["--max-steps", "3", "--set", "hidden_dropout_prob=0", "--set", "attention_probs_dropout_prob=0"]
    main_process = pretrain(corpus, tmp_path / "main", *steps, "--dataloader-num-workers", "0")
    workers = pretrain(corpus, tmp_path / "workers", *steps, "--dataloader-num-workers", "2")
    assert all(torch.equal(main_process[k], workers[k]) for k in main_process)


@pytest.mark.parametrize("cuda", [False, True])
def test_pinned_memory_and_worker_processes_are_what_a_gpu_gets_by_default(cuda, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)

    class Objective:
        def collator(self, tokenizer):
            return None

    args = PretrainArguments(family="bert", output_dir="unused", per_device_batch_size=2, per_device_eval_batch_size=2)
    loaders = engine_data.build_loaders(args, Objective(), None, [{}] * 4, [{}] * 4)
    for loader in (loaders.train, loaders.eval):
        assert loader.pin_memory is cuda
        assert loader.num_workers == (engine_data.DATALOADER_WORKERS_ON_GPU if cuda else 0)
    args.dataloader_num_workers = 1  # what is asked for wins
    assert engine_data.build_loaders(args, Objective(), None, [{}] * 4, None).train.num_workers == 1


def test_torch_compile_compiles_the_trained_model_and_saves_the_plain_one(tmp_path, monkeypatch):
    """The engine asks torch.compile (through Accelerate's dynamo plugin) for inductor; inductor's code generation
    takes a minute on a CPU, so here the compiled module traces with the "eager" backend instead: the model trains
    through the compiled wrapper and the saved folder is the plain model, loadable with the Auto classes."""
    from accelerate.state import AcceleratorState
    from transformers import AutoModelForCausalLM

    asked, compile_for_real = [], torch.compile

    def compile_eagerly(model, **kwargs):
        asked.append((type(model).__name__, kwargs.get("backend")))
        return compile_for_real(model, **{**kwargs, "backend": "eager"})

    monkeypatch.setattr(torch, "compile", compile_eagerly)
    AcceleratorState._reset_state(True)  # the plugin is read when the (singleton) state is made
    try:
        corpus_file = tmp_path / "c.txt"
        corpus_file.write_text((SAMPLES / "corpus.train.txt").read_text(encoding="utf-8")[:8_000], encoding="utf-8")
        assert main(["gpt", "--config", "tiny", "--train-file", str(corpus_file), "--output-dir",
                     str(tmp_path / "out"), "--report-to",
                     "none", "--max-steps", "2", "--vocab-size", "300", "--torch-compile"]) == 0
    finally:
        AcceleratorState._reset_state(True)
    assert asked == [("LineageGPTForCausalLM", "inductor")]
    weights = load_file(str(tmp_path / "out" / "model.safetensors"))
    assert not any(name.startswith("_orig_mod") for name in weights)  # the wrapper's prefix, had it been saved
    assert type(AutoModelForCausalLM.from_pretrained(tmp_path / "out")).__name__ == "LineageGPTForCausalLM"


@pytest.mark.parametrize("family", ["gpt", "bert"])
def test_the_training_loop_reads_no_device_value_per_step(family, corpus, tmp_path, monkeypatch):
    """``.item()`` (and ``.tolist()``) makes the host wait for the device. Under a time budget the loop once read
    the all-process elapsed time back at every step; it now reads values back only when it logs (here: at the end).
    What the models themselves read to decide shapes (BERT's padding check) is theirs, and not counted here."""
    reads = []
    item, tolist = torch.Tensor.item, torch.Tensor.tolist

    def counted(original):
        def read(self, *args, **kwargs):
            reads.append(original.__name__)
            return original(self, *args, **kwargs)
        return read

    monkeypatch.setattr(torch.Tensor, "item", counted(item))
    monkeypatch.setattr(torch.Tensor, "tolist", counted(tolist))
    from hf_lineage.engine import loop

    steps_taken = []
    step = loop.optimizer_step

    def counting_step(*args):
        before = len(reads)
        out_of_time = step(*args)
        steps_taken.append(len(reads) - before)
        return out_of_time

    monkeypatch.setattr(loop, "optimizer_step", counting_step)
    pretrain(corpus, tmp_path / "out", "--max-steps", "6", "--max-train-seconds", "600", "--log-every", "100",
             family=family)
    # No .item() or .tolist() in any step: the old loop read the elapsed time back at every step ([1] * 6).
    assert steps_taken == [0] * 6, steps_taken
