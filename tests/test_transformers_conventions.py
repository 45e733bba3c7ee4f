"""transformers' own model conventions, checked on lineage BERT and GPT through transformers' public API.

The behaviours transformers' common tests (``ModelTesterMixin`` in ``tests/test_modeling_common.py``,
``GenerationTesterMixin`` in ``tests/generation/test_utils.py``) check on every model, written here for our classes:
save/load, return_dict=False tuples, attention and hidden-state outputs, retained gradients, resizing the token
embeddings, tied weights, inputs_embeds, training (every weight gets a gradient), gradient checkpointing, eager
vs SDPA attention, ``shift_labels``, MLM logits of transformers' shape (what Trainer's ``compute_metrics`` sees),
torch.compile, and generation (greedy/sampling/beam search with and without the cache, left padding, continuing
from a cache, the per-step outputs of ``return_dict_in_generate``).
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_layers import GradientCheckpointingLayer

import hf_lineage
from hf_lineage import LineageBertConfig, LineageGPTConfig
from hf_lineage.models.modeling_lineage_word2vec import LineageWord2VecForCausalLM

V = 99
B, T = 3, 9
NO_DROPOUT_BERT = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
NO_DROPOUT_GPT = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, embedding_dropout_prob=0.0)


def bert_config(**overrides):
    return LineageBertConfig.from_named("tiny", **{"vocab_size": V, "max_position_embeddings": 32, "num_labels": 3,
                                                   **NO_DROPOUT_BERT, **overrides})


def gpt_config(**overrides):
    return LineageGPTConfig.from_named("tiny", **{"vocab_size": V, "max_position_embeddings": 32, "num_labels": 3,
                                                  **NO_DROPOUT_GPT, **overrides})


def padded_ids(shape=(B, T)):
    """Random ids, right-padded: the second and third sequences are shorter."""
    g = torch.Generator().manual_seed(0)
    input_ids = torch.randint(5, V, shape, generator=g)
    attention_mask = torch.ones_like(input_ids)
    flat = attention_mask.view(-1, shape[-1])
    flat[1, 6:] = 0
    flat[2, 3:] = 0
    input_ids[attention_mask == 0] = 0
    return input_ids, attention_mask


def mlm_labels(input_ids, attention_mask):
    labels = torch.full_like(input_ids, -100)
    labels[:, 1] = input_ids[:, 1]
    labels[0, 4] = input_ids[0, 4]
    return labels.masked_fill(attention_mask == 0, -100)


def make_case(name):
    """(model, inputs without labels, label keyword arguments, number of sequences N the model sees)."""
    family, head = name.split(":")
    config = bert_config(is_decoder=head == "ForCausalLM") if family == "bert" else gpt_config()
    model = getattr(hf_lineage, f"Lineage{'Bert' if family == 'bert' else 'GPT'}{head}")(config)
    choices = head == "ForMultipleChoice"
    input_ids, attention_mask = padded_ids((B, 2, T) if choices else (B, T))
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask)
    if family == "bert" and head != "ForCausalLM":
        token_type_ids = torch.zeros_like(input_ids)
        token_type_ids[..., 4:] = 1
        inputs["token_type_ids"] = token_type_ids.masked_fill(attention_mask == 0, 0)
    by_sequence = torch.tensor([0, 1, 2]) if head != "ForNextSentencePrediction" else torch.tensor([0, 1, 1])
    labels = {
        "Model": dict,
        "ForPreTraining": lambda: dict(labels=mlm_labels(input_ids, attention_mask),
                                       next_sentence_label=torch.tensor([0, 1, 0])),
        "ForMaskedLM": lambda: dict(labels=mlm_labels(input_ids, attention_mask)),
        "ForCausalLM": lambda: dict(labels=input_ids.masked_fill(attention_mask == 0, -100)),
        "ForNextSentencePrediction": lambda: dict(labels=by_sequence),
        "ForSequenceClassification": lambda: dict(labels=by_sequence),
        "ForTokenClassification": lambda: dict(labels=torch.randint(0, 3, (B, T)).masked_fill(attention_mask == 0,
                                                                                               -100)),
        "ForMultipleChoice": lambda: dict(labels=torch.tensor([0, 1, 1])),
        "ForQuestionAnswering": lambda: dict(start_positions=torch.tensor([1, 2, 0]),
                                             end_positions=torch.tensor([3, 4, 2])),
    }[head]()
    return model, inputs, labels, B * 2 if choices else B


BERT_CASES = [f"bert:{h}" for h in ("Model", "ForPreTraining", "ForMaskedLM", "ForCausalLM",
                                    "ForNextSentencePrediction", "ForSequenceClassification",
                                    "ForTokenClassification", "ForMultipleChoice", "ForQuestionAnswering")]
GPT_CASES = [f"gpt:{h}" for h in ("Model", "ForCausalLM", "ForSequenceClassification", "ForMultipleChoice",
                                  "ForTokenClassification", "ForQuestionAnswering")]
CASES = BERT_CASES + GPT_CASES
TRAINABLE = [c for c in CASES if not c.endswith(":Model")]
LM_CASES = ["bert:ForPreTraining", "bert:ForMaskedLM", "bert:ForCausalLM", "gpt:ForCausalLM"]


def tensors(output):
    """Every tensor of a model output, flattened in order (tuples of layers included)."""
    out = []
    for value in (output.to_tuple() if hasattr(output, "to_tuple") else output):
        if torch.is_tensor(value):
            out.append(value)
        elif isinstance(value, (tuple, list)):
            out.extend(v for v in value if torch.is_tensor(v))
    return out


def assert_all_close(a, b, atol=1e-5):
    ta, tb = tensors(a), tensors(b)
    assert len(ta) == len(tb) > 0
    for x, y in zip(ta, tb):
        torch.testing.assert_close(x, y, atol=atol, rtol=0)


# --------------------------------------------------------------------------- save/load, outputs


@pytest.mark.parametrize("case", CASES)
def test_save_and_load_gives_the_same_outputs_and_no_missing_weights(case, tmp_path):
    model, inputs, labels, _ = make_case(case)
    model.eval()
    model.save_pretrained(tmp_path)
    loaded, info = type(model).from_pretrained(tmp_path, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    assert not loaded.training
    with torch.no_grad():
        assert_all_close(model(**inputs, **labels), loaded(**inputs, **labels), atol=1e-6)


@pytest.mark.parametrize("case", CASES)
def test_return_dict_false_gives_the_output_as_a_tuple(case):
    model, inputs, labels, _ = make_case(case)
    model.eval()
    with torch.no_grad():
        as_dict = model(**inputs, **labels, output_hidden_states=True, output_attentions=True)
        as_tuple = model(**inputs, **labels, output_hidden_states=True, output_attentions=True, return_dict=False)
    assert isinstance(as_tuple, tuple)
    assert_all_close(as_dict.to_tuple(), as_tuple, atol=0)


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
@pytest.mark.parametrize("case", CASES)
def test_attention_outputs(case, implementation):
    model, inputs, _, N = make_case(case)
    model.set_attn_implementation(implementation)
    model.eval()
    config = model.config
    with torch.no_grad():
        plain = model(**inputs)
        # Under sdpa the argument still returns the weights (computed by hand for that call) ...
        out = model(**inputs, output_attentions=True)
        if implementation == "eager":
            # ... while the config flag is eager-only (transformers' config refuses it under sdpa)
            model.config.output_attentions = True
            from_config = model(**inputs)
            model.config.output_attentions = False
        else:
            from_config = out
    assert plain.get("attentions") is None
    assert len(out.attentions) == config.num_hidden_layers
    mask = inputs["attention_mask"].reshape(N, T).bool()
    for weights, again in zip(out.attentions, from_config.attentions):
        assert weights.shape == (N, config.num_attention_heads, T, T)
        torch.testing.assert_close(weights, again)
        real = mask[:, None, :, None]  # queries that are real tokens
        torch.testing.assert_close(weights.sum(-1)[real[..., 0].expand(-1, weights.shape[1], -1)],
                                   torch.ones(()).expand(int(real.sum()) * weights.shape[1]))
        assert weights.masked_select(real & ~mask[:, None, None, :]).abs().max() == 0  # padded keys get nothing
        if config.is_decoder or case.startswith("gpt"):
            assert weights.triu(1).abs().max() == 0  # nothing from the future
    # Asking for the weights does not change what the model computes.
    assert_all_close(plain.to_tuple()[:1], out.to_tuple()[:1])


@pytest.mark.parametrize("case", CASES)
def test_hidden_states_output(case):
    model, inputs, _, N = make_case(case)
    model.eval()
    with torch.no_grad():
        out = model(**inputs, output_hidden_states=True)
        model.config.output_hidden_states = True
        from_config = model(**inputs)
        model.config.output_hidden_states = False
        plain = model(**inputs)
    assert plain.get("hidden_states") is None
    assert len(out.hidden_states) == model.config.num_hidden_layers + 1  # the embeddings, then every layer
    for h, again in zip(out.hidden_states, from_config.hidden_states):
        assert h.shape == (N, T, model.config.hidden_size)
        torch.testing.assert_close(h, again)
    if case.endswith(":Model"):
        torch.testing.assert_close(out.hidden_states[-1], out.last_hidden_state)


@pytest.mark.parametrize("case", ["bert:ForMaskedLM", "gpt:ForCausalLM", "bert:ForSequenceClassification"])
def test_hidden_states_and_attentions_retain_gradients(case):
    model, inputs, labels, _ = make_case(case)
    model.train()
    out = model(**inputs, **labels, output_hidden_states=True, output_attentions=True)
    hidden, attentions = out.hidden_states[0], out.attentions[0]
    hidden.retain_grad()
    attentions.retain_grad()
    out.loss.backward()
    assert hidden.grad is not None and hidden.grad.abs().sum() > 0
    assert attentions.grad is not None and attentions.grad.abs().sum() > 0


@pytest.mark.parametrize("case", ["bert:Model", "bert:ForMaskedLM", "gpt:Model", "gpt:ForCausalLM"])
def test_inputs_embeds_give_what_input_ids_give(case):
    model, inputs, _, _ = make_case(case)
    model.eval()
    embeds = model.get_input_embeddings()(inputs["input_ids"])
    with torch.no_grad():
        a = model(**inputs)
        b = model(**{**{k: v for k, v in inputs.items() if k != "input_ids"}, "inputs_embeds": embeds})
    assert_all_close(a, b)


# --------------------------------------------------------------------------- embeddings: get/set, resize, tying


@pytest.mark.parametrize("case", CASES)
def test_get_and_set_input_embeddings(case):
    model, *_ = make_case(case)
    assert isinstance(model.get_input_embeddings(), nn.Embedding)
    assert model.get_output_embeddings() is None or isinstance(model.get_output_embeddings(), nn.Linear)
    replacement = nn.Embedding(V, model.config.hidden_size)
    model.set_input_embeddings(replacement)
    assert model.get_input_embeddings() is replacement


@pytest.mark.parametrize("case", CASES)
def test_resize_token_embeddings(case):
    model, inputs, labels, N = make_case(case)
    model.eval()
    old_input = model.get_input_embeddings().weight.detach().clone()
    tied = model.get_output_embeddings() is not None and model.config.tie_word_embeddings
    bias = getattr(getattr(getattr(model, "cls", None), "predictions", None), "bias", None)
    old_bias = None if bias is None else bias.detach().clone()

    model.resize_token_embeddings(V + 10)
    assert model.config.vocab_size == V + 10
    assert model.get_input_embeddings().weight.shape == (V + 10, model.config.hidden_size)
    torch.testing.assert_close(model.get_input_embeddings().weight[:V], old_input)  # old rows kept
    if model.get_output_embeddings() is not None:
        assert model.get_output_embeddings().weight.shape[0] == V + 10
        if tied:
            assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    if old_bias is not None:
        assert model.cls.predictions.bias.shape == (V + 10,)  # the MLM output bias follows the decoder
        torch.testing.assert_close(model.cls.predictions.bias[:V], old_bias)
    new_ids = inputs["input_ids"].masked_fill(inputs["input_ids"] == inputs["input_ids"].max(), V + 9)
    with torch.no_grad():
        out = model(**{**inputs, "input_ids": new_ids}, **labels)  # the new token ids are valid input
    if case in LM_CASES:
        logits = out.logits if hasattr(out, "logits") and out.logits is not None else out.prediction_logits
        assert logits.shape == (N, T, V + 10)

    model.resize_token_embeddings(V - 15)  # shrinking works too
    assert model.get_input_embeddings().weight.shape[0] == V - 15 == model.config.vocab_size
    small = inputs["input_ids"].clamp(max=V - 16)
    with torch.no_grad():
        model(**{**inputs, "input_ids": small})
    model.resize_token_embeddings(V - 15, pad_to_multiple_of=16)
    assert model.get_input_embeddings().weight.shape[0] == 96 == model.config.vocab_size
    if old_bias is not None:
        assert model.cls.predictions.bias.shape == (96,)


@pytest.mark.parametrize("case", ["bert:ForMaskedLM", "bert:ForPreTraining", "bert:ForCausalLM", "gpt:ForCausalLM"])
def test_resize_untied_output_layer(case):
    family, head = case.split(":")
    config = (bert_config(is_decoder=head == "ForCausalLM", tie_word_embeddings=False) if family == "bert"
              else gpt_config(tie_word_embeddings=False))
    model = getattr(hf_lineage, f"Lineage{'Bert' if family == 'bert' else 'GPT'}{head}")(config)
    old_output = model.get_output_embeddings().weight.detach().clone()
    model.resize_token_embeddings(V + 10)
    assert model.get_output_embeddings().weight is not model.get_input_embeddings().weight
    assert model.get_output_embeddings().weight.shape[0] == V + 10
    torch.testing.assert_close(model.get_output_embeddings().weight[:V], old_output)


@pytest.mark.parametrize("case", [c for c in CASES if not c.endswith(":Model") and "Classification" not in c
                                  and "Choice" not in c and "Answering" not in c and "NextSentence" not in c]
                         + ["gpt:ForSequenceClassification"])
def test_tied_weights_are_one_tensor_before_and_after_loading(case, tmp_path):
    model, *_ = make_case(case)
    assert model._tied_weights_keys  # a {target: source} dict, as transformers v5 wants
    for target, source in model._tied_weights_keys.items():
        assert model.get_parameter(target) is model.get_parameter(source)
    model.save_pretrained(tmp_path)
    loaded = type(model).from_pretrained(tmp_path)
    for target, source in loaded._tied_weights_keys.items():
        assert loaded.get_parameter(target) is loaded.get_parameter(source)


@pytest.mark.parametrize("case", ["bert:ForMaskedLM", "gpt:ForCausalLM"])
def test_untied_weights_stay_separate_through_save_and_load(case, tmp_path):
    family, head = case.split(":")
    config = bert_config(tie_word_embeddings=False) if family == "bert" else gpt_config(tie_word_embeddings=False)
    model = getattr(hf_lineage, f"Lineage{'Bert' if family == 'bert' else 'GPT'}{head}")(config)
    assert model.get_output_embeddings().weight is not model.get_input_embeddings().weight
    with torch.no_grad():
        model.get_output_embeddings().weight.add_(1.0)
    model.save_pretrained(tmp_path)
    loaded = type(model).from_pretrained(tmp_path)
    assert loaded.get_output_embeddings().weight is not loaded.get_input_embeddings().weight
    torch.testing.assert_close(loaded.get_output_embeddings().weight, model.get_output_embeddings().weight)
    torch.testing.assert_close(loaded.get_input_embeddings().weight, model.get_input_embeddings().weight)


# --------------------------------------------------------------------------- training


@pytest.mark.parametrize("case", TRAINABLE)
def test_training_gives_every_weight_a_gradient(case):
    model, inputs, labels, _ = make_case(case)
    model.train()
    loss = model(**inputs, **labels).loss
    assert torch.isfinite(loss)
    loss.backward()
    without = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    assert not without


# transformers 5.24 renamed gradient_checkpointing_* to activation_checkpointing_* (the old names warn there).
NEW_NAMES = hasattr(PreTrainedModel, "activation_checkpointing_enable")


def _enable_checkpointing(model, kwargs):
    if NEW_NAMES:
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def _is_checkpointing(model):
    return model.is_activation_checkpointing if NEW_NAMES else model.is_gradient_checkpointing


def _disable_checkpointing(model):
    model.activation_checkpointing_disable() if NEW_NAMES else model.gradient_checkpointing_disable()


@pytest.mark.parametrize("reentrant", [True, False])
@pytest.mark.parametrize("case", ["bert:ForPreTraining", "bert:ForSequenceClassification", "bert:ForCausalLM",
                                  "gpt:ForCausalLM", "gpt:ForMultipleChoice"])
def test_gradient_checkpointing_gives_the_same_gradients(case, reentrant):
    reference, inputs, labels, _ = make_case(case)
    model, *_ = make_case(case)
    model.load_state_dict(reference.state_dict())
    layers = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]
    assert len(layers) == model.config.num_hidden_layers  # the transformer layers are transformers' class
    assert model.supports_gradient_checkpointing and not _is_checkpointing(model)
    _enable_checkpointing(model, {"use_reentrant": reentrant})
    assert _is_checkpointing(model) and all(layer.gradient_checkpointing for layer in layers)
    recomputed = []
    for layer in layers:
        inner = layer._gradient_checkpointing_func
        layer._gradient_checkpointing_func = lambda *a, _inner=inner, **k: recomputed.append(1) or _inner(*a, **k)
    for m in (reference, model):
        m.train()
        m(**inputs, **labels).loss.backward()
    assert len(recomputed) == len(layers)  # every layer went through the checkpoint function
    for (name, a), b in zip(reference.named_parameters(), model.parameters()):
        torch.testing.assert_close(b.grad, a.grad, atol=1e-6, rtol=1e-5, msg=name)
    _disable_checkpointing(model)
    assert not _is_checkpointing(model) and not any(layer.gradient_checkpointing for layer in layers)


@pytest.mark.parametrize("reentrant", [True, False])
def test_gradient_checkpointing_in_an_encoder_decoder_reaches_the_encoder_through_cross_attention(reentrant):
    from transformers import EncoderDecoderConfig, EncoderDecoderModel

    config = EncoderDecoderConfig.from_encoder_decoder_configs(bert_config(), gpt_config())
    config.decoder_start_token_id, config.pad_token_id = 1, 0
    torch.manual_seed(0)
    reference = EncoderDecoderModel(config=config)
    model = EncoderDecoderModel(config=config)
    model.load_state_dict(reference.state_dict())
    _enable_checkpointing(model, {"use_reentrant": reentrant})
    layers = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]
    assert len(layers) == 4 and all(layer.gradient_checkpointing for layer in layers)  # 2 encoder + 2 decoder
    x, y = torch.randint(3, V, (2, 7)), torch.randint(3, V, (2, 5))
    for m in (reference, model):
        m.train()
        m(input_ids=x, labels=y).loss.backward()
    for (name, a), b in zip(reference.named_parameters(), model.parameters()):
        assert (a.grad is None) == (b.grad is None), name
        if a.grad is not None:
            torch.testing.assert_close(b.grad, a.grad, atol=1e-6, rtol=1e-5, msg=name)
    # The encoder learns from the decoder's loss only through cross-attention, which checkpointing recomputes.
    assert model.encoder.encoder.layer[-1].output.dense.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("case", ["bert:ForMaskedLM", "gpt:ForCausalLM"])
def test_torch_compile_gives_the_same_loss_and_gradients(case):
    reference, inputs, labels, _ = make_case(case)
    model, *_ = make_case(case)
    model.load_state_dict(reference.state_dict())
    compiled = torch.compile(model, backend="aot_eager")  # graph capture + autograd tracing, no C++ build
    for m in (reference, compiled):
        m.train()
        m(**inputs, **labels).loss.backward()
    torch.testing.assert_close(compiled(**inputs, **labels).loss, reference(**inputs, **labels).loss)
    for (name, a), b in zip(reference.named_parameters(), model.parameters()):
        torch.testing.assert_close(b.grad, a.grad, atol=1e-6, rtol=1e-5, msg=name)


# --------------------------------------------------------------------------- attention implementations


def _count_sdpa(monkeypatch):
    calls = []
    fused = F.scaled_dot_product_attention

    def counting(*args, **kwargs):
        calls.append(1)
        return fused(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", counting)
    return calls


@pytest.mark.parametrize("dtype, atol", [(torch.float32, 1e-5), (torch.bfloat16, 3e-2)])
@pytest.mark.parametrize("case", ["bert:Model", "bert:ForCausalLM", "gpt:ForCausalLM", "gpt:ForSequenceClassification"])
def test_eager_matches_sdpa_and_each_runs_its_own_path(case, dtype, atol, tmp_path, monkeypatch):
    model, inputs, _, _ = make_case(case)
    model.save_pretrained(tmp_path)
    eager = type(model).from_pretrained(tmp_path, attn_implementation="eager", dtype=dtype).eval()
    sdpa = type(model).from_pretrained(tmp_path, attn_implementation="sdpa", dtype=dtype).eval()
    default = type(model).from_pretrained(tmp_path).eval()
    assert eager.config._attn_implementation == "eager"
    assert sdpa.config._attn_implementation == "sdpa" == default.config._attn_implementation
    calls = _count_sdpa(monkeypatch)
    with torch.no_grad():
        e = eager(**inputs, output_hidden_states=True)
        assert not calls  # eager computes the attention itself
        s = sdpa(**inputs, output_hidden_states=True)
        # sdpa runs the fused kernel once per layer; BERT's encoder skips the padding of a padded batch on CPU and
        # runs it once per sequence
        padded = case == "bert:Model" and not inputs["attention_mask"].all()
        assert len(calls) == model.config.num_hidden_layers * (len(inputs["input_ids"]) if padded else 1)
    assert e.get("attentions") is None and s.get("attentions") is None
    assert_all_close(e, s, atol=atol)


def test_set_attn_implementation_switches_the_path_at_once(monkeypatch):
    model, inputs, _, _ = make_case("gpt:ForCausalLM")
    model.eval()
    calls = _count_sdpa(monkeypatch)
    with torch.no_grad():
        fused = model(**inputs).logits
        assert len(calls) == 2
        model.set_attn_implementation("eager")
        assert model.config._attn_implementation == "eager"
        by_hand = model(**inputs).logits
        assert len(calls) == 2
    torch.testing.assert_close(by_hand, fused, atol=1e-5, rtol=0)


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_flash_attention_without_its_package_is_refused(family):
    """flash_attention_2 is declared (``_supports_flash_attn``) but needs the flash-attn package and a GPU: without
    them transformers refuses it by name when the model is built, instead of failing inside the forward."""
    cls = hf_lineage.LineageBertModel if family == "bert" else hf_lineage.LineageGPTModel
    config = bert_config() if family == "bert" else gpt_config()
    with pytest.raises((ValueError, ImportError), match="not support|requires|install|flash"):
        cls._from_config(config, attn_implementation="flash_attention_2")


def test_an_unknown_implementation_in_the_config_is_refused_by_name():
    model, inputs, _, _ = make_case("bert:Model")
    model.config._attn_implementation_internal = "my_kernel"  # as if set behind transformers' back
    with pytest.raises(ValueError, match="'sdpa'.*'eager'.*ALL_ATTENTION_FUNCTIONS.*my_kernel"):
        model(**inputs)


# --------------------------------------------------------------------------- losses and logits as transformers has them


@pytest.mark.parametrize("case", ["bert:ForCausalLM", "gpt:ForCausalLM"])
def test_causal_lm_honours_shift_labels(case):
    model, inputs, labels, _ = make_case(case)
    model.eval()
    shifted = F.pad(labels["labels"][:, 1:], (0, 1), value=-100)
    with torch.no_grad():
        from_labels = model(**inputs, **labels)
        from_shifted = model(**inputs, shift_labels=shifted)
        both = model(**inputs, **labels, shift_labels=shifted)
        # Unshifted "shift_labels" ask for predicting each token from itself: a different loss, computed as given.
        unshifted = model(**inputs, shift_labels=labels["labels"])
    torch.testing.assert_close(from_shifted.loss, from_labels.loss)
    torch.testing.assert_close(both.loss, from_labels.loss)
    expected = F.cross_entropy(unshifted.logits.reshape(-1, V), labels["labels"].reshape(-1))
    torch.testing.assert_close(unshifted.loss, expected)
    assert not torch.allclose(unshifted.loss, from_labels.loss)


def other_causal_lm(family):
    """(model, inputs) for the other causal-LM families: NNLM, ELMo's forward LM, word2vec's LSTM LM."""
    torch.manual_seed(0)
    ids = torch.randint(4, 17, (2, 7), generator=torch.Generator().manual_seed(2))
    if family == "nnlm":
        config = hf_lineage.LineageNNLMConfig.from_named("tiny", vocab_size=17)
        return hf_lineage.LineageNNLMForCausalLM(config), dict(input_ids=ids)
    if family == "word2vec":
        config = hf_lineage.LineageWord2VecConfig.from_named("tiny", vocab_size=17)
        return LineageWord2VecForCausalLM(config), dict(input_ids=ids)
    words = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "to", "park", "river", "bank", "money"]
    tokenizer = hf_lineage.LineageElmoTokenizer(vocab=["<pad>", "<UNK>", "<S>", "</S>", *words])
    config = hf_lineage.LineageElmoConfig.from_named("tiny", vocab_size=len(tokenizer), dropout=0.0,
                                                     scalar_mix_dropout=0.0)
    inputs = tokenizer(["the cat sat on the mat", "a dog ran to the bank"], return_tensors="pt")
    return hf_lineage.LineageElmoForCausalLM(config), dict(inputs)


@pytest.mark.parametrize("family", ["nnlm", "elmo", "word2vec"])
def test_other_causal_lms_honour_shift_labels(family):
    model, inputs = other_causal_lm(family)
    model.eval()
    labels = inputs["input_ids"].clone()
    labels[:, :2] = -100
    shifted = F.pad(labels[:, 1:], (0, 1), value=-100)
    with torch.no_grad():
        from_labels = model(**inputs, labels=labels).loss
        from_shifted = model(**inputs, shift_labels=shifted).loss
        # shift_labels are used as given: unshifted ones ask each position for its own token, a different loss
        unshifted = model(**inputs, shift_labels=labels).loss
    torch.testing.assert_close(from_shifted, from_labels)
    assert not torch.allclose(unshifted, from_labels)


@pytest.mark.parametrize("case", ["bert:ForMaskedLM", "bert:ForPreTraining"])
def test_masked_lm_logits_have_transformers_shape_with_labels(case):
    model, inputs, labels, _ = make_case(case)
    model.eval()
    with torch.no_grad():
        with_labels = model(**inputs, **labels)
        without = model(**inputs)
    name = "logits" if case.endswith("MaskedLM") else "prediction_logits"
    assert with_labels[name].shape == without[name].shape == (B, T, V)
    torch.testing.assert_close(with_labels[name], without[name])
    mlm = labels["labels"]
    expected = F.cross_entropy(without[name][mlm != -100], mlm[mlm != -100])
    torch.testing.assert_close(with_labels.get("mlm_loss", with_labels.loss), expected)


def test_trainer_compute_metrics_sees_per_position_mlm_logits(tmp_path):
    from datasets import Dataset
    from transformers import Trainer, TrainingArguments

    model, inputs, labels, _ = make_case("bert:ForMaskedLM")
    rows = [{k: v[i] for k, v in {**inputs, **labels}.items()} for i in range(B)]
    seen = {}

    def compute_metrics(prediction):
        seen["shape"] = prediction.predictions.shape
        predicted = prediction.predictions.argmax(-1)
        masked = prediction.label_ids != -100
        return {"accuracy": float((predicted[masked] == prediction.label_ids[masked]).mean())}

    args = TrainingArguments(output_dir=str(tmp_path), per_device_eval_batch_size=2, report_to=[], use_cpu=True)
    trainer = Trainer(model=model, args=args, eval_dataset=Dataset.from_list(rows).with_format("torch"),
                      compute_metrics=compute_metrics)
    metrics = trainer.evaluate()
    assert seen["shape"] == (B, T, V)
    assert 0.0 <= metrics["eval_accuracy"] <= 1.0 and "eval_loss" in metrics


# --------------------------------------------------------------------------- generation (causal models)


def causal_model(family):
    config = (bert_config(is_decoder=True, bos_token_id=1, eos_token_id=2) if family == "bert"
              else gpt_config(bos_token_id=1, eos_token_id=2))
    cls = hf_lineage.LineageBertForCausalLM if family == "bert" else hf_lineage.LineageGPTForCausalLM
    torch.manual_seed(0)
    return cls(config).eval()


def left_padded_prompt():
    input_ids = torch.randint(5, V, (2, 5), generator=torch.Generator().manual_seed(1))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, :2] = 0
    return input_ids.masked_fill(attention_mask == 0, 0), attention_mask


GENERATE = dict(max_new_tokens=6, min_new_tokens=6, pad_token_id=0)


@pytest.mark.parametrize("family", ["bert", "gpt"])
@pytest.mark.parametrize("mode", [dict(do_sample=False), dict(do_sample=False, num_beams=3, num_return_sequences=2)])
def test_generate_with_and_without_cache_agree(family, mode):
    model = causal_model(family)
    input_ids = torch.randint(5, V, (2, 5), generator=torch.Generator().manual_seed(1))
    with_cache = model.generate(input_ids, **GENERATE, **mode)
    without = model.generate(input_ids, **GENERATE, **mode, use_cache=False)
    assert with_cache.shape == (2 * mode.get("num_return_sequences", 1), 11)
    torch.testing.assert_close(with_cache, without)


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_sampling_is_reproducible_under_a_seed(family):
    model = causal_model(family)
    input_ids, attention_mask = left_padded_prompt()
    runs = []
    for _ in range(2):
        torch.manual_seed(3)
        runs.append(model.generate(input_ids, attention_mask=attention_mask, do_sample=True, top_k=20, **GENERATE))
    torch.testing.assert_close(runs[0], runs[1])
    assert runs[0].shape == (2, 11)


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_left_padding_does_not_change_the_next_token_distribution(family):
    model = causal_model(family)
    input_ids, attention_mask = left_padded_prompt()
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        alone = model(input_ids=input_ids[1:, 2:]).logits[:, -1]
        padded = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids).logits[1:, -1]
    torch.testing.assert_close(padded, alone, atol=1e-5, rtol=0)
    if family == "gpt":  # GPT counts positions from each row's first real token by itself
        with torch.no_grad():
            implicit = model(input_ids=input_ids, attention_mask=attention_mask).logits[1:, -1]
        torch.testing.assert_close(implicit, alone, atol=1e-5, rtol=0)


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_generation_continues_from_a_returned_cache(family):
    model = causal_model(family)
    input_ids = torch.randint(5, V, (2, 5), generator=torch.Generator().manual_seed(1))
    at_once = model.generate(input_ids, **{**GENERATE, "max_new_tokens": 8, "min_new_tokens": 8})
    first = model.generate(input_ids, **{**GENERATE, "max_new_tokens": 4, "min_new_tokens": 4},
                           return_dict_in_generate=True)
    cache = first.get("cache", first.get("past_key_values"))
    assert cache is not None and cache.get_seq_length() == 8  # prompt + 4, less the last token not yet fed
    key = cache.layers[0].keys
    heads = model.config.num_attention_heads
    assert key.shape == (2, heads, 8, model.config.hidden_size // heads)  # (batch, heads, positions, head size)
    name = "cache" if "cache" in first else "past_key_values"
    rest = model.generate(first.sequences, **{**GENERATE, "max_new_tokens": 4, "min_new_tokens": 4}, **{name: cache})
    torch.testing.assert_close(rest, at_once)


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_return_dict_in_generate_gives_per_step_outputs(family):
    model = causal_model(family)
    input_ids, attention_mask = left_padded_prompt()
    config = model.config
    out = model.generate(input_ids, attention_mask=attention_mask, **GENERATE, return_dict_in_generate=True,
                         output_scores=True, output_logits=True, output_attentions=True, output_hidden_states=True)
    assert out.sequences.shape == (2, 11)
    assert len(out.scores) == len(out.logits) == len(out.attentions) == len(out.hidden_states) == 6
    for step, (attentions, hidden_states) in enumerate(zip(out.attentions, out.hidden_states)):
        queries = 5 if step == 0 else 1  # the prompt, then one new token at a time over the cache
        assert len(attentions) == config.num_hidden_layers and len(hidden_states) == config.num_hidden_layers + 1
        assert attentions[0].shape == (2, config.num_attention_heads, queries, 5 + step)
        assert hidden_states[-1].shape == (2, queries, config.hidden_size)
    for scores, logits in zip(out.scores, out.logits):
        assert scores.shape == logits.shape == (2, V)
    # Greedy: every generated token is the argmax of that step's scores.
    torch.testing.assert_close(torch.stack([s.argmax(-1) for s in out.scores], 1), out.sequences[:, 5:])


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_generate_from_inputs_embeds_gives_what_input_ids_give(family):
    model = causal_model(family)
    input_ids = torch.randint(5, V, (2, 5), generator=torch.Generator().manual_seed(1))
    from_ids = model.generate(input_ids, **GENERATE)
    from_embeds = model.generate(inputs_embeds=model.get_input_embeddings()(input_ids), **GENERATE)
    torch.testing.assert_close(from_embeds, from_ids[:, 5:])  # only the new tokens: there were no prompt ids


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_assisted_and_prompt_lookup_decoding_match_greedy(family):
    """Both roll the cache back after rejected draft tokens: what greedy search gives, token for token."""
    model = causal_model(family)
    input_ids = torch.randint(5, V, (1, 5), generator=torch.Generator().manual_seed(1))
    greedy = model.generate(input_ids, **GENERATE)
    assistant = causal_model(family)
    with torch.no_grad():  # a perturbed draft model: its drafts need not be accepted
        for p in assistant.parameters():
            p.add_(0.05 * torch.randn_like(p))
    torch.testing.assert_close(model.generate(input_ids, **GENERATE, assistant_model=assistant), greedy)
    torch.testing.assert_close(model.generate(input_ids, **GENERATE, prompt_lookup_num_tokens=2), greedy)


# --------------------------------------------------------------------------- loading into other heads


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_new_heads_are_initialised_and_mismatched_sizes_reinitialised(family, tmp_path):
    prefix = "Bert" if family == "bert" else "GPT"
    base = getattr(hf_lineage, f"Lineage{prefix}Model")(bert_config() if family == "bert" else gpt_config())
    base.save_pretrained(tmp_path / "base")
    head, info = getattr(hf_lineage, f"Lineage{prefix}ForSequenceClassification").from_pretrained(
        tmp_path / "base", output_loading_info=True)
    assert any("classifier" in k for k in info["missing_keys"])
    weight = head.classifier.weight.detach()
    assert torch.isfinite(weight).all() and 0.01 < float(weight.std()) < 0.03  # N(0, 0.02), the config's init
    torch.testing.assert_close(head.get_input_embeddings().weight, base.get_input_embeddings().weight)
    head.save_pretrained(tmp_path / "three")
    with pytest.raises(RuntimeError, match="size mismatch|ignore_mismatched_sizes"):
        type(head).from_pretrained(tmp_path / "three", num_labels=5)
    five = type(head).from_pretrained(tmp_path / "three", num_labels=5, ignore_mismatched_sizes=True)
    assert five.classifier.weight.shape == (5, 64) and 0.01 < float(five.classifier.weight.detach().std()) < 0.03


@pytest.mark.parametrize("case", ["bert:ForPreTraining", "bert:ForSequenceClassification", "gpt:ForCausalLM",
                                  "gpt:ForMultipleChoice"])
def test_a_head_checkpoint_loads_into_the_bare_model(case, tmp_path):
    model, *_ = make_case(case)
    model.save_pretrained(tmp_path)
    bare_class = type(model.base_model)
    bare, info = bare_class.from_pretrained(tmp_path, output_loading_info=True)
    assert not info["missing_keys"]  # the head's weights are left out, the body's all found
    for name, tensor in bare.state_dict().items():
        torch.testing.assert_close(tensor, model.base_model.state_dict()[name], msg=name)


@pytest.mark.parametrize("family", ["bert", "gpt"])
@pytest.mark.parametrize("problem_type, num_labels, make_labels", [
    ("regression", 1, lambda: torch.randn(B)),
    ("single_label_classification", 3, lambda: torch.tensor([0, 2, 1])),
    ("multi_label_classification", 3, lambda: torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])),
])
def test_sequence_classification_problem_types(family, problem_type, num_labels, make_labels):
    prefix = "Bert" if family == "bert" else "GPT"
    overrides = dict(num_labels=num_labels, **({} if family == "bert" else {"lm_loss_weight": 0.0}))
    config = bert_config(**overrides) if family == "bert" else gpt_config(**overrides)
    model = getattr(hf_lineage, f"Lineage{prefix}ForSequenceClassification")(config).eval()
    input_ids, attention_mask = padded_ids()
    labels = make_labels()
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    assert model.config.problem_type == problem_type  # inferred from num_labels and the labels' dtype
    logits = out.logits.float()
    expected = {
        "regression": lambda: F.mse_loss(logits.squeeze(-1), labels),
        "single_label_classification": lambda: F.cross_entropy(logits, labels),
        "multi_label_classification": lambda: F.binary_cross_entropy_with_logits(logits, labels),
    }[problem_type]()
    torch.testing.assert_close(out.loss, expected)


def test_a_replacement_mlm_decoder_with_a_bias_brings_its_bias():
    model, inputs, _, _ = make_case("bert:ForMaskedLM")
    decoder = nn.Linear(model.config.hidden_size, V + 5)
    model.set_output_embeddings(decoder)
    assert model.cls.predictions.bias is not None and model.cls.predictions.bias.shape == (V + 5,)
    assert decoder.bias is None  # one output bias, the head's
    with torch.no_grad():
        assert model(**inputs).logits.shape == (B, T, V + 5)


# A static cache (generate(cache_implementation="static")) is supported since issue 43: the masks are built by
# transformers' create_causal_mask, sized to the cache; tests/test_transformers_tools.py checks it generates what the
# dynamic cache does.


# --------------------------------------------------------------------------- configs as transformers' testers build them


def config_as_testers_build_it(family, **extra):
    """A config built the way transformers' model testers build theirs: the class called with sizes and the keys
    their common tests add (``batch_norm_eps`` is not a field of BERT's or GPT's config, and transformers'
    ``BertConfig`` stores it all the same)."""
    sizes = dict(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                 max_position_embeddings=32, initializer_range=0.02, hidden_dropout_prob=0.1,
                 attention_probs_dropout_prob=0.1)
    config_class = LineageBertConfig if family == "bert" else LineageGPTConfig
    return config_class(**sizes, batch_norm_eps=1e-5, not_a_field=3, **extra)


@pytest.mark.parametrize("use_mask", [True, False])
@pytest.mark.parametrize("padding_side", ["left", "right"])
@pytest.mark.parametrize("case", ["bert:ForMaskedLM", "bert:ForCausalLM", "gpt:ForCausalLM"])
def test_configs_with_extra_keys_load_and_eager_matches_sdpa_inference(case, padding_side, use_mask, tmp_path):
    # What transformers' test_eager_matches_sdpa_inference does: its own set_config_for_less_flaky_test (which sets
    # batch_norm_eps, rms_norm_eps, ... on any config), save, load under each implementation, compare.
    from transformers.testing_utils import set_config_for_less_flaky_test

    family, head = case.split(":")
    decoder = dict(is_decoder=True, add_cross_attention=False) if head == "ForCausalLM" else {}
    config = config_as_testers_build_it(family, _attn_implementation="eager", **decoder)
    assert config.batch_norm_eps == 1e-5 and config.not_a_field == 3
    set_config_for_less_flaky_test(config)
    model = getattr(hf_lineage, f"Lineage{'Bert' if family == 'bert' else 'GPT'}{head}")(config).eval()
    model.save_pretrained(tmp_path)
    eager = type(model).from_pretrained(tmp_path, attn_implementation="eager").eval()
    sdpa = type(model).from_pretrained(tmp_path, attn_implementation="sdpa").eval()
    assert eager.config.batch_norm_eps == 1.0 and sdpa.config.not_a_field == 3  # the extra keys round-trip
    input_ids, attention_mask = padded_ids()
    if padding_side == "left":  # the real tokens moved to the end of each row
        order = torch.argsort(attention_mask, dim=1, stable=True)
        input_ids, attention_mask = input_ids.gather(1, order), attention_mask.gather(1, order)
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask if use_mask else None)
    with torch.no_grad():
        e, s = eager(**inputs, output_hidden_states=True), sdpa(**inputs, output_hidden_states=True)
    real = attention_mask.bool() if use_mask else torch.ones_like(attention_mask, dtype=torch.bool)
    # transformers compares the outputs at the real positions (what padding holds is not specified)
    torch.testing.assert_close(e.logits[real], s.logits[real], atol=1e-5, rtol=1e-4)
    for a, b in zip(e.hidden_states, s.hidden_states):
        torch.testing.assert_close(a[real], b[real], atol=1e-5, rtol=1e-4)
