"""``hf-lineage lineage --scale small`` and ``--scale base`` end to end on the CPU, every family and every stage kind,
with each scale's own settings — its named configs, mixed precision, pair encoding, learning rates, target lengths
— and only the sizes shrunk, so that a setting that crashes a real (GPU) run at that scale fails the suite here.
(The small scale once failed every word2vec pair cell, and on a CPU every fine-tuning cell.)"""

import dataclasses
import json

import pytest

from hf_lineage import registry
from hf_lineage.cli import main as cli_main
from hf_lineage.lineage import settings
from hf_lineage.machine import precision

# The sizes each family's config is shrunk to; every other field stays the scale's.
SHRUNK_SIZES = {
    "svd": {"vector_size": 16},
    "nnlm": {"embedding_size": 16, "hidden_size": 32},
    "word2vec": {"vector_size": 16},
    "glove": {"vector_size": 16, "epochs": 2},
    "elmo": {"char_embedding_size": 8, "char_cnn_filters": [[1, 8], [2, 8]], "lstm_cell_size": 32,
             "projection_size": 16},
    "gpt": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64},
    "bert": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64},
}
# Every stage kind: pretraining, a labeling cell, a sentence-pair task (every family: GPT and BERT in the scale's pair
# encoding, the others each sentence on its own) and generation. (Classification runs the pair task's code with one
# sentence: tests/test_lineage.py runs it.)
TASKS = ["labeling", "pairs", "generation"]
# Each family's main variant only (frozen static families and ELMo, fine-tuned GPT and BERT), no learning curves: the
# other variants and the curves run the same code at every scale (tests/test_lineage.py runs them).
SMALL_DATA = ["--budget-words", "4000", "--task-train", "32", "--task-validation", "16", "--finetune-epochs", "1",
              "--variants", "--curve-sizes", "--workers", "0", "--blimp-pairs", "0"]  # zero-shot: test_lineage.py


def shrink(scale: settings.Scale, monkeypatch) -> None:
    """The scale with every family's config shrunk (its named config and pretraining overrides kept) and smaller
    batches, sequences and vocabulary."""
    for family, spec in settings.LINEAGE_FAMILIES.items():
        named, overrides, pretraining = spec.sizes[scale.name]
        shrunk = SHRUNK_SIZES[settings.library_family(family)]  # BERT's ablations: BERT's
        sizes = {**spec.sizes, scale.name: (named, {**overrides, **shrunk}, pretraining)}
        shrunk_spec = dataclasses.replace(spec, sizes=sizes)
        if family in registry.FAMILIES:  # a family's lineage settings are its record's
            monkeypatch.setitem(registry.FAMILIES, family,
                                dataclasses.replace(registry.FAMILIES[family], lineage=shrunk_spec))
        else:  # BERT's ablations
            monkeypatch.setitem(settings.ABLATIONS, family, shrunk_spec)
    # One learning rate: the sweep runs the same cells at every scale (tests/test_lineage.py runs it).
    monkeypatch.setitem(settings.SCALES, scale.name, dataclasses.replace(
        scale, vocab_size=2000, max_seq_length=32, batch_size=8, finetune_batch_size=8, min_steps=1,
        learning_rate_sweep=(1.0,)))


@pytest.fixture
def fresh_accelerate_state():
    """Accelerate's state is one per process and keeps its mixed precision: these scales train in bf16 (where the CPU
    has it), the rest of the suite in float32, so the state is made anew before and dropped after."""
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(True)
    yield
    AcceleratorState._reset_state(True)


@pytest.mark.usefixtures("fresh_accelerate_state")
# small on this machine's CPU as it is (bf16 where it has it natively: Zen 4, Sapphire Rapids; float32 where it does
# not: Zen 3), base on a CPU simulated without bf16: the suite runs the float32 fallback end to end on every machine.
@pytest.mark.parametrize("scale, cpu_precisions", [("small", None), ("base", "none")], ids=["small", "base"])
def test_every_stage_of_the_larger_scales_runs_with_their_settings_shrunk(scale, cpu_precisions, tmp_path,
                                                                         monkeypatch):
    if cpu_precisions is not None:
        monkeypatch.setenv(precision.CPU_PRECISIONS_VARIABLE, cpu_precisions)
    bf16 = precision.supports("bf16", precision.device_kind())
    real = settings.SCALES[scale]
    real_gpt_config = real.family_sizes("gpt")[0]
    shrink(real, monkeypatch)
    out = tmp_path / "report"
    assert cli_main(["lineage", "--scale", scale, "--output-dir", str(out), "--tasks", *TASKS, *SMALL_DATA]) == 0
    results = json.loads((out / "results.json").read_text())
    stages = [("pretraining", family, entry) for family, entries in results["pretraining"].items()
              for entry in (entries if isinstance(entries, list) else [entries])]
    stages += [("finetuning", f"{c['task']}-{c['family']}-{c['variant']}", c) for c in results["finetuning"]]
    failed = [(kind, name, entry.get("error")) for kind, name, entry in stages if entry["status"] != "ok"]
    assert not failed, failed
    cells = results["finetuning"]
    assert {c["family"] for c in cells} == set(settings.default_families())
    assert {c["task"] for c in cells} == set(TASKS)
    # The scale's own settings reached the stages: its mixed precision where the CPU computes it (else float32, said
    # in the notes) and its pair encoding.
    spec = json.loads((out / "stages" / "pretrain-gpt" / "stage.json").read_text())["spec"]
    assert real.mixed_precision == "bf16" and spec["mixed_precision"] == ("bf16" if bf16 else "no")
    assert any(note.startswith("Precision: " + ("bf16 autocast" if bf16 else "float32, not the default bf16"))
               for note in results["notes"])
    assert spec["scale"][0] == real_gpt_config  # the scale's named config, only its sizes shrunk
    assert results["pair_encoding"] == real.pair_encoding
