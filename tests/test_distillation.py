"""Task distillation (hf_lineage.compression.distillation and recipes/distillation.py): the loss at its ends, the
student really learning from the teacher's soft targets (a teacher with permuted labels is copied, not the gold
labels), DistilBERT's layer-subset student, token-level distillation ignoring padding, and the recipe end to end
on the tiny task data with a BERT and a word2vec-BiLSTM student, plus its refusals of bad input."""

import json

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from transformers import TrainingArguments
from transformers.modeling_outputs import SequenceClassifierOutput

from hf_lineage import LineageBertConfig, LineageWord2VecConfig
from hf_lineage.compression import distillation_recipe
from hf_lineage.compression.distillation import (
    DistillationCollator,
    DistillationTrainer,
    bert_student,
    distillation_loss,
    spaced_layers,
)
from hf_lineage.models.modeling_lineage_bert import (
    LineageBertForSequenceClassification,
    LineageBertForTokenClassification,
)
from hf_lineage.models.modeling_lineage_word2vec import LineageWord2VecForPreTraining

from task_data import build_task_data

NO_DROPOUT = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
QUIET = dict(report_to="none", disable_tqdm=True, log_level="error", use_cpu=True, save_strategy="no")


# --------------------------------------------------------------------------- the loss


def test_alpha_zero_is_cross_entropy_and_alpha_one_is_temperature_squared_kl():
    torch.manual_seed(0)
    student, teacher = torch.randn(6, 4), torch.randn(6, 4)
    labels = torch.tensor([0, 3, -100, 1, 2, 2])
    torch.testing.assert_close(distillation_loss(student, teacher, labels, temperature=3.0, alpha_soft=0.0),
                               F.cross_entropy(student, labels, ignore_index=-100))
    t = 3.0
    p_teacher = torch.softmax(teacher / t, -1)
    kl = (p_teacher * (p_teacher.log() - torch.log_softmax(student / t, -1))).sum(-1).mean()  # written out by hand
    torch.testing.assert_close(distillation_loss(student, teacher, labels, temperature=t, alpha_soft=1.0),
                               kl * t * t)
    mixed = distillation_loss(student, teacher, labels, temperature=t, alpha_soft=0.3)
    torch.testing.assert_close(mixed, 0.3 * kl * t * t + 0.7 * F.cross_entropy(student, labels, ignore_index=-100))
    # a student that already predicts what the teacher does has nothing left to learn from it
    same = distillation_loss(teacher, teacher, labels, temperature=t, alpha_soft=1.0)
    assert same.item() == pytest.approx(0, abs=1e-6)
    # unlabelled rows only: no hard term, the soft term alone (weighted by alpha)
    unlabelled = torch.full((6,), -100)
    torch.testing.assert_close(distillation_loss(student, teacher, unlabelled, temperature=t, alpha_soft=0.5),
                               0.5 * kl * t * t)


def test_the_loss_refuses_mismatched_label_sets_and_bad_settings():
    with pytest.raises(ValueError, match="same labels"):
        distillation_loss(torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match="alpha_soft"):
        distillation_loss(torch.zeros(2, 3), torch.zeros(2, 3), None, alpha_soft=1.5)
    with pytest.raises(ValueError, match="temperature"):
        distillation_loss(torch.zeros(2, 3), torch.zeros(2, 3), None, temperature=0)


# --------------------------------------------------------------------------- the student learns the teacher


VOCAB, CLASSES, PER_CLASS = 50, 3, 15


def bag_of_words_data(n, seed):
    """Sentences of 6 words all drawn from one class's 15-word range; the gold label is that class."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, CLASSES, (n,), generator=generator)
    ids = 5 + labels[:, None] * PER_CLASS + torch.randint(0, PER_CLASS, (n, 6), generator=generator)
    return ids, labels


class PermutedTeacher(nn.Module):
    """Knows the task perfectly but names class c as (c + 1) % 3: its logits put 4 nats on the permuted class."""

    def forward(self, input_ids, attention_mask=None, **kwargs):
        gold = ((input_ids[:, 0] - 5) // PER_CLASS).clamp(0, CLASSES - 1)
        return SequenceClassifierOutput(logits=4.0 * F.one_hot((gold + 1) % CLASSES, CLASSES).float())


class Rows(torch.utils.data.Dataset):
    def __init__(self, ids, labels):
        self.ids, self.labels = ids, labels

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": self.labels[i]}


def train_student(tmp_path, alpha_soft):
    torch.manual_seed(0)
    config = LineageBertConfig.from_named("tiny", vocab_size=VOCAB, num_hidden_layers=1, num_attention_heads=2,
                                          hidden_size=32, intermediate_size=64, num_labels=CLASSES, **NO_DROPOUT)
    student = LineageBertForSequenceClassification(config)
    ids, labels = bag_of_words_data(240, seed=1)
    args = TrainingArguments(output_dir=str(tmp_path / f"alpha{alpha_soft}"), num_train_epochs=8,
                             per_device_train_batch_size=16, learning_rate=3e-3, seed=0, **QUIET)
    trainer = DistillationTrainer(model=student, teacher=PermutedTeacher(), args=args, train_dataset=Rows(ids, labels),
                                  temperature=2.0, alpha_soft=alpha_soft)
    trainer.train()
    test_ids, test_labels = bag_of_words_data(300, seed=2)
    with torch.no_grad():
        predicted = student.eval()(input_ids=test_ids).logits.argmax(-1)
    permuted = (test_labels + 1) % CLASSES
    return (predicted == permuted).float().mean().item(), (predicted == test_labels).float().mean().item()


def test_a_student_on_soft_targets_only_learns_the_teachers_permuted_labels_not_the_gold_ones(tmp_path):
    agrees_with_teacher, agrees_with_gold = train_student(tmp_path, alpha_soft=1.0)
    assert agrees_with_teacher > 0.9 and agrees_with_gold < 0.1  # chance is 1/3 for both
    # The same run on the hard labels only learns the gold labels: the teacher term is what made the difference.
    agrees_with_teacher, agrees_with_gold = train_student(tmp_path, alpha_soft=0.0)
    assert agrees_with_gold > 0.9 and agrees_with_teacher < 0.1


def test_the_teacher_stays_in_eval_mode_without_gradients(tmp_path):
    torch.manual_seed(0)
    config = LineageBertConfig.from_named("tiny", vocab_size=VOCAB, num_hidden_layers=1, num_labels=CLASSES)
    teacher = LineageBertForSequenceClassification(config).train()
    before = {k: v.clone() for k, v in teacher.state_dict().items()}
    student = bert_student(teacher, 1)
    seen = []
    teacher.register_forward_hook(lambda module, args, output: seen.append((module.training, torch.is_grad_enabled())))
    ids, labels = bag_of_words_data(32, seed=3)
    args = TrainingArguments(output_dir=str(tmp_path / "t"), max_steps=2, per_device_train_batch_size=16, **QUIET)
    DistillationTrainer(model=student, teacher=teacher, args=args, train_dataset=Rows(ids, labels)).train()
    assert seen == [(False, False)] * 2
    assert all(torch.equal(before[k], v) for k, v in teacher.state_dict().items())


# --------------------------------------------------------------------------- DistilBERT's student


def test_spaced_layers_keep_every_kth_layer_down_from_the_top():
    assert spaced_layers(12, 6) == [1, 3, 5, 7, 9, 11]
    assert spaced_layers(6, 2) == [2, 5] and spaced_layers(2, 1) == [1] and spaced_layers(4, 4) == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        spaced_layers(4, 5)


@pytest.mark.parametrize("head", [LineageBertForSequenceClassification, LineageBertForTokenClassification])
def test_the_layer_subset_student_copies_the_teachers_selected_layers_embeddings_and_head(head, tmp_path):
    torch.manual_seed(0)
    config = LineageBertConfig.from_named("tiny", vocab_size=60, num_hidden_layers=4, num_labels=3, **NO_DROPOUT)
    teacher = head(config).eval()
    student = bert_student(teacher, 2)
    assert student.config.num_hidden_layers == 2 and teacher.config.num_hidden_layers == 4
    teacher_weights, student_weights = teacher.state_dict(), student.state_dict()
    for name, value in student_weights.items():
        if ".encoder.layer." in name:
            prefix, rest = name.split(".encoder.layer.")
            index, rest = rest.split(".", 1)
            source = f"{prefix}.encoder.layer.{[1, 3][int(index)]}.{rest}"
        else:
            source = name  # embeddings, pooler, classifier
        assert torch.equal(value, teacher_weights[source]), name
    assert not any(".encoder.layer.2." in n for n in student_weights)
    # its own weights: training the student leaves the teacher as it was
    with torch.no_grad():
        next(student.parameters()).add_(1.0)
    assert not torch.equal(next(student.parameters()), next(teacher.parameters()))
    # and it saves and loads as a 2-layer model computing what it computed
    ids = torch.randint(5, 60, (2, 7))
    with torch.no_grad():
        expected = student.eval()(input_ids=ids).logits
    student.save_pretrained(tmp_path / "student")
    loaded = head.from_pretrained(tmp_path / "student").eval()
    assert len(loaded.bert.encoder.layer) == 2
    with torch.no_grad():
        torch.testing.assert_close(loaded(input_ids=ids).logits, expected)


def test_a_student_of_a_pruned_teacher_keeps_the_pruned_heads_of_its_layers():
    torch.manual_seed(0)
    config = LineageBertConfig.from_named("tiny", vocab_size=60, num_hidden_layers=4, num_attention_heads=4,
                                          num_labels=2)
    teacher = LineageBertForSequenceClassification(config)
    teacher.prune_heads({1: [0], 2: [1, 2], 3: [3]})
    student = bert_student(teacher, 2)
    assert student.config.pruned_heads == {0: [0], 1: [3]}
    assert [layer.attention.num_heads for layer in student.bert.encoder.layer] == [3, 3]


# --------------------------------------------------------------------------- token level


def test_token_level_distillation_reads_only_the_labelled_tokens_not_the_padding(tmp_path):
    torch.manual_seed(0)
    config = LineageBertConfig.from_named("tiny", vocab_size=VOCAB, num_hidden_layers=1, num_labels=4, **NO_DROPOUT)
    student = LineageBertForTokenClassification(config)
    args = TrainingArguments(output_dir=str(tmp_path / "tok"), **QUIET)
    trainer = DistillationTrainer(model=student, args=args, temperature=2.0, alpha_soft=1.0)
    ids = torch.randint(5, VOCAB, (2, 6))
    mask = torch.ones_like(ids)
    mask[1, 3:] = 0
    labels = torch.tensor([[-100, 1, 2, 0, 3, -100], [-100, 2, -100, -100, -100, -100]])
    teacher = torch.randn(2, 6, 4)
    student.train()
    loss = trainer.compute_loss(student, {"input_ids": ids, "attention_mask": mask, "labels": labels,
                                          "teacher_logits": teacher})
    garbage = teacher.clone()
    garbage[labels == -100] = 100.0 * torch.randn(int((labels == -100).sum()), 4)  # padding, special tokens
    same = trainer.compute_loss(student, {"input_ids": ids, "attention_mask": mask, "labels": labels,
                                          "teacher_logits": garbage})
    torch.testing.assert_close(loss, same)
    changed = teacher.clone()
    changed[0, 2] = torch.tensor([5.0, -5.0, 0.0, 0.0])  # a labelled token
    other = trainer.compute_loss(student, {"input_ids": ids, "attention_mask": mask, "labels": labels,
                                           "teacher_logits": changed})
    assert not torch.allclose(loss, other)


def test_the_collator_puts_each_words_teacher_logits_on_the_students_token_of_that_word():
    def pad(features):
        width = max(len(f["input_ids"]) for f in features)
        return {"input_ids": torch.tensor([f["input_ids"] + [0] * (width - len(f["input_ids"])) for f in features])}

    collator = DistillationCollator(pad, num_labels=2)
    batch = collator([{"input_ids": [1, 7, 8, 9, 2], "teacher_logits": [[1, 2], [3, 4], [5, 6]],
                       "teacher_positions": [1, 3, -1]},  # the third word was cut off by one of the tokenizers
                      {"input_ids": [1, 7, 2], "teacher_logits": [[7, 8]], "teacher_positions": [1]}])
    assert batch["distill_mask"].tolist() == [[False, True, False, True, False], [False, True, False, False, False]]
    assert batch["teacher_logits"][0, 3].tolist() == [3, 4] and batch["teacher_logits"][1, 1].tolist() == [7, 8]
    assert batch["teacher_logits"][1, 3:].abs().sum() == 0  # padding
    left = DistillationCollator(pad, num_labels=2, padding_side="left")  # the same rows padded on the left
    assert left([{"input_ids": [1, 7, 2], "teacher_logits": [[7, 8]], "teacher_positions": [1]},
                 {"input_ids": [1, 7, 8, 2], "teacher_logits": [[0, 0]], "teacher_positions": [1]}]
                )["distill_mask"][0].tolist() == [False, False, True, False]


# --------------------------------------------------------------------------- the recipe


COMMON = ["--do_train", "--do_eval", "--num_train_epochs", "2", "--per_device_train_batch_size", "8",
          "--per_device_eval_batch_size", "8", "--learning_rate", "1e-3", "--report_to", "none", "--save_strategy",
          "no", "--disable_tqdm", "true", "--log_level", "error", "--use_cpu", "true", "--seed", "0"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return build_task_data(tmp_path_factory.mktemp("task-data"))


def save_teacher(folder, head, tokenizer, labels, layers=2):
    """A lineage BERT saved as a task recipe saves a fine-tuned one (random weights: what it teaches is its own)."""
    torch.manual_seed(0)
    config = LineageBertConfig.from_named("tiny", vocab_size=len(tokenizer), num_hidden_layers=layers,
                                          max_position_embeddings=128, id2label=dict(enumerate(labels)),
                                          label2id={n: i for i, n in enumerate(labels)})
    head(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def word2vec(tmp_path_factory, data):
    from hf_lineage.tokenization import train_wordlevel_tokenizer

    texts = [line for key in ("sst2_train", "sst2_valid") for line in open(data[key], encoding="utf-8")]
    texts += [" ".join(line.split("\t")[1:2]) for line in open(data["conllu"], encoding="utf-8") if "\t" in line]
    tokenizer = train_wordlevel_tokenizer(iterator=texts)
    folder = tmp_path_factory.mktemp("word2vec")
    config = LineageWord2VecConfig.from_named("tiny", vocab_size=len(tokenizer), task_hidden_size=8)
    LineageWord2VecForPreTraining(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_the_recipe_distils_a_bert_classifier_into_fewer_layers_with_augmentation_text(tmp_path, data,
                                                                                        wordpiece_tokenizer):
    teacher = save_teacher(tmp_path / "teacher", LineageBertForSequenceClassification, wordpiece_tokenizer, ["0", "1"])
    augmentation = tmp_path / "unlabelled.txt"
    augmentation.write_text("a nice family friendly place\n\nnot for children\nthe food is cheap\n")
    out = tmp_path / "out"
    results = distillation_recipe.run(*distillation_recipe.parse_arguments(
        ["--teacher_model_name_or_path", teacher, "--student", "bert-layers:1", "--train_file", data["sst2_train"],
         "--validation_file", data["sst2_valid"], "--augmentation_file", str(augmentation), "--alpha_soft", "0.7",
         "--temperature", "3", "--output_dir", str(out), *COMMON]))
    summary = json.loads((out / "distillation.json").read_text())
    assert summary["augmentation_examples"] == 3 and summary["temperature"] == 3.0
    assert results["train_samples"] == 40 + 3  # the labelled rows and the unlabelled ones
    assert summary["student_parameters"] < summary["teacher_parameters"]
    assert 0 <= summary["teacher_eval"]["accuracy"] <= 1 and 0 <= summary["student_eval"]["accuracy"] <= 1
    assert summary["kept"] == pytest.approx(summary["student_eval"]["accuracy"] / summary["teacher_eval"]["accuracy"])
    student = LineageBertForSequenceClassification.from_pretrained(out)
    assert student.config.num_hidden_layers == 1 and student.config.id2label == {0: "0", 1: "1"}
    assert "bert-layers:1" in (out / "README.md").read_text()


def test_the_recipe_distils_sentence_pairs_into_a_word2vec_bilstm_that_reads_both_sentences(tmp_path, data, word2vec,
                                                                                             wordpiece_tokenizer):
    teacher = save_teacher(tmp_path / "teacher", LineageBertForSequenceClassification, wordpiece_tokenizer, ["0", "1"])
    augmentation = tmp_path / "pairs.txt"
    augmentation.write_text("a cheap place\tan inexpensive place\nkid friendly\tnot for children\n")
    out = tmp_path / "out"
    distillation_recipe.run(*distillation_recipe.parse_arguments(
        ["--task", "sentence_pairs", "--teacher_model_name_or_path", teacher, "--student", f"bilstm:{word2vec}",
         "--train_file", data["mrpc_train"], "--validation_file", data["mrpc_valid"], "--augmentation_file",
         str(augmentation), "--output_dir", str(out), *COMMON]))
    summary = json.loads((out / "distillation.json").read_text())
    assert summary["augmentation_examples"] == 2 and 0 <= summary["student_eval"]["accuracy"] <= 1
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    student = AutoModelForSequenceClassification.from_pretrained(out)
    assert student.config.model_type == "lineage-word2vec" and student.config.id2label == {0: "0", 1: "1"}
    # the student reads a pair as two segments (what its head splits into u and v), as the teacher does
    import datasets

    pairs = datasets.Dataset.from_dict({"sentence1": ["a cheap place"], "sentence2": ["an inexpensive place"]})
    for folder in (out, teacher):
        encoded, _ = distillation_recipe.encode(pairs, "sentence_pairs", AutoConfig.from_pretrained(folder),
                                                AutoTokenizer.from_pretrained(folder), 64, {"0": 0, "1": 1}, "pairs")
        assert 0 in encoded["token_type_ids"][0] and 1 in encoded["token_type_ids"][0]
    with pytest.raises(ValueError, match="two tab-separated"):
        distillation_recipe.read_augmentation(str(tmp_path / "out" / "README.md"), "sentence_pairs", None)


def test_the_recipe_distils_a_bert_tagger_into_a_word2vec_bilstm_across_tokenizers(tmp_path, data, word2vec):
    from hf_lineage.data.readers import read_conllu
    from hf_lineage.tokenization import train_wordpiece_tokenizer

    rows = read_conllu(data["conllu"])
    tags = sorted({t for row in rows for t in row["tags"]})
    words = [" ".join(row["tokens"]) for row in rows]
    tokenizer = train_wordpiece_tokenizer(iterator=words, vocab_size=200, min_frequency=1, model_max_length=128)
    teacher = save_teacher(tmp_path / "teacher", LineageBertForTokenClassification, tokenizer, tags)
    out = tmp_path / "out"
    distillation_recipe.run(*distillation_recipe.parse_arguments(
        ["--task", "sequence_labeling", "--teacher_model_name_or_path", teacher, "--student",
         f"bilstm-word2vec:{word2vec}", "--student_hidden_size", "12", "--train_file", data["conllu"],
         "--validation_file", data["conllu"], "--max_train_samples", "40", "--max_eval_samples", "20",
         "--output_dir", str(out), *COMMON]))
    summary = json.loads((out / "distillation.json").read_text())
    assert summary["metric"] == "accuracy" and 0 < summary["teacher_eval"]["accuracy"] <= 1
    from transformers import AutoModelForTokenClassification

    student = AutoModelForTokenClassification.from_pretrained(out)
    assert student.config.model_type == "lineage-word2vec" and student.config.task_hidden_size == 12
    assert list(student.config.id2label.values()) == tags


def test_the_teachers_predictions_land_on_the_same_words_in_the_students_encoding(data, word2vec,
                                                                                    wordpiece_tokenizer):
    """What the recipe scores as the teacher on the student's positions is the teacher's own word-level output."""
    from transformers import AutoTokenizer

    rows = [{"tokens": ["The", "quickest", "fox"], "tags": ["DET", "ADJ", "NOUN"]}]
    import datasets

    dataset = datasets.Dataset.from_list(rows)
    labels = ["ADJ", "DET", "NOUN"]
    label2id = {n: i for i, n in enumerate(labels)}
    torch.manual_seed(0)
    teacher = LineageBertForTokenClassification(LineageBertConfig.from_named(
        "tiny", vocab_size=len(wordpiece_tokenizer), num_labels=3)).eval()
    teacher_encoded, collator = distillation_recipe.encode(dataset, "sequence_labeling", teacher.config,
                                                           wordpiece_tokenizer, 64, label2id, "t")
    logits = distillation_recipe.teacher_predictions(teacher, teacher_encoded, collator, wordpiece_tokenizer, 4,
                                                     "cpu")
    with torch.no_grad():
        full = teacher(input_ids=torch.tensor(teacher_encoded["input_ids"])).logits[0]
    first = teacher_encoded["first_tokens"][0]
    torch.testing.assert_close(torch.tensor(logits[0]), full[first])
    student_tokenizer = AutoTokenizer.from_pretrained(word2vec)
    from transformers import AutoConfig

    student_encoded, _ = distillation_recipe.encode(dataset, "sequence_labeling", AutoConfig.from_pretrained(word2vec),
                                                    student_tokenizer, 64, label2id, "s")
    # [CLS] comes first and "quickest" is several WordPieces: the words sit at other positions in the two encodings
    assert first[0] == 1 and first[2] > 3 and student_encoded["first_tokens"][0] == [0, 1, 2]
    with_columns = distillation_recipe.with_teacher_columns(student_encoded, logits, teacher_encoded["first_tokens"])
    assert with_columns["teacher_positions"][0] == student_encoded["first_tokens"][0]
    on_student = distillation_recipe.teacher_on_student_positions(with_columns, logits,
                                                                  teacher_encoded["first_tokens"], 3)
    for word, position in enumerate(student_encoded["first_tokens"][0]):
        torch.testing.assert_close(torch.tensor(on_student[0, position]), full[first[word]])


def refused(tmp_path, argv, error=ValueError, match=None):
    out = tmp_path / "refused"
    with pytest.raises(error, match=match):
        distillation_recipe.run(*distillation_recipe.parse_arguments([*argv, "--output_dir", str(out), *COMMON]))
    assert not out.exists()


def test_the_recipe_refuses_bad_input_before_writing_anything(tmp_path, data, wordpiece_tokenizer, word2vec):
    teacher = save_teacher(tmp_path / "teacher", LineageBertForSequenceClassification, wordpiece_tokenizer, ["0", "1"])
    sst2 = ["--train_file", data["sst2_train"], "--validation_file", data["sst2_valid"]]
    # a fine-tuned student whose head predicts other labels
    other = save_teacher(tmp_path / "other", LineageBertForSequenceClassification, wordpiece_tokenizer, ["neg", "pos"])
    refused(tmp_path, ["--teacher_model_name_or_path", teacher, "--student", other, *sst2],
            match="different label set")
    swapped = save_teacher(tmp_path / "swapped", LineageBertForSequenceClassification, wordpiece_tokenizer, ["1", "0"])
    refused(tmp_path, ["--teacher_model_name_or_path", teacher, "--student", swapped, *sst2], match="another order")
    # data whose labels the teacher does not have
    refused(tmp_path, ["--teacher_model_name_or_path", other, "--student", "bert-layers:1", *sst2],
            match="not among the teacher's")
    refused(tmp_path, ["--teacher_model_name_or_path", str(tmp_path / "missing"), "--student", "bert-layers:1",
                       *sst2], error=FileNotFoundError)
    refused(tmp_path, ["--teacher_model_name_or_path", teacher, "--student", "bert-layers:1", *sst2,
                       "--augmentation_file", str(tmp_path / "missing.txt")], error=FileNotFoundError)
    refused(tmp_path, ["--teacher_model_name_or_path", teacher, "--student", "bert-layers:2", *sst2],
            match="keeps 1 to 1")
    refused(tmp_path, ["--teacher_model_name_or_path", teacher, "--student", f"bilstm-elmo:{word2vec}", *sst2],
            match="not 'lineage-elmo'")
    refused(tmp_path, ["--teacher_model_name_or_path", teacher, "--student", "bilstm:/no/such/folder", *sst2],
            error=FileNotFoundError)
    # a teacher that was never fine-tuned has no labels to teach
    untrained = tmp_path / "untrained"
    LineageBertForSequenceClassification(LineageBertConfig.from_named(
        "tiny", vocab_size=len(wordpiece_tokenizer))).save_pretrained(untrained)
    wordpiece_tokenizer.save_pretrained(untrained)
    refused(tmp_path, ["--teacher_model_name_or_path", str(untrained), "--student", "bert-layers:1", *sst2],
            match="no label names")
    with pytest.raises(ValueError, match="alpha_soft"):
        distillation_recipe.parse_arguments(["--teacher_model_name_or_path", teacher, "--alpha_soft", "2",
                                             "--output_dir", str(tmp_path / "x")])


def test_the_script_turns_bad_input_into_one_error_line(tmp_path, data):
    import subprocess
    import sys

    from conftest import REPO

    out = tmp_path / "out"
    result = subprocess.run([sys.executable, str(REPO / "recipes" / "distillation.py"), "--teacher_model_name_or_path",
                             str(tmp_path / "missing"), "--student", "bert-layers:1", "--train_file",
                             data["sst2_train"], "--do_train", "--output_dir", str(out)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and result.stderr.strip().startswith("error:") and "missing" in result.stderr
    assert not out.exists()


def test_every_family_with_static_task_heads_makes_a_bilstm_student():
    """The BiLSTM students are read from the family records (``Family.static_task_heads``), so GloVe and svd, whose
    task heads are the same static ones, are students too, and the Transformers are not."""
    from hf_lineage.compression.distillation import static_model_types
    from hf_lineage.models.modeling_lineage_static import StaticVectorsForSequenceClassification
    from hf_lineage.registry import FAMILIES, family_classes

    types = static_model_types()
    assert set(types) == {"lineage-svd", "lineage-nnlm", "lineage-word2vec", "lineage-glove", "lineage-elmo"}
    for family in FAMILIES:
        classifier = getattr(family_classes(family)[1], "AUTO_CLASSES")["AutoModelForSequenceClassification"]
        static = issubclass(getattr(family_classes(family)[1], classifier), StaticVectorsForSequenceClassification)
        assert static == (f"lineage-{family}" in types), family
