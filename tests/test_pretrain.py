"""The pre-training engine: end to end, exact resume after SIGKILL, multi-process equivalence, bad input, Trainer."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForPreTraining, AutoTokenizer

from hf_lineage.pretraining.cli import main, parse_set
from hf_lineage.pretraining.dispatch import PretrainError

from conftest import REPO

# The embedded WikiText-2 sample: the first articles of wiki.train.tokens / wiki.valid.tokens, byte for byte.
SAMPLES = REPO / "hf_lineage" / "samples" / "lineage"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The first articles of WikiText-2 (train) and of its validation split, from the package's embedded sample, and a
    WordPiece tokenizer trained once for all the runs (training it again in each gives the same tokenizer, only
    slower: see the reproducibility test below)."""
    root = tmp_path_factory.mktemp("corpus")
    train, valid = root / "train.txt", root / "valid.txt"
    train.write_text((SAMPLES / "corpus.train.txt").read_text(encoding="utf-8")[:60_000], encoding="utf-8")
    valid.write_text((SAMPLES / "corpus.validation.txt").read_text(encoding="utf-8")[:15_000], encoding="utf-8")
    from hf_lineage.tokenization import train_wordpiece_tokenizer

    tokenizer = train_wordpiece_tokenizer(files=[str(train)], vocab_size=600)
    tokenizer.save_pretrained(root / "tokenizer")
    return {"train": str(train), "valid": str(valid), "tokenizer": str(root / "tokenizer")}


def cli(corpus, output_dir, *extra, env=None, launcher=None):
    """Run ``python -m hf_lineage.pretraining bert`` (or under ``launcher``) in a fresh process."""
    args = ["bert", "--config", "tiny", "--train-file", corpus["train"], "--tokenizer",
            corpus["tokenizer"], "--output-dir",
            str(output_dir), "--report-to", "none", "--per-device-batch-size", "4", "--log-every", "1", *extra]
    command = (launcher or [sys.executable, "-m"]) + ["hf_lineage.pretraining", *args]
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", **(env or {})}
    full_env = {k: v for k, v in full_env.items() if v is not None}  # None: unset
    return subprocess.run(command, env=full_env, capture_output=True, text=True, timeout=600)


def cli_killed(corpus, output_dir, *extra, when: str) -> int:
    """Start the same run as ``cli`` and SIGKILL it from here as soon as checkpoint ``when`` (e.g. "step_00000004")
    is complete; returns its exit status (``-SIGKILL``, or 0 if it finished first)."""
    args = ["bert", "--config", "tiny", "--train-file", corpus["train"], "--tokenizer",
            corpus["tokenizer"], "--output-dir",
            str(output_dir), "--report-to", "none", "--per-device-batch-size", "4", "--log-every", "1", *extra]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen([sys.executable, "-m", "hf_lineage.pretraining", *args], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # A checkpoint is written to step_N.partial and renamed when complete: its state file marks it usable.
    done = output_dir / "checkpoints" / when / "engine_state.json"
    deadline = time.monotonic() + 600
    while not done.is_file() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)  # a no-op if it already ended
    return process.wait()


def weights(output_dir):
    return load_file(str(output_dir / "model.safetensors"))


def max_difference(a, b):
    assert a.keys() == b.keys()
    return max((a[k].float() - b[k].float()).abs().max().item() for k in a)


def test_end_to_end_run_writes_a_loadable_model_with_card_logs_and_checkpoints(corpus, tmp_path):
    out = tmp_path / "bert"
    code = main(["bert", "--config", "tiny", "--train-file", corpus["train"], "--validation-file",
                 corpus["valid"], "--output-dir",
                 str(out), "--vocab-size", "500", "--max-steps", "6", "--per-device-batch-size", "4",
                 "--checkpoint-every", "2", "--keep-checkpoints", "2", "--eval-every", "3", "--log-every", "2",
                 "--set", "num_hidden_layers=1", "--learning-rate", "1e-3"])
    assert code == 0
    model = AutoModelForPreTraining.from_pretrained(out)
    assert model.config.num_hidden_layers == 1 and model.config.model_type == "lineage-bert"
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert model.config.vocab_size == len(tokenizer) <= 500
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step_00000004", "step_00000006"]
    results = json.loads((out / "train_results.json").read_text())
    assert results["step"] == 6 and results["examples_seen"] == 24
    # The log history: a train entry every --log-every steps and an eval entry at each evaluation, tokens counted.
    history = results["log_history"]
    assert [h["step"] for h in history if "train_loss" in h] == [2, 4, 6]
    assert [h["step"] for h in history if "eval_mlm_loss" in h] == [3, 6]
    tokens = [h["tokens_seen"] for h in history if "train_loss" in h]
    assert 0 < tokens[0] < tokens[1] < tokens[2] == results["tokens_seen"] <= 24 * 128
    eval_results = results["eval"]
    assert 0 <= eval_results["nsp_accuracy"] <= 1 and eval_results["mlm_loss"] > 0
    assert eval_results["mlm_perplexity"] == pytest.approx(torch.tensor(eval_results["mlm_loss"]).exp().item())
    assert "## Pre-training" in (out / "README.md").read_text()
    assert any(p.name.startswith("events.out.tfevents") for p in (out / "logs").rglob("*"))
    assert "auto_map" in json.loads((out / "config.json").read_text())


@pytest.mark.parametrize("family", ["bert", "gpt"])
def test_the_same_command_twice_writes_the_same_tokenizer_and_model(family, corpus, tmp_path):
    """`hf-lineage pretrain` trains its tokenizer on the training text: two processes with different hash seeds
    and thread counts write the same tokenizer.json, byte for byte, hence the same model. (`tokenizers`' own
    WordPiece trainer gives a different vocabulary in each process on this corpus, huggingface/tokenizers#1794;
    `hf_lineage.tokenization` pins it.)"""
    outputs = [tmp_path / "first", tmp_path / "second"]
    runs = []
    for seed, threads, out in zip(("1", "2"), ("1", "2"), outputs):
        command = [sys.executable, "-m", "hf_lineage.cli", "pretrain", family, "--config", "tiny", "--train-file",
                   corpus["train"],
                   "--output-dir", str(out), "--vocab-size", "500", "--max-steps", "2", "--per-device-batch-size",
                   "4", "--max-seq-length", "64", "--set", "num_hidden_layers=1", "--report-to", "none",
                   "--seed", "0"]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONHASHSEED": seed,
               "RAYON_NUM_THREADS": threads, "TOKENIZERS_PARALLELISM": "true"}
        runs.append(subprocess.run(command, env=env, capture_output=True, text=True, timeout=600))
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    first, second = outputs
    assert len(json.loads((first / "tokenizer.json").read_text())["model"]["vocab"]) > 300  # a real vocabulary
    for name in ("tokenizer.json", "tokenizer_config.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    a, b = weights(first), weights(second)
    assert all(torch.equal(a[k], b[k]) for k in a), max_difference(a, b)


def test_sigkill_and_resume_is_bit_identical_to_an_uninterrupted_run(corpus, tmp_path):
    # Dropout stays on: the resumed run must restore the RNG exactly, not merely the weights.
    reference = tmp_path / "reference"
    run = cli(corpus, reference, "--max-steps", "1")
    assert run.returncode == 0, run.stderr[-2000:]
    per_epoch = json.loads((reference / "train_results.json").read_text())["steps_per_epoch"]
    # Checkpoint exactly at the end of the first epoch; the process is killed from here once that checkpoint is
    # written, somewhere in epoch 2, which runs almost to its end (the margin that lets the kill land in time).
    total, extra = 2 * per_epoch - 1, ["--checkpoint-every", str(per_epoch)]
    run = cli(corpus, reference, "--max-steps", str(total), *extra, "--overwrite-output-dir")
    assert run.returncode == 0, run.stderr[-2000:]

    interrupted = tmp_path / "interrupted"
    killed = cli_killed(corpus, interrupted, "--max-steps", str(total), *extra, when=f"step_{per_epoch:08d}")
    assert killed == -signal.SIGKILL, "the run ended before it could be killed"
    assert not (interrupted / "config.json").exists()  # a killed run leaves nothing that looks like a model
    run = cli(corpus, interrupted, "--max-steps", str(total), *extra, "--resume-from", "latest")
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"at step {per_epoch}" in run.stdout + run.stderr
    a, b = weights(reference), weights(interrupted)
    assert all(torch.equal(a[k], b[k]) for k in a), max_difference(a, b)
    # The log history and token count carry across the kill: the same entries as the uninterrupted run.
    ours, theirs = (json.loads((out / "train_results.json").read_text()) for out in (interrupted, reference))
    assert ours["tokens_seen"] == theirs["tokens_seen"]
    strip = lambda history: [{k: v for k, v in h.items() if k != "seconds"} for h in history]  # noqa: E731
    assert strip(ours["log_history"]) == strip(theirs["log_history"])


def test_a_wall_clock_budget_stops_on_the_clock_and_runs_the_schedule_to_its_end(corpus, tmp_path):
    out = tmp_path / "clock"
    run = cli(corpus, out, "--max-train-seconds", "3", "--num-epochs", "1000", "--set", "num_hidden_layers=1",
              "--lr-scheduler", "linear", "--warmup-ratio", "0.1", "--learning-rate", "1e-3")
    assert run.returncode == 0, run.stderr[-2000:]
    results = json.loads((out / "train_results.json").read_text())
    history = [h for h in results["log_history"] if "train_loss" in h]
    assert results["stopped_by_clock"] and 3 <= history[-1]["seconds"] < 30
    rates = [h["learning_rate"] for h in history]
    # Warmup, then a linear decay laid out over the three seconds: the last step lands at (or next to) zero.
    assert max(rates) == pytest.approx(1e-3, rel=0.05) and rates[-1] <= 1e-6
    peak = rates.index(max(rates))
    assert all(a >= b for a, b in zip(rates[peak:], rates[peak + 1:]))


def test_streaming_run_resumes_bit_identically(corpus, tmp_path):
    stream = ["--streaming", "--stream-buffer-documents", "3", "--max-steps", "30", "--checkpoint-every", "2"]
    reference, interrupted = tmp_path / "reference", tmp_path / "interrupted"
    assert cli(corpus, reference, *stream).returncode == 0
    # Killed once the step-2 checkpoint is written (a later one may be written before the kill lands: the resumed
    # run starts from whichever is the latest).
    assert cli_killed(corpus, interrupted, *stream, when="step_00000002") == -signal.SIGKILL
    assert not (interrupted / "config.json").exists()
    run = cli(corpus, interrupted, *stream, "--resume-from", "latest")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Resumed from" in run.stdout + run.stderr
    a, b = weights(reference), weights(interrupted)
    assert all(torch.equal(a[k], b[k]) for k in a), max_difference(a, b)
    assert json.loads((reference / "train_results.json").read_text())["examples_seen"] == 30 * 4
    # Without --max-steps a stream has no length to count epochs in.
    assert main(["bert", "--config", "tiny", "--train-file", corpus["train"], "--streaming", "--output-dir",
                 str(tmp_path / "x")]) == 2
    # A stream shorter than one step is an error, not an endless loop over empty epochs.
    tiny_stream = main(["bert", "--config", "tiny", "--train-file", corpus["train"], "--tokenizer",
                        corpus["tokenizer"], "--streaming",
                        "--max-steps", "2", "--per-device-batch-size", "100000", "--report-to", "none",
                        "--output-dir", str(tmp_path / "y")])
    assert tiny_stream == 2


def test_two_processes_match_one_process_with_the_same_global_batch(corpus, tmp_path):
    # Dropout off: it draws from each process's RNG, so it cannot match across world sizes (see pretrain.py).
    no_dropout = ["--max-steps", "4", "--set", "hidden_dropout_prob=0", "--set", "attention_probs_dropout_prob=0"]
    single = cli(corpus, tmp_path / "one", *no_dropout, "--per-device-batch-size", "8")
    assert single.returncode == 0, single.stderr[-2000:]
    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
                "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
                "--main_process_port", "29517", "-m"]
    double = cli(corpus, tmp_path / "two", *no_dropout, "--per-device-batch-size", "4",
                 env={"ACCELERATE_USE_CPU": "1"}, launcher=launcher)
    assert double.returncode == 0, double.stderr[-3000:]
    accumulated = cli(corpus, tmp_path / "accumulated", *no_dropout, "--per-device-batch-size", "2",
                      "--gradient-accumulation-steps", "4")
    assert accumulated.returncode == 0, accumulated.stderr[-2000:]
    one = weights(tmp_path / "one")
    initial_gap = max_difference(one, weights(tmp_path / "two"))
    assert initial_gap <= 1e-6
    assert max_difference(one, weights(tmp_path / "accumulated")) <= 1e-6
    # ...and the runs really trained (the comparison is not between untouched initial weights).
    assert json.loads((tmp_path / "two" / "train_results.json").read_text())["examples_seen"] == 32


ACCELERATE_PROBE = """
import os, sys
from accelerate import PartialState
# One file per rank: two processes printing to one pipe can interleave their words (unbuffered output in CI).
with open(os.path.join(sys.argv[1], "rank" + os.environ["RANK"]), "w") as f:
    f.write(str(PartialState().num_processes))
"""


def test_launched_processes_without_distributed_accelerate_are_refused(corpus, tmp_path):
    # The real silent-failure case: torchrun starts 2 processes on a CPU machine without ACCELERATE_USE_CPU=1.
    # Accelerate >= 1.13 then reports one process in each, and each would train its own unsynchronised replica;
    # older Accelerate (1.9-1.12, measured) sets up gloo itself and trains one synchronised model. Ask the
    # installed Accelerate what it does, then check the engine: it refuses exactly the unsynchronised case.
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("ACCELERATE_USE_CPU", None)
    probe, seen_dir = tmp_path / "probe.py", tmp_path / "seen"
    probe.write_text(ACCELERATE_PROBE)
    seen_dir.mkdir()
    seen = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
                           "29518", str(probe), str(seen_dir)], env=env, capture_output=True, text=True, timeout=300)
    assert seen.returncode == 0, seen.stderr
    counts = sorted(path.read_text() for path in seen_dir.iterdir())
    assert counts in (["1", "1"], ["2", "2"]), counts
    distributed = counts == ["2", "2"]
    out = tmp_path / "replicas"
    launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29519",
                "-m"]
    run = cli(corpus, out, "--max-steps", "2", env={"ACCELERATE_USE_CPU": None}, launcher=launcher)
    if distributed:
        assert run.returncode == 0, run.stderr[-3000:]
        assert (out / "model.safetensors").exists()
        # The engine's own start line says it trained one model on both processes.
        assert "2 process(es)" in run.stdout + run.stderr, (run.stdout + run.stderr)[-3000:]
    else:
        assert run.returncode != 0, (run.stdout + run.stderr)[-3000:]
        assert "unsynchronised" in run.stderr and "ACCELERATE_USE_CPU=1" in run.stderr
        assert not out.exists()


@pytest.mark.parametrize(
    "make_args, message",
    [
        (lambda c, d: ["bert", "--config", "tiny", "--train-file",
                       str(d / "missing.txt")], "missing.txt: no such file"),
        (lambda c, d: ["bert", "--config", "tiny", "--train-file", str(d / "empty.txt")], "empty.txt is empty"),
        (lambda c, d: ["bert", "--config", "tiny", "--train-file",
                       str(d / "blank.txt")], "blank.txt is empty"),  # longer than one read
        (lambda c, d: ["nnlm", "--config", "tiny", "--train-file", str(d / "model.bin")],
         "model.bin: not a UTF-8 text file (a NUL byte at byte 3)"),
        (lambda c, d: ["nnlm", "--config", "tiny", "--train-file", c["train"], "--validation-file",
                       str(d / "latin1.txt")], "latin1.txt: not a UTF-8 text file (invalid UTF-8 at byte 2)"),
        (lambda c, d: ["bart", "--train-file", c["train"]], "Unknown family 'bart'"),
        (lambda c, d: ["bert", "--config", "huge", "--train-file", c["train"]], "Unknown bert config 'huge'"),
        (lambda c, d: ["bert", "--config", "tiny", "--train-file", str(d / "headings.txt"), "--tokenizer",
                       c["tokenizer"]],
         "no tokens after tokenization"),
        (lambda c, d: ["bert", "--config", "tiny", "--train-file", c["train"], "--tokenizer", c["tokenizer"],
                       "--per-device-batch-size", "100000"], "fewer than one optimisation step"),
        (lambda c, d: ["bert", "--config", "tiny", "--train-file", c["train"], "--dataloader-num-workers", "-1"],
         "--dataloader-num-workers must be 0"),
        (lambda c, d: ["bert", "--config", "tiny", "--train-file", c["train"], "--streaming", "--max-steps", "2",
                       "--dataloader-num-workers", "2"], "every worker would read the whole stream"),
    ],
)
def test_bad_input_fails_early_with_a_clear_message_and_writes_nothing(corpus, tmp_path, capsys, make_args,
                                                                       message):
    (tmp_path / "empty.txt").write_text("\n\n")
    (tmp_path / "blank.txt").write_text(" \n" * 100_000)
    (tmp_path / "headings.txt").write_text(" = First = \n\n = Second = \n")  # WikiText with only headings
    (tmp_path / "model.bin").write_bytes(b"PK\x03\x00\x00 a model, not text")
    (tmp_path / "latin1.txt").write_bytes("caf\u00e9 au lait\n".encode("latin-1")[1:])
    out = tmp_path / "out"
    assert main([*make_args(corpus, tmp_path), "--output-dir", str(out), "--report-to", "none"]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_output_dir_holding_another_run_is_refused_untouched(corpus, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("someone else's work")
    args = ["bert", "--config", "tiny", "--train-file", corpus["train"], "--output-dir", str(out), "--report-to",
            "none"]
    assert main(args) == 2
    assert "is not empty" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    (out / "run_args.json").write_text(json.dumps({"family": "bert", "seed": 1}))
    assert main([*args, "--resume-from", "latest"]) == 2
    assert "holds a different run" in capsys.readouterr().err


def test_set_values_are_json_where_they_parse():
    assert parse_set(["vector_size=300", "hs=true", "name=cbow", "alpha=0.025", "sizes=[1,2]"]) == {
        "vector_size": 300, "hs": True, "name": "cbow", "alpha": 0.025, "sizes": [1, 2]}
    with pytest.raises(PretrainError, match="name=value"):
        parse_set(["window"])


def test_bert_pretrains_under_transformers_trainer(corpus, tmp_path):
    from transformers import Trainer, TrainingArguments

    from hf_lineage import LineageBertConfig, LineageBertForPreTraining
    from hf_lineage.data import DataCollatorForMaskedLM, create_next_sentence_examples, documents_from_text

    tokenizer = AutoTokenizer.from_pretrained(corpus["tokenizer"])
    lines = open(corpus["train"], encoding="utf-8").read().replace(" . ", " .\n").splitlines()
    examples = create_next_sentence_examples(documents_from_text(lines), tokenizer, max_seq_length=64)
    examples = [{**e, "mask_seed": i} for i, e in enumerate(examples[:64])]
    model = LineageBertForPreTraining(LineageBertConfig.from_named("tiny", vocab_size=len(tokenizer)))
    trainer = Trainer(
        model=model,
        args=TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=8, num_train_epochs=4,
                               learning_rate=3e-3, report_to=[], remove_unused_columns=False, save_strategy="no",
                               logging_steps=1, use_cpu=True),
        train_dataset=examples,
        data_collator=DataCollatorForMaskedLM(tokenizer),
    )
    history = trainer.train()
    losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    assert history.global_step == 32 and sum(losses[-4:]) / 4 < sum(losses[:4]) / 4 - 0.5


def test_an_interrupted_final_save_leaves_nothing_that_looks_like_a_model(tmp_path, monkeypatch, wordpiece_tokenizer):
    from hf_lineage import LineageBertConfig, LineageBertForPreTraining
    from hf_lineage.folders.pretrained import save_final

    model = LineageBertForPreTraining(LineageBertConfig.from_named("tiny", vocab_size=len(wordpiece_tokenizer)))

    def killed(*args, **kwargs):  # the process dies after the weights were written, before the tokenizer
        raise KeyboardInterrupt

    monkeypatch.setattr(type(wordpiece_tokenizer), "save_pretrained", killed)
    with pytest.raises(KeyboardInterrupt):
        save_final(model, wordpiece_tokenizer, tmp_path, "")
    assert not (tmp_path / "config.json").exists() and not (tmp_path / "model.safetensors").exists()
    monkeypatch.undo()
    save_final(model, wordpiece_tokenizer, tmp_path, "\nextra card text\n")  # a later save cleans up and completes
    assert AutoModelForPreTraining.from_pretrained(tmp_path).config.vocab_size == len(wordpiece_tokenizer)
    assert "extra card text" in (tmp_path / "README.md").read_text()
    assert not any(p.name.endswith(".partial") for p in tmp_path.iterdir())


def test_a_streamed_text_file_comes_back_whole_and_in_order_across_read_chunks(tmp_path, monkeypatch):
    """Streams are read STREAM_CHUNK_BYTES at a time (flat memory as the corpus grows): lines that straddle a chunk
    boundary must come back whole, none lost or repeated."""
    from types import SimpleNamespace

    from hf_lineage.data import examples

    monkeypatch.setattr(examples, "STREAM_CHUNK_BYTES", 100)  # many chunks, most boundaries inside a line
    lines = [f"line {i} " + "word " * (i % 17) for i in range(300)]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert path.stat().st_size > 50 * examples.STREAM_CHUNK_BYTES
    stream = examples.load_text(SimpleNamespace(dataset_name=None), [str(path)], "train", streaming=True)
    assert [row["text"] for row in stream] == lines


def test_a_corpus_is_checked_for_text_without_reading_it_whole(tmp_path):
    from hf_lineage.pretraining.arguments import _has_text

    blank = " \n\t" * 100_000  # several read chunks of whitespace
    (tmp_path / "blank.txt").write_text(blank)
    (tmp_path / "late.txt").write_text(blank + "word\n")
    assert not _has_text(tmp_path / "blank.txt") and _has_text(tmp_path / "late.txt")
