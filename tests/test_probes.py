"""``hf_lineage.analysis.probes``: a probe finds a label its features encode and not one they do not, the control
task gives one label per word type with the property's distribution, selectivity is accuracy − control, every
family has the right number of layers, and ``hf-lineage analyze probes`` writes its files or fails cleanly; the
sentence properties (length, depth, root_dependents) and agreement across an attractor get the right labels from a
hand-written tree, their controls, majority and cue baselines, the sample's README counts, and the best layers."""

import collections
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from hf_lineage.analysis import probes
from hf_lineage.cli import main as cli_main
from hf_lineage.lineage import probing as lineage_probing
from hf_lineage.models import (
    LineageBertConfig,
    LineageBertModel,
    LineageElmoConfig,
    LineageElmoModel,
    LineageElmoTokenizer,
    LineageGPTConfig,
    LineageGPTModel,
    LineageWord2VecConfig,
    LineageWord2VecModel,
)
from hf_lineage.tokenization import (
    train_bpe_tokenizer,
    train_wordlevel_tokenizer,
    train_wordpiece_tokenizer,
)

# A few sentences of the probing sample are enough for tiny models and seconds of probing.
FEW = {"train_sentences": 40, "validation_sentences": 20, "grid": (1.0,), "bootstrap_samples": 50}


def sample_text(n=60):
    return [" ".join(r["tokens"]) for r in probes.load_probing_sample("train", n)]


@pytest.fixture(scope="module")
def tiny_models():
    """One tiny model of each kind, with a tokenizer trained on the probing sample: static, ELMo, GPT, BERT."""
    text = sample_text()
    words = train_wordlevel_tokenizer(iterator=text, min_count=1)
    bpe = train_bpe_tokenizer(iterator=text, vocab_size=300, min_frequency=1)
    vocab = ["<pad>", "<UNK>", "<S>", "</S>", *sorted({w for line in text for w in line.split()})]
    elmo_tokenizer = LineageElmoTokenizer(vocab=vocab)
    wordpiece = train_wordpiece_tokenizer(iterator=text, vocab_size=300, min_frequency=1, model_max_length=128)
    return {
        "word2vec": (LineageWord2VecModel(LineageWord2VecConfig.from_named("tiny", vocab_size=len(words))), words),
        "elmo": (LineageElmoModel(LineageElmoConfig.from_named("tiny", vocab_size=len(vocab))), elmo_tokenizer),
        "gpt": (LineageGPTModel(LineageGPTConfig.from_named("tiny", vocab_size=len(bpe))), bpe),
        "bert": (LineageBertModel(LineageBertConfig.from_named("tiny", vocab_size=len(wordpiece))), wordpiece),
    }


def test_the_embedded_sample_labels_nouns_with_number_and_finite_verbs_with_tense():
    train, validation = probes.load_probing_sample("train"), probes.load_probing_sample("validation")
    assert (len(train), len(validation)) == (1000, 400)
    for record in train + validation:
        assert len(record["tokens"]) == len(record["upos"])
        assert all(record["upos"][i] == "NOUN" and label in ("Sing", "Plur") for i, label in record["number"])
        assert all(record["upos"][i] in ("VERB", "AUX") and label in ("Past", "Pres") for i, label in record["tense"])
    assert len(probes.labelled_words(train, "number").labels) == 2681  # the counts in hf_lineage/samples/analysis/README.md
    assert len(probes.labelled_words(validation, "tense").labels) == 456


def test_a_probe_on_features_that_encode_the_label_beats_one_on_noise():
    rng = np.random.default_rng(0)
    labels = rng.choice(["NOUN", "VERB", "DET"], size=600)
    sentences = np.arange(600) // 10
    noise = rng.normal(size=(600, 8))
    encoded = noise.copy()
    encoded[:, :3] += 3 * (labels[:, None] == np.array(["NOUN", "VERB", "DET"]))  # one direction per label
    train, test = slice(0, 400), slice(400, None)
    scores = {}
    for name, features in (("encoded", encoded), ("noise", noise)):
        probe = probes.fit_probe(features[train], labels[train], sentences[train])
        scores[name] = (probe.predict(features[test]) == labels[test]).mean()
        assert set(probe.dev_accuracy) == set(probes.C_GRID) and probe.C in probes.C_GRID
    assert scores["encoded"] > 0.95
    assert scores["noise"] < 0.5  # chance is 1/3


def test_control_task_gives_each_word_type_one_label_with_the_propertys_distribution():
    words = [f"w{i}" for i in range(4000)] * 2  # every type twice
    labels = ["Sing"] * 750 + ["Plur"] * 250
    control = probes.control_labels(words, labels, seed=0)
    assert set(control) == set(words) and set(control.values()) == {"Sing", "Plur"}
    share = collections.Counter(control.values())["Sing"] / len(control)
    assert abs(share - 0.75) < 0.03
    assert probes.control_labels(list(reversed(words)), labels, seed=0) == control  # order does not matter
    assert probes.control_labels(words, labels, seed=1) != control

    # Through the property task: every occurrence of a type carries its type's control label.
    train, validation = probes.load_probing_sample("train", 100), probes.load_probing_sample("validation", 50)
    task = probes._property_task(train, validation, "upos", seed=0)
    by_type = collections.defaultdict(set)
    for word, label in zip(task.train.words + task.validation.words,
                           [*task.control_train, *task.control_validation]):
        by_type[word].add(label)
    assert all(len(labels) == 1 for labels in by_type.values())
    assert set(task.control_train) <= set(task.train.labels)


def test_majority_baseline_takes_each_words_most_frequent_label_and_the_overall_one_for_unseen_words():
    predicted = probes.majority_baseline(["run", "run", "run", "dog", "dog"], ["VERB", "NOUN", "VERB", "NOUN", "NOUN"],
                                         ["run", "dog", "cat"])
    assert predicted.tolist() == ["VERB", "NOUN", "NOUN"]


def test_bootstrap_resamples_sentences_and_keeps_differences_paired():
    correct = {"a": np.array([1, 1, 0, 1, 0, 1], bool), "b": np.array([1, 0, 0, 1, 0, 0], bool)}
    sentences = np.array([0, 0, 1, 2, 2, 3])
    boot = probes.bootstrap_accuracies(correct, sentences, samples=500, seed=0)
    assert boot["a"].shape == (500,) and np.all(boot["a"] >= boot["b"])  # a is right wherever b is: paired draws
    lo, hi = probes.interval(boot["a"])
    assert lo <= correct["a"].mean() <= hi


def test_layer_counts_per_family_and_selectivity_is_accuracy_minus_control(tiny_models):
    expected = {"word2vec": 1, "elmo": 3, "gpt": LineageGPTConfig.from_named("tiny").num_hidden_layers + 1,
                "bert": LineageBertConfig.from_named("tiny").num_hidden_layers + 1}
    results = probes.run_probes(list(tiny_models.values()), properties=["upos", "number"], **FEW)
    assert list(results.models) == list(expected)
    for name, count in expected.items():
        assert len(results.models[name]["layers"]) == count
        assert sorted({s.layer for s in results.scores if s.model == name}) == list(range(count))
    assert results.models["elmo"]["layers"] == ["token", "biLSTM 1", "biLSTM 2"]
    assert len(results.scores) == sum(expected.values()) * 2
    for score in results.scores:
        assert score.selectivity == pytest.approx(score.accuracy - score.control_accuracy)
        assert score.accuracy_interval[0] <= score.accuracy <= score.accuracy_interval[1]
    # the majority baseline depends on the words only: the same for every model and layer
    assert len({(s.property, s.majority) for s in results.scores}) == 2
    table = results.table()
    assert table.count("\n") == len(results.scores) + 2 and "| elmo | 2 (biLSTM 2) | number |" in table


def test_every_layer_of_one_pass_equals_contextual_vectors_at_that_layer(tiny_models):
    from hf_lineage.vectors.contextual import ContextualVectors

    model, tokenizer = tiny_models["bert"]
    records = probes.load_probing_sample("validation", 5)
    features = probes.layer_features(model, tokenizer, records)
    for layer in range(len(features)):
        alone = ContextualVectors(model, tokenizer, layer=layer).embed([" ".join(r["tokens"]) for r in records])
        for ours, theirs in zip(features[layer], alone):
            np.testing.assert_allclose(ours, theirs.numpy(), atol=1e-5)


def test_static_vectors_are_the_words_input_embedding_rows(tiny_models):
    model, tokenizer = tiny_models["word2vec"]
    records = [{"tokens": ["the", "the", "of"]}]
    (vectors,) = probes.layer_features(model, tokenizer, records)[0]
    ids = tokenizer.convert_tokens_to_ids(["the", "the", "of"])
    np.testing.assert_allclose(vectors, model.get_input_embeddings().weight[ids].detach().numpy())


def test_cli_writes_results_table_and_plots(tiny_models, tmp_path):
    folder = tmp_path / "word2vec"
    model, tokenizer = tiny_models["word2vec"]
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    out = tmp_path / "probes"
    code = cli_main(["analyze", "probes", "--models", str(folder), "--properties", "upos", "tense",
                     "--train-sentences", "40", "--validation-sentences", "20", "--C", "1", "--output-dir", str(out)])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["probes_overview.png", "probes_word2vec.png", "results.json",
                                                      "table.md"]
    results = json.loads((out / "results.json").read_text())
    assert [s["property"] for s in results["scores"]] == ["upos", "tense"]
    assert results["models"]["word2vec"]["path"] == str(folder)
    assert "| word2vec | 0 (vectors) | tense |" in (out / "table.md").read_text()


def test_cli_refuses_bad_input_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "probes"
    not_a_model = tmp_path / "empty"
    not_a_model.mkdir()
    assert cli_main(["analyze", "probes", "--models", str(not_a_model), "--output-dir", str(out)]) == 2
    assert "is not a saved model folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        cli_main(["analyze", "probes", "--models", str(not_a_model), "--properties", "gender",
                  "--output-dir", str(out)])
    assert exit_.value.code == 2 and "invalid choice: 'gender'" in capsys.readouterr().err
    assert cli_main(["analyze", "probes", "--models", str(not_a_model), "--train-sentences", "0",
                     "--output-dir", str(out)]) == 2
    assert not out.exists()
    assert not list(tmp_path.glob(".probes.*"))  # no staging folder left behind


def test_unknown_property_in_the_api_names_the_known_ones():
    with pytest.raises(ValueError, match="known: upos, number, tense"):
        probes.run_probes([], properties=["gender"])


def test_the_lineage_run_probes_its_pretrained_models_when_labeling_is_asked(tmp_path):
    out = tmp_path / "report"
    code = cli_main(["lineage", "--output-dir", str(out), "--families", "nnlm", "--tasks", "labeling",
                     "--variants", "frozen", "--budget-words", "3000", "--task-train", "16", "--task-validation",
                     "8", "--finetune-epochs", "1", "--curve-sizes", "--workers", "0", "--blimp-pairs", "0"])
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    probed = results["probes"]
    assert probed["status"] == "ok" and list(probed["models"]) == ["nnlm"]
    assert {s["property"] for s in probed["scores"]} == set(lineage_probing.PROPERTIES)
    assert probed["plots"] == ["stages/probes/probes_nnlm.png", "stages/probes/probes_overview.png"]
    assert all((out / path).is_file() for path in probed["plots"])
    report = (out / "report.md").read_text()
    assert "## What each layer learns (probes)" in report and "| nnlm | 0 (vectors) | upos |" in report
    assert "probes" in results["time_split"]
    assert not lineage_probing.probing_wanted(["classification", "pairs", "generation"])


# --------------------------------------------------------------------------- beyond words: sentences and agreement

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

# "The keys to the cabinet are red ." (the copula agrees with the subject of "red", across "cabinet") and "Dogs bark ."
TREES = """# text = The keys to the cabinet are red.
1\tThe\tthe\tDET\tDT\tDefinite=Def|PronType=Art\t2\tdet\t_\t_
2\tkeys\tkey\tNOUN\tNNS\tNumber=Plur\t7\tnsubj\t_\t_
3\tto\tto\tADP\tIN\t_\t5\tcase\t_\t_
4\tthe\tthe\tDET\tDT\tDefinite=Def|PronType=Art\t5\tdet\t_\t_
5\tcabinet\tcabinet\tNOUN\tNN\tNumber=Sing\t2\tnmod\t_\t_
6\tare\tbe\tAUX\tVBP\tMood=Ind|Number=Plur|Person=3|Tense=Pres|VerbForm=Fin\t7\tcop\t_\t_
7\tred\tred\tADJ\tJJ\tDegree=Pos\t0\troot\t_\t_
8\t.\t.\tPUNCT\t.\t_\t7\tpunct\t_\t_

1\tDogs\tdog\tNOUN\tNNS\tNumber=Plur\t2\tnsubj\t_\t_
2\tbark\tbark\tVERB\tVBP\tMood=Ind|Number=Plur|Person=3|Tense=Pres|VerbForm=Fin\t0\troot\t_\t_
3\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_

"""


def _builder():
    spec = importlib.util.spec_from_file_location("make_probing_samples", REPO / "scripts" / "make_probing_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sentence_labels_and_agreement_items_from_a_hand_written_tree(tmp_path):
    path = tmp_path / "two.conllu"
    path.write_text(TREES, encoding="utf-8")
    builder = _builder()
    (keys, dogs) = [builder.sentence_record(*sentence) for sentence in builder.treebank(path)]
    # red → keys → cabinet → the: four words on the longest root path; punctuation and determiners are no core
    # dependents, the root stands as its UPOS
    assert (keys["depth"], keys["root_dependents"]) == (4, "nsubj cop ADJ")
    assert (dogs["depth"], dogs["root_dependents"]) == (2, "nsubj VERB")
    assert keys["number"] == [[1, "Plur"], [4, "Sing"]] and keys["tense"] == [[5, "Pres"]]  # the old fields stay
    assert [probes.sentence_label(keys, p) for p in probes.SENTENCE_PROPERTIES] == ["7-10", "4", "nsubj cop ADJ"]
    assert [probes.sentence_label(dogs, p) for p in ("length", "depth")] == ["1-6", "1-3"]
    # "are" agrees with "keys" across "cabinet", a singular attractor: a mismatched item; "Dogs bark" has no attractor
    (sentence,) = builder.agreement_sentences([path])
    assert sentence["items"] == [{"verb": 5, "number": "Plur", "subject": 1, "attractor": 4,
                                  "attractor_number": "Sing"}]
    records = [sentence]
    item = probes.labelled_words(records, "agreement")
    assert (item.position.tolist(), item.words, item.labels.tolist()) == ([4], ["cabinet"], ["Plur"])
    assert probes.agreement_prefixes(records) == [{"tokens": ["The", "keys", "to", "the", "cabinet"]}]
    assert probes.mismatched(records).tolist() == [True]
    assert probes.nearest_noun_numbers(records).tolist() == ["Sing"]  # the cue is wrong exactly here
    with pytest.raises(ValueError, match="do not form a tree"):
        builder.tree_depth([2, 1])


def test_bins_and_the_root_dependents_classes():
    assert [probes.bin_label(n, probes.LENGTH_EDGES) for n in (3, 6, 7, 14, 15, 25, 26, 40)] == \
        ["1-6", "1-6", "7-10", "11-14", "15-19", "20-25", "26+", "26+"]
    assert [probes.bin_label(d, probes.DEPTH_EDGES) for d in (2, 3, 4, 6, 7, 13)] == ["1-3", "1-3", "4", "6", "7+", "7+"]
    assert probes.top_classes(["b", "a", "a", "c", "b", "d"], k=2) == {"a", "b"}
    task = probes._property_task(probes.load_probing_sample("train"), probes.load_probing_sample("validation"),
                                 "root_dependents", seed=0)
    classes = set(task.train.labels)
    assert len(classes) == probes.TOP_CLASSES + 1 and "other" in classes and "nsubj VERB obj" in classes
    assert set(task.validation.labels) <= classes


def test_sentence_controls_go_by_first_word_and_majority_is_one_label():
    train, validation = probes.load_probing_sample("train", 200), probes.load_probing_sample("validation", 100)
    for prop in probes.SENTENCE_PROPERTIES:
        task = probes._property_task(train, validation, prop, seed=0)
        assert len(task.train.labels) == 200 and task.train.words == [r["tokens"][0] for r in train]
        by_first_word = collections.defaultdict(set)
        for word, label in zip(task.train.words + task.validation.words,
                               [*task.control_train, *task.control_validation]):
            by_first_word[word].add(label)
        assert all(len(labels) == 1 for labels in by_first_word.values())
        most_frequent = collections.Counter(task.train.labels).most_common(1)[0][0]
        assert task.majority_correct.tolist() == (task.validation.labels == most_frequent).tolist()
        assert (task.cue_correct is not None) == (prop == "depth")  # the length-only cue for depth


def test_sentence_vector_is_the_mean_or_the_last_word():
    words = [np.array([[1.0, 2.0], [3.0, 6.0]]), np.array([[5.0, 5.0]])]
    np.testing.assert_allclose(probes.sentence_vectors(words), [[2.0, 4.0], [5.0, 5.0]])
    np.testing.assert_allclose(probes.sentence_vectors(words, "last"), [[3.0, 6.0], [5.0, 5.0]])
    with pytest.raises(ValueError, match="sentence_vector"):
        probes.sentence_vectors(words, "max")


def test_agreement_sample_items_and_readme_counts():
    text = (probes._samples.ANALYSIS / "README.md").read_text(encoding="utf-8")
    for split in ("train", "validation"):
        records = probes.load_probing_sample(split, kind="agreement")
        items = [item for r in records for item in r["items"]]
        for r in records:
            for item in r["items"]:
                assert item["subject"] < item["attractor"] < item["verb"] < len(r["tokens"])
                assert item["number"] in ("Sing", "Plur") and item["attractor_number"] in ("Sing", "Plur")
        hard = sum(item["attractor_number"] != item["number"] for item in items)
        plural = sum(item["number"] == "Plur" for item in items)
        assert (f"| agreement.{split}.jsonl | {len(records)} | {len(items)} | Plur {plural}, "
                f"Sing {len(items) - plural} | {hard} |") in text
        depths = collections.Counter(r["depth"] for r in probes.load_probing_sample(split))
        assert ", ".join(f"{d} {n}" for d, n in sorted(depths.items())) in text
    assert (len(records), len(items), hard) == (100, 101, 37)


@pytest.mark.skipif(not (SHARED_DATA / "ud_english_ewt").is_dir(), reason="needs ../shared/data/ud_english_ewt")
def test_the_builder_reproduces_the_sample_byte_for_byte(tmp_path):
    _builder().main(["--data-dir", str(SHARED_DATA), "--output-dir", str(tmp_path)])
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["README.md", "agreement.train.jsonl", "agreement.validation.jsonl", "probing.train.jsonl",
                       "probing.validation.jsonl"]
    for name in written:
        assert (tmp_path / name).read_bytes() == (probes._samples.ANALYSIS / name).read_bytes(), name


def test_sentence_and_agreement_probes_end_to_end(tiny_models):
    new = ["length", "depth", "root_dependents", "agreement"]
    models = [tiny_models["word2vec"], tiny_models["gpt"]]
    results = probes.run_probes(models, properties=new, **FEW)
    layers = {"word2vec": 1, "gpt": LineageGPTConfig.from_named("tiny").num_hidden_layers + 1}
    assert len(results.scores) == sum(layers.values()) * len(new)
    for score in results.scores:
        assert 0 <= score.control_accuracy <= 1 and 0 <= score.majority <= 1
        assert score.selectivity == pytest.approx(score.accuracy - score.control_accuracy)
        assert (score.cue is not None) == (score.property in ("depth", "agreement"))
        assert (score.mismatched is not None) == (score.property == "agreement")
        if score.property == "agreement":
            assert score.mismatched["cue"] == 0.0 and score.mismatched["items"] >= 1  # the heuristic's blind spot
        else:
            assert score.train_words == FEW["train_sentences"]  # one unit per sentence
    # the baselines depend on the data only; the cue column and the agreement table appear
    assert len({(s.property, s.majority, s.cue) for s in results.scores}) == len(new)
    assert "cue baseline" in results.table() and results.agreement_table().count("\n") == layers["gpt"] + 1 + 2
    best = {(b["model"], b["property"]): b for b in results.best_layers()}
    assert best["gpt", "length"]["level"] == "surface" and best["gpt", "agreement"]["level"] == "syntactic"
    assert best["word2vec", "depth"]["accuracy_separable"] is None  # one layer: nothing to separate
    assert isinstance(best["gpt", "depth"]["accuracy_separable"], bool)
    assert "length (surface) at" in results.summary()[1]
    assert results.settings["levels"] == {p: probes.LEVELS[p] for p in new}


def test_cli_takes_the_new_properties_and_reports_where_each_lives(tiny_models, tmp_path):
    folder = tmp_path / "word2vec"
    model, tokenizer = tiny_models["word2vec"]
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    out = tmp_path / "probes"
    code = cli_main(["analyze", "probes", "--models", str(folder), "--properties", "depth", "agreement",
                     "--sentence-vector", "last", "--train-sentences", "40", "--validation-sentences", "20", "--C",
                     "1", "--bootstrap-samples", "20", "--output-dir", str(out)])
    assert code == 0
    table = (out / "table.md").read_text()
    assert "## Subject-verb agreement across an attractor" in table and "## Which layer holds each property" in table
    assert "| word2vec | depth | syntactic | vectors: " in table
    assert json.loads((out / "results.json").read_text())["settings"]["sentence_vector"].startswith("last")
    with pytest.raises(ValueError, match="known: upos, number, tense, length, depth, root_dependents, agreement"):
        probes.run_probes([], properties=["tree_depth"])
    with pytest.raises(ValueError, match="sentence_vector"):
        probes.run_probes([folder], properties=["length"], sentence_vector="max")
