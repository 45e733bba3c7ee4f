"""The zero-shot stage of ``hf-lineage lineage`` (issue 52): order_pairs read as minimal pairs, the embedded BLiMP
sample, the grammar claim and their place in the report. Tiny data; the one test that loads a model loads the shipped
NNLM (seconds)."""

import json
import shutil
from types import SimpleNamespace

import pytest

from hf_lineage import checkpoints
from hf_lineage.convert.sources import cache_root
from hf_lineage.lineage import claims, zero_shot_stage as zero_shot
from hf_lineage.lineage.cli import arguments_from_namespace, build_parser
from hf_lineage.lineage.report import write_report
from hf_lineage.lineage.settings import LineageArguments, LineageError, check_arguments
from hf_lineage.experiments.stages import Stages
from hf_lineage.minimal_pairs.pairs import embedded_sample, read_pairs

from test_lineage_report import make_results, on_tasks, ORDERED, table_rows


def write_order_pairs(path, rows):
    path.write_text("".join(json.dumps({"sentence1": a, "sentence2": b, "label": label}) + "\n"
                            for a, b, label in rows))
    return path


ORDER_ROWS = [("the cat sat on the mat .", "on the mat . the cat sat", "first"),
              ("sat on the mat . the dog", "the dog sat on the mat .", "second"),
              ("i like it here .", "here . i like it", "first")]


def test_the_embedded_blimp_sample_has_20_pairs_of_every_paradigm():
    pairs = read_pairs(embedded_sample())
    per_paradigm = {}
    for pair in pairs:
        per_paradigm[pair.paradigm] = per_paradigm.get(pair.paradigm, 0) + 1
    assert len(per_paradigm) == 67 and set(per_paradigm.values()) == {20}
    assert embedded_sample().stat().st_size < 400_000  # package data stays small


def test_order_pairs_rows_become_minimal_pairs_with_the_original_first(tmp_path):
    pairs = zero_shot.order_pairs_as_minimal_pairs(write_order_pairs(tmp_path / "v.jsonl", ORDER_ROWS))
    assert [(p.good, p.bad) for p in pairs] == [(ORDER_ROWS[0][0], ORDER_ROWS[0][1]),
                                                (ORDER_ROWS[1][1], ORDER_ROWS[1][0]),
                                                (ORDER_ROWS[2][0], ORDER_ROWS[2][1])]
    bad = write_order_pairs(tmp_path / "bad.jsonl", [("a b .", "b a .", "third")])
    with pytest.raises(ValueError, match="row 1: label 'third'"):
        zero_shot.order_pairs_as_minimal_pairs(bad)


def test_the_stage_scores_both_pair_sets_and_is_reused(tmp_path):
    order_file = str(write_order_pairs(tmp_path / "order.jsonl", ORDER_ROWS))
    corpus = tmp_path / "corpus.txt"  # a tiny n-gram text: the stage reads the files it is given
    corpus.write_text("the cat sat on the mat .\nthe dog sat on the mat .\ni like it here .\n" * 20)
    pretraining = {f: [{"status": "ok", "model": str(checkpoints.path(f)), "weights_sha256": f}]
                   for f in ("nnlm", "word2vec")}
    task_data = {"order_pairs": {"status": "ok", "files": {"validation": order_file}}}
    args = SimpleNamespace(blimp_pairs=1, seed=0)
    stages = Stages(tmp_path / "out", 2, rerun=False)
    first = zero_shot.run_zero_shot_stage(stages, pretraining, task_data, args, ngram_files=[str(corpus)])
    assert first["status"] == "ok", first["error"]
    assert first["no_sentence_probability"] == ["word2vec"] and first["primary"] == {"nnlm": "nnlm",
                                                                                    "kneser-ney": "kneser-ney"}
    order = first["order_pairs"]["systems"]
    assert len(order["nnlm"]["units"]) == 3 and order["nnlm"]["score"] == pytest.approx(
        sum(order["nnlm"]["units"]) / 3)
    # The n-gram saw these very sentences: it prefers each original order.
    assert order["kneser-ney"]["score"] == 1.0
    blimp = first["blimp"]
    assert blimp["pairs"] == 67 and blimp["paradigms"] == 67
    assert [(d["lower"], d["higher"]) for d in blimp["differences"]] == [("kneser-ney", "nnlm")]
    assert blimp["published"]["overall"]["GPT-2"] == pytest.approx(0.830, abs=0.001)
    again = zero_shot.run_zero_shot_stage(Stages(tmp_path / "out", 2, rerun=False), pretraining, task_data, args,
                                          ngram_files=[str(corpus)])
    assert again["reused"] and again["blimp"]["systems"] == blimp["systems"]  # same spec: the stage's own numbers
    assert "units" not in zero_shot.without_units(first)["order_pairs"]["systems"]["nnlm"]
    # One job per model and pair set, each a stage of its own; computed again (not reused), the same arguments and
    # seed give the same numbers.
    assert sorted(p.name for p in (tmp_path / "out" / "stages").iterdir()) == [
        "zero-shot-kneser-ney-blimp", "zero-shot-kneser-ney-order_pairs", "zero-shot-nnlm-blimp",
        "zero-shot-nnlm-order_pairs"]
    shutil.rmtree(cache_root() / "zero-shot")  # scored again, not read back (see below)
    rerun = zero_shot.run_zero_shot_stage(Stages(tmp_path / "out", 4, rerun=True), pretraining, task_data, args,
                                          ngram_files=[str(corpus)])
    assert not rerun["reused"] and rerun["jobs_from_cache"] == 0 and rerun["blimp"]["systems"] == blimp["systems"]
    assert rerun["order_pairs"]["systems"] == first["order_pairs"]["systems"]
    assert rerun["blimp"]["differences"] == blimp["differences"]
    # Another run folder on the same weights and pairs reads every job from $HF_LINEAGE_CACHE/zero-shot/: the same
    # numbers, nothing scored; changed pairs are scored afresh.
    elsewhere = zero_shot.run_zero_shot_stage(Stages(tmp_path / "other", 4, rerun=False), pretraining, task_data,
                                              args, ngram_files=[str(corpus)])
    assert elsewhere["jobs_from_cache"] == elsewhere["jobs"] == 4 and not elsewhere["reused"]
    assert elsewhere["blimp"]["systems"] == blimp["systems"]
    assert elsewhere["order_pairs"]["systems"] == first["order_pairs"]["systems"]
    changed = write_order_pairs(tmp_path / "changed.jsonl", ORDER_ROWS[:2])
    fresh = zero_shot.run_zero_shot_stage(
        Stages(tmp_path / "third", 4, rerun=False), pretraining,
        {"order_pairs": {"status": "ok", "files": {"validation": str(changed)}}}, args, ngram_files=[str(corpus)])
    assert fresh["jobs_from_cache"] == 2 and fresh["order_pairs"]["pairs"] == 2  # the BLiMP jobs only
    # A model's two pair sets are one model entry, their seconds added.
    assert [m["label"] for m in first["models"]] == ["nnlm", "word2vec", "kneser-ney"]
    # --blimp-pairs 0 and no order_pairs task: nothing to run.
    assert zero_shot.run_zero_shot_stage(stages, pretraining, {}, SimpleNamespace(blimp_pairs=0, seed=0)) is None


def grammar(differences, status="ok"):
    """A zero-shot result with BLiMP differences [(lower, higher, low, high)] and two order_pairs entries."""
    names = {"kneser-ney": "kneser-ney", "nnlm": "nnlm", "elmo": "elmo (forward+backward)", "gpt": "gpt",
             "bert": "bert (PLL-word-l2r)"}

    def overall(accuracy):
        return {"accuracy": accuracy, "low": accuracy - 0.02, "high": accuracy + 0.02, "pairs": 1340, "ties": 3}

    systems = {names[s]: {"system": s, "variant": names[s].split("(")[-1].rstrip(")") if "(" in names[s] else "sum",
                          "scoring": "", "overall": overall(0.5 + 0.05 * i), "fields": {"syntax": overall(0.5)},
                          "phenomena": {}} for i, s in enumerate(names)}
    return {"status": status, "error": None, "seconds": 41.0, "reused": False, "device": "cpu",
            "systems": ["nnlm", "word2vec", "elmo", "gpt", "bert", "kneser-ney"],
            "no_sentence_probability": ["word2vec"], "skipped": [], "primary": names,
            "ngram": {"order": 5, "trained_on": "trained on the embedded WikiText-2 sample (605,289 tokens)"},
            "order_pairs": {"pairs": 1000, "systems": {
                "gpt": {"system": "gpt", "variant": "sum", "score": 0.851, "interval": [0.827, 0.873]},
                "kneser-ney": {"system": "kneser-ney", "variant": "sum", "score": 0.777, "interval": [0.753, 0.801]}}},
            "blimp": {"pairs": 1340, "pairs_per_paradigm": 20, "paradigms": 67, "resamples": 1000, "seed": 0,
                      "systems": systems,
                      "published": {"license": "CC BY 4.0", "overall": {"5-gram": 0.612, "GPT-2": 0.830}},
                      "differences": [{"lower": lo, "higher": hi, "lower_score": 0.5, "higher_score": 0.5 + mid,
                                       "difference": mid, "interval": [low, high]}
                                      for lo, hi, low, high in differences for mid in [(low + high) / 2]]}}


ORDER = [("kneser-ney", "nnlm"), ("nnlm", "elmo"), ("elmo", "gpt"), ("gpt", "bert")]


@pytest.mark.parametrize("intervals, verdict", [
    ([(0.01, 0.05)] * 4, "confirmed"),  # every interval above 0
    ([(0.01, 0.05)] * 3 + [(-0.05, -0.01)], "inconclusive"),  # one reversed: not confirmed by the majority rule
    ([(-0.05, -0.01)] * 3 + [(-0.01, 0.02)], "not confirmed"),  # most reversed
    ([(-0.01, 0.02)] * 4, "inconclusive"),  # all within noise
])
def test_the_grammar_claim_is_judged_beyond_the_intervals_only(intervals, verdict):
    results = make_results(on_tasks(ORDERED))
    results["zero_shot"] = grammar([(lo, hi, low, high) for (lo, hi), (low, high) in zip(ORDER, intervals)])
    (found,) = [c for c in claims.evaluate_claims(results) if c["id"] == "grammar_order"]
    assert found["verdict"] == verdict  # no seeds: zero-shot scoring trains nothing, so no one-seed downgrade
    assert [c["pair"] for c in found["comparisons"]] == ["kneser-ney<nnlm", "nnlm<elmo", "elmo<gpt", "gpt<bert"]
    # Without the BLiMP part there is no grammar claim.
    results["zero_shot"] = {**results["zero_shot"], "blimp": None}
    assert "grammar_order" not in [c["id"] for c in claims.evaluate_claims(results)]


def test_the_report_shows_the_zero_shot_column_and_the_grammar_section(tmp_path):
    scores = on_tasks(ORDERED)
    results = make_results(scores)
    results["tasks"]["order_pairs"] = results["tasks"].pop("pairs")
    for cell in results["finetuning"]:
        cell["task"] = "order_pairs" if cell["task"] == "pairs" else cell["task"]
    results["zero_shot"] = grammar([(lo, hi, 0.01, 0.05) for lo, hi in ORDER])
    results["zero_shot"]["order_pairs"]["versus_supervised"] = {
        "zero_shot": "gpt", "family": "bert", "variant": "finetuned", "difference": 0.001, "interval": [-0.03, 0.03],
        "outcome": "within noise"}
    results["claims"] = claims.evaluate_claims(results)
    text = open(write_report(results, tmp_path), encoding="utf-8").read()
    header, rows = table_rows(text, "| family | used as |")
    assert header[-1].startswith("order_pairs zero-shot")
    by_family = {row[0]: row for row in rows}
    assert by_family["GPT"][-1] == "0.851 [0.827, 0.873]" and by_family["NNLM"][-1] == "—"
    assert by_family["word2vec"][-1].startswith("—[^")  # no sentence probability, with its footnote
    assert by_family["*zero-shot only:* Kneser-Ney 5-gram"][-1] == "0.777 [0.753, 0.801]"
    assert "Best zero-shot: GPT 0.851 [0.827, 0.873]; best supervised cell: BERT (finetuned)" in text
    assert "zero-shot − supervised +0.001, 95 % interval [-0.030, +0.030] on the same pairs (within noise)" in text
    section = text.split("## What each language model knows of grammar (zero-shot)")[1].split("\n## ")[0]
    header, rows = table_rows(section.strip(), "| model |")
    assert [row[0] for row in rows] == ["NNLM", "ELMo (forward+backward) ‡", "GPT", "BERT (PLL-word-l2r) ‡",
                                        "Kneser-Ney 5-gram", "*BLiMP published:* 5-gram",
                                        "*BLiMP published:* GPT-2"]
    assert rows[2][1] == "0.650 [0.630, 0.670]" and rows[-1][1] == "0.830"
    assert "No sentence probability, not scored: word2vec" in section
    assert "Each generation knows more grammar: n-gram < NNLM < ELMo < GPT < BERT (BLiMP minimal pairs, zero-shot). " \
           "**Verdict: confirmed**" in section  # the claim's verdict in the section, its rule under the claims


def test_blimp_pairs_is_checked_and_zero_turns_the_section_off():
    with pytest.raises(LineageError, match="--blimp-pairs must be 0"):
        check_arguments(LineageArguments(blimp_pairs=21))
    with pytest.raises(LineageError, match="--blimp-pairs must be 0"):
        check_arguments(LineageArguments(blimp_pairs=-1))
    args = arguments_from_namespace(vars(build_parser().parse_args(["--blimp-pairs", "0", "--tasks", "labeling"])))
    assert args.blimp_pairs == 0 and not zero_shot.zero_shot_wanted(args.tasks, args)
    default = arguments_from_namespace(vars(build_parser().parse_args([])))
    assert zero_shot.blimp_pairs(default) == 20 and zero_shot.zero_shot_wanted(default.tasks, default)


def test_the_best_zero_shot_system_is_compared_with_the_best_supervised_cell_on_the_same_pairs():
    from hf_lineage.lineage.scoring import score_predictions

    gold = ["first", "second"] * 20
    supervised = score_predictions("order_pairs", [["first"] * 40], gold)  # right on half the pairs
    cell = {"task": "order_pairs", "family": "bert", "variant": "frozen", "train_size": 1000, "status": "ok",
            "flags": [], "score": supervised.summary["score"]}
    units = [1.0] * 36 + [0.0] * 4
    shot = {"status": "ok", "primary": {"gpt": "gpt", "kneser-ney": "kneser-ney"}, "order_pairs": {"systems": {
        "gpt": {"score": 0.9, "units": units}, "kneser-ney": {"score": 0.5, "units": [0.5] * 40}}}}
    versus = zero_shot.versus_supervised(shot, [cell], {("order_pairs", "bert", "frozen", 1000): supervised}, 1000, 0)
    assert (versus["zero_shot"], versus["family"], versus["variant"]) == ("gpt", "bert", "frozen")
    assert versus["difference"] == pytest.approx(0.4) and versus["interval"][0] > 0
    assert versus["outcome"] == "holds (one seed)"
    # A flagged cell (did not train) is no side of the comparison.
    assert zero_shot.versus_supervised(shot, [{**cell, "flags": ["one class"]}], {}, 1000, 0) is None


def test_the_plan_says_what_the_zero_shot_stage_will_score():
    """The run says at its start what it will do, the zero-shot stage included (and nothing of it when it is off)."""
    from types import SimpleNamespace

    from hf_lineage.lineage.experiment import plan_message

    def plan(tasks, pairs):
        return plan_message(["gpt"], tasks, [], 0, [], True, SimpleNamespace(blimp_pairs=pairs, precision_note=None),
                            None)

    assert "zero-shot: order_pairs validation and 20 BLiMP pairs per paradigm" in plan(["labeling", "order_pairs"], None)
    assert "zero-shot: 5 BLiMP pairs per paradigm scored" in plan(["labeling"], 5)
    assert "zero-shot" not in plan(["labeling"], 0)
    # The zero-shot jobs' estimate, when there is one, is said, and counted with the fine-tuning's.
    args = SimpleNamespace(blimp_pairs=None, precision_note=None, families=["word2vec", "gpt", "bert"],
                           checkpoints=None, output_dir="out")
    large = plan_message(["word2vec", "gpt", "bert"], ["labeling"], [], 0, ["word2vec", "gpt", "bert"], False, args,
                         (30.0, 40.0), zero_shot_seconds=2400.0)
    assert "Kneser-Ney 5-gram (about 40 min of one core, in the fine-tuning workers)" in large
    assert "fine-tuning and zero-shot scoring roughly 30 min to 40 min" in large
    assert "zero-shot" in plan(["labeling"], None) and "of one core" not in plan(["labeling"], None)


def test_the_plans_estimate_shares_the_zero_shot_jobs_between_the_two_workers():
    import torch

    from hf_lineage.lineage.experiment import estimate_minutes
    from hf_lineage.lineage.settings import SCALES

    if torch.cuda.is_available():
        pytest.skip("the estimate is a 2-core CPU's (None with a GPU)")
    assert estimate_minutes([], 1, {}, SCALES["tiny"], 1000, zero_shot_seconds=1200.0) == (10.0, 10.0)
    assert estimate_minutes([], 1, {}, SCALES["tiny"], 1000) == (0.0, 0.0)


def test_the_estimate_of_a_scoring_job_follows_its_method_and_size(tmp_path):
    """PLL reads a sentence once per token (t copies of t tokens), a causal LM once: at BERT-base's size the BLiMP
    sample's PLL is about 15 one-thread minutes (measured: 950 s on the 2-core Zen 3), GPT's read a few minutes."""
    from hf_lineage.minimal_pairs.model_specs import ModelSpec

    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "pretraining.json").write_text(json.dumps({"parameters": 110_000_000}))
    masked, causal = (ModelSpec("a", "a", kind, "here", folder=folder) for kind in ("masked", "causal"))
    pll = zero_shot.scoring_seconds(masked, "blimp", 20, 1000)
    assert 600 < pll < 1300 and zero_shot.scoring_seconds(causal, "blimp", 20, 1000) < pll / 5
    # Longer sentences cost PLL the square: order_pairs' 1,000 pairs outweigh the 1,340 BLiMP pairs.
    assert zero_shot.scoring_seconds(masked, "order_pairs", 20, 1000) > 1.5 * pll
    assert zero_shot.scoring_seconds(ModelSpec("k", "k", "ngram", "n-gram"), "blimp", 20, 1000) == 5.0
