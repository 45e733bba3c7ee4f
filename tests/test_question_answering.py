"""Extractive question answering: the QA heads of every family (BERT's against transformers' BertForQuestionAnswering
with the same weights), windows and offsets, reading answers back (n-best, max answer length, doc stride, SQuAD 2.0's
null answer) on hand-built logits, the squad metric against a hand computation, the shipped E2E-derived sample, the
recipe end to end on it (BERT, GPT, NNLM, ELMo) with its shortcut checks, the pipeline, and bad input.
"""

import csv
import importlib.util
import json

import datasets
import pytest
import torch
import transformers
from transformers import AutoModelForQuestionAnswering, AutoTokenizer

import hf_lineage
from hf_lineage import metrics as lineage_metrics
from hf_lineage import samples
from hf_lineage.convert import from_transformers
from hf_lineage.models.pipeline_lineage_question_answering import best_answers, encode_question_context
from hf_lineage.tasks import question_answering as qa
from hf_lineage.tasks import run_cli
from hf_lineage.tokenization import train_bpe_tokenizer, train_wordlevel_tokenizer, train_wordpiece_tokenizer

from conftest import REPO

TRAIN, VALIDATION = str(samples.path("qa", "qa.train.jsonl")), str(samples.path("qa", "qa.validation.jsonl"))
COMMON = ["--do_train", "--do_eval", "--num_train_epochs", "1", "--per_device_train_batch_size", "8",
          "--per_device_eval_batch_size", "16", "--learning_rate", "1e-3", "--report_to", "none", "--save_strategy",
          "no", "--disable_tqdm", "true", "--log_level", "error", "--use_cpu", "true", "--seed", "0",
          "--max_seq_length", "64", "--doc_stride", "16"]
CONTEXT = ("The Eagle is a coffee shop serving Chinese food in the riverside area near Burger King . "
           "It has a high customer rating and is cheap .")


def _rows(path, n=None):
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return rows[:n] if n else rows


def _texts():
    rows = _rows(TRAIN, 400)
    return [r["question"] for r in rows] + [r["context"] for r in rows] + [CONTEXT]


def _tokenizer(family, texts):
    if family == "bert":
        return train_wordpiece_tokenizer(iterator=texts, vocab_size=600, min_frequency=1, model_max_length=128)
    if family == "gpt":
        return train_bpe_tokenizer(iterator=texts, vocab_size=600, min_frequency=1, model_max_length=128)
    words = train_wordlevel_tokenizer(iterator=texts)
    if family not in ("elmo", "elmo-fast"):
        return words
    from hf_lineage.models.tokenization_lineage_elmo import LineageElmoTokenizer, LineageElmoTokenizerFast

    tokenizer_class = LineageElmoTokenizerFast if family == "elmo-fast" else LineageElmoTokenizer
    return tokenizer_class(vocab=["<pad>", "<UNK>", "<S>", "</S>"] + words.convert_ids_to_tokens(
        list(range(4, len(words)))))


def _config(family, vocab_size):
    config_class, _ = hf_lineage.registry.family_classes(family)
    sizes = {"max_position_embeddings": 128} if family in ("bert", "gpt") else {"task_hidden_size": 16}
    return config_class.from_named("tiny", vocab_size=vocab_size, **sizes)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Tiny pre-training checkpoints (random weights) with tokenizers trained on the QA sample."""
    root, texts, paths = tmp_path_factory.mktemp("qa-checkpoints"), _texts(), {}
    for family in ("bert", "gpt", "nnlm", "elmo"):
        tokenizer = _tokenizer(family, texts)
        model = transformers.AutoModelForPreTraining.from_config(_config(family, len(tokenizer)))
        paths[family] = str(root / family)
        model.save_pretrained(paths[family])
        tokenizer.save_pretrained(paths[family])
    return paths


# --------------------------------------------------------------------------- heads


@pytest.mark.parametrize("unpad_inputs", [False, True])
def test_bert_gives_transformers_start_and_end_logits_and_loss_with_the_same_weights(unpad_inputs):
    config = transformers.BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=37, max_position_embeddings=32, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    reference = transformers.BertForQuestionAnswering(config).eval()
    ours = from_transformers(reference).eval()
    ours.config.unpad_inputs = unpad_inputs
    input_ids = torch.randint(5, 60, (3, 12))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[2, 8:] = 0
    token_type_ids = torch.zeros_like(input_ids)
    token_type_ids[:, 5:] = 1
    # The third example's answer lies outside the input: both heads clamp and ignore it.
    positions = dict(start_positions=torch.tensor([6, 0, 40]), end_positions=torch.tensor([7, 0, 41]))
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids, **positions)
    expected, got = reference(**inputs), ours(**inputs)
    assert isinstance(got, transformers.modeling_outputs.QuestionAnsweringModelOutput)
    # Skipping the padding leaves zero states there, so the logits at padded positions (which neither head masks
    # out of its softmax) differ from transformers' and the loss moves with them; at real tokens they are equal.
    real = attention_mask.bool() if unpad_inputs else torch.ones_like(attention_mask, dtype=torch.bool)
    torch.testing.assert_close(got.start_logits[real], expected.start_logits[real], atol=1e-5, rtol=0)
    torch.testing.assert_close(got.end_logits[real], expected.end_logits[real], atol=1e-5, rtol=0)
    if not unpad_inputs:
        torch.testing.assert_close(got.loss, expected.loss, atol=1e-5, rtol=0)
    else:  # the unpadded batch's loss: transformers' formula over our logits
        loss_of = torch.nn.CrossEntropyLoss(ignore_index=12)
        start, end = (p.clamp(0, 12) for p in (positions["start_positions"], positions["end_positions"]))
        by_formula = (loss_of(got.start_logits, start) + loss_of(got.end_logits, end)) / 2
        torch.testing.assert_close(got.loss, by_formula, atol=1e-6, rtol=0)


@pytest.mark.parametrize("family", ["gpt", "nnlm", "word2vec", "svd", "elmo"])
def test_every_family_has_a_span_head_with_transformers_loss(family):
    config = _config(family, 50)
    if family == "gpt":
        config.lm_loss_weight = 0.0  # the task loss alone, to compare with the formula
    model = AutoModelForQuestionAnswering.from_config(config).eval()
    assert type(model).__name__.endswith("ForQuestionAnswering")
    torch.manual_seed(0)
    input_ids = torch.randint(5, 50, (2, 10))
    inputs = dict(input_ids=input_ids, attention_mask=torch.ones_like(input_ids))
    if family != "gpt":
        token_type_ids = torch.zeros_like(input_ids)
        token_type_ids[:, 4:] = 1
        inputs["token_type_ids"] = token_type_ids
    if family == "elmo":
        inputs["char_ids"] = torch.randint(1, 200, (2, 10, 50))
    start, end = torch.tensor([5, 0]), torch.tensor([7, 30])  # 30: outside the input, ignored
    output = model(**inputs, start_positions=start, end_positions=end)
    assert output.start_logits.shape == output.end_logits.shape == (2, 10)
    by_hand = (torch.nn.functional.cross_entropy(output.start_logits, start)
               + torch.nn.functional.cross_entropy(output.end_logits[:1], end[:1])) / 2
    torch.testing.assert_close(output.loss, by_hand)
    output.loss.backward()
    head = model.qa_outputs.weight
    assert head.grad is not None and head.grad.abs().sum() > 0
    if family == "gpt":  # causal: a passage token's logits depend on what came before it only
        changed = input_ids.clone()
        changed[:, 8:] = 5
        again = model(input_ids=changed, attention_mask=inputs["attention_mask"])
        torch.testing.assert_close(again.start_logits[:, :8], output.start_logits[:, :8])
        assert not torch.allclose(again.start_logits[:, 8:], output.start_logits[:, 8:])
    else:  # the question (token type 0) reaches every position through the pooled question vector
        other = dict(inputs, token_type_ids=torch.ones_like(input_ids) - (torch.arange(10) < 2).long())
        assert not torch.allclose(model(**other).start_logits, output.start_logits)


# --------------------------------------------------------------------------- windows and offsets


@pytest.mark.parametrize("family", ["bert", "gpt", "nnlm", "elmo", "elmo-fast"])
def test_windows_overlap_by_the_stride_and_offsets_point_into_the_passage(family):
    tokenizer = _tokenizer(family, _texts())
    if family == "gpt":
        from hf_lineage.data.gpt_tasks import add_gpt_task_tokens, set_gpt_task_template

        add_gpt_task_tokens(tokenizer)
        set_gpt_task_template(tokenizer)
    question = "What is The Eagle near ?"
    windows = encode_question_context(tokenizer, [question, question], ["The Eagle is cheap .", CONTEXT], 24, 4,
                                      segment_ids=family != "gpt")
    assert windows["example_index"][0] == 0 and set(windows["example_index"][1:]) == {1}
    long_windows = [k for k, i in enumerate(windows["example_index"]) if i == 1]
    assert len(long_windows) >= 2  # the passage does not fit one window of 24 tokens
    spans = []
    for k in long_windows:
        assert len(windows["input_ids"][k]) <= 24
        passage = [span for span in windows["offset_mapping"][k] if span is not None]
        assert passage and all(b > a for a, b in passage)
        spans.append(passage)
    for before, after in zip(spans, spans[1:]):
        shared = [span for span in after if span in before]
        assert shared == before[-len(shared):] and len(shared) == 4  # the stride: the last 4 tokens again
    covered = {c for passage in spans for a, b in passage for c in range(a, b)}
    assert all(c in covered for c in range(len(CONTEXT)) if not CONTEXT[c].isspace())  # nothing skipped
    if family in ("nnlm", "elmo", "elmo-fast"):  # word-level: a token is a whitespace-separated word
        assert all(" " not in CONTEXT[a:b] for passage in spans for a, b in passage)


def test_training_labels_are_the_answer_tokens_or_the_null_position(checkpoints):
    tokenizer = AutoTokenizer.from_pretrained(checkpoints["bert"])
    answer = "Burger King"
    examples = {"question": ["What is The Eagle near ?"], "context": [CONTEXT],
                "answers": [{"text": [answer], "answer_start": [CONTEXT.index(answer)]}]}
    features = qa.prepare_train_features(examples, tokenizer, 24, 4)
    holding = 0
    for k, (start, end) in enumerate(zip(features["start_positions"], features["end_positions"])):
        windows = encode_question_context(tokenizer, examples["question"], examples["context"], 24, 4)
        offsets = windows["offset_mapping"][k]
        if start == 0:
            assert end == 0
            continue
        holding += 1
        assert CONTEXT[offsets[start][0]:offsets[end][1]] == answer
    assert holding >= 1 and holding < len(features["start_positions"])


# --------------------------------------------------------------------------- reading answers back


def _window(start, end, offsets):
    return (torch.tensor(start, dtype=torch.float).numpy(), torch.tensor(end, dtype=torch.float).numpy(), offsets)


CTX = "aa bb cc dd ee"
OFFSETS = [None, None, (0, 2), (3, 5), (6, 8), (9, 11), (12, 14), None]  # [CLS] q aa bb cc dd ee [SEP]


def test_the_best_valid_span_wins():
    # The highest start is on a question token and the highest end on [SEP]; end-before-start is invalid too.
    start = [0, 9, 1, 5, 0, 0, 0, 0]
    end = [0, 0, 0, 0, 4, 8, 0, 9]
    answer, nbest, _ = best_answers([_window(start, end, OFFSETS)], CTX, n_best=5, max_answer_length=30)
    assert answer == "bb cc dd" and nbest[0]["start"] == 3 and nbest[0]["end"] == 11
    assert CTX[nbest[0]["start"]:nbest[0]["end"]] == nbest[0]["text"]
    assert abs(sum(c["probability"] for c in nbest) - 1) < 1e-6
    assert [c["score"] for c in nbest] == sorted((c["score"] for c in nbest), reverse=True)
    # max_answer_length=2 rules out the three-token span: the best two-token one is taken instead.
    answer, _, _ = best_answers([_window(start, end, OFFSETS)], CTX, n_best=5, max_answer_length=2)
    assert answer == "bb cc"


def test_the_best_span_over_overlapping_windows_and_the_null_answer():
    # Two windows over one passage (doc stride): the second holds the better span.
    first = _window([0, 0, 3, 1, 0, 0, 0, 0], [0, 0, 0, 3, 0, 0, 0, 0], OFFSETS[:5] + [None] * 3)
    second_offsets = [None, None, (6, 8), (9, 11), (12, 14), None, None, None]
    second = _window([2, 0, 0, 6, 0, 0, 0, 0], [2, 0, 0, 0, 5, 0, 0, 0], second_offsets)
    answer, nbest, null = best_answers([first, second], CTX, n_best=3, max_answer_length=5)
    assert answer == "dd ee" and null == 0.0  # the null score is the smallest over the windows
    # SQuAD 2.0: a null score above the best span's makes the answer empty; v1 keeps the span.
    loud_null = _window([20, 0, 3, 0, 0, 0, 0, 0], [20, 0, 0, 3, 0, 0, 0, 0], OFFSETS)
    assert best_answers([loud_null], CTX, with_null=True)[0] == ""
    assert best_answers([loud_null], CTX, with_null=False)[0] == "aa bb"
    # ... unless the threshold says the null must win by more.
    assert best_answers([loud_null], CTX, with_null=True, null_score_diff_threshold=50.0)[0] == "aa bb"


# --------------------------------------------------------------------------- metric


def test_squad_metric_gives_the_hand_computed_exact_match_and_f1():
    metric = lineage_metrics.load("squad")
    references = [
        {"id": "a", "answers": {"text": ["cat sat on"], "answer_start": [0]}},
        {"id": "b", "answers": {"text": ["The Cat", "a dog"], "answer_start": [0, 9]}},
        {"id": "c", "answers": {"text": [], "answer_start": []}},
        {"id": "d", "answers": {"text": [], "answer_start": []}},
    ]
    predictions = [{"id": "a", "prediction_text": "the cat sat"},  # tokens cat sat vs cat sat on: P 1, R 2/3
                   {"id": "b", "prediction_text": "cat!"},  # normalised equal to "The Cat"
                   {"id": "c", "prediction_text": ""},  # rightly no answer
                   {"id": "d", "prediction_text": "dog"}]  # an answer where there is none
    f1_a = 2 * 1 * (2 / 3) / (1 + 2 / 3)
    scores = metric.compute(predictions=predictions, references=references)
    assert scores["exact_match"] == pytest.approx(100 * 2 / 4)
    assert scores["f1"] == pytest.approx(100 * (f1_a + 1 + 1 + 0) / 4)
    assert scores["HasAns_total"] == 2 and scores["HasAns_f1"] == pytest.approx(100 * (f1_a + 1) / 2)
    assert scores["NoAns_total"] == 2 and scores["NoAns_exact_match"] == pytest.approx(50.0)
    v1 = metric.compute(predictions=predictions[:2], references=references[:2])
    assert set(v1) == {"exact_match", "f1", "total"}


# --------------------------------------------------------------------------- the shipped sample


def _builder():
    """scripts/make_qa_samples.py, the sample's builder (a developer tool beside the others, not in the package)."""
    spec = importlib.util.spec_from_file_location("make_qa_samples", REPO / "scripts" / "make_qa_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_sample_is_reproduced_and_every_answer_is_at_its_offset(tmp_path):
    builder = _builder()
    written = builder.write(tmp_path)
    assert [path.name for path in written] == ["qa.train.jsonl", "qa.validation.jsonl"]
    for path in written:
        assert path.read_bytes() == samples.path("qa", path.name).read_bytes(), path.name
    train, validation = _rows(TRAIN), _rows(VALIDATION)
    assert (len(train), len(validation)) == (3000, 600)
    for rows in (train, validation):
        unanswerable = [r for r in rows if not r["answers"]["text"]]
        assert len(unanswerable) == len(rows) // 3
        for row in rows:
            for text, start in zip(row["answers"]["text"], row["answers"]["answer_start"]):
                assert row["context"][start:start + len(text)] == text
    # Unanswerable questions ask for a slot the reference's MR does not have.
    mrs = {}
    with open(samples.path("lineage", "generation.validation.csv"), encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            mrs.setdefault(row["ref"], []).append(builder.parse_mr(row["mr"]))
    for row in validation:
        if not row["answers"]["text"]:
            assert any(row["slot"] not in mr for mr in mrs[row["context"]])
    assert not {r["context"] for r in train} & {r["context"] for r in validation} - {""}


def test_squad_json_and_flat_lines_read_the_same(tmp_path):
    nested = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": "Paris is in France .", "qas": [
        {"id": "1", "question": "Where is Paris ?", "answers": [{"text": "France", "answer_start": 12}]},
        {"id": "2", "question": "Where is Rome ?", "answers": [], "is_impossible": True}]}]}]}
    (tmp_path / "nested.json").write_text(json.dumps(nested), encoding="utf-8")
    flat = [{"id": "1", "question": "Where is Paris ?", "context": "Paris is in France .",
             "answers": {"text": ["France"], "answer_start": [12]}},
            {"id": "2", "question": "Where is Rome ?", "context": "Paris is in France .",
             "answers": {"text": [], "answer_start": []}}]
    (tmp_path / "flat.jsonl").write_text("".join(json.dumps(r) + "\n" for r in flat), encoding="utf-8")
    arguments = qa.QuestionAnsweringArguments()
    a = qa.standardize_qa(qa.read_qa_file(str(tmp_path / "nested.json")), "nested", arguments)
    b = qa.standardize_qa(qa.read_qa_file(str(tmp_path / "flat.jsonl")), "flat", arguments)
    assert a.to_list() == b.to_list()
    for question in nested["data"][0]["paragraphs"][0]["qas"]:  # a test file without answers
        question.pop("answers")
        question.pop("is_impossible", None)
    (tmp_path / "unlabelled.json").write_text(json.dumps(nested), encoding="utf-8")
    unlabelled = qa.standardize_qa(qa.read_qa_file(str(tmp_path / "unlabelled.json")), "u", arguments)
    assert unlabelled.column_names == ["id", "question", "context"] and len(unlabelled) == 2


def test_distractors_share_the_questions_words_but_not_their_answers():
    examples = qa.standardize_qa(_rows(VALIDATION, 120), "v", qa.QuestionAnsweringArguments())
    distracted, ids = qa.add_distractors(examples, seed=0)
    assert len(ids) == len(distracted) > 20
    originals = {row["id"]: row for row in examples}
    for row in distracted:
        original = originals[row["id"]]
        assert row["context"].startswith(original["context"]) and row["answers"] == original["answers"]
        added = row["context"][len(original["context"]):]
        words = set(added.split())
        assert len(words & set(original["question"].split())) >= 2
        assert all(qa._normalized(t) not in qa._normalized(added) for t in original["answers"]["text"])
        entity = max((original["question"].split()[a:b] for a, b in qa._entity_runs(original["question"].split())),
                     key=len)
        assert " ".join(entity) not in added  # the named entity was swapped
    assert qa.add_distractors(examples, seed=0)[0].to_list() == distracted.to_list()  # deterministic


# --------------------------------------------------------------------------- the recipe


def _assert_pipeline_answers_a_span(folder):
    question = "What is The Eagle near ?"
    for pipe in (qa.question_answering_pipeline(folder),
                 transformers.pipeline("question-answering", model=folder, trust_remote_code=True)):
        answer = pipe(question=question, context=CONTEXT, max_answer_len=4)
        assert answer["answer"] and CONTEXT[answer["start"]:answer["end"]] == answer["answer"]
        assert 0 < answer["score"] <= 1 and len(answer["answer"].split()) <= 4
        several = pipe({"question": question, "context": CONTEXT}, top_k=3)
        assert len(several) == 3 and several[0]["score"] >= several[-1]["score"]


@pytest.mark.parametrize("family", ["bert", "gpt", "nnlm", "elmo"])
def test_recipe_trains_evaluates_with_the_shortcut_checks_and_predicts(family, checkpoints, tmp_path):
    out = tmp_path / "out"
    results = qa.main(["--model_name_or_path", checkpoints[family], "--train_file", TRAIN, "--validation_file",
                       VALIDATION, "--test_file", VALIDATION, "--do_predict", "--version_2_with_negative",
                       "--max_train_samples", "48", "--max_eval_samples", "30", "--max_predict_samples", "10",
                       "--output_dir", str(out), *COMMON])
    for key in ("eval_exact_match", "eval_f1", "eval_HasAns_f1", "eval_NoAns_f1", "eval_passage_only_f1",
                "eval_distractor_f1", "eval_distractor_original_f1", "predict_f1"):
        assert 0.0 <= results[key] <= 100.0, key
    assert results["eval_passage_only_examples"] == 30 and 0 < results["eval_distractor_examples"] < 30
    predictions = json.loads((out / "eval_predictions.json").read_text(encoding="utf-8"))
    contexts = {r["id"]: r["context"] for r in _rows(VALIDATION, 30)}
    assert set(predictions) == set(contexts)
    assert all(answer in contexts[i] for i, answer in predictions.items())
    shortcut = json.loads((out / "eval_shortcut_predictions.json").read_text(encoding="utf-8"))
    assert set(shortcut) == {"passage_only", "distractor"}
    assert (out / "predict_predictions.json").exists()
    assert json.loads((out / "all_results.json").read_text())["eval_f1"] == results["eval_f1"]
    assert "question_answering" in (out / "README.md").read_text(encoding="utf-8")
    assert isinstance(AutoModelForQuestionAnswering.from_pretrained(out), torch.nn.Module)
    _assert_pipeline_answers_a_span(str(out))


def test_the_passage_only_baseline_trains_without_questions(checkpoints, tmp_path):
    results = qa.main(["--model_name_or_path", checkpoints["nnlm"], "--train_file", TRAIN, "--validation_file",
                       VALIDATION, "--version_2_with_negative", "--blank_question", "--max_train_samples", "32",
                       "--max_eval_samples", "16", "--output_dir", str(tmp_path / "out"), *COMMON])
    assert 0 <= results["eval_f1"] <= 100 and not any("passage_only" in k for k in results)


def _bad(tmp_path, rows, capsys, *extra):
    data = tmp_path / "bad.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    argv = ["--model_name_or_path", "unused", "--train_file", str(data), "--output_dir", str(out), "--do_train",
            *extra]
    assert run_cli(lambda a: qa.run(*qa.parse_arguments(a)), argv) == 2
    assert not out.exists()
    return capsys.readouterr().err


def test_bad_input_is_refused_with_a_clear_message(tmp_path, capsys):
    good = {"id": "q1", "question": "Where ?", "context": "In Paris .",
            "answers": {"text": ["Paris"], "answer_start": [3]}}
    err = _bad(tmp_path, [good, {"id": "q2", "question": "Who ?", "context": "Bob ."}], capsys)
    assert "q2" in err and "no 'answers'" in err
    shifted = dict(good, id="q3", answers={"text": ["Paris"], "answer_start": [4]})
    err = _bad(tmp_path, [good, shifted], capsys)
    assert "q3" in err and "not at answer_start 4" in err and "'aris '" in err
    lengths = dict(good, id="q4", answers={"text": ["Paris"], "answer_start": [3, 5]})
    assert "1 answer texts but 2 answer_start" in _bad(tmp_path, [lengths], capsys)
    unanswerable = dict(good, id="q5", answers={"text": [], "answer_start": []})
    assert "--version_2_with_negative" in _bad(tmp_path, [good, unanswerable], capsys)
    assert "no 'question' text" in _bad(tmp_path, [{"id": "q6", "context": "x"}], capsys)
    assert "--blank_question" in _bad(tmp_path, [good], capsys, "--partial_input", "first")


def test_a_question_answering_dataset_from_the_hub_is_read_into_the_task_columns(monkeypatch):
    hub = datasets.DatasetDict({"train": datasets.Dataset.from_list([
        {"id": "5733be284776f41900661182", "title": "University_of_Notre_Dame", "question": "To whom ?",
         "context": "It is a replica of the grotto at Lourdes .",
         "answers": {"text": ["Lourdes"], "answer_start": [33]}}])})
    monkeypatch.setattr(datasets, "load_dataset", lambda name, config=None: hub)
    data_args = qa.DataTrainingArguments(dataset_name="squad")
    training_args = transformers.TrainingArguments(output_dir="unused", do_train=True, report_to="none")
    splits = qa.load_qa_splits(data_args, qa.QuestionAnsweringArguments(), training_args)
    assert splits["train"].dataset.column_names == ["id", "question", "context", "answers"]
    assert splits["train"].source == "squad train"
