"""The GPU paths: run only with HF_LINEAGE_TEST_CUDA=1 on a CUDA machine (``benchmarks/gpu_check.sh``; see
conftest.py), skipped with that reason everywhere else. Each compares the GPU with the CPU on the same weights and
inputs, or checks a property only a GPU has (kernel launches, host synchronisation)."""

from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.cuda

SAMPLES = Path(__file__).resolve().parents[1] / "hf_lineage" / "samples" / "lineage"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_vocabulary_loss_on_a_gpu_equals_the_cpus_in_a_few_kernels(dtype):
    from torch.profiler import ProfilerActivity, profile

    from hf_lineage.models.loss_lineage_utils import vocabulary_cross_entropy

    logits = (torch.randn(4096, 8000) * 4).to(dtype)
    labels = torch.randint(0, 8000, (4096,))
    labels[::7] = -100
    results = {}
    for device in ("cpu", "cuda"):
        x = logits.to(device).requires_grad_()
        loss = vocabulary_cross_entropy(x, labels.to(device))
        loss.backward()
        results[device] = (loss.detach().cpu(), x.grad.float().cpu())
    torch.testing.assert_close(results["cuda"][0], results["cpu"][0], atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(results["cuda"][1], results["cpu"][1], atol=1e-6, rtol=2e-2)
    x = logits.cuda().requires_grad_()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        vocabulary_cross_entropy(x, labels.cuda()).backward()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    # The CPU's blocked path would launch about 6 kernels per 32 rows here: over 700.
    assert len(kernels) < 60, len(kernels)


def tiny_gpt():
    from hf_lineage.models.configuration_lineage_gpt import LineageGPTConfig
    from hf_lineage.models.modeling_lineage_gpt import LineageGPTForCausalLM

    torch.manual_seed(0)
    config = LineageGPTConfig.from_named("tiny", vocab_size=500, hidden_size=64, num_hidden_layers=2,
                                         num_attention_heads=4, intermediate_size=128, attention_probs_dropout_prob=0.0,
                                         hidden_dropout_prob=0.0, embedding_dropout_prob=0.0)
    return LineageGPTForCausalLM(config)


def test_a_gpt_training_step_on_a_gpu_matches_the_cpu_and_never_waits_on_the_host():
    model = tiny_gpt()
    ids = torch.randint(0, 500, (4, 32))
    losses, grads = {}, {}
    for device in ("cpu", "cuda"):
        model.to(device).zero_grad()
        if device == "cuda":
            torch.cuda.set_sync_debug_mode("error")  # any device-to-host read in the step raises
        try:
            loss = model(input_ids=ids.to(device), labels=ids.to(device)).loss
            loss.backward()
        finally:
            torch.cuda.set_sync_debug_mode("default")
        losses[device] = loss.item()
        grads[device] = model.lm_head.weight.grad.cpu().clone()
    assert losses["cuda"] == pytest.approx(losses["cpu"], abs=1e-4)
    torch.testing.assert_close(grads["cuda"], grads["cpu"], atol=1e-5, rtol=1e-3)


def test_bert_on_a_padded_batch_computes_on_a_gpu_what_it_computes_on_the_cpu():
    """Skipping padding attends one sequence at a time on the CPU, and pads back for one masked SDPA call on a GPU:
    the two paths must give the same loss and gradients."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_bert_pretraining import make_batch

    from hf_lineage.models.configuration_lineage_bert import LineageBertConfig
    from hf_lineage.models.modeling_lineage_bert import LineageBertForPreTraining

    torch.manual_seed(0)
    model = LineageBertForPreTraining(LineageBertConfig.from_named(
        "tiny", vocab_size=1200, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
    batch = make_batch(6, 48, 1200, min_length=10)  # lengths 10-48, padded to the longest
    assert not bool(batch["attention_mask"].all())
    losses, grads = {}, {}
    for device in ("cpu", "cuda"):
        model.to(device).zero_grad()
        loss = model(**{k: v.to(device) for k, v in batch.items()}).loss
        loss.backward()
        losses[device] = loss.item()
        grads[device] = model.bert.encoder.layer[0].attention.query.weight.grad.cpu().clone()
    assert losses["cuda"] == pytest.approx(losses["cpu"], abs=1e-4)
    torch.testing.assert_close(grads["cuda"], grads["cpu"], atol=1e-5, rtol=1e-3)


def test_an_out_of_vocabulary_id_on_a_gpu_is_caught_by_a_device_assertion_naming_it():
    # A device-side assertion poisons the CUDA context of its process: checked in a child process.
    import subprocess
    import sys

    code = ("import torch, hf_lineage.models.modeling_lineage_utils as u\n"
            "u.check_ids_in_range(torch.tensor([3, 900], device='cuda'), 500, 'input_ids', 'vocab_size')\n"
            "torch.cuda.synchronize()\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "input_ids contains ids outside [0, 500)" in run.stderr


def test_the_engine_trains_gpt_on_a_gpu_in_bf16_from_pinned_batches_without_a_host_read_per_step(tmp_path,
                                                                                                   monkeypatch):
    import json

    from hf_lineage.engine import loop
    from hf_lineage.pretraining.cli import main

    step, checked = loop.optimizer_step, []

    def step_without_host_reads(run, *args):
        torch.cuda.set_sync_debug_mode("error")
        try:
            out_of_time = step(run, *args)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        checked.append(run.loaders.train.pin_memory)
        return out_of_time

    monkeypatch.setattr(loop, "optimizer_step", step_without_host_reads)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text((SAMPLES / "corpus.train.txt").read_text(encoding="utf-8")[:40_000], encoding="utf-8")
    out = tmp_path / "gpt"
    assert main(["gpt", "--config", "tiny", "--train-file", str(corpus), "--output-dir", str(out), "--report-to",
                 "none",
                 "--max-steps", "8", "--max-train-seconds", "600", "--mixed-precision", "bf16",
                 "--vocab-size", "800", "--log-every", "4"]) == 0
    results = json.loads((out / "train_results.json").read_text())
    assert checked == [True] * 8 and results["train_tokens_per_second"] > 0
    assert (out / "model.safetensors").is_file()
