"""``hf-lineage lineage --checkpoints FAMILY=FOLDER``: one family's pretrained folder replaced (the scale axis), its
pretraining row naming its size, the words it read and its source; bad folders refused before anything is written;
parameters counted apart from buffers."""

import json
import shutil
import socket

import pytest

from hf_lineage import checkpoints
from hf_lineage.cli import main as cli_main
from hf_lineage.lineage import experiment
from hf_lineage.lineage.pretraining import count_parameters
from hf_lineage.lineage.settings import LineageArguments

QUICK = ["--tasks", "order", "--variants", "--task-train", "32", "--task-validation", "16", "--finetune-epochs", "1",
         "--curve-sizes", "--workers", "0", "--blimp-pairs", "0"]  # no zero-shot stage: test_lineage_zero_shot.py's


def tiny_folder(path, family="bert", **sizes):
    """A stand-in pretrained folder: a freshly initialised lineage model of the shipped tokenizer's vocabulary,
    saved with that tokenizer and no pretraining.json (as a converted published model would be)."""
    from transformers import AutoConfig, AutoModelForPreTraining

    from hf_lineage import registry

    registry.register_all()
    shipped = checkpoints.path(family)
    config = AutoConfig.from_pretrained(shipped)
    for key, value in sizes.items():
        setattr(config, key, value)
    model = AutoModelForPreTraining.from_config(config)
    model.save_pretrained(path)
    for name in shipped.iterdir():
        if name.name.startswith("token") or name.name == "vocab.txt":
            shutil.copy(name, path / name.name)
    return model


@pytest.fixture(scope="module")
def small_bert(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bert-other")
    model = tiny_folder(folder, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    return folder, model


def test_a_family_given_its_own_folder_names_its_size_words_and_source(tmp_path, small_bert):
    folder, model = small_bert
    out = tmp_path / "report"
    assert cli_main(["lineage", "--output-dir", str(out), "--families", "gpt", "bert",
                     "--checkpoints", f"bert={folder}", *QUICK]) == 0
    results = json.loads((out / "results.json").read_text())
    bert, gpt = results["pretraining"]["bert"], results["pretraining"]["gpt"]
    assert bert["model"] == str(folder) and bert["source"] == str(folder) and not bert["shipped"]
    assert bert["size"] == "1 × 32" and bert["words_seen"] is None and bert["config"] is None
    assert bert["parameters"] == model.num_parameters() and bert["buffers"] == 0
    # the family not named keeps its shipped checkpoint and record
    assert gpt["source"] == "shipped" and gpt["shipped"] and gpt["model"] == str(checkpoints.path("gpt"))
    assert gpt["words_seen"] == checkpoints.training_record("gpt")["words_seen"] and gpt["size"] == "2 × 64"
    # the budget line claims the shipped budget for GPT only
    budget = results["budget"]
    assert budget["kind"] == "mixed checkpoints"
    assert "checkpoints shipped with hf_lineage (gpt)" in budget["description"]
    assert f"bert from {folder} (its pretraining not recorded)" in budget["description"]
    assert all(cell["status"] == "ok" for cell in results["finetuning"])
    # every BERT cell of the learning-rate sweep was fine-tuned from the folder given, keyed by its path and weights
    stages = sorted((out / "stages").glob("order-bert-finetuned*/stage.json"))
    assert len(stages) == 3
    for stage in stages:
        spec = json.loads(stage.read_text())["spec"]
        assert spec["pretrained"] == str(folder) and spec["weights"] == bert["weights_sha256"]
    table = (out / "report.md").read_text().split("## Pretraining")[1].split("\n## ")[0]
    header, *rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()
                     if line.startswith("| ") and "---" not in line]
    rows = {row[0]: dict(zip(header, row)) for row in rows}
    assert rows["BERT"]["words seen"] == "not recorded" and rows["BERT"]["source"] == str(folder)
    assert rows["BERT"]["size"] == "1 × 32" and rows["BERT"]["parameters"] == f"{model.num_parameters():,}"
    assert rows["GPT"]["source"] == "shipped" and rows["GPT"]["words seen"] == f"{gpt['words_seen']:,}"


def test_a_folder_s_record_gives_its_words_and_what_it_was_converted_from(tmp_path, small_bert):
    folder = tmp_path / "converted"
    shutil.copytree(small_bert[0], folder)
    (folder / "pretraining.json").write_text(json.dumps({"words_seen": 3_300_000_000, "parameters": 1,
                                                         "converted_from": "bert-base-uncased"}))
    args = LineageArguments(families=["bert"], checkpoints=[f"bert={folder}"])
    record = experiment.shipped_record("bert", 0, args)
    assert record["source"] == "converted from bert-base-uncased" and record["words_seen"] == 3_300_000_000
    assert record["parameters"] == small_bert[1].num_parameters()  # counted from the weights, not the stale record
    corpus = experiment.shipped_corpus(["bert"], args)
    assert "3,300,000,000 words of pretraining recorded" in corpus["budget"]["description"]
    assert "shipped" not in corpus["budget"]["description"]


@pytest.mark.parametrize("bad, message", [
    (["--checkpoints", "lstm=somewhere"], "unknown family 'lstm'"),
    (["--checkpoints", "bert=a", "bert=b"], "bert given twice"),
    (["--checkpoints", "elmo=somewhere"], "elmo, not in --families"),
    (["--checkpoints", "bert={empty}"], "no config.json in"),
    (["--checkpoints", "bert={gpt}"], "model_type is 'lineage-gpt', not bert's"),
    (["--checkpoints", "bert=./no/such/folder"], "no such folder"),
    (["--checkpoints", "bert=nobody-here/no-such-model"], "'nobody-here/no-such-model' is not a local folder"),
    (["--checkpoints", "dir1", "dir2"], "one DIR at most"),
    (["--checkpoints", "bert={gpt}", "--budget-words", "100"], "--budget-words only pretraining reads"),
])
def test_bad_checkpoint_folders_exit_2_and_write_nothing(tmp_path, capsys, monkeypatch, bad, message):
    import huggingface_hub.constants

    def no_network(*args, **kwargs):
        raise OSError("tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    (tmp_path / "empty").mkdir()
    bad = [b.format(empty=tmp_path / "empty", gpt=checkpoints.path("gpt")) for b in bad]
    out = tmp_path / "report"
    assert cli_main(["lineage", "--output-dir", str(out), "--families", "gpt", "bert", *bad]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("family, buffers", [("word2vec", lambda config: config.vocab_size),
                                             ("elmo", lambda config: config.vocab_size * 50)])
def test_parameters_are_counted_apart_from_buffers(tmp_path, family, buffers):
    model = tiny_folder(tmp_path, family, vocab_size=8000)
    counts = count_parameters(tmp_path)
    saved = {name for name in model.state_dict()}
    assert counts["parameters"] == model.num_parameters() == sum(p.numel() for p in model.parameters())
    assert counts["buffers"] == sum(b.numel() for name, b in model.named_buffers() if name in saved) > 0
    assert counts["buffers"] == buffers(model.config)


@pytest.mark.parametrize("family", checkpoints.FAMILIES)
def test_the_shipped_records_and_cards_count_parameters_apart_from_buffers(family):
    folder = checkpoints.path(family)
    counts = count_parameters(folder)
    record = checkpoints.training_record(family)
    assert (record["parameters"], record["buffers"]) == (counts["parameters"], counts["buffers"])
    assert f"{counts['parameters']:,} parameters and {counts['buffers']:,} buffer elements" in (
        folder / "README.md").read_text()
