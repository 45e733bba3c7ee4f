"""transformers' tools on the recurrent and static families (NNLM, ELMo, word2vec, svd), as its BERT and GPT-2 give
them: hidden states from every head, torch.export and torch.compile, gradient checkpointing, disk offload — and a
causal LM whose output head was never trained refuses to generate instead of producing random text."""

import importlib
import logging
from pathlib import Path

import pytest
import torch
from torch.export import Dim
from transformers import AutoModel, AutoModelForCausalLM, PreTrainedModel

import hf_lineage
from hf_lineage import LineageElmoConfig, LineageNNLMConfig, LineageSvdConfig, LineageWord2VecConfig
from hf_lineage.models.modeling_lineage_elmo import LineageElmoForPreTraining, LineageElmoModel
from hf_lineage.models.modeling_lineage_nnlm import LineageNNLMForCausalLM, LineageNNLMModel

CHECKPOINTS = Path(hf_lineage.__file__).parent / "checkpoints"
V, B, T = 60, 3, 7
NO_DROPOUT = dict(task_dropout=0.0)
CONFIGS = {
    "nnlm": lambda **kw: LineageNNLMConfig.from_named("tiny", vocab_size=V, embedding_dropout=0.0, hidden_dropout=0.0,
                                                     **NO_DROPOUT, **kw),
    "word2vec": lambda **kw: LineageWord2VecConfig.from_named("tiny", vocab_size=V, **NO_DROPOUT, **kw),
    "svd": lambda **kw: LineageSvdConfig.from_named("tiny", vocab_size=V, **NO_DROPOUT, **kw),
    "elmo": lambda **kw: LineageElmoConfig.from_named("tiny", vocab_size=V, dropout=0.0, **NO_DROPOUT, **kw),
}
PREFIX = {"nnlm": "NNLM", "word2vec": "Word2Vec", "svd": "Svd", "elmo": "Elmo"}
TASK_HEADS = ["ForTokenClassification", "ForSequenceClassification", "ForQuestionAnswering", "ForIntentAndSlots"]


def padded_inputs(family, batch=B, length=T, seed=0):
    """Right-padded ids (rows 1 and 2 shorter), with ELMo's character ids (zeros at padding)."""
    g = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(5, V, (batch, length), generator=g)
    attention_mask = torch.ones_like(input_ids)
    if batch > 1:
        attention_mask[1, length - 2:] = 0
    if batch > 2:
        attention_mask[2, 2:] = 0
    input_ids = input_ids.masked_fill(attention_mask == 0, 0)
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask)
    if family == "elmo":
        chars = torch.randint(1, 200, (batch, length, CONFIGS["elmo"]().max_characters_per_token), generator=g)
        inputs["char_ids"] = chars.masked_fill(attention_mask[..., None] == 0, 0)
    return inputs


def build(family, head, **overrides):
    config = CONFIGS[family](num_labels=3, intent_labels=["a", "b"], **overrides)
    torch.manual_seed(0)
    module = importlib.import_module(f"hf_lineage.models.modeling_lineage_{family}")
    return getattr(module, f"Lineage{PREFIX[family]}{head}")(config).eval()


# --------------------------------------------------------------------------- hidden states


def expected_layers(model, family, head):
    """(number of hidden states, width of each) that the head should return."""
    config = model.config
    if family == "elmo" and head in ("Model", "ForPreTraining"):
        return [config.output_size] * (config.num_lstm_layers + 1)  # token layer, then each biLSTM layer
    if family == "elmo" and head == "ForCausalLM":
        return [config.projection_size] * (config.num_lstm_layers + 1)  # the forward LM's layers
    if family == "nnlm" and head in ("Model", "ForCausalLM"):
        return [config.context_size * config.embedding_size, config.hidden_size]  # x, then tanh(d + H·x)
    if head == "Model":
        return [config.vector_size]  # static vectors: one layer
    return [model.feature_size(), model.encoder.output_size]  # the task model: its features, its encoder


CASES = ([f"{f}:{h}" for f in ("nnlm", "word2vec", "svd", "elmo") for h in ["Model", "ForCausalLM", *TASK_HEADS]]
         + ["elmo:ForPreTraining"])


@pytest.mark.parametrize("case", CASES)
def test_every_head_returns_its_hidden_states_as_transformers_does(case):
    family, head = case.split(":")
    model = build(family, head)
    inputs = padded_inputs(family)
    with torch.no_grad():
        plain = model(**inputs)
        out = model(**inputs, output_hidden_states=True, output_attentions=True)
        as_tuple = model(**inputs, output_hidden_states=True, return_dict=False)
        model.config.output_hidden_states = True
        from_config = model(**inputs)
    if not (family == "elmo" and head == "Model"):  # ELMo's layers are its output: always returned
        assert plain.get("hidden_states") is None
    assert out.get("attentions") is None  # no attention in these families
    widths = expected_layers(model, family, head)
    assert isinstance(out.hidden_states, tuple)
    assert [tuple(h.shape) for h in out.hidden_states] == [(B, T, width) for width in widths]
    for h, again in zip(out.hidden_states, from_config.hidden_states):
        torch.testing.assert_close(h, again)
    # The tuple form holds the same tensors in the dataclass's order (None fields left out).
    assert len(as_tuple) == len(out.to_tuple())
    for a, b in zip(as_tuple, out.to_tuple()):
        for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
            if torch.is_tensor(x):  # (ELMo's LM returns its LSTM state as a cache object too)
                torch.testing.assert_close(x, y)
    hidden = out.hidden_states
    # The layers are the ones the head computes with, not just tensors of the right shape.
    if head in ("ForTokenClassification",):
        torch.testing.assert_close(model.classifier(hidden[-1]), out.logits)
    elif head in TASK_HEADS or (head == "ForCausalLM" and family in ("word2vec", "svd")):
        features, _ = model._encode(inputs["input_ids"], inputs["attention_mask"], {}, inputs.get("char_ids"))
        torch.testing.assert_close(hidden[0], features)
        if head == "ForCausalLM":
            torch.testing.assert_close(model.lm_head(hidden[-1]), out.logits)
    elif family == "nnlm":
        torch.testing.assert_close(hidden[0], (out.context_features if head == "Model" else hidden[0]))
        if head == "ForCausalLM":
            torch.testing.assert_close(model.lm_head(torch.cat([hidden[1], hidden[0]], -1)), out.logits)
        else:
            torch.testing.assert_close(hidden[-1], out.last_hidden_state)
    elif family == "elmo" and head != "Model":
        elmo_layers = model.elmo(**inputs).hidden_states  # the base model's layers, [forward; backward]
        P = model.config.projection_size
        for mine, base in zip(hidden, elmo_layers):
            torch.testing.assert_close(mine, base if head == "ForPreTraining" else base[..., :P])
    elif head == "Model":
        torch.testing.assert_close(hidden[-1], out.last_hidden_state)


def test_a_sentence_pairs_hidden_states_hold_each_sentence_encoded_alone():
    model = build("word2vec", "ForSequenceClassification")
    input_ids = torch.randint(5, V, (2, 7), generator=torch.Generator().manual_seed(0))
    token_type_ids = torch.tensor([[0, 0, 0, 1, 1, 1, 1]] * 2)
    with torch.no_grad():
        pair = model(input_ids, token_type_ids=token_type_ids, output_hidden_states=True).hidden_states[-1]
        first = model(input_ids[:, :3], output_hidden_states=True).hidden_states[-1]
        second = model(input_ids[:, 3:], output_hidden_states=True).hidden_states[-1]
    torch.testing.assert_close(pair, torch.cat([first, second], dim=1))


def test_nnlm_hidden_states_cover_every_position_whatever_the_logits_keep():
    model = build("nnlm", "ForCausalLM")
    inputs = padded_inputs("nnlm")
    full = model(**inputs, output_hidden_states=True)
    last = model(**inputs, output_hidden_states=True, logits_to_keep=1)
    assert last.logits.shape == (B, 1, V)
    torch.testing.assert_close(last.logits, full.logits[:, -1:])
    for a, b in zip(last.hidden_states, full.hidden_states):
        torch.testing.assert_close(a, b)
    labels = inputs["input_ids"].masked_fill(inputs["attention_mask"] == 0, -100)
    sparse = model(**inputs, labels=labels, sparse_logits=True, output_hidden_states=True)
    dense = model(**inputs, labels=labels)
    torch.testing.assert_close(sparse.loss, dense.loss)
    assert sparse.hidden_states[0].shape == (B, T, model.config.context_size * model.config.embedding_size)


@pytest.mark.parametrize("family", ["nnlm", "word2vec", "elmo"])
def test_return_dict_in_generate_gives_each_steps_hidden_states(family):
    model = build(family, "ForCausalLM")
    if family == "elmo":  # ELMo reads generated word ids through their characters
        chars = torch.randint(1, 200, (V, model.config.max_characters_per_token), generator=torch.Generator())
        model.set_vocabulary_characters(chars.to(torch.int16))
    out = model.generate(torch.tensor([[5, 6, 7], [8, 9, 10]]), max_new_tokens=3, do_sample=False, pad_token_id=0,
                         return_dict_in_generate=True, output_hidden_states=True)
    widths = expected_layers(model, family, "ForCausalLM")
    assert len(out.hidden_states) == 3  # one tuple of layers per generated token
    for step in out.hidden_states:
        assert [h.shape[-1] for h in step] == widths and all(h.shape[0] == 2 for h in step)


# --------------------------------------------------------------------------- untrained output heads


@pytest.mark.parametrize("family", ["word2vec", "svd"])
def test_a_causal_lm_head_never_trained_warns_and_refuses_to_generate(family, caplog, tmp_path):
    folder = CHECKPOINTS / family  # a pre-training checkpoint: vectors, no language-model head
    with caplog.at_level(logging.WARNING, logger="hf_lineage"):  # a recipe run earlier may have set its level
        model = AutoModelForCausalLM.from_pretrained(folder)
    assert "never been trained" in caplog.text and "Fine-tune" in caplog.text
    assert model.config.output_head_trained is False
    prompt = torch.tensor([[5, 6, 7]])
    with pytest.raises(ValueError, match="never been trained"):
        model.generate(prompt, max_new_tokens=2)
    # Saved before training, it still refuses when loaded again: the flag travels in config.json.
    model.save_pretrained(tmp_path / "untrained")
    again = AutoModelForCausalLM.from_pretrained(tmp_path / "untrained")
    with pytest.raises(ValueError, match="never been trained"):
        again.generate(prompt, max_new_tokens=2)
    # One training step on text marks the head trained; saved, it loads with no warning and generates.
    model.train()
    model(prompt, labels=prompt).loss.backward()
    assert model.config.output_head_trained is True
    model.save_pretrained(tmp_path / "trained")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="hf_lineage"):  # a recipe run earlier may have set its level
        trained = AutoModelForCausalLM.from_pretrained(tmp_path / "trained").eval()
    assert "never been trained" not in caplog.text
    assert trained.generate(prompt, max_new_tokens=2, do_sample=False).shape == (1, 5)


def test_a_user_may_opt_in_to_generate_from_an_untrained_head():
    model = AutoModelForCausalLM.from_pretrained(CHECKPOINTS / "word2vec")
    model.config.output_head_trained = True
    assert model.generate(torch.tensor([[5, 6, 7]]), max_new_tokens=2, do_sample=False).shape == (1, 5)


def test_a_causal_lm_built_from_a_config_generates_as_before():
    # Built in code (a test, a from-scratch baseline), nothing says the head is untrained: no refusal.
    model = build("word2vec", "ForCausalLM")
    assert getattr(model.config, "output_head_trained", None) is None
    assert model.generate(torch.tensor([[5, 6]]), max_new_tokens=2, do_sample=False, pad_token_id=0).shape == (1, 4)


# --------------------------------------------------------------------------- torch.export and torch.compile


def test_nnlm_exports_with_dynamic_batch_and_length_and_compiles_without_graph_breaks():
    model = LineageNNLMModel(CONFIGS["nnlm"]()).eval()
    inputs = padded_inputs("nnlm")
    batch, length = Dim("batch", min=1), Dim("length", min=1)
    exported = torch.export.export(model, (), inputs, dynamic_shapes={
        "input_ids": {0: batch, 1: length}, "attention_mask": {0: batch, 1: length}})
    for shape in [(B, T), (2, 4), (1, 1)]:  # other batch sizes and lengths, one shorter than the context
        other = padded_inputs("nnlm", *shape, seed=1)
        torch.testing.assert_close(exported.module()(**other).last_hidden_state, model(**other).last_hidden_state)
    compiled = torch.compile(model, fullgraph=True, backend="eager")  # fullgraph: a graph break would raise
    with torch.no_grad():
        torch.testing.assert_close(compiled(**inputs).context_features, model(**inputs).context_features)


def test_elmo_exports_on_a_padded_batch_with_a_dynamic_batch_size():
    # The length is static: the LSTMs' time loop is unrolled in the graph (our clipped cell's loop, and aten.lstm's
    # decomposition likewise). The tiny config clips, as the published models do.
    model = LineageElmoModel(CONFIGS["elmo"]()).eval()
    assert model.config.cell_clip is not None
    inputs = padded_inputs("elmo")
    batch = Dim("batch", min=1)
    exported = torch.export.export(model, (), inputs, dynamic_shapes={name: {0: batch} for name in inputs})
    for size in (B, 5):
        other = padded_inputs("elmo", batch=size, seed=size)
        got, want = exported.module()(**other), model(**other)
        for a, b in zip(got.hidden_states, want.hidden_states):
            torch.testing.assert_close(a, b)
        torch.testing.assert_close(got.elmo_representations[0], want.elmo_representations[0])


def test_elmo_compiles_without_graph_breaks():
    model = LineageElmoModel(CONFIGS["elmo"]()).eval()
    inputs = padded_inputs("elmo")
    # Dynamo leaves nn.LSTM modules out of its graphs unless allow_rnn: ELMo's layers are nn.LSTMs.
    with torch._dynamo.config.patch(allow_rnn=True):
        compiled = torch.compile(model, fullgraph=True, backend="eager")
        torch.testing.assert_close(compiled(**inputs).last_hidden_state, model(**inputs).last_hidden_state)


# --------------------------------------------------------------------------- gradient checkpointing

NEW_NAMES = hasattr(PreTrainedModel, "activation_checkpointing_enable")


def enable_checkpointing(model, kwargs=None):
    if NEW_NAMES:
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


@pytest.mark.parametrize("reentrant", [True, False])
def test_elmo_checkpoints_its_character_cnn_and_lstm_layers_with_the_same_gradients(reentrant):
    config = CONFIGS["elmo"]()
    torch.manual_seed(0)
    reference, model = LineageElmoForPreTraining(config), LineageElmoForPreTraining(config)
    model.load_state_dict(reference.state_dict())
    assert model.supports_gradient_checkpointing
    enable_checkpointing(model, {"use_reentrant": reentrant})
    bilm = model.elmo.bilm
    assert bilm.gradient_checkpointing
    calls = []
    inner = bilm._gradient_checkpointing_func
    bilm._gradient_checkpointing_func = lambda *a, **k: calls.append(1) or inner(*a, **k)
    inputs = padded_inputs("elmo")
    labels = inputs["input_ids"].masked_fill(inputs["attention_mask"] == 0, -100)
    for m in (reference, model):
        m.train()
        m(**inputs, labels=labels).loss.backward()
    assert len(calls) == 1 + 2 * config.num_lstm_layers  # the character CNN, every layer of both directions
    for (name, a), b in zip(reference.named_parameters(), model.parameters()):
        if a.grad is not None:
            torch.testing.assert_close(b.grad, a.grad, atol=1e-6, rtol=1e-5, msg=name)


@pytest.mark.parametrize("family", ["nnlm", "word2vec", "svd"])
def test_families_with_no_layers_to_checkpoint_say_so(family):
    # NNLM has one tanh layer (its activations are no larger than its input); static vectors have none.
    model = build(family, "ForCausalLM")
    assert not model.supports_gradient_checkpointing
    with pytest.raises(ValueError, match="does not support (gradient|activation) checkpointing"):
        enable_checkpointing(model)


# --------------------------------------------------------------------------- disk offload


@pytest.mark.parametrize("family", ["nnlm", "elmo"])
def test_disk_offload_gives_the_outputs_of_a_plain_load(family, tmp_path):
    model = LineageNNLMForCausalLM(CONFIGS["nnlm"]()) if family == "nnlm" else LineageElmoModel(CONFIGS["elmo"]())
    auto = AutoModelForCausalLM if family == "nnlm" else AutoModel
    model.save_pretrained(tmp_path / "model")
    plain = auto.from_pretrained(tmp_path / "model").eval()
    # A split of CPU and disk (accelerate's hooks bring each disk module's weights in for its forward). An explicit
    # map: under device_map="auto" the biLM is one unsplittable module, and accelerate 1.9 refuses a model that
    # would go to disk whole.
    split = ({"nnlm.word_embeddings": "cpu", "nnlm.hidden": "disk", "lm_head": "disk"} if family == "nnlm" else
             {"bilm.char_encoder": "cpu", "bilm.forward_layers": "disk", "bilm.backward_layers": "disk",
              "scalar_mixes": "cpu"})
    inputs = padded_inputs(family)
    loaded = auto.from_pretrained(tmp_path / "model", device_map=split, offload_folder=str(tmp_path / "offload"))
    assert set(loaded.hf_device_map.values()) == {"cpu", "disk"}
    key = "logits" if family == "nnlm" else "last_hidden_state"
    torch.testing.assert_close(loaded.eval()(**inputs)[key], plain(**inputs)[key])
