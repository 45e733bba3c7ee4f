"""What transformers' own BERT and GPT-2 give their users, on lineage BERT and GPT (issue 43): the attention
interface (eager / sdpa / flex), ``torch.export`` with dynamic batch and length, ``torch.compile(fullgraph=True)``,
ONNX export, PEFT's LoRA on query/value, the old fused-projection layout still loading, the static cache, gradient
checkpointing and disk offload through accelerate's hooks. Tiny configs; exported programs are shared by a
module-scoped fixture (export is the slow part)."""

import importlib.util
import os
import re

import pytest
import torch
import transformers
from packaging import version
from safetensors.torch import load_file, save_file
from transformers import AutoModel, AutoModelForCausalLM, AutoModelForPreTraining

import hf_lineage
from hf_lineage import LineageBertConfig, LineageGPTConfig

V = 61
FAMILIES = ["bert", "gpt"]


def config(family, **overrides):
    if family == "bert":
        return LineageBertConfig.from_named("tiny", vocab_size=V, max_position_embeddings=32, hidden_dropout_prob=0.0,
                                            attention_probs_dropout_prob=0.0, **overrides)
    return LineageGPTConfig.from_named("tiny", vocab_size=V, max_position_embeddings=32, hidden_dropout_prob=0.0,
                                       attention_probs_dropout_prob=0.0, embedding_dropout_prob=0.0, **overrides)


def lm_model(family, **overrides):
    """The family's LM-head model: BERT's masked LM, GPT's causal LM."""
    torch.manual_seed(0)
    cls = hf_lineage.LineageBertForMaskedLM if family == "bert" else hf_lineage.LineageGPTForCausalLM
    return cls(config(family, **overrides)).eval()


def padded_batch(batch, length, seed=0, left=False):
    """Random ids with rows of different lengths (the first row full), padding on the right (or the left)."""
    g = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(5, V, (batch, length), generator=g)
    lengths = torch.randint(2, length + 1, (batch,), generator=g)
    lengths[0] = length
    mask = (torch.arange(length)[None] < lengths[:, None]).long()
    if left:
        mask = mask.flip(-1)
    return input_ids.masked_fill(mask == 0, 0), mask


def real(x, mask):  # zeros at the padding, whose outputs no caller reads
    return x * mask[..., None].to(x.dtype)


class LogitsAndStates(torch.nn.Module):
    """The LM-head model as a function of tensors, for export: (logits, the base model's last hidden state)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True,
                         use_cache=False, return_dict=True)
        return out.logits, out.hidden_states[-1]


@pytest.fixture
def flex_attention_uncompiled(monkeypatch):
    """transformers compiles flex attention with inductor at first use (tens of seconds of C++ on a small CPU);
    torch's uncompiled flex attention takes the same BlockMask and computes the same numbers."""
    from torch.nn.attention.flex_attention import flex_attention
    from transformers.integrations import flex_attention as integration

    monkeypatch.setattr(integration.WrappedFlexAttention, "__call__", lambda self: flex_attention)


@pytest.mark.parametrize("left", [False, True], ids=["right-padded", "left-padded"])
@pytest.mark.parametrize("family", FAMILIES)
def test_eager_sdpa_and_flex_attention_give_the_same_outputs(family, left, flex_attention_uncompiled):
    model = lm_model(family)
    input_ids, mask = padded_batch(4, 10, left=left)
    outputs = {}
    for implementation in ("sdpa", "eager", "flex_attention"):
        model.set_attn_implementation(implementation)
        assert model.config._attn_implementation == implementation
        with torch.no_grad():
            outputs[implementation] = real(model(input_ids, attention_mask=mask).logits, mask)
    assert torch.isfinite(outputs["sdpa"]).all()
    torch.testing.assert_close(outputs["eager"], outputs["sdpa"], atol=1e-5, rtol=0)
    torch.testing.assert_close(outputs["flex_attention"], outputs["sdpa"], atol=1e-5, rtol=0)
    for flag in ("_supports_sdpa", "_supports_flex_attn", "_supports_flash_attn"):
        assert getattr(type(model), flag)


@pytest.fixture(scope="module")
def exported():
    """family -> (the wrapped eager model, its ExportedProgram with dynamic batch and length)."""
    programs = {}
    for family in FAMILIES:
        wrapped = LogitsAndStates(lm_model(family))
        input_ids, mask = padded_batch(3, 8)
        batch, length = torch.export.Dim("batch", min=1, max=16), torch.export.Dim("length", min=2, max=32)
        dims = {"input_ids": {0: batch, 1: length}, "attention_mask": {0: batch, 1: length}}
        with torch.no_grad():
            programs[family] = wrapped, torch.export.export(wrapped, (input_ids, mask), dynamic_shapes=dims)
    return programs


@pytest.mark.parametrize("family", FAMILIES)
def test_torch_export_with_dynamic_batch_and_length_gives_the_eager_outputs(exported, family):
    wrapped, program = exported[family]
    for batch, length, seed in ((3, 8, 0), (5, 13, 1), (1, 4, 2)):  # other shapes than the one exported with
        input_ids, mask = padded_batch(batch, length, seed)
        with torch.no_grad():
            expected = wrapped(input_ids, mask)
            got = program.module()(input_ids, mask)
        for e, g in zip(expected, got):
            torch.testing.assert_close(real(g, mask), real(e, mask), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_onnx_export_gives_the_eager_outputs(exported, family):
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxscript")
    wrapped, program = exported[family]
    onnx_program = torch.onnx.export(program, dynamo=True, verbose=False)
    onnx.checker.check_model(onnx_program.model_proto)
    input_ids, mask = padded_batch(4, 11, seed=3)
    with torch.no_grad():
        expected = wrapped(input_ids, mask)
    feeds = {"input_ids": input_ids.numpy(), "attention_mask": mask.numpy()}
    if importlib.util.find_spec("onnxruntime") is not None:
        got = [torch.from_numpy(x) for x in onnx_program(input_ids, mask)]
    else:  # onnx's own (slow, pure Python) reference runtime: still the exported graph's numbers
        from onnx.reference import ReferenceEvaluator

        got = [torch.from_numpy(x) for x in ReferenceEvaluator(onnx_program.model_proto).run(None, feeds)]
    for e, g in zip(expected, got):
        torch.testing.assert_close(real(g, mask), real(e, mask), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("family", FAMILIES)
def test_torch_compile_fullgraph_on_a_padded_batch_gives_the_eager_outputs(family):
    """``fullgraph=True`` raises at the first graph break; default ``torch.compile`` therefore has none either.
    The aot_eager backend traces forward and backward as inductor would, without its C++ compile time."""
    torch._dynamo.reset()
    wrapped = LogitsAndStates(lm_model(family))
    compiled = torch.compile(wrapped, fullgraph=True, backend="aot_eager")
    input_ids, mask = padded_batch(4, 9, seed=4)
    with torch.no_grad():
        expected, got = wrapped(input_ids, mask), compiled(input_ids, mask)
    for e, g in zip(expected, got):
        torch.testing.assert_close(real(g, mask), real(e, mask), atol=1e-5, rtol=1e-5)


# --------------------------------------------------------------------------- split query/key/value, PEFT


def fused_state_dict(model, family):
    """The model's weights in the layout of folders saved before query/key/value were split."""
    fused, pieces = {}, (".query.", ".key.", ".value.")
    old = ".qkv." if family == "bert" else ".c_attn."
    for name, tensor in model.state_dict().items():
        if ".attention.query." in name or ".attn.query." in name:
            parts = [model.state_dict()[name.replace(".query.", piece)] for piece in pieces]
            fused[name.replace(".query.", old)] = torch.cat(parts).clone()
        elif not any(p in name for p in pieces[1:]) or "crossattention" in name:
            fused[name] = tensor.clone()
    return fused


@pytest.mark.parametrize("family", FAMILIES)
def test_a_folder_in_the_old_fused_layout_loads_to_the_same_outputs(family, tmp_path):
    model = lm_model(family)
    model.config.tie_word_embeddings = True
    model.save_pretrained(tmp_path)
    saved = load_file(os.path.join(tmp_path, "model.safetensors"))
    old = ".attention.qkv.weight" if family == "bert" else ".attn.c_attn.weight"
    assert any(name.endswith(old) for name in saved)  # saving writes the fused layout older releases read
    # An old folder written by hand: fused weights, no split ones.
    state = {k: v for k, v in fused_state_dict(model, family).items() if "decoder" not in k and "lm_head" not in k}
    save_file(state, os.path.join(tmp_path, "model.safetensors"), metadata={"format": "pt"})
    loaded = type(model).from_pretrained(tmp_path).eval()
    input_ids, mask = padded_batch(3, 8)
    with torch.no_grad():
        torch.testing.assert_close(loaded(input_ids, attention_mask=mask).logits,
                                   model(input_ids, attention_mask=mask).logits, atol=0, rtol=0)


def test_bert_cross_attention_key_value_keeps_the_first_releases_layout(tmp_path):
    """A BERT decoder's cross-attention key/value is one module, ``key_value`` in memory and on disk, as the first
    release saved it: a folder written then (no conversion rule needed) and one saved now load to the same weights,
    and the only conversion rule (self-attention's ``qkv``) applies to every configuration."""
    from transformers.conversion_mapping import get_model_conversion_mapping

    torch.manual_seed(0)
    model = hf_lineage.LineageBertForCausalLM(config("bert", is_decoder=True, add_cross_attention=True))
    model.save_pretrained(tmp_path)
    saved = load_file(os.path.join(tmp_path, "model.safetensors"))
    assert "bert.encoder.layer.0.crossattention.key_value.weight" in saved
    assert "bert.encoder.layer.0.crossattention.key.weight" not in saved
    assert "bert.encoder.layer.0.attention.qkv.weight" in saved
    loaded = hf_lineage.LineageBertForCausalLM.from_pretrained(tmp_path).state_dict()
    assert loaded.keys() == model.state_dict().keys()
    assert all(torch.equal(loaded[name], tensor) for name, tensor in model.state_dict().items())
    for cross in (True, False):
        plain = hf_lineage.LineageBertModel(config("bert", is_decoder=cross, add_cross_attention=cross))
        keys = set(plain.state_dict())
        for rule in get_model_conversion_mapping(plain, add_legacy=False):
            for target in rule.target_patterns:
                assert any(re.search(target, key) for key in keys), (cross, target)


@pytest.mark.parametrize("family", FAMILIES)
def test_load_state_dict_takes_the_saved_layout_as_trainer_restores_a_checkpoint(family, tmp_path):
    """Trainer restores a checkpoint (``load_best_model_at_end``, ``resume_from_checkpoint``) with a plain
    ``model.load_state_dict(load_file(...))`` of what ``save_pretrained`` wrote, the fused layout: the attention
    projections must come back too, not only the weights whose names did not change."""
    torch.manual_seed(0)
    model = lm_model(family)
    model.save_pretrained(tmp_path)
    saved = load_file(os.path.join(tmp_path, "model.safetensors"))
    assert not any(".query." in name for name in saved)  # the fused layout on disk
    torch.manual_seed(1)
    fresh = type(model)(model.config)
    result = fresh.load_state_dict(saved, strict=False)
    assert result.unexpected_keys == []
    assert set(result.missing_keys) <= set(fresh.all_tied_weights_keys)  # tied copies only
    fresh.tie_weights()
    restored, original = fresh.state_dict(), model.state_dict()
    assert restored.keys() == original.keys()
    assert all(torch.equal(restored[name], tensor) for name, tensor in original.items())


@pytest.mark.parametrize("family", FAMILIES)
def test_trainer_load_best_model_at_end_restores_the_best_checkpoints_attention(family, tmp_path):
    """Trainer with ``load_best_model_at_end``: the first evaluation scores best, so the model Trainer ends with must
    be that checkpoint's in every weight (the attention projections were left at the last step's before)."""
    from datasets import Dataset
    from transformers import Trainer, TrainingArguments

    torch.manual_seed(0)
    model = getattr(hf_lineage, f"Lineage{'Bert' if family == 'bert' else 'GPT'}ForSequenceClassification")(
        config(family, num_labels=2, pad_token_id=0))
    ids = torch.randint(1, model.config.vocab_size, (16, 6))
    data = Dataset.from_dict({"input_ids": ids.tolist(), "labels": [i % 2 for i in range(16)]})
    scores = iter([1.0, 0.0, 0.0])
    arguments = TrainingArguments(
        output_dir=str(tmp_path), max_steps=6, per_device_train_batch_size=4, learning_rate=1e-2,
        eval_strategy="steps", eval_steps=2, save_steps=2, load_best_model_at_end=True, metric_for_best_model="score",
        report_to="none", use_cpu=True, disable_tqdm=True, seed=0)
    trainer = Trainer(model=model, args=arguments, train_dataset=data, eval_dataset=data,
                      compute_metrics=lambda prediction: {"score": next(scores)})
    trainer.train()
    assert trainer.state.best_model_checkpoint.endswith("checkpoint-2")
    best = type(model).from_pretrained(trainer.state.best_model_checkpoint).state_dict()
    last = type(model).from_pretrained(tmp_path / "checkpoint-6").state_dict()
    ended = trainer.model.state_dict()
    query = next(name for name in ended if name.endswith(".query.weight"))
    assert not torch.equal(best[query], last[query])  # the attention did train between the two
    assert [name for name in best if not torch.equal(ended[name], best[name])] == []


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("targets", [["query", "value"], None], ids=["query-value", "peft-default"])
def test_lora_on_query_and_value_trains_only_the_adapter_and_merges(family, targets):
    peft = pytest.importorskip("peft")
    model = lm_model(family).train()
    lora = peft.LoraConfig(r=4, lora_alpha=8, target_modules=targets, lora_dropout=0.0, init_lora_weights=False)
    peft_model = peft.get_peft_model(model, lora)
    adapted = {name.rsplit(".", 1)[0] for name, _ in peft_model.named_modules() if name.endswith("lora_A")}
    assert adapted and {name.rsplit(".", 1)[-1] for name in adapted} == {"query", "value"}
    assert len(adapted) == 2 * model.config.num_hidden_layers
    input_ids, mask = padded_batch(4, 10, seed=5)
    labels = input_ids.masked_fill(mask == 0, -100)
    optimizer = torch.optim.AdamW([p for p in peft_model.parameters() if p.requires_grad], lr=1e-2)
    losses = []
    for _ in range(5):
        loss = peft_model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        with_grad = {name for name, p in peft_model.named_parameters() if p.grad is not None}
        assert with_grad and all("lora_" in name for name in with_grad)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    peft_model.eval()
    with torch.no_grad():
        adapter = peft_model(input_ids=input_ids, attention_mask=mask).logits
        merged = peft_model.merge_and_unload()
        assert not any("lora_" in name for name, _ in merged.named_parameters())
        torch.testing.assert_close(merged(input_ids=input_ids, attention_mask=mask).logits, adapter,
                                   atol=1e-5, rtol=1e-5)


def test_bert_lora_adapter_runs_in_place_of_the_fused_projection():
    """BERT fuses query/key/value into one matmul only for plain Linears: with a LoRA adapter on query and value
    every adapter runs (its delta is in the outputs), and the merged model, plain again, takes the fused matmul
    with the adapter's outputs."""
    peft = pytest.importorskip("peft")
    model = lm_model("bert")
    input_ids, mask = padded_batch(4, 10, seed=5)
    with torch.no_grad():
        base = model(input_ids=input_ids, attention_mask=mask).logits
    lora = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["query", "value"], lora_dropout=0.0,
                           init_lora_weights=False)
    peft_model = peft.get_peft_model(model, lora).eval()
    adapters = [m for name, m in peft_model.named_modules() if name.endswith("lora_A.default")]
    calls = []
    hooks = [m.register_forward_hook(lambda module, args, output: calls.append(module)) for m in adapters]
    with torch.no_grad():
        adapted = peft_model(input_ids=input_ids, attention_mask=mask).logits
    for hook in hooks:
        hook.remove()
    assert len(adapters) == 2 * model.config.num_hidden_layers and len(calls) == len(adapters)
    assert not torch.allclose(adapted, base, atol=1e-3)
    with torch.no_grad():
        merged = peft_model.merge_and_unload()
        assert all(type(layer.attention.query) is torch.nn.Linear for layer in merged.bert.encoder.layer)
        torch.testing.assert_close(merged(input_ids=input_ids, attention_mask=mask).logits, adapted,
                                   atol=1e-5, rtol=1e-5)


def test_bert_offloaded_layer_projects_through_its_hooked_modules(tmp_path):
    """An encoder layer offloaded to disk: accelerate hooks each Linear (``_hf_hook``, weights on the meta device
    until the call), so the fused projection is bypassed and the outputs are a plain load's."""
    pytest.importorskip("accelerate")
    if version.parse(transformers.__version__) < version.parse("5.24"):
        pytest.skip("transformers 5.16 fills disk-offloaded weights with other weights' values")
    torch.manual_seed(0)
    hf_lineage.LineageBertForPreTraining(config("bert")).save_pretrained(tmp_path / "model")
    plain = AutoModelForPreTraining.from_pretrained(tmp_path / "model").eval()
    device_map = {"bert.embeddings": "cpu", "bert.encoder.layer.0": "disk", "bert.encoder.layer.1": "cpu",
                  "bert.pooler": "cpu", "cls": "cpu"}
    offloaded = AutoModelForPreTraining.from_pretrained(tmp_path / "model", device_map=device_map,
                                                        offload_folder=tmp_path / "offload").eval()
    assert offloaded.bert.encoder.layer[0].attention.query.weight.is_meta
    input_ids, mask = padded_batch(3, 8, seed=8)
    with torch.no_grad():
        expected, got = plain(input_ids, attention_mask=mask), offloaded(input_ids, attention_mask=mask)
    # (1e-6: the plain load projects with one fused matmul, the hooked layers with three)
    torch.testing.assert_close(got.prediction_logits, expected.prediction_logits, atol=1e-6, rtol=1e-6)


# --------------------------------------------------------------------------- static cache, checkpointing, offload


@pytest.mark.parametrize("family", FAMILIES)
def test_static_cache_generates_what_the_dynamic_cache_generates(family):
    torch.manual_seed(0)
    if family == "bert":
        model = hf_lineage.LineageBertForCausalLM(config(family, is_decoder=True, initializer_range=0.3))
    else:
        model = hf_lineage.LineageGPTForCausalLM(config(family, initializer_range=0.3))
    model.eval()
    input_ids, mask = padded_batch(3, 6, seed=6, left=True)
    kwargs = dict(attention_mask=mask, max_new_tokens=8, do_sample=False, pad_token_id=0,
                  return_dict_in_generate=True, output_scores=True)
    dynamic = model.generate(input_ids, **kwargs)
    static = model.generate(input_ids, cache_implementation="static", **kwargs)
    assert type(static.get("cache", static.get("past_key_values"))).__name__ == "StaticCache"
    assert len(set(dynamic.sequences[:, 6:].flatten().tolist())) > 2  # not one token repeated
    assert torch.equal(static.sequences, dynamic.sequences)
    torch.testing.assert_close(torch.stack(static.scores), torch.stack(dynamic.scores), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_gradient_checkpointing_gives_the_same_gradients(family):
    input_ids, mask = padded_batch(3, 8, seed=7)
    labels = input_ids.masked_fill(mask == 0, -100)
    grads = []
    for checkpointing in (False, True):
        model = lm_model(family).train()
        if checkpointing:
            model.gradient_checkpointing_enable()
            assert model.is_gradient_checkpointing
        model(input_ids=input_ids, attention_mask=mask, labels=labels).loss.backward()
        grads.append({name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys() and len(grads[0]) > 10
    for name in grads[0]:
        torch.testing.assert_close(grads[1][name], grads[0][name], atol=1e-6, rtol=1e-5, msg=name)


@pytest.mark.parametrize("family", FAMILIES)
def test_disk_offload_gives_the_outputs_of_a_plain_load(family, tmp_path):
    """Embeddings and heads offloaded to disk, the layers on the CPU: accelerate's hooks bring a module's weights in
    when the module is called, so no forward may read a weight behind a module's back (BERT read
    ``token_type_embeddings.weight[0]`` and called ``F.linear`` on the MLM decoder's weight: "Tensor on device
    meta"). (A map with every module on disk is refused by accelerate < 1.10, so the layers stay on the CPU.)"""
    pytest.importorskip("accelerate")
    if version.parse(transformers.__version__) < version.parse("5.24"):
        pytest.skip("transformers 5.16 fills disk-offloaded weights with other weights' values (GPT's "
                    "positions_embed, BERT's LayerNorm), with main's modeling code as with this one")
    torch.manual_seed(0)
    if family == "bert":
        model, auto = hf_lineage.LineageBertForPreTraining(config(family)), AutoModelForPreTraining
        device_map = {"bert.embeddings": "disk", "bert.encoder": "cpu", "bert.pooler": "disk", "cls": "disk"}
    else:
        model, auto = hf_lineage.LineageGPTForCausalLM(config(family)), AutoModelForCausalLM
        device_map = {"transformer.tokens_embed": "disk", "transformer.positions_embed": "disk",
                      "transformer.drop": "cpu", "transformer.h": "cpu", "lm_head": "disk"}
    model.save_pretrained(tmp_path / "model")
    plain = auto.from_pretrained(tmp_path / "model").eval()
    offloaded = auto.from_pretrained(tmp_path / "model", device_map=device_map,
                                     offload_folder=tmp_path / "offload").eval()
    assert offloaded.hf_device_map == device_map
    input_ids, mask = padded_batch(3, 8, seed=8)
    with torch.no_grad():
        expected, got = plain(input_ids, attention_mask=mask), offloaded(input_ids, attention_mask=mask)
    name = "prediction_logits" if family == "bert" else "logits"
    # (not bit-equal for BERT: the plain load projects q/k/v with one fused matmul, the hooked modules with three)
    torch.testing.assert_close(got[name], expected[name], atol=1e-6, rtol=1e-6)


def test_the_base_model_loads_from_the_shipped_fused_checkpoints():
    """The shipped checkpoints hold the fused layout; loading splits it without unexpected or missing weights."""
    for family, prefix in (("bert", "encoder.layer.0.attention."), ("gpt", "h.0.attn.")):
        model, info = AutoModel.from_pretrained(hf_lineage.checkpoints.path(family), output_loading_info=True)
        # (unexpected: only the pre-training heads, which the bare model has not)
        assert not info["missing_keys"] and not [k for k in info["unexpected_keys"] if "att" in k], info
        names = {name for name, _ in model.named_parameters()}
        assert {prefix + p + ".weight" for p in ("query", "key", "value")} <= names
