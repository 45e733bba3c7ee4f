"""Sharing models on the Hub (issue 43): ``push_to_hub`` uploads hf_lineage's card with the Hub's metadata, for the
model and its tokenizer; ``hf-lineage pretrain --push-to-hub`` and ``hf-lineage checkpoints push`` push whole
folders; a saved QA folder answers through ``pipeline("question-answering")`` after ``import hf_lineage`` without
``trust_remote_code``. The Hub is faked at ``HfApi`` (the only offline way): what would be uploaded is captured."""

import io
import json
from pathlib import Path

import huggingface_hub
import pytest
import torch
from conftest import run_without_hf_lineage
from huggingface_hub import ModelCard
from huggingface_hub.errors import EntryNotFoundError
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForQuestionAnswering, AutoTokenizer, pipeline

import hf_lineage
from hf_lineage.cli import main as cli_main
from hf_lineage.tokenization import train_bpe_tokenizer, train_wordpiece_tokenizer

TEXTS = ["the cat sat on the mat .", "where is the eagle ?", "the eagle is a coffee shop near the river ."] * 4


class FakeHub:
    """``HfApi`` as far as pushing goes: repositories as {path: bytes}, every commit recorded, and ``ModelCard.load``
    reading a repository's README as the real one reads it from the Hub."""

    def __init__(self):
        self.repos: dict[str, dict[str, bytes]] = {}
        self.commits: list[tuple[str, dict[str, bytes]]] = []

    def create_repo(self, api, repo_id, **kwargs):
        self.repos.setdefault(repo_id, {})
        return huggingface_hub.RepoUrl(f"https://huggingface.co/{repo_id}")

    def create_commit(self, api, repo_id, operations, **kwargs):
        files = {}
        for operation in operations:
            source = operation.path_or_fileobj
            files[operation.path_in_repo] = (Path(source).read_bytes() if isinstance(source, (str, Path))
                                             else source if isinstance(source, bytes) else source.read())
        self.repos.setdefault(repo_id, {}).update(files)
        self.commits.append((repo_id, files))
        return huggingface_hub.CommitInfo(commit_url=f"https://huggingface.co/{repo_id}/commit/1",
                                          commit_message=kwargs.get("commit_message") or "", commit_description="",
                                          oid="1" * 40)

    def upload_folder(self, api, *, repo_id, folder_path, allow_patterns=None, ignore_patterns=None, **kwargs):
        """huggingface_hub's own pattern filter picks the files (its upload pipeline, from 2.x, skips create_commit)."""
        from huggingface_hub.utils import filter_repo_objects

        root = Path(folder_path)
        names = [p.relative_to(root).as_posix() for p in sorted(root.rglob("*")) if p.is_file()]
        names = list(filter_repo_objects(names, allow_patterns=allow_patterns, ignore_patterns=ignore_patterns))
        if "README.md" in names:
            ModelCard((root / "README.md").read_text(encoding="utf-8"))  # the metadata parses, as the Hub checks
        operations = [huggingface_hub.CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(root / name))
                      for name in names]
        return self.create_commit(api, repo_id, operations, **kwargs)

    def load_card(self, repo_id_or_path, **kwargs):
        if Path(repo_id_or_path).is_file():
            return ModelCard(Path(repo_id_or_path).read_text(encoding="utf-8"))
        readme = self.repos.get(repo_id_or_path, {}).get("README.md")
        if readme is None:
            raise EntryNotFoundError(f"{repo_id_or_path} has no README.md")
        return ModelCard(readme.decode())


@pytest.fixture
def hub(monkeypatch):
    fake = FakeHub()
    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", lambda api, repo_id, **kw: fake.create_repo(api, repo_id, **kw))
    monkeypatch.setattr(huggingface_hub.HfApi, "create_commit", lambda api, repo_id, operations, **kw:
                        fake.create_commit(api, repo_id, operations, **kw))
    monkeypatch.setattr(huggingface_hub.HfApi, "create_branch", lambda api, *a, **kw: None)
    monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", lambda api, **kw: fake.upload_folder(api, **kw))
    monkeypatch.setattr(huggingface_hub.ModelCard, "load", classmethod(lambda cls, repo, **kw: fake.load_card(repo)))
    monkeypatch.setenv("HF_TOKEN", "hf_fake_token_for_tests")
    return fake


def _tiny_bert(auto_class=AutoModelForMaskedLM, **overrides):
    tokenizer = train_wordpiece_tokenizer(iterator=TEXTS, vocab_size=120, min_frequency=1, model_max_length=64)
    config_class, _ = hf_lineage.registry.family_classes("bert")
    torch.manual_seed(0)
    config = config_class.from_named("tiny", vocab_size=len(tokenizer), max_position_embeddings=64, **overrides)
    return auto_class.from_config(config), tokenizer


def _card(files: dict) -> ModelCard:
    return ModelCard(files["README.md"].decode())


def test_model_and_tokenizer_push_upload_our_card_with_its_metadata(hub):
    model, tokenizer = _tiny_bert()
    model.push_to_hub("someone/tiny-lineage-bert", tags=["mine"])
    repo, files = hub.commits[-1]
    assert repo == "someone/tiny-lineage-bert" and {"config.json", "model.safetensors", "card_lineage_utils.py",
                                                      "modeling_lineage_utils.py"} <= set(files)
    card = _card(files)
    assert "# LineageBertForMaskedLM" in card.text and "Devlin et al. (2018)" in card.text
    data = card.data.to_dict()
    assert data["license"] == "apache-2.0" and data["library_name"] == "transformers"
    assert data["pipeline_tag"] == "fill-mask"
    assert data["tags"][:2] == ["hf-lineage", "lineage-bert"] and "mine" in data["tags"]  # the user's tags too
    assert "base_model" not in data  # trained from scratch
    # The tokenizer pushed next: transformers keeps the repo's card, ours.
    tokenizer.push_to_hub("someone/tiny-lineage-bert")
    assert {"tokenizer.json", "README.md"} <= set(hub.commits[-1][1])
    assert _card(hub.commits[-1][1]).text == card.text
    # The other order: the tokenizer alone writes transformers' generic card; the model's push replaces it.
    tokenizer.push_to_hub("someone/other")
    assert "hf-lineage" not in (_card(hub.repos["someone/other"]).data.tags or [])
    model.push_to_hub("someone/other")
    assert _card(hub.repos["someone/other"]).data.to_dict()["tags"][:2] == ["hf-lineage", "lineage-bert"]


@pytest.mark.parametrize("class_name, model_type, tag", [
    ("LineageBertForQuestionAnswering", "lineage-bert", "question-answering"),
    ("LineageGPTForTokenClassification", "lineage-gpt", "token-classification"),
    ("LineageElmoForSequenceClassification", "lineage-elmo", "text-classification"),
    ("LineageGPTForCausalLM", "lineage-gpt", "text-generation"),
    ("LineageBertForPreTraining", "lineage-bert", "fill-mask"),
    ("LineageWord2VecForPreTraining", "lineage-word2vec", "feature-extraction"),
    ("LineageBertModel", "lineage-bert", "feature-extraction"),
    ("AutoModelForQuestionAnswering", "lineage-nnlm", "question-answering"),
])
def test_pipeline_tag_follows_the_class(class_name, model_type, tag):
    from hf_lineage.models.card_lineage_utils import pipeline_tag

    assert pipeline_tag(class_name, model_type) == tag


def test_a_fine_tuned_model_names_its_hub_base_model_and_never_a_local_path(hub, tmp_path):
    from hf_lineage.models.card_lineage_utils import hub_dataset_ids

    model, _ = _tiny_bert(AutoModelForQuestionAnswering)
    model.config._name_or_path = "someone/lineage-bert-base"  # as from_pretrained("someone/lineage-bert-base") sets it
    model.push_to_hub("someone/qa")
    data = _card(hub.repos["someone/qa"]).data.to_dict()
    assert data["base_model"] == "someone/lineage-bert-base" and data["pipeline_tag"] == "question-answering"
    model.config._name_or_path = str(tmp_path)  # a local folder is no base model on the Hub
    model.push_to_hub("someone/qa2")
    card = hub.repos["someone/qa2"]["README.md"].decode()
    assert "base_model" not in _card(hub.repos["someone/qa2"]).data.to_dict() and str(tmp_path) not in card
    (tmp_path / "wiki.train.tokens").write_text("text")
    assert hub_dataset_ids([str(tmp_path / "wiki.train.tokens"), str(tmp_path), "en=" + str(tmp_path / "x.txt"),
                            "Salesforce/wikitext", "glue"]) == ["Salesforce/wikitext", "glue"]


def test_a_recipe_card_has_hub_datasets_its_base_language_and_its_metrics_as_model_index(tmp_path):
    from types import SimpleNamespace

    from hf_lineage.tasks.training import model_card

    base = tmp_path / "base"  # a local base model whose card says its language
    base.mkdir()
    (base / "README.md").write_text("---\nlanguage:\n- en\ntags:\n- hf-lineage\n---\n\n# base\n")
    args = SimpleNamespace(output_dir=str(tmp_path / "sst2-bert"), learning_rate=1e-3, num_train_epochs=1,
                           max_steps=-1, per_device_train_batch_size=8, seed=0)
    info = {"base_model": str(base), "model_type": "lineage-bert", "task": "classification",
            "auto_class": "AutoModelForSequenceClassification", "dataset_name": "nyu-mll/glue",
            "dataset_config_name": "sst2", "data": {"validation": {"source": "nyu-mll/glue/sst2 validation",
                                                                   "examples": 872}}}
    results = {"eval_accuracy": 0.8125, "eval_loss": 0.41, "eval_runtime": 1.5, "train_loss": 0.3}
    card = ModelCard(model_card(info, results, args))
    data = card.data.to_dict()
    assert data["datasets"] == ["nyu-mll/glue"] and data["language"] == ["en"] and data["license"] == "apache-2.0"
    assert data["pipeline_tag"] == "text-classification" and "base_model" not in data  # a local base: no Hub id
    assert data["tags"] == ["hf-lineage", "lineage-bert", "classification"]
    [result] = card.data.eval_results  # model-index, read back by huggingface_hub
    assert (result.task_type, result.dataset_type, result.dataset_config, result.metric_type,
            result.metric_value) == ("text-classification", "nyu-mll/glue", "sst2", "accuracy", 0.8125)
    assert card.data.model_name == "sst2-bert"
    # A dataset given as a local folder (datasets.load_dataset reads those) is never written as a Hub dataset.
    local = dict(info, dataset_name=str(tmp_path), dataset_config_name=None,
                 data={"validation": {"source": str(tmp_path / "dev.json"), "examples": 3}})
    card = ModelCard(model_card(local, results, args))
    assert "datasets" not in card.data.to_dict() and str(tmp_path) not in card.content.split("---")[1]
    assert card.data.eval_results[0].dataset_name == "dev.json"


SAMPLES = Path(hf_lineage.__file__).parent / "samples" / "lineage"


@pytest.fixture
def wikitext(tmp_path):
    """A few lines of WikiText-2 under its own file name, which the card maps to the Hub's dataset."""
    path = tmp_path / "data" / "wiki.train.tokens"
    path.parent.mkdir()
    path.write_text((SAMPLES / "corpus.train.txt").read_text(encoding="utf-8")[:20_000], encoding="utf-8")
    return str(path)


def _no_token(monkeypatch, tmp_path):
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))


def test_pretrain_push_to_hub_pushes_the_final_folder_with_its_card(hub, wikitext, tmp_path, capsys):
    out = tmp_path / "run"
    assert cli_main(["pretrain", "gpt", "--config", "tiny", "--train-file", wikitext, "--output-dir", str(out),
                     "--vocab-size", "300", "--max-steps", "2", "--per-device-batch-size", "2", "--max-seq-length",
                     "32", "--checkpoint-every", "1", "--report-to", "none", "--set", "num_hidden_layers=1",
                     "--push-to-hub", "--hub-model-id", "someone/tiny-gpt"]) == 0
    assert "pushed" in capsys.readouterr().out
    [(repo, files)] = hub.commits
    assert repo == "someone/tiny-gpt"
    assert {"config.json", "model.safetensors", "tokenizer.json", "generation_config.json", "train_results.json",
            "modeling_lineage_gpt.py", "card_lineage_utils.py"} <= set(files)
    # Resumable checkpoints, logs and the run's arguments (with this machine's paths) stay home.
    assert (out / "checkpoints").is_dir() and (out / "run_args.json").is_file()
    assert not any(name.startswith(("checkpoints/", "logs/", "runs/")) or name == "run_args.json" for name in files)
    card = _card(files)
    assert card.content == (out / "README.md").read_text()
    data = card.data.to_dict()
    assert data["datasets"] == ["Salesforce/wikitext"] and data["language"] == ["en"]  # the file's Hub dataset
    assert data["pipeline_tag"] == "text-generation" and data["license"] == "apache-2.0"
    assert "## Pre-training" in card.text and "on wiki.train.tokens:" in card.text
    assert str(tmp_path) not in card.content  # the trainer's paths stay home
    # so do they in every other file pushed (the pretraining record, train_results.json, the configs)
    assert "pretraining.json" in files
    assert [name for name, data in files.items() if str(tmp_path).encode() in data] == []


@pytest.mark.parametrize("problem, extra, message", [
    ("no token", ["--push-to-hub"], "needs a Hugging Face token"),
    ("bad id", ["--push-to-hub", "--hub-model-id", "not a repo/id/at all"], "is not a Hub repository id"),
    ("id alone", ["--hub-model-id", "someone/x"], "add --push-to-hub"),
])
def test_pretrain_push_to_hub_refuses_before_training_and_writes_nothing(problem, extra, message, hub, wikitext,
                                                                         tmp_path, monkeypatch, capsys):
    if problem == "no token":
        _no_token(monkeypatch, tmp_path)
    out = tmp_path / "run"
    assert cli_main(["pretrain", "gpt", "--config", "tiny", "--train-file", wikitext, "--output-dir", str(out),
                     "--max-steps", "1", *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and not hub.repos and not hub.commits


def _write(files: dict, folder: Path) -> Path:
    """A pushed repository's files, as a download of it would be."""
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def test_checkpoints_push_sends_the_shipped_folder_with_its_card_and_the_code(hub, capsys, tmp_path):
    folder = hf_lineage.checkpoints.path("bert")
    assert cli_main(["checkpoints", "push", "bert", "someone/lineage-bert-tiny"]) == 0
    assert "pushed" in capsys.readouterr().out
    [(repo, files)] = hub.commits
    shipped = {p.name for p in folder.iterdir() if p.is_file()}
    assert repo == "someone/lineage-bert-tiny" and shipped < set(files)
    # The code is written at push time, from the package's models/, as push_to_hub writes it.
    models = Path(hf_lineage.models.__file__).parent
    code = set(files) - shipped
    assert {"modeling_lineage_bert.py", "configuration_lineage_bert.py", "modeling_lineage_utils.py"} <= code
    assert all(name.endswith(".py") and files[name] == (models / name).read_bytes() for name in code)
    for name in shipped - {"config.json"}:  # the weights, tokenizer, card and record as shipped
        assert files[name] == (folder / name).read_bytes(), name
    config, original = json.loads(files["config.json"]), json.loads((folder / "config.json").read_text())
    assert config.pop("auto_map")["AutoModelForMaskedLM"] == "modeling_lineage_bert.LineageBertForMaskedLM"
    # Nothing else of the config changed but the version of transformers that wrote it (the oldest supported differs).
    assert config.pop("transformers_version") and original.pop("transformers_version") and config == original
    assert list(folder.glob("*.py")) == []  # the shipped folder itself stays without code
    card = _card(files)
    assert "CC BY-SA 3.0" in card.text and "## hf-lineage shipped checkpoint" in card.text  # the data's licence
    data = card.data.to_dict()
    assert (data["license"], data["datasets"], data["language"], data["pipeline_tag"]) == (
        "apache-2.0", ["Salesforce/wikitext"], ["en"], "fill-mask")
    # What was pushed loads without hf_lineage and fills the mask as the shipped folder does here.
    text = "the game was [MASK] in 2010 ."
    tokenizer = AutoTokenizer.from_pretrained(folder)
    with torch.no_grad():
        expected = AutoModelForMaskedLM.from_pretrained(folder)(**tokenizer(text, return_tensors="pt")).logits
    out = run_without_hf_lineage(f"""
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer
folder = {str(_write(files, tmp_path / "pushed"))!r}
model, tokenizer = (auto.from_pretrained(folder, trust_remote_code=True) for auto in (AutoModelForMaskedLM, AutoTokenizer))
with torch.no_grad():
    print(model(**tokenizer({text!r}, return_tensors="pt")).logits[0, 4].topk(5).indices.tolist())
""", cwd=tmp_path)
    assert out.split("\n")[-2] == str(expected[0, 4].topk(5).indices.tolist())


def test_a_shipped_model_loaded_and_pushed_with_push_to_hub_loads_without_hf_lineage(hub, tmp_path):
    """ELMo: its own tokenizer class travels too (tokenizer_config.json's auto_map)."""
    folder = hf_lineage.checkpoints.path("elmo")
    model, tokenizer = AutoModelForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
    model.push_to_hub("someone/lineage-elmo")
    tokenizer.push_to_hub("someone/lineage-elmo")
    files = hub.repos["someone/lineage-elmo"]
    assert {"modeling_lineage_elmo.py", "tokenization_lineage_elmo.py"} <= set(files)
    assert "auto_map" in json.loads(files["config.json"]) and "auto_map" in json.loads(files["tokenizer_config.json"])
    text = "the game was released in"
    with torch.no_grad():
        expected = model.eval()(**tokenizer(text, return_tensors="pt")).logits[0, -1].topk(5).indices.tolist()
    out = run_without_hf_lineage(f"""
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
folder = {str(_write(files, tmp_path / "pushed"))!r}
model = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True).eval()
tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
assert type(tokenizer).__name__ == "LineageElmoTokenizerFast", type(tokenizer)
with torch.no_grad():
    print(model(**tokenizer({text!r}, return_tensors="pt")).logits[0, -1].topk(5).indices.tolist())
""", cwd=tmp_path)
    assert out.split("\n")[-2] == str(expected)


@pytest.mark.parametrize("family", hf_lineage.checkpoints.FAMILIES)
def test_every_shipped_card_carries_the_hub_metadata(family):
    from hf_lineage.shipping.build import shipped_card

    folder = hf_lineage.checkpoints.path(family)
    text = (folder / "README.md").read_text()
    assert shipped_card(folder, hf_lineage.checkpoints.training_record(family)) == text  # what a build writes
    data = ModelCard(text).data.to_dict()
    assert data["license"] == "apache-2.0" and data["datasets"] == ["Salesforce/wikitext"]
    assert data["tags"] == ["hf-lineage", f"lineage-{family}"] and data["pipeline_tag"]


@pytest.mark.parametrize("argv, message", [
    (["nope", "someone/x"], "no shipped checkpoint for 'nope'"),
    (["bert", "not a repo/id/at all"], "REPO_ID 'not a repo/id/at all' is not a Hub repository id"),
    (["bert", "someone/x"], "needs a Hugging Face token"),
])
def test_checkpoints_push_refuses_bad_input_and_pushes_nothing(argv, message, hub, monkeypatch, tmp_path, capsys):
    _no_token(monkeypatch, tmp_path)
    assert cli_main(["checkpoints", "push", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not hub.repos and not hub.commits


QUESTION, CONTEXT = "Where is the eagle ?", "the eagle is a coffee shop near the river ."


@pytest.fixture(scope="module")
def qa_folders(tmp_path_factory):
    """Saved lineage BERT and GPT QA models, as a user saves them (from_config, save_pretrained)."""
    folders = {}
    for family in ("bert", "gpt"):
        if family == "bert":
            tokenizer = train_wordpiece_tokenizer(iterator=TEXTS, vocab_size=120, min_frequency=1, model_max_length=64)
        else:
            tokenizer = train_bpe_tokenizer(iterator=TEXTS, vocab_size=300, min_frequency=1, model_max_length=64)
        config_class, _ = hf_lineage.registry.family_classes(family)
        torch.manual_seed(0)
        model = AutoModelForQuestionAnswering.from_config(
            config_class.from_named("tiny", vocab_size=len(tokenizer), max_position_embeddings=64))
        folder = tmp_path_factory.mktemp(f"qa-{family}")
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        folders[family] = str(folder)
    return folders


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_a_saved_qa_folder_answers_after_import_hf_lineage_without_trust_remote_code(family, qa_folders):
    folder = qa_folders[family]
    assert "question-answering" in json.loads(Path(folder, "config.json").read_text())["custom_pipelines"]
    qa = pipeline("question-answering", model=folder)  # no trust_remote_code: the registered pipeline serves it
    assert type(qa) is hf_lineage.models.pipeline_lineage_question_answering.LineageQuestionAnsweringPipeline
    answer = qa(question=QUESTION, context=CONTEXT)
    assert answer["answer"] and CONTEXT[answer["start"]:answer["end"]] == answer["answer"]
    # A model loaded from the folder goes through it too, and saving it names the pipeline again.
    model = AutoModelForQuestionAnswering.from_pretrained(folder)
    assert not getattr(model.config, "custom_pipelines", None)
    again = pipeline("question-answering", model=model, tokenizer=AutoTokenizer.from_pretrained(folder))
    assert again(question=QUESTION, context=CONTEXT) == answer
    # With trust_remote_code the folder's own copy of the pipeline gives the same answer.
    remote = pipeline("question-answering", model=folder, trust_remote_code=True)
    assert remote(question=QUESTION, context=CONTEXT) == answer



def test_every_family_config_drops_a_registered_pipeline_entry_on_loading():
    from hf_lineage.models.configuration_lineage_utils import RegisteredPipelinesMixin

    for family in hf_lineage.registry.FAMILIES:
        config_class, _ = hf_lineage.registry.family_classes(family)
        assert issubclass(config_class, RegisteredPipelinesMixin), family
        config = config_class.from_dict({"custom_pipelines": {
            "question-answering": {"impl": "pipeline_lineage_question_answering.LineageQuestionAnsweringPipeline",
                                   "pt": ["AutoModelForQuestionAnswering"]},
            "other-task": {"impl": "their_pipeline.TheirPipeline", "pt": []}}})
        assert config.custom_pipelines == {"other-task": {"impl": "their_pipeline.TheirPipeline", "pt": []}}


def test_checkpoints_push_when_the_hub_is_unreachable_says_so_in_one_line(hub, monkeypatch, capsys):
    def offline(api, repo_id, **kwargs):
        raise huggingface_hub.errors.OfflineModeIsEnabled("Cannot reach https://huggingface.co: offline mode is enabled.")

    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", offline)
    assert cli_main(["checkpoints", "push", "gpt", "someone/x"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pushing to someone/x failed (OfflineModeIsEnabled" in err
    assert not hub.commits
