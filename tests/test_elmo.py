"""Lineage ELMo: config, the character tokenizer, the LSTM with projection and clipping against a naive cell loop,
the biLM and its scalar mixes, the language models and generation, AllenNLP weight import against an independent
numpy reference and AllenNLP's published outputs (stateful, batch after batch), freezing and the downstream
features, polysemy, pre-training through the engine, Hub loading."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import transformers
from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer, DataCollatorWithPadding

import hf_lineage
from hf_lineage import (
    LineageElmoConfig,
    LineageElmoForCausalLM,
    LineageElmoForPreTraining,
    LineageElmoModel,
    LineageElmoTokenizer,
    LineageElmoTokenizerFast,
)
from hf_lineage.models import modeling_lineage_elmo
from hf_lineage.models.modeling_lineage_elmo import LineageElmoLSTMLayer, LineageElmoScalarMix, reverse_padded

from conftest import REPO, run_without_hf_lineage

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "to", "park", "river", "bank", "money"]
VOCAB = ["<pad>", "<UNK>", "<S>", "</S>", *WORDS]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tokenizer():
    return LineageElmoTokenizer(vocab=VOCAB)


def tiny(**overrides):
    return LineageElmoConfig.from_named("tiny", **{"vocab_size": len(VOCAB), "dropout": 0.0,
                                                   "scalar_mix_dropout": 0.0, **overrides})


def batch(tokenizer, sentences=("the cat sat on the mat", "a dog ran", "the zebra ran to the park")):
    return tokenizer(list(sentences), padding=True, return_tensors="pt")


def lm_labels(encoding):
    return encoding["input_ids"].masked_fill(encoding["attention_mask"] == 0, -100)


# --------------------------------------------------------------------------- registration and config


def test_every_auto_class_builds_its_lineage_class(tokenizer, tmp_path):
    config = AutoConfig.for_model("lineage-elmo", **LineageElmoConfig.named_sizes["tiny"], vocab_size=20)
    assert isinstance(config, LineageElmoConfig) and "elmo" in hf_lineage.FAMILIES
    for auto_name, class_name in modeling_lineage_elmo.AUTO_CLASSES.items():
        assert type(getattr(transformers, auto_name).from_config(config)).__name__ == class_name
    tokenizer.save_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(config.to_json_string())
    assert isinstance(AutoTokenizer.from_pretrained(tmp_path), LineageElmoTokenizerFast)  # the fast twin


def test_named_sizes_match_the_published_models():
    filters = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]
    expected = {"small": (1024, 128, 1), "medium": (2048, 256, 1), "original": (4096, 512, 2)}
    for name, (cells, projection, highways) in expected.items():
        c = LineageElmoConfig.from_named(name)
        assert (c.lstm_cell_size, c.projection_size, c.n_highway) == (cells, projection, highways)
        assert (c.char_cnn_filters, c.char_embedding_size, c.max_characters_per_token) == (filters, 16, 50)
        assert (c.num_lstm_layers, c.cell_clip, c.proj_clip, c.use_skip_connections) == (2, 3.0, 3.0, True)
        assert c.freeze_bilm and c.output_size == 2 * projection
    assert LineageElmoConfig.from_named("tiny").lstm_cell_size == 64
    # The published small model has 13.6M parameters without the softmax (AllenNLP's model table).
    small = LineageElmoModel(LineageElmoConfig.from_named("small", vocab_size=10))
    assert abs(sum(p.numel() for p in small.bilm.parameters()) / 1e6 - 13.6) < 0.1


@pytest.mark.parametrize("kwargs, message", [
    (dict(projection_size=128, lstm_cell_size=64), "projection_size"),
    (dict(char_cnn_filters=[[3]]), "char_cnn_filters"),
    (dict(char_cnn_filters=[[60, 4]]), "max_characters_per_token"),
    (dict(cell_clip=0), "cell_clip"),
    (dict(softmax_type="hierarchical"), "softmax_type"),
    (dict(softmax_type="adaptive", adaptive_cutoffs=[5, 3]), "adaptive_cutoffs"),
    (dict(dropout=1.0), "dropout"),
    (dict(task_encoder="gru"), "task_encoder"),
    (dict(tie_word_embeddings=True), "tie_word_embeddings"),
    (dict(n_characters=100), "n_characters"),
    (dict(char_cnn_activation="gelu"), "char_cnn_activation"),
])
def test_invalid_config_raises_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tiny(**kwargs)
    with pytest.raises(ValueError, match="Unknown lineage-elmo size"):
        LineageElmoConfig.from_named("large")


# --------------------------------------------------------------------------- tokenizer


def spelled(word, cap=50):
    """AllenNLP's ELMoCharacterMapper, written out: [bow, bytes..., eow, pad...] + 1."""
    body = list(word.encode("utf-8"))[: cap - 2]
    ids = [258] + body + [259] + [260] * (cap - len(body) - 2)
    return [i + 1 for i in ids]


def test_tokenizer_gives_word_ids_and_allennlp_character_ids(tokenizer):
    enc = tokenizer("the zebra sat")
    assert enc["input_ids"] == [2, VOCAB.index("the"), 1, VOCAB.index("sat"), 3]  # <S> the <UNK> sat </S>
    sentence_start = [259, 257, 260] + [261] * 47  # <S>: bow, 256, eow, padding, all + 1
    sentence_end = [259, 258, 260] + [261] * 47
    assert enc["char_ids"] == [sentence_start, spelled("the"), spelled("zebra"), spelled("sat"), sentence_end]
    assert tokenizer("naïve")["char_ids"][1][:8] == [259, 111, 98, 196, 176, 119, 102, 260]  # UTF-8 bytes + 1
    # Words longer than the cap keep their first 48 bytes between the word markers; the word id is unaffected.
    long_word = "x" * 80
    row = tokenizer(long_word)["char_ids"][1]
    assert row == spelled(long_word) and row[0] == 259 and row[49] == 260 and row.count(ord("x") + 1) == 48
    assert tokenizer("x" * 48)["char_ids"][1] == row  # what the CNN sees of the long word
    assert tokenizer("the cat", add_special_tokens=False)["input_ids"] == [4, 5]


def test_tokenizer_batches_pads_and_collates(tokenizer):
    enc = batch(tokenizer)
    assert enc["input_ids"].shape == (3, 8) and enc["char_ids"].shape == (3, 8, 50)
    assert enc["attention_mask"][1].tolist() == [1] * 5 + [0] * 3
    assert (enc["char_ids"][1, 5:] == 0).all() and (enc["input_ids"][1, 5:] == 0).all()
    single = tokenizer("a dog ran", return_tensors="pt")
    assert torch.equal(enc["char_ids"][1, :5], single["char_ids"][0])
    collated = DataCollatorWithPadding(tokenizer)([tokenizer("a dog"), tokenizer("the cat sat on the mat")])
    assert collated["char_ids"].shape == (2, 8, 50) and collated["attention_mask"].sum().item() == 12
    assert (collated["char_ids"][0, 4:] == 0).all()
    pair = tokenizer("the cat", "a dog ran", return_token_type_ids=True)
    assert pair["token_type_ids"] == [0] * 4 + [1] * 5 and len(pair["char_ids"]) == 9
    truncated = tokenizer("the cat sat on the mat", truncation=True, max_length=4)
    assert truncated["input_ids"] == [2, 4, 5, 3] and len(truncated["char_ids"]) == 4
    assert truncated["char_ids"][2] == spelled("cat")
    words = tokenizer([["the", "cat"], ["a"]], is_split_into_words=True, padding=True)
    assert words["input_ids"] == [[2, 4, 5, 3], [2, 9, 3, 0]]
    empty = tokenizer("")
    assert empty["input_ids"] == [2, 3]  # an empty sentence is just its markers


def test_tokenizer_round_trips_through_auto_tokenizer(tokenizer, tmp_path):
    tokenizer.save_pretrained(tmp_path)
    config = tiny()
    config.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert type(loaded) is LineageElmoTokenizerFast and loaded.get_vocab() == tokenizer.get_vocab()
    for key in ("input_ids", "char_ids", "attention_mask"):
        assert torch.equal(batch(loaded)[key], batch(tokenizer)[key])
    assert (tmp_path / "tokenization_lineage_elmo.py").is_file()  # travels for trust_remote_code
    auto_map = json.loads((tmp_path / "tokenizer_config.json").read_text())["auto_map"]
    assert auto_map["AutoTokenizer"][0] == "tokenization_lineage_elmo.LineageElmoTokenizer"


def test_tokenizer_rejects_bad_vocabularies(tmp_path):
    with pytest.raises(ValueError, match="twice"):
        LineageElmoTokenizer(vocab=["a", "a"])
    with pytest.raises(ValueError, match="exactly one"):
        LineageElmoTokenizer()
    with pytest.raises(ValueError, match="whitespace"):
        LineageElmoTokenizer(vocab=["a b"])


def test_tokenizer_can_mark_only_the_end_of_sentences(tmp_path):
    tok = LineageElmoTokenizer(vocab=VOCAB, mark_sentence_start=False)
    the, cat, dog, eos = tok.convert_tokens_to_ids(["the", "cat", "dog", "</S>"])
    enc = tok("the cat", "dog", return_special_tokens_mask=True, return_token_type_ids=True)
    assert enc["input_ids"] == [the, cat, eos, dog, eos]
    assert enc["special_tokens_mask"] == [0, 0, 1, 0, 1] and enc["token_type_ids"] == [0, 0, 0, 1, 1]
    assert len(enc["char_ids"]) == 5 and enc["char_ids"][2] == tok.char_ids_of("</S>")
    assert tok(["the cat dog"], truncation=True, max_length=3)["input_ids"] == [[the, cat, eos]]
    tok.save_pretrained(tmp_path)  # the setting travels with the tokenizer
    assert AutoTokenizer.from_pretrained(tmp_path)(["the cat"])["input_ids"] == [[the, cat, eos]]


def test_a_vocabulary_without_unk_gets_it_appended_and_unknown_words_take_its_id(tmp_path):
    tok = LineageElmoTokenizer(vocab=["<S>", "</S>", "the", "cat"])  # no <UNK>, no <pad>: both appended
    assert (tok.unk_token_id, tok.pad_token_id) == (4, 5)
    enc = tok(["the zebra", "cat"], padding=True, return_tensors="pt")  # used to give None ids and crash here
    assert enc["input_ids"].tolist() == [[0, 2, 4, 1], [0, 3, 1, 5]]
    assert enc["char_ids"][0, 2].tolist() == tok.char_ids_of("zebra")  # the unknown word keeps its characters
    tok.save_pretrained(tmp_path)
    assert AutoTokenizer.from_pretrained(tmp_path)(["zebra"])["input_ids"] == [[0, 4, 1]]
    strict = LineageElmoTokenizer(vocab=["<S>", "</S>", "the"], unk_token=None)
    assert strict(["the"])["input_ids"] == [[0, 2, 1]]
    with pytest.raises(ValueError, match="'zebra' is not in the vocabulary.*unk_token=None"):
        strict(["the zebra"])


# --------------------------------------------------------------------------- LSTM with projection and clipping


def naive_lstm(x, W_ih, W_hh, b, W_hr, cell_clip, proj_clip):
    """One sequence, one step at a time, TensorFlow LSTMCell(num_proj, cell_clip, proj_clip) with PyTorch's gate
    order (i, f, g, o). Returns the outputs and how many cell / output values hit the clip."""
    T, C = x.shape[0], W_hh.shape[0] // 4
    h, c = np.zeros(W_hr.shape[0]), np.zeros(C)
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    out, clipped = [], [0, 0]
    for t in range(T):
        z = W_ih @ x[t] + W_hh @ h + b
        i, f, g, o = sig(z[:C]), sig(z[C : 2 * C]), np.tanh(z[2 * C : 3 * C]), sig(z[3 * C :])
        c = f * c + i * g
        if cell_clip is not None:
            clipped[0] += int((np.abs(c) > cell_clip).sum())
            c = np.clip(c, -cell_clip, cell_clip)
        h = W_hr @ (o * np.tanh(c))
        if proj_clip is not None:
            clipped[1] += int((np.abs(h) > proj_clip).sum())
            h = np.clip(h, -proj_clip, proj_clip)
        out.append(h)
    return np.stack(out), clipped


def lstm_layer(cell_clip, proj_clip, scale=1.0):
    config = tiny(lstm_cell_size=12, projection_size=5, cell_clip=cell_clip, proj_clip=proj_clip)
    layer = LineageElmoLSTMLayer(7, config).double()
    with torch.no_grad():
        for p in layer.parameters():
            p.normal_(0, scale)
    return layer


def test_lstm_with_projection_and_clipping_equals_a_naive_cell_loop():
    layer = lstm_layer(cell_clip=0.8, proj_clip=0.5)
    x = torch.randn(3, 9, 7, dtype=torch.float64)
    out, (h, c) = layer(x)
    assert not layer.fused
    total_clipped = [0, 0]
    for b in range(3):
        expected, clipped = naive_lstm(x[b].numpy(), layer.weight_ih_l0.detach().numpy(),
                                       layer.weight_hh_l0.detach().numpy(),
                                       (layer.bias_ih_l0 + layer.bias_hh_l0).detach().numpy(),
                                       layer.weight_hr_l0.detach().numpy(), 0.8, 0.5)
        np.testing.assert_allclose(out[b].detach().numpy(), expected, atol=1e-10)
        total_clipped = [a + b_ for a, b_ in zip(total_clipped, clipped)]
    assert total_clipped[0] > 10 and total_clipped[1] > 10  # both clips were exercised
    assert torch.equal(h, out[:, -1])


def test_fused_lstm_equals_the_explicit_loop_without_clipping():
    layer = lstm_layer(cell_clip=None, proj_clip=None, scale=0.3)
    assert layer.fused
    x = torch.randn(4, 11, 7, dtype=torch.float64, requires_grad=True)
    state = (torch.randn(4, 5, dtype=torch.float64), torch.randn(4, 12, dtype=torch.float64))
    fused, (h1, c1) = layer(x, state)
    loop, (h2, c2) = layer.clipped_loop(x, state)
    torch.testing.assert_close(fused, loop, atol=1e-12, rtol=0)
    torch.testing.assert_close(c1, c2, atol=1e-12, rtol=0)
    g1 = torch.autograd.grad(fused.sum(), [x, layer.weight_hr_l0])
    g2 = torch.autograd.grad(loop.sum(), [x, layer.weight_hr_l0])
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)
    expected, _ = naive_lstm(x[0].detach().numpy(), layer.weight_ih_l0.detach().numpy(),
                             layer.weight_hh_l0.detach().numpy(),
                             (layer.bias_ih_l0 + layer.bias_hh_l0).detach().numpy(), layer.weight_hr_l0.detach().numpy(),
                             None, None)
    np.testing.assert_allclose(layer(x[:1])[0][0].detach().numpy(), expected, atol=1e-10)


def test_reverse_padded_reverses_each_row_within_its_length():
    x = torch.arange(12).view(2, 6)
    out = reverse_padded(x, torch.tensor([6, 4]))
    assert out.tolist() == [[5, 4, 3, 2, 1, 0], [9, 8, 7, 6, 10, 11]]
    assert torch.equal(reverse_padded(out, torch.tensor([6, 4])), x)


# --------------------------------------------------------------------------- scalar mix and the model


def test_scalar_mix_is_gamma_times_softmax_weighted_sum():
    mix = LineageElmoScalarMix(3, do_layer_norm=False)
    with torch.no_grad():
        mix.scalar_parameters.copy_(torch.tensor([0.5, -1.0, 2.0]))
        mix.gamma.fill_(1.7)
    layers = [torch.randn(2, 4, 6) for _ in range(3)]
    s = torch.exp(torch.tensor([0.5, -1.0, 2.0]))
    s = s / s.sum()
    torch.testing.assert_close(mix(layers), 1.7 * (s[0] * layers[0] + s[1] * layers[1] + s[2] * layers[2]))
    normed = LineageElmoScalarMix(3, do_layer_norm=True)
    expected = sum((x - x.mean(-1, keepdim=True)) / x.std(-1, unbiased=False, keepdim=True) for x in layers) / 3
    torch.testing.assert_close(normed(layers), expected, atol=1e-5, rtol=0)
    (mix(layers).sum()).backward()
    assert mix.scalar_parameters.grad.abs().sum() > 0 and mix.gamma.grad is not None


def test_model_returns_all_layers_and_mixes_and_ignores_padding(tokenizer):
    model = LineageElmoModel(tiny(num_output_representations=2)).eval()
    enc = batch(tokenizer)
    out = model(**enc)
    P = model.config.projection_size
    assert len(out.hidden_states) == 3 and all(h.shape == (3, 8, 2 * P) for h in out.hidden_states)
    token_layer = out.hidden_states[0]
    assert torch.equal(token_layer[..., :P], token_layer[..., P:])  # duplicated to the biLSTM's width
    assert torch.equal(out.last_hidden_state, out.hidden_states[-1])
    assert len(out.elmo_representations) == 2
    torch.testing.assert_close(out.elmo_representations[0], sum(out.hidden_states) / 3)  # equal weights, γ = 1
    assert (out.hidden_states[2][1, 5:] == 0).all()  # padding is zero
    alone = model(**tokenizer(["a dog ran"], return_tensors="pt"))
    for layer_alone, layer_batched in zip(alone.hidden_states, out.hidden_states):
        torch.testing.assert_close(layer_alone[0], layer_batched[1, :5], atol=1e-6, rtol=0)
    # Without attention_mask, padding is recognised by its all-zero characters.
    no_mask = model(input_ids=enc["input_ids"], char_ids=enc["char_ids"])
    torch.testing.assert_close(no_mask.hidden_states[2], out.hidden_states[2])


def test_each_direction_reads_only_its_side_of_the_sentence(tokenizer):
    model = LineageElmoModel(tiny()).eval()
    P = model.config.projection_size
    a = model(**tokenizer(["the cat sat on the mat"], return_tensors="pt")).hidden_states
    c = model(**tokenizer(["the cat sat on the park"], return_tensors="pt")).hidden_states  # only word 6 differs
    for layer in (1, 2):
        torch.testing.assert_close(a[layer][0, :6, :P], c[layer][0, :6, :P], atol=0, rtol=0)  # forward: before it
        assert not torch.allclose(a[layer][0, 5, P:], c[layer][0, 5, P:])  # backward: sees it
    d = model(**tokenizer(["a cat sat on the mat"], return_tensors="pt")).hidden_states  # only word 1 differs
    for layer in (1, 2):
        torch.testing.assert_close(a[layer][0, 2:, P:], d[layer][0, 2:, P:], atol=0, rtol=0)  # backward: after it
        assert not torch.allclose(a[layer][0, 2, :P], d[layer][0, 2, :P])


# --------------------------------------------------------------------------- language models


def test_pretraining_loss_is_forward_plus_backward_next_word_cross_entropy(tokenizer):
    model = LineageElmoForPreTraining(tiny())
    enc = batch(tokenizer)
    labels = lm_labels(enc)
    model.eval()
    out = model(**enc, labels=labels)
    V = len(VOCAB)
    expected_forward = F.cross_entropy(out.logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1), ignore_index=-100)
    backward_labels = labels[:, :-1].masked_fill(enc["attention_mask"][:, 1:] == 0, -100)  # padding predicts nothing
    expected_backward = F.cross_entropy(out.backward_logits[:, 1:].reshape(-1, V), backward_labels.reshape(-1),
                                        ignore_index=-100)
    torch.testing.assert_close(out.forward_loss, expected_forward)
    torch.testing.assert_close(out.backward_loss, expected_backward)
    torch.testing.assert_close(out.loss, expected_forward + expected_backward)
    # num_items_in_batch (from the engine or Trainer): the sums divided by it.
    n = int((labels[:, 1:] != -100).sum())
    halved = model(**enc, labels=labels, num_items_in_batch=torch.tensor(2 * n))
    torch.testing.assert_close(halved.loss, out.loss / 2)
    # In training the (B, T, V) logits are not materialised; the loss is the same without dropout.
    model.train()
    trained = model(**enc, labels=labels)
    assert trained.logits is None and trained.backward_logits is None
    torch.testing.assert_close(trained.loss, out.loss)
    trained.loss.backward()
    assert model.elmo.bilm.char_encoder.convs[0].weight.grad.abs().sum() > 0
    assert model.elmo.scalar_mixes[0].scalar_parameters.grad is None  # the mixes are not part of the LM


def test_causal_lm_is_the_forward_half_and_computes_only_the_forward_stack(tokenizer, monkeypatch):
    pretraining = LineageElmoForPreTraining(tiny()).eval()
    causal = LineageElmoForCausalLM(pretraining.config).eval()
    causal.load_state_dict(pretraining.state_dict())
    enc = batch(tokenizer)
    labels = lm_labels(enc)
    calls = []
    monkeypatch.setattr(LineageElmoLSTMLayer, "clipped_loop", lambda self, *a, **k: _loop(self, calls, *a, **k))
    out = causal(**enc, labels=labels)
    assert set(map(id, calls)) == set(map(id, causal.elmo.bilm.forward_layers))
    torch.testing.assert_close(out.loss, pretraining(**enc, labels=labels).forward_loss)
    torch.testing.assert_close(out.logits, pretraining(**enc).logits)


_original_loop = LineageElmoLSTMLayer.clipped_loop


def _loop(self, calls, *args, **kwargs):
    calls.append(self)
    return _original_loop(self, *args, **kwargs)


@pytest.mark.parametrize("softmax", ["adaptive", "sampled"])
def test_adaptive_and_sampled_softmax(tokenizer, softmax):
    torch.manual_seed(0)
    model = LineageElmoForPreTraining(tiny(softmax_type=softmax, adaptive_cutoffs=[6, 12], num_sampled=5))
    enc = batch(tokenizer)
    labels = lm_labels(enc)
    model.eval()
    out = model(**enc, labels=labels)
    # Evaluation is exact: the logits are log-probabilities (adaptive) or full-softmax scores (sampled).
    V = len(VOCAB)
    expected = F.cross_entropy(out.logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1), ignore_index=-100)
    torch.testing.assert_close(out.forward_loss, expected)
    if softmax == "adaptive":
        torch.testing.assert_close(out.logits.exp().sum(-1), torch.ones(out.logits.shape[:2]))
    model.train()
    losses = [model(**enc, labels=labels).loss for _ in range(3)]
    assert all(torch.isfinite(loss) for loss in losses)
    if softmax == "sampled":
        assert len({round(loss.item(), 6) for loss in losses}) > 1  # fresh negatives every step
    losses[0].backward()
    assert model.softmax.decoder.weight.grad.abs().sum() > 0 if softmax == "sampled" else True


def test_generation_with_the_lstm_state_equals_rereading_the_prefix(tokenizer):
    torch.manual_seed(0)
    model = LineageElmoForCausalLM(tiny()).eval()
    model.set_vocabulary_characters(tokenizer)
    prompt = tokenizer(["<S> the cat"], add_special_tokens=False, return_tensors="pt")
    cached = model.generate(**prompt, max_new_tokens=6, do_sample=False, eos_token_id=None)
    plain = model.generate(**prompt, max_new_tokens=6, do_sample=False, use_cache=False, eos_token_id=None)
    assert torch.equal(cached, plain) and cached.shape == (1, 9)
    # The state carried over a split sequence gives the logits of one pass.
    ids = cached[:, :-1]
    full = model(input_ids=ids).logits
    first = model(input_ids=ids[:, :4], use_cache=True)
    second = model(input_ids=ids[:, 4:], past_key_values=first.past_key_values)
    torch.testing.assert_close(torch.cat([first.logits, second.logits], 1), full, atol=1e-5, rtol=0)
    # Greedy steps are the argmax of the next-word distribution.
    assert cached[0, 3].item() == full[0, 2].argmax().item()
    beams = model.generate(**prompt, max_new_tokens=4, num_beams=3, eos_token_id=None)
    assert beams.shape == (1, 7)


def test_generation_continues_a_tokenized_sentence_instead_of_ending_it(tokenizer):
    """The tokenizer marks a sentence <S> ... </S> (pre-training data keeps both); generate() and the
    text-generation pipeline drop the </S> of such a prompt, so they continue the words, not a new sentence."""
    from hf_lineage.objectives.elmo import DataCollatorForElmo

    torch.manual_seed(0)
    model = LineageElmoForCausalLM(tiny()).eval()
    model.set_vocabulary_characters(tokenizer)
    eos = tokenizer.eos_token_id
    marked = tokenizer(["the cat", "a dog"], return_tensors="pt")
    assert marked["input_ids"][:, -1].tolist() == [eos, eos]  # the tokenizer's default, unchanged
    assert DataCollatorForElmo(tokenizer)([{"words": ["the", "cat"]}])["input_ids"][0, -1] == eos  # pre-training
    bare = tokenizer(["<S> the cat", "<S> a dog"], add_special_tokens=False, return_tensors="pt")
    greedy = dict(max_new_tokens=4, do_sample=False, eos_token_id=None)
    expected = model.generate(**bare, **greedy)
    assert torch.equal(model.generate(**marked, **greedy), expected)
    assert torch.equal(model.generate(marked["input_ids"], **greedy), expected)  # positional inputs too
    # The first new word is the forward LM's guess after "cat", not after "</S>".
    logits = model(**marked).logits
    assert expected[0, 3].item() == logits[0, 2].argmax().item() != logits[0, 3].argmax().item()
    # A prompt that ends in </S> without being a marked sentence is kept: the generation recipes' "source </S>",
    # which the tokenizer they save makes (mark_sentence_start=False) for the text-generation pipeline.
    from hf_lineage.tasks.generation import set_prompt_template

    recipe_tokenizer = LineageElmoTokenizer(vocab=VOCAB)
    set_prompt_template(recipe_tokenizer)
    source = recipe_tokenizer(["the cat"], return_tensors="pt")
    assert source["input_ids"][0].tolist() == [*tokenizer.convert_tokens_to_ids(["the", "cat"]), eos]
    assert model.generate(**source, **greedy)[0, :3].tolist() == source["input_ids"][0].tolist()
    # Through the pipeline, as a user would call it (its own tokenizer: the pipeline sets padding_side="left").
    generator = transformers.pipeline("text-generation", model=model, tokenizer=LineageElmoTokenizer(vocab=VOCAB))
    out = generator("the cat", return_tensors=True, **greedy)[0]["generated_token_ids"]
    assert list(out) == expected[0].tolist()


def test_batched_generation_goes_on_after_one_row_has_ended(tokenizer):
    prompts = tokenizer(["<S> the cat", "<S> a dog"], add_special_tokens=False, return_tensors="pt")
    for seed in range(20):  # an untrained model whose first row says a word the second never does
        torch.manual_seed(seed)
        model = LineageElmoForCausalLM(tiny()).eval()
        model.set_vocabulary_characters(tokenizer)
        free = model.generate(**prompts, max_new_tokens=5, do_sample=False, eos_token_id=None)
        ends = [i for i in range(3, 7) if free[0, i].item() not in free[1, 3:].tolist()
                and free[0, i].item() not in free[0, 3:i].tolist()]
        if ends:
            break
    end = ends[0]
    stop = free[0, end].item()  # this word ends the first row early; the second goes on to max_new_tokens
    batch = model.generate(**prompts, max_new_tokens=5, do_sample=False, eos_token_id=stop, pad_token_id=0)
    alone = model.generate(**tokenizer(["<S> a dog"], add_special_tokens=False, return_tensors="pt"),
                           max_new_tokens=5, do_sample=False, eos_token_id=stop, pad_token_id=0)
    assert batch[0].tolist() == free[0, : end + 1].tolist() + [0] * (7 - end)
    assert torch.equal(batch[1], alone[0]) and torch.equal(batch[1], free[1])


def test_word_ids_alone_read_through_the_character_table(tokenizer):
    model = LineageElmoForPreTraining(tiny()).eval()
    enc = tokenizer(["the cat sat"], return_tensors="pt")
    with pytest.raises(ValueError, match="set_vocabulary_characters"):
        model(input_ids=enc["input_ids"])
    model.set_vocabulary_characters(tokenizer)
    torch.testing.assert_close(model(input_ids=enc["input_ids"]).logits, model(**enc).logits)
    with pytest.raises(ValueError, match="character table has shape"):
        model.set_vocabulary_characters(torch.zeros(3, 50))


# --------------------------------------------------------------------------- AllenNLP / bilm-tf weights


OPTIONS = {
    "lstm": {"dim": 10, "projection_dim": 6, "n_layers": 2, "cell_clip": 1.0, "proj_clip": 0.6,
             "use_skip_connections": True},
    "char_cnn": {"activation": "relu", "embedding": {"dim": 4}, "filters": [[1, 4], [2, 8], [3, 8]], "n_highway": 2,
                 "n_characters": 262, "max_characters_per_token": 50},
}


def write_bilm_tf_weights(path, options, seed=0):
    """An hdf5 file in bilm-tf's dump_weights layout (see hf_lineage.convert.allennlp_elmo), random weights."""
    import h5py

    rng = np.random.default_rng(seed)
    cnn, lstm = options["char_cnn"], options["lstm"]
    E, filters = cnn["embedding"]["dim"], cnn["filters"]
    F_, P, C = sum(n for _, n in filters), lstm["projection_dim"], lstm["dim"]
    arrays = {"char_embed": rng.uniform(-1, 1, (261, E))}
    for i, (w, n) in enumerate(filters):
        arrays[f"CNN/W_cnn_{i}"] = rng.normal(0, 0.5, (1, w, E, n))
        arrays[f"CNN/b_cnn_{i}"] = rng.normal(0, 0.1, (n,))
    for k in range(cnn["n_highway"]):
        for part in ("carry", "transform"):
            arrays[f"CNN_high_{k}/W_{part}"] = rng.normal(0, 0.4, (F_, F_))
            arrays[f"CNN_high_{k}/b_{part}"] = rng.normal(0, 0.1, (F_,))
    arrays["CNN_proj/W_proj"] = rng.normal(0, 0.5, (F_, P))
    arrays["CNN_proj/b_proj"] = rng.normal(0, 0.1, (P,))
    for d in range(2):
        for layer in range(lstm["n_layers"]):
            cell = f"RNN_{d}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
            arrays[cell + "W_0"] = rng.normal(0, 0.6, (P + P, 4 * C))
            arrays[cell + "B"] = rng.normal(0, 0.3, (4 * C,))
            arrays[cell + "W_P_0"] = rng.normal(0, 0.6, (C, P))
    with h5py.File(path, "w") as f:
        for name, value in arrays.items():
            f.create_dataset(name, data=value.astype(np.float32))
    return {k: v.astype(np.float32).astype(np.float64) for k, v in arrays.items()}


def bilm_tf_reference(W, options, char_ids):
    """bilm-tf's forward computation for ONE unpadded sentence, written from its TensorFlow code: (T, 50) character
    ids (+1 shifted) → the token layer and each direction's layer outputs, float64 numpy."""
    cnn, lstm = options["char_cnn"], options["lstm"]
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    emb = W["char_embed"][char_ids - 1]  # (T, 50, E): bilm-tf's ids are ours − 1
    pieces = []
    for i, (w, n) in enumerate(cnn["filters"]):
        K = W[f"CNN/W_cnn_{i}"][0]  # (w, E, n)
        conv = np.stack([sum(emb[:, p + k] @ K[k] for k in range(w)) for p in range(50 - w + 1)], 1)  # (T, pos, n)
        pieces.append(np.maximum(conv.max(axis=1) + W[f"CNN/b_cnn_{i}"], 0))  # max-pool, then relu
    x = np.concatenate(pieces, -1)
    for k in range(cnn["n_highway"]):
        carry = sig(x @ W[f"CNN_high_{k}/W_carry"] + W[f"CNN_high_{k}/b_carry"])
        transform = np.maximum(x @ W[f"CNN_high_{k}/W_transform"] + W[f"CNN_high_{k}/b_transform"], 0)
        x = carry * transform + (1 - carry) * x
    token = x @ W["CNN_proj/W_proj"] + W["CNN_proj/b_proj"]  # (T, P)
    C, P, clips = lstm["dim"], lstm["projection_dim"], [0, 0]
    outputs = {}
    for d, direction in enumerate(("forward", "backward")):
        inputs = token if d == 0 else token[::-1]
        layers = []
        for layer in range(lstm["n_layers"]):
            cell = f"RNN_{d}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
            h, c, out = np.zeros(P), np.zeros(C), []
            for t in range(len(inputs)):
                z = np.concatenate([inputs[t], h]) @ W[cell + "W_0"] + W[cell + "B"]
                i, j, f, o = (z[q * C : (q + 1) * C] for q in range(4))  # TensorFlow's gate order
                c = sig(f + 1.0) * c + sig(i) * np.tanh(j)  # forget_bias = 1.0
                clips[0] += int((np.abs(c) > lstm["cell_clip"]).sum())
                c = np.clip(c, -lstm["cell_clip"], lstm["cell_clip"])
                h = (sig(o) * np.tanh(c)) @ W[cell + "W_P_0"]
                clips[1] += int((np.abs(h) > lstm["proj_clip"]).sum())
                h = np.clip(h, -lstm["proj_clip"], lstm["proj_clip"])
                out.append(h)
            out = np.stack(out)
            if layer > 0:
                out = out + inputs  # ResidualWrapper
            layers.append(out)
            inputs = out
        outputs[direction] = [y if d == 0 else y[::-1] for y in layers]
    return token, outputs, clips


def test_allennlp_weights_load_and_compute_what_bilm_tf_computes(tmp_path, tokenizer):
    from hf_lineage.convert.allennlp_elmo import load_allennlp_elmo

    (tmp_path / "options.json").write_text(json.dumps(OPTIONS))
    W = write_bilm_tf_weights(tmp_path / "weights.hdf5", OPTIONS)
    (tmp_path / "vocab.txt").write_text("\n".join(["<S>", "</S>", "<UNK>", "the", "cat"]) + "\n")  # bilm-tf's vocab
    model, elmo_tokenizer = load_allennlp_elmo(tmp_path / "options.json", tmp_path / "weights.hdf5",
                                               vocab_file=tmp_path / "vocab.txt")
    assert (model.config.lstm_cell_size, model.config.cell_clip, model.config.n_highway) == (10, 1.0, 2)
    assert elmo_tokenizer.convert_tokens_to_ids(["<S>", "</S>", "<UNK>"]) == [0, 1, 2]
    assert elmo_tokenizer.pad_token_id == 5  # bilm-tf vocabularies have no padding word: added at the end
    model = model.double()
    sentences = ["the cat sat on the mat", "a very long sentence here", "ok"]
    enc = elmo_tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        layers = model(**enc).hidden_states
    total_clips = [0, 0]
    P = 6
    for b, sentence in enumerate(sentences):
        n = len(sentence.split()) + 2
        token, outputs, clips = bilm_tf_reference(W, OPTIONS, enc["char_ids"][b, :n].numpy())
        total_clips = [x + y for x, y in zip(total_clips, clips)]
        np.testing.assert_allclose(layers[0][b, :n, :P].numpy(), token, atol=1e-9)
        for k in range(2):
            np.testing.assert_allclose(layers[k + 1][b, :n, :P].numpy(), outputs["forward"][k], atol=1e-6)
            np.testing.assert_allclose(layers[k + 1][b, :n, P:].numpy(), outputs["backward"][k], atol=1e-6)
    assert min(total_clips) > 20  # both clips fire: the comparison covers them
    # (1e-6: the forget bias + 1 is stored in float32, the reference adds it in float64)


def test_allennlp_published_fixtures_match_with_the_state_carried_across_batches():
    """AllenNLP's own ELMo test data (tests/fixtures/allennlp_elmo/README.md): its small biLM, 30 sentences read as
    10 consecutive batches of 3 (batch i holds sentence i of each of the 3 lists, in that order) by a stateful biLM,
    and the top layer AllenNLP computed for each. Every batch must match, not only the first: from the second on,
    row k starts from the states row k of the previous batch ended with, in both directions."""
    import h5py

    from hf_lineage.convert.allennlp_elmo import load_allennlp_elmo

    folder = Path(__file__).parent / "fixtures" / "allennlp_elmo"
    sentences = json.loads((folder / "sentences.json").read_text())
    expected = []  # expected[k][i]: sentence i of list k, (words, 2P) = [forward; backward]
    for k in range(3):
        with h5py.File(folder / f"lm_embeddings_{k}.hdf5", "r") as f:
            expected.append([np.concatenate([f[str(i)][0], f[str(i)][1]], axis=-1) for i in range(10)])
    model = load_allennlp_elmo(folder / "options.json", folder / "lm_weights.hdf5")
    assert model.config.stateful  # AllenNLP's Elmo is
    stateless = load_allennlp_elmo(folder / "options.json", folder / "lm_weights.hdf5", stateful=False)
    tokenizer = LineageElmoTokenizer(vocab=["<S>", "</S>", "<UNK>"])  # only the characters matter here
    worst = []
    for i in range(10):
        rows = [sentences[k][i].split() for k in range(3)]
        enc = tokenizer(rows, is_split_into_words=True, padding=True, return_tensors="pt")
        assert enc["attention_mask"].sum(1).tolist() == [len(r) + 2 for r in rows]  # <S> words </S>
        with torch.no_grad():
            top = model(**enc).hidden_states[-1]
            alone = stateless(**enc).hidden_states[-1]
        # Our outputs keep <S> and </S> (AllenNLP strips them): the words are positions 1 .. n.
        worst.append(max(np.abs(top[k, 1 : len(rows[k]) + 1].numpy() - expected[k][i]).max() for k in range(3)))
        if i > 0:  # starting every batch from zeros is far off: the fixtures do test the carried state
            assert np.abs(alone[0, 1 : len(rows[0]) + 1].numpy() - expected[0][i]).max() > 0.1
    assert max(worst) <= 1e-5, worst
    model.reset_states()
    assert model.lstm_states is None


def concatenated(tokenizer, *sentences):
    """One row of the sentences' ids and characters, each sentence in its own <S> ... </S>."""
    encs = [tokenizer([s], return_tensors="pt") for s in sentences]
    return {key: torch.cat([e[key] for e in encs], dim=1) for key in ("input_ids", "char_ids", "attention_mask")}


@pytest.mark.parametrize("clip", [3.0, None], ids=["clipped-loop", "fused"])
def test_stateful_model_continues_each_row_from_its_last_real_token_in_both_directions(tokenizer, clip):
    torch.manual_seed(0)
    config = tiny(cell_clip=clip, proj_clip=clip, stateful=True)
    model = LineageElmoModel(config).eval()
    stateless = LineageElmoModel(tiny(cell_clip=clip, proj_clip=clip)).eval()
    stateless.load_state_dict(model.state_dict())
    P = config.projection_size
    first = ["the cat sat on the mat", "a dog", "the river bank"]
    second = ["a dog ran", "the cat sat on the bank", ""]  # row 2 has no tokens: it keeps its state
    with torch.no_grad():
        out1 = model(**batch(tokenizer, first))
        enc2 = batch(tokenizer, second[:2])
        enc2 = {k: torch.cat([v, torch.zeros_like(v[:1])]) for k, v in enc2.items()}  # an all-padding third row
        out2 = model(**enc2).hidden_states
        third = model(**batch(tokenizer, ["the dog ran", "money", "a cat"])).hidden_states
        for b in range(2):
            # Forward: the second sentence continues the first; backward: it reads the second sentence right to
            # left, then the first - as if the row were [second; first] read from its end.
            n1, n2 = len(first[b].split()) + 2, len(second[b].split()) + 2
            forward = stateless(**concatenated(tokenizer, first[b], second[b])).hidden_states
            backward = stateless(**concatenated(tokenizer, second[b], first[b])).hidden_states
            for k in (1, 2):
                torch.testing.assert_close(out2[k][b, :n2, :P], forward[k][0, n1:, :P], atol=1e-5, rtol=0)
                torch.testing.assert_close(out2[k][b, :n2, P:], backward[k][0, :n2, P:], atol=1e-5, rtol=0)
        # Row 2 read nothing in the second batch: the third batch continues it from the first.
        n1 = len(first[2].split()) + 2
        forward = stateless(**concatenated(tokenizer, first[2], "a cat")).hidden_states
        torch.testing.assert_close(third[2][2, :4, :P], forward[2][0, n1:, :P], atol=1e-5, rtol=0)
        # The states a padded batch returns are each row's at its last real token: a row read alone agrees.
        for b, sentence in enumerate(first):
            alone = stateless(**batch(tokenizer, [sentence]), return_state=True)
            for name in ("forward_state", "backward_state"):
                for got, want in zip(getattr(out1, name), getattr(alone, name)):
                    torch.testing.assert_close(got[:, b], want[:, 0], atol=1e-6, rtol=0)
        # Explicit states do what the stored ones do, and the model forgets on request.
        explicit = stateless(**enc2, forward_state=out1.forward_state, backward_state=out1.backward_state)
        torch.testing.assert_close(explicit.hidden_states[2][:2], out2[2][:2], atol=1e-6, rtol=0)
        model.reset_states()
        torch.testing.assert_close(model(**enc2).hidden_states[2], stateless(**enc2).hidden_states[2])
        # A smaller batch leaves the rows after it for later batches.
        model.reset_states()
        model(**batch(tokenizer, first))
        model(**batch(tokenizer, ["money"]))
        later = model(**batch(tokenizer, ["a dog", "a dog", "a cat"])).hidden_states
        forward = stateless(**concatenated(tokenizer, first[2], "a cat")).hidden_states
        torch.testing.assert_close(later[2][2, :4, :P], forward[2][0, len(first[2].split()) + 2 :, :P], atol=1e-5,
                                   rtol=0)


def test_stateful_training_does_not_backpropagate_into_earlier_batches(tokenizer):
    model = LineageElmoModel(tiny(stateful=True, freeze_bilm=False)).train()
    for _ in range(2):  # the second backward would run into the first batch's freed graph without the detach
        model(**batch(tokenizer)).elmo_representations[0].sum().backward()
    assert not model.lstm_states["forward"][0].requires_grad
    assert model.bilm.forward_layers[0].weight_hh_l0.grad.abs().sum() > 0


def test_models_are_stateless_by_default_and_refuse_malformed_states(tokenizer):
    model = LineageElmoModel(tiny()).eval()
    enc = batch(tokenizer)
    with torch.no_grad():
        first, again = model(**enc), model(**enc)
    assert first.forward_state is None and model.lstm_states is None
    torch.testing.assert_close(first.hidden_states[2], again.hidden_states[2], atol=0, rtol=0)
    h, c = model(**enc, return_state=True).forward_state
    assert h.shape == (2, 3, 16) and c.shape == (2, 3, 64)
    with pytest.raises(ValueError, match="forward_state must be a tuple"):
        model(**enc, forward_state=(h[:, :2], c[:, :2]))
    with pytest.raises(ValueError, match="backward_state must be a tuple"):
        model(**enc, backward_state=h)
    stateful = LineageElmoModel(tiny(stateful=True)).eval()
    stateful(**enc)
    with pytest.raises(ValueError, match="rows must be"):
        stateful.reset_states(torch.tensor([True]))
    stateful.reset_states(torch.tensor([True, False, False]))
    assert stateful.lstm_states["forward"][0][:, 0].abs().sum() == 0
    assert stateful.lstm_states["forward"][0][:, 1].abs().sum() > 0


def test_allennlp_import_refuses_mismatched_files(tmp_path):
    from hf_lineage.convert.allennlp_elmo import load_allennlp_elmo

    write_bilm_tf_weights(tmp_path / "weights.hdf5", OPTIONS)
    wrong = json.loads(json.dumps(OPTIONS))
    wrong["lstm"]["dim"] = 12
    (tmp_path / "options.json").write_text(json.dumps(wrong))
    with pytest.raises(ValueError, match="does not match options.json"):
        load_allennlp_elmo(tmp_path / "options.json", tmp_path / "weights.hdf5")
    no_skip = json.loads(json.dumps(OPTIONS))
    no_skip["lstm"]["use_skip_connections"] = False
    (tmp_path / "options.json").write_text(json.dumps(no_skip))
    with pytest.raises(ValueError, match="residual"):
        load_allennlp_elmo(tmp_path / "options.json", tmp_path / "weights.hdf5")


# --------------------------------------------------------------------------- initialisation, loading, freezing


def test_initialisation_follows_bilm_tf_and_fills_what_a_checkpoint_lacks(tmp_path):
    config = tiny()
    model = LineageElmoModel(config)
    encoder = model.bilm.char_encoder
    assert (encoder.char_embedding.weight[0] == 0).all() and encoder.char_embedding.weight.abs().max() <= 1
    assert encoder.convs[0].weight.abs().max() <= 0.05
    n = encoder.highways[0].carry.in_features
    assert abs(encoder.highways[0].carry.weight.std().item() - n ** -0.5) < 0.3 * n ** -0.5
    assert (encoder.highways[0].carry.bias == -2).all()
    layer = model.bilm.forward_layers[0]
    C = config.lstm_cell_size
    assert (layer.bias_ih_l0[C : 2 * C] == 1).all() and (layer.bias_hh_l0 == 0).all()
    bound = (6 / (layer.input_size + config.projection_size + 4 * C)) ** 0.5
    assert layer.weight_ih_l0.abs().max() <= bound and layer.weight_ih_l0.std() > 0.4 * bound
    model.save_pretrained(tmp_path)
    # The pre-training model adds a softmax and the character table; loading the base model leaves those to init.
    loaded = LineageElmoForPreTraining.from_pretrained(tmp_path)
    torch.testing.assert_close(loaded.elmo.bilm.forward_layers[1].weight_hh_l0,
                               model.bilm.forward_layers[1].weight_hh_l0)
    decoder = loaded.softmax.decoder
    assert torch.isfinite(decoder.weight).all() and (decoder.bias == 0).all()
    P = config.projection_size
    assert abs(decoder.weight.std().item() - P ** -0.5) < 0.3 * P ** -0.5
    assert (loaded.vocabulary_char_ids == 0).all()


def test_frozen_bilm_trains_only_the_mixes_and_survives_loading(tokenizer, tmp_path):
    model = LineageElmoModel(tiny(dropout=0.5))
    assert not any(p.requires_grad for p in model.bilm.parameters())
    model.train()
    assert not model.bilm.training  # frozen features are deterministic (no biLM dropout)
    enc = batch(tokenizer)
    out = model(**enc)
    out.elmo_representations[0].sum().backward()
    assert model.scalar_mixes[0].gamma.grad is not None
    assert all(p.grad is None for p in model.bilm.parameters())
    model.save_pretrained(tmp_path)
    loaded = AutoModel.from_pretrained(tmp_path)
    assert not any(p.requires_grad for p in loaded.bilm.parameters())
    tuned = LineageElmoModel(tiny(freeze_bilm=False))
    assert all(p.requires_grad for p in tuned.bilm.parameters())
    lm = LineageElmoForPreTraining.from_pretrained(tmp_path)  # pre-training trains the biLM, not the mixes
    assert all(p.requires_grad for p in lm.elmo.bilm.parameters())
    assert not any(p.requires_grad for p in lm.elmo.scalar_mixes.parameters())


# --------------------------------------------------------------------------- downstream features


def test_task_heads_use_one_scalar_mix_and_freeze_the_bilm_by_default(tokenizer, tmp_path):
    from hf_lineage.models.modeling_lineage_elmo import LineageElmoPreTrainedModel, LineageElmoTaskModel
    from hf_lineage.models.modeling_lineage_static import (
        StaticVectorsForSequenceClassification,
        StaticVectorsForTokenClassification,
    )

    class Tagger(LineageElmoTaskModel, StaticVectorsForTokenClassification, LineageElmoPreTrainedModel):
        pass

    class Classifier(LineageElmoTaskModel, StaticVectorsForSequenceClassification, LineageElmoPreTrainedModel):
        pass

    pretrained = LineageElmoForPreTraining(tiny())
    pretrained.save_pretrained(tmp_path)
    tagger = Tagger.from_pretrained(tmp_path, num_labels=3)
    # The pre-trained biLM is loaded under `elmo`, frozen; the mix, the task encoder and the classifier train.
    torch.testing.assert_close(tagger.elmo.bilm.forward_layers[0].weight_ih_l0,
                               pretrained.elmo.bilm.forward_layers[0].weight_ih_l0)
    assert not any(p.requires_grad for p in tagger.elmo.bilm.parameters())
    assert tagger.elmo.scalar_mixes[0].gamma.requires_grad
    enc = batch(tokenizer)
    features = tagger.token_features(enc["input_ids"], enc["attention_mask"].bool(), char_ids=enc["char_ids"])
    layers = tagger.elmo(**enc).hidden_states
    torch.testing.assert_close(features, sum(layers) / 3)  # one scalar mix (equal weights at the start)
    labels = torch.randint(0, 3, enc["input_ids"].shape).masked_fill(enc["attention_mask"] == 0, -100)
    tagger.train()
    out = tagger(**enc, labels=labels)
    out.loss.backward()
    assert out.logits.shape == (3, 8, 3) and tagger.elmo.scalar_mixes[0].scalar_parameters.grad is not None
    assert all(p.grad is None for p in tagger.elmo.bilm.parameters())
    tuned = Classifier.from_pretrained(tmp_path, num_labels=2, freeze_bilm=False)
    assert all(p.requires_grad for p in tuned.elmo.bilm.parameters())
    pair = tokenizer(["the cat sat", "a dog"], ["on the mat", "ran"], padding=True, return_token_type_ids=True,
                     return_tensors="pt")
    out = tuned(**pair, labels=torch.tensor([0, 1]))
    out.loss.backward()
    assert out.logits.shape == (2, 2) and tuned.elmo.bilm.char_encoder.convs[0].weight.grad is not None


# --------------------------------------------------------------------------- polysemy


RIVER = ["river", "boat", "fish", "water", "shore", "canoe", "stream", "mud"]
MONEY = ["money", "cash", "loan", "account", "credit", "deposit", "teller", "savings"]


def sense_sentences(rng, n, template):
    """Sentences whose two content words come from one sense's pool: "the boat bank shore" / "the loan bank cash"."""
    out = []
    for _ in range(n):
        a, b = rng.sample(rng.choice([RIVER, MONEY]), 2)
        out.append(template.format(a=a, b=b))
    return out


def test_polysemy_a_trained_biLM_separates_two_senses_of_bank():
    import random

    from hf_lineage.vectors.contextual import ContextualVectors, similarity_matrix
    from hf_lineage.objectives.elmo import elmo_tokenizer_from_corpus

    rng = random.Random(0)
    # "bank" sits between two words of one sense; other sentences pair words of one sense without it.
    corpus = sense_sentences(rng, 400, "the {a} bank {b}") + sense_sentences(rng, 400, "the {a} and {b}")
    tok = elmo_tokenizer_from_corpus(iterator=corpus)
    config = tiny(vocab_size=len(tok), cell_clip=None, proj_clip=None, lstm_cell_size=32)
    model = LineageElmoForPreTraining(config)
    held_out = random.Random(1)
    queries = [f"the {a} bank {b}" for pool in (RIVER, MONEY) for a, b in (held_out.sample(pool, 2) for _ in range(8))]
    sense = torch.tensor([0] * 8 + [1] * 8)
    same = (sense[:, None] == sense[None]) & ~torch.eye(16, dtype=torch.bool)
    different = sense[:, None] != sense[None]

    def separation(m):
        similarity = similarity_matrix(ContextualVectors(m, tok).word_vectors("bank", queries))
        return similarity[same].mean() - similarity[different].mean(), similarity

    untrained_gap, _ = separation(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(200):
        b = tok([corpus[rng.randrange(len(corpus))] for _ in range(32)], padding=True, return_tensors="pt")
        loss = model(**b, labels=lm_labels(b)).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    gap, similarity = separation(model)
    assert untrained_gap < 0.1 < 0.5 < gap  # training is what separates the senses
    nearest = similarity.fill_diagonal_(-2).argmax(dim=1)
    assert (sense[nearest] == sense).all()  # every occurrence's nearest neighbour has its sense

    cv = ContextualVectors(model, tok)
    neighbours = cv.nearest_neighbours("bank", "the fish bank water", queries, k=3)
    assert len(neighbours) == 3 and all(s.split()[1] in RIVER for s, _ in neighbours)
    assert neighbours[0][1] >= neighbours[1][1] >= neighbours[2][1]
    with pytest.raises(ValueError, match="does not occur"):
        cv.word_vectors("bank", ["the fish and water"])
    with pytest.raises(ValueError, match="exactly once"):
        cv.nearest_neighbours("bank", "the fish and water", queries)
    with pytest.raises(ValueError, match="no words"):
        cv.embed(["the bank", ""])


# --------------------------------------------------------------------------- pre-training through the engine


@pytest.fixture(scope="module")
def sentence_text(tmp_path_factory):
    """One lower-cased sentence per line, as in PTB (which may not be redistributed), cut from the package's
    WikiText-2 sample: 600 for training, 100 for validation."""
    sample = REPO / "hf_lineage" / "samples" / "lineage" / "corpus.train.txt"
    sentences = []
    for line in sample.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.strip().startswith("="):  # paragraphs, not headings or blank lines
            sentences += [s.strip().lower() + " ." for s in line.split(" . ") if s.strip()]
        if len(sentences) >= 700:
            break
    root = tmp_path_factory.mktemp("sentences")
    (root / "train.txt").write_text("\n".join(sentences[:600]) + "\n", encoding="utf-8")
    (root / "valid.txt").write_text("\n".join(sentences[600:700]) + "\n", encoding="utf-8")
    return root


def test_pretrain_elmo_end_to_end(sentence_text, tmp_path):
    from hf_lineage.cli import main

    out = tmp_path / "elmo"
    code = main(["pretrain", "elmo", "--config", "tiny", "--train-file", str(sentence_text / "train.txt"), "--validation-file",
                 str(sentence_text / "valid.txt"), "--output-dir", str(out), "--vocab-size", "800", "--max-seq-length",
                 "40", "--per-device-batch-size", "16", "--max-steps", "30", "--report-to", "none",
                 "--set", "cell_clip=null", "--set", "proj_clip=null"])
    assert code == 0
    results = json.loads((out / "train_results.json").read_text())
    evaluation = results["eval"]
    assert results["step"] == 30
    assert evaluation["perplexity"] == pytest.approx(np.exp(evaluation["loss"]), rel=1e-6)
    assert evaluation["loss"] == pytest.approx((evaluation["forward_loss"] + evaluation["backward_loss"]) / 2)
    assert evaluation["loss"] < np.log(800) - 1  # it learned something (uniform guessing: log 800)
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert isinstance(tokenizer, LineageElmoTokenizerFast) and len(tokenizer) <= 800
    assert (out / "tokenizer.json").is_file() and len(LineageElmoTokenizer.from_pretrained(out)) == len(tokenizer)
    features = AutoModel.from_pretrained(out)
    assert isinstance(features, LineageElmoModel) and features.config.cell_clip is None
    enc = tokenizer(["the company said"], return_tensors="pt")
    assert features(**enc).elmo_representations[0].shape == (1, 5, 2 * features.config.projection_size)
    lm = AutoModelForCausalLM.from_pretrained(out)
    assert (lm.vocabulary_char_ids != 0).any()  # the objective stored the word → characters table
    generated = lm.generate(**tokenizer(["<S> the company"], add_special_tokens=False, return_tensors="pt"),
                            max_new_tokens=5, do_sample=False)
    assert generated.shape[1] > 3


def test_elmo_objective_sentences_collator_and_optimiser():
    import datasets

    from hf_lineage.objectives.elmo import ElmoObjective, elmo_tokenizer_from_corpus
    from hf_lineage.pretraining.arguments import PretrainArguments, resolve_defaults

    args = PretrainArguments(family="elmo", output_dir="unused", config="original", max_seq_length=5)
    objective = ElmoObjective(args)
    resolve_defaults(args, objective)
    assert (args.learning_rate, args.lr_scheduler, args.max_grad_norm, args.per_device_batch_size) == (
        0.2, "constant", 10.0, 128)
    tok = elmo_tokenizer_from_corpus(iterator=["a b c d e f g", "a b"])
    examples = objective.prepare(datasets.Dataset.from_dict({"text": ["a b c d e f g", "", "a b"]}), tok, "train")
    assert examples["words"] == [["a", "b", "c"], ["d", "e", "f"], ["g"], ["a", "b"]]  # chunks of 5 − 2 words
    collated = objective.collator(tok)([{"words": ["a", "b", "c"], "mask_seed": 1}, {"words": ["g"], "mask_seed": 2}])
    assert collated["char_ids"].shape == (2, 5, 50) and collated["labels"][1].tolist() == [2, tok.convert_tokens_to_ids(
        "g"), 3, -100, -100]
    assert objective.loss_counts(collated)["num_items_in_batch"] == 4 + 2
    config = objective.build_config("tiny", tok, {})
    model = LineageElmoForPreTraining(config)
    objective.init_model(model)
    assert torch.equal(model.vocabulary_char_ids[4].long(), torch.tensor(tok.char_ids_of(tok.convert_ids_to_tokens(4))))
    optimizer = objective.build_optimizer(model, args)
    assert isinstance(optimizer, torch.optim.Adagrad) and optimizer.defaults["initial_accumulator_value"] == 1.0
    with pytest.raises(ValueError, match="no words"):
        objective.prepare(datasets.Dataset.from_dict({"text": ["", "  "]}), tok, "validation")


# --------------------------------------------------------------------------- Hub


def test_saved_folder_loads_with_trust_remote_code_without_hf_lineage(tokenizer, tmp_path):
    model = LineageElmoForPreTraining(tiny()).eval()
    model.set_vocabulary_characters(tokenizer)
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    files = {p.name for p in (tmp_path / "model").iterdir()}
    assert {"configuration_lineage_elmo.py", "modeling_lineage_elmo.py", "tokenization_lineage_elmo.py",
            "modeling_lineage_static.py", "modeling_lineage_utils.py", "configuration_lineage_utils.py"} <= files
    assert "Peters et al. (2018)" in (tmp_path / "model" / "README.md").read_text()
    enc = batch(tokenizer)
    torch.save({"logits": model(**enc).logits, "mix": model.elmo(**enc).elmo_representations[0]},
               tmp_path / "expected.pt")
    out = run_without_hf_lineage(
        f"""
import torch
from transformers import AutoModel, AutoModelForCausalLM, AutoModelForPreTraining, AutoTokenizer
path = {str(tmp_path / 'model')!r}
tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=True)
assert type(tokenizer).__name__ == "LineageElmoTokenizer"
enc = tokenizer({list(("the cat sat on the mat", "a dog ran", "the zebra ran to the park"))!r}, padding=True,
                return_tensors="pt")
expected = torch.load({str(tmp_path / 'expected.pt')!r})
model = AutoModelForPreTraining.from_pretrained(path, trust_remote_code=True).eval()
assert "hf_lineage" not in type(model).__module__
print(torch.allclose(model(**enc).logits, expected["logits"], atol=1e-6))
features = AutoModel.from_pretrained(path, trust_remote_code=True)
print(torch.allclose(features(**enc).elmo_representations[0], expected["mix"], atol=1e-6))
lm = AutoModelForCausalLM.from_pretrained(path, trust_remote_code=True)
print(lm.generate(**tokenizer(["the cat"], add_special_tokens=False, return_tensors="pt"), max_new_tokens=3,
                  do_sample=False).shape[1] > 2)
""",
        cwd=tmp_path,
    )
    assert out.strip().splitlines()[-3:] == ["True", "True", "True"]


# --------------------------------------------------------------------------- bad input


def test_bad_input_raises_clear_value_errors(tokenizer):
    model = LineageElmoForPreTraining(tiny()).eval()
    enc = batch(tokenizer)
    with pytest.raises(ValueError, match="char_ids .* are required"):
        LineageElmoModel(tiny())(input_ids=enc["input_ids"])
    with pytest.raises(ValueError, match="char_ids must have shape"):
        model(input_ids=enc["input_ids"], char_ids=enc["char_ids"][..., :20])
    with pytest.raises(ValueError, match=r"char_ids contains 300, outside \[0, 262\)"):
        model(input_ids=enc["input_ids"], char_ids=enc["char_ids"].masked_fill(enc["char_ids"] == 261, 300))
    with pytest.raises(ValueError, match=r"input_ids contains 99, outside \[0, 17\)"):
        model(input_ids=enc["input_ids"].masked_fill(enc["input_ids"] == 4, 99), char_ids=enc["char_ids"])
    with pytest.raises(ValueError, match="labels contains 50"):
        model(**enc, labels=lm_labels(enc).masked_fill(enc["input_ids"] == 4, 50))
    with pytest.raises(ValueError, match="right padding"):
        model(**tokenizer(["a dog", "the cat sat"], padding=True, padding_side="left", return_tensors="pt"))
    with pytest.raises(ValueError, match="Empty input"):
        model(input_ids=torch.zeros(2, 0, dtype=torch.long), char_ids=torch.zeros(2, 0, 50, dtype=torch.long))
    # An empty sentence is its two markers: it runs, and the LM predicts </S> from <S> (and back).
    empty = tokenizer([""], return_tensors="pt")
    out = model(**empty, labels=lm_labels(empty))
    assert empty["input_ids"].tolist() == [[2, 3]] and torch.isfinite(out.loss)


def test_contextual_vectors_work_for_a_subword_model_too(wordpiece_tokenizer):
    from hf_lineage import LineageBertConfig, LineageBertModel
    from hf_lineage.vectors.contextual import ContextualVectors

    model = LineageBertModel(LineageBertConfig.from_named("tiny", vocab_size=len(wordpiece_tokenizer))).eval()
    sentences = ["Paris is the capital of France", "the capital city is large"]
    found = ContextualVectors(model, wordpiece_tokenizer).word_vectors("capital", sentences)
    assert found.sentence_index == [0, 1] and found.position == [3, 1]
    enc = wordpiece_tokenizer(sentences[0].split(), is_split_into_words=True, return_tensors="pt")
    states = model(**enc).last_hidden_state[0]
    tokens = [t for t, w in enumerate(enc.word_ids(0)) if w == 3]  # the sub-tokens of "capital"
    torch.testing.assert_close(found.vectors[0], states[tokens].mean(0), atol=1e-5, rtol=0)
    hidden = ContextualVectors(model, wordpiece_tokenizer, layer=0).word_vectors("capital", sentences)
    assert not torch.allclose(hidden.vectors, found.vectors)
    with pytest.raises(ValueError, match="layer=9"):
        ContextualVectors(model, wordpiece_tokenizer, layer=9).embed(sentences)
