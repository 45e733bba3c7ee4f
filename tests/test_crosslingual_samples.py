"""The zero-shot cross-lingual POS-tagging samples (hf_lineage/samples/crosslingual/, written by
scripts/make_crosslingual_samples.py): the manifest's hashes and counts match the files, every tag is one of the 17 UPOS
tags the English training file has, the recipes read the files, the text files are in BERT's format and hold no test
sentence, and -- with the shared data present -- the files agree with the UD sources and the script reproduces them
byte for byte."""

import collections
import hashlib
import importlib.util
import itertools
import json
import re

import pytest

from hf_lineage import samples
from hf_lineage.data.next_sentence import documents_from_text
from hf_lineage.tasks.recipe_arguments import DataTrainingArguments
from hf_lineage.tasks.splits import read_data_file, standardize

from conftest import REPO, SHARED_DATA

FOLDER = samples.CROSSLINGUAL
MANIFEST = json.loads((FOLDER / "manifest.json").read_text(encoding="utf-8"))
UPOS = ["ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN", "PUNCT", "SCONJ",
        "SYM", "VERB", "X"]
LANGUAGES = ("de", "fr")
SENTENCES = {("de", "test"): 977, ("de", "dev"): 799, ("fr", "test"): 416, ("fr", "dev"): 1476}  # UD v2.16
SOURCES = {"de": ("ud_german_gsd", "de_gsd-ud-{}.conllu"), "fr": ("ud_french_gsd", "fr_gsd-ud-{}.conllu")}
needs_data = pytest.mark.skipif(not all((SHARED_DATA / folder).is_dir() for folder, _ in SOURCES.values()),
                                reason="compares the samples with UD German/French GSD in ../shared/data, not present")


def _jsonl(name):
    return [json.loads(line) for line in (FOLDER / name).read_text(encoding="utf-8").splitlines()]


def _text_lines(name):
    return (FOLDER / name).read_text(encoding="utf-8").split("\n")[:-1]


def _script():
    spec = importlib.util.spec_from_file_location("make_crosslingual_samples",
                                                  REPO / "scripts" / "make_crosslingual_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _test_texts(lang):
    """The ``# text`` of every sentence of the UD test file."""
    folder, pattern = SOURCES[lang]
    lines = (SHARED_DATA / folder / pattern.format("test")).read_text(encoding="utf-8").splitlines()
    return [line[len("# text = "):] for line in lines if line.startswith("# text = ")]


def test_the_home_names_the_folder():
    assert samples.path("crosslingual") == FOLDER == samples.SAMPLES / "crosslingual"
    assert FOLDER in samples.FOLDERS and (FOLDER / "README.md").is_file()


def test_manifest_hashes_and_counts_match_every_file():
    names = {f"{lang}.{kind}" for lang in LANGUAGES for kind in ("test.jsonl", "dev.jsonl", "text.txt")}
    assert set(MANIFEST["files"]) == names
    assert {p.name for p in FOLDER.iterdir()} == names | {"README.md", "manifest.json"}
    for name, entry in MANIFEST["files"].items():
        data = (FOLDER / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], name
        assert entry["license"] == "CC BY-SA 4.0" and entry["source"].endswith(f"-ud-{entry['split']}.conllu"), name
        assert entry["language"] == name.split(".")[0]
        if name.endswith(".jsonl"):
            records = _jsonl(name)
            assert entry["sentences"] == len(records) == SENTENCES[entry["language"], entry["split"]], name
            assert entry["words"] == sum(len(r["tokens"]) for r in records), name
        else:
            lines = _text_lines(name)
            assert entry["split"] == "dev"
            assert entry["sentences"] == sum(1 for line in lines if line)
            assert entry["sentences"] == SENTENCES[entry["language"], "dev"] - len(entry["left_out"])
            assert entry["words"] == len(data.decode("utf-8").split())
            assert entry["documents"] == len(documents_from_text(lines))
    for lang in LANGUAGES:
        language = MANIFEST["languages"][lang]
        assert [language[k] for k in ("test", "dev", "text")] == [f"{lang}.test.jsonl", f"{lang}.dev.jsonl",
                                                                  f"{lang}.text.txt"]
        assert language["version"] == "2.16" and re.fullmatch(r"[0-9a-f]{40}", language["commit"])
    size = sum(p.stat().st_size for p in FOLDER.iterdir())
    assert size < 3_000_000  # ~1.4 MB now
    assert "CC BY-SA 4.0" in (FOLDER / "README.md").read_text(encoding="utf-8")


def test_tags_are_the_17_upos_tags_the_english_training_file_has():
    assert MANIFEST["labels"] == UPOS
    english = [json.loads(line) for line in (samples.SAMPLES / MANIFEST["english"]["train"]).open(encoding="utf-8")]
    assert sorted({t for r in english for t in r["tags"]}) == UPOS  # the head trained on English knows every tag
    for lang in LANGUAGES:
        seen = collections.Counter()
        for split in ("test", "dev"):
            for record in _jsonl(f"{lang}.{split}.jsonl"):
                assert set(record) == {"tokens", "tags"} and len(record["tokens"]) == len(record["tags"]) > 0
                assert all(token for token in record["tokens"])
                seen.update(record["tags"])
        assert set(seen) <= set(UPOS) and "_" not in seen
        assert MANIFEST["languages"][lang]["tags"] == [t for t in UPOS if seen[t]]
    assert len(MANIFEST["languages"]["de"]["tags"]) == 17
    assert MANIFEST["languages"]["fr"]["tags"] == [t for t in UPOS if t != "PART"]  # French GSD has no PART


@pytest.mark.parametrize("name", ["de.test.jsonl", "fr.dev.jsonl"])
def test_the_recipes_read_them_as_sequence_labeling(name):
    data_args = DataTrainingArguments()
    path = str(FOLDER / name)
    dataset = standardize(read_data_file(path, "sequence_labeling", data_args), "sequence_labeling", data_args, path)
    assert dataset.column_names == ["tokens", "tags"] and len(dataset) == MANIFEST["files"][name]["sentences"]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_text_files_are_bert_format_and_hold_no_test_sentence(lang):
    lines = _text_lines(f"{lang}.text.txt")
    assert lines[0] and lines[-1]  # no blank line first or last
    assert all(a or b for a, b in itertools.pairwise(lines))  # single blank lines between documents
    assert all(line == line.strip() for line in lines)
    assert len(set(filter(None, lines))) == len(list(filter(None, lines)))  # the dev file repeats no text
    entry = MANIFEST["files"][f"{lang}.text.txt"]
    assert entry["documents_from"] == "blocks of 10 sentences"  # neither GSD dev file has "# newdoc" markers
    assert all(len(doc) <= 10 for doc in documents_from_text(lines))
    assert MANIFEST["files"][f"{lang}.dev.jsonl"]["shared_with_test"] == entry["left_out"]
    # Without the source: a line is no test sentence's words run together (misses test sentences with multiword
    # tokens, whose syntactic words differ from the text; the check against the source below covers those).
    test_words = {"".join(r["tokens"]) for r in _jsonl(f"{lang}.test.jsonl")}
    assert not [line for line in lines if line and re.sub(r"\s+", "", line) in test_words]


@needs_data
@pytest.mark.parametrize("lang", LANGUAGES)
def test_no_line_of_a_text_file_is_a_test_sentence_text(lang):
    test_texts = _test_texts(lang)
    assert len(test_texts) == SENTENCES[lang, "test"]
    lines = set(_text_lines(f"{lang}.text.txt"))
    assert not lines & set(test_texts)
    folded = {re.sub(r"\s+", "", t).casefold() for t in test_texts}
    assert not [line for line in lines if line and re.sub(r"\s+", "", line).casefold() in folded]


@needs_data
def test_the_files_are_the_ud_sources_and_the_script_reproduces_them(tmp_path):
    from hf_lineage.data.readers import read_conllu

    for lang, (folder, pattern) in SOURCES.items():
        for split in ("test", "dev"):
            source = read_conllu(SHARED_DATA / folder / pattern.format(split), column="upos")
            assert _jsonl(f"{lang}.{split}.jsonl") == [{"tokens": r["tokens"], "tags": r["tags"]} for r in source]
    assert _script().main(["--data-dir", str(SHARED_DATA), "--output-dir", str(tmp_path)]) == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(p.name for p in FOLDER.iterdir())
    for name in written:
        assert (tmp_path / name).read_bytes() == (FOLDER / name).read_bytes(), name


def test_the_script_refuses_a_data_dir_without_the_treebanks(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        _script().main(["--data-dir", str(tmp_path / "nowhere"), "--output-dir", str(tmp_path / "out")])
    assert exit_info.value.code == 2 and "de_gsd-ud-test.conllu" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_script_cuts_documents_at_newdoc_and_leaves_test_sentences_out(tmp_path):
    """The ``# newdoc`` branch (no GSD file needs it) and the exclusion, on a toy treebank."""
    script = _script()

    def sentence(sent_id, text, newdoc=False):
        words = text.rstrip(".").split()
        lines = (["# newdoc id = d"] if newdoc else []) + [f"# sent_id = {sent_id}", f"# text = {text}"]
        lines += [f"{i}\t{w}\t{w}\tNOUN\t_\t_\t0\troot\t_\t_" for i, w in enumerate(words, 1)]
        return "\n".join(lines + [f"{len(words) + 1}\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\t_", ""]) + "\n"

    dev, test = tmp_path / "dev.conllu", tmp_path / "test.conllu"
    dev.write_text(sentence("d1", "A b.", newdoc=True) + sentence("d2", "C d.") + sentence("d3", "E f.", newdoc=True)
                   + sentence("d4", "Same  text."), encoding="utf-8")
    test.write_text(sentence("t1", "same text."), encoding="utf-8")
    dev_sentences, test_sentences = script.ud_sentences(dev), script.ud_sentences(test)
    assert [s["newdoc"] for s in dev_sentences] == [True, False, True, False]
    data, info = script.text_file(dev_sentences, test_sentences)
    assert data.decode("utf-8") == "A b.\nC d.\n\nE f.\n"
    assert info == {"sentences": 3, "words": 6, "documents": 2, "documents_from": "newdoc", "left_out": ["d4"]}
    dev.write_text(sentence("d1", "A b.").replace("NOUN", "NOPE"), encoding="utf-8")
    with pytest.raises(ValueError, match="outside the 17 UPOS"):
        script.ud_sentences(dev)
