"""The shared downstream heads of the static-vector families (modeling_lineage_static.py), on a minimal family built
here: padding and pairs handled exactly, freezing, and loading pretrained vectors into a head."""

import pytest
import torch
from huggingface_hub.dataclasses import strict
from torch import nn
from transformers import GenerationMixin, PreTrainedConfig

from hf_lineage.models.configuration_lineage_utils import check_task_fields
from hf_lineage.models.modeling_lineage_static import (
    FeatureStandardizer,
    StaticVectorsForCausalLM,
    StaticVectorsForSequenceClassification,
    StaticVectorsForTokenClassification,
    init_task_weights,
    max_pool,
)
from hf_lineage.models.modeling_lineage_utils import LineagePreTrainedModel


@strict
class ToyVectorsConfig(PreTrainedConfig):
    model_type = "toy-static-vectors"
    vocab_size: int = 20
    vector_size: int = 6
    task_encoder: str = "bilstm"
    task_hidden_size: int = 5
    task_num_layers: int = 1
    task_dropout: float | int = 0.0
    task_feature_norm: str = "batch"
    freeze_vectors: bool = False
    pad_token_id: int | None = 0
    bos_token_id: int | None = 2
    eos_token_id: int | None = 3

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
        check_task_fields(self)


class ToyPreTrainedModel(LineagePreTrainedModel):
    config_class = ToyVectorsConfig
    base_model_prefix = "toy"

    def _init_weights(self, module):
        if init_task_weights(module):
            return
        super()._init_weights(module)


class ToyModel(ToyPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.vectors = nn.Embedding(config.vocab_size, config.vector_size)
        self.post_init()

    def get_input_embeddings(self):
        return self.vectors


class ToyForPreTraining(ToyPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.toy = ToyModel(config)
        self.post_init()


class ToyForTokenClassification(StaticVectorsForTokenClassification, ToyPreTrainedModel):
    base_model_class = ToyModel


class ToyForSequenceClassification(StaticVectorsForSequenceClassification, ToyPreTrainedModel):
    base_model_class = ToyModel


class ToyForCausalLM(StaticVectorsForCausalLM, ToyPreTrainedModel, GenerationMixin):
    base_model_class = ToyModel


def right_pad(rows, length):
    ids = torch.zeros(len(rows), length, dtype=torch.long)
    mask = torch.zeros(len(rows), length, dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
        mask[i, : len(row)] = 1
    return ids, mask


@pytest.mark.parametrize("encoder", ["bilstm", "lstm", "cnn", "none"])
def test_token_logits_do_not_depend_on_padding_or_batch(encoder):
    model = ToyForTokenClassification(ToyVectorsConfig(task_encoder=encoder, num_labels=3)).eval()
    rows = [[3, 4, 5, 6, 7], [8, 9]]
    ids, mask = right_pad(rows, 7)
    batched = model(input_ids=ids, attention_mask=mask).logits
    for i, row in enumerate(rows):
        alone = model(input_ids=torch.tensor([row])).logits[0]
        torch.testing.assert_close(batched[i, : len(row)], alone, rtol=1e-5, atol=1e-6)
    # Left padding gives the same logits at the real tokens.
    left_ids, left_mask = ids.clone(), mask.clone()
    left_ids[1] = torch.tensor([0] * 5 + rows[1])
    left_mask[1] = torch.tensor([0] * 5 + [1, 1])
    left = model(input_ids=left_ids, attention_mask=left_mask).logits
    torch.testing.assert_close(left[1, 5:], batched[1, :2], rtol=1e-5, atol=1e-6)


def test_pair_classifier_reads_each_sentence_encoded_alone():
    model = ToyForSequenceClassification(ToyVectorsConfig(num_labels=2)).eval()
    first, second = [3, 4, 5], [6, 7]
    ids = torch.tensor([first + second + [0, 0]])
    types = torch.tensor([[0, 0, 0, 1, 1, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 0, 0]])
    logits = model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits

    def sentence_vector(row):
        ids = torch.tensor([row])
        states = model.encoder(model.toy.vectors(ids), torch.ones_like(ids, dtype=torch.bool))
        return states.max(dim=1).values

    u, v = sentence_vector(first), sentence_vector(second)
    expected = model.pair_classifier(torch.cat([u, v, (u - v).abs(), u * v], dim=-1))
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-6)
    # Without token_type_ids it is one sentence through the single-sentence layer.
    single = model(input_ids=ids[:, :5]).logits
    torch.testing.assert_close(single, model.classifier(sentence_vector(first + second)), rtol=1e-5, atol=1e-6)


def test_feature_standardizer_uses_real_tokens_only_and_running_statistics_at_evaluation():
    torch.manual_seed(0)
    # Features on a tiny scale around a large shared offset: what a briefly pretrained model gives.
    features = 5.0 + 0.03 * torch.randn(3, 6, 4)
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 0, 0]], dtype=torch.bool)
    standardizer = FeatureStandardizer(4).train()
    out = standardizer(features, mask)
    real = out[mask]
    torch.testing.assert_close(real.mean(0), torch.zeros(4), atol=1e-3, rtol=0)
    torch.testing.assert_close(real.var(0, unbiased=False), torch.ones(4), atol=2e-2, rtol=0)
    assert torch.equal(out[~mask], torch.zeros_like(out[~mask]))  # padding stays zero...
    padded = torch.cat([features, torch.full((3, 4, 4), 99.0)], dim=1)  # ...and is out of the statistics
    padded_mask = torch.cat([mask, torch.zeros(3, 4, dtype=torch.bool)], dim=1)
    torch.testing.assert_close(standardizer(padded, padded_mask)[:, :6], out)
    # At evaluation the running statistics scale each sentence alone, whatever else is in its batch.
    standardizer.eval()
    # Two training calls with momentum 0.1: 0.1 · m, then 0.9 · 0.1 · m + 0.1 · m.
    torch.testing.assert_close(standardizer.running_mean, 0.19 * features[mask].mean(0), rtol=1e-4, atol=0)
    batch = standardizer(features, mask)
    alone = standardizer(features[1:2, :3], mask[1:2, :3])
    torch.testing.assert_close(batch[1, :3], alone[0])


def test_standardized_head_keeps_its_statistics_through_save_and_load(tmp_path):
    model = ToyForTokenClassification(ToyVectorsConfig(num_labels=3))
    ids, mask = right_pad([[3, 4, 5, 6], [7, 8]], 4)
    model.train()(input_ids=ids, attention_mask=mask)  # one training forward moves the running statistics
    assert model.feature_norm.running_var.sub(1).abs().max() > 1e-3
    model.eval().save_pretrained(tmp_path)
    loaded = ToyForTokenClassification.from_pretrained(tmp_path).eval()
    torch.testing.assert_close(loaded.feature_norm.running_mean, model.feature_norm.running_mean)
    torch.testing.assert_close(loaded(input_ids=ids, attention_mask=mask).logits,
                               model(input_ids=ids, attention_mask=mask).logits)
    plain = ToyForTokenClassification(ToyVectorsConfig(num_labels=3, task_feature_norm="none"))
    assert plain.feature_norm is None
    with pytest.raises(ValueError, match="task_feature_norm"):
        ToyVectorsConfig(task_feature_norm="layer")


def test_max_pool_ignores_padding_and_empty_rows_give_zeros():
    states = torch.tensor([[[1.0], [5.0], [9.0]], [[2.0], [3.0], [4.0]]])
    mask = torch.tensor([[True, True, False], [False, False, False]])
    assert max_pool(states, mask).tolist() == [[5.0], [0.0]]


@pytest.mark.parametrize("frozen", [True, False])
def test_freeze_flag_keeps_vectors_fixed_and_trains_the_rest(frozen, tmp_path):
    pretrained = ToyForPreTraining(ToyVectorsConfig())
    pretrained.save_pretrained(tmp_path)
    model = ToyForSequenceClassification.from_pretrained(tmp_path, num_labels=2, freeze_vectors=frozen)
    torch.testing.assert_close(model.toy.vectors.weight, pretrained.toy.vectors.weight)
    assert model.toy.vectors.weight.requires_grad is not frozen
    before = model.toy.vectors.weight.detach().clone()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    loss = model(input_ids=torch.tensor([[3, 4, 5]]), labels=torch.tensor([1])).loss
    loss.backward()
    optimizer.step()
    assert model.encoder.lstm.weight_ih_l0.grad.abs().sum() > 0
    assert torch.equal(model.toy.vectors.weight, before) is frozen


def test_missing_task_weights_are_initialised_after_loading_pretrained_vectors(tmp_path):
    ToyForPreTraining(ToyVectorsConfig()).save_pretrained(tmp_path)
    model = ToyForTokenClassification.from_pretrained(tmp_path, num_labels=4)
    lstm = model.encoder.lstm
    bound = 1 / lstm.hidden_size**0.5
    H = lstm.hidden_size
    for name, param in lstm.named_parameters():
        if name.startswith("bias_ih"):
            assert torch.equal(param[H : 2 * H], torch.ones(H)), name  # forget-gate bias
            param = torch.cat([param[:H], param[2 * H :]])
        assert torch.isfinite(param).all() and param.abs().max() <= bound + 1e-6, name
        assert param.std() > bound / 4, name  # drawn, not left at zero


def test_bad_labels_and_ids_name_the_problem():
    model = ToyForTokenClassification(ToyVectorsConfig(num_labels=3))
    with pytest.raises(ValueError, match="num_labels=3"):
        model(input_ids=torch.tensor([[3, 4]]), labels=torch.tensor([[0, 7]]))
    with pytest.raises(ValueError, match="input_ids contains 99"):
        model(input_ids=torch.tensor([[3, 99]]))
    with pytest.raises(ValueError, match="task_encoder"):
        ToyVectorsConfig(task_encoder="transformer")


def test_causal_lm_loss_is_next_token_cross_entropy_and_generation_ignores_left_padding():
    model = ToyForCausalLM(ToyVectorsConfig(task_encoder="bilstm")).eval()  # the LM is left-to-right regardless
    assert not model.encoder.lstm.bidirectional
    ids = torch.tensor([[2, 5, 6, 7, 8]])
    full = model(input_ids=ids).logits  # (1, T, V) without labels
    out = model(input_ids=ids, labels=ids)
    expected = torch.nn.functional.cross_entropy(full[0, :-1], ids[0, 1:])
    torch.testing.assert_close(out.loss, expected)
    torch.testing.assert_close(out.logits, full)  # (B, T, V) with labels too, as transformers' causal LMs
    # With sparse_logits the vocabulary layer runs only where a token is predicted: those rows of the full logits.
    labels = torch.tensor([[-100, -100, 6, -100, 8]])
    partial = model(input_ids=ids, labels=labels, sparse_logits=True)
    torch.testing.assert_close(partial.logits, full[0, [1, 3]])
    expected = torch.nn.functional.cross_entropy(full[0, [1, 3]], torch.tensor([6, 8]))
    torch.testing.assert_close(partial.loss, expected)
    torch.testing.assert_close(model(input_ids=ids, labels=labels).loss, expected)
    # Causal: the logits at position t do not change when later tokens change.
    changed = model(input_ids=torch.tensor([[2, 5, 6, 9, 9]])).logits
    torch.testing.assert_close(changed[0, :3], full[0, :3])
    alone = model.generate(torch.tensor([[2, 5, 6]]), max_new_tokens=4, do_sample=False, pad_token_id=0)
    batch = model.generate(torch.tensor([[0, 0, 2, 5, 6], [2, 7, 8, 9, 10]]),
                           attention_mask=torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]]),
                           max_new_tokens=4, do_sample=False, pad_token_id=0)
    assert batch[0, 2:].tolist() == alone[0].tolist()


# --- the real static-vector families -------------------------------------------------------------------------------

FAMILY_PRETRAINED = {
    "word2vec": ("hf_lineage.models.configuration_lineage_word2vec:LineageWord2VecConfig",
                 "hf_lineage.models.modeling_lineage_word2vec:LineageWord2VecForPreTraining", "word2vec"),
    "nnlm": ("hf_lineage.models.configuration_lineage_nnlm:LineageNNLMConfig",
             "hf_lineage.models.modeling_lineage_nnlm:LineageNNLMForCausalLM", "nnlm"),
}


def _load(spec):
    import importlib

    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("family", sorted(FAMILY_PRETRAINED))
def test_family_heads_load_pretrained_vectors_and_initialise_the_rest(family, tmp_path):
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoModelForTokenClassification

    import hf_lineage  # noqa: F401  (registers the families)

    config_spec, pretrained_spec, prefix = FAMILY_PRETRAINED[family]
    config = _load(config_spec).from_named("tiny", vocab_size=40)
    pretrained = _load(pretrained_spec)(config)
    vectors = getattr(pretrained, prefix).get_input_embeddings().weight.detach().clone()
    pretrained.save_pretrained(tmp_path)
    autos = [AutoModelForTokenClassification, AutoModelForSequenceClassification]
    if family == "word2vec":
        autos.append(AutoModelForCausalLM)  # NNLM is a causal LM itself
    for auto in autos:
        model = auto.from_pretrained(tmp_path, num_labels=3, freeze_vectors=True)
        assert type(model).__name__.startswith(f"Lineage{'Word2Vec' if family == 'word2vec' else 'NNLM'}For")
        torch.testing.assert_close(getattr(model, prefix).get_input_embeddings().weight, vectors)
        assert not getattr(model, prefix).get_input_embeddings().weight.requires_grad
        for name, param in model.named_parameters():
            if not name.startswith(prefix):  # missing from the checkpoint: initialised, not left empty
                assert torch.isfinite(param).all() and param.abs().max() < 10, name
                if "weight" in name:
                    assert 0 < param.std() < 1, name
        logits = model(input_ids=torch.tensor([[4, 5, 6, 7]])).logits
        assert torch.isfinite(logits).all()


@pytest.mark.parametrize("family", sorted(FAMILY_PRETRAINED))
def test_family_head_loads_with_trust_remote_code_without_hf_lineage(family, tmp_path):
    from conftest import run_without_hf_lineage

    config_spec, _, _ = FAMILY_PRETRAINED[family]
    config = _load(config_spec).from_named("tiny", vocab_size=40, num_labels=2)
    import hf_lineage  # noqa: F401
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_config(config).eval()
    model.save_pretrained(tmp_path)
    ids = [[4, 5, 6, 7, 8]]
    expected = model(input_ids=torch.tensor(ids), token_type_ids=torch.tensor([[0, 0, 1, 1, 1]])).logits
    out = run_without_hf_lineage(
        "import torch\n"
        "from transformers import AutoModelForSequenceClassification\n"
        f"m = AutoModelForSequenceClassification.from_pretrained({str(tmp_path)!r}, trust_remote_code=True).eval()\n"
        f"print(m(input_ids=torch.tensor({ids}), token_type_ids=torch.tensor([[0, 0, 1, 1, 1]])).logits.tolist())\n",
        cwd=tmp_path,
    )
    torch.testing.assert_close(torch.tensor(eval(out.strip().splitlines()[-1])), expected, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- the Transformers' shared head
# GPT's and BERT's token and sequence classifiers with task_head="scalar_mix": a scalar mix of the L + 1 hidden
# states → the same standardiser, task encoder and classifiers as the heads above (issue 42).


def _transformer(family):
    """(config class, pretraining class, token head, sequence head) of a Transformer family."""
    import hf_lineage

    if family == "bert":
        return (hf_lineage.LineageBertConfig, hf_lineage.LineageBertForPreTraining,
                hf_lineage.LineageBertForTokenClassification, hf_lineage.LineageBertForSequenceClassification)
    return (hf_lineage.LineageGPTConfig, hf_lineage.LineageGPTForCausalLM,
            hf_lineage.LineageGPTForTokenClassification, hf_lineage.LineageGPTForSequenceClassification)


DELIMITER = 4  # GPT's $ in these tests


def _mix_config(family, **overrides):
    config_class = _transformer(family)[0]
    return config_class.from_named("tiny", **{
        "vocab_size": 40, "max_position_embeddings": 32, "hidden_size": 16, "num_attention_heads": 2,
        "intermediate_size": 32, "task_head": "scalar_mix", "task_hidden_size": 8, "num_labels": 3, **overrides})


def _pair_batch(family):
    """Two right-padded pairs: BERT's [CLS] a [SEP] b [SEP] with token_type_ids, GPT's <s> a $ b <e>."""
    ids = torch.tensor([[1, 11, 12, 13, 2, 21, 22, 2, 0], [1, 14, 15, 2, 23, 24, 25, 26, 2]])
    mask = (torch.arange(9) < torch.tensor([[8], [9]])).long()
    if family == "bert":
        types = torch.tensor([[0, 0, 0, 0, 0, 1, 1, 1, 0], [0, 0, 0, 0, 1, 1, 1, 1, 1]])
        return dict(input_ids=ids, attention_mask=mask, token_type_ids=types)
    ids = torch.tensor([[1, 11, 12, 13, DELIMITER, 21, 22, 3, 0], [1, 14, 15, DELIMITER, 23, 24, 25, 26, 3]])
    return dict(input_ids=ids, attention_mask=mask)


def _sequence_model(family, **overrides):
    model = _transformer(family)[3](_mix_config(family, **overrides))
    if family == "gpt":  # what the classification recipe sets on a GPT pair model
        model.config.delimiter_token_id, model.config.pair_task = DELIMITER, "entailment"
    return model


def _freeze(model):
    for param in model.base_model.parameters():  # what --freeze_base does to GPT and BERT
        param.requires_grad_(False)


@pytest.mark.parametrize("family", ["bert", "gpt"])
@pytest.mark.parametrize("head", ["token", "single", "pair"])
def test_scalar_mix_head_shapes_and_training(family, head):
    torch.manual_seed(0)
    if head == "token":
        model = _transformer(family)[2](_mix_config(family))
        inputs = dict(_pair_batch(family), labels=torch.tensor([[0, 1, 2, 0, 1, 2, 0, 1, -100], [2] * 9]))
        inputs.pop("token_type_ids", None)
        shape = (2, 9, 3)
    else:
        model = _sequence_model(family) if head == "pair" else _transformer(family)[3](_mix_config(family))
        inputs = dict(_pair_batch(family), labels=torch.tensor([0, 2]))
        if head == "single":
            inputs.pop("token_type_ids", None)
        shape = (2, 3)
    # The same modules as the static families' heads, sized by the same task_* fields.
    assert len(model.scalar_mix.scalar_parameters) == model.config.num_hidden_layers + 1
    assert model.encoder.lstm.hidden_size == 8 and model.encoder.lstm.bidirectional
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(8):
        out = model(**inputs)
        assert out.logits.shape == shape
        losses.append(out.loss.item())
        optimizer.zero_grad()
        out.loss.backward()
        optimizer.step()
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_frozen_transformer_is_a_fixed_feature_extractor_and_the_mix_trains(family):
    torch.manual_seed(0)
    model = _sequence_model(family, hidden_dropout_prob=0.3, attention_probs_dropout_prob=0.3, task_dropout=0.0)
    _freeze(model)
    model.train()
    inputs = dict(_pair_batch(family), labels=torch.tensor([0, 2]))
    seen = []
    handle = model.base_model.register_forward_hook(lambda module, args, output: seen.append(output.hidden_states))
    model(**inputs).loss.backward()
    model(**inputs)
    handle.remove()
    # No dropout inside the frozen Transformer (two passes in train mode read the same features), no gradient.
    for first, second in zip(*seen):
        assert torch.equal(first, second) and not first.requires_grad
    assert all(param.grad is None for param in model.base_model.parameters())
    assert model.base_model.training  # only run in eval mode, and given back in train mode
    assert model.scalar_mix.scalar_parameters.grad is not None and model.scalar_mix.gamma.grad is not None
    assert model.pair_classifier.weight.grad is not None


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_scalar_mix_pair_reads_each_sentence_alone(family):
    """u, the first sentence's pooled vector, is the same whatever the second sentence is, and the same as for the
    first sentence encoded on its own; the logits do change with the second sentence."""
    torch.manual_seed(0)
    model = _sequence_model(family).eval()
    vectors = []
    handle = model.pair_classifier.register_forward_hook(lambda module, args, output: vectors.append(args[0]))
    inputs = _pair_batch(family)
    other = {name: value.clone() for name, value in inputs.items()}
    other["input_ids"][0, 5:7] = torch.tensor([30, 31])  # the first row's second sentence changed
    with torch.no_grad():
        logits = model(**inputs).logits
        changed = model(**other).logits
    handle.remove()
    H = model.encoder.output_size
    u, u_other = vectors[0][:, :H], vectors[1][:, :H]
    torch.testing.assert_close(u, u_other)
    assert not torch.allclose(logits[0], changed[0])
    torch.testing.assert_close(logits[1], changed[1])
    # u equals the first sentence encoded alone (BERT: [CLS] a [SEP]; GPT: <s> a, before the $).
    alone = inputs["input_ids"][:1, : 5 if family == "bert" else 4]
    mask = torch.ones_like(alone, dtype=torch.bool)
    with torch.no_grad():
        u_alone = model._sentence_vector(model.feature_norm(model.token_features(alone, mask), mask), mask)
    torch.testing.assert_close(u[:1], u_alone)


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_scalar_mix_head_save_and_load_round_trip(family, tmp_path):
    torch.manual_seed(0)
    for model in (_sequence_model(family), _transformer(family)[2](_mix_config(family))):
        inputs = _pair_batch(family)
        model.train()
        model(**inputs)  # moves the standardiser's running statistics away from their start
        model.eval()
        model.save_pretrained(tmp_path / "head")
        loaded = type(model).from_pretrained(tmp_path / "head").eval()
        assert loaded.config.task_head == "scalar_mix"
        with torch.no_grad():
            torch.testing.assert_close(loaded(**inputs).logits, model(**inputs).logits, rtol=0, atol=0)


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_scalar_mix_head_loads_the_transformer_of_a_pretraining_checkpoint(family, tmp_path):
    torch.manual_seed(0)
    config_class, pretraining_class, token_head, sequence_head = _transformer(family)
    pretrained = pretraining_class(_mix_config(family, task_head="linear"))
    pretrained.save_pretrained(tmp_path / "pretrained")
    for head in (token_head, sequence_head):
        model, info = head.from_pretrained(tmp_path / "pretrained", task_head="scalar_mix", output_loading_info=True)
        prefix = model.base_model_prefix
        expected = dict(pretrained.named_parameters())
        for name, param in model.base_model.named_parameters():
            torch.testing.assert_close(param, expected[f"{prefix}.{name}"], rtol=0, atol=0)
        assert all(key.startswith(("scalar_mix.", "encoder.", "feature_norm.", "classifier.", "pair_classifier."))
                   for key in info["missing_keys"])
        assert "scalar_mix.scalar_parameters" in info["missing_keys"]
        torch.testing.assert_close(model.scalar_mix.scalar_parameters, torch.zeros(3))  # initialised: equal weights


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_linear_head_is_unchanged_and_task_head_is_validated(family):
    config_class = _transformer(family)[0]
    assert config_class().task_head == "linear"
    model = _transformer(family)[2](_mix_config(family, task_head="linear"))
    assert not hasattr(model, "scalar_mix") and model.classifier.in_features == 16
    with pytest.raises(ValueError, match="task_head must be one of"):
        config_class(task_head="mix")
    with pytest.raises(ValueError, match="task_hidden_size"):
        config_class(task_head="scalar_mix", task_hidden_size=0)
