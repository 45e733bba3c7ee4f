"""The context tasks of ``hf-lineage lineage`` (``hf_lineage/samples/context_tasks``): balanced labels, a bag of words
near the majority class, what each label means (checked against the UD source when ../shared/data is there) and a
build script that reproduces every file."""

import collections
import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from hf_lineage.lineage import baselines
from hf_lineage.lineage.settings import CONTEXT_TASKS, SAMPLE_PATHS

from conftest import SHARED_DATA  # ../shared/data, or $HF_LINEAGE_SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]
needs_data = pytest.mark.skipif(not (SHARED_DATA / "ud_english_ewt").is_dir(),
                                reason="compares the files with UD English EWT in ../shared/data, not present")


TASKS = {"order": "classification", "order_pairs": "pairs", "shift": "classification", "wic": "pairs"}


def rows(name):
    return [json.loads(line) for line in (CONTEXT_TASKS / name).read_text(encoding="utf-8").splitlines()]


def script():
    spec = importlib.util.spec_from_file_location("make_context_tasks", ROOT / "scripts" / "make_context_tasks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_lineage_reads_them_and_the_manifest_matches_every_file():
    manifest = json.loads((CONTEXT_TASKS / "manifest.json").read_text())["files"]
    assert set(manifest) == {f"{t}.{s}.jsonl" for t in TASKS for s in ("train", "validation")}
    for name, entry in manifest.items():
        data = (CONTEXT_TASKS / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] and entry["license"] == "CC BY-SA 4.0"
        assert entry["examples"] == len(rows(name))
    assert SAMPLE_PATHS["shift"] == (CONTEXT_TASKS / "shift.train.jsonl", CONTEXT_TASKS / "shift.validation.jsonl")


@pytest.mark.parametrize("task", TASKS)
def test_labels_are_balanced_and_shuffled(task):
    for split, size in (("train", 4000), ("validation", 1000)):
        labels = [r["label"] for r in rows(f"{task}.{split}.jsonl")]
        counts = collections.Counter(labels)
        assert len(labels) == size and set(counts.values()) == {size // 2}
        # shuffled: the first 100 (the smallest learning-curve subset) hold both classes about evenly
        assert 30 < collections.Counter(labels[:100]).most_common(1)[0][1] < 70


def test_a_rotation_keeps_the_words_and_the_final_punctuation():
    for r in rows("order_pairs.validation.jsonl"):
        original, other = (r["sentence1"], r["sentence2"]) if r["label"] == "first" else (r["sentence2"], r["sentence1"])
        a, b = original.split(), other.split()
        assert sorted(a) == sorted(b) and a != b
        # the words cut once and the parts swapped, with a final punctuation mark (UPOS PUNCT) kept last
        rotations = [a[k:] + a[:k] for k in range(1, len(a))] + [a[k:-1] + a[:k] + a[-1:] for k in range(1, len(a) - 1)]
        assert b in rotations


def test_each_sentence_is_in_one_version_only_and_short():
    train = rows("shift.train.jsonl")
    words = {tuple(sorted(r["sentence"].split())) for r in train}
    # one version of each sentence only (a few EWT sentences share their words), so the bag cannot tell the classes
    # apart
    assert len(words) > 0.99 * len(train)
    lengths = [len(r["sentence"].split()) for r in train]
    assert min(lengths) >= 5 and max(lengths) <= 25


def test_every_word_gives_as_many_same_as_different_pairs():
    for split in ("train", "validation"):
        by_word = collections.defaultdict(collections.Counter)
        for r in rows(f"wic.{split}.jsonl"):
            by_word[r["word"]][r["label"]] += 1
            assert r["word"] in r["sentence1"].lower().split() and r["word"] in r["sentence2"].lower().split()
        assert all(c["same"] == c["different"] for c in by_word.values()) and len(by_word) > 40


@pytest.mark.parametrize("task, kind", TASKS.items())
def test_a_bag_of_words_stays_within_ten_points_of_the_majority_class(task, kind):
    train, validation = rows(f"{task}.train.jsonl")[:1000], rows(f"{task}.validation.jsonl")
    predictions = baselines.bag_of_words_logistic_regression(train, validation, kind, seed=0)
    accuracy = sum(p == r["label"] for p, r in zip(predictions, validation)) / len(validation)
    assert accuracy <= 0.5 + 0.10


@needs_data
def test_labels_agree_with_the_treebank_and_the_script_reproduces_every_file(tmp_path):
    from hf_lineage.data.readers import read_conllu

    module = script()
    assert module.main(["--data-dir", str(SHARED_DATA), "--output-dir", str(tmp_path)]) == 0
    for name in json.loads((CONTEXT_TASKS / "manifest.json").read_text())["files"]:
        assert (tmp_path / name).read_bytes() == (CONTEXT_TASKS / name).read_bytes(), name
    dev = read_conllu(SHARED_DATA / "ud_english_ewt" / "en_ewt-ud-dev.conllu", column="upos")
    originals = {" ".join(r["tokens"]) for r in dev}
    lowered = {s.lower() for s in originals}  # the order tasks are lowercased
    for r in rows("order.validation.jsonl"):
        assert r["sentence"] == r["sentence"].lower() and (r["sentence"] in lowered) == (r["label"] == "original")
    for r in rows("order_pairs.validation.jsonl"):
        assert r["sentence1" if r["label"] == "first" else "sentence2"] in lowered
    for r in rows("shift.validation.jsonl"):
        assert (r["sentence"] in originals) == (r["label"] == "original")
        if r["label"] == "shifted":
            tokens = r["sentence"].split()
            swaps = {" ".join(tokens[:i] + [tokens[i + 1], tokens[i]] + tokens[i + 2:]) for i in range(len(tokens) - 1)}
            assert swaps & originals
    tags = {}  # (window text, word) -> UPOS of the word in that window's sentence
    for r in dev:
        lowered = [t.lower() for t in r["tokens"]]
        for i, (word, tag) in enumerate(zip(lowered, r["tags"])):
            tags[(" ".join(r["tokens"][max(0, i - 6):i + 7]), word)] = tag
    for r in rows("wic.validation.jsonl"):
        first, second = tags[(r["sentence1"], r["word"])], tags[(r["sentence2"], r["word"])]
        assert (first == second) == (r["label"] == "same")


def test_the_script_refuses_a_data_dir_without_the_treebank(tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        script().main(["--data-dir", str(tmp_path), "--output-dir", str(tmp_path / "out")])
    assert exit_info.value.code == 2 and not (tmp_path / "out").exists()
