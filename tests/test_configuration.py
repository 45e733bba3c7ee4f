"""Configs of every family: impossible values are refused with a message naming the field; unknown keys are stored
as attributes by the classes, as transformers' configs do, and refused with the nearest field where a person types
them (``from_named``, ``--set``); transformers' own keys, save → load round trips (also through trust_remote_code)
and older config.json files work."""

import json

import pytest
from transformers import AutoConfig

import hf_lineage  # noqa: F401  (registers lineage-* with AutoConfig)
from hf_lineage.pretraining.cli import main
from hf_lineage.pretraining.arguments import PretrainError, check_overrides
from hf_lineage.registry import FAMILIES, family_classes

from conftest import run_without_hf_lineage


def tiny(family, **overrides):
    config_class, _ = family_classes(family)
    return config_class.from_named("tiny", vocab_size=300, **overrides)


@pytest.mark.parametrize("family", FAMILIES)
def test_from_named_refuses_an_unknown_override_naming_it_and_the_nearest_field(family):
    with pytest.raises(ValueError, match="has no field 'not_a_field'"):
        tiny(family, not_a_field=1)
    with pytest.raises(ValueError, match="'vocab_sise' \\(did you mean 'vocab_size'\\?\\)"):
        tiny(family, vocab_sise=1)


def test_from_named_refuses_a_field_of_another_family():
    # ELMo has no hidden_size (BERT's and GPT's field).
    with pytest.raises(ValueError, match="LineageElmoConfig \\(lineage-elmo\\) has no field 'hidden_size'"):
        family_classes("elmo")[0].from_named("tiny", hidden_size=-8)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_class_stores_unknown_keys_as_transformers_configs_do(family):
    # transformers' tests (test_eager_matches_sdpa_inference builds configs with batch_norm_eps) and other
    # libraries pass keys a config has no field for; BertConfig(batch_norm_eps=1, not_a_field=3) keeps both.
    config_class, _ = family_classes(family)
    config = config_class(batch_norm_eps=1, not_a_field=3)
    assert config.batch_norm_eps == 1 and config.not_a_field == 3
    assert config.to_dict()["not_a_field"] == 3
    # Type and range checks of the fields themselves stay.
    with pytest.raises(ValueError, match="vocab_size must be a positive integer"):
        config_class(vocab_size=0, not_a_field=3)


@pytest.mark.parametrize(
    "family, overrides, message",
    [
        ("bert", dict(hidden_size=-8), "hidden_size must be a positive integer"),
        ("bert", dict(hidden_act="swishy"), "hidden_act must be one of"),
        ("bert", dict(layer_norm_eps=0.0), "layer_norm_eps must be positive"),
        ("bert", dict(classifier_dropout=1.5), "classifier_dropout must be in"),
        ("gpt", dict(num_attention_heads=3), "not a multiple of num_attention_heads"),
        ("gpt", dict(initializer_range=-0.02), "initializer_range must be positive"),
        ("elmo", dict(lstm_cell_size=-8), "lstm_cell_size must be a positive integer"),
        ("elmo", dict(softmax_type="hierarchical"), "softmax_type must be one of"),
        ("nnlm", dict(context_size=0), "context_size must be a positive integer"),
        ("word2vec", dict(architecture="glove"), "architecture must be one of"),
        ("word2vec", dict(task_dropout=1.0), "task_dropout must be in"),
    ],
)
def test_impossible_values_are_refused_naming_the_field(family, overrides, message):
    with pytest.raises(ValueError, match=message):
        tiny(family, **overrides)


@pytest.mark.parametrize("family", FAMILIES)
def test_transformers_own_keys_are_accepted(family):
    config = tiny(family, id2label={0: "no", 1: "yes"}, label2id={"no": 0, "yes": 1},
                  problem_type="single_label_classification", torch_dtype="float32", architectures=["X"],
                  auto_map={"AutoConfig": "x.Y"}, transformers_version="5.16.0", output_hidden_states=True,
                  pad_token_id=0, bos_token_id=2, eos_token_id=3, tie_word_embeddings=family in ("bert", "gpt"),
                  # configs saved by older releases: generation settings and retired keys still load
                  max_length=20, num_beams=1, use_bfloat16=False, torchscript=False, _commit_hash="abc",
                  attn_implementation="eager", quantization_config={"quant_method": "bitsandbytes"})
    assert config.num_labels == 2 and config.output_hidden_states and str(config.dtype) == "torch.float32"


@pytest.mark.parametrize("family", FAMILIES)
def test_save_load_round_trip_keeps_every_field(family, tmp_path):
    config = tiny(family, id2label={0: "a", 1: "b", 2: "c"}, label2id={"a": 0, "b": 1, "c": 2})
    config.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == f"lineage-{family}" and "auto_map" in saved
    loaded = AutoConfig.from_pretrained(tmp_path)
    fields = lambda c: {k: v for k, v in c.to_dict().items() if k != "_name_or_path"}  # noqa: E731
    assert type(loaded) is type(config) and fields(loaded) == fields(config)
    # from_pretrained's own keyword arguments are not config fields and keep working.
    assert AutoConfig.from_pretrained(tmp_path, num_labels=3, local_files_only=True).num_labels == 3


@pytest.mark.parametrize("family", FAMILIES)
def test_a_config_json_written_by_an_older_release_still_loads(family, tmp_path):
    saved = tiny(family).to_dict()
    # What transformers 5.16 (the oldest supported) or a 4.x-era config carries beside the fields.
    saved.update({"transformers_version": "5.16.0", "torch_dtype": "float32", "_name_or_path": "old/run",
                  "architectures": [f"Lineage{family}"], "use_bfloat16": False, "max_length": 20,
                  "output_attentions": False, "return_dict": True})
    saved.pop("dtype", None)
    (tmp_path / "config.json").write_text(json.dumps(saved))
    loaded = AutoConfig.from_pretrained(tmp_path)
    assert loaded.vocab_size == 300 and str(loaded.dtype) == "torch.float32"
    # A key that no release ever wrote is kept as an attribute, as transformers' configs keep it.
    (tmp_path / "config.json").write_text(json.dumps({**saved, "not_a_field": 8}))
    assert AutoConfig.from_pretrained(tmp_path).not_a_field == 8


def test_trust_remote_code_copies_round_trip_keep_unknown_keys_and_from_named_refuses_them(tmp_path):
    for family in FAMILIES:
        tiny(family).save_pretrained(tmp_path / family)
        assert (tmp_path / family / "configuration_lineage_utils.py").is_file()
    out = run_without_hf_lineage(
        f"""
from transformers import AutoConfig
for family in {list(FAMILIES)!r}:
    config = AutoConfig.from_pretrained({str(tmp_path)!r} + "/" + family, trust_remote_code=True)
    assert "hf_lineage" not in type(config).__module__ and config.vocab_size == 300, type(config)
    config.save_pretrained({str(tmp_path)!r} + "/again-" + family)
    again = AutoConfig.from_pretrained({str(tmp_path)!r} + "/again-" + family, trust_remote_code=True)
    assert {{**again.to_dict(), "_name_or_path": ""}} == {{**config.to_dict(), "_name_or_path": ""}}
    kept = type(config)(not_a_field=1).not_a_field == 1
    try:
        type(config).from_named("tiny", not_a_field=1)
    except ValueError as error:
        print(family, "kept" if kept else "lost", "refused" if "not_a_field" in str(error) else error)
""",
        cwd=tmp_path,
    )
    assert out.split() == [word for family in FAMILIES for word in (family, "kept", "refused")]


def test_set_with_an_unknown_field_fails_before_anything_is_written(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat\n" * 20)
    out = tmp_path / "out"
    code = main(["bert", "--config", "tiny", "--train-file", str(corpus), "--output-dir", str(out), "--report-to",
                 "none",
                 "--set", "not_a_field=1"])
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err
    assert "--set: LineageBertConfig (lineage-bert) has no field 'not_a_field'" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_set_values_of_float_fields_may_be_whole_numbers_and_type_errors_are_one_line(tmp_path, capsys):
    config_class, _ = family_classes("gpt")
    overrides = {"initializer_range": 1, "lm_loss_weight": 1, "num_hidden_layers": 2}
    check_overrides(config_class, overrides)
    assert overrides == {"initializer_range": 1.0, "lm_loss_weight": 1, "num_hidden_layers": 2}
    assert type(overrides["initializer_range"]) is float
    with pytest.raises(PretrainError, match="--set: .*'dropuot' \\(did you mean 'dropout'\\?\\)"):
        check_overrides(family_classes("elmo")[0], {"dropuot": 0.2})
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat\n" * 40)
    code = main(["nnlm", "--config", "tiny", "--train-file", str(corpus), "--output-dir",
                 str(tmp_path / "out"), "--report-to", "none",
                 "--set", "hidden_size=big"])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error" in line]
    assert code == 2 and "Traceback" not in err and len(errors) == 1 and "'hidden_size' expected int" in errors[0]


def test_set_takes_the_nnlm_tokenizer_options_besides_config_fields():
    from hf_lineage.objectives import objective_class

    options = objective_class("nnlm").set_options
    check_overrides(family_classes("nnlm")[0], {"min_count": 2, "lowercase": True, "hidden_size": 8}, options)
    with pytest.raises(PretrainError, match="'min_cout'.*besides these, --set takes min_count, lowercase"):
        check_overrides(family_classes("nnlm")[0], {"min_cout": 2}, options)


TASK_FIELDS = {"task_encoder", "task_hidden_size", "task_num_layers", "task_dropout", "task_feature_norm"}


@pytest.mark.parametrize("family", ["nnlm", "word2vec", "svd", "elmo"])
def test_task_fields_are_declared_once_in_the_shared_mixin(family):
    from dataclasses import fields

    from hf_lineage.models.configuration_lineage_utils import TaskHeadConfigMixin

    config_class, _ = family_classes(family)
    assert issubclass(config_class, TaskHeadConfigMixin)
    assert not TASK_FIELDS & set(config_class.__dict__.get("__annotations__", {}))  # not repeated in the family
    assert TASK_FIELDS <= {f.name for f in fields(config_class)}
    with pytest.raises(ValueError, match="task_encoder must be one of"):
        tiny(family, task_encoder="transformer")
    assert tiny(family, task_hidden_size=7).to_dict()["task_hidden_size"] == 7


@pytest.mark.parametrize("family", FAMILIES)
def test_a_shipped_config_saves_the_same_json_it_was_loaded_from(family, tmp_path):
    import hf_lineage.checkpoints

    shipped = hf_lineage.checkpoints.path(family) / "config.json"
    AutoConfig.from_pretrained(shipped.parent).save_pretrained(tmp_path)
    saved, original = (json.loads(path.read_text()) for path in (tmp_path / "config.json", shipped))
    # Every key and value but the version of transformers that wrote the file (the oldest supported one differs),
    # and the auto_map saving adds: the shipped folder has no code to name, the saved one its configuration file.
    assert saved.pop("transformers_version") and original.pop("transformers_version")
    config_class, _ = family_classes(family)
    assert saved.pop("auto_map") == {"AutoConfig": f"configuration_lineage_{family}.{config_class.__name__}"}
    assert (tmp_path / f"configuration_lineage_{family}.py").is_file() and "auto_map" not in original
    assert saved == original


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_names_its_paper_on_its_config_class(family):
    from hf_lineage.models.card_lineage_utils import model_card

    from types import SimpleNamespace

    config_class, _ = family_classes(family)
    assert "paper" in config_class.__dict__ and "(20" in config_class.paper  # "Author (year), title ..."
    assert "paper" not in tiny(family).to_dict()  # a class fact, never written to config.json
    card = model_card(SimpleNamespace(config=tiny(family), parameters=lambda: []))
    assert f"Paper: {config_class.paper}" in card
