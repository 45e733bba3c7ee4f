"""Dynamic int8 quantization (hf_lineage.compression.quantization): every family's Linear and LSTM layers become
int8, the logits stay within a stated tolerance of the float model's, a saved quantized folder reloads to the same
outputs, and ``hf-lineage quantize`` works and refuses bad input without leaving anything half-written."""

import json

import pytest
import torch
from torch import nn
from torch.ao.nn.quantized import dynamic as nnqd
from transformers import BertConfig, BertForSequenceClassification

from hf_lineage import cli
from hf_lineage.compression import quantization
from hf_lineage.compression.quantization import (
    load_quantized,
    quantizable_modules,
    quantize_dynamic_int8,
    quantized_modules,
    save_quantized,
)
from hf_lineage.models.modeling_lineage_elmo import LineageElmoLSTMLayer
from hf_lineage.registry import FAMILIES, family_classes

# The stated tolerance: int8 weights (one scale per tensor) and int8 activations (one scale per row batch) put each
# logit within this fraction of the float logits' largest magnitude. Measured on these tiny random models: 0.5-3 %.
RELATIVE_TOLERANCE = 0.10

TRANSFORMERS = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def classifier(family, vocab_size=60, **overrides):
    torch.manual_seed(0)
    config_class, modeling = family_classes(family)
    extra = dict(TRANSFORMERS) if family in ("bert", "gpt") else {"task_dropout": 0.0}
    config = config_class.from_named("tiny", vocab_size=vocab_size, num_labels=3, **extra, **overrides)
    model_class = getattr(modeling, modeling.AUTO_CLASSES["AutoModelForSequenceClassification"])
    model = model_class(config).eval()
    with torch.no_grad():  # logits of a useful size: the random classifier's are ~0.01, all rounding
        for name, param in model.named_parameters():
            if "classifier" in name and name.endswith("weight"):
                param.mul_(30)
    return model


def inputs(model, batch=4, length=9):
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(5, model.config.vocab_size, (batch, length), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0  # right padding, so the packed LSTMs and the attention masks are exercised
    batch_inputs = {"input_ids": ids, "attention_mask": mask}
    if model.config.model_type == "lineage-elmo":
        chars = torch.randint(1, 200, (batch, length, model.config.max_characters_per_token), generator=generator)
        batch_inputs["char_ids"] = chars * mask[..., None]
    return batch_inputs


def logits(model, batch):
    with torch.no_grad():
        return model(**batch).logits


@pytest.mark.parametrize("family", list(FAMILIES))
def test_quantized_logits_stay_within_the_stated_tolerance_of_the_float_model(family):
    model = classifier(family)
    batch = inputs(model)
    expected = logits(model, batch)
    quantized = quantize_dynamic_int8(model)
    got = logits(quantized, batch)
    assert not torch.equal(got, expected)  # int8 arithmetic happened: rounding shows
    error = (got - expected).abs().max()
    assert error <= RELATIVE_TOLERANCE * expected.abs().max(), (float(error), float(expected.abs().max()))
    # the same predictions on nearly all rows is what a score change of < 1 point needs
    assert (got.argmax(-1) == expected.argmax(-1)).float().mean() >= 0.75
    # the model passed in is left as it was
    assert not quantized_modules(model)
    torch.testing.assert_close(logits(model, batch), expected, rtol=0, atol=0)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_linear_and_task_lstm_is_int8_and_elmos_projected_bilm_lstms_stay_float(family):
    model = classifier(family)
    planned = quantizable_modules(model)
    quantized = quantize_dynamic_int8(model)
    assert quantized_modules(quantized) == planned and planned
    # the only float Linears left share their weight with the input embeddings (GPT's auxiliary LM head)
    embeddings = quantized.get_input_embeddings().weight
    assert all(m.weight is embeddings for m in quantized.modules() if type(m) is nn.Linear)
    assert any(type(m) is nn.Linear for m in quantized.modules()) == (family == "gpt")
    assert not [name for name, m in quantized.named_modules() if type(m) is nn.LSTM]
    int8_weights = [m for m in quantized.modules() if isinstance(m, nnqd.Linear)]
    assert all(m.weight().dtype == torch.qint8 for m in int8_weights)
    assert ("encoder.lstm" in planned) == (family not in ("bert", "gpt"))  # the static heads' task BiLSTM
    if family == "elmo":
        assert isinstance(quantized.encoder.lstm, nnqd.LSTM)
        bilm = [m for m in quantized.modules() if isinstance(m, LineageElmoLSTMLayer)]
        assert bilm and all(type(m) is LineageElmoLSTMLayer for m in bilm)


def test_tied_lm_heads_stay_float_and_tied_and_the_lm_logits_stay_close():
    from hf_lineage import LineageBertConfig, LineageGPTConfig
    from hf_lineage.models.modeling_lineage_bert import LineageBertForMaskedLM
    from hf_lineage.models.modeling_lineage_gpt import LineageGPTForCausalLM

    torch.manual_seed(0)
    gpt = LineageGPTForCausalLM(LineageGPTConfig.from_named("tiny", vocab_size=60, embedding_dropout_prob=0.0,
                                                            **TRANSFORMERS)).eval()
    bert = LineageBertForMaskedLM(LineageBertConfig.from_named("tiny", vocab_size=60, **TRANSFORMERS)).eval()
    for model, head, embeddings in [(gpt, "lm_head", "transformer.tokens_embed"),
                                    (bert, "cls.predictions.decoder", "bert.embeddings.word_embeddings")]:
        batch = {"input_ids": inputs(model)["input_ids"]}
        expected = logits(model, batch)
        quantized = quantize_dynamic_int8(model)
        assert head not in quantized_modules(quantized) and len(quantized_modules(quantized)) >= 8
        assert quantized.get_submodule(head).weight is quantized.get_submodule(embeddings).weight
        error = (logits(quantized, batch) - expected).abs().max()
        assert error <= RELATIVE_TOLERANCE * expected.abs().max()


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_saved_quantized_model_reloads_in_one_call_with_identical_outputs(tmp_path, family):
    model = classifier(family)
    batch = inputs(model)
    quantized = quantize_dynamic_int8(model)
    expected = logits(quantized, batch)
    save_quantized(quantized, tmp_path / "int8")
    info = json.loads((tmp_path / "int8" / "quantization.json").read_text())
    assert info["modules"] == quantized_modules(quantized) and info["architecture"] == type(model).__name__
    reloaded = load_quantized(tmp_path / "int8")
    assert type(reloaded) is type(model) and quantized_modules(reloaded) == quantized_modules(quantized)
    torch.testing.assert_close(logits(reloaded, batch), expected, rtol=0, atol=0)
    # the float model's logits differ from these, so the reloaded state is the int8 one, not a float copy
    assert not torch.equal(logits(model, batch), expected)


def test_size_on_disk_shrinks_where_the_linear_layers_are_the_weights(tmp_path):
    model = classifier("bert")  # vocab 60: the encoder's Linear layers are most of the weights
    model.save_pretrained(tmp_path / "float")
    save_quantized(quantize_dynamic_int8(model), tmp_path / "int8")
    float_bytes = (tmp_path / "float" / "model.safetensors").stat().st_size
    int8_bytes = (tmp_path / "int8" / quantization.WEIGHTS_FILE).stat().st_size
    linear = sum(m.weight.numel() for m in model.modules() if type(m) is nn.Linear)
    assert linear > 0.7 * sum(p.numel() for p in model.parameters())
    assert int8_bytes < 0.5 * float_bytes, (int8_bytes, float_bytes)


def test_refusals(tmp_path):
    model = classifier("bert")
    quantized = quantize_dynamic_int8(model)
    with pytest.raises(ValueError, match="already quantized"):
        quantize_dynamic_int8(quantized)
    with pytest.raises(ValueError, match="takes a quantized model"):
        save_quantized(model, tmp_path / "x")
    with pytest.raises(ValueError, match="cannot quantize"):
        quantize_dynamic_int8(model, kinds=("Conv1d",))
    with pytest.raises(ValueError, match="no Linear or LSTM"):
        quantize_dynamic_int8(nn.Sequential(nn.Embedding(4, 4)))
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    with pytest.raises(ValueError, match="not empty"):
        save_quantized(quantized, tmp_path / "taken")
    assert sorted(p.name for p in (tmp_path / "taken").iterdir()) == ["file"]
    model.save_pretrained(tmp_path / "float")
    with pytest.raises(FileNotFoundError, match="quantization.json"):
        load_quantized(tmp_path / "float")


def test_a_failed_save_leaves_no_folder_behind(tmp_path, monkeypatch):
    quantized = quantize_dynamic_int8(classifier("gpt"))

    def broken_save(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(quantization.torch, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        save_quantized(quantized, tmp_path / "int8")
    assert list(tmp_path.iterdir()) == []  # neither the output nor the staging folder


def saved_classifier(tmp_path, tokenizer, family="bert"):
    model = classifier(family, vocab_size=len(tokenizer))
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    return model


def test_the_cli_quantizes_a_folder_with_its_tokenizer(tmp_path, wordpiece_tokenizer, capsys):
    model = saved_classifier(tmp_path, wordpiece_tokenizer)
    assert cli.main(["quantize", str(tmp_path / "model"), str(tmp_path / "int8")]) == 0
    assert "wrote" in capsys.readouterr().out
    reloaded = load_quantized(tmp_path / "int8")
    batch = dict(wordpiece_tokenizer(["the quick brown fox", "a cat"], padding=True, return_tensors="pt"))
    batch.pop("token_type_ids", None)
    torch.testing.assert_close(logits(reloaded, batch), logits(quantize_dynamic_int8(model), batch), rtol=0, atol=0)
    assert (tmp_path / "int8" / "tokenizer.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["int8", "model"]  # no staging folder left
    # --modules LSTM on a transformer: nothing to quantize, refused
    assert cli.main(["quantize", str(tmp_path / "model"), str(tmp_path / "lstm"), "--modules", "LSTM"]) == 2
    assert "no LSTM layer" in capsys.readouterr().err and not (tmp_path / "lstm").exists()


def test_the_cli_refuses_a_missing_folder_a_foreign_model_and_an_occupied_output(tmp_path, wordpiece_tokenizer,
                                                                                  capsys):
    assert cli.main(["quantize", str(tmp_path / "nothing"), str(tmp_path / "out")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli.main(["quantize", str(tmp_path / "empty"), str(tmp_path / "out")]) == 2
    assert "no config.json" in capsys.readouterr().err
    BertForSequenceClassification(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1,
                                             num_attention_heads=2, intermediate_size=32)).save_pretrained(
        tmp_path / "foreign")
    assert cli.main(["quantize", str(tmp_path / "foreign"), str(tmp_path / "out")]) == 2
    assert "'bert' model, not an hf_lineage one" in capsys.readouterr().err
    saved_classifier(tmp_path, wordpiece_tokenizer)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    assert cli.main(["quantize", str(tmp_path / "model"), str(tmp_path / "out")]) == 2
    assert "not empty" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["keep.txt"]
    assert cli.main(["quantize", str(tmp_path / "model"), str(tmp_path / "out"), "--overwrite"]) == 0
    assert (tmp_path / "out" / "quantized_model.pt").is_file() and not (tmp_path / "out" / "keep.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "foreign", "model", "out"]
