"""Mixed precision by what the CPU computes (``hf_lineage.machine.precision``): a CPU without native bf16 (AMD Zen 3 and
older, Intel before Cooper Lake) runs the lineage's bf16 scales in float32 and says why; an explicit bf16 there is
refused with one line before anything runs, by ``hf-lineage lineage``, ``hf-lineage pretrain`` and the recipes; and
the models' LSTMs step out of an autocast this CPU cannot run them in. Either kind of CPU is simulated with
``HF_LINEAGE_CPU_PRECISIONS`` (the commands) or by patching the models' probe, so the suite checks both paths on
either machine."""

import json

import pytest
import torch

from hf_lineage.machine import precision
from hf_lineage.cli import main as cli_main
from hf_lineage.lineage import settings

NO_BF16 = {precision.CPU_PRECISIONS_VARIABLE: "none"}
WITH_BF16 = {precision.CPU_PRECISIONS_VARIABLE: "bf16"}


@pytest.fixture
def cpu(monkeypatch):
    """``cpu(kind)`` simulates a CPU with (``WITH_BF16``) or without (``NO_BF16``) native bf16, and no GPU."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)

    def simulate(kind):
        for name, value in kind.items():
            monkeypatch.setenv(name, value)

    return simulate


def test_a_default_falls_back_to_float32_and_a_named_precision_is_refused(cpu):
    cpu(NO_BF16)
    chosen, why = precision.choose_precision("bf16", named=False, device="cpu")
    assert chosen == "no"
    assert why.startswith("float32, not the default bf16") and "no native bf16" in why and "LSTM" in why
    with pytest.raises(precision.PrecisionError) as error:
        precision.choose_precision("bf16", named=True, device="cpu")
    message = str(error.value)
    assert message.startswith("--mixed-precision bf16: this CPU (") and "\n" not in message
    assert message.endswith("run with --mixed-precision no (float32)")
    assert precision.choose_precision("no", named=True, device="cpu") == ("no", "float32")
    cpu(WITH_BF16)
    assert precision.choose_precision("bf16", named=True, device="cpu")[0] == "bf16"
    assert precision.choose_precision("bf16", named=False, device="cpu")[0] == "bf16"
    # fp16 has its own instruction sets: a CPU with bf16 alone lacks it
    with pytest.raises(precision.PrecisionError, match="no native fp16"):
        precision.choose_precision("fp16", named=True, device="cpu")
    with pytest.raises(precision.PrecisionError, match="must be one of no, bf16, fp16"):
        precision.choose_precision("fp8", named=True, device="cpu")


def test_the_probe_reads_onednn_when_nothing_is_simulated(monkeypatch):
    monkeypatch.delenv(precision.CPU_PRECISIONS_VARIABLE, raising=False)
    assert precision.cpu_supports("bf16") == bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    assert precision.cpu_supports("fp16") == bool(torch.ops.mkldnn._is_mkldnn_fp16_supported())


@pytest.mark.parametrize("scale", ["small", "base"])
def test_the_lineage_bf16_scales_run_float32_on_a_cpu_without_it_and_say_why(scale, cpu):
    cpu(NO_BF16)
    args = settings.LineageArguments(scale=scale, output_dir="unused")
    settings.check_arguments(args)
    assert settings.SCALES[scale].mixed_precision == "bf16" and args.mixed_precision == "no"
    assert args.precision_note.startswith("float32, not the default bf16: this CPU")
    cpu(WITH_BF16)
    args = settings.LineageArguments(scale=scale, output_dir="unused")
    settings.check_arguments(args)
    assert args.mixed_precision is None  # the scale's own, unchanged: stages of earlier runs stay reusable
    assert args.precision_note.startswith("bf16 autocast (this CPU")
    args = settings.LineageArguments(output_dir="unused")  # tiny: float32 by default, nothing to say
    settings.check_arguments(args)
    assert args.mixed_precision is None and args.precision_note is None


def test_an_explicit_bf16_is_refused_by_the_lineage_before_any_stage(cpu, tmp_path, capsys):
    cpu(NO_BF16)
    out = tmp_path / "report"
    assert cli_main(["lineage", "--output-dir", str(out), "--scale", "small", "--mixed-precision", "bf16"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "--mixed-precision bf16: this CPU" in error[0], error
    assert "run with --mixed-precision no (float32)" in error[0]
    assert not out.exists()


def test_the_plan_and_the_report_notes_say_which_precision_the_run_uses(cpu, tmp_path, capsys):
    """The default run's plan line names the precision where the scale asks for one; the notes carry it into the
    report (``experiment.notes``)."""
    from hf_lineage.lineage import experiment

    cpu(NO_BF16)
    args = settings.LineageArguments(scale="small", output_dir=str(tmp_path))
    scale = settings.check_arguments(args)
    plan = experiment.plan_message(["gpt"], ["labeling"], [], 0, [], True, args, None)
    assert "; precision: float32, not the default bf16: this CPU" in plan
    assert any(line.startswith("Precision: float32, not the default bf16") for line in experiment.notes(args, scale))


def test_pretrain_refuses_bf16_on_a_cpu_without_it_before_building_anything(cpu, tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat .\n" * 50)
    out = tmp_path / "bert"
    cpu(NO_BF16)
    code = cli_main(["pretrain", "bert", "--config", "tiny", "--train-file", str(corpus), "--output-dir", str(out),
                     "--max-steps", "1", "--mixed-precision", "bf16"])
    error = capsys.readouterr().err
    assert code == 2 and "--mixed-precision bf16: this CPU" in error and "Traceback" not in error
    assert not out.exists()


def test_pretrain_takes_bf16_where_the_cpu_has_it(cpu, tmp_path):
    """The same arguments pass the check on a CPU with bf16 (the run itself: tests/test_lineage_scales.py)."""
    from hf_lineage.pretraining.arguments import PretrainArguments, check_precision

    cpu(WITH_BF16)
    check_precision(PretrainArguments(family="bert", output_dir=str(tmp_path), mixed_precision="bf16"))
    cpu(NO_BF16)
    with pytest.raises(ValueError, match="no native bf16"):
        check_precision(PretrainArguments(family="bert", output_dir=str(tmp_path), mixed_precision="bf16"))


def test_a_recipe_refuses_bf16_on_a_cpu_without_it(cpu, tmp_path):
    from transformers import TrainingArguments

    from hf_lineage.tasks.training import check_precision

    cpu(NO_BF16)
    with pytest.raises(ValueError) as error:
        check_precision(TrainingArguments(output_dir=str(tmp_path), bf16=True, use_cpu=True))
    assert str(error.value).startswith("--bf16: this CPU (") and str(error.value).endswith("drop --bf16 (float32)")
    check_precision(TrainingArguments(output_dir=str(tmp_path), use_cpu=True))  # float32: nothing to refuse
    cpu(WITH_BF16)
    check_precision(TrainingArguments(output_dir=str(tmp_path), bf16=True, use_cpu=True))


def test_the_finetune_command_says_it_in_one_line(cpu, tmp_path, capsys):
    from hf_lineage.checkpoints import path

    cpu(NO_BF16)
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"tokens": ["a", "b"], "tags": ["X", "Y"]}) + "\n" for _ in range(4)))
    out = tmp_path / "tagger"
    code = cli_main(["finetune", "sequence_labeling", "--model_name_or_path", str(path("word2vec")),
                     "--train_file", str(data), "--output_dir", str(out), "--do_train", "--bf16", "--use_cpu"])
    error = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and any("--bf16: this CPU" in line for line in error), error
    assert "Traceback" not in "\n".join(error)
    assert not out.exists()


# --------------------------------------------------------------------------- the models' LSTMs under autocast


def lstm_models():
    """A static family's task BiLSTM and ELMo's biLM (its fused LSTM layers: no clipping; word inputs), tiny and
    untrained."""
    import hf_lineage  # noqa: F401  (registers the families)
    from hf_lineage import LineageElmoConfig, LineageWord2VecConfig
    from hf_lineage.models.modeling_lineage_elmo import LineageElmoForTokenClassification
    from hf_lineage.models.modeling_lineage_word2vec import LineageWord2VecForTokenClassification

    torch.manual_seed(0)
    word2vec = LineageWord2VecForTokenClassification(LineageWord2VecConfig.from_named("tiny", vocab_size=50,
                                                                                      num_labels=3)).eval()
    elmo = LineageElmoForTokenClassification(LineageElmoConfig.from_named("tiny", vocab_size=50, num_labels=3,
                                                                          cell_clip=None, proj_clip=None,
                                                                          use_char_inputs=False)).eval()
    return {"word2vec": word2vec, "elmo": elmo}


@pytest.mark.parametrize("family", ["word2vec", "elmo"])
def test_lstms_run_in_float32_under_an_autocast_the_cpu_cannot_run_them_in(family, monkeypatch):
    """On a CPU without the autocast precision (simulated), every LSTM steps out of autocast and runs in float32:
    no oneDNN failure, float32 numbers; with it, the LSTM stays under autocast."""
    from hf_lineage.models import modeling_lineage_utils

    model = lstm_models()[family]
    ids = torch.randint(5, 50, (3, 6))
    mask = torch.ones(3, 6, dtype=torch.long)
    mask[1, 4:] = 0
    seen, lstm_forward = [], torch.nn.LSTM.forward

    def recording(module, input, *args, **kwargs):  # what the LSTM kernel is called under (ELMo's layers too)
        seen.append((torch.is_autocast_enabled("cpu"), getattr(input, "data", input).dtype))
        return lstm_forward(module, input, *args, **kwargs)

    monkeypatch.setattr(torch.nn.LSTM, "forward", recording)
    with torch.no_grad():
        reference = model(input_ids=ids, attention_mask=mask).logits
        assert seen and all(entry == (False, torch.float32) for entry in seen)
        seen.clear()
        monkeypatch.setattr(modeling_lineage_utils, "cpu_lstm_runs_in", lambda dtype: dtype == torch.float32)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(input_ids=ids, attention_mask=mask).logits
    assert seen and all(entry == (False, torch.float32) for entry in seen), seen
    real = mask.bool()
    torch.testing.assert_close(logits.float()[real], reference[real], atol=0.05, rtol=0.05)

    class Stop(Exception):
        pass

    def stop(module, input, *args, **kwargs):
        seen.append((torch.is_autocast_enabled("cpu"), getattr(input, "data", input).dtype))
        raise Stop  # what the LSTM would then compute is this CPU's business: only where it runs is checked

    monkeypatch.setattr(modeling_lineage_utils, "cpu_lstm_runs_in", lambda dtype: True)
    monkeypatch.setattr(torch.nn.LSTM, "forward", stop)
    seen.clear()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16), pytest.raises(Stop):
        model(input_ids=ids, attention_mask=mask)
    assert seen[0][0] is True  # autocast left on where the CPU runs the LSTM in bf16


def test_the_machine_line_names_the_cpu_model_cores_threads_and_processes(monkeypatch):
    import torch

    from hf_lineage.machine.precision import cpu_name, describe_machine

    monkeypatch.setenv("WORLD_SIZE", "3")
    line = describe_machine()
    assert cpu_name() in line and f"{torch.get_num_threads()} torch thread(s)" in line
    assert line.endswith("3 process(es)") and f"torch {torch.__version__}" in line
