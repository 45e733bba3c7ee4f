"""Attention-head pruning: ``prune_heads`` on lineage BERT and GPT, ``config.pruned_heads`` through save/load, and
Michel et al.'s head importance (hf_lineage.compression.pruning), also on transformers' own BERT."""

import json

import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification

from hf_lineage import LineageBertConfig, LineageGPTConfig
from hf_lineage.compression import prune_heads_recipe
from hf_lineage.compression.pruning import gated_heads, head_importance, layer_heads, least_important_heads
from hf_lineage.models.modeling_lineage_bert import LineageBertForSequenceClassification, LineageBertModel
from hf_lineage.models.modeling_lineage_gpt import LineageGPTForCausalLM
from tests.conftest import run_without_hf_lineage

NO_DROPOUT = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def bert(**overrides):
    torch.manual_seed(0)
    config = LineageBertConfig.from_named("tiny", vocab_size=50, num_hidden_layers=3, num_attention_heads=4,
                                          num_labels=3, **NO_DROPOUT, **overrides)
    return LineageBertForSequenceClassification(config).eval()


def gpt():
    torch.manual_seed(0)
    config = LineageGPTConfig.from_named("tiny", vocab_size=50, num_hidden_layers=3, num_attention_heads=4,
                                         embedding_dropout_prob=0.0, **NO_DROPOUT)
    return LineageGPTForCausalLM(config).eval()


def inputs():
    torch.manual_seed(1)
    ids = torch.randint(5, 50, (3, 9))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0  # padding, so masks and pruning meet
    return {"input_ids": ids, "attention_mask": mask}


PRUNE = {0: [1, 3], 2: [0, 1, 2, 3]}  # two heads of layer 0, every head of layer 2


def gates_switching_off(model, heads):
    return [torch.tensor([0.0 if h in heads.get(layer, ()) else 1.0 for h in kept])
            for layer, kept in enumerate(layer_heads(model))]


@pytest.mark.parametrize("make", [bert, gpt], ids=["bert", "gpt"])
def test_a_pruned_model_computes_what_the_full_model_does_with_those_heads_off(make):
    model = make()
    with torch.no_grad(), gated_heads(model, gates_switching_off(model, PRUNE)):
        expected = model(**inputs()).logits
        # the gates do something: with them off the output differs from the full model's
    with torch.no_grad():
        full = model(**inputs()).logits
    assert not torch.allclose(full, expected, atol=1e-4)
    before = sum(p.numel() for p in model.parameters())
    model.prune_heads(PRUNE)
    with torch.no_grad():
        got = model(**inputs()).logits
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    hidden, head_size = model.config.hidden_size, model.config.hidden_size // 4
    # q, k, v rows (3 x head_size x hidden + 3 x head_size biases) and output-projection columns per head
    assert before - sum(p.numel() for p in model.parameters()) == 6 * (3 * head_size * hidden + 3 * head_size
                                                                        + head_size * hidden)
    assert model.config.pruned_heads == {0: [1, 3], 2: [0, 1, 2, 3]}
    assert layer_heads(model) == [[0, 2], [0, 1, 2, 3], []]


def test_pruning_again_adds_to_the_record_and_a_head_pruned_twice_is_a_no_op():
    model = bert()
    model.prune_heads({0: [1]})
    with torch.no_grad():
        once = model(**inputs()).logits
    model.prune_heads({0: [1]})
    with torch.no_grad():
        torch.testing.assert_close(model(**inputs()).logits, once)
    model.prune_heads({0: [3], 1: [2]})
    assert model.config.pruned_heads == {0: [1, 3], 1: [2]}
    assert model.bert.encoder.layer[0].attention.num_heads == 2


def test_config_pruned_heads_survives_save_and_load(tmp_path):
    model = bert()
    model.prune_heads(PRUNE)
    with torch.no_grad():
        expected = model(**inputs()).logits
    model.save_pretrained(tmp_path)
    loaded = LineageBertForSequenceClassification.from_pretrained(tmp_path).eval()
    assert loaded.config.pruned_heads == {0: [1, 3], 2: [0, 1, 2, 3]}  # JSON's string keys back to ints
    with torch.no_grad():
        torch.testing.assert_close(loaded(**inputs()).logits, expected)
    # the bare encoder of the same folder is built pruned too
    assert LineageBertModel.from_pretrained(tmp_path).encoder.layer[0].attention.num_heads == 2


def test_a_pruned_folder_loads_with_trust_remote_code_without_hf_lineage(tmp_path):
    model = gpt()
    model.prune_heads(PRUNE)
    with torch.no_grad():
        expected = model(**inputs()).logits
    model.save_pretrained(tmp_path / "model")
    torch.save(expected, tmp_path / "expected.pt")
    out = run_without_hf_lineage(f"""
import torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained({str(tmp_path / 'model')!r}, trust_remote_code=True).eval()
assert "hf_lineage" not in type(model).__module__
ids = {inputs()['input_ids'].tolist()!r}
mask = {inputs()['attention_mask'].tolist()!r}
with torch.no_grad():
    got = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).logits
print((got - torch.load({str(tmp_path / 'expected.pt')!r})).abs().max().item())
""", cwd=tmp_path)
    assert float(out.strip().splitlines()[-1]) <= 1e-5


def test_pruning_a_head_or_layer_that_does_not_exist_is_refused_before_anything_is_cut():
    model = bert()
    with pytest.raises(ValueError, match="layer 7 does not exist"):
        model.prune_heads({7: [0]})
    with pytest.raises(ValueError, match="no head \\[4\\]"):
        model.prune_heads({0: [4]})
    assert model.config.pruned_heads is None and model.bert.encoder.layer[0].attention.num_heads == 4
    with pytest.raises(ValueError, match="no head"):
        LineageBertConfig.from_named("tiny", num_attention_heads=2, pruned_heads={"0": [2]})


def labelled(batch_size=4, batches=3):
    torch.manual_seed(2)
    return [{"input_ids": torch.randint(5, 50, (batch_size, 8)), "labels": torch.randint(0, 3, (batch_size,))}
            for _ in range(batches)]


def test_a_head_whose_output_is_discarded_has_zero_importance_and_is_pruned_first():
    model = bert()
    head_size = model.config.hidden_size // 4
    with torch.no_grad():  # layer 1, head 2 writes nothing: its output-projection columns are zero
        model.bert.encoder.layer[1].attention.dense.weight[:, 2 * head_size:3 * head_size] = 0
    importance = head_importance(model, labelled())
    assert importance.shape == (3, 4) and bool(torch.isfinite(importance).all())
    assert importance[1, 2] == 0 and bool((importance[1, [0, 1, 3]] > 0).all())
    torch.testing.assert_close(importance.norm(dim=1), torch.ones(3))  # each layer normalised to unit L2 norm
    assert least_important_heads(importance, 1 / 12) == {1: [2]}
    assert not model.training  # the mode it came in with (eval)


def test_importance_of_a_pruned_model_marks_its_missing_heads_and_counts_them_as_removed():
    model = bert()
    model.prune_heads({0: [0, 1]})
    importance = head_importance(model, labelled(batches=1))
    assert bool(torch.isnan(importance[0, :2]).all()) and bool(torch.isfinite(importance[0, 2:]).all())
    assert least_important_heads(importance, 2 / 12) == {}  # the two already pruned are that fraction
    more = least_important_heads(importance, 3 / 12)
    assert sum(map(len, more.values())) == 1 and not set(more.get(0, [])) & {0, 1}  # one more, not a pruned one


def test_importance_runs_on_transformers_own_bert():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, num_labels=3, max_position_embeddings=16)
    model = BertForSequenceClassification(config)
    importance = head_importance(model, labelled(batches=2))
    assert importance.shape == (2, 4) and bool((importance > 0).all())
    assert model.training  # the mode it came in with


def test_least_important_heads_checks_its_fraction():
    with pytest.raises(ValueError, match="fraction"):
        least_important_heads(torch.zeros(2, 2), 1.5)
    assert least_important_heads(torch.tensor([[0.3, 0.1], [0.2, 0.4]]), 0.5) == {0: [1], 1: [0]}


def main(argv):  # what recipes/prune_heads.py runs
    return prune_heads_recipe.run(*prune_heads_recipe.parse_arguments(argv))


def classifier_folder(tmp_path, wordpiece_tokenizer):
    """A (random) lineage BERT classifier saved as the classification recipe saves one, with its label names."""
    torch.manual_seed(0)
    config = LineageBertConfig.from_named("tiny", vocab_size=len(wordpiece_tokenizer), num_hidden_layers=2,
                                          num_attention_heads=4, id2label={0: "neg", 1: "pos"},
                                          label2id={"neg": 0, "pos": 1})
    LineageBertForSequenceClassification(config).save_pretrained(tmp_path / "ft")
    wordpiece_tokenizer.save_pretrained(tmp_path / "ft")
    rows = [{"sentence": f"the {w} fox jumps", "label": "pos" if i % 2 else "neg"}
            for i, w in enumerate(["quick", "brown", "lazy", "red", "old", "young", "big", "small"] * 4)]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "ft", data


def test_the_recipe_writes_the_curve_and_a_pruned_model_that_loads(tmp_path, wordpiece_tokenizer):
    folder, data = classifier_folder(tmp_path, wordpiece_tokenizer)
    out = tmp_path / "out"
    main(["--model_name_or_path", str(folder), "--train_file", str(data), "--validation_file", str(data),
          "--fractions", "0", "0.5", "1", "--finetune_epochs", "1", "--random_orders", "2", "--save_fraction", "0.5",
          "--per_device_train_batch_size", "8", "--output_dir", str(out), "--report_to", "none"])
    curve = json.loads((out / "pruning_curve.json").read_text())
    points = curve["points"]
    assert [p["heads_left"] for p in points] == [8, 4, 0] and [p["heads_removed"] for p in points] == [0, 4, 8]
    assert all({"score", "score_after_finetune", "random_order_score", "random_order_std"} <= set(p) for p in points)
    assert (out / "pruning_curve.png").stat().st_size > 0 and "heads removed" in (out / "pruning_curve.md").read_text()
    pruned = LineageBertForSequenceClassification.from_pretrained(out / "pruned")
    assert sum(map(len, pruned.config.pruned_heads.values())) == 4 and layer_heads(pruned) != [[0, 1, 2, 3]] * 2


@pytest.mark.parametrize("bad, message", [(["--fractions", "0", "1.5"], "--fractions"),
                                          (["--save_fraction", "0.3"], "--save_fraction"),
                                          (["--random_orders", "0"], "--random_orders")])
def test_the_recipe_refuses_bad_options_before_writing_anything(tmp_path, wordpiece_tokenizer, bad, message):
    folder, data = classifier_folder(tmp_path, wordpiece_tokenizer)
    with pytest.raises(ValueError, match=message):
        main(["--model_name_or_path", str(folder), "--train_file", str(data), "--validation_file", str(data),
              "--output_dir", str(tmp_path / "out"), *bad])
    assert not (tmp_path / "out").exists()
