"""hf_lineage.analysis.polysemy: the shipped sentences, the numbers on hand-built vectors, static vs contextual
vectors of tiny saved models, and ``hf-lineage analyze polysemy`` end to end (files written, bad input refused)."""

import json
from collections import Counter

import numpy as np
import pytest
import torch

from hf_lineage.analysis.polysemy import (
    SENTENCES,
    WordLayer,
    analyze_polysemy,
    load_sentences,
    nearest_occurrences,
    permutation_p_values,
    project,
    sense_similarity,
)
from hf_lineage.cli import main as cli_main

WORDS = ["play", "bank"]


@pytest.fixture(scope="module")
def sentences():
    return load_sentences(words=WORDS)


def _save(model, tokenizer, folder):
    model.eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def model_folders(tmp_path_factory):
    """Untrained tiny word2vec, ELMo, GPT and BERT saved with tokenizers trained on the shipped sentences: random
    weights are enough to tell one vector per word from one per occurrence."""
    from hf_lineage import (
        LineageBertConfig,
        LineageBertModel,
        LineageElmoConfig,
        LineageElmoModel,
        LineageGPTConfig,
        LineageGPTModel,
        LineageWord2VecConfig,
        LineageWord2VecForPreTraining,
    )
    from hf_lineage.objectives.elmo import elmo_tokenizer_from_corpus
    from hf_lineage.tokenization import (
        train_bpe_tokenizer,
        train_wordlevel_tokenizer,
        train_wordpiece_tokenizer,
    )

    corpus = [s.sentence for s in load_sentences()]
    root = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    words = train_wordlevel_tokenizer(iterator=corpus)
    chars = elmo_tokenizer_from_corpus(iterator=corpus)
    pieces = train_wordpiece_tokenizer(iterator=corpus, vocab_size=200, min_frequency=1)
    bytes_ = train_bpe_tokenizer(iterator=corpus, vocab_size=300, min_frequency=1)
    return {
        "word2vec": _save(LineageWord2VecForPreTraining(LineageWord2VecConfig.from_named(
            "tiny", vocab_size=len(words))), words, root / "word2vec"),
        "elmo": _save(LineageElmoModel(LineageElmoConfig.from_named("tiny", vocab_size=len(chars))), chars,
                      root / "elmo"),
        "gpt": _save(LineageGPTModel(LineageGPTConfig.from_named("tiny", vocab_size=len(bytes_))), bytes_,
                     root / "gpt"),
        "bert": _save(LineageBertModel(LineageBertConfig.from_named("tiny", vocab_size=len(pieces))), pieces,
                      root / "bert"),
    }


@pytest.fixture(scope="module")
def result(model_folders, sentences):
    return analyze_polysemy(list(model_folders.values()), sentences)


def test_shipped_sentences_hold_several_ambiguous_words_each_sentence_with_its_word():
    rows = load_sentences()
    senses = Counter((row.word, row.sense) for row in rows)
    per_word = Counter(word for word, _ in senses)
    assert len(per_word) >= 5 and all(2 <= n <= 3 for n in per_word.values())
    assert min(senses.values()) >= 6
    assert all(row.word in row.sentence.split() for row in rows)
    assert SENTENCES.with_name("polysemy.README.md").read_text().count("Apache-2.0")


def test_bad_sentence_files_and_words_are_value_errors(tmp_path):
    with pytest.raises(ValueError, match="no sentences for \\['plya'\\]"):
        load_sentences(words=["plya"])
    path = tmp_path / "s.jsonl"
    path.write_text('{"word": "bank", "sense": "river", "sentence": "the river is wide ."}\n')
    with pytest.raises(ValueError, match="s.jsonl:1: 'bank' is not one of the sentence's"):
        load_sentences(path)
    path.write_text('{"word": "bank", "sense": "river", "sentence": "the bank ."}\n' * 2)
    with pytest.raises(ValueError, match="one sense"):
        load_sentences(path)
    path.write_text('{"word": "bank", "sense": "river", "sentence": "the bank ."}\n' * 2
                    + '{"word": "bank", "sense": "money", "sentence": "a bank ."}\n')
    with pytest.raises(ValueError, match="one sentence for the senses \\['money'\\]"):
        load_sentences(path)
    path.write_text('{"word": "bank"}\n')
    with pytest.raises(ValueError, match="s.jsonl:1: expected a JSON object"):
        load_sentences(path)


def test_orthogonal_senses_give_within_one_and_across_zero():
    # Two senses on orthogonal axes, occurrences scaled differently: cosine ignores length.
    vectors = np.array([[1, 0, 0], [2, 0, 0], [5, 0, 0], [0, 3, 0], [0, 1, 0], [0, 0.5, 0]])
    senses = ["a", "a", "a", "b", "b", "b"]
    found = sense_similarity(vectors, senses)
    assert found.within == pytest.approx(1) and found.across == pytest.approx(0)
    assert found.difference == pytest.approx(1) and found.nn_agreement == 1
    assert found.chance == pytest.approx(2 / 5)  # of each occurrence's 5 others, 2 share its sense


def test_sense_numbers_match_a_pair_by_pair_count():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(7, 4))
    senses = ["a", "b", "a", "c", "b", "a", "c"]
    cos = [[u @ v / np.linalg.norm(u) / np.linalg.norm(v) for v in vectors] for u in vectors]
    pairs = [(i, j) for i in range(7) for j in range(7) if i != j]
    found = sense_similarity(vectors, senses)
    assert found.within == pytest.approx(np.mean([cos[i][j] for i, j in pairs if senses[i] == senses[j]]))
    assert found.across == pytest.approx(np.mean([cos[i][j] for i, j in pairs if senses[i] != senses[j]]))
    nearest = [max((j for j in range(7) if j != i), key=lambda j: cos[i][j]) for i in range(7)]
    assert found.nn_agreement == pytest.approx(np.mean([senses[i] == senses[n] for i, n in enumerate(nearest)]))
    assert nearest_occurrences(vectors, k=2)[0][0] == (nearest[0], pytest.approx(cos[0][nearest[0]]))
    with pytest.raises(ValueError, match="two or more occurrences"):
        sense_similarity(vectors[:3], ["a", "a", "b"])


def test_permutation_p_values_are_small_for_separated_senses_and_one_for_a_static_family():
    rng = np.random.default_rng(0)
    senses = ["a"] * 6 + ["b"] * 6
    separated = np.concatenate([rng.normal([5, 0, 0], 1, (6, 3)), rng.normal([0, 5, 0], 1, (6, 3))])
    layers = [WordLayer("m", "l", "w", list(range(12)), senses, v, sense_similarity(v, senses), [], np.zeros((12, 2)))
              for v in (separated, np.ones((12, 3)))]
    assert permutation_p_values(layers[:1], permutations=200) == {"p_difference": 1 / 201, "p_nn_agreement": 1 / 201}
    assert permutation_p_values(layers[1:], permutations=50) == {"p_difference": 1.0, "p_nn_agreement": 1.0}


def test_one_vector_for_every_occurrence_ties_everything_at_chance():
    vectors = np.tile([[0.3, -1.0, 2.0]], (6, 1))
    found = sense_similarity(vectors, ["a", "a", "b", "b", "c", "c"])
    assert found.within == pytest.approx(1) and found.across == pytest.approx(1) and found.difference == 0
    assert found.nn_agreement == pytest.approx(found.chance) == pytest.approx(1 / 5)
    assert not project(vectors).any()


def test_projection_separates_two_directions():
    vectors = np.array([[1, 0.1, 0], [1, -0.1, 0], [1, 0, 0.1], [0, 1, 0.1], [0, 1, -0.1], [0.1, 1, 0]])
    first = project(vectors)[:, 0]
    assert (np.sign(first[:3]) == -np.sign(first[3:])).all() and len(set(np.sign(first))) == 2


def test_static_vectors_are_identical_and_contextual_ones_differ(result, sentences):
    assert [m["family"] for m in result.models] == ["word2vec", "elmo", "gpt", "bert"]
    layers = {(r.model, r.word): [] for r in result.layers}
    for r in result.layers:
        layers[(r.model, r.word)].append(r)
    for word in WORDS:
        n = sum(s.sentence.split().count(word) for s in sentences if s.word == word)
        (static,) = layers[("word2vec", word)]
        assert static.layer == "static" and static.vectors.shape[0] == n
        assert (static.vectors == static.vectors[0]).all()  # exactly one vector, whatever the sense
        assert static.vocabulary_neighbours and static.vocabulary_neighbours[0][0] != word
        for model, names in (("elmo", ["token", "biLSTM 1", "biLSTM 2"]),
                             ("gpt", ["embeddings", "layer 1", "layer 2"]),
                             ("bert", ["embeddings", "layer 1", "layer 2"])):
            found = layers[(model, word)]
            assert [r.layer for r in found] == names
            last = found[-1].vectors
            # Every occurrence its own vector; a left-to-right model's depends on the words up to it only, so
            # "the bank gave ..." and "the bank closed ..." share one.
            contexts = {_up_to(word, sentences[i].sentence) if model == "gpt" else i
                        for i in found[-1].sentence_index}
            assert last.shape[0] == n and len(np.unique(last, axis=0)) == len(contexts) > n / 2
    elmo_token = layers[("elmo", "play")][0].vectors
    np.testing.assert_allclose(elmo_token, np.broadcast_to(elmo_token[0], elmo_token.shape), atol=1e-5)


def _up_to(word: str, sentence: str) -> str:
    words = sentence.split()
    return " ".join(words[: words.index(word) + 1])


def test_result_serialises_and_plots(result, tmp_path):
    data = json.loads(json.dumps(result.to_dict()))
    assert {row["model"] for row in data["summary"]} == {"word2vec", "elmo", "gpt", "bert"}
    occurrence = data["layers"][0]["occurrences"][0]
    assert len(occurrence["neighbours"]) == 3 and len(occurrence["projection"]) == 2
    assert "| word2vec | static | 2 | 1.000 | 1.000 | +0.000 | 1.000 | 0.38 | 0.38 | 1.000 |" in result.markdown()
    result.plot(tmp_path / "play.png", word="play")
    assert (tmp_path / "play.png").read_bytes().startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="not one of this result's words"):
        result.plot(tmp_path / "x.png", word="spring")


def test_byte_level_gpt_reads_words_as_in_running_text(model_folders):
    """A word after the first is "Ġplay" in running text; tokenized word by word it would be "play"."""
    from transformers import AutoModel, AutoTokenizer

    from hf_lineage.vectors.contextual import ContextualVectors

    model = AutoModel.from_pretrained(model_folders["gpt"]).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_folders["gpt"])
    sentence = "the children play football ."
    found = ContextualVectors(model, tokenizer).word_vectors("play", [sentence]).vectors[0]
    encoding = tokenizer(sentence, return_tensors="pt")
    tokens = [t for t, w in enumerate(encoding.word_ids(0)) if w == 2]
    assert tokenizer.convert_ids_to_tokens(encoding["input_ids"][0, tokens])[0].startswith("Ġ")
    with torch.no_grad():
        states = model(**encoding).last_hidden_state[0]
    torch.testing.assert_close(found, states[tokens].mean(0), atol=1e-5, rtol=0)


def test_cli_writes_its_files(model_folders, tmp_path, capsys):
    output = tmp_path / "out"
    rc = cli_main(["analyze", "polysemy", "--models", model_folders["word2vec"], model_folders["bert"],
                   "--words", "bank", "--output-dir", str(output)])
    assert rc == 0, capsys.readouterr().err
    assert sorted(p.name for p in output.iterdir()) == ["polysemy_bank.png", "results.json", "summary.md",
                                                        "summary.png"]
    assert json.loads((output / "results.json").read_text())["summary"][0]["model"] == "word2vec"
    assert "| bert | layer 2 |" in (output / "summary.md").read_text()


def test_cli_refuses_bad_input_without_writing(model_folders, tmp_path, capsys):
    not_a_model = tmp_path / "notes"
    not_a_model.mkdir()
    bad_sentences = tmp_path / "bad.jsonl"
    bad_sentences.write_text('{"word": "bank", "sense": "river", "sentence": "by the river ."}\n')
    output = tmp_path / "out"
    for options, message in ((["--models", model_folders["bert"], "--words", "plya"], "no sentences for"),
                             (["--models", str(not_a_model)], "not a saved model folder"),
                             (["--models", model_folders["bert"], "--sentences", str(bad_sentences)],
                              "is not one of the sentence's whitespace-separated words")):
        assert cli_main(["analyze", "polysemy", *options, "--output-dir", str(output)]) == 2
        assert message in capsys.readouterr().err
        assert not output.exists() and [p.name for p in tmp_path.iterdir()] == ["notes", "bad.jsonl"]
