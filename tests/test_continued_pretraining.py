"""Continued pre-training (``hf-lineage pretrain FAMILY --init-from FOLDER|HUB_ID``), as transformers' run_mlm.py
``--model_name_or_path``: the base's weights, tokenizer and config are kept, the family's objective goes on, from a
lineage folder or from transformers' own BERT / OpenAI GPT converted on load; bad bases are refused early."""

import json
import math

import pytest
import torch
from safetensors.torch import load_file

from hf_lineage.pretraining.cli import main

from conftest import REPO

SAMPLES = REPO / "hf_lineage" / "samples" / "lineage"
# Three WikiText articles to train on and parts of two to validate on (BERT's next-sentence pairs need documents).
CORPUS = (SAMPLES / "corpus.train.txt").read_text(encoding="utf-8")[57_000:72_000]
VALIDATION = (SAMPLES / "corpus.validation.txt").read_text(encoding="utf-8")[20_000:26_000]
COMMON = ["--report-to", "none", "--log-every", "1", "--per-device-batch-size", "4", "--max-seq-length", "32"]
# Each family small, and its base trained hard enough (a high rate) that its loss is far below a fresh model's.
BASES = {
    "gpt": ["--set", "hidden_size=32", "--set", "num_hidden_layers=1", "--set", "intermediate_size=64",
            "--set", "max_position_embeddings=32", "--vocab-size", "400", "--learning-rate", "3e-3"],
    "bert": ["--set", "hidden_size=32", "--set", "num_hidden_layers=1", "--set", "intermediate_size=64",
             "--set", "max_position_embeddings=32", "--vocab-size", "400", "--learning-rate", "3e-3"],
    "elmo": ["--vocab-size", "400", "--learning-rate", "0.2"],
    "nnlm": ["--vocab-size", "400", "--learning-rate", "3e-2"],
}
LOSS = {"gpt": "loss", "bert": "mlm_loss", "elmo": "loss", "nnlm": "loss"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("continued")
    train, valid = root / "train.txt", root / "valid.txt"
    train.write_text(CORPUS, encoding="utf-8")
    valid.write_text(VALIDATION, encoding="utf-8")
    return {"root": root, "train": str(train), "valid": str(valid)}


def data(corpus, validation=True):
    return ["--train-file", corpus["train"], *(["--validation-file", corpus["valid"]] if validation else [])]


@pytest.fixture(scope="module")
def bases(corpus):
    """One base per family, pre-trained from scratch here for 30 steps: {family: folder}. Lazily, per family."""
    made = {}

    def base(family):
        if family not in made:
            folder = corpus["root"] / f"base-{family}"
            assert main([family, "--config", "tiny", *data(corpus), "--output-dir", str(folder), *COMMON,
                         "--max-steps", "30", *BASES[family]]) == 0
            made[family] = folder
        return made[family]

    return base


def record(folder):
    return json.loads((folder / "pretraining.json").read_text())


def evaluations(folder):
    return [e for e in json.loads((folder / "train_results.json").read_text())["log_history"]
            if any(k.startswith("eval_") for k in e)]


@pytest.mark.parametrize("family", ["gpt", "bert", "elmo", "nnlm"])
def test_a_continued_run_starts_at_its_base_models_loss(family, corpus, bases, tmp_path, capsys):
    """The weights really are loaded: the continued run's evaluation before its first step is the base run's own
    final evaluation on the same data, far below ln(vocabulary), where a fresh model starts."""
    base = bases(family)
    capsys.readouterr()
    out = tmp_path / "continued"
    assert main([family, "--init-from", str(base), *data(corpus), "--output-dir", str(out), *COMMON,
                 "--max-steps", "2"]) == 0
    assert f"hf-lineage pretrain {family}: continuing lineage-{family} from {base}: " in capsys.readouterr().out

    base_loss = json.loads((base / "train_results.json").read_text())["eval"][LOSS[family]]
    vocabulary = json.loads((base / "config.json").read_text())["vocab_size"]
    first = evaluations(out)[0]
    assert first["step"] == 0
    assert first[f"eval_{LOSS[family]}"] == pytest.approx(base_loss, abs=1e-5)
    assert base_loss < math.log(vocabulary) - 0.25
    # Its tokenizer and config are the base's.
    assert (out / "tokenizer.json").read_text() == (base / "tokenizer.json").read_text()
    saved, original = (json.loads((f / "config.json").read_text()) for f in (out, base))
    assert {k: v for k, v in saved.items() if k != "transformers_version"} == {
        k: v for k, v in original.items() if k != "transformers_version"}
    # The record names the base and the words this stage read.
    stage = record(out)
    assert stage["init_from"] == base.name and "converted_from" not in stage and stage["steps"] == 2
    assert stage["base_validation"][LOSS[family]] == pytest.approx(base_loss, abs=1e-5)
    assert 0 < stage["words_seen"] < stage["corpus"]["train_words"]
    assert record(base)["init_from"] is None
    # The card (published with a push) names the base by its folder's name, never by its path on this machine.
    card = (out / "README.md").read_text()
    assert f"continuing lineage-{family} from {base.name}" in card and str(base) not in card


def test_a_fresh_run_starts_near_ln_vocabulary(corpus, bases, tmp_path):
    """The comparison the test above leans on: the same model from scratch (the base's tokenizer and sizes) is at
    ln(vocabulary) after one step, where the continued run starts at its base's loss."""
    base = bases("gpt")
    out = tmp_path / "fresh"
    assert main(["gpt", "--config", "tiny", *data(corpus), "--output-dir", str(out), *COMMON, "--max-steps", "1",
                 "--tokenizer", str(base), *BASES["gpt"][:8]]) == 0
    vocabulary = json.loads((out / "config.json").read_text())["vocab_size"]
    assert evaluations(out)[0]["eval_loss"] == pytest.approx(math.log(vocabulary), abs=0.15)
    base_loss = json.loads((base / "train_results.json").read_text())["eval"]["loss"]
    assert evaluations(out)[0]["eval_loss"] > base_loss + 0.5


def test_an_interrupted_continued_run_resumes_bit_identically(corpus, bases, tmp_path):
    """--resume-from still works: 2 steps, then resumed to 4, end where 4 uninterrupted steps do; a --set that keeps
    every weight's shape (a dropout) is taken."""
    base = bases("gpt")
    options = [*data(corpus, validation=False), *COMMON, "--lr-scheduler", "constant", "--warmup-steps", "0",
               "--checkpoint-every", "2", "--init-from", str(base), "--set", "attention_probs_dropout_prob=0.3"]
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    assert main(["gpt", "--output-dir", str(whole), "--max-steps", "4", *options]) == 0
    assert main(["gpt", "--output-dir", str(parts), "--max-steps", "2", *options]) == 0
    assert main(["gpt", "--output-dir", str(parts), "--max-steps", "4", "--resume-from", "latest", *options]) == 0
    a, b, start = (load_file(str(f / "model.safetensors")) for f in (whole, parts, base))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], start[k]) for k in a)  # it trained
    assert json.loads((whole / "config.json").read_text())["attention_probs_dropout_prob"] == 0.3
    # A resumed run must continue the same base.
    other = bases("gpt").parent / "elsewhere"
    assert main(["gpt", "--output-dir", str(parts), "--max-steps", "6", "--resume-from", "latest",
                 *[str(other) if o == str(base) else o for o in options]]) == 2


# --------------------------------------------------------------------------- transformers' own models


def openai_gpt_folder(folder, corpus_text):
    """A tiny transformers OpenAI GPT with its own tokenizer class (BPE on lowercased characters; no merges)."""
    from transformers import OpenAIGPTConfig, OpenAIGPTLMHeadModel, OpenAIGPTTokenizer

    characters = sorted({c for c in corpus_text.lower() if not c.isspace()})
    vocab = {"<unk>": 0, **{c: i + 1 for i, c in enumerate(characters)}}
    vocab.update({c + "</w>": len(vocab) + i for i, c in enumerate(characters)})
    tokenizer = OpenAIGPTTokenizer(vocab=vocab, merges=[])
    torch.manual_seed(0)
    model = OpenAIGPTLMHeadModel(OpenAIGPTConfig(vocab_size=len(tokenizer), n_positions=32, n_embd=32, n_layer=1,
                                                 n_head=2)).eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model, tokenizer


def bert_folder(folder, corpus_text):
    """A tiny transformers BertForPreTraining with its own tokenizer class (a WordPiece vocabulary of characters)."""
    from transformers import BertConfig, BertForPreTraining, BertTokenizer

    characters = sorted({c for c in corpus_text.lower() if not c.isspace()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *characters, *("##" + c for c in characters)]
    tokenizer = BertTokenizer(vocab={token: i for i, token in enumerate(vocab)})
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1,
                                          num_attention_heads=2, intermediate_size=64,
                                          max_position_embeddings=64)).eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model, tokenizer


def base_of(family, folder):
    from hf_lineage.engine.base_model import load_base
    from hf_lineage.objectives import get_objective
    from hf_lineage.pretraining.arguments import resolve_defaults
    from hf_lineage.pretraining.dispatch import PretrainArguments

    args = PretrainArguments(family=family, output_dir="unused", init_from=str(folder), max_seq_length=32)
    objective = get_objective(family, args)
    # as the engine does: every option left unset takes the family's default (BERT's NSP on) before the base loads
    resolve_defaults(args, objective)
    return load_base(args, objective, set())


def test_a_transformers_openai_gpt_folder_is_continued_through_the_converter(corpus, tmp_path, capsys):
    from hf_lineage.data.examples import load_text
    from hf_lineage.objectives import get_objective
    from hf_lineage.pretraining.dispatch import PretrainArguments

    folder = tmp_path / "openai-gpt"
    source, tokenizer = openai_gpt_folder(folder, CORPUS + VALIDATION)
    base = base_of("gpt", folder)
    ids = torch.tensor([tokenizer("the game was developed by sega")["input_ids"]])
    torch.testing.assert_close(base.model.eval()(ids).logits, source(ids).logits, rtol=0, atol=1e-5)
    assert base.converted_from == "transformers OpenAIGPTLMHeadModel"

    out = tmp_path / "continued"
    assert main(["gpt", "--init-from", str(folder), *data(corpus), "--output-dir", str(out), *COMMON,
                 "--max-steps", "2"]) == 0
    assert f"continuing lineage-gpt from {folder} (converted from transformers OpenAIGPTLMHeadModel): " in (
        capsys.readouterr().out)
    # Before its first step, the run's validation loss is transformers' model's own on the same blocks.
    args = PretrainArguments(family="gpt", output_dir=str(out), max_seq_length=32, validation_file=[corpus["valid"]])
    blocks = get_objective("gpt", args).prepare(load_text(args, args.validation_file, "validation"), tokenizer,
                                                "validation")
    input_ids = torch.tensor(blocks["input_ids"])
    with torch.no_grad():
        expected = source(input_ids=input_ids, labels=input_ids).loss.item()
    assert evaluations(out)[0]["step"] == 0
    assert evaluations(out)[0]["eval_loss"] == pytest.approx(expected, abs=1e-5)
    stage = record(out)
    assert (stage["init_from"], stage["converted_from"]) == (folder.name, "transformers OpenAIGPTLMHeadModel")
    assert json.loads((out / "config.json").read_text())["model_type"] == "lineage-gpt"


def test_a_transformers_bert_folder_is_continued_through_the_converter(corpus, tmp_path):
    folder = tmp_path / "bert"
    source, tokenizer = bert_folder(folder, CORPUS + VALIDATION)
    base = base_of("bert", folder)
    batch = tokenizer(["the game was developed"], ["by sega in japan"], return_tensors="pt")
    converted = base.model.eval()(**batch)
    expected = source(**batch)
    torch.testing.assert_close(converted.prediction_logits, expected.prediction_logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(converted.seq_relationship_logits, expected.seq_relationship_logits, rtol=0, atol=1e-5)

    out = tmp_path / "continued"
    assert main(["bert", "--init-from", str(folder), *data(corpus), "--output-dir", str(out), *COMMON,
                 "--max-steps", "2"]) == 0
    stage = record(out)
    assert (stage["init_from"], stage["converted_from"]) == (folder.name, "transformers BertForPreTraining")
    # A fresh MLM head reads ln(vocabulary); the converted random model reads about the same, and it trains on.
    assert evaluations(out)[0]["step"] == 0 and stage["steps"] == 2
    assert json.loads((out / "config.json").read_text())["model_type"] == "lineage-bert"


# --------------------------------------------------------------------------- refused, with nothing written


@pytest.mark.parametrize("family, init_from, extra, message", [
    ("bert", "{gpt}", [], "holds a lineage-gpt model; `hf-lineage pretrain bert` continues a lineage-bert model"),
    ("gpt", "{root}/no/such/folder", [], "no such folder"),
    ("gpt", "no-such-user/no-such-model", [], "the Hub model no-such-user/no-such-model could not be fetched"),
    ("gpt", "{root}", [], "the folder holds no config.json"),
    ("gpt", "{gpt}", ["--tokenizer", "{gpt}"], "keeps that model's tokenizer and config: drop --tokenizer"),
    ("gpt", "{gpt}", ["--vocab-size", "100"], "drop --vocab-size"),
    ("gpt", "{gpt}", ["--config", "tiny"], "drop --config"),
    ("gpt", "{gpt}", ["--set", "hidden_size=64"], "--set hidden_size=64 contradicts the model of --init-from"),
    ("gpt", "{gpt}", ["--max-seq-length", "64"], "exceeds the config's context"),
    ("word2vec", "{gpt}", [], "word2vec's vocabulary, word counts, Huffman tree"),
    ("svd", "{gpt}", [], "svd's vectors are a factorisation"),
])
def test_a_bad_base_is_refused_before_anything_is_written(family, init_from, extra, message, corpus, bases, tmp_path,
                                                          capsys, monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # as on a machine without network
    names = {"gpt": str(bases("gpt")), "root": str(corpus["root"])}
    out = tmp_path / "out"
    options = [o.format(**names) for o in extra]
    assert main([family, "--init-from", init_from.format(**names), *data(corpus), "--output-dir", str(out),
                 "--report-to", "none", "--max-steps", "1", *options]) == 2
    error = capsys.readouterr().err
    assert "hf-lineage pretrain: error: --" in error and message in error, error
    assert not out.exists()


def test_a_base_without_pretraining_heads_gets_new_ones_and_says_so(corpus, bases, tmp_path, capsys):
    """A fine-tuned (or bare encoder) folder continues too, as run_mlm.py's would: the encoder's weights are loaded,
    the heads it lacks are newly initialised, and the command names them."""
    from transformers import AutoTokenizer

    from hf_lineage import LineageBertModel

    base = bases("bert")
    encoder = LineageBertModel.from_pretrained(base)
    encoder.save_pretrained(tmp_path / "encoder")
    AutoTokenizer.from_pretrained(base).save_pretrained(tmp_path / "encoder")
    out = tmp_path / "continued"
    assert main(["bert", "--init-from", str(tmp_path / "encoder"), *data(corpus, validation=False), "--output-dir",
                 str(out), *COMMON, "--max-steps", "1"]) == 0
    note = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("note: "))
    assert "cls.seq_relationship.weight" in note and "newly initialised" in note
    assert "bert.embeddings.word_embeddings.weight" not in note
    trained, original = (load_file(str(f / "model.safetensors")) for f in (out, base))
    # One step moved the weights a little, the loaded encoder's embeddings stay close to the base's.
    embeddings = "bert.embeddings.word_embeddings.weight"
    assert (trained[embeddings] - original[embeddings]).abs().max() < 0.05


def test_a_hub_id_continues_from_the_hub_cache(corpus, bases, tmp_path, monkeypatch, capsys):
    """A Hub id is fetched as transformers fetches it, offline from the cache here (the only offline way): the run
    is the same as from the folder itself, and the record names the id."""
    import shutil

    import huggingface_hub

    base = bases("gpt")
    revision = "0" * 40
    repository = tmp_path / "hub" / "models--someone--tiny-gpt"
    shutil.copytree(base, repository / "snapshots" / revision)
    (repository / "refs").mkdir()
    (repository / "refs" / "main").write_text(revision)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    runs = {}
    for name, init_from in (("hub", "someone/tiny-gpt"), ("folder", str(base))):
        runs[name] = tmp_path / f"from-{name}"
        assert main(["gpt", "--init-from", init_from, *data(corpus), "--output-dir", str(runs[name]), *COMMON,
                     "--max-steps", "1"]) == 0
    assert "continuing lineage-gpt from someone/tiny-gpt: " in capsys.readouterr().out
    assert record(runs["hub"])["init_from"] == "someone/tiny-gpt"
    a, b = (load_file(str(f / "model.safetensors")) for f in runs.values())
    assert all(torch.equal(a[k], b[k]) for k in a)
