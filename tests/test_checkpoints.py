"""The pretrained checkpoints shipped in ``hf_lineage/checkpoints`` and ``hf-lineage checkpoints build``."""

import json

import pytest
import torch
import transformers
from conftest import run_without_hf_lineage
from safetensors.torch import load_file
from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer

import hf_lineage
from hf_lineage import checkpoints
from hf_lineage.cli import main as cli_main
from hf_lineage.lineage.settings import SAMPLES
from hf_lineage.registry import family_classes

CAUSAL = ("nnlm", "elmo", "gpt")  # shipped with generation defaults: their pretrained heads generate


def test_every_family_ships_a_checkpoint_within_the_size_limit():
    assert checkpoints.available() == list(checkpoints.FAMILIES) == ["svd", "nnlm", "word2vec", "glove", "elmo", "gpt",
                                                                           "bert"]
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
    elif family not in ("svd", "glove"):  # one counting pass (glove: and its config's iterations over the counts)
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
        # The folder as shipped: no code, and no auto_map naming any (saving or pushing a loaded model writes both).
        built = tmp_path / "a" / family
        assert not list(built.glob("*.py")) and not (built / "__pycache__").exists()
        assert not any("auto_map" in json.loads((built / n).read_text()) for n in ("config.json", "tokenizer_config.json"))
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
    from hf_lineage.shipping.build import public_command

    argv = ["--corpus", "/home/me/data/wiki.train.tokens", "--families", "bert", "--threads", "1", "--work-dir",
            "/tmp/w", "--budget-seconds", "1800", "--output-dir", "/tmp/o"]
    assert public_command(argv) == ("hf-lineage checkpoints build --corpus wiki.train.tokens --families bert "
                                    "--threads 1 --budget-seconds 1800")


def test_diverged_weights_are_refused_and_nothing_is_shipped(tmp_path):
    from safetensors.torch import save_file

    from hf_lineage.shipping.build import ship

    model = tmp_path / "model"
    model.mkdir()
    save_file({"input_vectors.weight": torch.tensor([[1.0, float("nan")]])}, str(model / "model.safetensors"))
    with pytest.raises(ValueError, match="word2vec: pretraining diverged"):
        ship(model, tmp_path / "out" / "word2vec", {"family": "word2vec"})
    assert not (tmp_path / "out").exists()


def test_no_code_is_shipped_and_no_config_names_any():
    """The folders hold weights, config, tokenizer, card, generation config and the training record: the package is
    their code. An ``auto_map`` would name files that are not there."""
    for family in checkpoints.FAMILIES:
        folder = checkpoints.path(family)
        assert sorted(p.name for p in folder.iterdir() if p.suffix in (".py", ".pyc") or p.is_dir()) == []
        for name in ("config.json", "tokenizer_config.json"):
            assert "auto_map" not in json.loads((folder / name).read_text()), f"{family}/{name}"
        expected = {"README.md", "config.json", "model.safetensors", "pretraining.json", "tokenizer.json",
                    "tokenizer_config.json"} | ({"generation_config.json"} if family != "bert" else set())
        assert expected <= {p.name for p in folder.iterdir()}


@pytest.mark.parametrize("trust_remote_code", [False, True])
@pytest.mark.parametrize("family", checkpoints.FAMILIES)
def test_every_folder_loads_with_the_auto_classes_with_or_without_trust_remote_code(family, trust_remote_code):
    folder = checkpoints.path(family)
    config_class, modeling = family_classes(family)
    config = AutoConfig.from_pretrained(folder, trust_remote_code=trust_remote_code)
    assert type(config) is config_class  # the package's class, not a copy loaded from elsewhere
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=trust_remote_code)
    assert type(tokenizer).__module__.startswith(("hf_lineage.", "transformers."))
    for auto_name in ("AutoModel", "AutoModelForPreTraining", "AutoModelForCausalLM"):
        if auto_name in modeling.AUTO_CLASSES:
            model = getattr(transformers, auto_name).from_pretrained(folder, trust_remote_code=trust_remote_code)
            assert type(model) is getattr(modeling, modeling.AUTO_CLASSES[auto_name])


def test_a_loaded_shipped_model_saved_loads_with_trust_remote_code_without_hf_lineage(tmp_path):
    """Saving writes the code and the auto_map again: the saved folder needs nothing of hf_lineage (every family, its
    pre-training class and tokenizer, in one interpreter where ``import hf_lineage`` fails, where the base model
    gives the same hidden states as the shipped folder's here)."""
    text, expected = "the game was released in 2010 .", {}
    for family in checkpoints.FAMILIES:
        folder = checkpoints.path(family)
        config_class, modeling = family_classes(family)
        config = AutoConfig.from_pretrained(folder)
        tokenizer = AutoTokenizer.from_pretrained(folder)
        getattr(modeling, config.architectures[0]).from_pretrained(folder).save_pretrained(tmp_path / family)
        tokenizer.save_pretrained(tmp_path / family)
        saved = json.loads((tmp_path / family / "config.json").read_text())
        assert saved["auto_map"]["AutoConfig"] == f"{config_class.__module__.rsplit('.', 1)[1]}.{config_class.__name__}"
        assert (tmp_path / family / f"{modeling.__name__.rsplit('.', 1)[1]}.py").is_file()
        with torch.no_grad():
            hidden = AutoModel.from_pretrained(folder).eval()(**tokenizer(text, return_tensors="pt"))[0]
        expected[family] = hidden.flatten()[:16].tolist()
    out = run_without_hf_lineage(f"""
import json, torch
import transformers
from transformers import AutoConfig, AutoModel, AutoTokenizer
for family in {list(checkpoints.FAMILIES)!r}:
    folder = {str(tmp_path)!r} + "/" + family
    config = AutoConfig.from_pretrained(folder, trust_remote_code=True)
    auto_name = next(auto for auto, ref in config.auto_map.items() if ref.endswith("." + config.architectures[0]))
    pretrained = getattr(transformers, auto_name).from_pretrained(folder, trust_remote_code=True)
    assert type(pretrained).__name__ == config.architectures[0]
    model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
    assert not type(model).__module__.startswith("hf_lineage")
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    with torch.no_grad():
        hidden = model(**tokenizer({text!r}, return_tensors="pt"))[0]
    print(family, json.dumps(hidden.flatten()[:16].tolist()))
""", cwd=tmp_path)
    got = {line.split(" ", 1)[0]: json.loads(line.split(" ", 1)[1]) for line in out.strip().splitlines()}
    assert got.keys() == expected.keys()
    for family in expected:
        assert got[family] == pytest.approx(expected[family], abs=1e-5), family


def test_export_writes_a_folder_that_scores_sentences_as_ours_without_hf_lineage(tmp_path, capsys):
    """``hf-lineage checkpoints export gpt OUT``: the shipped weights, tokenizer and card with the code and auto_map,
    for tools that never import hf_lineage (lm_eval's command loads it with ``trust_remote_code``, prefixing the
    sentence with the tokenizer's bos, else eos). Loaded so in a process where hf_lineage cannot be imported, the
    summed log-probability of a sentence equals the minimal-pairs scorer's on the shipped folder; a second export
    into the now-filled folder is refused and changes nothing."""
    from hf_lineage.minimal_pairs.model_specs import resolve_model
    from hf_lineage.minimal_pairs.scorers import load_scorer

    out = tmp_path / "lineage-gpt"
    assert cli_main(["checkpoints", "export", "gpt", str(out)]) == 0
    shipped = checkpoints.path("gpt")
    assert (out / "model.safetensors").read_bytes() == (shipped / "model.safetensors").read_bytes()
    assert "AutoModelForCausalLM" in json.loads((out / "config.json").read_text())["auto_map"]
    assert [p.name for p in tmp_path.iterdir()] == ["lineage-gpt"]  # no staging folder left beside it
    sentences = ["the game was released in 2010 .", "the game were released in 2010 ."]
    spec = resolve_model(f"gpt={shipped}")
    ours = load_scorer(spec).score(sentences).variants["sum"]
    texts = [load_scorer(spec).prepared(s) for s in sentences]
    got = run_without_hf_lineage(f"""
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
model = AutoModelForCausalLM.from_pretrained({str(out)!r}, trust_remote_code=True).eval()
tokenizer = AutoTokenizer.from_pretrained({str(out)!r}, trust_remote_code=True)
prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
for text in {texts!r}:
    ids = torch.tensor([[prefix] + tokenizer(text, add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        logits = model(ids).logits[0, :-1].log_softmax(-1)
    print(logits.gather(-1, ids[0, 1:, None]).sum().item())
""", cwd=tmp_path)
    assert [float(line) for line in got.split()] == pytest.approx(list(ours), abs=1e-3)
    capsys.readouterr()
    before = sorted(p.name for p in out.iterdir())
    assert cli_main(["checkpoints", "export", "gpt", str(out)]) == 2
    assert "already exists and is not an empty folder" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == before
