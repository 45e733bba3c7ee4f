"""Lineage BERT: registration, config validation, fidelity to transformers' BERT, heads, encoder-decoder, Hub."""

import json

import pytest
import torch
import transformers
from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM, EncoderDecoderConfig, EncoderDecoderModel

import hf_lineage
from hf_lineage import LineageBertConfig, LineageBertForMaskedLM, LineageBertForPreTraining, LineageBertModel
from hf_lineage.convert import from_transformers, to_transformers
from hf_lineage.models import modeling_lineage_bert

from conftest import enable_activation_checkpointing, run_without_hf_lineage

HF_SIZES = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                max_position_embeddings=64)


def tiny(**overrides):
    return LineageBertConfig.from_named("tiny", **{"vocab_size": 99, "max_position_embeddings": 64, **overrides})


def batch(B=3, T=11, vocab=99, pairs=True):
    """Random ids with padding (two rows shorter) and segment B starting mid-sequence."""
    input_ids = torch.randint(5, vocab, (B, T))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 7:] = 0
    attention_mask[2, 3:] = 0
    input_ids[attention_mask == 0] = 0
    token_type_ids = torch.zeros_like(input_ids)
    if pairs:
        token_type_ids[:, 5:] = 1
        token_type_ids[attention_mask == 0] = 0
    return dict(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)


# --------------------------------------------------------------------------- registration and config


def test_every_auto_class_builds_its_lineage_class():
    config = AutoConfig.for_model("lineage-bert", **LineageBertConfig.named_sizes["tiny"], vocab_size=50)
    assert isinstance(config, LineageBertConfig)
    for auto_name, class_name in modeling_lineage_bert.AUTO_CLASSES.items():
        cfg = LineageBertConfig(**{**config.to_dict(), "is_decoder": auto_name == "AutoModelForCausalLM"})
        model = getattr(transformers, auto_name).from_config(cfg)
        assert type(model).__name__ == class_name


def test_named_sizes_match_the_paper():
    base, large = LineageBertConfig.from_named("base"), LineageBertConfig.from_named("large")
    assert (base.num_hidden_layers, base.hidden_size, base.num_attention_heads, base.intermediate_size) == (
        12, 768, 12, 3072)
    assert (large.num_hidden_layers, large.hidden_size, large.num_attention_heads, large.intermediate_size) == (
        24, 1024, 16, 4096)
    assert LineageBertConfig.from_named("tiny", hidden_size=32).hidden_size == 32


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(hidden_size=100, num_attention_heads=3), "not a multiple of num_attention_heads"),
        (dict(vocab_size=0), "vocab_size must be a positive"),
        (dict(hidden_dropout_prob=1.5), "hidden_dropout_prob"),
        (dict(add_cross_attention=True), "needs is_decoder=True"),
    ],
)
def test_invalid_config_raises_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LineageBertConfig(**kwargs)
    with pytest.raises(ValueError, match="Unknown lineage-bert size"):
        LineageBertConfig.from_named("huge")


# --------------------------------------------------------------------------- fidelity


def _hf_model(class_name, **config_overrides):
    config = transformers.BertConfig(**HF_SIZES, **config_overrides)
    return getattr(transformers, class_name)(config).eval()


def _assert_outputs_match(a, b, keys, atol=1e-5, real=None):
    """Outputs equal; with ``real`` (the attention mask), per-position outputs are compared at real tokens only
    (an unpadded encoder returns zeros at the padding, where transformers' BERT leaves unused values)."""

    def close(x, y, key):
        if real is not None and x.dim() >= 2 and x.shape[:2] == real.shape:
            x, y = x[real.bool()], y[real.bool()]
        torch.testing.assert_close(x, y, atol=atol, rtol=0, msg=f"{key} differs")

    for key in keys:
        x, y = getattr(a, key), getattr(b, key)
        for xi, yi in zip(*((x, y) if isinstance(x, tuple) else ((x,), (y,))), strict=True):
            close(xi, yi, key)


HEAD_CASES = [
    ("BertModel", {}, ["last_hidden_state", "pooler_output", "hidden_states"]),
    ("BertForPreTraining", {}, ["prediction_logits", "seq_relationship_logits", "hidden_states"]),
    ("BertForMaskedLM", {}, ["logits"]),
    ("BertForNextSentencePrediction", {}, ["logits"]),
    ("BertForSequenceClassification", {"num_labels": 3}, ["logits"]),
    ("BertForTokenClassification", {"num_labels": 5}, ["logits"]),
    ("BertForQuestionAnswering", {}, ["start_logits", "end_logits"]),
]


@pytest.mark.parametrize("unpad_inputs", [True, False])
@pytest.mark.parametrize("class_name, overrides, keys", HEAD_CASES)
def test_from_transformers_matches_outputs(class_name, overrides, keys, unpad_inputs):
    hf = _hf_model(class_name, **overrides)
    ours = from_transformers(hf)
    ours.config.unpad_inputs = unpad_inputs  # False: the padded layout, equal to transformers at every position
    assert type(ours).__name__ == "Lineage" + class_name.replace("BertLMHeadModel", "BertForCausalLM")
    inputs = batch()
    with torch.no_grad():
        _assert_outputs_match(hf(**inputs, output_hidden_states=True), ours(**inputs, output_hidden_states=True), keys,
                              real=inputs["attention_mask"] if unpad_inputs else None)


@pytest.mark.parametrize("class_name, overrides, keys", HEAD_CASES)
def test_to_transformers_matches_outputs(class_name, overrides, keys):
    lineage_class = getattr(hf_lineage, "Lineage" + class_name)
    ours = lineage_class(tiny(**overrides)).eval()
    hf = to_transformers(ours)
    assert type(hf).__name__ == class_name
    inputs = batch()
    with torch.no_grad():
        _assert_outputs_match(hf(**inputs, output_hidden_states=True), ours(**inputs, output_hidden_states=True), keys,
                              real=inputs["attention_mask"])


def _padded_with_every_layout():
    """Right padding, left padding, a hole, a row of one token and a row with no token at all."""
    inputs = batch(B=5, T=9)
    mask = torch.ones(5, 9, dtype=torch.long)
    mask[0, 6:] = 0
    mask[1, :3] = 0
    mask[2, 4] = 0
    mask[3, 1:] = 0
    mask[4] = 0
    inputs["attention_mask"] = mask
    return inputs


@pytest.mark.parametrize("per_sequence", [True, False])
@pytest.mark.parametrize("training", [False, True])
def test_skipping_the_padding_changes_nothing_at_real_tokens(training, per_sequence, monkeypatch):
    """unpad_inputs runs the encoder on the real tokens only, attending within each packed sequence (CPU) or padded
    back around one masked kernel (other devices): the states at real tokens, the MLM loss and every gradient equal
    the padded layout's; the padding's states are 0."""
    if not per_sequence:  # the path GPUs take
        monkeypatch.setattr(modeling_lineage_bert.LineageBertAttention, "per_sequence_devices", ())
    torch.manual_seed(0)
    model = LineageBertForPreTraining(tiny(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
    model.train(training)
    inputs = _padded_with_every_layout()
    real = inputs["attention_mask"].bool()
    labels = torch.full_like(inputs["input_ids"], -100)
    labels[0, 2], labels[1, 5], labels[2, 8], labels[3, 0] = 7, 8, 9, 10
    results = {}
    for unpad_inputs in (True, False):
        model.config.unpad_inputs = unpad_inputs
        model.zero_grad()
        out = model(**inputs, labels=labels, output_hidden_states=True, sparse_logits=True)
        out.loss.backward()
        results[unpad_inputs] = out, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    (fast, fast_grads), (slow, slow_grads) = results[True], results[False]
    torch.testing.assert_close(fast.mlm_loss, slow.mlm_loss, atol=1e-6, rtol=0)
    for a, b in zip(fast.hidden_states, slow.hidden_states, strict=True):
        torch.testing.assert_close(a[real], b[real], atol=1e-5, rtol=0)
        assert not a[~real].any()  # zeros at the padding
    assert fast_grads.keys() == slow_grads.keys()
    for name in fast_grads:
        torch.testing.assert_close(fast_grads[name], slow_grads[name], atol=1e-5, rtol=1e-4, msg=name)


def test_unpadded_attention_with_dropout_runs_the_same_computation_for_sdpa_and_eager():
    """With attention dropout (which the CPU flash kernel lacks) "sdpa" attends within each packed sequence as
    "eager" does: the same dropout draws give the same outputs and gradients, and dropout changes them."""
    inputs = batch()
    real = inputs["attention_mask"].bool()
    results = {}
    for implementation in ("sdpa", "eager", "no dropout"):
        torch.manual_seed(0)
        model = LineageBertModel(tiny(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.5)).train()
        if implementation == "no dropout":
            model.eval()
        else:
            model.set_attn_implementation(implementation)
        torch.manual_seed(1)
        out = model(**inputs).last_hidden_state
        out[real].sum().backward()
        results[implementation] = out, model.encoder.layer[0].attention.query.weight.grad
    torch.testing.assert_close(results["sdpa"][0], results["eager"][0], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(results["sdpa"][1], results["eager"][1], atol=1e-6, rtol=1e-5)
    assert not torch.allclose(results["sdpa"][0][real], results["no dropout"][0][real], atol=1e-3)


def test_unpadded_attention_weights_and_checkpointing_match_the_padded_layout():
    """output_attentions takes the masked path (weights need the (B, T) layout); activation checkpointing re-runs
    unpadded layers with the same result."""
    torch.manual_seed(0)
    model = LineageBertModel(tiny(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)).eval()
    inputs = batch()
    real = inputs["attention_mask"].bool()
    with torch.no_grad():
        fast = model(**inputs, output_attentions=True)
        model.config.unpad_inputs = False
        slow = model(**inputs, output_attentions=True)
    for a, b in zip(fast.attentions, slow.attentions, strict=True):  # (B, nh, T, T): the real queries' rows
        torch.testing.assert_close(a.transpose(1, 2)[real], b.transpose(1, 2)[real], atol=1e-6, rtol=0)
    torch.testing.assert_close(fast.last_hidden_state[real], slow.last_hidden_state[real], atol=1e-5, rtol=0)

    model.config.unpad_inputs = True
    model.train()
    plain = model(**inputs).last_hidden_state
    plain[real].sum().backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    calls = enable_activation_checkpointing(model, model)
    again = model(**inputs).last_hidden_state
    again[real].sum().backward()
    assert len(calls) == model.config.num_hidden_layers
    torch.testing.assert_close(again, plain)
    assert grads and grads.keys() == {n for n, p in model.named_parameters() if p.grad is not None}
    for name, p in model.named_parameters():
        if name in grads:
            torch.testing.assert_close(p.grad, grads[name], msg=name)


def _linear_calls(monkeypatch):
    """The nn.Linear modules called as modules (through ``nn.Linear.forward``), in call order."""
    called = []
    forward = torch.nn.Linear.forward

    def counting(self, x):
        called.append(self)
        return forward(self, x)

    monkeypatch.setattr(torch.nn.Linear, "forward", counting)
    return called


@pytest.mark.parametrize("layout", ["unpadded", "padded", "cross-attention"])
def test_fused_qkv_projection_gives_the_three_linears_outputs_and_gradients(layout, monkeypatch):
    """Plain Linears are projected with one matmul on their concatenated weights (``fused_projections``), and every
    weight still gets its own gradient; a hook on a projection sends the call through the three modules instead (so
    the hook runs) with the same numbers."""
    torch.manual_seed(0)
    no_dropout = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    if layout == "cross-attention":
        model = modeling_lineage_bert.LineageBertForCausalLM(tiny(is_decoder=True, add_cross_attention=True,
                                                                  **no_dropout))
        extra = dict(encoder_hidden_states=torch.randn(3, 6, model.config.hidden_size),
                     encoder_attention_mask=torch.tensor([[1] * 6, [1] * 4 + [0] * 2, [1] * 6]))
    else:
        model = LineageBertForPreTraining(tiny(unpad_inputs=layout == "unpadded", **no_dropout))
        extra = {}
    model.train()
    inputs = batch()
    labels = inputs["input_ids"].masked_fill(inputs["attention_mask"] == 0, -100)
    # what is fused: self-attention's query, key and value (cross-attention's key and value are one module already)
    projections = [module for layer in model.bert.encoder.layer
                   for module in (layer.attention.query, layer.attention.key, layer.attention.value)]
    results = []
    for hooked in (False, True):
        hooks = [p.register_forward_hook(lambda module, args, output: None) for p in projections] if hooked else []
        called = _linear_calls(monkeypatch)
        model.zero_grad()
        out = model(**inputs, labels=labels, output_hidden_states=True, **extra)
        out.loss.backward()
        monkeypatch.undo()
        for hook in hooks:
            hook.remove()
        # fused: no projection called as a module; hooked: each once
        assert sum(any(m is p for p in projections) for m in called) == (len(projections) if hooked else 0)
        results.append((out, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
    (fused, fused_grads), (split, split_grads) = results
    torch.testing.assert_close(fused.loss, split.loss, atol=1e-6, rtol=0)
    for a, b in zip(fused.hidden_states, split.hidden_states, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    projection_weights = {n for n, _ in model.named_parameters() if n.endswith(("query.weight", "key.weight",
                                                                                "value.weight"))}
    assert fused_grads.keys() == split_grads.keys() and projection_weights <= fused_grads.keys()
    for name in fused_grads:
        torch.testing.assert_close(fused_grads[name], split_grads[name], atol=1e-6, rtol=1e-5, msg=name)


def test_fused_qkv_projection_is_bypassed_by_global_hooks_and_handles_pruned_and_frozen_weights(monkeypatch):
    """A hook registered for every module sees the projections called one by one; pruned heads (smaller Linears)
    and a frozen key still take the fused matmul, with the unfused numbers and no gradient for the frozen key."""
    torch.manual_seed(0)
    model = LineageBertModel(tiny(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)).eval()
    inputs = batch()
    query = model.encoder.layer[0].attention.query
    seen = []
    handle = torch.nn.modules.module.register_module_forward_hook(
        lambda module, args, output: seen.append(module) if module is query else None)
    try:
        with torch.no_grad():
            model(**inputs)
    finally:
        handle.remove()
    assert len(seen) == 1

    model.prune_heads({0: [1]})
    model.encoder.layer[0].attention.key.weight.requires_grad_(False)
    model.train()
    projections = [getattr(layer.attention, name) for layer in model.encoder.layer for name in ("query", "key", "value")]
    outputs, grads = [], []
    for hooked in (False, True):
        hooks = [p.register_forward_pre_hook(lambda module, args: None) for p in projections] if hooked else []
        called = _linear_calls(monkeypatch)
        model.zero_grad()
        outputs.append(model(**inputs).last_hidden_state)
        outputs[-1].sum().backward()
        monkeypatch.undo()
        for hook in hooks:
            hook.remove()
        assert sum(any(m is p for p in projections) for m in called) == (len(projections) if hooked else 0)
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    torch.testing.assert_close(outputs[0], outputs[1], atol=1e-6, rtol=1e-5)
    assert grads[0].keys() == grads[1].keys() and "encoder.layer.0.attention.key.weight" not in grads[0]
    assert "encoder.layer.0.attention.query.weight" in grads[0]
    for name in grads[0]:
        torch.testing.assert_close(grads[0][name], grads[1][name], atol=1e-6, rtol=1e-5, msg=name)


def test_pretraining_losses_match_transformers():
    hf = _hf_model("BertForPreTraining")
    ours = from_transformers(hf)
    inputs = batch()
    labels = torch.full_like(inputs["input_ids"], -100)
    labels[0, 2], labels[0, 8], labels[1, 4], labels[2, 1] = 7, 50, 12, 98
    nsp = torch.tensor([0, 1, 0])
    with torch.no_grad():
        a = hf(**inputs, labels=labels, next_sentence_label=nsp)
        b = ours(**inputs, labels=labels, next_sentence_label=nsp)
        sparse = ours(**inputs, labels=labels, next_sentence_label=nsp, sparse_logits=True)
    torch.testing.assert_close(a.loss, b.loss, atol=1e-5, rtol=0)
    # With labels the logits keep transformers' shape (B, T, V) ...
    assert b.prediction_logits.shape == a.prediction_logits.shape == (3, 11, 99)
    real = inputs["attention_mask"].bool()  # (at the padding: zeros in, the head's bias out)
    torch.testing.assert_close(b.prediction_logits[real], a.prediction_logits[real], atol=1e-5, rtol=0)
    # ... and the opt-in sparse head returns them only where there are labels, with the same loss.
    assert sparse.prediction_logits.shape == (4, 99)
    torch.testing.assert_close(sparse.prediction_logits, a.prediction_logits[labels != -100], atol=1e-5, rtol=0)
    torch.testing.assert_close(sparse.loss, a.loss, atol=1e-5, rtol=0)


def test_multiple_choice_matches_transformers():
    hf = _hf_model("BertForMultipleChoice")
    ours = from_transformers(hf)
    inputs = {k: v.view(1, 3, -1).expand(2, 3, -1).clone() for k, v in batch().items()}
    labels = torch.tensor([0, 2])
    with torch.no_grad():
        a, b = hf(**inputs, labels=labels), ours(**inputs, labels=labels)
    assert b.logits.shape == (2, 3)
    _assert_outputs_match(a, b, ["logits", "loss"])


def test_decoder_with_cross_attention_and_cache_matches_transformers():
    hf = _hf_model("BertLMHeadModel", is_decoder=True, add_cross_attention=True)
    ours = from_transformers(hf)
    assert ours.config.is_decoder and ours.config.add_cross_attention
    inputs = batch(pairs=False)
    encoder_states = torch.randn(3, 6, 32)
    encoder_mask = torch.ones(3, 6, dtype=torch.long)
    encoder_mask[0, 4:] = 0
    kwargs = dict(encoder_hidden_states=encoder_states, encoder_attention_mask=encoder_mask)
    with torch.no_grad():
        a = hf(input_ids=inputs["input_ids"], **kwargs)
        b = ours(input_ids=inputs["input_ids"], **kwargs)
        torch.testing.assert_close(a.logits, b.logits, atol=1e-5, rtol=0)
        # Incremental decoding with the cache gives the same last-position logits as a full pass.
        first = ours(input_ids=inputs["input_ids"][:, :-1], use_cache=True, **kwargs)
        step = ours(input_ids=inputs["input_ids"][:, -1:], past_key_values=first.past_key_values, use_cache=True,
                    **kwargs)
        torch.testing.assert_close(step.logits[:, -1], b.logits[:, -1], atol=1e-5, rtol=0)


def test_exported_model_loads_in_plain_transformers(tmp_path):
    ours = LineageBertForPreTraining(tiny()).eval()
    inputs = batch()
    with torch.no_grad():
        expected = ours(**inputs).prediction_logits
    to_transformers(ours).save_pretrained(tmp_path / "exported")
    torch.save({"inputs": inputs, "expected": expected}, tmp_path / "check.pt")
    out = run_without_hf_lineage(
        f"""
import torch, transformers
model = transformers.BertForPreTraining.from_pretrained({str(tmp_path / 'exported')!r}).eval()
check = torch.load({str(tmp_path / 'check.pt')!r})
with torch.no_grad():
    got = model(**check["inputs"]).prediction_logits
real = check["inputs"]["attention_mask"].bool()  # (the padding's logits: the head's bias of zero states here)
print((got - check["expected"])[real].abs().max().item())
""",
        cwd=tmp_path,
    )
    assert float(out.strip().splitlines()[-1]) <= 1e-5


# --------------------------------------------------------------------------- behaviour of the heads


def test_sparse_mlm_head_runs_only_on_labelled_positions():
    model = LineageBertForMaskedLM(tiny()).eval()
    inputs = batch()
    labels = torch.full_like(inputs["input_ids"], -100)
    labels[0, 1] = 5
    labels[1, 3] = 6
    seen_rows = []
    handle = model.cls.predictions.transform_dense.register_forward_hook(
        lambda m, i, o: seen_rows.append(i[0].reshape(-1, i[0].shape[-1]).shape[0]))
    with torch.no_grad():
        out = model(**inputs, labels=labels, sparse_logits=True)
    handle.remove()
    assert seen_rows == [2] and out.logits.shape == (2, 99)
    with torch.no_grad():
        dense = model(**inputs).logits  # (B, T, V)
    expected = torch.nn.functional.cross_entropy(dense[labels != -100], labels[labels != -100])
    torch.testing.assert_close(out.loss, expected, atol=1e-5, rtol=0)


def test_padding_does_not_change_real_tokens():
    model = LineageBertModel(tiny()).eval()
    ids = torch.randint(5, 99, (1, 6))
    padded = torch.cat([ids, torch.zeros(1, 4, dtype=torch.long)], dim=1)
    mask = torch.cat([torch.ones(1, 6), torch.zeros(1, 4)], dim=1).long()
    with torch.no_grad():
        alone = model(ids).last_hidden_state
        with_pad = model(padded, attention_mask=mask).last_hidden_state[:, :6]
    torch.testing.assert_close(alone, with_pad, atol=1e-5, rtol=0)


def test_hidden_states_are_recorded_in_the_batch_layout_and_selected_by_index():
    """transformers' capture_outputs records each layer's input and output: (B, T, C) with zeros at the padding when
    the encoder skips it, the last one the model's output; a list of indices returns those states only (where the
    installed transformers selects by index: 5.24 does, 5.16 returns them all)."""
    from transformers.utils import output_capturing

    model = LineageBertModel(tiny(unpad_inputs=True)).eval()
    inputs = batch()
    real = inputs["attention_mask"].bool()
    with torch.no_grad():
        out = model(**inputs, output_hidden_states=True)
        some = model(**inputs, output_hidden_states=[0, -1]).hidden_states
    assert len(out.hidden_states) == 3 and all(h.shape == (3, 11, model.config.hidden_size) for h in out.hidden_states)
    assert all(h[~real].abs().max() == 0 for h in out.hidden_states)
    torch.testing.assert_close(out.hidden_states[-1], out.last_hidden_state)
    if hasattr(output_capturing, "selected_hidden_states"):
        assert some[1] is None
    torch.testing.assert_close(some[0], out.hidden_states[0])
    torch.testing.assert_close(some[2], out.hidden_states[2])


def test_attention_weights_and_hidden_states_are_returned():
    model = LineageBertModel(tiny()).eval()
    inputs = batch()
    out = model(**inputs, output_attentions=True, output_hidden_states=True)
    assert len(out.hidden_states) == 3 and len(out.attentions) == 2
    weights = out.attentions[0]  # (B, nh, T, T)
    assert weights.shape == (3, 2, 11, 11)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 11))
    assert weights[2, :, :, 3:].abs().max() == 0  # padded keys get no attention
    # The explicit-weights path computes the same states as SDPA.
    torch.testing.assert_close(out.last_hidden_state, model(**inputs).last_hidden_state, atol=1e-5, rtol=0)


def test_gradient_checkpointing_gives_the_same_gradients():
    config = tiny(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    a, b = LineageBertForPreTraining(config), LineageBertForPreTraining(config)
    b.load_state_dict(a.state_dict())
    checkpointed = enable_activation_checkpointing(b, b.bert.encoder)
    inputs = batch()
    labels = torch.where(torch.rand(3, 11) < 0.3, inputs["input_ids"], -100)
    for model in (a, b):
        model.train()
        model(**inputs, labels=labels, next_sentence_label=torch.tensor([0, 1, 1])).loss.backward()
    assert len(checkpointed) == config.num_hidden_layers
    for (name, pa), pb in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(pa.grad, pb.grad, atol=1e-6, rtol=1e-5, msg=name)


def test_tied_decoder_survives_save_and_load(tmp_path):
    model = LineageBertForPreTraining(tiny())
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    model.save_pretrained(tmp_path)
    loaded = AutoModelForMaskedLM.from_pretrained(tmp_path)
    assert loaded.cls.predictions.decoder.weight is loaded.bert.embeddings.word_embeddings.weight
    torch.testing.assert_close(loaded.bert.embeddings.word_embeddings.weight, model.bert.embeddings.word_embeddings.weight)
    torch.testing.assert_close(loaded.cls.predictions.bias, model.cls.predictions.bias)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "make_inputs, message",
    [
        (lambda: dict(input_ids=torch.randint(5, 99, (1, 65))), "exceeds max_position_embeddings=64"),
        (lambda: dict(input_ids=torch.tensor([[5, 99]])), r"input_ids contains 99, outside \[0, 99\)"),
        (lambda: dict(input_ids=torch.tensor([[5, -1]])), "input_ids contains -1"),
        (lambda: dict(input_ids=torch.tensor([[5, 6]]), token_type_ids=torch.tensor([[0, 2]])),
         "token_type_ids contains 2.*type_vocab_size"),
        (lambda: dict(input_ids=torch.tensor([[5, 6]]), attention_mask=torch.ones(1, 3)),
         r"attention_mask has shape \(1, 3\) but input_ids has shape \(1, 2\)"),
        (lambda: dict(input_ids=torch.tensor([[5, 6]]), attention_mask=torch.ones(1, 1, 2, 2, dtype=torch.long)),
         "A 4-D attention_mask goes to the attention as it is"),
        (lambda: dict(input_ids=torch.tensor([[5, 6]]), position_ids=torch.tensor([[0, 64]])),
         r"position_ids contains 64, outside \[0, 64\)"),
        (lambda: dict(input_ids=torch.tensor([5, 6])), "must have shape"),
        (lambda: dict(), "exactly one of input_ids or inputs_embeds"),
    ],
)
def test_bad_input_raises_clear_value_error(make_inputs, message):
    model = LineageBertForPreTraining(tiny()).eval()
    with pytest.raises(ValueError, match=message):
        model(**make_inputs())


def test_classifier_label_out_of_range_is_a_value_error():
    model = hf_lineage.LineageBertForSequenceClassification(tiny(num_labels=2)).eval()
    with pytest.raises(ValueError, match="num_labels=2"):
        model(input_ids=torch.tensor([[5, 6]]), labels=torch.tensor([2]))


def test_siamese_pair_classifier_reads_each_sentence_alone():
    """pair_encoding='siamese': u and v are the mean final states of [CLS] a [SEP] and [CLS] b [SEP], each encoded
    on its own (so padding, segment ids and the other sentence change nothing), classified from [u, v, |u-v|, u*v]."""
    torch.manual_seed(0)
    model = hf_lineage.LineageBertForSequenceClassification(
        tiny(num_labels=3, pair_encoding="siamese", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)).eval()
    cls, sep, pad = 2, 3, 0
    a, b, other_b = [7, 8, 9], [10, 11, 12, 13], [14, 15]
    pair = lambda x, y, padding=0: ([cls, *x, sep, *y, sep] + [pad] * padding,  # noqa: E731
                                    [0] * (len(x) + 2) + [1] * (len(y) + 1) + [0] * padding,
                                    [1] * (len(x) + len(y) + 3) + [0] * padding)
    rows = [pair(a, b), pair(a, other_b, padding=2)]
    ids, types, mask = (torch.tensor([row[i] for row in rows]) for i in range(3))
    with torch.no_grad():
        logits = model(input_ids=ids, token_type_ids=types, attention_mask=mask).logits
        alone = lambda x: model.bert(torch.tensor([[cls, *x, sep]])).last_hidden_state.mean(1)[0]  # noqa: E731
        expected = []
        for u, v in ((alone(a), alone(b)), (alone(a), alone(other_b))):
            expected.append(model.pair_classifier(torch.cat([u, v, (u - v).abs(), u * v])))
        single = model(input_ids=torch.tensor([[cls, *a, sep]])).logits  # one sentence: the [CLS] classifier
    torch.testing.assert_close(logits, torch.stack(expected), atol=1e-5, rtol=0)
    torch.testing.assert_close(single, model.classifier(model.bert(torch.tensor([[cls, *a, sep]])).pooler_output))
    assert not hasattr(hf_lineage.LineageBertForSequenceClassification(tiny()), "pair_classifier")  # cross: none
    with pytest.raises(ValueError, match="pair_encoding must be one of cross, siamese"):
        tiny(pair_encoding="both")
    with pytest.raises(ValueError, match="transformers' BERT classifies a pair as one sequence"):
        to_transformers(model)


# --------------------------------------------------------------------------- encoder-decoder


def test_bert2bert_learns_to_copy_and_cache_matches_no_cache():
    sizes = dict(vocab_size=30, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    config = EncoderDecoderConfig.from_encoder_decoder_configs(
        LineageBertConfig.from_named("tiny", **sizes), LineageBertConfig.from_named("tiny", **sizes)
    )
    config.decoder_start_token_id, config.pad_token_id, config.eos_token_id = 2, 0, 3
    model = EncoderDecoderModel(config=config)
    assert config.decoder.is_decoder and config.decoder.add_cross_attention
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(200):
        source = torch.randint(5, 30, (16, 5))
        labels = torch.cat([source, torch.full((16, 1), 3)], dim=1)
        loss = model(input_ids=source, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.5
    model.eval()
    source = torch.randint(5, 30, (8, 5))
    with_cache = model.generate(source, max_new_tokens=7, do_sample=False)
    without = model.generate(source, max_new_tokens=7, do_sample=False, use_cache=False)
    assert torch.equal(with_cache, without)
    copied = (with_cache[:, 1:6] == source).all(dim=1).float().mean()
    assert copied >= 0.75, with_cache


# --------------------------------------------------------------------------- Hub and pipelines


def test_saved_folder_loads_with_trust_remote_code_without_hf_lineage(tmp_path, wordpiece_tokenizer):
    model = LineageBertForPreTraining(tiny(vocab_size=len(wordpiece_tokenizer), max_position_embeddings=64)).eval()
    model.save_pretrained(tmp_path / "model")
    wordpiece_tokenizer.save_pretrained(tmp_path / "model")
    files = {p.name for p in (tmp_path / "model").iterdir()}
    assert {"model.safetensors", "config.json", "configuration_lineage_bert.py", "modeling_lineage_bert.py",
            "modeling_lineage_utils.py", "configuration_lineage_utils.py", "README.md"} <= files
    auto_map = json.loads((tmp_path / "model" / "config.json").read_text())["auto_map"]
    assert auto_map["AutoModelForMaskedLM"] == "modeling_lineage_bert.LineageBertForMaskedLM"
    assert "lineage-bert" in (tmp_path / "model" / "README.md").read_text()

    text = "the quick brown fox"
    encoded = wordpiece_tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        expected = model.bert(**encoded).last_hidden_state
    torch.save(expected, tmp_path / "expected.pt")
    out = run_without_hf_lineage(
        f"""
import torch
from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer
path = {str(tmp_path / 'model')!r}
tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=True)
model = AutoModel.from_pretrained(path, trust_remote_code=True).eval()
assert type(model).__name__ == "LineageBertModel", type(model)
assert "hf_lineage" not in type(model).__module__
with torch.no_grad():
    got = model(**tokenizer({text!r}, return_tensors="pt")).last_hidden_state
print((got - torch.load({str(tmp_path / 'expected.pt')!r})).abs().max().item())
mlm = AutoModelForMaskedLM.from_pretrained(path, trust_remote_code=True)
print(type(mlm).__name__)
""",
        cwd=tmp_path,
    )
    diff, mlm_class = out.strip().splitlines()[-2:]
    assert float(diff) <= 1e-5 and mlm_class == "LineageBertForMaskedLM"


def test_fill_mask_and_feature_extraction_pipelines(tmp_path, wordpiece_tokenizer):
    model = LineageBertForMaskedLM(tiny(vocab_size=len(wordpiece_tokenizer)))
    model.save_pretrained(tmp_path)
    wordpiece_tokenizer.save_pretrained(tmp_path)
    fill = transformers.pipeline("fill-mask", model=str(tmp_path))
    predictions = fill("the quick brown [MASK] jumps", top_k=3)
    assert len(predictions) == 3 and all("token_str" in p for p in predictions)
    scores = [p["score"] for p in predictions]
    assert scores == sorted(scores, reverse=True) and 0 < sum(scores) <= 1
    features = transformers.pipeline("feature-extraction", model=str(tmp_path))("the quick brown fox")
    n_tokens = len(wordpiece_tokenizer("the quick brown fox")["input_ids"])
    assert torch.tensor(features).shape == (1, n_tokens, model.config.hidden_size)
    assert isinstance(AutoModel.from_pretrained(tmp_path), LineageBertModel)


def test_trainer_gradient_accumulation_equals_one_big_batch_for_classification(tmp_path):
    from transformers import Trainer, TrainingArguments

    config = tiny(num_labels=3, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    data = [{"input_ids": torch.randint(5, 99, (8,)).tolist(), "labels": i % 3} for i in range(8)]
    weights = []
    for batch_size, accumulation in ((8, 1), (2, 4)):
        torch.manual_seed(0)
        model = hf_lineage.LineageBertForSequenceClassification(config)
        args = TrainingArguments(output_dir=str(tmp_path / str(batch_size)), per_device_train_batch_size=batch_size,
                                 gradient_accumulation_steps=accumulation, max_steps=1, learning_rate=1e-2,
                                 report_to=[], save_strategy="no", use_cpu=True, optim="sgd")
        Trainer(model=model, args=args, train_dataset=data).train()
        weights.append(model.classifier.weight.detach().clone())
    torch.testing.assert_close(weights[0], weights[1], atol=1e-6, rtol=1e-5)


def test_a_model_pretrained_without_nsp_adds_no_nsp_loss_and_says_so_in_its_config(tmp_path):
    config = LineageBertConfig.from_named("tiny", vocab_size=99, next_sentence_prediction=False)
    model = LineageBertForPreTraining(config).eval()
    input_ids = torch.randint(5, 99, (2, 9))
    labels = torch.full_like(input_ids, -100)
    labels[:, 3] = input_ids[:, 3]
    out = model(input_ids, labels=labels, next_sentence_label=torch.tensor([0, 1]))
    assert out.nsp_loss is None and torch.equal(out.loss, out.mlm_loss)
    assert out.seq_relationship_logits.shape == (2, 2)  # the head stays (the checkpoint keeps its layout), unused
    model.save_pretrained(tmp_path)
    assert LineageBertConfig.from_pretrained(tmp_path).next_sentence_prediction is False
    with_nsp = LineageBertForPreTraining(LineageBertConfig.from_named("tiny", vocab_size=99)).eval()
    assert with_nsp(input_ids, labels=labels, next_sentence_label=torch.tensor([0, 1])).nsp_loss is not None
