"""The data samples embedded for `hf-lineage lineage` (hf_lineage/samples/lineage/, written by
scripts/make_lineage_samples.py): the manifest matches the files, the recipes' readers read every task file into the
task's columns with labels the recipes accept, splits do not share MRs, labels are balanced (pairs) or not dominated by
one class (classification), and — with the shared data present — the samples agree with their sources (every
classification label is the familyFriendly value of the reference's MR) and the script reproduces them byte for byte.
"""

import collections
import csv
import hashlib
import importlib.util
import json
import re
from importlib import resources
from pathlib import Path

import pytest
import transformers

from hf_lineage.tasks.recipe_arguments import DataTrainingArguments
from hf_lineage.tasks.splits import Split, build_label_maps, read_data_file, standardize

from conftest import REPO, SHARED_DATA

SAMPLES = Path(str(resources.files("hf_lineage.samples") / "lineage"))
MANIFEST = json.loads((SAMPLES / "manifest.json").read_text(encoding="utf-8"))
GENRES = ["answers", "email", "newsgroup", "reviews", "weblog"]
FAMILY_FRIENDLY = ["no", "not mentioned", "yes"]
SIZES = {  # task file prefix -> examples in train, validation
    "labeling": (4000, 1000), "classification": (4000, 1200), "pairs": (4000, 1200)}
# These compare the samples with the source files they were cut from, which only ../shared/data has.
needs_data = pytest.mark.skipif(not SHARED_DATA.is_dir(),
                                reason="compares the samples with their sources in ../shared/data, not present")

TASK_COLUMNS = {
    "sequence_labeling": ["tokens", "tags"],
    "classification": ["sentence", "label"],
    "sentence_pairs": ["sentence1", "sentence2", "label"],
    "generation": ["source", "target"],
}


def _jsonl(name):
    with open(SAMPLES / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _csv_rows(name):
    with open(SAMPLES / name, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _script():
    spec = importlib.util.spec_from_file_location("make_lineage_samples", REPO / "scripts" / "make_lineage_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------- manifest


def test_manifest_lists_every_file_with_its_hash_and_counts():
    listed = set(MANIFEST["files"])
    on_disk = {p.name for p in SAMPLES.iterdir()} - {"README.md", "manifest.json"}
    assert listed == on_disk and len(listed) == 10
    for name, entry in MANIFEST["files"].items():
        data = (SAMPLES / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], name
        assert entry["source"] and entry["license"].startswith("CC BY-SA"), name
        text = data.decode("utf-8")  # plain UTF-8
        if "corpus" in entry:
            assert entry["lines"] == text.count("\n") and text.endswith("\n")
            assert entry["words"] == len(text.split())
        elif name.endswith(".jsonl"):
            records = _jsonl(name)
            assert entry["examples"] == len(records)
            if name.startswith("labeling."):
                assert entry["words"] == sum(len(r["tokens"]) for r in records)
            if name.startswith("classification."):
                counts = collections.Counter(r["label"] for r in records)
                assert entry["label_counts"] == {label: counts[label] for label in FAMILY_FRIENDLY}
                assert entry["majority_share"] == round(max(counts.values()) / len(records), 4)
        else:
            rows = _csv_rows(name)
            assert entry["examples"] == len(rows) and entry["mrs"] == len({r["mr"] for r in rows})
    assert 500_000 < MANIFEST["files"]["corpus.train.txt"]["words"] < 700_000
    assert 30_000 < MANIFEST["files"]["corpus.validation.txt"]["words"] < 50_000
    assert sum(p.stat().st_size for p in SAMPLES.iterdir()) < 10_000_000  # a wheel-sized package (~8.7 MB now)

    assert set(MANIFEST["tasks"]) == set(TASK_COLUMNS)
    for task, entry in MANIFEST["tasks"].items():
        for split in ("train", "validation"):
            assert MANIFEST["files"][entry[split]]["task"] == task
            assert MANIFEST["files"][entry[split]]["split"] == split
        assert entry["metric"] == ("bleu" if task == "generation" else "accuracy")
        assert ("labels" in entry) == (task != "generation")
    assert MANIFEST["tasks"]["classification"]["labels"] == FAMILY_FRIENDLY
    assert MANIFEST["tasks"]["sentence_pairs"]["labels"] == ["different", "paraphrase"]
    assert {"NOUN", "VERB", "PUNCT", "ADP"} <= set(MANIFEST["tasks"]["sequence_labeling"]["labels"])


def test_corpus_files_keep_the_wikitext_format_and_whole_articles():
    for name in ("corpus.train.txt", "corpus.validation.txt"):
        lines = (SAMPLES / name).read_text(encoding="utf-8").split("\n")[:-1]
        assert lines[0] == " " and lines[1].startswith(" = ") and not lines[1].startswith(" = = ")
        assert lines[-1] == " "  # ends where the next article's blank line + title would start
        assert all(line == " " or line.startswith(" ") for line in lines)  # WikiText's leading space


# --------------------------------------------------------------------------- what the recipes read


@pytest.mark.parametrize("task", list(TASK_COLUMNS))
def test_recipe_readers_read_each_task_file_into_the_task_columns(task):
    entry = MANIFEST["tasks"][task]
    data_args = DataTrainingArguments()
    splits = {}
    for split in ("train", "validation"):
        path = str(SAMPLES / entry[split])
        dataset = standardize(read_data_file(path, task, data_args), task, data_args, path)
        assert dataset.column_names == TASK_COLUMNS[task]  # extra columns (pairs' mr_ids) are dropped
        assert len(dataset) == MANIFEST["files"][entry[split]]["examples"]
        splits[split] = Split(dataset, path)
    if task == "generation":
        first = splits["train"].dataset[0]
        assert first["source"].startswith("name [ ") and first["target"]
        return
    column = "tags" if task == "sequence_labeling" else "label"
    # The recipes' label map: from the training file, and every validation label must be in it.
    labels, _ = build_label_maps(splits, column, transformers.PretrainedConfig())
    assert labels == entry["labels"]
    if task == "sequence_labeling":
        row = splits["validation"].dataset[0]
        assert len(row["tokens"]) == len(row["tags"]) and 3 <= len(row["tokens"]) <= 60


# --------------------------------------------------------------------------- splits and balance


def test_pairs_and_generation_splits_share_no_meaning_representation():
    def mr_ids(name):
        return {i for record in _jsonl(name) for i in record["mr_ids"]}

    assert mr_ids("pairs.train.jsonl").isdisjoint(mr_ids("pairs.validation.jsonl"))
    assert len(mr_ids("pairs.train.jsonl")) > 400 and len(mr_ids("pairs.validation.jsonl")) > 100
    train = {r["mr"] for r in _csv_rows("generation.train.csv")}
    validation = {r["mr"] for r in _csv_rows("generation.validation.csv")}
    assert train.isdisjoint(validation) and len(validation) == 80
    for name in ("generation.train.csv", "generation.validation.csv"):  # rows of one MR are adjacent
        mrs = [r["mr"] for r in _csv_rows(name)]
        runs = [mr for i, mr in enumerate(mrs) if i == 0 or mrs[i - 1] != mr]
        assert len(runs) == len(set(runs))


def test_sizes_leave_room_for_a_dev_split_and_learning_curves():
    for prefix, sizes in SIZES.items():
        for split, total in zip(("train", "validation"), sizes):
            assert len(_jsonl(f"{prefix}.{split}.jsonl")) == total, (prefix, split)
    # Token accuracy is measured over tokens: the validation file holds at least 10,000.
    assert sum(len(r["tokens"]) for r in _jsonl("labeling.validation.jsonl")) >= 10_000


def test_pair_labels_are_balanced_and_shuffled():
    for split, total in zip(("train", "validation"), SIZES["pairs"]):
        pairs = _jsonl(f"pairs.{split}.jsonl")
        labels = [r["label"] for r in pairs]
        assert collections.Counter(labels) == {"paraphrase": total // 2, "different": total // 2}
        assert 0.3 < labels[:100].count("paraphrase") / 100 < 0.7
        # A text pair (either order) appears once; the two sentences of a pair differ.
        keys = [frozenset((r["sentence1"], r["sentence2"])) for r in pairs]
        assert len(set(keys)) == len(keys) and all(len(k) == 2 for k in keys)
        for r in pairs:
            assert (r["label"] == "paraphrase") == (r["mr_ids"][0] == r["mr_ids"][1])


def test_classification_labels_are_not_dominated_by_one_class_and_are_shuffled():
    texts = {}
    for split in ("train", "validation"):
        records = _jsonl(f"classification.{split}.jsonl")
        assert all(set(r) == {"sentence", "label"} and r["sentence"] for r in records)
        labels = [r["label"] for r in records]
        counts = collections.Counter(labels)
        assert set(counts) == set(FAMILY_FRIENDLY) and min(counts.values()) / len(labels) > 0.1
        assert max(counts.values()) / len(labels) < 0.65  # the majority baseline stays well below 0.9
        for head in (labels[:100], labels[:1000]):  # shuffled: any head is near the file's distribution
            assert set(head) == set(FAMILY_FRIENDLY)
            assert abs(head.count("yes") / len(head) - counts["yes"] / len(labels)) < 0.15
        texts[split] = [r["sentence"] for r in records]
        assert len(set(texts[split])) == len(texts[split])  # every reference text once
    assert set(texts["train"]).isdisjoint(texts["validation"])


# --------------------------------------------------------------------------- against the sources


def _ewt_sentences(path):
    """(genre, # text, FORMs of the syntactic words) per sentence — a plain reading, independent of the script."""
    sentences, block = [], []
    for line in (path.read_text(encoding="utf-8") + "\n").split("\n"):
        if line.strip():
            block.append(line)
            continue
        if block:
            sent_id = next(b for b in block if b.startswith("# sent_id = "))[len("# sent_id = "):]
            text = next(b for b in block if b.startswith("# text = "))[len("# text = "):]
            words = [b.split("\t") for b in block if not b.startswith("#")]
            forms = tuple(w[1] for w in words if w[0].isdigit())  # no "1-2" ranges, no "8.1" empty nodes
            sentences.append((sent_id.split("-")[0], text, forms))
        block = []
    return sentences


@needs_data
def test_ewt_samples_are_stratified_over_the_genres():
    for split, source in (("train", "en_ewt-ud-train.conllu"), ("validation", "en_ewt-ud-dev.conllu")):
        sentences = _ewt_sentences(SHARED_DATA / "ud_english_ewt" / source)
        genre_of = {}
        for genre, text, forms in sentences:
            genre_of.setdefault(forms, genre)  # a repeated sentence counts where it first occurs
        counts = collections.Counter()
        for record in _jsonl(f"labeling.{split}.jsonl"):
            counts[genre_of[tuple(record["tokens"])]] += 1  # KeyError: not a source sentence
            assert 3 <= len(record["tokens"]) <= 60
        total = len(_jsonl(f"labeling.{split}.jsonl"))
        assert counts == {g: total // 5 for g in GENRES}


@needs_data
def test_pairs_come_from_the_e2e_references_as_labelled():
    with open(SHARED_DATA / "e2e_nlg" / "testset_w_refs.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    mrs = list(dict.fromkeys(r["mr"] for r in rows))  # numbered by first appearance
    refs = collections.defaultdict(set)
    tokenize = _script().tokenize_like_wikitext
    for r in rows:
        refs[mrs.index(r["mr"])].add(tokenize(r["ref"]))

    def name(mr):
        return next(p.strip() for p in mr.split(",") if p.strip().startswith("name["))

    for split in ("train", "validation"):
        for r in _jsonl(f"pairs.{split}.jsonl"):
            i, j = r["mr_ids"]
            assert r["sentence1"] in refs[i] and r["sentence2"] in refs[j]
            if r["label"] == "different":
                assert i != j and name(mrs[i]) == name(mrs[j])
                assert set(map(str.strip, mrs[i].split(","))) != set(map(str.strip, mrs[j].split(",")))
    assert len(mrs) == 630


def _e2e_rows(name):
    with open(SHARED_DATA / "e2e_nlg" / name, encoding="utf-8", newline="") as f:
        return [(r["mr"], r["ref"]) for r in csv.DictReader(f)]


def _family_friendly(mr):
    """A plain reading of an MR's familyFriendly slot, independent of the script."""
    found = re.findall(r"familyFriendly\[([^\]]*)\]", mr)
    assert len(found) <= 1 and set(found) <= {"yes", "no"}, mr
    return found[0] if found else "not mentioned"


@needs_data
def test_classification_labels_are_the_familyfriendly_slot_of_the_reference_mr():
    tokenize = _script().tokenize_like_wikitext
    mrs_of = collections.defaultdict(set)  # tokenized reference -> its MRs (devset and testset share none)
    dev, test = _e2e_rows("devset.csv"), _e2e_rows("testset_w_refs.csv")
    assert not {mr for mr, _ in dev} & {mr for mr, _ in test}
    for mr, ref in dev + test:
        mrs_of[tokenize(ref)].add(mr)
    split_mrs = {}
    for split in ("train", "validation"):
        labels = collections.Counter()
        split_mrs[split] = set()
        for record in _jsonl(f"classification.{split}.jsonl"):
            (mr,) = mrs_of[record["sentence"]]  # a reference of exactly one source MR
            assert record["label"] == _family_friendly(mr), record
            labels[record["label"]] += 1
            split_mrs[split].add(mr)
        assert labels == MANIFEST["files"][f"classification.{split}.jsonl"]["label_counts"]
    # Split by MR, not by row: no MR gives references to both files.
    assert split_mrs["train"].isdisjoint(split_mrs["validation"])
    assert len(split_mrs["train"]) > 500 and len(split_mrs["validation"]) > 100
    # And consistent with the other E2E samples: no MR of an E2E validation file gives text to an E2E training file.
    test_mrs = list(dict.fromkeys(mr for mr, _ in test))
    e2e_mrs = {}  # split -> tokenized MRs of the generation and pairs files
    for split in ("train", "validation"):
        e2e_mrs[split] = {r["mr"] for r in _csv_rows(f"generation.{split}.csv")}  # already tokenized
        e2e_mrs[split] |= {tokenize(test_mrs[i]) for r in _jsonl(f"pairs.{split}.jsonl") for i in r["mr_ids"]}
    assert e2e_mrs["validation"].isdisjoint(tokenize(mr) for mr in split_mrs["train"])
    assert e2e_mrs["train"].isdisjoint(tokenize(mr) for mr in split_mrs["validation"])


@needs_data
def test_generation_samples_split_the_e2e_devset(tmp_path):
    source = (SHARED_DATA / "e2e_nlg" / "devset.csv").read_bytes()
    with open(SHARED_DATA / "e2e_nlg" / "devset.csv", encoding="utf-8", newline="") as f:
        rows = [(r["mr"], r["ref"]) for r in csv.DictReader(f)]
    # The script's writer reproduces the original file's quoting and line ends exactly.
    assert _script().e2e_csv(rows) == source
    train = [(r["mr"], r["ref"]) for r in _csv_rows("generation.train.csv")]
    validation = [(r["mr"], r["ref"]) for r in _csv_rows("generation.validation.csv")]
    tokenize = _script().tokenize_like_wikitext
    rows = [(tokenize(mr), tokenize(ref)) for mr, ref in rows]  # the samples are tokenized like the corpus
    held_out = {mr for mr, _ in validation}
    assert train == [row for row in rows if row[0] not in held_out]  # the rest, in the original order
    assert validation == [row for row in rows if row[0] in held_out]  # all references of the 80 MRs


def test_e2e_text_is_tokenized_like_wikitext():
    tokenize = _script().tokenize_like_wikitext
    assert tokenize("It isn't family-friendly, and costs £20-25.") == \
        "It isn 't family @-@ friendly , and costs £ 20 @-@ 25 ."
    assert tokenize("name[The Eagle], area[riverside]") == "name [ The Eagle ] , area [ riverside ]"


@needs_data
def test_script_reproduces_the_samples_byte_for_byte(tmp_path):
    script = _script()
    assert script.main(["--data-dir", str(SHARED_DATA), "--output-dir", str(tmp_path)]) == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(p.name for p in SAMPLES.iterdir())
    for name in written:
        assert (tmp_path / name).read_bytes() == (SAMPLES / name).read_bytes(), name


def test_script_refuses_a_data_dir_without_the_sources(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        _script().main(["--data-dir", str(tmp_path / "nowhere"), "--output-dir", str(tmp_path / "out")])
    assert exit_info.value.code == 2 and "wiki.train.tokens" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_even_counts_spreads_a_total_over_groups():
    even_counts = _script().even_counts
    assert even_counts({"a": 10, "b": 2, "c": 10}, 12) == {"a": 5, "b": 2, "c": 5}
    assert even_counts({"a": 5, "b": 5, "c": 5}, 7) == {"a": 2, "b": 2, "c": 3}
    assert even_counts({"a": 1, "b": 3}, 10) == {"a": 1, "b": 3}  # fewer than asked: everything
