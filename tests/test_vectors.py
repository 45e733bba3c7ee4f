"""WordVectors against gensim 4.4's KeyedVectors (same words and vectors → same answers), the word2vec C tool's text
and binary formats both ways with gensim, malformed files, gensim objects, lineage models and the gensim Word2Vec
converter."""

import struct

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoModelForPreTraining, AutoTokenizer

import hf_lineage
from hf_lineage import LineageBertConfig, LineageBertModel, LineageNNLMConfig, LineageNNLMModel, WordVectors
from hf_lineage.vectors import WordNotInVocabularyError

from conftest import CORPUS

gensim = pytest.importorskip("gensim")
from gensim.models import KeyedVectors, Word2Vec  # noqa: E402
from gensim.test.utils import datapath  # noqa: E402

# gensim's most_similar_cosmul calls its own deprecated init_sims
pytestmark = pytest.mark.filterwarnings("ignore:Call to deprecated:DeprecationWarning")

QUESTIONS = datapath("questions-words.txt")
WORDSIM = datapath("wordsim353.tsv")


def gensim_kv(keys, vectors, counts=None):
    kv = KeyedVectors(vectors.shape[1])
    kv.add_vectors(list(keys), vectors.copy())
    if counts is not None:
        for key, count in zip(keys, counts):
            kv.set_vecattr(key, "count", int(count))
    return kv


def benchmark_words():
    """The words of questions-words.txt and wordsim353.tsv, in file order."""
    words = []
    for line in open(QUESTIONS, encoding="utf8"):
        if not line.startswith(":"):
            words += line.split()
    for line in open(WORDSIM, encoding="utf8"):
        if not line.startswith("#"):
            words += line.split("\t")[:2]
    return list(dict.fromkeys(words))


@pytest.fixture(scope="module")
def synthetic():
    """Random vectors (seeded) for most benchmark words, a tenth left out (so some questions are out of vocabulary),
    plus lower- and upper-case variants of some words (so case folding matters), where the first section's
    countries are their capitals plus a shared offset: many of its analogies are answerable, the rest are noise."""
    rng = np.random.default_rng(0)
    words = benchmark_words()
    rng.shuffle(words)
    words = words[: int(len(words) * 0.9)]
    words = list(dict.fromkeys(words + [w.lower() for w in words[:300]] + [w.upper() for w in words[300:400]]))
    vectors = rng.standard_normal((len(words), 24)).astype(np.float32)
    index = {w: i for i, w in enumerate(words)}
    offset = rng.standard_normal(24).astype(np.float32) * 2
    with open(QUESTIONS, encoding="utf8") as f:
        next(f)
        for line in f:
            if line.startswith(":"):
                break
            capital, country = line.split()[:2]
            if capital in index and country in index:
                vectors[index[country]] = vectors[index[capital]] + offset + 0.3 * rng.standard_normal(24)
    counts = rng.integers(1, 1000, len(words))
    return WordVectors(words, vectors, counts), gensim_kv(words, vectors, counts)


@pytest.fixture(scope="module")
def trained():
    """A small gensim skip-gram model trained on gensim's own Lee corpus (real text; one worker: reproducible)."""
    sentences = [line.split() for line in open(datapath("lee_background.cor"), encoding="utf8")]
    model = Word2Vec(sentences, vector_size=24, window=4, min_count=2, sg=1, negative=5, workers=1, seed=3, epochs=5)
    return model


def same_sections(ours, theirs):
    assert [s["section"] for s in ours] == [s["section"] for s in theirs]
    for a, b in zip(ours, theirs):
        assert a["correct"] == b["correct"], a["section"]
        assert a["incorrect"] == b["incorrect"], a["section"]


# --------------------------------------------------------------------------- container and constructor


def test_container_protocol_and_constructor_checks():
    wv = WordVectors(["cat", "dog", "car"], [[1, 0], [0.9, 0.1], [0, 2]], counts=[5, 4, 1])
    assert len(wv) == 3 and "dog" in wv and "cow" not in wv and wv.vector_size == 2
    assert wv.vectors.dtype == np.float32 and wv.vectors.flags.c_contiguous
    assert wv.index_to_key == ["cat", "dog", "car"] and wv.key_to_index == {"cat": 0, "dog": 1, "car": 2}
    np.testing.assert_array_equal(wv["car"], [0, 2])
    np.testing.assert_array_equal(wv[["car", "cat"]], [[0, 2], [1, 0]])
    np.testing.assert_allclose(wv.get_vector("car", norm=True), [0, 1])
    assert not wv.get_vector("car").flags.writeable  # would silently invalidate the cached norms
    assert wv.counts.tolist() == [5, 4, 1]

    with pytest.raises(ValueError, match="vocabulary is empty"):
        WordVectors([], np.zeros((0, 3)))
    with pytest.raises(ValueError, match="duplicate key 'cat'"):
        WordVectors(["cat", "cat"], np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"shape \(len\(keys\), vector_size\) = \(2, d\)"):
        WordVectors(["a", "b"], np.zeros((3, 3)))
    with pytest.raises(ValueError, match="one entry per key"):
        WordVectors(["a", "b"], np.zeros((2, 3)), counts=[1])
    with pytest.raises(ValueError, match="keys must be strings"):
        WordVectors([1, 2], np.zeros((2, 3)))


def test_missing_word_is_a_key_error_naming_the_word():
    wv = WordVectors(["cat", "dog"], np.eye(2))
    for call in (lambda: wv["cow"], lambda: wv.most_similar("cow"), lambda: wv.most_similar(["cat"], ["cow"]),
                 lambda: wv.most_similar_cosmul(["cat", "cow"]), lambda: wv.similarity("cat", "cow"),
                 lambda: wv.n_similarity(["cat"], ["cow"])):
        with pytest.raises(KeyError) as info:
            call()
        assert isinstance(info.value, WordNotInVocabularyError) and info.value.word == "cow"
        assert str(info.value) == "word 'cow' is not in the vocabulary (2 words)"  # no KeyError quoting
    with pytest.raises(ValueError, match="no input"):
        wv.most_similar()
    with pytest.raises(ValueError, match=r"query vector has shape \(3,\)"):
        wv.similar_by_vector(np.ones(3))


# --------------------------------------------------------------------------- queries, against gensim


@pytest.mark.parametrize("source", ["synthetic", "trained"])
def test_queries_equal_gensim(source, synthetic, trained):
    if source == "synthetic":
        wv, kv = synthetic
    else:
        kv = trained.wv
        wv = WordVectors.from_gensim(trained)
    rng = np.random.default_rng(1)
    words = [wv.index_to_key[i] for i in rng.choice(len(wv), 12, replace=False)]

    def same(ours, theirs):
        assert [w for w, _ in ours] == [w for w, _ in theirs]
        np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs], rtol=1e-5, atol=1e-6)

    for w in words[:4]:
        same(wv.most_similar(w), kv.most_similar(w))
        same(wv.similar_by_word(w, topn=3), kv.similar_by_word(w, topn=3))
        same(wv.most_similar_cosmul(w, topn=5), kv.most_similar_cosmul(w, topn=5))
    a, b, c = words[4:7]
    same(wv.most_similar(positive=[b, c], negative=[a], topn=7), kv.most_similar(positive=[b, c], negative=[a], topn=7))
    same(wv.most_similar(positive=[(b, 0.5), c], negative=[(a, -2.0)]),
         kv.most_similar(positive=[(b, 0.5), c], negative=[(a, -2.0)]))
    same(wv.most_similar([b, c], [a], topn=4, restrict_vocab=200), kv.most_similar([b, c], [a], topn=4,
                                                                                    restrict_vocab=200))
    same(wv.most_similar_cosmul(positive=[b, c], negative=[a]), kv.most_similar_cosmul(positive=[b, c], negative=[a]))
    vector = wv[a] - wv[b] + wv[c]
    same(wv.similar_by_vector(vector, topn=6), kv.similar_by_vector(vector, topn=6))
    same(wv.most_similar(positive=[vector, a]), kv.most_similar(positive=[vector, a]))  # vector and word mixed
    np.testing.assert_allclose(wv.most_similar(a, topn=None), kv.most_similar(a, topn=None), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(wv.most_similar_cosmul([a, b], [c], topn=None),
                               kv.most_similar_cosmul([a, b], [c], topn=None), rtol=1e-5, atol=1e-6)
    assert wv.most_similar(a, topn=0) == [] == kv.most_similar(a, topn=0)
    # cosmul honours restrict_vocab (gensim 4.4 ignores it): gensim's full scores cut to the first 100 words
    full = kv.most_similar_cosmul([a, b], [c], topn=None)[:100]
    restricted = wv.most_similar_cosmul([a, b], [c], topn=None, restrict_vocab=100)
    np.testing.assert_allclose(restricted, full, rtol=1e-5, atol=1e-6)

    for w1, w2 in zip(words[:6], words[6:]):
        assert wv.similarity(w1, w2) == pytest.approx(float(kv.similarity(w1, w2)), abs=1e-6)
        assert wv.distance(w1, w2) == pytest.approx(float(kv.distance(w1, w2)), abs=1e-6)
    assert wv.n_similarity(words[:3], words[3:5]) == pytest.approx(float(kv.n_similarity(words[:3], words[3:5])),
                                                                   abs=1e-6)
    for start in range(0, 12, 4):
        group = words[start : start + 4]
        assert wv.doesnt_match(group) == kv.doesnt_match(group)
    assert wv.doesnt_match(words[:4] + ["not-a-word"]) == kv.doesnt_match(words[:4] + ["not-a-word"])


def test_most_similar_finds_the_planted_neighbour():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((50, 8)).astype(np.float32)
    vectors[7] = vectors[3] * 2 + 0.01  # same direction as word 3: cosine ~1
    wv = WordVectors([f"w{i}" for i in range(50)], vectors)
    (best, score), *_ = wv.most_similar("w3")
    assert best == "w7" and score > 0.999
    assert "w3" not in [w for w, _ in wv.most_similar("w3", topn=49)]  # the query word is never an answer
    assert [w for w, _ in wv.most_similar("w3", topn=49)][0] == "w7"
    assert wv.most_similar("w3", restrict_vocab=5)[0][0] != "w7"  # only the first 5 words are searched


# --------------------------------------------------------------------------- evaluation, against gensim


@pytest.mark.parametrize("options", [{}, {"restrict_vocab": 500}, {"case_insensitive": False},
                                     {"dummy4unknown": True}])
def test_evaluate_word_analogies_equals_gensim(options, synthetic, trained):
    wv, kv = synthetic
    ours = wv.evaluate_word_analogies(QUESTIONS, **options)
    theirs = kv.evaluate_word_analogies(QUESTIONS, **options)
    assert ours[0] == theirs[0]
    same_sections(ours[1], theirs[1])
    assert ours[1][-1]["section"] == "Total accuracy"
    if not options:  # the planted capital/country offset is found: the test has something to get wrong
        assert len(ours[1][0]["correct"]) > 50

    kv = trained.wv
    ours = WordVectors.from_gensim(trained).evaluate_word_analogies(QUESTIONS, **options)
    theirs = kv.evaluate_word_analogies(QUESTIONS, **options)
    assert ours[0] == theirs[0]
    same_sections(ours[1], theirs[1])


def test_evaluate_word_analogies_small_vocabulary_and_bad_files(tmp_path):
    # Fewer than 5 candidate answers: gensim walks what there is.
    path = tmp_path / "q.txt"
    path.write_text(": tiny\na b c d\nd c b a\nA b c x\nonly three words\n: empty\n")
    rng = np.random.default_rng(0)
    keys = ["a", "b", "c", "d", "e", "B"]
    vectors = rng.standard_normal((6, 4)).astype(np.float32)
    wv, kv = WordVectors(keys, vectors), gensim_kv(keys, vectors)
    for options in ({}, {"restrict_vocab": 4}, {"restrict_vocab": 5, "case_insensitive": False},
                    {"dummy4unknown": True}):
        ours, theirs = wv.evaluate_word_analogies(path, **options), kv.evaluate_word_analogies(path, **options)
        assert ours[0] == theirs[0]
        same_sections(ours[1], theirs[1])

    path.write_text("a b c d\n: section\n")
    with pytest.raises(ValueError, match=r"line 1 comes before any ': section' header"):
        wv.evaluate_word_analogies(path)
    path.write_text(": section\nnot a question\n")
    with pytest.raises(ValueError, match="no analogy questions"):
        wv.evaluate_word_analogies(path)


def test_analogy_answers_skip_case_variants_of_question_words_within_the_top_five(tmp_path):
    """Hand-made vectors where the nearest answers are case variants of question words: gensim skips them (they
    fold to a question word) and walks on, but only through the top 5."""
    path = tmp_path / "q.txt"
    path.write_text(": s\nab cd ef gh\n")
    query = np.array([-1.0, 1.0, 1.0, 0.0, 0.0])  # cd - ab + ef
    near = lambda eps: query + eps * np.eye(5)[4]  # noqa: E731  (cosine decreasing with eps)
    vectors = {"ab": np.eye(5)[0], "cd": np.eye(5)[1], "ef": np.eye(5)[2], "gh": near(0.6), "zz": np.eye(5)[3]}
    wv_keys = list(vectors)
    for variants, expected_correct in (
        # "CD" is the best answer but folds to the question word "cd": skipped, "gh" (2nd) is taken.
        ({"CD": near(0.0)}, {"case_insensitive": True, "case_sensitive": False}),
        # Five variants ahead of "gh": all skipped, none is left in the top 5, the 5th walked one is the answer.
        ({"Ab": near(0.0), "aB": near(0.1), "AB": near(0.2), "Cd": near(0.3), "cD": near(0.4)},
         {"case_insensitive": False, "case_sensitive": False}),
    ):
        keys = wv_keys + list(variants)
        matrix = np.array([*vectors.values(), *variants.values()], dtype=np.float32)
        wv, kv = WordVectors(keys, matrix), gensim_kv(keys, matrix)
        for mode, case_insensitive in (("case_insensitive", True), ("case_sensitive", False)):
            ours = wv.evaluate_word_analogies(path, case_insensitive=case_insensitive)
            theirs = kv.evaluate_word_analogies(path, case_insensitive=case_insensitive)
            assert ours[0] == theirs[0] == float(expected_correct[mode]), (variants, mode)
            same_sections(ours[1], theirs[1])


@pytest.mark.parametrize("options", [{}, {"restrict_vocab": 500}, {"case_insensitive": False},
                                     {"dummy4unknown": True}])
def test_evaluate_word_pairs_equals_gensim(options, synthetic, trained):
    for wv, kv in (synthetic, (WordVectors.from_gensim(trained), trained.wv)):
        (p, pp), (s, sp), oov = wv.evaluate_word_pairs(WORDSIM, **options)
        (gp, gpp), (gs, gsp), goov = kv.evaluate_word_pairs(WORDSIM, **options)
        # Similarities are float32 dot products, as gensim's, whose last bit depends on numpy's summation order (it
        # changes between numpy versions); restrict_vocab=500 leaves 5 pairs of the trained model within 0.06 of
        # each other, where a last-bit difference moves Pearson by ~3e-6. Spearman depends only on the order.
        assert p == pytest.approx(gp, abs=1e-5) and s == pytest.approx(gs, abs=1e-9)
        assert pp == pytest.approx(gpp, rel=1e-4) and sp == pytest.approx(gsp, rel=1e-6)
        assert oov == goov


def test_evaluate_word_pairs_without_known_pairs():
    wv = WordVectors(["zzz"], np.ones((1, 3)))
    with pytest.raises(ValueError, match="No valid similarity judgements"):
        wv.evaluate_word_pairs(WORDSIM)


# --------------------------------------------------------------------------- word2vec formats


@pytest.mark.parametrize("binary", [False, True])
def test_gensim_loads_our_files_and_we_load_gensims(binary, tmp_path, trained):
    wv = WordVectors.from_gensim(trained)
    wv.vectors[0, 0] = 1e-30  # an extreme value must survive the text format too
    ours = tmp_path / "ours"
    wv.save_word2vec_format(ours, binary=binary)
    kv = KeyedVectors.load_word2vec_format(ours, binary=binary)
    assert kv.index_to_key == wv.index_to_key
    np.testing.assert_array_equal(kv.vectors, wv.vectors)  # exact, text included (%.9g round-trips float32)
    back = WordVectors.load_word2vec_format(ours, binary=binary)
    assert back.index_to_key == wv.index_to_key and back.counts is None
    np.testing.assert_array_equal(back.vectors, wv.vectors)

    theirs = tmp_path / "theirs"
    trained.wv.save_word2vec_format(theirs, binary=binary)
    loaded = WordVectors.load_word2vec_format(theirs, binary=binary)
    assert loaded.index_to_key == trained.wv.index_to_key
    np.testing.assert_array_equal(loaded.vectors, trained.wv.vectors)
    limited = WordVectors.load_word2vec_format(theirs, binary=binary, limit=10)
    assert limited.index_to_key == trained.wv.index_to_key[:10]
    np.testing.assert_array_equal(limited.vectors, trained.wv.vectors[:10])


def test_vocabulary_counts_file_both_ways(tmp_path, trained):
    wv = WordVectors.from_gensim(trained)
    wv.save_word2vec_format(tmp_path / "ours.txt", fvocab=tmp_path / "ours.vocab")
    kv = KeyedVectors.load_word2vec_format(tmp_path / "ours.txt", fvocab=tmp_path / "ours.vocab")
    assert [kv.get_vecattr(w, "count") for w in kv.index_to_key] == wv.counts.tolist()
    trained.wv.save_word2vec_format(tmp_path / "g.bin", fvocab=tmp_path / "g.vocab", binary=True)
    back = WordVectors.load_word2vec_format(tmp_path / "g.bin", binary=True, fvocab=tmp_path / "g.vocab")
    assert back.index_to_key == wv.index_to_key and back.counts.tolist() == wv.counts.tolist()

    (tmp_path / "bad.vocab").write_text("the 3\nof\n")
    with pytest.raises(ValueError, match=r"bad.vocab: line 2 should be 'word count'"):
        WordVectors.load_word2vec_format(tmp_path / "ours.txt", fvocab=tmp_path / "bad.vocab")
    (tmp_path / "bad.vocab").write_text("the 3\n")
    with pytest.raises(ValueError, match=r"no count for \d+ word"):
        WordVectors.load_word2vec_format(tmp_path / "ours.txt", fvocab=tmp_path / "bad.vocab")
    with pytest.raises(ValueError, match="counts=None"):
        WordVectors(["a"], np.ones((1, 2))).save_word2vec_format(tmp_path / "x.txt", fvocab=tmp_path / "x.vocab")


def test_binary_layout_is_the_c_tools(tmp_path):
    wv = WordVectors(["ab", "ç"], np.array([[1.5, -2.0], [0.25, 3.0]]))
    path = tmp_path / "v.bin"
    wv.save_word2vec_format(path, binary=True)
    expected = (b"2 2\n" + b"ab " + struct.pack("<2f", 1.5, -2.0) + b"\n"
                + "ç".encode() + b" " + struct.pack("<2f", 0.25, 3.0) + b"\n")
    assert path.read_bytes() == expected
    text = tmp_path / "v.txt"
    wv.save_word2vec_format(text)
    assert text.read_text(encoding="utf8") == "2 2\nab 1.5 -2\nç 0.25 3\n"
    wv.save_word2vec_format(text, write_header=False)  # GloVe layout
    assert text.read_text(encoding="utf8") == "ab 1.5 -2\nç 0.25 3\n"
    glove = WordVectors.load_word2vec_format(text, no_header=True)
    assert glove.index_to_key == ["ab", "ç"] and np.array_equal(glove.vectors, wv.vectors)


def test_reads_the_c_tools_text_layout(tmp_path):
    # word2vec.c writes "%lf " for each value: a trailing space before the newline.
    path = tmp_path / "c.txt"
    path.write_text("2 3\nthe 0.100000 -0.200000 0.300000 \nof 1.000000 2.000000 3.000000 \n")
    wv = WordVectors.load_word2vec_format(path)
    assert wv.index_to_key == ["the", "of"]
    np.testing.assert_allclose(wv.vectors, [[0.1, -0.2, 0.3], [1, 2, 3]])


def test_malformed_files_name_the_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"

    def fails(content, match, binary=False, **kwargs):
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        with pytest.raises(ValueError, match=match) as info:
            WordVectors.load_word2vec_format(path, binary=binary, **kwargs)
        assert str(path) in str(info.value)

    fails("2 3\nthe 1 2 3\nof 1 2\n", r"line 3: 2 values for b'of', expected 3")
    fails("2 3\nthe 1 2 3\nof 1 2 x\n", r"line 3: non-numeric value in the vector of b'of'")
    fails("3 3\nthe 1 2 3\nof 1 2 3\n", r"header announces 3 vectors but the file ends after 2")
    fails("1 3\nthe 1 2 3\nof 1 2 3\n", r"line 3: more records than the 1 the header announces")
    fails("two 3\nthe 1 2 3\n", r"line 1 should be the header")
    fails("", r"line 1 should be the header")
    fails("0 3\n", r"no vectors \(empty vocabulary\)")
    fails(b"1 2\n\xff\xfe 1 2\n", r"line 2: word is not valid utf8")
    assert WordVectors.load_word2vec_format(path, unicode_errors="replace").index_to_key == ["\ufffd\ufffd"]

    record = b"ab " + struct.pack("<2f", 1.0, 2.0) + b"\n"
    fails(b"2 2\n" + record + b"cd " + struct.pack("<f", 1.0), r"record 2 of 2 \(byte offset \d+\) is truncated",
          binary=True)
    fails(b"3 2\n" + record + record.replace(b"ab", b"cd"), r"record 3 of 3 .*the file ends", binary=True)
    fails(b"1 2\n" + record + record.replace(b"ab", b"cd"), r"more data after the 1 records", binary=True)
    with pytest.raises(ValueError, match="only possible with the text format"):
        WordVectors.load_word2vec_format(path, binary=True, no_header=True)

    wv = WordVectors(["new york", "ok"], np.ones((2, 2)))
    with pytest.raises(ValueError, match="'new york' is empty or contains whitespace"):
        wv.save_word2vec_format(tmp_path / "x.txt")


def test_duplicate_words_keep_the_first_vector_like_gensim(tmp_path):
    path = tmp_path / "dup.txt"
    path.write_text("3 2\na 1 2\nb 3 4\na 5 6\n")
    with pytest.warns(UserWarning, match="1 duplicate word"):
        wv = WordVectors.load_word2vec_format(path)
    kv = KeyedVectors.load_word2vec_format(path)
    assert wv.index_to_key == ["a", "b"] and kv.key_to_index == {"a": 0, "b": 1}  # (gensim leaves a None slot)
    np.testing.assert_array_equal(wv.vectors, kv.vectors[:2])
    np.testing.assert_array_equal(wv["a"], [1, 2])


# --------------------------------------------------------------------------- gensim objects


def test_from_gensim_and_to_gensim(trained):
    wv = WordVectors.from_gensim(trained)
    assert wv.index_to_key == trained.wv.index_to_key
    np.testing.assert_array_equal(wv.vectors, trained.wv.vectors)
    assert wv.counts.tolist() == [trained.wv.get_vecattr(w, "count") for w in wv.index_to_key]
    assert WordVectors.from_gensim(trained.wv).counts is not None

    kv = wv.to_gensim()
    assert isinstance(kv, KeyedVectors) and kv.index_to_key == wv.index_to_key
    np.testing.assert_array_equal(kv.vectors, wv.vectors)
    assert kv.vectors is not wv.vectors
    word = wv.index_to_key[5]
    assert kv.get_vecattr(word, "count") == trained.wv.get_vecattr(word, "count")
    assert kv.most_similar(word) == trained.wv.most_similar(word)
    assert WordVectors(["a", "b"], np.eye(2)).to_gensim().expandos == {}  # no counts, none invented
    with pytest.raises(ValueError, match="expected a gensim Word2Vec or KeyedVectors"):
        WordVectors.from_gensim(object())


# --------------------------------------------------------------------------- lineage models


@pytest.fixture(scope="module")
def wordlevel_tokenizer():
    from hf_lineage.tokenization import train_wordlevel_tokenizer

    return train_wordlevel_tokenizer(iterator=CORPUS, min_count=1)


def test_from_pretrained_with_a_model_object(wordlevel_tokenizer, tmp_path):
    tok = wordlevel_tokenizer
    config = LineageNNLMConfig.from_named("tiny", vocab_size=len(tok))
    model = LineageNNLMModel(config)
    wv = WordVectors.from_pretrained(model, tokenizer=tok)
    specials = {"<pad>", "<unk>", "<s>", "</s>"}
    assert not specials & set(wv.index_to_key)
    assert wv.index_to_key == tok.convert_ids_to_tokens(list(range(4, len(tok))))
    table = model.get_input_embeddings().weight.detach().numpy()
    np.testing.assert_array_equal(wv["the"], table[tok.convert_tokens_to_ids("the")])
    from hf_lineage.tokenization import word_counts

    assert wv.counts.tolist() == [word_counts(tok)[w] for w in wv.index_to_key]
    tok.save_pretrained(tmp_path)
    by_path = WordVectors.from_pretrained(model, tokenizer=tmp_path)  # the tokenizer as a saved folder
    assert by_path.index_to_key == wv.index_to_key and by_path.counts.tolist() == wv.counts.tolist()
    with pytest.raises(ValueError, match="pass tokenizer="):
        WordVectors.from_pretrained(model)
    small = LineageNNLMModel(LineageNNLMConfig.from_named("tiny", vocab_size=10))
    with pytest.raises(ValueError, match="only 10 rows"):
        WordVectors.from_pretrained(small, tokenizer=tok)


def test_from_pretrained_refuses_a_subword_tokenizer(tmp_path, wordpiece_tokenizer):
    model = LineageBertModel(LineageBertConfig.from_named("tiny", vocab_size=len(wordpiece_tokenizer)))
    model.save_pretrained(tmp_path)
    wordpiece_tokenizer.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="WordPiece tokenizer, not a word-level one"):
        WordVectors.from_pretrained(tmp_path)
    with pytest.raises(ValueError, match="WordPiece tokenizer, not a word-level one"):
        WordVectors.from_pretrained(model, tokenizer=wordpiece_tokenizer)


# --------------------------------------------------------------------------- gensim Word2Vec → lineage word2vec


@pytest.mark.parametrize("settings", [dict(sg=1, negative=5, hs=0), dict(sg=0, negative=0, hs=1, cbow_mean=0),
                                      dict(sg=0, negative=3, hs=1)])
def test_convert_gensim_word2vec(settings, tmp_path):
    from hf_lineage.convert.word2vec import from_gensim
    from hf_lineage.word_vector_trainers.word2vec_sampling import huffman_tree

    sentences = [line.split() for line in open(datapath("lee_background.cor"), encoding="utf8")][:100]
    gensim_model = Word2Vec(sentences, vector_size=12, window=3, min_count=3, workers=1, seed=1, epochs=2,
                            sample=1e-4, alpha=0.03, min_alpha=0.001, ns_exponent=0.5, **settings)
    model, tok = from_gensim(gensim_model)
    config, kv = model.config, gensim_model.wv
    assert config.model_type == "lineage-word2vec" and config.vocab_size == len(kv) + 4 == len(tok)
    assert config.architecture == ("skipgram" if settings["sg"] else "cbow")
    assert (config.vector_size, config.window, config.negative, config.hs, config.min_count, config.epochs) == (
        12, 3, settings["negative"], bool(settings["hs"]), 3, 2)
    assert (config.sample, config.ns_exponent, config.alpha, config.min_alpha) == (1e-4, 0.5, 0.03, 0.001)
    assert config.cbow_mean == bool(settings.get("cbow_mean", 1))
    assert tok.convert_ids_to_tokens([0, 1, 2, 3]) == ["<pad>", "<unk>", "<s>", "</s>"]
    assert tok.convert_ids_to_tokens(list(range(4, len(tok)))) == kv.index_to_key
    from hf_lineage.tokenization import word_counts

    counts = word_counts(tok)
    assert all(counts[w] == kv.get_vecattr(w, "count") for w in kv.index_to_key)
    assert counts["<unk>"] == gensim_model.corpus_total_words - sum(kv.get_vecattr(w, "count") for w in kv.index_to_key)
    assert model.word_counts[:4].tolist() == [0, 0, 0, 0]
    assert model.word_counts[4:].tolist() == [kv.get_vecattr(w, "count") for w in kv.index_to_key]

    np.testing.assert_array_equal(model.get_input_embeddings().weight[4:].detach().numpy(), kv.vectors)
    assert not model.get_input_embeddings().weight[:4].any()  # specials: zero rows
    if settings["negative"]:
        np.testing.assert_array_equal(model.output_vectors.weight[4:].detach().numpy(), gensim_model.syn1neg)
    else:
        assert model.output_vectors is None
    if settings["hs"]:
        np.testing.assert_array_equal(model.inner_node_vectors.weight[: len(kv)].detach().numpy(), gensim_model.syn1)
        # the tree rebuilt from word_counts is gensim's: same codes, same inner-node rows
        tree = huffman_tree(model.word_counts.numpy())
        for w in kv.index_to_key[:50]:
            i = tok.convert_tokens_to_ids(w)
            assert tree.codes[i, : tree.lengths[i]].tolist() == kv.get_vecattr(w, "code").tolist()
            assert tree.points[i, : tree.lengths[i]].tolist() == kv.get_vecattr(w, "point").tolist()

    # saved and reloaded: AutoModel / AutoModelForPreTraining, and WordVectors equal to gensim's wv
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    reloaded = AutoModelForPreTraining.from_pretrained(tmp_path)
    for name, tensor in model.state_dict().items():
        assert torch.equal(reloaded.state_dict()[name], tensor), name
    assert type(AutoModel.from_pretrained(tmp_path)).__name__ == "LineageWord2VecModel"
    wv = WordVectors.from_pretrained(tmp_path)
    assert wv.index_to_key == kv.index_to_key
    np.testing.assert_array_equal(wv.vectors, kv.vectors)
    assert wv.counts.tolist() == [kv.get_vecattr(w, "count") for w in kv.index_to_key]
    word = kv.index_to_key[3]
    assert [w for w, _ in wv.most_similar(word)] == [w for w, _ in kv.most_similar(word)]
    # the tokenizer encodes gensim's words to the rows holding their vectors
    ids = AutoTokenizer.from_pretrained(tmp_path)(" ".join(kv.index_to_key[:5]))["input_ids"]
    assert ids == [4, 5, 6, 7, 8]


def test_convert_maps_a_literal_special_word_onto_the_special(tmp_path):
    from hf_lineage.convert.word2vec import from_gensim

    sentences = [["the", "<unk>", "cat", "sat"], ["the", "<unk>", "dog"]] * 5
    gensim_model = Word2Vec(sentences, vector_size=4, min_count=1, workers=1, seed=1, epochs=1)
    model, tok = from_gensim(gensim_model)
    assert len(tok) == len(gensim_model.wv) + 3  # "<unk>" is the special, not a new word
    np.testing.assert_array_equal(model.get_input_embeddings().weight[1].detach().numpy(), gensim_model.wv["<unk>"])
    assert model.word_counts[1] == 0  # never trained as a word, as train_word2vec treats a literal <unk>
    wv = WordVectors.from_pretrained(model, tokenizer=tok)
    assert "<unk>" not in wv and wv.index_to_key == [w for w in gensim_model.wv.index_to_key if w != "<unk>"]
    hs = Word2Vec(sentences, vector_size=4, min_count=1, workers=1, seed=1, epochs=1, hs=1, negative=0)
    with pytest.raises(ValueError, match="spelled like the tokenizer's special tokens"):
        from_gensim(hs)


def test_convert_refuses_what_is_not_a_word2vec_model(trained):
    from hf_lineage.convert.word2vec import from_gensim

    with pytest.raises(ValueError, match="use hf_lineage.WordVectors.from_gensim"):
        from_gensim(trained.wv)
    with pytest.raises(ValueError, match="FastText"):
        from_gensim(gensim.models.FastText([["a", "b"]], vector_size=4, min_count=1, epochs=1))
    with pytest.raises(ValueError, match="empty vocabulary"):
        from_gensim(Word2Vec(vector_size=4))
