"""``hf-lineage convert elmo``: AllenNLP's published ELMo releases as lineage folders (``hf_lineage.convert.
allennlp_elmo.release`` through ``hf_lineage.convert.releases.convert``), offline: the named release is AllenNLP's
own test biLM placed in the download cache (``tests/standins_elmo.py``), and the folder must compute what AllenNLP
computed with it (``tests/fixtures/allennlp_elmo/``)."""

import json
import shutil

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

import hf_lineage  # noqa: F401 - registers the lineage Auto classes
from hf_lineage.convert.allennlp_elmo import SPECIALS
from hf_lineage.convert.releases import convert
from hf_lineage.registry.families import ELMO_RELEASES
from hf_lineage.convert.sources import ConversionError

from conftest import run_without_hf_lineage
from standins_elmo import FIXTURES, save_elmo_standin


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """The stand-in of the named release "small" in a download cache, and the environment that reads it offline."""
    root = tmp_path_factory.mktemp("cache")
    save_elmo_standin(root)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_LINEAGE_CACHE", str(root))
        patch.setenv("HF_HUB_OFFLINE", "1")
        yield root


@pytest.fixture(scope="module")
def small(cache, tmp_path_factory):
    """``hf-lineage convert elmo small`` into a folder."""
    return convert("elmo", ["small"], tmp_path_factory.mktemp("converted") / "elmo-small",
                   command="hf-lineage convert elmo small --output-dir elmo-small")


def allennlp_batches():
    """AllenNLP's fixtures: 10 batches of 3 pre-tokenized sentences, and for each the top layer AllenNLP's stateful
    ``Elmo`` computed, (words, 2P) = [forward; backward] without <S> and </S>."""
    import h5py

    sentences = json.loads((FIXTURES / "sentences.json").read_text())
    expected = []
    for k in range(3):
        with h5py.File(FIXTURES / f"lm_embeddings_{k}.hdf5", "r") as f:
            expected.append([np.concatenate([f[str(i)][0], f[str(i)][1]], axis=-1) for i in range(10)])
    return [([sentences[k][i].split() for k in range(3)], [expected[k][i] for k in range(3)]) for i in range(10)]


def worst_difference(model, tokenizer, batches):
    """The largest |ours - AllenNLP's| over the words of each batch, read in order by ``model``."""
    worst = []
    for rows, expected in batches:
        enc = tokenizer(rows, is_split_into_words=True, padding=True, return_tensors="pt")
        with torch.no_grad():
            top = model(**enc).hidden_states[-1]
        # Our outputs keep <S> and </S> (AllenNLP strips them): the words are positions 1 .. n.
        worst.append(max(np.abs(top[k, 1 : len(row) + 1].numpy() - want).max()
                         for k, (row, want) in enumerate(zip(rows, expected))))
    return worst


def spelled(word, cap=50):
    """AllenNLP's ELMoCharacterMapper, written out: [bow, bytes..., eow, pad...] + 1; <S>, </S> one character."""
    markers = {"<S>": [256], "</S>": [257]}
    body = markers.get(word, list(word.encode("utf-8"))[: cap - 2])
    return [i + 1 for i in [258, *body, 259] + [260] * (cap - len(body) - 2)]


# --------------------------------------------------------------------------- the named release


def test_named_release_loads_with_auto_classes_and_computes_what_allennlp_computed(small):
    model, tokenizer = AutoModel.from_pretrained(small).eval(), AutoTokenizer.from_pretrained(small)
    assert type(model).__name__ == "LineageElmoModel" and type(tokenizer).__name__ == "LineageElmoTokenizerFast"
    assert not model.config.stateful  # the lineage's default: features independent of earlier batches
    batches = allennlp_batches()
    # Stateless, the first batch (zero states in AllenNLP too) is AllenNLP's, and every batch reads the same twice.
    assert worst_difference(model, tokenizer, batches[:1])[0] <= 1e-5
    assert worst_difference(model, tokenizer, batches[1:2]) == worst_difference(model, tokenizer, batches[1:2])
    # With the states carried, as AllenNLP's Elmo runs: all 10 batches.
    stateful = AutoModel.from_pretrained(small, stateful=True).eval()
    worst = worst_difference(stateful, tokenizer, batches)
    assert max(worst) <= 1e-5, worst


def test_tokenizer_gives_allennlp_character_ids(small):
    tokenizer = AutoTokenizer.from_pretrained(small)
    assert tokenizer.convert_ids_to_tokens(list(range(len(tokenizer)))) == SPECIALS  # no vocabulary shipped
    words = ["The", "naïve", "café", "東京", "Zürich's", "x" * 60, "<S>", "</S>"]
    enc = tokenizer(" ".join(words))
    assert enc["char_ids"] == [spelled(w) for w in ["<S>", *words, "</S>"]]
    assert enc["input_ids"] == [2, *[1] * 6, 2, 3, 3]  # <S> ... </S>: every word is <UNK>; the markers keep theirs
    assert tokenizer(words, is_split_into_words=True)["char_ids"] == enc["char_ids"]


def test_card_and_record_name_source_license_citation_and_words(small):
    card = (small / "README.md").read_text()
    small_options, small_weights = ELMO_RELEASES["small"]
    assert "AllenNLP ELMo small" in card and small_weights in card and small_options in card
    assert "license: apache-2.0" in card and "@inproceedings{peters-etal-2018-deep" in card
    assert "800,000,000 words" in card and "1B Word Benchmark" in card
    assert "stateless" in card and "stateful=True" in card and "no softmax" in card
    record = json.loads((small / "pretraining.json").read_text())
    assert record["family"] == "elmo" and record["converted_from"].startswith("AllenNLP ELMo small (")
    assert record["words_seen"] == 800_000_000 and "1B Word Benchmark" in record["words_seen_from"]
    assert record["license"] == "apache-2.0" and record["command"].startswith("hf-lineage convert elmo small")
    assert not [p.name for p in small.parent.iterdir() if p.name != small.name]  # no staging folder left


def test_a_release_without_its_softmax_is_listed_unscored_by_zero_shot_scoring(small):
    # Its language models' output layer would be a new, untrained one: scoring sentences with it would be noise.
    from hf_lineage.minimal_pairs.model_specs import resolve_model
    from hf_lineage.minimal_pairs.pairs import MinimalPair
    from hf_lineage.minimal_pairs.zero_shot import evaluate_models

    assert "without its softmax" in json.loads((small / "pretraining.json").read_text())["no_sentence_probability"]
    spec = resolve_model(f"elmo={small}")
    assert spec.kind == "unscored" and not spec.sentence_probability
    pair = MinimalPair("The cat sleeps .", "The cat sleep .", "uid", "field", "term", "0", "f", 1)
    evaluated = evaluate_models([spec], [pair], resamples=0)
    [model] = evaluated["models"]
    assert not model["sentence_probability"] and not model["systems"] and not evaluated["systems"]
    assert "without its softmax" in model["notes"][0]


def test_folder_loads_with_trust_remote_code_without_hf_lineage(small, tmp_path):
    (rows, expected), = allennlp_batches()[:1]
    np.save(tmp_path / "expected.npy", np.concatenate([e.ravel() for e in expected]))
    out = run_without_hf_lineage(f"""
import numpy as np, torch
from transformers import AutoModel, AutoTokenizer
tokenizer = AutoTokenizer.from_pretrained({str(small)!r}, trust_remote_code=True)
model = AutoModel.from_pretrained({str(small)!r}, trust_remote_code=True).eval()
assert "hf_lineage" not in type(model).__module__ and not model.config.stateful
rows = {rows!r}
enc = tokenizer(rows, is_split_into_words=True, padding=True, return_tensors="pt")
with torch.no_grad():
    top = model(**enc).hidden_states[-1]
ours = np.concatenate([top[k, 1 : len(row) + 1].numpy().ravel() for k, row in enumerate(rows)])
print(float(np.abs(ours - np.load("expected.npy")).max()))
print(tokenizer("naïve 東京")["char_ids"][1][:8])
""", cwd=tmp_path)
    difference, chars = out.strip().splitlines()[-2:]
    assert float(difference) <= 1e-5
    assert chars == str(spelled("naïve")[:8])


# --------------------------------------------------------------------------- other ways to name the files


def test_two_urls_two_paths_and_a_folder_give_the_same_model(small, cache, tmp_path):
    reference = AutoModel.from_pretrained(small).state_dict()
    options_url, weights_url = ELMO_RELEASES["small"]
    # The URLs of the release, given as files (read from the cache): named by their URLs, its training data known.
    by_url = convert("elmo", [options_url, weights_url], tmp_path / "urls")
    record = json.loads((by_url / "pretraining.json").read_text())
    assert record["converted_from"] == f"{options_url} + {weights_url}" and record["words_seen"] == 800_000_000
    # Two paths with a vocabulary after them: bilm-tf's vocab.txt (no <pad>: appended) gives the word ids.
    (tmp_path / "vocab.txt").write_text("<S>\n</S>\n<UNK>\nthe\ncat\n")
    paths = [str(FIXTURES / "options.json"), str(FIXTURES / "lm_weights.hdf5"), str(tmp_path / "vocab.txt")]
    by_path = convert("elmo", paths, tmp_path / "paths")
    record = json.loads((by_path / "pretraining.json").read_text())
    assert record["converted_from"] == "options.json + lm_weights.hdf5 + vocab.txt" and record["words_seen"] is None
    tokenizer = AutoTokenizer.from_pretrained(by_path)
    assert tokenizer("the cat purred")["input_ids"] == [0, 3, 4, 2, 1]
    assert AutoModel.from_pretrained(by_path).config.pad_token_id == 5
    # A folder holding the two files (names as the release's) and a vocabulary, found by their names.
    folder = tmp_path / "release"
    folder.mkdir()
    shutil.copyfile(FIXTURES / "options.json", folder / "elmo_2x1024_128_2048cnn_1xhighway_options.json")
    shutil.copyfile(FIXTURES / "lm_weights.hdf5", folder / "elmo_2x1024_128_2048cnn_1xhighway_weights.hdf5")
    shutil.copyfile(tmp_path / "vocab.txt", folder / "vocab-2016-09-10.txt")
    by_folder = convert("elmo", [str(folder)], tmp_path / "folder")
    record = json.loads((by_folder / "pretraining.json").read_text())
    assert record["converted_from"].startswith("release/") and record["words_seen"] == 800_000_000
    assert len(AutoTokenizer.from_pretrained(by_folder)) == 6
    for out in (by_url, by_path, by_folder):
        for name, tensor in AutoModel.from_pretrained(out).state_dict().items():
            torch.testing.assert_close(tensor, reference[name], atol=0, rtol=0)


# --------------------------------------------------------------------------- errors


def _errors(tmp_path):
    """(sources, what the message must name) of each release that cannot be converted."""
    options = json.loads((FIXTURES / "options.json").read_text())
    (tmp_path / "not-json_options.json").write_text("{'lstm': ")
    (tmp_path / "no-lstm_options.json").write_text(json.dumps({"char_cnn": options["char_cnn"]}))
    wider = json.loads(json.dumps(options))
    wider["lstm"]["dim"] = 32
    (tmp_path / "wider_options.json").write_text(json.dumps(wider))
    (tmp_path / "text_weights.hdf5").write_text("not an hdf5 file\n")
    whole = (FIXTURES / "lm_weights.hdf5").read_bytes()
    (tmp_path / "half_weights.hdf5").write_bytes(whole[: len(whole) // 2])
    good_options, good_weights = str(FIXTURES / "options.json"), str(FIXTURES / "lm_weights.hdf5")
    return [
        ([], "1 to 3 sources"),
        ([good_options, good_weights, good_options, good_weights], "1 to 3 sources"),
        (["huge"], "huge: not a named release"),
        ([str(tmp_path / "not-json_options.json"), good_weights], "not-json_options.json: not a bilm-tf options JSON"),
        ([str(tmp_path / "no-lstm_options.json"), good_weights], "no-lstm_options.json: not usable as ELMo options"),
        ([good_options, str(tmp_path / "text_weights.hdf5")], "text_weights.hdf5: not an HDF5 file"),
        ([good_options, str(tmp_path / "half_weights.hdf5")], "half_weights.hdf5: cannot be read as HDF5"),
        ([str(tmp_path / "wider_options.json"), good_weights], "lm_weights.hdf5: does not match wider_options.json"),
        ([good_options, str(tmp_path / "missing_weights.hdf5")], "missing_weights.hdf5: no such file"),
        ([str(tmp_path)], "needs exactly one *options*.json file, found"),
    ]


def test_each_unusable_release_is_one_conversion_error_naming_the_file_and_leaves_nothing(tmp_path, cache):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    parent = tmp_path / "outputs"
    out = parent / "elmo"
    out.mkdir(parents=True)  # an empty OUT stays empty
    for sources, named in _errors(inputs):
        with pytest.raises(ConversionError) as error:
            convert("elmo", sources, out)
        message = str(error.value)
        assert named in message and "\n" not in message, (sources, message)
        assert [p.name for p in parent.iterdir()] == ["elmo"] and not any(out.iterdir())
