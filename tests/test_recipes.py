"""The fine-tuning recipes end to end: every task type × every family (20 cells) on a tiny model and a few dozen
examples in the formats people download (``tests/task_data.py``: hand-written CoNLL-2003 and TREC files and the
package's embedded samples, so nothing here needs ../shared/data), plus --freeze_base, decoder-only generation, bad
input and the script entry.

Each cell asserts the metric is computed (present, a number in range), the model is saved and reloads with the task's
Auto class, the predictions file is written and the model card names the base model and the data. A family whose
classes are not registered yet is skipped with "<family> heads not available" and turns on by itself once they are.
"""

import json
import os
import subprocess
import sys

import pytest
import torch
import transformers
from transformers import AutoConfig, AutoTokenizer

import hf_lineage
from hf_lineage.data.readers import read_conll2003, read_conllu
from hf_lineage.registry import FAMILIES
from hf_lineage.tasks import classification, generation, labeling
from hf_lineage.tasks import run_cli

from conftest import REPO
from task_data import build_task_data

ALL_FAMILIES = ("bert", "gpt", "nnlm", "word2vec", "elmo")
TASKS = ("sequence_labeling", "classification", "sentence_pairs", "generation")
COMMON = ["--do_train", "--do_eval", "--do_predict", "--num_train_epochs", "1", "--per_device_train_batch_size", "8",
          "--per_device_eval_batch_size", "8", "--learning_rate", "1e-3", "--report_to", "none", "--save_strategy",
          "no", "--disable_tqdm", "true", "--log_level", "error", "--use_cpu", "true", "--seed", "0"]


# --------------------------------------------------------------------------- data and tiny checkpoints


def _lines(path, n=None):
    with open(path, encoding="utf-8-sig") as f:
        lines = f.read().splitlines()
    return lines if n is None else lines[:n]


def _conll_sentences(path):
    """CoNLL-2003 sentences as lists of lines (documents' -DOCSTART- lines dropped)."""
    sentences, current = [], []
    for line in _lines(path):
        if not line.strip():
            if current:
                sentences.append(current)
            current = []
        elif not line.startswith("-DOCSTART-"):
            current.append(line)
    return sentences


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A few dozen examples of each task, in the files' own formats: CoNLL-2003 as ``train.txt`` (recognised by
    content), GLUE TSV, TREC, E2E CSV, parallel text (``PREFIX.mr``/``PREFIX.en``), CoNLL-U."""
    files = build_task_data(tmp_path_factory.mktemp("task-data"))
    # The validation tags are among the training ones (an unseen tag is an error, tested below).
    tags = {line.split()[-1] for sentence in _conll_sentences(files["conll_train"]) for line in sentence}
    assert {line.split()[-1] for sentence in _conll_sentences(files["conll_valid"]) for line in sentence} <= tags
    return files


def _corpus(data):
    """Every word of the tiny task data, to train throwaway tokenizers on."""
    texts = []
    for key, path in data.items():
        if key.startswith("parallel_"):
            for lang in ("mr", "en"):
                texts += _lines(f"{path}.{lang}")
        elif key.startswith("conll_"):
            texts += [line.split()[0] for line in _lines(path) if line.strip()]
        elif key != "conllu":
            texts += [line.replace("\t", " ") for line in _lines(path)]
    return texts


def _build_tokenizer(family, texts):
    from hf_lineage.tokenization import train_bpe_tokenizer, train_wordlevel_tokenizer, train_wordpiece_tokenizer

    if family == "bert":
        return train_wordpiece_tokenizer(iterator=texts, vocab_size=800, min_frequency=1, model_max_length=128)
    if family == "gpt":
        return train_bpe_tokenizer(iterator=texts, vocab_size=800, min_frequency=1, model_max_length=128)
    words = train_wordlevel_tokenizer(iterator=texts)
    if family != "elmo":
        return words
    from hf_lineage.models.tokenization_lineage_elmo import LineageElmoTokenizer

    vocabulary = ["<pad>", "<UNK>", "<S>", "</S>"] + words.convert_ids_to_tokens(list(range(4, len(words))))
    return LineageElmoTokenizer(vocab=vocabulary)


def family_available(family):
    return family in FAMILIES


def task_available(family, auto_class):
    if not family_available(family):
        return False
    config_class, _ = hf_lineage.registry.family_classes(family)
    return config_class in auto_class._model_mapping


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory, data):
    """A tiny pre-training checkpoint (random weights) + tokenizer of every available family, built once."""
    root = tmp_path_factory.mktemp("tiny-checkpoints")
    texts = _corpus(data)
    paths = {}
    for family in ALL_FAMILIES:
        if not family_available(family):
            continue
        config_class, _ = hf_lineage.registry.family_classes(family)
        tokenizer = _build_tokenizer(family, texts)
        sizes = {"max_position_embeddings": 128} if family in ("bert", "gpt") else {}
        if family in ("nnlm", "word2vec", "elmo"):
            sizes.update(task_hidden_size=16)
        config = config_class.from_named("tiny", vocab_size=len(tokenizer), **sizes)
        model = transformers.AutoModelForPreTraining.from_config(config)
        paths[family] = str(root / family)
        model.save_pretrained(paths[family])
        tokenizer.save_pretrained(paths[family])
    return paths


def _checkpoint(checkpoints, family, auto_class):
    if not task_available(family, auto_class):
        pytest.skip(f"{family} heads not available")
    return checkpoints[family]


def _read_results(folder):
    with open(os.path.join(folder, "all_results.json"), encoding="utf-8") as f:
        return json.load(f)


def _assert_saved(folder, base, data_file, auto_class):
    model = auto_class.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    card = open(os.path.join(folder, "README.md"), encoding="utf-8").read()
    # The card is published: the base and the data by name, never the trainer's own paths.
    assert os.path.basename(base) in card and os.path.basename(data_file) in card and "## Results" in card
    assert base not in card and data_file not in card
    return model, tokenizer


# --------------------------------------------------------------------------- the 20 cells


@pytest.mark.parametrize("family", ALL_FAMILIES)
def test_sequence_labeling(family, checkpoints, data, tmp_path):
    base = _checkpoint(checkpoints, family, transformers.AutoModelForTokenClassification)
    out = str(tmp_path / "ner")
    results = labeling.main(["--model_name_or_path", base, "--train_file", data["conll_train"],
                             "--validation_file", data["conll_valid"], "--test_file", data["conll_valid"],
                             "--output_dir", out, *COMMON])
    assert results == _read_results(out)
    for key in ("eval_f1", "eval_precision", "eval_recall", "eval_accuracy", "predict_f1"):
        assert 0.0 <= results[key] <= 1.0, key
    assert results["eval_f1"] == results["predict_f1"]  # same file, same model
    model, tokenizer = _assert_saved(out, base, data["conll_train"], transformers.AutoModelForTokenClassification)
    labels = model.config.id2label
    assert len(labels) == model.config.num_labels and "O" in labels.values() and "B-PER" in labels.values()
    # predictions.conll: one "word gold predicted" line per word, a blank line after each sentence.
    # (gold as the reader gives it: the file's IOB1 tags converted to IOB2)
    gold = read_conll2003(data["conll_valid"])
    expected = [line for row in gold for line in [[w, t] for w, t in zip(row["tokens"], row["tags"])] + [[]]]
    written = [line.split() for line in _lines(os.path.join(out, "predictions.conll"))]
    assert [w[:2] for w in written] == expected
    assert all(w[2] in labels.values() for w in written if w)


@pytest.mark.parametrize("family", ALL_FAMILIES)
def test_classification(family, checkpoints, data, tmp_path):
    base = _checkpoint(checkpoints, family, transformers.AutoModelForSequenceClassification)
    out = str(tmp_path / "sst2")
    results = classification.main(["--model_name_or_path", base, "--train_file", data["sst2_train"],
                                   "--validation_file", data["sst2_valid"], "--test_file", data["sst2_valid"],
                                   "--output_dir", out, *COMMON])
    assert results == _read_results(out)
    for key in ("eval_accuracy", "eval_macro_f1", "eval_f1", "predict_accuracy"):
        assert 0.0 <= results[key] <= 1.0, key
    model, tokenizer = _assert_saved(out, base, data["sst2_train"],
                                     transformers.AutoModelForSequenceClassification)
    assert model.config.id2label == {0: "0", 1: "1"}
    rows = _lines(os.path.join(out, "predictions.tsv"))
    assert rows[0].split("\t") == ["index", "sentence", "label", "prediction"] and len(rows) == 17
    predicted = [row.split("\t")[-1] for row in rows[1:]]
    gold = [row.split("\t")[-2] for row in rows[1:]]
    assert set(predicted) <= {"0", "1"}
    accuracy = sum(p == g for p, g in zip(predicted, gold)) / len(gold)
    assert accuracy == pytest.approx(results["predict_accuracy"])


@pytest.mark.parametrize("family", ALL_FAMILIES)
def test_sentence_pairs(family, checkpoints, data, tmp_path):
    base = _checkpoint(checkpoints, family, transformers.AutoModelForSequenceClassification)
    out = str(tmp_path / "mrpc")
    results = classification.main(["--model_name_or_path", base, "--train_file", data["mrpc_train"],
                                   "--validation_file", data["mrpc_valid"], "--test_file", data["mrpc_valid"],
                                   "--output_dir", out, *COMMON], pairs=True)
    assert results == _read_results(out)
    for key in ("eval_accuracy", "eval_macro_f1", "eval_f1", "predict_f1"):
        assert 0.0 <= results[key] <= 1.0, key
    model, tokenizer = _assert_saved(out, base, data["mrpc_train"], transformers.AutoModelForSequenceClassification)
    rows = _lines(os.path.join(out, "predictions.tsv"))
    assert rows[0].split("\t") == ["index", "sentence1", "sentence2", "label", "prediction"] and len(rows) == 17
    if family == "gpt":
        # MRPC is a similarity task: GPT read each pair in both orders, and the saved tokenizer has <s> $ <e>.
        assert "pair_task` | `similarity" in open(os.path.join(out, "README.md")).read()
        assert tokenizer.convert_tokens_to_ids("<e>") != tokenizer.unk_token_id


@pytest.mark.parametrize("family", ["bert", "word2vec"])
def test_partial_input_trains_and_predicts_on_the_second_sentence_alone(family, checkpoints, data, tmp_path):
    base = _checkpoint(checkpoints, family, transformers.AutoModelForSequenceClassification)
    out = str(tmp_path / "mrpc-second")
    results = classification.main(["--model_name_or_path", base, "--train_file", data["mrpc_train"],
                                   "--validation_file", data["mrpc_valid"], "--test_file", data["mrpc_valid"],
                                   "--partial_input", "second", "--output_dir", out, *COMMON], pairs=True)
    assert 0.0 <= results["predict_accuracy"] <= 1.0
    rows = [row.split("\t") for row in _lines(os.path.join(out, "predictions.tsv"))]
    assert rows[0] == ["index", "sentence", "label", "prediction"]
    validation = [row.split("\t") for row in _lines(data["mrpc_valid"])]
    second = validation[0].index("#2 String")
    assert [row[1] for row in rows[1:]] == [row[second] for row in validation[1:]]
    assert "second sentence of each pair only" in open(os.path.join(out, "README.md")).read()


def test_partial_input_is_refused_outside_sentence_pairs(checkpoints, data, tmp_path, capsys):
    base = _checkpoint(checkpoints, "bert", transformers.AutoModelForSequenceClassification)
    arguments = ["--model_name_or_path", base, "--train_file", data["mrpc_train"], *COMMON]
    code = run_cli(lambda argv: classification.main([*arguments, "--partial_input", "second", "--output_dir",
                                                str(tmp_path / "single")], pairs=False))
    assert code != 0 and "for sentence pairs" in capsys.readouterr().err
    assert not (tmp_path / "single").exists()
    code = run_cli(lambda argv: classification.main([*arguments, "--partial_input", "both", "--output_dir",
                                                str(tmp_path / "both")], pairs=True))
    assert code != 0 and "--partial_input must be 'first' or 'second'" in capsys.readouterr().err


@pytest.mark.parametrize("family", ALL_FAMILIES)
def test_generation(family, checkpoints, data, tmp_path):
    auto_class = transformers.AutoModel if family == "bert" else transformers.AutoModelForCausalLM
    base = _checkpoint(checkpoints, family, auto_class)
    out = str(tmp_path / "gen")
    # GPT on E2E (CSV, several references per input), the others on parallel text files (PREFIX.mr / PREFIX.en).
    if family == "gpt":
        files = ["--train_file", data["e2e_train"], "--validation_file", data["e2e_valid"],
                 "--test_file", data["e2e_valid"]]
    else:
        files = ["--train_file", data["parallel_train"], "--validation_file", data["parallel_valid"],
                 "--test_file", data["parallel_valid"], "--source_lang", "mr", "--target_lang", "en"]
    results = generation.main(["--model_name_or_path", base, *files, "--output_dir", out, "--predict_with_generate",
                               "--max_target_length", "12", *COMMON])
    assert results == _read_results(out)
    for key in ("eval_bleu", "predict_bleu"):
        assert 0.0 <= results[key] <= 100.0, key
    for key in ("eval_rouge1", "eval_rougeL"):
        assert 0.0 <= results[key] <= 1.0, key
    assert 0 <= results["eval_gen_len"] <= 12
    seq2seq = family == "bert"
    auto_class = transformers.AutoModelForSeq2SeqLM if seq2seq else transformers.AutoModelForCausalLM
    model, tokenizer = _assert_saved(out, base, files[1], auto_class)
    generation_config = model.generation_config
    assert generation_config.eos_token_id is not None and generation_config.pad_token_id is not None
    # Neither the unknown-word token (a word-level vocabulary would otherwise emit it for every name) nor padding is
    # generated, unless it doubles as the token that starts or ends generation.
    unknown = (AutoTokenizer.from_pretrained(out) if not seq2seq else tokenizer).unk_token_id
    needed = set()
    for ids in (generation_config.eos_token_id, generation_config.bos_token_id):
        needed.update(ids if isinstance(ids, list) else [ids])  # older transformers save eos as a list
    never = [i for i in dict.fromkeys([unknown, generation_config.pad_token_id]) if i is not None and i not in needed]
    assert generation_config.suppress_tokens == never and never
    if seq2seq:
        assert isinstance(model, transformers.EncoderDecoderModel)
        assert model.config.decoder_start_token_id == tokenizer.cls_token_id
        assert generation_config.eos_token_id in (tokenizer.sep_token_id, [tokenizer.sep_token_id])  # as above
    predictions = _lines(os.path.join(out, "generated_predictions.txt"))
    distinct_sources = len({row.split('",')[0] for row in _lines(data["e2e_valid"])[1:]}) if family == "gpt" else 8
    assert len(predictions) == distinct_sources


# --------------------------------------------------------------------------- beyond the cells


def test_bert_encoder_with_a_gpt_decoder(checkpoints, data, tmp_path):
    if not {"bert", "gpt"} <= set(checkpoints):
        pytest.skip("bert and gpt needed")
    out = str(tmp_path / "bert2gpt")
    results = generation.main(["--model_name_or_path", checkpoints["bert"], "--decoder_model_name_or_path",
                               checkpoints["gpt"], "--train_file", data["parallel_train"], "--validation_file",
                               data["parallel_valid"], "--source_lang", "mr", "--target_lang", "en",
                               "--predict_with_generate", "--max_target_length", "8", "--output_dir", out,
                               *[a for a in COMMON if a != "--do_predict"]])
    assert 0.0 <= results["eval_bleu"] <= 100.0
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(out)
    assert type(model.decoder).__name__ == "LineageGPTForCausalLM" and model.config.decoder.add_cross_attention
    decoder_tokenizer = AutoTokenizer.from_pretrained(os.path.join(out, "decoder_tokenizer"))
    assert model.config.decoder_start_token_id == decoder_tokenizer.bos_token_id


def test_decoder_only_generation_strips_the_prompt_and_left_padding_changes_nothing(checkpoints, tmp_path):
    """What the causal-LM trainer returns for a batch of left-padded prompts is, row by row, what generate gives
    for that prompt alone, without the prompt."""
    if "gpt" not in checkpoints:
        pytest.skip("gpt needed")
    tokenizer = AutoTokenizer.from_pretrained(checkpoints["gpt"])
    model = transformers.AutoModelForCausalLM.from_pretrained(checkpoints["gpt"]).eval()
    model.generation_config = transformers.GenerationConfig(eos_token_id=-1, pad_token_id=0, max_new_tokens=5,
                                                            do_sample=False)  # eos never: always 5 new tokens
    sources = ["A man rides a horse .", "Dogs", "Two people walk on a beach at sunset ."]
    batch = generation.encode_causal({"source": sources, "target": ["x"] * 3}, tokenizer, 32, 8, with_prompt=True)
    features = [{k: batch[k][i] for k in batch} for i in range(3)]
    inputs = generation.DataCollatorForCausalGeneration(tokenizer.pad_token_id)(features)
    assert (inputs["prompt_attention_mask"][:, -1] == 1).all()  # left-padded: every prompt ends at the right
    args = transformers.Seq2SeqTrainingArguments(str(tmp_path / "x"), predict_with_generate=True, use_cpu=True,
                                                 report_to="none")
    trainer = generation.CausalLMGenerationTrainer(model=model, args=args, data_collator=None)
    loss, generated, labels = trainer.prediction_step(model, inputs, prediction_loss_only=False)
    assert torch.isfinite(loss) and generated.shape == (3, 5)
    for i, source in enumerate(sources):
        prompt = torch.tensor([batch["prompt_input_ids"][i]])
        alone = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=5, do_sample=False,
                               eos_token_id=-1, pad_token_id=0)
        assert torch.equal(generated[i], alone[0, prompt.shape[1]:])
    # Labels cover the target and its <eos> only: the source and the separator are -100.
    n_prompt = len(batch["prompt_input_ids"][0])
    assert (labels[0, :n_prompt] == -100).all() and labels[0, n_prompt:].ne(-100).sum() == 2


@pytest.mark.parametrize("family", ["bert", "gpt", "nnlm", "word2vec", "elmo"])
def test_freeze_base_trains_only_the_task_layers(family, checkpoints, data, tmp_path):
    base = _checkpoint(checkpoints, family, transformers.AutoModelForSequenceClassification)
    out = str(tmp_path / "frozen")
    args = ["--model_name_or_path", base, "--train_file", data["sst2_train"], "--output_dir", out, "--freeze_base",
            *[a for a in COMMON if a not in ("--do_eval", "--do_predict")]]
    results = classification.main(args)
    assert 0 < results["trainable_parameters"] < results["parameters"]
    before = transformers.AutoModelForSequenceClassification.from_pretrained(base)
    after = transformers.AutoModelForSequenceClassification.from_pretrained(out)
    # The pretrained input embeddings did not move (GPT's three added task tokens are new rows, not compared).
    old = before.get_input_embeddings().weight
    torch.testing.assert_close(after.get_input_embeddings().weight[: old.shape[0]], old, rtol=0, atol=0)
    changed = [name for name, p in after.named_parameters()
               if name in dict(before.named_parameters()) and "classifier" in name
               and not torch.equal(p, dict(before.named_parameters())[name])]
    assert changed, "the classifier did not train"


@pytest.mark.parametrize("family, head", [("bert", ["--task_head", "scalar_mix"]), ("elmo", [])])
def test_frozen_feature_memo_gives_the_same_scores_and_runs_each_sentence_once(family, head, checkpoints, data,
                                                                                tmp_path, monkeypatch):
    """``--cache_frozen_features`` (the lineage's frozen cells): three epochs of a frozen head on the same sentences
    score as without it, and the frozen network ran once per distinct sentence (training and evaluation)."""
    from hf_lineage.models import feature_memo_lineage_utils

    base = _checkpoint(checkpoints, family, transformers.AutoModelForTokenClassification)
    monkeypatch.setenv("HF_LINEAGE_CACHE", str(tmp_path / "cache"))  # nothing kept from another test's run
    memos = []
    real_init = feature_memo_lineage_utils.LayersMemo.__init__
    monkeypatch.setattr(feature_memo_lineage_utils.LayersMemo, "__init__",
                        lambda self, *args, **kwargs: memos.append(self) or real_init(self, *args, **kwargs))

    def run(name, *flags):
        return labeling.main(["--model_name_or_path", base, "--train_file", data["conllu"], "--validation_file",
                              data["conllu"], "--max_train_samples", "40", "--max_eval_samples", "16",
                              "--output_dir", str(tmp_path / name), "--freeze_base", *head, *flags,
                              *[a for a in COMMON if a != "--do_predict"], "--num_train_epochs", "3"])

    plain = run("plain")
    assert not memos
    remembered = run("memo", "--cache_frozen_features")
    assert round(remembered["eval_accuracy"], 4) == round(plain["eval_accuracy"], 4)
    assert remembered["eval_loss"] == pytest.approx(plain["eval_loss"], rel=1e-4)
    assert remembered["train_loss"] == pytest.approx(plain["train_loss"], rel=1e-4)
    (memo,) = memos
    assert 0 < memo.computed <= 40 + 16  # each distinct training or evaluation sentence once
    assert memo.reused >= 2 * memo.computed  # three epochs and an evaluation read them back
    assert len(list((tmp_path / "cache" / "frozen-layers").glob("*/*.npy"))) == memo.computed  # for later runs


def test_pos_tagging_on_conllu_uses_accuracy(checkpoints, data, tmp_path):
    base = _checkpoint(checkpoints, "bert", transformers.AutoModelForTokenClassification)
    out = str(tmp_path / "pos")
    results = labeling.main(["--model_name_or_path", base, "--train_file", data["conllu"], "--validation_file",
                             data["conllu"], "--max_train_samples", "40", "--max_eval_samples", "16",
                             "--output_dir", out, *[a for a in COMMON if a != "--do_predict"]])
    assert 0.0 <= results["eval_accuracy"] <= 1.0 and "eval_f1" not in results
    labels = set(AutoConfig.from_pretrained(out).label2id)
    assert {"NOUN", "VERB", "PUNCT"} <= labels


@pytest.mark.parametrize("granularity", ["coarse", "fine"])
def test_question_classification_on_trec_files(granularity, checkpoints, data, tmp_path):
    """TREC as distributed (``COARSE:fine question`` lines, ``*.label``): coarse classes (TREC-6) or the whole
    ``COARSE:fine`` label (TREC-50)."""
    base = _checkpoint(checkpoints, "bert", transformers.AutoModelForSequenceClassification)
    out = str(tmp_path / "trec")
    results = classification.main(["--model_name_or_path", base, "--train_file", data["trec_train"],
                                   "--validation_file", data["trec_test"], "--trec_labels", granularity,
                                   "--output_dir", out, *[a for a in COMMON if a != "--do_predict"]])
    assert 0.0 <= results["eval_accuracy"] <= 1.0 and results["eval_samples"] == 12
    labels = set(AutoConfig.from_pretrained(out).label2id)
    if granularity == "coarse":
        assert labels == {"ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"}
    else:
        assert len(labels) == 22 and {"DESC:manner", "ENTY:other", "LOC:other"} <= labels


def test_unlabelled_test_file_gets_predictions_without_scores(checkpoints, data, tmp_path):
    base = _checkpoint(checkpoints, "bert", transformers.AutoModelForSequenceClassification)
    out = str(tmp_path / "sst2")
    results = classification.main(["--model_name_or_path", base, "--train_file", data["sst2_train"],
                                   "--test_file", data["sst2_test_unlabelled"], "--output_dir", out,
                                   *[a for a in COMMON if a != "--do_eval"]])
    assert "predict_accuracy" not in results and results["predict_samples"] == 8
    rows = [row.split("\t") for row in _lines(os.path.join(out, "predictions.tsv"))[1:]]
    assert len(rows) == 8 and all(row[2] == "" and row[3] in {"0", "1"} for row in rows)
    # Evaluating the fine-tuned model without training reads the labels from its config.
    again = classification.main(["--model_name_or_path", out, "--validation_file", data["sst2_valid"],
                                 "--output_dir", str(tmp_path / "eval-only"), "--do_eval", "--report_to", "none",
                                 "--use_cpu", "true"])
    assert 0.0 <= again["eval_accuracy"] <= 1.0


# --------------------------------------------------------------------------- bad input


def _fails_cleanly(main, argv, out, capsys, *expected):
    assert run_cli(main, argv) == 2
    message = capsys.readouterr().err
    for text in expected:
        assert text in message, message
    assert not os.path.exists(out), "a failed run left an output directory"


def test_unknown_label_in_the_validation_file(checkpoints, data, tmp_path, capsys):
    base = _checkpoint(checkpoints, "bert", transformers.AutoModelForSequenceClassification)
    lines = _lines(data["sst2_valid"])
    bad = _write(tmp_path / "dev.tsv", lines[:5] + [lines[5].rsplit("\t", 1)[0] + "\t2"] + lines[6:])
    out = str(tmp_path / "out")
    _fails_cleanly(classification.main, ["--model_name_or_path", base, "--train_file", data["sst2_train"],
                                         "--validation_file", bad, "--output_dir", out, *COMMON[:2]],
                   out, capsys, bad, "label '2'")


def test_conll_line_with_the_wrong_number_of_columns(checkpoints, data, tmp_path, capsys):
    base = _checkpoint(checkpoints, "bert", transformers.AutoModelForTokenClassification)
    lines = _lines(data["conll_train"])
    lines[3] = lines[3] + " EXTRA"
    bad = _write(tmp_path / "eng.train", lines)
    out = str(tmp_path / "out")
    _fails_cleanly(labeling.main, ["--model_name_or_path", base, "--train_file", bad, "--output_dir", out,
                                   "--do_train"], out, capsys, f"{bad}:4", "columns")


@pytest.mark.parametrize("name", ["eng.testa", "dev.tsv", "val.csv"])
def test_empty_file(name, checkpoints, data, tmp_path, capsys):
    base = _checkpoint(checkpoints, "bert", transformers.AutoModelForSequenceClassification)
    empty = tmp_path / name
    empty.write_text("")
    out = str(tmp_path / "out")
    main = labeling.main if name.startswith("eng") else classification.main
    train = data["conll_train"] if name.startswith("eng") else data["sst2_train"]
    _fails_cleanly(main, ["--model_name_or_path", base, "--train_file", train, "--validation_file", str(empty),
                          "--output_dir", out, "--do_train", "--do_eval"], out, capsys, str(empty), "empty file")


def test_a_model_that_cannot_do_the_task(tmp_path, data, capsys):
    # A vision transformer has no token-classification class (nor do lineage families before their heads exist).
    folder = tmp_path / "vit"
    transformers.ViTConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=1).save_pretrained(folder)
    out = str(tmp_path / "out")
    _fails_cleanly(labeling.main, ["--model_name_or_path", str(folder), "--train_file", data["conll_train"],
                                   "--output_dir", out, "--do_train"],
                   out, capsys, "a model that cannot do sequence labeling", "AutoModelForTokenClassification")


def test_nothing_to_do_and_missing_files(tmp_path, capsys, data):
    out = str(tmp_path / "out")
    _fails_cleanly(classification.main, ["--model_name_or_path", "x", "--output_dir", out], out, capsys,
                   "--do_train")
    _fails_cleanly(classification.main, ["--model_name_or_path", "x", "--output_dir", out, "--do_train"], out,
                   capsys, "--train_file")
    _fails_cleanly(classification.main, ["--model_name_or_path", "x", "--train_file", str(tmp_path / "no.tsv"),
                                         "--output_dir", out, "--do_train"], out, capsys, "no such file")
    # The same through `hf-lineage finetune <task> ...`.
    from hf_lineage import cli

    assert cli.main(["finetune", "sentence_pairs", "--model_name_or_path", "x", "--output_dir", out]) == 2
    assert "--do_train" in capsys.readouterr().err and not os.path.exists(out)


# --------------------------------------------------------------------------- the script entry


def test_recipe_script_runs_as_a_program(checkpoints, data, tmp_path):
    base = _checkpoint(checkpoints, "bert", transformers.AutoModelForSequenceClassification)
    out = tmp_path / "script"
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, str(REPO / "recipes" / "sentence_pairs.py"), "--model_name_or_path", base, "--train_file",
         data["mrpc_train"], "--validation_file", data["mrpc_valid"], "--output_dir", str(out),
         "--max_train_samples", "16", *[a for a in COMMON if a != "--do_predict"]],
        env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert 0.0 <= _read_results(out)["eval_accuracy"] <= 1.0


# --------------------------------------------------------------------------- data plumbing (no training)


def test_hub_datasets_are_mapped_onto_the_task_columns(monkeypatch):
    """--dataset_name goes through datasets.load_dataset (mocked here: no network in tests); ClassLabel ids become
    their names, GLUE's -1 ("no label") in test splits drops the label column, tag sequences are named too."""
    import datasets

    from hf_lineage.tasks.recipe_arguments import DataTrainingArguments
    from hf_lineage.tasks.splits import load_splits

    sst2 = datasets.DatasetDict({
        "train": datasets.Dataset.from_dict(
            {"sentence": ["good", "bad"], "label": [1, 0], "idx": [0, 1]},
            features=datasets.Features({"sentence": datasets.Value("string"),
                                        "label": datasets.ClassLabel(names=["negative", "positive"]),
                                        "idx": datasets.Value("int32")})),
        "test": datasets.Dataset.from_dict(
            {"sentence": ["meh"], "label": [-1], "idx": [0]},
            features=datasets.Features({"sentence": datasets.Value("string"),
                                        "label": datasets.ClassLabel(names=["negative", "positive"]),
                                        "idx": datasets.Value("int32")})),
    })
    ner = datasets.DatasetDict({"train": datasets.Dataset.from_dict(
        {"tokens": [["EU", "rejects"]], "ner_tags": [[3, 0]]},
        features=datasets.Features({"tokens": datasets.Sequence(datasets.Value("string")),
                                    "ner_tags": datasets.Sequence(datasets.ClassLabel(names=["O", "B-PER", "I-PER",
                                                                                             "B-ORG"]))}))})
    translation = datasets.DatasetDict({"train": datasets.Dataset.from_dict(
        {"translation": [{"de": "Ein Hund", "en": "A dog"}]})})
    hub = {"glue": sst2, "conll2003": ner, "wmt": translation}
    monkeypatch.setattr(datasets, "load_dataset", lambda name, config=None: hub[name])
    args = transformers.TrainingArguments("unused", do_train=True, do_predict=True)

    splits = load_splits("classification", DataTrainingArguments(dataset_name="glue", dataset_config_name="sst2"),
                         args)
    assert splits["train"].dataset.to_dict() == {"sentence": ["good", "bad"], "label": ["positive", "negative"]}
    assert splits["test"].dataset.column_names == ["sentence"] and splits["test"].source == "glue/sst2 test"
    args = transformers.TrainingArguments("unused", do_train=True)
    splits = load_splits("sequence_labeling", DataTrainingArguments(dataset_name="conll2003"), args)
    assert splits["train"].dataset[0] == {"tokens": ["EU", "rejects"], "tags": ["B-ORG", "O"]}
    data_args = DataTrainingArguments(dataset_name="wmt", source_lang="de", target_lang="en")
    splits = load_splits("generation", data_args, args)
    assert splits["train"].dataset[0] == {"source": "Ein Hund", "target": "A dog"}


def test_max_eval_samples_counts_distinct_generation_inputs(data):
    """E2E has one row per reference: --max_eval_samples N keeps the first N meaning representations with all their
    references (scoring is per input), --max_train_samples N the first N rows (each row is a training pair)."""
    from hf_lineage.tasks.recipe_arguments import DataTrainingArguments
    from hf_lineage.tasks.splits import load_splits, read_data_file

    sources = read_data_file(data["e2e_valid"], "generation", DataTrainingArguments())["source"]
    first_two = list(dict.fromkeys(sources))[:2]
    expected_rows = sum(s in first_two for s in sources)
    assert expected_rows > 2  # the fixture has several references for these MRs
    args = transformers.TrainingArguments("unused", do_train=True, do_eval=True, do_predict=True)
    data_args = DataTrainingArguments(train_file=data["e2e_train"], validation_file=data["e2e_valid"],
                                      test_file=data["e2e_valid"], max_train_samples=2, max_eval_samples=2,
                                      max_predict_samples=1)
    splits = load_splits("generation", data_args, args)
    assert len(splits["train"].dataset) == 2
    assert len(splits["validation"].dataset) == expected_rows
    assert list(dict.fromkeys(splits["validation"].dataset["source"])) == first_two
    assert set(splits["test"].dataset["source"]) == {first_two[0]}
    assert len(splits["test"].dataset) == sources.count(first_two[0])


def test_files_of_unknown_name_are_read_by_content(data, tmp_path):
    """CoNLL-2003 is distributed as train.txt, TREC as train_5500.label: their first lines say what they are."""
    from hf_lineage.tasks.recipe_arguments import DataTrainingArguments
    from hf_lineage.tasks.splits import read_data_file

    args = DataTrainingArguments()
    conllu = tmp_path / "ud.txt"
    conllu.write_text(open(data["conllu"], encoding="utf-8").read(), encoding="utf-8")
    assert read_data_file(str(conllu), "sequence_labeling", args)[:] == read_conllu(data["conllu"])[:]
    ner = read_data_file(data["conll_train"], "sequence_labeling", args)
    assert ner[0]["tags"][:3] == ["B-PER", "I-PER", "O"]  # the NER column, IOB1 converted to IOB2
    prose = _write(tmp_path / "notes.txt", ["Just some text.", "Nothing tabular here."])
    with pytest.raises(ValueError, match=r"notes.txt: unknown format '.txt', and the first lines are not CoNLL"):
        read_data_file(prose, "sequence_labeling", args)


def test_label_maps_come_from_the_training_data():
    import datasets

    from hf_lineage.tasks.splits import Split, build_label_maps

    def split(labels, source):
        return Split(datasets.Dataset.from_dict({"sentence": ["x"] * len(labels), "label": labels}), source)

    config = transformers.PretrainedConfig()  # default LABEL_0/LABEL_1: not a fine-tuned checkpoint
    labels, label2id = build_label_maps({"train": split(["10", "2", "2", "1"], "t.csv")}, "label", config)
    assert labels == ["1", "2", "10"]  # numeric names sorted as numbers, any number of classes
    labels, _ = build_label_maps({"train": split(["neutral", "contradiction", "entailment"], "t.csv")}, "label",
                                 config)
    assert labels == ["contradiction", "entailment", "neutral"]
    with pytest.raises(ValueError, match=r"v\.csv: label 'maybe' does not occur"):
        build_label_maps({"train": split(["yes", "no"], "t.csv"), "validation": split(["maybe"], "v.csv")}, "label",
                         config)
    # A fine-tuned checkpoint keeps its own label order when it knows every training label.
    tuned = transformers.PretrainedConfig(id2label={0: "yes", 1: "no"})
    assert build_label_maps({"train": split(["no", "yes"], "t.csv")}, "label", tuned)[0] == ["yes", "no"]


def test_pair_encoding_reaches_gpt_and_bert_and_cross_is_refused_for_the_siamese_families():
    from hf_lineage.tasks.classification import pair_encoding_override

    for config in (hf_lineage.LineageBertConfig.from_named("tiny"), hf_lineage.LineageGPTConfig.from_named("tiny")):
        assert pair_encoding_override(config, "siamese") == {"pair_encoding": "siamese"}
        assert pair_encoding_override(config, None) == {}
    nnlm = hf_lineage.LineageNNLMConfig.from_named("tiny")
    assert pair_encoding_override(nnlm, "siamese") == {}  # what it does anyway
    with pytest.raises(ValueError, match="reads each sentence of a pair on its own"):
        pair_encoding_override(nnlm, "cross")


def test_gpt_pair_transformation_default_follows_the_dataset():
    from hf_lineage.tasks.classification import default_pair_task
    from hf_lineage.tasks.recipe_arguments import DataTrainingArguments

    assert default_pair_task(DataTrainingArguments(train_file="glue_mrpc/train.tsv")) == "similarity"
    assert default_pair_task(DataTrainingArguments(dataset_name="glue", dataset_config_name="qqp")) == "similarity"
    assert default_pair_task(DataTrainingArguments(train_file="glue_rte/train.tsv")) == "entailment"
    assert default_pair_task(DataTrainingArguments(train_file="mine.csv")) == "entailment"


def test_a_left_to_right_model_labels_each_word_at_its_last_token():
    """GPT has read a whole word only at its last BPE token ("run" of "running" says nothing of "-ning"); models that
    read both ways keep transformers' first-token convention."""
    from hf_lineage.tasks.labeling import tokenize_and_align

    tokenizer = _build_tokenizer("gpt", ["the dog runs", "a cat sleeps"] * 20)
    words = ["the", "dogs", "unbelievably", "sleeping"]
    examples = {"tokens": [words], "tags": [["DET", "NOUN", "ADV", "VERB"]]}
    label2id = {"DET": 0, "NOUN": 1, "ADV": 2, "VERB": 3}
    pieces = [len(tokenizer(" " + w, add_special_tokens=False)["input_ids"]) for w in words]
    assert max(pieces) > 1  # rare words split into several tokens
    first = tokenize_and_align(examples, tokenizer, label2id, 64)
    last = tokenize_and_align(examples, tokenizer, label2id, 64, last_token=True)
    for encoding in (first, last):  # one labelled token per word, carrying its tag
        labelled = [p for p, label in enumerate(encoding["labels"][0]) if label != -100]
        assert labelled == encoding["first_tokens"][0]
        assert [encoding["labels"][0][p] for p in labelled] == [0, 1, 2, 3]
    word_of = first.word_ids(0)
    for word, (f, l) in enumerate(zip(first["first_tokens"][0], last["first_tokens"][0])):
        assert word_of[f] == word_of[l] == word
        assert f == word_of.index(word) and l == len(word_of) - 1 - word_of[::-1].index(word)
        assert (l > f) == (pieces[word] > 1)


@pytest.mark.parametrize("family", ["gpt", "bert"])
def test_pre_split_words_are_encoded_as_in_running_text(family):
    """GPT's byte-level BPE marks a word's leading space in its tokens (Ġcat); pre-split words must get the tokens
    they have in running text, not the in-word forms (c, at) the model saw only inside words. WordPiece is unchanged."""
    from hf_lineage.tasks.labeling import tokenize_and_align

    tokenizer = _build_tokenizer(family, [" the dog runs fast", " a cat sleeps"] * 20)
    words = ["the", "cat", "runs", "unbelievably"]
    encoding = tokenize_and_align({"tokens": [words]}, tokenizer, {}, 64)
    running = tokenizer((" " if family == "gpt" else "") + " ".join(words))["input_ids"]
    assert encoding["input_ids"][0] == running
    if family == "gpt":
        assert tokenizer.convert_ids_to_tokens(encoding["input_ids"][0])[1] == "Ġcat"


@pytest.mark.parametrize("trainer_class", [classification.ClassificationTrainer, labeling.LabelingTrainer,
                                           generation.GenerationTrainer])
def test_predictions_keep_the_inputs_order_when_training_batches_are_grouped_by_length(trainer_class, tmp_path):
    """transformers 5 groups evaluation batches by length as well under train_sampling_strategy="group_by_length",
    and predict() returns them in that order; the recipes write one prediction per input row, so they must not."""
    from datasets import Dataset

    class LengthModel(torch.nn.Module):  # predicts each input's length: the predictions' order shows in their values
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(()))

        def forward(self, input_ids, attention_mask, labels=None):
            logits = attention_mask.sum(dim=1, keepdim=True).float() * self.scale
            return {"loss": (logits - labels[:, None]).pow(2).mean(), "logits": logits}

    lengths = [3, 9, 1, 7, 5, 2, 8, 4, 6, 10] * 5
    dataset = Dataset.from_dict({"input_ids": [[1] * n for n in lengths], "labels": [float(n) for n in lengths]})

    def pad(rows):
        width = max(len(row["input_ids"]) for row in rows)
        mask = torch.tensor([[1] * len(row["input_ids"]) + [0] * (width - len(row["input_ids"])) for row in rows])
        return {"input_ids": mask.clone(), "attention_mask": mask, "labels": torch.tensor([r["labels"] for r in rows])}

    args = transformers.Seq2SeqTrainingArguments(output_dir=str(tmp_path), train_sampling_strategy="group_by_length",
                                                 per_device_eval_batch_size=4, report_to="none", use_cpu=True)
    trainer = trainer_class(model=LengthModel(), args=args, data_collator=pad)
    predicted = trainer.predict(dataset).predictions.reshape(-1).tolist()
    assert predicted == [float(n) for n in lengths]
