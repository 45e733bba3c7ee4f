"""What a transformers user does with a saved folder: load it with ``pipeline()`` and get what the recipe (or the
pre-training engine) got. Each test writes its folder with the package's own code path — the recipes' ``main`` on
tiny in-test data, or the engine's ``save_final`` — and reads it back through transformers only."""

import csv
import json
import os

import pytest
import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer, pipeline

import hf_lineage
from hf_lineage.data.gpt_tasks import format_classification, format_entailment, format_similarity
from hf_lineage.folders.pretrained import save_final
from hf_lineage.folders.pretrained import NO_POSITIONS_MAX_LENGTH
from hf_lineage.tasks import classification, generation
from hf_lineage.tokenization import train_bpe_tokenizer, train_wordlevel_tokenizer, train_wordpiece_tokenizer

WORDS = "the a cat dog sat ran on under mat log red big small bird flew over house tree who what where when".split()
SENTENCES = [" ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 5, 7, 2)) for i in range(1, 25)]
RECIPE = ["--num_train_epochs", "1", "--per_device_train_batch_size", "4", "--per_device_eval_batch_size", "4",
          "--learning_rate", "1e-3", "--report_to", "none", "--save_strategy", "no", "--disable_tqdm", "true",
          "--log_level", "error", "--use_cpu", "true", "--seed", "0"]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def _tiny(family, tokenizer, folder, **sizes):
    config_class, _ = hf_lineage.registry.family_classes(family)
    config = config_class.from_named("tiny", vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                     bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, **sizes)
    transformers.AutoModelForPreTraining.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def gpt(tmp_path_factory):
    tokenizer = train_bpe_tokenizer(iterator=SENTENCES * 2, vocab_size=300, min_frequency=1, model_max_length=32)
    # Untied: a random model with tied embeddings repeats its last token, here the <eos> that ends every prompt.
    return _tiny("gpt", tokenizer, tmp_path_factory.mktemp("gpt"), max_position_embeddings=64,
                 tie_word_embeddings=False)


@pytest.fixture(scope="module")
def nnlm(tmp_path_factory):
    return _tiny("nnlm", train_wordlevel_tokenizer(iterator=SENTENCES), tmp_path_factory.mktemp("nnlm"))


@pytest.fixture(scope="module")
def elmo(tmp_path_factory):
    return _tiny("elmo", _word_tokenizer("elmo"), tmp_path_factory.mktemp("elmo"))


def _predictions(folder):
    with open(os.path.join(folder, "predictions.tsv"), encoding="utf-8") as f:
        return [row["prediction"] for row in csv.DictReader(f, delimiter="\t")]


# --------------------------------------------------------------------------- GPT classifiers through pipelines


def test_gpt_classifier_predicts_through_a_pipeline_as_in_predictions_tsv(gpt, tmp_path):
    rows = [{"sentence": s, "label": "animal" if {"cat", "dog", "bird"} & set(s.split()) else "other"}
            for s in SENTENCES]
    train, test = _jsonl(tmp_path / "train.jsonl", rows[:16]), _jsonl(tmp_path / "test.jsonl", rows[16:])
    out = str(tmp_path / "ft")
    classification.main(["--model_name_or_path", gpt, "--train_file", train, "--test_file", test, "--do_train",
                         "--do_predict", "--output_dir", out, *RECIPE])
    classifier = pipeline("text-classification", model=out)
    texts = [row["sentence"] for row in rows[16:]]
    assert [p["label"] for p in classifier(texts)] == _predictions(out)
    # The saved tokenizer makes the paper's <s> x <e>, so the pipeline's scores are the model's on that input.
    model, tokenizer = classifier.model, classifier.tokenizer
    for text in texts[:3]:
        expected = model(torch.tensor([format_classification(tokenizer, text)["input_ids"]])).logits[0]
        scores = {s["label"]: s["score"] for s in classifier(text, top_k=None, function_to_apply="none")}
        torch.testing.assert_close(torch.tensor([scores[model.config.id2label[i]] for i in range(2)]),
                                   expected.detach(), rtol=0, atol=1e-5)


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    tokenizer = train_wordpiece_tokenizer(iterator=SENTENCES * 2, vocab_size=300, min_frequency=1,
                                          model_max_length=32)
    return _tiny("bert", tokenizer, tmp_path_factory.mktemp("bert"), max_position_embeddings=64)


@pytest.mark.parametrize("family", ["gpt", "bert"])
def test_siamese_pair_model_is_saved_as_such_and_predicts_through_a_pipeline(family, gpt, bert, tmp_path):
    """--pair_encoding siamese reaches the saved config (a pair_classifier is trained and saved), and a pipeline on
    the folder reads pairs the same way: its labels are predictions.tsv's."""
    rows = [{"sentence1": a, "sentence2": b, "label": str(i % 2)}
            for i, (a, b) in enumerate(zip(SENTENCES, SENTENCES[3:] + SENTENCES[:3]))]
    train, test = _jsonl(tmp_path / "train.jsonl", rows[:16]), _jsonl(tmp_path / "test.jsonl", rows[16:])
    out = str(tmp_path / "ft")
    base = gpt if family == "gpt" else bert
    classification.main(["--model_name_or_path", base, "--train_file", train, "--test_file", test, "--do_train",
                         "--do_predict", "--pair_encoding", "siamese", "--output_dir", out, *RECIPE], pairs=True)
    classifier = pipeline("text-classification", model=out)
    assert classifier.model.config.pair_encoding == "siamese"
    trained = classifier.model.pair_classifier.weight
    assert trained.shape[1] == 4 * classifier.model.config.hidden_size
    pairs = [{"text": row["sentence1"], "text_pair": row["sentence2"]} for row in rows[16:]]
    assert [p["label"] for p in classifier(pairs)] == _predictions(out)
    assert [p["label"] for p in classifier(pairs, batch_size=3)] == _predictions(out)  # padded batches too


@pytest.mark.parametrize("pair_task", ["similarity", "entailment"])
def test_gpt_pair_model_predicts_through_a_pipeline_as_in_predictions_tsv(gpt, tmp_path, pair_task):
    rows = [{"sentence1": a, "sentence2": b, "label": str(i % 2)}
            for i, (a, b) in enumerate(zip(SENTENCES, SENTENCES[3:] + SENTENCES[:3]))]
    train, test = _jsonl(tmp_path / "train.jsonl", rows[:16]), _jsonl(tmp_path / "test.jsonl", rows[16:])
    out = str(tmp_path / "ft")
    classification.main(["--model_name_or_path", gpt, "--train_file", train, "--test_file", test, "--do_train",
                         "--do_predict", "--pair_task", pair_task, "--output_dir", out, *RECIPE], pairs=True)
    classifier = pipeline("text-classification", model=out)
    pairs = [{"text": row["sentence1"], "text_pair": row["sentence2"]} for row in rows[16:]]
    assert [p["label"] for p in classifier(pairs)] == _predictions(out)
    assert [p["label"] for p in classifier(pairs, batch_size=3)] == _predictions(out)  # padded batches too

    model, tokenizer = classifier.model, classifier.tokenizer
    assert model.config.pair_task == pair_task

    def scores(a, b):
        out = classifier({"text": a, "text_pair": b}, top_k=None, function_to_apply="none")
        return torch.tensor([{s["label"]: s["score"] for s in out}[model.config.id2label[i]] for i in range(2)])

    a, b = rows[16]["sentence1"], rows[16]["sentence2"]
    # The reference: section 3.3's transformations as format_* build them (similarity: both orders, (1, 2, T)).
    reference = format_similarity if pair_task == "similarity" else format_entailment
    expected = model(torch.tensor([reference(tokenizer, a, b)["input_ids"]])).logits[0].detach()
    torch.testing.assert_close(scores(a, b), expected, rtol=0, atol=1e-5)
    if pair_task == "similarity":  # the model reads both orders itself: the order of the pair does not matter
        torch.testing.assert_close(scores(b, a), scores(a, b), rtol=0, atol=1e-5)
    else:
        assert not torch.allclose(scores(b, a), scores(a, b))


def test_similarity_needs_the_delimiter(gpt):
    model = transformers.AutoModelForSequenceClassification.from_pretrained(gpt, num_labels=2, pair_task="similarity",
                                                                            delimiter_token_id=5)
    with pytest.raises(ValueError, match="no delimiter"):
        model(torch.tensor([[2, 7, 8, 2]]))
    with pytest.raises(ValueError, match="delimiter_token_id"):
        hf_lineage.LineageGPTConfig(pair_task="similarity")


# --------------------------------------------------------------------------- generation through pipelines


@pytest.mark.parametrize("family", ["gpt", "nnlm", "elmo"])
def test_generation_recipe_and_text_generation_pipeline_agree(family, gpt, nnlm, elmo, tmp_path):
    base = {"gpt": gpt, "nnlm": nnlm, "elmo": elmo}[family]
    rows = [{"source": s, "target": " ".join(reversed(s.split()))} for s in SENTENCES]
    train, test = _jsonl(tmp_path / "train.jsonl", rows[:16]), _jsonl(tmp_path / "test.jsonl", rows[16:])
    out = str(tmp_path / "ft")
    generation.main(["--model_name_or_path", base, "--train_file", train, "--test_file", test, "--do_train",
                     "--do_predict", "--predict_with_generate", "--max_target_length", "6", "--output_dir", out,
                     *RECIPE, "--learning_rate", "1e-6"])  # near its random init, the model seldom ends at once
    with open(os.path.join(out, "generated_predictions.txt"), encoding="utf-8") as f:
        recipe = f.read().splitlines()
    generator = pipeline("text-generation", model=out)
    # The saved tokenizer ends the prompt with <eos>, the separator the model was fine-tuned after.
    eos = generator.tokenizer.eos_token_id
    assert generator.tokenizer(rows[16]["source"])["input_ids"][-1] == eos
    generated = generator([row["source"] for row in rows[16:]], return_full_text=False)
    assert [" ".join(g[0]["generated_text"].split()) for g in generated] == recipe
    assert any(recipe)  # something was generated (no <unk> or padding: both are suppressed)


def test_word_level_generation_keeps_the_space_between_prompt_and_continuation(nnlm):
    generator = pipeline("text-generation", model=nnlm)
    prompt = "the cat sat on"
    full = generator(prompt, max_new_tokens=4, do_sample=False)[0]["generated_text"]
    new = generator(prompt, max_new_tokens=4, do_sample=False, return_full_text=False)[0]["generated_text"]
    assert full == prompt + new and new.startswith(" ")
    assert full.split()[:4] == prompt.split() and len(full.split()) > 4  # "on" and the next word stay apart
    tokenizer = generator.tokenizer
    assert tokenizer.decode(tokenizer("the cat sat")["input_ids"]).split() == ["the", "cat", "sat"]


@pytest.mark.parametrize("family", ["nnlm", "elmo"])
def test_word_level_tokenizers_decode_each_word_with_its_space(family):
    tokenizer = _word_tokenizer(family)
    ids = tokenizer("the cat sat", add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == " the cat sat"
    assert tokenizer.decode(ids[:2]) + tokenizer.decode(ids[2:]) == tokenizer.decode(ids)  # a continuation joins


# --------------------------------------------------------------------------- what the engine saves


def _word_tokenizer(family):
    tokenizer = train_wordlevel_tokenizer(iterator=SENTENCES)
    if family != "elmo":
        return tokenizer
    from hf_lineage.models.tokenization_lineage_elmo import LineageElmoTokenizer

    words = tokenizer.convert_ids_to_tokens(list(range(4, len(tokenizer))))
    return LineageElmoTokenizer(vocab=["<pad>", "<UNK>", "<S>", "</S>", *words])


@pytest.mark.parametrize("family", ["gpt", "nnlm", "word2vec", "elmo"])
def test_every_causal_family_ships_generation_defaults(family, tmp_path):
    tokenizer = (train_bpe_tokenizer(iterator=SENTENCES, vocab_size=300, min_frequency=1) if family == "gpt"
                 else _word_tokenizer(family))
    config_class, _ = hf_lineage.registry.family_classes(family)
    config = config_class.from_named("tiny", vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                     bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    model = transformers.AutoModelForPreTraining.from_config(config)
    save_final(model, tokenizer, tmp_path, "")
    saved = transformers.GenerationConfig.from_pretrained(tmp_path)
    assert (saved.pad_token_id, saved.bos_token_id, saved.eos_token_id) == (
        tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id)
    expected = [tokenizer.unk_token_id, tokenizer.pad_token_id]
    assert saved.suppress_tokens == [i for i in expected if i != tokenizer.eos_token_id]
    assert AutoModelForCausalLM.from_pretrained(tmp_path).generation_config.suppress_tokens == saved.suppress_tokens


def test_a_pretrained_elmo_generates_through_a_pipeline(tmp_path):
    # The engine's folder, not the generation recipe's: it must hold the vocabulary's characters, since
    # generate() feeds ELMo word ids only.
    tokenizer = _word_tokenizer("elmo")
    config_class, _ = hf_lineage.registry.family_classes("elmo")
    config = config_class.from_named("tiny", vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                     bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    save_final(transformers.AutoModelForPreTraining.from_config(config), tokenizer, tmp_path, "")
    generator = pipeline("text-generation", model=str(tmp_path))
    new = generator("the cat sat", max_new_tokens=3, min_new_tokens=3, do_sample=False,
                    return_full_text=False)[0]["generated_text"]
    assert new.startswith(" ") and new.split()  # an untrained model may also emit <S>, which decodes to nothing
    model = AutoModelForCausalLM.from_pretrained(tmp_path)
    assert bool(model.vocabulary_char_ids.any())  # the table was saved, not rebuilt on load


def test_nnlm_greedy_output_is_not_unk(tmp_path):
    tokenizer = train_wordlevel_tokenizer(iterator=SENTENCES)
    config_class, _ = hf_lineage.registry.family_classes("nnlm")
    model = transformers.AutoModelForPreTraining.from_config(config_class.from_named("tiny", vocab_size=len(tokenizer)))
    with torch.no_grad():  # <unk> the likeliest word everywhere, as after training on a corpus full of rare words
        model.get_output_embeddings().bias[tokenizer.unk_token_id] = 100.0
    save_final(model, tokenizer, tmp_path, "")
    generator = pipeline("text-generation", model=str(tmp_path))
    ids = generator("the cat", max_new_tokens=5, do_sample=False, return_tensors=True)[0]["generated_token_ids"]
    new = list(ids)[2:]
    assert new and tokenizer.unk_token_id not in new and tokenizer.pad_token_id not in new


@pytest.mark.parametrize("family", ["bert", "gpt", "nnlm"])
def test_saved_tokenizer_accepts_what_the_model_accepts(family, tmp_path):
    """The pre-training block size (here 16) is not the model's limit: pipelines would truncate to it."""
    if family == "bert":
        tokenizer = train_wordpiece_tokenizer(iterator=SENTENCES, vocab_size=100, min_frequency=1, model_max_length=16)
    elif family == "gpt":
        tokenizer = train_bpe_tokenizer(iterator=SENTENCES, vocab_size=300, min_frequency=1, model_max_length=16)
    else:
        tokenizer = train_wordlevel_tokenizer(iterator=SENTENCES, model_max_length=16)
    config_class, _ = hf_lineage.registry.family_classes(family)
    sizes = {} if family == "nnlm" else {"max_position_embeddings": 48}
    config = config_class.from_named("tiny", vocab_size=len(tokenizer), **sizes)
    save_final(transformers.AutoModelForPreTraining.from_config(config), tokenizer, tmp_path, "")
    limit = AutoTokenizer.from_pretrained(tmp_path).model_max_length
    assert limit == (NO_POSITIONS_MAX_LENGTH if family == "nnlm" else 48)  # finite: run_clm.py's block size
