"""The ``hf-lineage`` command line: help of every subcommand, the families table, and the Hub push of a fine-tuned
model (the Hub client mocked: nothing here touches the network)."""

import json
import re
from pathlib import Path

import huggingface_hub
import pytest
from huggingface_hub import RepoUrl

from hf_lineage import LineageBertConfig, LineageBertForPreTraining, cli
from hf_lineage.registry import FAMILIES
from hf_lineage.tasks.command_line import is_hub_error

from conftest import CORPUS


@pytest.mark.parametrize("argv, shows", [
    (["--help"], "finetune"),
    (["finetune", "--help"], "hf-lineage finetune TASK --help"),
    (["finetune", "classification", "--help"], "--model_name_or_path"),  # the recipe's own options
    (["pretrain", "--help"], "--set NAME=VALUE"),
    (["lineage", "--help"], "--families"),
    (["analyze", "--help"], "polysemy"),
    (["analyze", "probes", "--help"], "--properties"),  # the analysis's own options
])
def test_every_help_exits_0(argv, shows, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 0
    assert shows in capsys.readouterr().out


def test_analyze_without_a_kind_names_the_kinds_and_exits_2(capsys):
    assert cli.main(["analyze"]) == 2
    assert "polysemy, attention, probes" in capsys.readouterr().err


def test_families_table_is_aligned_and_wrapped(capsys):
    table = cli.families_table(width=80)
    lines = table.splitlines()
    rows = [line for line in lines if not line.startswith(" ")]
    assert [row.split()[0] for row in rows] == ["family", *FAMILIES]
    # Every row's model_type and sizes start in the same column as the header's (lineage-word2vec is the widest).
    for column in ("model_type", "named sizes"):
        start = rows[0].index(column)
        assert all(row[start - 1] == " " and row[start] != " " for row in rows), column
    assert all(len(line) <= 80 for line in lines)
    assert "LineageWord2VecForCausalLM" in table and "lineage-word2vec" in rows[1 + list(FAMILIES).index("word2vec")]
    assert cli.main(["families"]) == 0 and "lineage-elmo" in capsys.readouterr().out


def test_the_families_table_says_what_each_record_says():
    """Under its classes, each family's line of record facts: its paper's size, head-free scoring, release,
    ``--init-from`` and LoRA targets, as its ``Family`` record says them."""
    from hf_lineage.registry import FAMILIES as RECORDS

    table = cli.families_table(width=400)
    blocks = {line.split()[0]: [] for line in table.splitlines()[1:] if not line.startswith(" ")}
    family = None
    for line in table.splitlines()[1:]:
        family = line.split()[0] if not line.startswith(" ") else family
        blocks[family].append(line.strip())
    for name, spec in RECORDS.items():
        facts = blocks[name][-1]
        assert facts.startswith(f"paper size {spec.paper_size}; scored head-free: "), (name, facts)
        assert ("not continuable" in facts) == bool(spec.not_continuable), (name, facts)
    assert "release: google-bert/bert-base-uncased" in blocks["bert"][-1]
    assert "--init-from: lineage or transformers' BertForPreTraining; LoRA: query, value" in blocks["bert"][-1]
    assert "scored head-free: masked" in blocks["bert"][-1] and "scored head-free: elmo" in blocks["elmo"][-1]
    assert "release: none; --init-from: lineage; lineage: default run" in blocks["nnlm"][-1]
    assert "scored head-free: causal (a folder of its vectors alone: no)" in blocks["word2vec"][-1]
    assert [name for name in RECORDS if "not continuable" in blocks[name][-1]] == ["svd", "word2vec", "glove"]


def test_the_families_table_reads_from_the_sources_what_the_classes_say():
    """``hf-lineage families`` reads each family's model type, size names and Auto classes from its files' sources,
    importing no class (torch): they must say what the classes do."""
    from hf_lineage.registry import _config_facts_in_source, family_classes, family_summary

    for family in FAMILIES:
        config_class, modeling = family_classes(family)
        assert _config_facts_in_source(family) == (config_class.model_type, list(config_class.named_sizes)), family
        classes = [*modeling.AUTO_CLASSES.values(), *getattr(modeling, "LINEAGE_AUTO_CLASSES", {}).values()]
        assert family_summary(family) == {"model_type": config_class.model_type,
                                          "named_sizes": list(config_class.named_sizes),
                                          "classes": list(dict.fromkeys(classes))}, family


@pytest.fixture
def base_and_data(tmp_path, wordpiece_tokenizer):
    base = tmp_path / "base"
    config = LineageBertConfig.from_named("tiny", vocab_size=len(wordpiece_tokenizer), max_position_embeddings=64)
    LineageBertForPreTraining(config).save_pretrained(base)
    wordpiece_tokenizer.save_pretrained(base)
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps({"sentence": s, "label": ["no", "yes"][i % 2]}) + "\n"
                             for i, s in enumerate(CORPUS[:16])))
    return str(base), str(train)


def finetune(base, train, out, *extra):
    return cli.main(["finetune", "classification", "--model_name_or_path", base, "--train_file", train,
                     "--do_train", "--output_dir", str(out), "--num_train_epochs", "1", "--report_to", "none",
                     "--save_strategy", "no", "--use_cpu", "true", "--disable_tqdm", "true", "--push_to_hub",
                     "--hub_model_id", "someone/tiny-bert-classifier", *extra])


def test_push_to_hub_uploads_model_tokenizer_code_and_card(base_and_data, tmp_path, monkeypatch):
    calls = {"create_repo": [], "upload_folder": []}

    def create_repo(self, repo_id, **kwargs):
        calls["create_repo"].append(repo_id)
        return RepoUrl(f"https://huggingface.co/{repo_id}")

    def upload_folder(self, *, repo_id, folder_path, ignore_patterns=None, **kwargs):
        # What the Hub would receive: the folder's files, less the patterns Trainer leaves out (checkpoints).
        files = {p.name: p.read_bytes() for p in sorted(Path(folder_path).iterdir())
                 if p.is_file() and not any(re.fullmatch(pattern.replace("*", ".*"), p.name)
                                            for pattern in ignore_patterns or [])}
        calls["upload_folder"].append((repo_id, files))
        return huggingface_hub.CommitInfo(commit_url=f"https://huggingface.co/{repo_id}/commit/1",
                                          commit_message="End of training", commit_description="", oid="1" * 40)

    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", create_repo)
    monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", upload_folder)
    base, train = base_and_data
    assert finetune(base, train, tmp_path / "out") == 0

    assert calls["create_repo"] == ["someone/tiny-bert-classifier"]
    # Trainer pushes when the model is saved and again at the end, after the card is written: the last has it all.
    assert calls["upload_folder"] and {repo for repo, _ in calls["upload_folder"]} == {"someone/tiny-bert-classifier"}
    files = calls["upload_folder"][-1][1]
    code = {"configuration_lineage_bert.py", "configuration_lineage_utils.py", "modeling_lineage_bert.py",
            "modeling_lineage_utils.py"}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "README.md"} | code <= set(files)
    config = json.loads(files["config.json"])
    assert config["auto_map"]["AutoModelForSequenceClassification"] == (
        "modeling_lineage_bert.LineageBertForSequenceClassification")
    assert set(config["id2label"].values()) == {"no", "yes"}
    card = files["README.md"].decode()
    assert "hf-lineage" in card and "## Results" in card  # hf_lineage's card, not Trainer's
    assert "a local checkpoint, `base`" in card and base not in card  # the base by name, not the trainer's path
    metadata = huggingface_hub.ModelCard(card).data.to_dict()  # the Hub's metadata, as the Hub parses it
    assert metadata["pipeline_tag"] == "text-classification" and metadata["license"] == "apache-2.0"
    assert "datasets" not in metadata and "base_model" not in metadata  # a local file and a local base: no Hub ids


def test_push_to_hub_without_the_hub_is_one_line_and_exit_2(base_and_data, tmp_path, monkeypatch, capsys):
    def offline(self, repo_id, **kwargs):
        raise huggingface_hub.errors.OfflineModeIsEnabled(
            "Cannot reach https://huggingface.co/api/repos/create: offline mode is enabled.")

    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", offline)
    base, train = base_and_data
    assert finetune(base, train, tmp_path / "out") == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]  # (progress bars aside)
    assert "Traceback" not in err and len(errors) == 1
    assert "the Hugging Face Hub could not be reached (OfflineModeIsEnabled: Cannot reach" in errors[0]
    assert not (tmp_path / "out" / "model.safetensors").exists()  # stopped before training


def test_hub_errors_are_recognised_through_their_cause():
    class ConnectError(Exception):  # stands for an HTTP client's error
        pass

    ConnectError.__module__ = "httpx"
    try:
        try:
            raise ConnectError("Name or service not known")
        except ConnectError as cause:
            raise RuntimeError("upload failed") from cause
    except RuntimeError as error:
        assert is_hub_error(error)
    assert not is_hub_error(RuntimeError("a bug"))
