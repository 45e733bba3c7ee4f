"""Multilingual BERT pre-training: ``--train-file LANG=PATH`` (repeatable) and mBERT's language smoothing
p_i ∝ q_i^α for the vocabulary's sample and the sequences (``hf_lineage.data.languages``)."""

import json
import random

import numpy as np
import pytest

from hf_lineage.data.languages import (
    language_files,
    plain_paths,
    resample,
    smoothed_draw,
    smoothed_probabilities,
    smoothed_text,
)
from hf_lineage.pretraining.cli import main as pretrain_main

# Two made-up languages with disjoint alphabets, so every vocabulary entry can be told to belong to one of them.
BIG_LETTERS, SMALL_LETTERS = "abcdefghijklm", "nopqrstuvwxyz"


def _language(letters: str, rng: random.Random, words: int = 60) -> list[str]:
    syllables = [a + b for a in letters for b in letters[:5]]
    return ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(words)]


def _write_corpus(path, vocabulary, documents, rng):
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(documents):
            for _ in range(4):
                f.write(" ".join(rng.choice(vocabulary) for _ in range(rng.randint(6, 12))) + " .\n")
            f.write("\n")
    return str(path)


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    """A large language (120 documents) and a small one (12), BERT's format."""
    folder, rng = tmp_path_factory.mktemp("languages"), random.Random(0)
    big = _write_corpus(folder / "big.txt", _language(BIG_LETTERS, rng), 120, rng)
    small = _write_corpus(folder / "small.txt", _language(SMALL_LETTERS, rng), 12, rng)
    return big, small


def _pretrain(out, big, small, *extra):
    code = pretrain_main(["bert", "--config", "tiny", "--train-file", f"aa={big}", "--train-file", f"zz={small}",
                          "--output-dir", str(out), "--max-steps", "1", "--vocab-size", "120", *extra])
    assert code == 0
    return json.loads((out / "train_results.json").read_text())


def test_language_files_parse_tags_and_refuse_a_mixture():
    assert language_files(["en=a.txt", "de=b.txt", "en=c.txt"]) == {"en": ["a.txt", "c.txt"], "de": ["b.txt"]}
    assert language_files(["a.txt", "data/x=1.txt"]) is None  # no language code before "="
    assert plain_paths(["en=a.txt", "de=b.txt"]) == ["a.txt", "b.txt"]
    with pytest.raises(ValueError, match="mixes language-tagged"):
        language_files(["en=a.txt", "b.txt"])


def test_only_a_corpus_that_may_name_a_language_is_read_by_the_languages_module(tmp_path, monkeypatch):
    """``named_languages`` / ``corpus_paths`` hand an entry to ``hf_lineage.data.languages`` only when it holds "=":
    a plain corpus is trained without entering it (here it would raise), a tagged one is parsed there."""
    import hf_lineage.data.languages as languages
    from hf_lineage.data.examples import corpus_paths, named_languages

    assert named_languages(["en=a.txt", "de=b.txt"]) == {"en": ["a.txt"], "de": ["b.txt"]}
    assert corpus_paths(["en=a.txt", "de=b.txt"]) == ["a.txt", "b.txt"]
    plain_with_equals = ["runs/lr=0.1/a.txt"]  # "=" but no language code before it
    assert named_languages(plain_with_equals) is None and corpus_paths(plain_with_equals) == plain_with_equals

    def entered(entries):
        raise AssertionError(f"hf_lineage.data.languages parsed plain files {entries}")

    monkeypatch.setattr(languages, "language_files", entered)
    assert named_languages(["a.txt", "b.txt"]) is None and corpus_paths(["a.txt", "b.txt"]) == ["a.txt", "b.txt"]
    corpus = tmp_path / "train.txt"
    corpus.write_text("the cat sat on the mat\nthe dog sat on the log\n" * 20, encoding="utf-8")
    assert pretrain_main(["svd", "--config", "tiny", "--train-file", str(corpus), "--output-dir",
                          str(tmp_path / "svd"), "--set", "min_count=1", "--set", "vector_size=2"]) == 0
    assert (tmp_path / "svd" / "config.json").is_file()
    with pytest.raises(AssertionError, match="parsed plain files"):
        named_languages(["en=a.txt"])  # a tagged entry does reach it


def test_smoothed_probabilities_follow_alpha():
    sizes = {"en": 900, "de": 100}
    assert smoothed_probabilities(sizes, 1.0) == pytest.approx({"en": 0.9, "de": 0.1})
    assert smoothed_probabilities(sizes, 0.0) == pytest.approx({"en": 0.5, "de": 0.5})
    p = smoothed_probabilities(sizes, 0.7)
    expected_de = 0.1 ** 0.7 / (0.1 ** 0.7 + 0.9 ** 0.7)
    assert p["de"] == pytest.approx(expected_de) and 0.1 < p["de"] < 0.5
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        smoothed_probabilities(sizes, 1.5)


def test_resample_draws_exact_counts():
    rng = np.random.default_rng(0)
    drawn = resample(10, 2.3, rng)
    assert len(drawn) == 23 and np.bincount(drawn, minlength=10).min() == 2
    assert len(resample(10, 0.4, rng)) == 4 and len(set(resample(10, 0.4, rng))) == 4  # without replacement


def test_smoothed_draw_gives_each_language_its_smoothed_share():
    groups = {"en": list(range(9000)), "de": list(range(1000))}
    for alpha in (0.3, 0.7, 1.0):
        drawn, report = smoothed_draw(groups, alpha, seed=0)
        total = sum(len(d) for d in drawn.values())
        assert total == pytest.approx(10000, abs=2)
        for language, p in smoothed_probabilities({"en": 9000, "de": 1000}, alpha).items():
            assert len(drawn[language]) / total == pytest.approx(p, abs=1e-3)
            assert report[language]["probability"] == pytest.approx(p)
    assert len(smoothed_draw(groups, 1.0, seed=0)[0]["de"]) == 1000  # α = 1: as given


def test_vocabulary_sample_weights_words():
    lines = {"en": ["a b c d"] * 90, "de": ["x y z w"] * 10}
    texts, report = smoothed_text(lines, 0.7, seed=0)
    drawn = list(texts)
    share_de = sum(line.startswith("x") for line in drawn) / len(drawn)
    assert share_de == pytest.approx(report["de"]["probability"], abs=0.01) and share_de > 0.1


def test_sequences_follow_alpha_and_the_card_lists_the_languages(tmp_path, corpora):
    big, small = corpora
    results = _pretrain(tmp_path / "m", big, small)
    languages = results["languages"]
    assert list(languages) == ["aa", "zz"] and results["language_alpha"] == 0.7
    total = sum(entry["sequences_drawn"] for entry in languages.values())
    for entry in languages.values():
        assert entry["sequences_drawn"] / total == pytest.approx(entry["sequence_probability"], abs=0.02)
    q_small = languages["zz"]["sequences"] / sum(e["sequences"] for e in languages.values())
    assert languages["zz"]["sequences_drawn"] / total > q_small  # the small language is over-sampled
    card = (tmp_path / "m" / "README.md").read_text()
    assert "language:\n- aa\n- zz\n" in card.split("---")[1]  # the Hub's metadata
    assert "## Languages" in card and f"| zz | {languages['zz']['words']:,} |" in card


def test_alpha_gives_the_small_language_more_vocabulary(tmp_path, corpora):
    big, small = corpora

    def small_language_entries(folder):
        vocabulary = json.loads((folder / "tokenizer.json").read_text())["model"]["vocab"]
        pieces = [piece.removeprefix("##") for piece in vocabulary if not piece.startswith("[")]
        return sum(1 for piece in pieces if piece and set(piece) <= set(SMALL_LETTERS))

    _pretrain(tmp_path / "smoothed", big, small, "--language-alpha", "0.7")
    as_given = _pretrain(tmp_path / "as_given", big, small, "--language-alpha", "1")
    assert all(e["sequences_drawn"] == e["sequences"] for e in as_given["languages"].values())
    assert small_language_entries(tmp_path / "smoothed") > small_language_entries(tmp_path / "as_given")


def test_documents_never_span_languages_and_each_language_has_its_own_format(tmp_path, corpora):
    """An English WikiText file and a blank-line-separated file: the second's documents are its blank-line blocks
    (WikiText's article headings would make it one document, and NSP would refuse it)."""
    from hf_lineage.objectives.bert import BertObjective

    rows = [{"starts_document": False, "sentences": [[1]], "language": "en"},
            {"starts_document": False, "sentences": [[2]], "language": "de"}]
    assert list(BertObjective._documents(rows, with_language=True)) == [("en", [[1]]), ("de", [[2]])]
    wiki = tmp_path / "wiki.txt"
    wiki.write_text(" = Title = \n\n The first sentence . The second one .\n\n = Other = \n\n A third . A fourth .\n")
    _, small = corpora
    code = pretrain_main(["bert", "--config", "tiny", "--train-file", f"en={wiki}", f"de={small}",
                          "--output-dir", str(tmp_path / "out"), "--max-steps", "1", "--vocab-size", "120"])
    assert code == 0  # one --train-file flag, several values: the same as repeating it


@pytest.mark.parametrize("argv, message", [
    (["bert", "--train-file", "en=A", "B"], "mixes language-tagged"),
    (["gpt", "--train-file", "en=A", "--train-file", "de=B"], "gpt takes plain files"),
    (["bert", "--train-file", "A", "--language-alpha", "0.5"], "--language-alpha weights"),
    (["bert", "--train-file", "en=A", "--train-file", "de=B", "--language-alpha", "2"], "must be in \\[0, 1\\]"),
    (["bert", "--train-file", "en=A", "--train-file", "de=B", "--streaming", "--max-steps", "2"], "drop --streaming"),
])
def test_bad_language_options_are_refused_before_anything_is_written(tmp_path, corpora, capsys, argv, message):
    big, small = corpora
    argv = [{"en=A": f"en={big}", "de=B": f"de={small}", "A": big, "B": small}.get(a, a) for a in argv]
    out = tmp_path / "out"
    assert pretrain_main([*argv, "--config", "tiny", "--output-dir", str(out)]) == 2
    assert pytest.importorskip("re").search(message, capsys.readouterr().err)
    assert not out.exists()


def test_a_language_without_documents_is_named(tmp_path, corpora, capsys):
    """One sentence per line and no blank line (a caption corpus such as Multi30k) is a single document, from which
    next-sentence prediction cannot draw its random segments: the error names the language and the fix."""
    big, _ = corpora
    flat = tmp_path / "flat.txt"
    flat.write_text("".join(f"ein satz nummer {i} .\n" for i in range(50)))
    code = pretrain_main(["bert", "--config", "tiny", "--train-file", f"en={big}", f"de={flat}",
                          "--output-dir", str(tmp_path / "out"), "--max-steps", "1", "--vocab-size", "120"])
    assert code == 2
    error = capsys.readouterr().err
    assert "the de training text" in error and "Separate its documents with blank lines" in error
    assert not (tmp_path / "out").exists()
