"""Multiple choice as a task type (``hf_lineage/tasks/multiple_choice.py``, ``recipes/multiple_choice.py``): the recipe
end to end on transformers' SWAG layout and the embedded cloze for GPT, BERT, a static-vector family and ELMo;
the choices' order (a permutation of the choices permutes the scores; the label follows its choice); bad input
refused before any output; the static heads train and save; the cloze sample's manifest, README and baselines."""

import csv
import hashlib
import json
import os

import pytest
import torch
import transformers
from transformers import AutoModelForMultipleChoice, AutoTokenizer

import hf_lineage
from hf_lineage import samples
from hf_lineage.experiments import baselines
from hf_lineage.tasks import TASKS, multiple_choice
from hf_lineage.tasks import run_cli

CLOZE = samples.SAMPLES / "cloze"
COMMON = ["--do_train", "--do_eval", "--do_predict", "--num_train_epochs", "1", "--per_device_train_batch_size", "4",
          "--per_device_eval_batch_size", "4", "--learning_rate", "1e-3", "--report_to", "none", "--save_strategy",
          "no", "--disable_tqdm", "true", "--log_level", "error", "--use_cpu", "true", "--seed", "0",
          "--max_seq_length", "48"]
SWAG_COLUMNS = ["video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source", "ending0", "ending1", "ending2",
                "ending3", "label"]


def _rows(split, n=None):
    with open(CLOZE / f"cloze.{split}.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return rows if n is None else rows[:n]


def _write_swag_csv(path, rows):
    """Cloze rows in SWAG's own CSV columns (run_swag.py's layout): the context split into sent1 and sent2."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=SWAG_COLUMNS)
        writer.writeheader()
        for i, row in enumerate(rows):
            before, _, after = row["context"].partition("___")
            writer.writerow({"video-id": f"v{i}", "fold-ind": i, "startphrase": before, "sent1": before.strip(),
                             "sent2": "", "gold-source": "gold", "label": row["label"],
                             **{f"ending{k}": f"{row[f'ending{k}']} {after.strip()}" for k in range(4)}})
    return str(path)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("mc-data")
    files = {"swag_train": _write_swag_csv(root / "swag_train.csv", _rows("train", 16)),
             "swag_valid": _write_swag_csv(root / "swag_val.csv", _rows("validation", 8))}
    for split, n in (("train", 16), ("validation", 8)):
        path = root / f"cloze.{split}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in _rows(split, n)), encoding="utf-8")
        files[f"cloze_{split}"] = str(path)
    return files


def _texts():
    rows = _rows("train", 16) + _rows("validation", 8)
    return [r["context"] for r in rows] + [r[f"ending{k}"] for r in rows for k in range(4)]


def _tokenizer(family):
    from hf_lineage.tokenization import train_bpe_tokenizer, train_wordlevel_tokenizer, train_wordpiece_tokenizer

    texts = _texts()
    if family == "bert":
        return train_wordpiece_tokenizer(iterator=texts, vocab_size=400, min_frequency=1, model_max_length=64)
    if family == "gpt":
        return train_bpe_tokenizer(iterator=texts, vocab_size=400, min_frequency=1, model_max_length=64)
    words = train_wordlevel_tokenizer(iterator=texts)
    if family != "elmo":
        return words
    from hf_lineage.models.tokenization_lineage_elmo import LineageElmoTokenizer

    return LineageElmoTokenizer(vocab=["<pad>", "<UNK>", "<S>", "</S>"]
                                + words.convert_ids_to_tokens(list(range(4, len(words)))))


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """A tiny pre-training checkpoint (random weights) and tokenizer of GPT, BERT, word2vec and ELMo."""
    root = tmp_path_factory.mktemp("mc-checkpoints")
    paths = {}
    for family in ("gpt", "bert", "word2vec", "elmo"):
        tokenizer = _tokenizer(family)
        config_class, _ = hf_lineage.registry.family_classes(family)
        sizes = {"max_position_embeddings": 64} if family in ("bert", "gpt") else {"task_hidden_size": 8}
        config = config_class.from_named("tiny", vocab_size=len(tokenizer), **sizes)
        transformers.AutoModelForPreTraining.from_config(config).save_pretrained(root / family)
        tokenizer.save_pretrained(root / family)
        paths[family] = str(root / family)
    return paths


# --------------------------------------------------------------------------- the recipe end to end


@pytest.mark.parametrize("family, layout", [("gpt", "swag"), ("bert", "cloze"), ("word2vec", "cloze"),
                                            ("elmo", "swag")])
def test_the_recipe_trains_evaluates_predicts_and_saves(family, layout, checkpoints, data, tmp_path):
    base, out = checkpoints[family], tmp_path / "mc"
    train, valid = data[f"{layout}_train"], data[f"{layout}_valid" if layout == "swag" else "cloze_validation"]
    results = TASKS["multiple_choice"].main(["--model_name_or_path", base, "--train_file", train, "--validation_file",
                                             valid, "--test_file", valid, "--output_dir", str(out), *COMMON])
    assert results == json.loads((out / "all_results.json").read_text())
    assert 0.0 <= results["eval_accuracy"] <= 1.0 and results["eval_samples"] == 8
    assert results["eval_accuracy"] == results["predict_accuracy"]  # same file, same model
    model = AutoModelForMultipleChoice.from_pretrained(out)
    assert type(model).__name__.endswith("ForMultipleChoice") and model.config.model_type == f"lineage-{family}"
    with open(out / "predictions.tsv", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    assert rows[0] == ["index", "context", "choice0", "choice1", "choice2", "choice3", "label", "prediction"]
    assert len(rows) == 9 and all(row[-1] in "0123" for row in rows[1:])
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "multiple choice" in card and os.path.basename(train) in card and "eval_accuracy" in card
    if family == "gpt":  # the paper's transformation, saved with the tokenizer: <s> context $ choice <e>
        tokenizer = AutoTokenizer.from_pretrained(out)
        ids = tokenizer("a b", "c")["input_ids"]
        assert tokenizer.convert_ids_to_tokens([ids[0], ids[-1]]) == ["<s>", "<e>"] and "$" in \
            tokenizer.convert_ids_to_tokens(ids)


def test_the_command_line_runs_it_on_the_shipped_cloze_sample(checkpoints, tmp_path):
    from hf_lineage import cli

    out = tmp_path / "cloze"
    assert cli.main(["finetune", "multiple_choice", "--model_name_or_path", checkpoints["bert"],
                     "--train_file", str(CLOZE / "cloze.train.jsonl"), "--validation_file",
                     str(CLOZE / "cloze.validation.jsonl"), "--max_train_samples", "8", "--max_eval_samples", "4",
                     "--output_dir", str(out), *[a for a in COMMON if a != "--do_predict"]]) == 0
    assert json.loads((out / "all_results.json").read_text())["eval_samples"] == 4


def test_the_swag_columns_are_read_as_run_swag_reads_them(tmp_path):
    """sent1 is the context; sent2 starts every ending (run_swag.py: ``f"{sent2} {ending}"``)."""
    from transformers import TrainingArguments

    from hf_lineage.tasks import read_data_file
    from hf_lineage.tasks.recipe_arguments import DataTrainingArguments

    path = tmp_path / "swag.csv"
    path.write_text("sent1,sent2,ending0,ending1,ending2,label\nA man sits.,He,eats.,flies.,sings.,2\n",
                    encoding="utf-8")
    data_args = DataTrainingArguments(train_file=str(path))
    splits = multiple_choice.load_splits(multiple_choice.MultipleChoiceArguments(), data_args,
                                         TrainingArguments(output_dir=str(tmp_path / "o"), do_train=True))
    row = splits["train"].dataset[0]
    assert row == {"context": "A man sits.", "choices": ["He eats.", "He flies.", "He sings."], "label": 2}
    reordered = multiple_choice.MultipleChoiceArguments(choice_columns=["ending2", "ending0"])
    raw = read_data_file(str(path), "multiple_choice", data_args).remove_columns("label")
    standardized = multiple_choice.standardize(raw, reordered, data_args, str(path))
    assert standardized[0] == {"context": "A man sits.", "choices": ["He sings.", "He eats."]}


# --------------------------------------------------------------------------- the choices' order


def _batch(family, tokenizer, rows):
    gpt = family == "gpt"
    if gpt:
        from hf_lineage.data.gpt_tasks import set_gpt_task_template

        set_gpt_task_template(tokenizer)
    examples = {"context": [r["context"] for r in rows],
                "choices": [[r[f"ending{k}"] for k in range(4)] for r in rows], "label": [r["label"] for r in rows]}
    encoded = multiple_choice.encode_batch(examples, tokenizer, 48, gpt)
    features = [{name: values[i] for name, values in encoded.items()} for i in range(len(rows))]
    if gpt:
        from hf_lineage.data.gpt_tasks import DataCollatorForGPTTasks

        return DataCollatorForGPTTasks(tokenizer.pad_token_id)(features)
    return multiple_choice.DataCollatorForMultipleChoice(tokenizer)(features)


@pytest.mark.parametrize("family", ["gpt", "bert", "word2vec", "elmo"])
def test_permuting_the_choices_permutes_the_scores_and_the_label_follows_its_choice(family, checkpoints):
    from hf_lineage.data.gpt_tasks import add_gpt_task_tokens

    tokenizer = AutoTokenizer.from_pretrained(checkpoints[family])
    model = AutoModelForMultipleChoice.from_pretrained(checkpoints[family]).eval()
    if family == "gpt":
        add_gpt_task_tokens(tokenizer, model)
    rows = _rows("validation", 3)
    order = [2, 0, 3, 1]  # new position k holds old choice order[k]
    permuted = [{**r, **{f"ending{k}": r[f"ending{order[k]}"] for k in range(4)}, "label": order.index(r["label"])}
                for r in rows]
    batch, moved = _batch(family, tokenizer, rows), _batch(family, tokenizer, permuted)
    assert batch["input_ids"].shape[:2] == (3, 4) and moved["labels"].tolist() == [order.index(r["label"])
                                                                                    for r in rows]
    with torch.no_grad():
        logits, moved_logits = model(**batch).logits, model(**moved).logits
    torch.testing.assert_close(moved_logits, logits[:, order], rtol=1e-4, atol=1e-5)
    assert not torch.allclose(logits[:, 0], logits[:, 1])  # the choices are scored, not ignored
    # A label is an index into the choices as given: kept while its choice moves, it names another choice.
    with torch.no_grad():
        stale, right = model(**{**moved, "labels": batch["labels"]}).loss, model(**moved).loss
    torch.testing.assert_close(right, torch.nn.functional.cross_entropy(moved_logits, moved["labels"]))
    torch.testing.assert_close(stale, torch.nn.functional.cross_entropy(moved_logits, batch["labels"]))
    assert stale != right


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("change, message", [
    (lambda r: {k: v for k, v in r.items() if k != "context"}, "no context column"),
    (lambda r: {k: v for k, v in r.items() if not k.startswith("ending")}, "no choice columns"),
    (lambda r: {**r, "label": 4}, "has label 4, but there are 4 choices"),
    (lambda r: {**r, "label": "yes"}, "a label is the index of the right choice"),
    (lambda r: {**r, "ending3": ""}, "no text for choice 3"),
])
def test_bad_input_is_one_error_line_and_no_output(change, message, checkpoints, tmp_path, capsys):
    rows = _rows("train", 6)
    rows[3] = change(rows[3])
    if "context column" in message or "choice columns" in message or "index of" in message:
        rows = [change(r) for r in rows]  # a whole column (a JSON column of mixed types is the reader's error)
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    status = run_cli(TASKS["multiple_choice"].main, ["--model_name_or_path", checkpoints["bert"], "--train_file",
                                                     str(path), "--output_dir", str(out), "--do_train"])
    assert status == 2 and message in capsys.readouterr().err
    assert not out.exists()


def test_ragged_choice_lists_and_a_family_without_the_task_are_refused(checkpoints, tmp_path, capsys):
    path = tmp_path / "ragged.jsonl"
    path.write_text(json.dumps({"context": "a ___ b", "choices": ["x", "y", "z"], "label": 0}) + "\n"
                    + json.dumps({"context": "c ___ d", "choices": ["x", "y"], "label": 1}) + "\n", encoding="utf-8")
    argv = ["--model_name_or_path", checkpoints["bert"], "--train_file", str(path), "--output_dir",
            str(tmp_path / "out"), "--do_train"]
    assert run_cli(TASKS["multiple_choice"].main, argv) == 2
    assert "example 0 has 3 choices but example 1 has 2 (ragged choices)" in capsys.readouterr().err
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps(r) + "\n" for r in _rows("train", 4)), encoding="utf-8")
    argv[3] = str(good)
    assert run_cli(TASKS["multiple_choice"].main, [*argv, "--task_head", "scalar_mix"]) == 2
    assert "multiple choice has the papers' heads only" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- the static and ELMo heads


@pytest.mark.parametrize("family", ["nnlm", "word2vec", "svd", "elmo"])
def test_the_frozen_family_heads_train_and_save(family, tmp_path):
    config_class, _ = hf_lineage.registry.family_classes(family)
    config = config_class.from_named("tiny", vocab_size=30, task_hidden_size=8)
    model = AutoModelForMultipleChoice.from_config(config)
    assert type(model).__name__.endswith("ForMultipleChoice")
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(4, 30, (6, 3, 7), generator=generator)
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids),
             "token_type_ids": (torch.arange(7) >= 5).long().expand_as(ids).clone(),
             "labels": torch.tensor([0, 1, 2, 0, 1, 2])}
    if family == "elmo":
        batch["char_ids"] = torch.randint(1, 100, (6, 3, 7, config.max_characters_per_token), generator=generator)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    model.train()
    losses = []
    for _ in range(25):
        loss = model(**batch).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    model.eval()
    model.save_pretrained(tmp_path)
    loaded = AutoModelForMultipleChoice.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        torch.testing.assert_close(loaded(**batch).logits, model(**batch).logits)
        with pytest.raises(ValueError, match="labels contain 3, but there are 3 choices"):
            model(**{**batch, "labels": torch.tensor([0, 1, 3, 0, 1, 2])})
        with pytest.raises(ValueError, match=r"shape \(batch, num_choices, sequence\)"):
            model(input_ids=ids[:, 0])


# --------------------------------------------------------------------------- the cloze sample and its baselines


def test_the_cloze_sample_matches_its_manifest_and_readme():
    manifest = json.loads((CLOZE / "manifest.json").read_text(encoding="utf-8"))
    readme = (CLOZE / "README.md").read_text(encoding="utf-8")
    assert "CC BY-SA 4.0" in readme and "UD English EWT" in readme and "scripts/make_cloze_sample.py" in readme
    assert set(manifest["files"]) == {f"cloze.{s}.jsonl" for s in ("train", "validation", "test")}
    for name, entry in manifest["files"].items():
        data = (CLOZE / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], name
        rows = [json.loads(line) for line in data.decode("utf-8").splitlines()]
        line = next(line for line in readme.splitlines() if line.startswith(f"| `{name}` |"))
        assert len(rows) == entry["examples"] and line.endswith(f"| {entry['examples']:,} |")
        assert os.path.basename(entry["source"]) in line
        assert {str(k): sum(r["label"] == k for r in rows) for k in range(4)} == entry["label_counts"]
        for row in rows:  # one blank, four distinct one-word choices, the right one not elsewhere in the sentence
            choices = baselines.choices_of(row)
            assert row["context"].split().count("___") == 1 and len(set(choices)) == 4
            assert choices[row["label"]] not in row["context"].lower().split()
    assert len((CLOZE / "cloze.train.jsonl").read_bytes()) < 500_000


def test_the_cloze_baselines_are_between_chance_and_perfect_and_the_readme_reports_them():
    readme = (CLOZE / "README.md").read_text(encoding="utf-8")
    train = _rows("train")
    scores = {}
    for split in ("validation", "test"):
        rows = _rows(split)
        for name, baseline in (("majority", baselines.majority_position),
                               ("word frequency", baselines.most_frequent_choice),
                               ("edge word", baselines.edge_word_choice)):
            predicted = baseline(train, rows)
            accuracy = sum(p == r["label"] for p, r in zip(predicted, rows)) / len(rows)
            assert 0.0 < accuracy < 1.0, (split, name)
            scores.setdefault(name, []).append(f"{accuracy:.3f}")
        assert baselines.majority_position(train, rows) == [0] * len(rows)  # balanced positions: a tie, the lowest
    for name, (validation, test) in scores.items():  # the README's table: | name | validation | test |
        assert f"| {name} | {validation} | {test} |" in readme, name
    assert float(scores["edge word"][0]) > float(scores["majority"][0])  # the words next to the blank tell something


def test_the_lineage_runs_the_cloze_only_when_named_and_scores_its_baselines(tmp_path):
    from hf_lineage.lineage import scoring, settings, stage_data

    assert "cloze" not in settings.DEFAULT_TASKS and settings.TASKS["cloze"].kind == "multiple_choice"
    settings.check_arguments(settings.LineageArguments(tasks=["labeling", "cloze"]))
    train_file, validation_file = settings.SAMPLE_PATHS["cloze"]
    data = stage_data.prepare_task_data("cloze", {"train": str(train_file), "validation": str(validation_file)},
                                        [300], 200, 50, tmp_path)
    train = stage_data.read_task_file("cloze", data["files"]["train-300"])
    validation = stage_data.read_task_file("cloze", data["files"]["validation"])
    assert train.column_names == ["context", "choices", "label"] and len(validation) == 200
    summaries = {summary["name"]: summary for summary, _ in scoring.score_baselines("cloze", train, validation)}
    assert list(summaries) == ["majority position", "word frequency", "edge word"]
    assert all(0.0 < s["score"] < 1.0 for s in summaries.values())
    assert summaries["edge word"]["score"] > summaries["majority position"]["score"]
