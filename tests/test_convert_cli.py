"""``hf-lineage convert``'s command line and ``hf-lineage lineage --checkpoints FAMILY=SOURCE|published``: releases
converted once into the run's folder, the standard set end to end on stand-ins in the published formats (offline),
large checkpoints frozen only on a CPU, and cells at their task's majority baseline left out of the verdicts."""

import json
import socket

import pytest

from hf_lineage.cli import main as cli_main
from hf_lineage.convert.releases import published_releases
from hf_lineage.lineage import experiment
from hf_lineage.lineage.scoring import score_predictions
from hf_lineage.lineage.settings import LineageArguments, checkpoint_items, frozen_only_families
from standins_elmo import save_elmo_standin


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No network at all, HF_HUB_OFFLINE, and empty download / Hub caches of this test's own."""
    import huggingface_hub.constants

    def no_network(*args, **kwargs):
        raise OSError("tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_LINEAGE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_help_lists_every_family_s_sources():
    with pytest.raises(SystemExit) as exit:
        cli_main(["convert", "--help"])
    assert exit.value.code == 0


@pytest.mark.parametrize("argv, message", [
    (["nnlm", "x"], "nnlm: no published release exists"),
    (["svd", "x"], "svd: no published release exists"),
    (["lstm", "x"], "unknown family 'lstm'"),
    (["word2vec", "{tmp}/no-such.bin"], "no-such.bin: no such file"),
    (["bert", "google-bert/bert-base-uncased", "--max-vocab", "10"], "--max-vocab applies to word vectors"),
    (["word2vec", "x", "--max-vocab", "0"], "--max-vocab must be a positive number"),
    (["elmo", "small", "--push-to-hub", "not a repo id!"], "--push-to-hub 'not a repo id!' is not a Hub repository"),
])
def test_what_cannot_be_converted_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, offline, argv, message):
    out = tmp_path / "deep" / "out"
    code = cli_main(["convert", *[a.format(tmp=tmp_path) for a in argv], "--output-dir", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("hf-lineage convert: error: ")
    assert not (tmp_path / "deep").exists()


def test_the_command_writes_a_folder_with_its_record_and_refuses_to_overwrite(tmp_path, capsys, offline):
    save_elmo_standin(offline, "small")
    out = tmp_path / "elmo"
    assert cli_main(["convert", "elmo", "small", "--output-dir", str(out)]) == 0
    record = json.loads((out / "pretraining.json").read_text())
    assert record["sources"] == ["small"] and record["command"].startswith("hf-lineage convert elmo small")
    card = (out / "README.md").read_text()
    assert record["words_seen"] and "license: apache-2.0" in card and "@inproceedings{peters" in card.lower()
    assert "trained from scratch" not in card and "Converted from the published release AllenNLP ELMo small" in card
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging folder left
    assert cli_main(["convert", "elmo", "small", "--output-dir", str(out)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err


def test_published_names_each_family_with_a_release_and_leaves_the_others():
    directory, replaced = checkpoint_items(["published", "gpt=somewhere"], ["nnlm", "elmo", "gpt", "bert"])
    assert directory is None and replaced == {"elmo": "published", "gpt": "somewhere", "bert": "published"}
    assert set(published_releases()) == {"word2vec", "glove", "elmo", "gpt", "bert"}


def test_large_checkpoints_run_frozen_only_on_a_cpu_unless_variants_is_given():
    counts = {"bert": 110_000_000, "gpt": 1_000_000}
    assert frozen_only_families(LineageArguments(variants_given=False), ["gpt", "bert"], counts) == ["bert"]
    assert frozen_only_families(LineageArguments(variants_given=True), ["gpt", "bert"], counts) == []
    cells = experiment.plan_cells(["labeling"], ["gpt", "bert"], ["frozen", "finetuned"], 100, [10], ["labeling"],
                                  frozen_only=["bert"])
    assert [c for c in cells if c[1] == "bert"] == [("labeling", "bert", "frozen", 100)]
    assert ("labeling", "gpt", "scratch", 10) in cells and ("labeling", "gpt", "finetuned", 100) in cells


def test_the_start_up_estimate_grows_with_a_large_checkpoint_s_forward_passes():
    from hf_lineage.lineage.settings import SCALES

    scale, families = SCALES["tiny"], ["nnlm", "gpt", "bert"]
    cells = experiment.plan_cells(["labeling"], families, ["frozen", "finetuned"], 1000, [100], ["labeling"])
    small_low, small_high = experiment.estimate_minutes(cells, 1, dict.fromkeys(families, 700_000), scale, 1000)
    assert 0 < small_low < small_high < 30  # the shipped checkpoints: minutes, as the default run measures
    cells = experiment.plan_cells(["labeling"], families, ["frozen", "finetuned"], 1000, [100], ["labeling"],
                                  frozen_only=["bert"])
    counts = {"nnlm": 700_000, "gpt": 700_000, "bert": 110_000_000}
    low, high = experiment.estimate_minutes(cells, 1, counts, scale, 1000, memo=False)
    assert low > small_low + 10 and high > 60  # BERT-base's frozen forward passes over 1,200 examples an epoch
    # With the frozen layers' memo each of the 2,200 sentences (training, dev, validation) runs through BERT once.
    memo_low, memo_high = experiment.estimate_minutes(cells, 1, counts, scale, 1000)
    assert 2_200 * 30 * 4.5e-3 / 60 < memo_low < memo_high < low  # 5 minutes of BERT-base forward passes, and more


def test_a_cell_within_noise_of_the_majority_class_is_flagged_and_one_above_it_is_not():
    gold = ["a"] * 60 + ["b"] * 40
    majority = score_predictions("order", [["a"] * 100], gold)
    near = score_predictions("order", [["a"] * 58 + ["b"] * 2 + ["b"] * 5 + ["a"] * 35], gold)  # 0.63 vs 0.60
    good = score_predictions("order", [["a"] * 55 + ["b"] * 5 + ["b"] * 35 + ["a"] * 5], gold)  # 0.90
    cells = [{"task": "order", "family": f, "variant": "frozen", "train_size": 10, "status": "ok", "flags": []}
             for f in ("gpt", "bert")]
    scored = {("order", "gpt", "frozen", 10): near, ("order", "bert", "frozen", 10): good}
    experiment.flag_at_majority(cells, scored, {"order": [({"name": "majority class"}, majority)]}, seed=0)
    assert cells[0]["flags"] == ["at majority"] and cells[0]["trained"] is False
    assert cells[1]["flags"] == []


QUICK = ["--tasks", "order", "--variants", "--task-train", "32", "--task-validation", "16", "--finetune-epochs", "1",
         "--curve-sizes", "--workers", "0", "--blimp-pairs", "0"]  # no zero-shot stage: test_lineage_zero_shot.py's


def test_the_lineage_runs_on_the_published_set_offline_and_converts_each_release_once(tmp_path, monkeypatch,
                                                                                       offline, capsys):
    """``--checkpoints published`` end to end on stand-ins in each release's own format, where its real id or URL
    resolves (tiny transformers models in the Hub cache under google-bert/bert-base-uncased and
    openai-community/openai-gpt, gensim vectors under fse/word2vec-google-news-300, a GloVe zip under
    stanfordnlp/glove, AllenNLP files in the download cache under their URLs)."""
    from standins_transformers import save_bert_standin, save_gpt_standin, use_hub_cache
    from standins_vectors import save_glove_standin, save_word2vec_standin

    hub = tmp_path / "hub"
    use_hub_cache(monkeypatch, hub)
    for save in (save_bert_standin, save_gpt_standin, save_word2vec_standin, save_glove_standin):
        save(hub)
    save_elmo_standin(offline, "original")  # the standard set's ELMo: the paper's size
    out = tmp_path / "report"
    argv = ["lineage", "--output-dir", str(out), "--families", "word2vec", "glove", "elmo", "gpt", "bert",
            "--checkpoints", "published", *QUICK]
    assert cli_main(argv) == 0
    printed = capsys.readouterr().out
    assert printed.count("converting ") == 5 and "plan: 5 families" in printed
    results = json.loads((out / "results.json").read_text())
    for family, release in published_releases().items():
        stage = results["pretraining"][family]
        record = json.loads((out / "converted" / family / "pretraining.json").read_text())
        assert stage["model"] == str(out / "converted" / family) and record["sources"] == list(release.sources)
        assert stage["source"] == f"converted from {record['converted_from']}" and stage["words_seen"] > 0
    assert results["budget"]["kind"] == "mixed checkpoints"
    assert all(cell["status"] == "ok" for cell in results["finetuning"])
    report = (out / "report.md").read_text()
    assert "**Unequal budgets.**" in report and "words seen as stated by" in report
    assert "on the corpora of their own (each checkpoint's: see the pretraining table)" in report
    assert "not recorded" not in report.split("\n## ")[0]  # the opening names what is known, not a blank
    # a rerun reuses the converted folders (and the finished cells)
    assert cli_main(argv) == 0
    assert "converting " not in capsys.readouterr().out


def test_a_converted_release_is_reused_and_converted_again_on_rerun(tmp_path, offline, monkeypatch):
    from hf_lineage.lineage import settings

    save_elmo_standin(offline, "small")
    monkeypatch.setattr(settings, "_CONVERTED_IN_THIS_PROCESS", set())
    args = LineageArguments(families=["elmo"], checkpoints=["elmo=small"], output_dir=str(tmp_path / "report"))
    folder = settings.checkpoint_sources(args)["elmo"].folder
    assert folder == tmp_path / "report" / "converted" / "elmo"
    written = (folder / "model.safetensors").stat().st_mtime_ns
    settings.checkpoint_sources(args)
    assert (folder / "model.safetensors").stat().st_mtime_ns == written  # same sources: reused
    rerun = LineageArguments(families=["elmo"], checkpoints=["elmo=small"], output_dir=str(tmp_path / "report"),
                             rerun=True)
    settings._CONVERTED_IN_THIS_PROCESS.clear()  # a new process: what `hf-lineage lineage --rerun` starts
    settings.checkpoint_sources(rerun)
    again = (folder / "model.safetensors").stat().st_mtime_ns
    assert again != written
    settings.checkpoint_sources(rerun)  # once per process
    assert (folder / "model.safetensors").stat().st_mtime_ns == again
    other = LineageArguments(families=["elmo"], checkpoints=["elmo=medium"], output_dir=str(tmp_path / "report"))
    with pytest.raises(settings.LineageError, match="elmo_2x2048_256.*not in the download cache"):  # another source
        settings.checkpoint_sources(other)
    assert (folder / "pretraining.json").is_file()  # a failed conversion leaves the earlier folder as it was
