"""The pretrained checkpoints shipped in ``hf_lineage/checkpoints`` and ``hf-lineage checkpoints build``."""

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer

import hf_lineage
from hf_lineage import checkpoints
from hf_lineage.cli import main as cli_main
from hf_lineage.lineage.settings import SAMPLES

CAUSAL = ("nnlm", "elmo", "gpt")  # shipped with generation defaults: their pretrained heads generate


def test_every_family_ships_a_checkpoint_within_the_size_limit():
    assert checkpoints.available() == list(checkpoints.FAMILIES) == ["svd", "nnlm", "word2vec", "elmo", "gpt", "bert"]
    size = sum(p.stat().st_size for f in checkpoints.FAMILIES for p in checkpoints.path(f).iterdir())
    assert size <= 30 * 2**20, f"{size / 2**20:.1f} MB shipped"
    with pytest.raises(ValueError, match="no shipped checkpoint for 'lstm'"):
        checkpoints.path("lstm")


@pytest.mark.parametrize("family", checkpoints.FAMILIES)
def test_a_shipped_checkpoint_loads_with_the_auto_classes_and_its_card_tells_how_it_was_trained(family):
    folder = checkpoints.path(family)
    config = AutoConfig.from_pretrained(folder)
    assert config.model_type == f"lineage-{family}"
    model = AutoModel.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    weights = load_file(folder / "model.safetensors")
    assert all(torch.isfinite(w.float()).all() for w in weights.values())
    ids = tokenizer("the game was released in 2010 .", return_tensors="pt")
    with torch.no_grad():
        outputs = model(**{k: v for k, v in ids.items() if k != "token_type_ids" or family == "bert"})
    assert torch.isfinite(next(v for v in outputs.values() if torch.is_tensor(v)).float()).all()
    if family in CAUSAL:
        assert (folder / "generation_config.json").is_file() and AutoModelForCausalLM.from_pretrained(folder)

    record = checkpoints.training_record(family)
    card = (folder / "README.md").read_text()
    assert "## hf-lineage shipped checkpoint" in card and "CC BY-SA" in card and "wiki.train.tokens" in card
    assert f"{record['words_seen']:,}" in card and f"seed {record['seed']}" in card
    assert record["reproduce"] in card and f"--budget-words {record['words_seen']}" in record["reproduce"]
    assert record["corpus"]["train_words"] > 2_000_000  # the whole WikiText-2 training text
    # The equal compute budget: 30 minutes of one core. svd counts the corpus once (no steps for a time budget to
    # set); word2vec's 1,193 passes in that budget diverged (NaN), so it ships 100 passes (its card says so).
    if family == "word2vec":
        assert record["budget"]["words"] == 100 * record["corpus"]["train_words"] and "diverged" in card
    elif family != "svd":
        assert record["budget"]["seconds"] >= 900
    if family in CAUSAL + ("bert",):
        perplexity = record["validation"]["perplexity"]
        assert 1 < perplexity < 1000 and f"perplexity {perplexity:.1f}" in card
        assert record["curve"][-1]["train_loss"] < record["curve"][0]["train_loss"]  # it learned


def test_build_writes_a_loadable_folder_and_a_word_budget_reproduces_it(tmp_path, capsys):
    corpus = str(SAMPLES / "corpus.validation.txt")  # 40k words: a small corpus for a seconds-long build
    args = ["checkpoints", "build", "--corpus", corpus, "--validation-corpus", corpus, "--families", "gpt", "svd",
            "--budget-words", "4000", "--work-dir", str(tmp_path / "work")]
    for name in ("a", "b"):
        assert cli_main([*args, "--output-dir", str(tmp_path / name)]) == 0
    assert "pretraining gpt, svd" in capsys.readouterr().out
    for family in ("gpt", "svd"):
        first, second = (load_file(tmp_path / n / family / "model.safetensors") for n in ("a", "b"))
        assert first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)
        record = json.loads((tmp_path / "a" / family / "pretraining.json").read_text())
        assert record["budget"]["kind"] == "words" and record["seed"] == 0
        assert AutoModel.from_pretrained(tmp_path / "a" / family)
    gpt = json.loads((tmp_path / "a" / "gpt" / "pretraining.json").read_text())
    assert abs(gpt["words_seen"] - 4000) <= gpt["words_seen"] / gpt["steps"]
    assert not (tmp_path / "a" / "gpt" / "train_results.json").exists()  # the engine's log stays in the work dir


def test_build_refuses_a_missing_corpus_and_writes_nothing(tmp_path, capsys):
    assert cli_main(["checkpoints", "build", "--corpus", "no/such.txt", "--output-dir", str(tmp_path / "out")]) == 2
    assert "no/such.txt: no such file" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_list_names_every_shipped_checkpoint(capsys):
    assert cli_main(["checkpoints", "list"]) == 0
    out = capsys.readouterr().out
    assert all(family in out for family in checkpoints.FAMILIES) and "words in" in out
    assert hf_lineage.checkpoints is checkpoints


def test_the_recorded_command_names_the_corpus_files_not_the_builders_folders():
    from hf_lineage.lineage.build_checkpoints import public_command

    argv = ["--corpus", "/home/me/data/wiki.train.tokens", "--families", "bert", "--threads", "1", "--work-dir",
            "/tmp/w", "--budget-seconds", "1800", "--output-dir", "/tmp/o"]
    assert public_command(argv) == ("hf-lineage checkpoints build --corpus wiki.train.tokens --families bert "
                                    "--threads 1 --budget-seconds 1800")


def test_diverged_weights_are_refused_and_nothing_is_shipped(tmp_path):
    from safetensors.torch import save_file

    from hf_lineage.lineage.build_checkpoints import ship

    model = tmp_path / "model"
    model.mkdir()
    save_file({"input_vectors.weight": torch.tensor([[1.0, float("nan")]])}, str(model / "model.safetensors"))
    with pytest.raises(ValueError, match="word2vec: pretraining diverged"):
        ship(model, tmp_path / "out" / "word2vec", {"family": "word2vec"})
    assert not (tmp_path / "out").exists()


def test_the_code_shipped_beside_each_checkpoint_is_the_packages_own():
    """Each folder carries the modeling code that loads it with trust_remote_code (for the Hub, without
    hf_lineage installed); a change to the package's code (e.g. the GPU path of the vocabulary loss) must reach
    those copies. To bring them in step: copy each file over from hf_lineage/models/."""
    models = Path(hf_lineage.__file__).parent / "models"
    stale = [f"{family}/{code.name}" for family in checkpoints.FAMILIES
             for code in sorted(checkpoints.path(family).glob("*.py"))
             if code.read_bytes() != (models / code.name).read_bytes()]
    assert not stale, f"out of step with hf_lineage/models: {stale}"
