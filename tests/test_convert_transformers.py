"""``hf-lineage convert bert|gpt SOURCE``: transformers' own BERT and OpenAI GPT releases as lineage folders.

The releases are tiny stand-ins put into a Hub cache under the real ids (``standins_transformers``), read offline:
no network. Each family is converted once for the module; the tests read the folders."""

import json

import pytest
import torch

from conftest import run_without_hf_lineage
from standins_transformers import save_bert_standin, save_gpt_standin, use_hub_cache

BERT_ID, GPT_ID = "google-bert/bert-base-uncased", "openai-community/openai-gpt"
# Capitals and accents (the uncased tokenizers lowercase and strip them), words outside the vocabulary, CJK.
SENTENCES = ["The Quick BROWN fox jumps over the lazy dog.",
             "A café in Zürich serves CRÈME brûlée to naïve tourists!",
             "OpenAI's GPT: 7,000 unpublished novels.", "東京 and Ünïcödé wörds, xylophone."]


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    cache = tmp_path_factory.mktemp("hub")
    save_bert_standin(cache)
    save_gpt_standin(cache)
    return cache


@pytest.fixture
def offline_hub(hub, monkeypatch):
    use_hub_cache(monkeypatch, hub)
    return hub


@pytest.fixture(scope="module")
def converted(hub, tmp_path_factory):
    """{family: the folder ``convert`` wrote from the Hub id}."""
    from hf_lineage.convert.releases import convert

    out = tmp_path_factory.mktemp("converted")
    with pytest.MonkeyPatch.context() as monkeypatch:
        use_hub_cache(monkeypatch, hub)
        return {family: convert(family, [hub_id], out / family, command=f"hf-lineage convert {family} {hub_id}")
                for family, hub_id in (("bert", BERT_ID), ("gpt", GPT_ID))}


def padded_batch(tokenizer):
    """SENTENCES right-padded by hand (OpenAI GPT's tokenizer has no pad token), with the attention mask."""
    rows = [tokenizer(sentence)["input_ids"] for sentence in SENTENCES]
    length = max(map(len, rows))
    input_ids = torch.tensor([row + [0] * (length - len(row)) for row in rows])
    attention_mask = torch.tensor([[1] * len(row) + [0] * (length - len(row)) for row in rows])
    return input_ids, attention_mask


def outputs(model, input_ids, attention_mask):
    with torch.no_grad():
        return model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_the_converted_folder_computes_what_the_release_computes(family, converted, offline_hub):
    import transformers

    import hf_lineage  # noqa: F401 - the lineage model types, for the Auto classes

    hub_id, reference_class, auto_class, logits = {
        "bert": (BERT_ID, "BertForPreTraining", "AutoModelForPreTraining", "prediction_logits"),
        "gpt": (GPT_ID, "OpenAIGPTLMHeadModel", "AutoModelForCausalLM", "logits")}[family]
    reference = getattr(transformers, reference_class).from_pretrained(hub_id).eval()
    model = getattr(transformers, auto_class).from_pretrained(converted[family]).eval()
    assert type(model).__name__ == {"bert": "LineageBertForPreTraining", "gpt": "LineageGPTForCausalLM"}[family]
    input_ids, attention_mask = padded_batch(transformers.AutoTokenizer.from_pretrained(hub_id))
    theirs, ours = outputs(reference, input_ids, attention_mask), outputs(model, input_ids, attention_mask)
    real = attention_mask.bool()  # padded positions are never read
    assert len(theirs.hidden_states) == len(ours.hidden_states) == 3
    for a, b in zip(theirs.hidden_states, ours.hidden_states):
        assert (a[real] - b[real]).abs().max() <= 1e-5
    vocabulary = reference.config.vocab_size  # GPT's folder has two rows more (its added special tokens)
    assert (getattr(theirs, logits)[real] - getattr(ours, logits)[real][:, :vocabulary]).abs().max() <= 1e-5
    if family == "bert":
        assert (theirs.seq_relationship_logits - ours.seq_relationship_logits).abs().max() <= 1e-5


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_the_saved_tokenizer_gives_the_release_s_ids(family, converted, offline_hub):
    from transformers import AutoTokenizer

    import hf_lineage  # noqa: F401

    hub_id = {"bert": BERT_ID, "gpt": GPT_ID}[family]
    original, saved = AutoTokenizer.from_pretrained(hub_id), AutoTokenizer.from_pretrained(converted[family])
    assert type(saved) is type(original)  # transformers' own class: BertTokenizer, OpenAIGPTTokenizer
    for sentence in SENTENCES:
        assert saved(sentence)["input_ids"] == original(sentence)["input_ids"], sentence
    assert saved(*SENTENCES[:2])["input_ids"] == original(*SENTENCES[:2])["input_ids"]
    if family == "bert":  # uncased: lowercased, accents stripped
        assert saved.tokenize("CAFÉ") == saved.tokenize("cafe")


def test_gpt_gets_the_special_tokens_fine_tuning_needs_and_text_is_tokenized_as_before(converted, offline_hub):
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    import hf_lineage  # noqa: F401

    original, saved = AutoTokenizer.from_pretrained(GPT_ID), AutoTokenizer.from_pretrained(converted["gpt"])
    assert original.pad_token is None and original.eos_token is None  # OpenAI's: <unk> alone
    size = len(original)
    assert (saved.bos_token, saved.eos_token, saved.pad_token) == ("<|endoftext|>", "<|endoftext|>", "<pad>")
    assert (saved.eos_token_id, saved.pad_token_id) == (size, size + 1)
    assert saved("the end<|endoftext|>")["input_ids"] == original("the end")["input_ids"] + [size]
    model = AutoModelForCausalLM.from_pretrained(converted["gpt"])
    config = model.config
    assert (config.vocab_size, config.pad_token_id, config.eos_token_id, config.bos_token_id) == (
        size + 2, size + 1, size, size)
    embeddings = model.get_input_embeddings().weight
    assert torch.allclose(embeddings[size:], embeddings[:size].mean(dim=0).expand(2, -1))
    generation = GenerationConfig.from_pretrained(converted["gpt"])
    assert generation.eos_token_id == size and set(generation.suppress_tokens) == {original.unk_token_id, size + 1}


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_card_and_record_name_the_release(family, converted):
    hub_id, license, citation = {"bert": (BERT_ID, "apache-2.0", "devlin-etal-2019-bert"),
                                 "gpt": (GPT_ID, "mit", "radford2018improving")}[family]
    card = (converted[family] / "README.md").read_text()
    assert f"license: {license}" in card and f"base_model: {hub_id}" in card and f"**{hub_id}**" in card
    assert citation in card and "### Tokenization" in card and "Checked at conversion" in card
    record = json.loads((converted[family] / "pretraining.json").read_text())
    assert record["converted_from"] == hub_id and record["license"] == license
    assert record["words_seen"] == {"bert": 3_300_000_000, "gpt": 800_000_000}[family]
    # BERT: the paper's corpus size; GPT: its paper gives none, BooksCorpus's as BERT's paper gives it
    assert "Devlin et al. (2019" in record["words_seen_from"]


def test_the_folders_load_with_trust_remote_code_without_hf_lineage(converted, offline_hub, tmp_path):
    from transformers import AutoTokenizer, BertModel

    code = f"""
import json, torch
from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer
result = {{}}
for family, folder in {json.dumps({f: str(p) for f, p in converted.items()})}.items():
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    auto_class = AutoModelForCausalLM if family == "gpt" else AutoModel
    model = auto_class.from_pretrained(folder, trust_remote_code=True).eval()
    ids = tokenizer({SENTENCES[1]!r})["input_ids"]
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), output_hidden_states=True)
    result[family] = {{"class": type(model).__name__, "ids": ids, "last": out.hidden_states[-1][0].tolist()}}
print(json.dumps(result))
"""
    result = json.loads(run_without_hf_lineage(code, tmp_path).strip().splitlines()[-1])
    assert result["bert"]["class"] == "LineageBertModel" and result["gpt"]["class"] == "LineageGPTForCausalLM"
    for family, hub_id in (("bert", BERT_ID), ("gpt", GPT_ID)):
        assert result[family]["ids"] == AutoTokenizer.from_pretrained(hub_id)(SENTENCES[1])["input_ids"]
    reference = BertModel.from_pretrained(BERT_ID).eval()
    with torch.no_grad():
        last = reference(input_ids=torch.tensor([result["bert"]["ids"]])).last_hidden_state[0]
    assert (last - torch.tensor(result["bert"]["last"])).abs().max() <= 1e-5


def test_a_checkpoint_without_pretraining_heads_converts_and_the_card_says_so(offline_hub, tmp_path):
    """A BertForMaskedLM checkpoint has no pooler and no next-sentence head: they are newly initialised, named in
    the card; the encoder and the masked-LM head are the checkpoint's."""
    from transformers import AutoTokenizer, BertForMaskedLM

    from hf_lineage import LineageBertForPreTraining
    from hf_lineage.convert.releases import convert

    folder = tmp_path / "my-mlm-bert"
    reference = BertForMaskedLM.from_pretrained(BERT_ID).eval()
    reference.save_pretrained(folder)
    AutoTokenizer.from_pretrained(BERT_ID).save_pretrained(folder)
    out = convert("bert", [str(folder)], tmp_path / "out")
    card = (out / "README.md").read_text()
    assert "**my-mlm-bert** by hf_lineage" in card and "base_model:" not in card
    assert "my-mlm-bert holds no weights for `bert.pooler.dense.bias`" in card
    assert "`cls.seq_relationship.weight`" in card and "`cls.predictions" not in card
    assert json.loads((out / "pretraining.json").read_text())["words_seen"] is None  # not known for a local folder
    model = LineageBertForPreTraining.from_pretrained(out).eval()
    input_ids, attention_mask = padded_batch(AutoTokenizer.from_pretrained(BERT_ID))
    theirs, ours = outputs(reference, input_ids, attention_mask), outputs(model, input_ids, attention_mask)
    real = attention_mask.bool()
    assert (theirs.logits[real] - ours.prediction_logits[real]).abs().max() <= 1e-5


def test_multilingual_bert_is_marked_multilingual(tmp_path, monkeypatch):
    from hf_lineage.convert.bert import release

    save_bert_standin(tmp_path, "google-bert/bert-base-multilingual-cased")
    use_hub_cache(monkeypatch, tmp_path)
    converted = release(["google-bert/bert-base-multilingual-cased"], None)
    assert converted.language == "multilingual" and converted.words_seen is None
    assert "104 languages" in converted.words_seen_from


@pytest.mark.parametrize("family, source, message", [
    ("bert", "nobody/no-such-bert", "nobody/no-such-bert: no such local folder, and not in the Hugging Face Hub "
                                    "cache, and HF_HUB_OFFLINE is set"),
    ("bert", "{gpt_folder}", "holds a model of type 'openai-gpt', not 'bert'"),
    ("gpt", "{bert_folder}", "holds a model of type 'bert', not 'openai-gpt'"),
    ("bert", "{converted_bert}", "holds a model of type 'lineage-bert', not 'bert'; it is a lineage folder already"),
    ("gpt", "./no/such/folder", "./no/such/folder: no such folder, nor a Hub model id OWNER/NAME"),
])
def test_what_cannot_be_converted_is_refused_naming_it_and_nothing_is_written(family, source, message, converted,
                                                                              offline_hub, tmp_path):
    from hf_lineage.convert.releases import convert
    from hf_lineage.convert.sources import ConversionError

    snapshots = {name: next((offline_hub / f"models--{hub_id.replace('/', '--')}" / "snapshots").iterdir())
                 for name, hub_id in (("gpt_folder", GPT_ID), ("bert_folder", BERT_ID))}
    source = source.format(**snapshots, converted_bert=converted["bert"])
    out = tmp_path / "out"
    with pytest.raises(ConversionError) as error:
        convert(family, [source], out)
    assert message in str(error.value) and source in str(error.value) and "\n" not in str(error.value)
    assert not out.exists() and list(tmp_path.iterdir()) == []  # no staging folder left either


def test_one_source_exactly(offline_hub, tmp_path):
    from hf_lineage.convert.releases import convert
    from hf_lineage.convert.sources import ConversionError

    with pytest.raises(ConversionError, match="gpt takes one source.*got 2: openai-community/openai-gpt x/y"):
        convert("gpt", [GPT_ID, "x/y"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_conversion_whose_outputs_differ_from_the_release_s_is_refused(offline_hub, tmp_path, monkeypatch):
    """The outputs are compared before anything is written: a weight out of place is caught."""
    from hf_lineage.convert import bert
    from hf_lineage.convert.releases import convert
    from hf_lineage.convert.sources import ConversionError

    def misplaced(model):
        converted = from_transformers(model)
        with torch.no_grad():
            converted.bert.encoder.layer[1].attention.value.weight.mul_(1.5)
        return converted

    from_transformers = bert.from_transformers
    monkeypatch.setattr(bert, "from_transformers", misplaced)
    with pytest.raises(ConversionError, match="google-bert/bert-base-uncased: the converted model's outputs differ"):
        convert("bert", [BERT_ID], tmp_path / "out")
    assert not (tmp_path / "out").exists()
