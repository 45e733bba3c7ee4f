"""Joint intent classification and slot filling: the ``*ForIntentAndSlots`` heads of every family (loss, label
positions, save/load), the readers of both data formats, the metrics, the shipped E2E-derived sample and
``recipes/intent_and_slots.py`` end to end on it with tiny checkpoints."""

import importlib.util
import json

import pytest
import torch
import torch.nn.functional as F
import transformers

from hf_lineage import AutoModelForIntentAndSlots, intent_and_slots_model_class
from hf_lineage.data.readers import DataFormatError, read_intent_and_slots
from hf_lineage.registry import FAMILIES, family_classes
from hf_lineage.tasks import intent_and_slots
from hf_lineage.tasks.labeling import words_as_in_running_text

from conftest import REPO
from test_recipes import _build_tokenizer

SAMPLES = REPO / "hf_lineage" / "samples" / "slots"
TRAIN, VALIDATION = str(SAMPLES / "slots.train.jsonl"), str(SAMPLES / "slots.validation.jsonl")
INTENTS = ["family_friendly", "not_family_friendly", "not_mentioned"]
TAGS = ["B-name", "I-name", "B-near", "I-near", "O"]
STATIC = ("nnlm", "word2vec", "svd", "elmo")
COMMON = ["--do_train", "--do_eval", "--do_predict", "--per_device_train_batch_size", "8",
          "--per_device_eval_batch_size", "8", "--report_to", "none", "--save_strategy", "no", "--disable_tqdm",
          "true", "--log_level", "error", "--use_cpu", "true", "--seed", "0"]


def tiny_config(family, vocab_size=60, **overrides):
    config_class, _ = family_classes(family)
    sizes = {"task_hidden_size": 8} if family in STATIC else {}
    return config_class.from_named("tiny", vocab_size=vocab_size, intent_labels=INTENTS,
                                   id2label=dict(enumerate(TAGS)), **{**sizes, **overrides})


def tiny_inputs(family, config, batch=3, length=7):
    torch.manual_seed(1)
    ids = torch.randint(5, config.vocab_size, (batch, length))
    mask = torch.ones_like(ids)
    mask[0, -2:] = 0  # one padded row
    inputs = {"input_ids": ids, "attention_mask": mask}
    if family == "elmo":
        inputs["char_ids"] = torch.randint(1, 200, (batch, length, config.max_characters_per_token))
    slots = torch.randint(0, len(TAGS), (batch, length))
    slots[:, 0] = -100
    slots[0, -2:] = -100
    return inputs, torch.tensor([0, 2, 1])[:batch], slots


# --------------------------------------------------------------------------- models


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_loss_is_intent_ce_plus_weighted_slot_ce(family):
    config = tiny_config(family, slot_loss_weight=0.5)
    model = AutoModelForIntentAndSlots.from_config(config).eval()
    assert type(model) is intent_and_slots_model_class(config)
    assert type(model).__name__.endswith("ForIntentAndSlots")
    inputs, intents, slots = tiny_inputs(family, config)
    out = model(**inputs, intent_labels=intents, slot_labels=slots)
    assert out.intent_logits.shape == (3, len(INTENTS)) and out.slot_logits.shape == (3, 7, len(TAGS))
    intent_ce = F.cross_entropy(out.intent_logits, intents)
    labelled = slots != -100
    slot_ce = F.cross_entropy(out.slot_logits[labelled], slots[labelled])  # -100 positions left out
    expected = intent_ce + 0.5 * slot_ce
    if family == "gpt":  # GPT's fine-tuning heads add the auxiliary LM loss in training (the paper's L3), not here
        assert out.lm_loss is not None and config.lm_loss_weight > 0
    torch.testing.assert_close(out.intent_loss, intent_ce)
    torch.testing.assert_close(out.slot_loss, slot_ce)
    torch.testing.assert_close(out.loss, expected)
    out.loss.backward()  # both heads get a gradient from the one loss
    assert model.intent_classifier.weight.grad.abs().sum() > 0 and model.slot_classifier.weight.grad.abs().sum() > 0
    # Without labels: logits, no loss.
    assert model(**inputs).loss is None


def test_a_config_without_intents_is_refused_by_name():
    config_class, _ = family_classes("bert")
    with pytest.raises(ValueError, match="intent_labels"):
        AutoModelForIntentAndSlots.from_config(config_class.from_named("tiny", vocab_size=30))
    with pytest.raises(ValueError, match="intent_labels contain 7"):
        config = tiny_config("bert")
        model = AutoModelForIntentAndSlots.from_config(config)
        inputs, _, slots = tiny_inputs("bert", config)
        model(**inputs, intent_labels=torch.tensor([0, 7, 1]), slot_labels=slots)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_save_and_load_keep_label_maps_and_outputs(family, tmp_path):
    config = tiny_config(family)
    model = AutoModelForIntentAndSlots.from_config(config).eval()
    inputs, _, _ = tiny_inputs(family, config)
    model.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["intent_labels"] == INTENTS
    assert saved["auto_map"]["AutoModelForIntentAndSlots"].endswith(f".{type(model).__name__}")
    assert (tmp_path / "modeling_lineage_intent_and_slots.py").is_file()  # for trust_remote_code
    loaded = AutoModelForIntentAndSlots.from_pretrained(tmp_path).eval()
    assert type(loaded) is type(model)
    assert loaded.config.intent_labels == INTENTS and loaded.config.id2label == dict(enumerate(TAGS))
    with torch.no_grad():
        before, after = model(**inputs), loaded(**inputs)
    torch.testing.assert_close(before.intent_logits, after.intent_logits)
    torch.testing.assert_close(before.slot_logits, after.slot_logits)


def test_the_saved_head_loads_without_hf_lineage(tmp_path):
    from conftest import run_without_hf_lineage

    model = AutoModelForIntentAndSlots.from_config(tiny_config("bert")).eval()
    model.save_pretrained(tmp_path)
    code = (f"import json, torch\nfrom transformers.dynamic_module_utils import get_class_from_dynamic_module\n"
            f"ref = json.load(open({str(tmp_path / 'config.json')!r}))['auto_map']['AutoModelForIntentAndSlots']\n"
            f"cls = get_class_from_dynamic_module(ref, {str(tmp_path)!r})\n"
            f"m = cls.from_pretrained({str(tmp_path)!r})\n"
            f"print(type(m).__name__, m.config.intent_labels[m(torch.tensor([[5, 6, 7]])).intent_logits.argmax()])")
    name, intent = run_without_hf_lineage(code, tmp_path).split()
    assert name == "LineageBertForIntentAndSlots" and intent in INTENTS


# --------------------------------------------------------------------------- label positions


@pytest.fixture(scope="module")
def subword_tokenizers():
    texts = ["The Eagle is a coffee shop near Burger King .", "Aromi serves French food in riverside ."] * 3
    return {family: _build_tokenizer(family, texts) for family in ("bert", "gpt")}


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_slot_labels_sit_on_first_sub_tokens_for_bert_and_last_for_gpt(family, subword_tokenizers):
    tokenizer = subword_tokenizers[family]
    words = ["Eaglecoffee", "shop", "near", "Kingriverside"]  # two unseen words: several sub-tokens each
    tags = ["B-name", "O", "O", "B-near"]
    slot2id = {t: i for i, t in enumerate(TAGS)}
    encoding = intent_and_slots.encode({"words": [words], "slots": [tags], "intent": ["not_mentioned"]}, tokenizer,
                                       slot2id, {n: i for i, n in enumerate(INTENTS)}, 64, last_token=family == "gpt")
    word_ids = tokenizer(words_as_in_running_text(tokenizer, [words]), is_split_into_words=True).word_ids(0)
    assert sum(1 for w in word_ids if w == 0) > 1  # the test means something: a word of several tokens
    labels = encoding["slot_labels"][0]
    for word in range(len(words)):
        positions = [i for i, w in enumerate(word_ids) if w == word]
        chosen = positions[-1] if family == "gpt" else positions[0]
        assert labels[chosen] == slot2id[tags[word]]
        assert all(labels[i] == -100 for i in positions if i != chosen)
    assert all(labels[i] == -100 for i, w in enumerate(word_ids) if w is None)
    assert encoding["intent_labels"] == [2]


# --------------------------------------------------------------------------- readers


def _folder(root, words, tags, intents):
    root.mkdir(parents=True, exist_ok=True)
    for name, lines in (("seq.in", words), ("seq.out", tags), ("label", intents)):
        (root / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return root


def test_readers_parse_the_folder_and_jsonl_formats(tmp_path):
    folder = _folder(tmp_path / "atis" / "train", ["show flights to boston", "what is fare code h please"],
                     ["O O O B-toloc.city_name", "O O O O B-fare_basis_code O"], ["atis_flight", "atis_abbreviation"])
    for path in (folder, folder / "seq.in"):
        data = read_intent_and_slots(str(path))
        assert data["words"][0] == ["show", "flights", "to", "boston"]
        assert data["slots"][1][-2] == "B-fare_basis_code" and data["intent"] == ["atis_flight", "atis_abbreviation"]
    jsonl = tmp_path / "x.jsonl"
    jsonl.write_text('{"words": ["to", "Paris"], "slots": ["O", "B-city"], "intent": "book"}\n\n'
                     '{"tokens": ["hi"], "tags": ["O"], "intent": "greet"}\n', encoding="utf-8")
    data = read_intent_and_slots(str(jsonl))
    assert data["words"] == [["to", "Paris"], ["hi"]] and data["slots"] == [["O", "B-city"], ["O"]]
    assert data["intent"] == ["book", "greet"]
    unlabelled = tmp_path / "test.jsonl"
    unlabelled.write_text('{"words": ["to", "Paris"]}\n', encoding="utf-8")
    assert read_intent_and_slots(str(unlabelled)).column_names == ["words"]


def test_readers_refuse_misaligned_input_naming_file_and_line(tmp_path):
    folder = _folder(tmp_path / "a", ["show flights", "to boston"], ["O O", "O B-city"], ["atis_flight"])
    with pytest.raises(DataFormatError, match=r"a/label: 1 lines, but .*seq.in has 2"):
        read_intent_and_slots(str(folder))
    folder = _folder(tmp_path / "b", ["show flights", "to boston"], ["O O", "O"], ["x", "y"])
    with pytest.raises(DataFormatError, match=r"b/seq.out:2: 1 slot tags for 2 words"):
        read_intent_and_slots(str(folder))
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text('{"words": ["a"], "slots": ["O"], "intent": "x"}\n'
                     '{"words": ["a", "b"], "slots": ["O"], "intent": "x"}\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad.jsonl:2: 1 slot tags for 2 words"):
        read_intent_and_slots(str(jsonl))
    jsonl.write_text('{"words": ["a"], "slots": ["O"], "intent": "x"}\n{"words": ["a"]\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad.jsonl:2: not JSON"):
        read_intent_and_slots(str(jsonl))
    with pytest.raises(FileNotFoundError, match="seq.in"):
        read_intent_and_slots(str(tmp_path))


# --------------------------------------------------------------------------- metrics


def test_exact_match_is_per_sentence_and_slot_f1_per_entity():
    gold_intents = ["a", "a", "b", "b"]
    gold_slots = [["B-x", "O"], ["B-x", "I-x"], ["O", "O"], ["B-y", "O"]]
    predicted_intents = ["a", "b", "b", "b"]  # the second utterance's intent is wrong
    predicted_slots = [["B-x", "O"], ["B-x", "I-x"], ["O", "O"], ["B-x", "O"]]  # the fourth's tag is wrong
    result = intent_and_slots.scores(predicted_intents, gold_intents, predicted_slots, gold_slots)
    assert result["intent_accuracy"] == 0.75
    assert result["exact_match"] == 0.5  # only the first and third are right in both
    # Entities: gold (x), (x x), (y); predicted (x), (x x), (x): 2 of 3 right either way.
    assert result["slot_precision"] == pytest.approx(2 / 3) and result["slot_recall"] == pytest.approx(2 / 3)
    assert result["slot_f1"] == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="utterance 1"):
        intent_and_slots.scores(["a", "a"], ["a", "a"], [["O"], ["O"]], [["O"], ["O", "O"]])


# --------------------------------------------------------------------------- the shipped sample


def _builder():
    """scripts/make_slots_samples.py, the sample's builder (a developer tool beside the others, not in the package)."""
    spec = importlib.util.spec_from_file_location("make_slots_samples", REPO / "scripts" / "make_slots_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_sample_is_reproduced_by_its_generator_and_is_consistent():
    built = _builder().build()
    assert set(built) == {"slots.train.jsonl", "slots.validation.jsonl", "manifest.json"}
    for name, data in built.items():
        assert (SAMPLES / name).read_bytes() == data, name
    manifest = json.loads(built["manifest.json"])
    for name, entry in manifest["files"].items():
        records = [json.loads(line) for line in (SAMPLES / name).read_text(encoding="utf-8").splitlines()]
        assert entry["examples"] == len(records) and entry["license"] == "CC BY-SA 4.0"
        for r in records:
            assert len(r["words"]) == len(r["slots"]) and r["intent"] in INTENTS
            for previous, tag in zip(["O"] + r["slots"], r["slots"]):
                if tag.startswith("I-"):  # BIO: an I- tag continues a span of its own attribute
                    assert previous[2:] == tag[2:], r
    train = {tuple(json.loads(line)["words"]) for line in open(TRAIN, encoding="utf-8")}
    validation = {tuple(json.loads(line)["words"]) for line in open(VALIDATION, encoding="utf-8")}
    assert not train & validation


def test_the_generator_tags_verbatim_values_and_drops_unreliable_references():
    builder = _builder()
    mr = "name [ The Eagle ] , food [ French ] , familyFriendly [ no ]"
    record = builder.utterance(mr, "The Eagle serves french food and is not family @-@ friendly .")
    assert record["slots"][:4] == ["B-name", "I-name", "O", "B-food"] and record["intent"] == "not_family_friendly"
    assert builder.utterance(mr, "The Eagle serves crêpes , not for families .") is None  # food paraphrased
    assert builder.utterance(mr, "The Eagle serves French food .") is None  # familyFriendly left out
    assert builder.utterance("name [ X ] , priceRange [ high ] , customer rating [ high ]", "X is high .") is None


# --------------------------------------------------------------------------- the recipe


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """A tiny pre-training checkpoint (random weights) + tokenizer of every family, trained on the sample's words."""
    root = tmp_path_factory.mktemp("tiny-checkpoints")
    texts = [" ".join(json.loads(line)["words"])
             for path in (TRAIN, VALIDATION) for line in open(path, encoding="utf-8")]
    paths = {}
    for family in sorted(FAMILIES):
        config_class, _ = family_classes(family)
        tokenizer = _build_tokenizer("word2vec" if family == "svd" else family, texts)
        sizes = {"max_position_embeddings": 128} if family in ("bert", "gpt") else {"task_hidden_size": 16}
        config = config_class.from_named("tiny", vocab_size=len(tokenizer), **sizes)
        model = transformers.AutoModelForPreTraining.from_config(config) if family != "svd" else \
            transformers.AutoModel.from_config(config)
        paths[family] = str(root / family)
        model.save_pretrained(paths[family])
        tokenizer.save_pretrained(paths[family])
    return paths


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_recipe_runs_end_to_end_on_the_sample(family, checkpoints, tmp_path):
    out = tmp_path / "run"
    results = intent_and_slots.main([
        "--model_name_or_path", checkpoints[family], "--train_file", TRAIN, "--validation_file", VALIDATION,
        "--test_file", VALIDATION, "--max_train_samples", "48", "--max_eval_samples", "16",
        "--max_predict_samples", "16", "--num_train_epochs", "1", "--learning_rate", "1e-3", "--output_dir",
        str(out), *COMMON])
    assert results == json.loads((out / "all_results.json").read_text())
    for key in ("eval_intent_accuracy", "eval_slot_f1", "eval_exact_match", "predict_slot_f1"):
        assert 0.0 <= results[key] <= 1.0, key
    assert results["eval_intent_accuracy"] == results["predict_intent_accuracy"]  # the same 16 utterances
    model = AutoModelForIntentAndSlots.from_pretrained(out)
    assert model.config.intent_labels == INTENTS and "O" in model.config.id2label.values()
    gold = [json.loads(line) for line in open(VALIDATION, encoding="utf-8")][:16]
    written = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [w["words"] for w in written] == [g["words"] for g in gold]  # input order
    assert [w["gold_slots"] for w in written] == [g["slots"] for g in gold]
    assert all(w["intent"] in INTENTS and len(w["slots"]) == len(w["words"]) for w in written)
    assert all(set(w["slots"]) <= set(model.config.id2label.values()) for w in written)
    # The predictions file agrees with the reported scores.
    assert intent_and_slots.scores([w["intent"] for w in written], [w["gold_intent"] for w in written],
                                   [w["slots"] for w in written], [w["gold_slots"] for w in written]) == \
        pytest.approx({k.removeprefix("predict_"): v for k, v in results.items()
                       if k.removeprefix("predict_") in ("intent_accuracy", "slot_f1", "slot_precision",
                                                          "slot_recall", "exact_match")})
    assert "AutoModelForIntentAndSlots" in (out / "README.md").read_text(encoding="utf-8")
    # The fine-tuned folder predicts on its own (label maps from its config): the same file again.
    again = tmp_path / "predict-only"
    intent_and_slots.main(["--model_name_or_path", str(out), "--test_file", VALIDATION, "--do_predict",
                           "--max_predict_samples", "16", "--output_dir", str(again), *COMMON[3:]])
    assert (again / "predictions.jsonl").read_text(encoding="utf-8") == \
        (out / "predictions.jsonl").read_text(encoding="utf-8")


def test_a_tiny_bert_learns_the_task_beyond_the_baselines(checkpoints, tmp_path):
    """20 epochs on 64 utterances, scored on those utterances (what a random-init tiny model can do in seconds):
    the joint model beats both trivial predictors fitted to the same utterances, the majority intent and each
    word's most frequent tag (about 0.56 intent accuracy, 0.77 slot F1, 0.03 exact match; the model about 0.8, 0.9,
    0.6)."""
    head = tmp_path / "head.jsonl"
    head.write_text("".join(open(TRAIN, encoding="utf-8").readlines()[:64]), encoding="utf-8")
    results = intent_and_slots.main([
        "--model_name_or_path", checkpoints["bert"], "--train_file", str(head), "--validation_file", str(head),
        "--test_file", str(head), "--num_train_epochs", "20", "--learning_rate", "2e-3", "--warmup_steps", "10",
        "--output_dir", str(tmp_path / "run"), *COMMON])
    data = read_intent_and_slots(str(head))
    baseline = intent_and_slots.majority_baselines(data, data)
    assert results["eval_intent_accuracy"] > baseline["intent_accuracy"] + 0.1
    assert results["eval_slot_f1"] > baseline["slot_f1"]
    assert results["eval_exact_match"] > baseline["exact_match"] + 0.2


def test_unknown_validation_labels_are_refused_naming_the_file(checkpoints, tmp_path):
    bad = tmp_path / "dev.jsonl"
    bad.write_text('{"words": ["hi"], "slots": ["O"], "intent": "greet"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"dev.jsonl: intent 'greet' does not occur in the training data"):
        intent_and_slots.main(["--model_name_or_path", checkpoints["word2vec"], "--train_file", TRAIN,
                               "--validation_file", str(bad), "--output_dir", str(tmp_path / "o"), *COMMON[:2]])
    bad.write_text('{"words": ["hi"], "slots": ["B-city"], "intent": "not_mentioned"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"dev.jsonl: slot tag 'B-city' does not occur"):
        intent_and_slots.main(["--model_name_or_path", checkpoints["word2vec"], "--train_file", TRAIN,
                               "--validation_file", str(bad), "--output_dir", str(tmp_path / "o"), *COMMON[:2]])
    assert not (tmp_path / "o").exists()


def test_the_command_line_reports_bad_input_in_one_line(tmp_path, capsys):
    from hf_lineage.tasks import run_cli

    folder = _folder(tmp_path / "train", ["show flights"], ["O"], ["x"])
    status = run_cli(intent_and_slots.main, ["--model_name_or_path", "unused", "--train_file", str(folder),
                                             "--do_train", "--output_dir", str(tmp_path / "o")])
    assert status == 2 and "seq.out:1: 1 slot tags for 2 words" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    # The same recipe from the package's command line.
    from hf_lineage import cli

    assert cli.main(["finetune", "intent_and_slots", "--model_name_or_path", "unused", "--train_file", str(folder),
                     "--do_train", "--output_dir", str(tmp_path / "o")]) == 2
    assert "seq.out:1: 1 slot tags for 2 words" in capsys.readouterr().err
