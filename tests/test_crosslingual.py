"""``hf-lineage xling``: the zero-shot cross-lingual transfer experiment, on tiny models and a few sentences."""

import json
from pathlib import Path

import numpy as np
import pytest

from hf_lineage import samples
from hf_lineage.crosslingual import transfer
from hf_lineage.crosslingual.transfer import (
    CrosslingualArguments,
    ceiling_data,
    check_arguments,
    finetune_and_tag,
    split_with_labels_covered,
)
from hf_lineage.crosslingual.transfer_report import comparisons, vocabulary_overlap
from hf_lineage.lineage.settings import SAMPLE_PATHS, LineageError


def _head(source, target: Path, lines: int) -> str:
    with open(source, encoding="utf-8") as f:
        target.write_text("".join(line for _, line in zip(range(lines), f)), encoding="utf-8")
    return str(target)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """Two fine-tuning seeds on one pre-training seed's models, a few hundred lines of the embedded samples."""
    folder = tmp_path_factory.mktemp("xling")
    data = samples.CROSSLINGUAL
    targets = {lang: {"test": _head(data / f"{lang}.test.jsonl", folder / f"{lang}.test.jsonl", 40),
                      "dev": _head(data / f"{lang}.dev.jsonl", folder / f"{lang}.dev.jsonl", 80)}
               for lang in ("de", "fr")}
    args = CrosslingualArguments(
        output_dir=str(folder / "report"),
        pretraining_text=[f"en={_head(samples.LINEAGE / 'corpus.train.txt', folder / 'en.txt', 400)}",
                          f"de={_head(data / 'de.text.txt', folder / 'de.txt', 300)}"],
        targets=targets, source_train=_head(SAMPLE_PATHS["labeling"][0], folder / "en.train.jsonl", 330),
        source_validation=_head(SAMPLE_PATHS["labeling"][1], folder / "en.validation.jsonl", 40),
        source_sentences=100, pretrain_steps=4, finetune_epochs=1, seeds=2, pretraining_seeds=1, workers=0)
    return args, transfer.run(args)


def test_every_system_is_scored_with_an_interval(tiny_run):
    args, results = tiny_run
    assert set(results["scores"]) == {"en", "de", "fr"}
    for language in ("de", "fr"):
        assert set(results["scores"][language]) == {"multilingual", "english-only", "ceiling", "mft-english",
                                                     "mft-target"}
    assert "ceiling" not in results["scores"]["en"] and "mft-target" not in results["scores"]["en"]
    for per_language in results["scores"].values():
        for entry in per_language.values():
            low, high = entry["interval"]
            assert 0 <= low <= entry["score"] <= high <= 1
            assert entry["score"] == pytest.approx(np.mean(entry["seed_scores"]))
    assert len(results["scores"]["de"]["multilingual"]["seed_scores"]) == 2  # one per seed
    assert len(results["scores"]["de"]["mft-english"]["seed_scores"]) == 1  # deterministic
    assert not results["failed_stages"]


def test_report_plot_and_model_card(tiny_run):
    args, results = tiny_run
    out = Path(args.output_dir)
    report = (out / "report.md").read_text()
    assert "| multilingual BERT, English labels |" in report and "## Vocabulary overlap" in report
    assert (out / "xling.png").stat().st_size > 10_000
    assert json.loads((out / "results.json").read_text())["scores"] == results["scores"]
    multilingual = Path(results["pretraining"]["multilingual-seed0"]["model"])
    assert "language:\n- en\n- de\n" in (multilingual / "README.md").read_text()
    english = json.loads((Path(results["pretraining"]["english-seed0"]["model"]) / "train_results.json").read_text())
    assert list(english["languages"]) == ["en"]
    # the same size and budget: steps, batch and vocabulary size
    steps = {name: entry["steps"] for name, entry in results["pretraining"].items()}
    assert set(steps) == {"multilingual-seed0", "english-seed0"} and set(steps.values()) == {4}
    cell = json.loads((out / "stages/english/multilingual-seed1/stage.json").read_text())
    assert cell["spec"]["model"].endswith("pretrain/multilingual-seed0/model")  # seed 1 fine-tunes seed 0's model
    configs = [json.loads((Path(entry["model"]) / "config.json").read_text())
               for entry in results["pretraining"].values()]
    assert len({(c["hidden_size"], c["num_hidden_layers"]) for c in configs}) == 1


def test_overlap_shares_are_shares(tiny_run):
    _, results = tiny_run
    for per_language in results["overlap"].values():
        for entry in per_language.values():
            assert 0 < entry["pires"] <= entry["types"] <= 1 and 0 < entry["tokens"] <= 1
            words = sum(bucket["words"] for bucket in entry["by_word"].values())
    assert words == results["words"]["fr"]


def test_the_zero_shot_models_never_read_target_labels(tiny_run, tmp_path):
    """The English cell again, with the target test sets' tags removed: the same predictions, bit for bit (a pipeline
    that read target labels anywhere would fail or change)."""
    args, results = tiny_run
    blind = {}
    for language in ("de", "fr"):
        rows = [json.loads(line) for line in open(args.targets[language]["test"], encoding="utf-8")]
        blind[language] = tmp_path / f"{language}.jsonl"
        blind[language].write_text("".join(json.dumps({"tokens": r["tokens"]}) + "\n" for r in rows))
    english = {"train": str(Path(args.output_dir) / "data" / "en.train.jsonl"),
               "dev": str(Path(args.output_dir) / "data" / "en.dev.jsonl")}
    model = results["pretraining"]["multilingual-seed0"]["model"]
    again = finetune_and_tag(model, english, {k: str(v) for k, v in blind.items()}, args, 0, tmp_path / "cell")
    stage = json.loads((Path(args.output_dir) / "stages/english/multilingual-seed0/stage.json").read_text())
    for language in ("de", "fr"):
        assert again["tagged"][language] == stage["result"]["tagged"][language]


def test_ceiling_data_leaves_out_test_sentences_and_covers_its_labels(tmp_path):
    rows = [{"tokens": [f"w{i}"], "tags": ["NOUN"]} for i in range(20)] + [{"tokens": ["x"], "tags": ["X"]}]
    test = tmp_path / "test.jsonl"
    test.write_text(json.dumps({"tokens": ["w3"], "tags": ["NOUN"]}) + "\n")
    dev = tmp_path / "dev.jsonl"
    dev.write_text("".join(json.dumps(r) + "\n" for r in rows))
    made = ceiling_data("de", {"test": str(test), "dev": str(dev)}, tmp_path / "out")
    train = [json.loads(line) for line in open(made["train"])]
    held = [json.loads(line) for line in open(made["dev"])]
    assert ["w3"] not in [r["tokens"] for r in train + held]  # a dev sentence that is also a test sentence
    assert {"tokens": ["x"], "tags": ["X"]} in train  # the only X: moved to training, or the recipe would refuse it
    assert len(train) + len(held) == 20
    assert split_with_labels_covered(rows, 2) == (rows[:19] + [rows[20]], [rows[19]])


def test_verdicts_only_where_the_interval_excludes_zero():
    rng = np.random.default_rng(0)
    strong = [[np.ones(10) for _ in range(30)] for _ in range(2)]
    weak = [[(rng.random(10) < 0.5).astype(float) for _ in range(30)] for _ in range(2)]
    units = {("multilingual", "de"): strong, ("english-only", "de"): weak, ("mft-english", "de"): strong,
             ("ceiling", "de"): strong}
    verdicts = {(c["a"], c["b"]): c["verdict"] for c in comparisons(units, {"en": None, "de": None})}
    assert verdicts[("multilingual", "english-only")] == "multilingual higher"
    assert verdicts[("multilingual", "mft-english")] == "no difference shown"
    assert verdicts[("ceiling", "multilingual")] == "no difference shown"


def test_overlap_counts_word_pieces_seen_in_english(tmp_path):
    from hf_lineage.tokenization import train_wordpiece_tokenizer

    tokenizer = train_wordpiece_tokenizer(iterator=["the cat sat", "der hund lief", "the dog"] * 20, vocab_size=60)
    tokenizer.save_pretrained(tmp_path / "tok")
    pretrained = {(name, 0): {"status": "ok", "result": {"model": str(tmp_path / "tok")}}
                  for name in ("multilingual", "english")}
    english = [{"tokens": ["the", "cat"], "tags": ["DET", "NOUN"]}]
    gold = {"en": english, "de": [{"tokens": ["the", "hund"], "tags": ["DET", "NOUN"]}]}
    units = {("multilingual", "de"): [[np.array([1.0, 0.0])]]}
    overlap = vocabulary_overlap(pretrained, [0], english, gold, units)["multilingual"]["de"]
    pieces = tokenizer.tokenize("hund")
    assert overlap["types"] == pytest.approx(1 / (1 + len(set(pieces))))
    assert overlap["by_word"]["all"] == {"words": 1, "accuracy": 1.0}
    assert overlap["by_word"]["none"] == {"words": 1, "accuracy": 0.0}


@pytest.mark.parametrize("change, message", [
    (dict(pretraining_text=["de=x.txt"]), "English and at least one more"),
    (dict(pretraining_text=["en=a.txt", "b.txt"]), "mixes language-tagged"),
    (dict(targets={"en": {"test": "t", "dev": "d"}}), "no such file|other than English"),
    (dict(seeds=0), "positive"),
    (dict(pretraining_seeds=0), "--pretraining-seeds must be positive"),
    (dict(scale="huge"), "--scale"),
])
def test_bad_arguments_are_refused(change, message):
    with pytest.raises(LineageError, match=message):
        check_arguments(CrosslingualArguments(**change))


def test_command_line_refuses_bad_input_before_writing(tmp_path, capsys):
    from hf_lineage.cli import main

    out = tmp_path / "report"
    assert main(["xling", "--output-dir", str(out), "--pretraining-text", "en=/no/such/file", "de=/no/file"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert not out.exists()
