"""``hf-lineage convert word2vec|glove``: published word vectors as lineage folders (``hf_lineage.convert.word2vec``
and ``glove``), on files gensim writes and on the stand-ins of the standard set's Hub releases (``standins_vectors``):
every format read bit for bit, the tokenizers' case and phrases, ``--max-vocab``, the card and the record, the
folder loading with and without hf_lineage, and broken files refused with nothing written."""

import gzip
import json
import zipfile

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file
from transformers import AutoModel, AutoModelForPreTraining, AutoTokenizer

import hf_lineage
from hf_lineage.convert.releases import convert
from hf_lineage.convert.sources import ConversionError

from conftest import run_without_hf_lineage
from standins_transformers import use_hub_cache
from standins_vectors import (
    PHRASES,
    glove_standin_vectors,
    glove_text,
    save_glove_standin,
    save_word2vec_standin,
    word2vec_standin_vectors,
)

SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]


def same_bits(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.int32), b.view(np.int32))


def saved_vectors(folder) -> np.ndarray:
    """The one matrix a converted folder holds, read from its safetensors file as written."""
    tensors = load_file(str(folder / "model.safetensors"))
    (name,) = [n for n in tensors if n.endswith(("input_vectors.weight", "word_vectors.weight"))]
    return tensors[name]


def assert_rows(folder, words, vectors):
    """Each published word's vector is the row of its id, bit for bit."""
    tokenizer = AutoTokenizer.from_pretrained(folder)
    weight = saved_vectors(folder)
    ids = tokenizer.convert_tokens_to_ids(list(words))
    assert same_bits(weight[ids], vectors)
    assert not weight[:3].any()  # <pad> <unk> <s>: zero rows (</s> is GoogleNews's first word, see below)


@pytest.fixture(scope="module")
def gensim_vectors():
    """A gensim KeyedVectors: cased words, phrases, and 1e-30-sized values (bits that decimal text must keep)."""
    from gensim.models import KeyedVectors

    words = [w for w in word2vec_standin_vectors()[0] if w != "</s>"]
    words = list(dict.fromkeys(words[:300] + PHRASES))
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(words), 12)).astype(np.float32)
    vectors[0, 0] = np.float32(1.17549435e-38)
    kv = KeyedVectors(12, dtype=np.float32)
    kv.add_vectors(words, vectors)
    return kv


@pytest.mark.parametrize("form", ["binary", "binary.gz", "text"])
def test_c_tool_files_written_by_gensim_convert_bit_for_bit_with_case_and_phrases(tmp_path, gensim_vectors, form):
    kv = gensim_vectors
    path = tmp_path / {"binary": "vectors.bin", "binary.gz": "vectors.bin.gz", "text": "vectors.txt"}[form]
    kv.save_word2vec_format(str(path), binary=form != "text")
    out = convert("word2vec", [str(path)], tmp_path / "out")

    assert_rows(out, kv.index_to_key, kv.vectors)
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert tokenizer.convert_ids_to_tokens(list(range(4))) == SPECIALS
    assert tokenizer.tokenize("New_York is in the United_States") == ["New_York", "is", "in", "the", "United_States"]
    assert tokenizer.convert_tokens_to_ids("The") != tokenizer.convert_tokens_to_ids("the")  # case kept
    assert tokenizer("The")["input_ids"] == [tokenizer.convert_tokens_to_ids("The")]
    card = (out / "README.md").read_text()
    assert "Output layer: not published" in card and "case kept" in card
    assert json.loads((out / "pretraining.json").read_text())["converted_from"] == path.name


def test_the_bare_folder_loads_and_says_that_its_output_layer_is_missing(tmp_path, gensim_vectors):
    path = tmp_path / "vectors.bin"
    gensim_vectors.save_word2vec_format(str(path), binary=True)
    out = convert("word2vec", [str(path)], tmp_path / "out")
    model = AutoModel.from_pretrained(out)
    assert type(model).__name__ == "LineageWord2VecModel"
    ids = torch.tensor([[4, 5]])
    assert torch.equal(model(ids).last_hidden_state[0], torch.from_numpy(gensim_vectors.vectors[:2]))
    _, info = AutoModelForPreTraining.from_pretrained(out, output_loading_info=True)
    assert {"output_vectors.weight", "word_counts"} <= set(info["missing_keys"])  # transformers reports them


def test_gensim_keyed_vectors_and_most_similar_agree_with_gensim(tmp_path, gensim_vectors):
    kv = gensim_vectors
    kv.save(str(tmp_path / "vectors.kv"), separately=["vectors"])  # the array in vectors.kv.vectors.npy
    out = convert("word2vec", [str(tmp_path / "vectors.kv")], tmp_path / "out")
    assert_rows(out, kv.index_to_key, kv.vectors)
    wv = hf_lineage.WordVectors.from_pretrained(out)
    assert wv.index_to_key == kv.index_to_key
    for word in ("New_York", "the", "The"):
        ours, theirs = wv.most_similar(word, topn=5), kv.most_similar(word, topn=5)
        assert [w for w, _ in ours] == [w for w, _ in theirs]
        np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs], rtol=1e-5)


def test_a_full_gensim_word2vec_keeps_its_output_layer_and_counts(tmp_path):
    from gensim.models import Word2Vec

    sentences = [["the", "cat", "sat", "on", "the", "mat"], ["New_York", "is", "a", "city"]] * 20
    w2v = Word2Vec(sentences, vector_size=8, min_count=1, negative=3, workers=1, seed=1, epochs=2)
    w2v.save(str(tmp_path / "w2v.model"))
    out = convert("word2vec", [str(tmp_path / "w2v.model")], tmp_path / "out")
    model = AutoModelForPreTraining.from_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    ids = tokenizer.convert_tokens_to_ids(w2v.wv.index_to_key)
    assert same_bits(model.word2vec.input_vectors.weight[ids].detach(), w2v.wv.vectors)
    assert same_bits(model.output_vectors.weight[ids].detach(), w2v.syn1neg)
    assert model.word_counts[ids].tolist() == [w2v.wv.get_vecattr(w, "count") for w in w2v.wv.index_to_key]
    assert "training can continue" in (out / "README.md").read_text()


def test_the_hub_standin_of_google_news_converts_with_its_card(tmp_path, monkeypatch):
    save_word2vec_standin(tmp_path / "hub")
    use_hub_cache(monkeypatch, tmp_path / "hub")
    out = convert("word2vec", ["fse/word2vec-google-news-300"], tmp_path / "out", max_vocab=1000)

    words, vectors = word2vec_standin_vectors()
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert len(tokenizer) == 4 + 999  # the file's first 1000 words; its first, </s>, is the special's
    weight = saved_vectors(out)
    assert same_bits(weight[3], vectors[0])  # </s> took the special's id and keeps its vector there
    assert_rows(out, words[1:1000], vectors[1:1000])
    assert "word_counts" not in json.loads((out / "tokenizer_config.json").read_text())  # gensim's made-up counts
    card = (out / "README.md").read_text()
    record = json.loads((out / "pretraining.json").read_text())
    assert record["converted_from"] == "fse/word2vec-google-news-300" and record["max_vocab"] == 1000
    assert record["license"] == "apache-2.0" and record["words_seen"] == 100_000_000_000
    for expected in ("fse/word2vec-google-news-300", "license: apache-2.0", "@inproceedings{mikolov2013distributed",
                     "--max-vocab 1,000", "`</s>`"):
        assert expected in card


def test_the_hub_standin_of_glove_6b_converts_lowercased_from_the_zip(tmp_path, monkeypatch):
    save_glove_standin(tmp_path / "hub")
    use_hub_cache(monkeypatch, tmp_path / "hub")
    out = convert("glove", ["stanfordnlp/glove/glove.6B.zip#glove.6B.300d.txt"], tmp_path / "out")

    words, vectors = glove_standin_vectors()
    assert_rows(out, words, vectors)
    model = AutoModel.from_pretrained(out)
    assert type(model).__name__ == "LineageGloveModel"
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert tokenizer.convert_ids_to_tokens(list(range(4))) == SPECIALS
    assert tokenizer.tokenize("The food") == ["the", "food"]  # lowercased
    wv = hf_lineage.WordVectors.from_pretrained(out)
    assert wv.index_to_key == words and same_bits(wv.vectors, vectors)  # WordVectors reads exactly the published ones
    card = (out / "README.md").read_text()
    record = json.loads((out / "pretraining.json").read_text())
    assert record["license"] == "pddl" and record["words_seen"] == 6_000_000_000
    assert "license: pddl" in card and "@inproceedings{pennington2014glove" in card and "lowercased" in card


def test_glove_text_with_spaced_words_header_or_not_and_max_vocab(tmp_path):
    words = ["the", ",", "at & t", "The", "Paris", "new york-based", "city"]
    rng = np.random.default_rng(1)
    vectors = np.round(rng.standard_normal((len(words), 5)), 5).astype(np.float32)
    text = glove_text(words, vectors)
    (tmp_path / "glove.840B.300d.txt").write_text(text)
    (tmp_path / "header.txt").write_text(f"{len(words)} 5\n" + text)
    with zipfile.ZipFile(tmp_path / "glove.840B.300d.zip", "w") as archive:
        archive.writestr("glove.840B.300d.txt", text)

    cased = convert("glove", [str(tmp_path / "glove.840B.300d.zip") + "#glove.840B.300d.txt"], tmp_path / "cased")
    assert_rows(cased, words, vectors)  # "at & t": the last 5 fields are the vector, the rest the word
    tokenizer = AutoTokenizer.from_pretrained(cased)
    assert tokenizer.tokenize("The Paris") == ["The", "Paris"]  # capitals in the vocabulary: case kept
    card = (cased / "README.md").read_text()
    assert "case kept" in card and "'at & t'" in card and "license: pddl" in card

    headed = convert("glove", [str(tmp_path / "header.txt")], tmp_path / "headed", max_vocab=3)
    assert_rows(headed, words[:3], vectors[:3])
    assert len(AutoTokenizer.from_pretrained(headed)) == 4 + 3
    record = json.loads((headed / "pretraining.json").read_text())
    assert record["license"] == "other" and record["words_seen"] is None
    assert record["words_seen_from"] == "not stated by the file"


def test_max_vocab_keeps_the_first_words_of_a_binary_file(tmp_path, gensim_vectors):
    path = tmp_path / "vectors.bin"
    gensim_vectors.save_word2vec_format(str(path), binary=True)
    out = convert("word2vec", [str(path)], tmp_path / "out", max_vocab=10)
    assert_rows(out, gensim_vectors.index_to_key[:10], gensim_vectors.vectors[:10])
    assert len(AutoTokenizer.from_pretrained(out)) == 14


@pytest.mark.parametrize("form", ["binary", "text"])
def test_the_converters_read_with_load_word2vec_formats_reader(tmp_path, gensim_vectors, form):
    """One reader of the format (``vectors.formats``): the same words and bits as ``WordVectors`` reads, and the same
    messages, naming the line; a line short of a value beside one over is refused (the converters' own reader checked
    only the batch's total and shifted the values into the wrong rows)."""
    path = tmp_path / f"vectors.{form}"
    gensim_vectors.save_word2vec_format(str(path), binary=form == "binary")
    loaded = hf_lineage.WordVectors.load_word2vec_format(path, binary=form == "binary")
    out = convert("word2vec", [str(path)], tmp_path / "out")
    assert AutoTokenizer.from_pretrained(out).convert_ids_to_tokens(list(range(4, 4 + len(loaded)))) == \
        loaded.index_to_key
    assert same_bits(saved_vectors(out)[4:], loaded.vectors)

    (tmp_path / "shifted.txt").write_text("3 3\na 1 2 3\nb 1 2\nc 4 5 6 7\n")
    for read in (lambda: convert("word2vec", [str(tmp_path / "shifted.txt")], tmp_path / "shifted"),
                 lambda: hf_lineage.WordVectors.load_word2vec_format(tmp_path / "shifted.txt")):
        with pytest.raises(ValueError, match=r"shifted\.txt: line 3: 2 values for b'b', expected 3"):
            read()


def test_folders_load_with_trust_remote_code_without_hf_lineage(tmp_path, gensim_vectors):
    gensim_vectors.save_word2vec_format(str(tmp_path / "vectors.bin"), binary=True)
    (tmp_path / "glove.6B.50d.txt").write_text(glove_text(["the", "of"], np.eye(2, 3, dtype=np.float32)))
    convert("word2vec", [str(tmp_path / "vectors.bin")], tmp_path / "word2vec")
    convert("glove", [str(tmp_path / "glove.6B.50d.txt")], tmp_path / "glove")
    code = ("from transformers import AutoModel\n"
            "for name in ('word2vec', 'glove'):\n"
            "    model = AutoModel.from_pretrained(name, trust_remote_code=True)\n"
            "    print(type(model).__name__, model.get_input_embeddings().weight[4].tolist())\n")
    lines = run_without_hf_lineage(code, cwd=tmp_path).splitlines()[-2:]
    assert lines[0] == f"LineageWord2VecModel {gensim_vectors.vectors[0].tolist()}"
    assert lines[1] == "LineageGloveModel [1.0, 0.0, 0.0]"


def _broken_files(tmp_path, gensim_vectors):
    rng = np.random.default_rng(7)
    (tmp_path / "random.bin").write_bytes(b"\x17" + rng.bytes(5000))
    gensim_vectors.save_word2vec_format(str(tmp_path / "whole.bin"), binary=True)
    whole = (tmp_path / "whole.bin").read_bytes()
    (tmp_path / "truncated.bin").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "empty.txt.gz").write_bytes(gzip.compress(b""))
    return ["random.bin", "truncated.bin", "empty.txt", "empty.txt.gz"]


@pytest.mark.parametrize("family", ["word2vec", "glove"])
def test_broken_files_are_refused_naming_the_file_and_nothing_is_written(tmp_path, gensim_vectors, family):
    for name in _broken_files(tmp_path, gensim_vectors):
        out = tmp_path / "out" / name
        with pytest.raises(ConversionError, match=name.replace(".", r"\.")):
            convert(family, [str(tmp_path / name)], out)
        assert not out.exists()
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())  # no staging folder left either
    with pytest.raises(ConversionError, match="glove"):  # GloVe's header-less text, given as word2vec
        (tmp_path / "glove.txt").write_text("the 0.1 0.2\n")
        convert("word2vec", [str(tmp_path / "glove.txt")], tmp_path / "out" / "glove")
