"""Pre-training options: what ``--config tiny`` makes small, and that the lineage experiment sets for itself every
size the tiny defaults touch."""

from dataclasses import asdict
from pathlib import Path

import pytest

import hf_lineage.pretrain as engine
from hf_lineage.lineage import pretraining
from hf_lineage.lineage.settings import FAMILY_ORDER, SCALES, LineageArguments
from hf_lineage.objectives import OBJECTIVES, objective_class
from hf_lineage.pretrain import PretrainArguments, resolve_defaults


PAPER_CONFIG = {"bert": "base", "gpt": "gpt", "elmo": "original", "nnlm": "mlp1"}


def resolved(family, config="tiny", **given):
    args = PretrainArguments(family=family, output_dir="unused", config=config, **given)
    return resolve_defaults(args, objective_class(family)(args))


@pytest.mark.parametrize("family", [f for f in OBJECTIVES if f != "word2vec"])
def test_tiny_is_small_everywhere_and_the_named_sizes_keep_the_papers(family):
    tiny = resolved(family)
    # A smoke run on a laptop: a few sequences of a few dozen tokens per step, a small vocabulary.
    assert tiny.per_device_batch_size * tiny.max_seq_length <= 8 * 64 and tiny.vocab_size <= 8000
    paper = resolved(family, config=PAPER_CONFIG[family])
    assert paper.per_device_batch_size * paper.max_seq_length > tiny.per_device_batch_size * tiny.max_seq_length
    # What is given on the command line still wins.
    assert resolved(family, per_device_batch_size=3, max_seq_length=17).per_device_batch_size == 3


def test_tiny_gpt_warms_up_over_a_fraction_of_the_run_not_the_papers_2000_steps():
    tiny, paper = resolved("gpt"), resolved("gpt", config="gpt")
    assert (tiny.warmup_steps, tiny.warmup_ratio) == (None, 0.05)
    assert paper.warmup_steps == 2000 and (paper.per_device_batch_size, paper.max_seq_length) == (64, 512)
    assert resolved("gpt", warmup_steps=10).warmup_steps == 10
    assert resolved("elmo", config="small").per_device_batch_size == 128


def lineage_runs(scale, monkeypatch):
    """The PretrainArguments the lineage experiment hands the engine for every family, defaults resolved."""
    runs = {}

    class Captured(Exception):
        pass

    def capture(run):
        runs[run.family] = asdict(resolve_defaults(run, objective_class(run.family)(run)))
        raise Captured

    monkeypatch.setattr(engine, "pretrain", capture)
    corpus = {"train": ["train.txt"], "validation": ["valid.txt"], "train_words": 600_000}
    for family in FAMILY_ORDER:
        with pytest.raises(Captured):
            pretraining.pretrain_family(family, SCALES[scale], LineageArguments(scale=scale), corpus, Path("unused"))
    return runs


@pytest.mark.parametrize("scale", ["tiny", "small"])
def test_the_lineage_sets_what_the_tiny_defaults_touch_so_its_runs_do_not_change(scale, monkeypatch):
    with_tiny_defaults = lineage_runs(scale, monkeypatch)
    for family in OBJECTIVES:
        monkeypatch.setattr(objective_class(family), "tiny_defaults", {})
    assert lineage_runs(scale, monkeypatch) == with_tiny_defaults
    assert with_tiny_defaults["gpt"]["per_device_batch_size"] == SCALES[scale].batch_size
