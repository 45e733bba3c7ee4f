"""The one task table, ``hf_lineage.tasks.TASKS``: every dispatcher goes through it. ``hf-lineage finetune`` offers
exactly its tasks, each ``recipes/<task>.py`` runs its own entry, the lineage's fine-tuning stage runs a table
entry's ``run`` with the argument dataclasses the entry lists, and ``hf-lineage finetune question_answering`` (the
task the command line lacked) trains and evaluates a tiny BERT on the shipped QA sample end to end."""

import argparse
import ast
import json
import runpy
import sys
from dataclasses import replace

import pytest

from hf_lineage import cli, samples
from hf_lineage.tasks import TASKS

from conftest import REPO

# Recipes of hf_lineage.compression: they train from a fine-tuned model, not one of the table's tasks.
COMPRESSION_RECIPES = {"distillation", "prune_heads"}


def _finetune_choices():
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return next(a for a in commands.choices["finetune"]._actions if a.dest == "task").choices


def test_the_command_line_offers_every_task_of_the_table_and_no_other():
    assert list(_finetune_choices()) == list(TASKS)
    assert "question_answering" in TASKS


def test_every_recipe_script_names_its_own_table_entry():
    scripts = {path.stem: path for path in (REPO / "recipes").glob("*.py")}
    assert set(scripts) - COMPRESSION_RECIPES == set(TASKS)
    for name in TASKS:
        tree = ast.parse(scripts[name].read_text(encoding="utf-8"))
        named = [node.slice.value for node in ast.walk(tree)
                 if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == "TASKS"]
        assert named == [name], scripts[name]


@pytest.fixture
def calls(monkeypatch):
    """Every table entry's ``run`` replaced by one that records what it was given."""
    seen = []

    def recorder(name):
        def run(*arguments, callbacks=None):
            seen.append((name, arguments))
            return {}
        return run

    for name, task in list(TASKS.items()):
        monkeypatch.setitem(TASKS, name, replace(task, run=recorder(name)))
    return seen


@pytest.mark.parametrize("name", list(TASKS))
def test_the_command_line_and_the_recipe_script_run_the_table_entry(name, calls, monkeypatch, tmp_path):
    argv = ["--model_name_or_path", "m", "--output_dir", str(tmp_path), "--do_train", "--learning_rate", "0.5"]
    assert cli.main(["finetune", name, *argv]) == 0
    monkeypatch.setattr(sys, "argv", [f"recipes/{name}.py", *argv])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(REPO / "recipes" / f"{name}.py"), run_name="__main__")
    assert exit_.value.code == 0
    assert [called for called, _ in calls] == [name, name]
    for _, arguments in calls:
        assert [type(a) for a in arguments] == list(TASKS[name].arguments)
        assert arguments[0].model_name_or_path == "m" and arguments[-1].learning_rate == 0.5


@pytest.mark.parametrize("lineage_task, prediction_file, text", [
    ("order_pairs", "predictions.tsv", "index\tsentence1\tsentence2\tlabel\tprediction\n"),
    ("generation", "generated_predictions.txt", ""),
    ("qa", "predict_predictions.json", "{}"),
    ("cloze", "predictions.tsv", "index\tcontext\tchoice0\tchoice1\tchoice2\tchoice3\tlabel\tprediction\n"),
])
def test_the_lineage_fine_tuning_stage_runs_the_table_entry(lineage_task, prediction_file, text, calls, tmp_path):
    from hf_lineage.lineage import experiment, finetuning
    from hf_lineage.lineage.settings import TASKS as LINEAGE_TASKS

    kind = LINEAGE_TASKS[lineage_task].kind
    # The recorded run writes what the stage reads back: the Trainer's state and an (empty) prediction file.
    run = TASKS[kind].run

    def run_and_write(*arguments, callbacks=None):
        output_dir = tmp_path / "cell" / "model"
        output_dir.mkdir(parents=True)
        (output_dir / "trainer_state.json").write_text(json.dumps({"log_history": []}))
        (output_dir / prediction_file).write_text(text, encoding="utf-8")
        return run(*arguments, callbacks=callbacks)

    TASKS[kind] = replace(TASKS[kind], run=run_and_write)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    data = {"train": str(samples.path("qa", "qa.train.jsonl")), "dev": str(empty), "validation": str(empty)}
    finetuning.finetune("bert", lineage_task, "finetuned", tmp_path / "base", data, experiment.SCALES["tiny"],
                        experiment.LineageArguments(), 0, tmp_path / "cell")
    [(name, arguments)] = calls
    assert name == kind and [type(a) for a in arguments] == list(TASKS[kind].arguments)


def test_finetune_question_answering_runs_on_the_shipped_sample(tmp_path):
    import transformers

    import hf_lineage
    from hf_lineage.tokenization import train_wordpiece_tokenizer

    train, validation = (str(samples.path("qa", f"qa.{split}.jsonl")) for split in ("train", "validation"))
    with open(train, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f][:200]
    tokenizer = train_wordpiece_tokenizer(iterator=[r["question"] for r in rows] + [r["context"] for r in rows],
                                          vocab_size=400, min_frequency=1, model_max_length=128)
    config_class, _ = hf_lineage.registry.family_classes("bert")
    config = config_class.from_named("tiny", vocab_size=len(tokenizer), max_position_embeddings=128)
    base = tmp_path / "bert"
    transformers.AutoModelForPreTraining.from_config(config).save_pretrained(base)
    tokenizer.save_pretrained(base)
    out = tmp_path / "qa"
    assert cli.main(["finetune", "question_answering", "--model_name_or_path", str(base), "--train_file", str(train),
                     "--validation_file", str(validation), "--version_2_with_negative", "--max_train_samples", "32",
                     "--max_eval_samples", "16", "--max_seq_length", "64", "--doc_stride", "16", "--do_train",
                     "--do_eval", "--num_train_epochs", "1", "--per_device_train_batch_size", "8",
                     "--report_to", "none", "--save_strategy", "no", "--disable_tqdm", "true", "--log_level", "error",
                     "--use_cpu", "true", "--output_dir", str(out)]) == 0
    results = json.loads((out / "all_results.json").read_text())
    assert 0.0 <= results["eval_f1"] <= 100.0 and results["eval_samples"] == 16
    assert "eval_passage_only_f1" in results  # the recipe's shortcut checks ran
    assert len(json.loads((out / "eval_predictions.json").read_text())) == 16
    assert transformers.AutoModelForQuestionAnswering.from_pretrained(out).config.model_type == "lineage-bert"


def test_no_function_in_tasks_or_compression_is_longer_than_a_screen():
    """The skeleton lives once in tasks/training.py and each step is a function of its own: a function over 80 lines
    (``def`` to its last line) is a place to split."""
    import ast
    from pathlib import Path

    package = Path(__file__).resolve().parents[1] / "hf_lineage"
    long = []
    for folder in ("tasks", "compression"):
        for path in sorted((package / folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = node.end_lineno - node.lineno + 1
                    if length > 80:
                        long.append(f"{folder}/{path.name}:{node.name} ({length} lines)")
    assert not long, long
