"""The report of ``hf-lineage lineage`` (hf_lineage/lineage/report.py) on synthetic results dicts built here: every
verdict of every claim reached from the numbers, the noise band checked by hand, report.md's tables and the plots."""

import copy
import json
import math

import pytest

from hf_lineage.lineage.report import evaluate_claims, noise_margin, write_plots, write_report

FAMILIES = ["nnlm", "word2vec", "elmo", "gpt", "bert"]
MAIN_VARIANT = {"nnlm": "frozen", "word2vec": "frozen", "elmo": "frozen", "gpt": "finetuned", "bert": "finetuned"}
UNDERSTANDING = ("labeling", "classification", "pairs")
# The claimed order, with gaps of 0.1: far beyond the noise band at n = 1000 (about 0.04).
ORDERED = {"nnlm": 0.50, "word2vec": 0.55, "elmo": 0.65, "gpt": 0.75, "bert": 0.85}


def make_results(main_scores, extra_cells=(), n=1000, metric="accuracy", both_regimes=True):
    """A results dict as the orchestrator builds it. ``main_scores``: {task: {family: score | "failed"}} for the
    main cells, copied (with ``both_regimes``) into the other regime (frozen / finetuned) with the same score, as the
    default run has every family in both; ``extra_cells``: (family, task, variant, score | "failed") for the other
    variants (a cell given here replaces that copy)."""
    tasks = {
        "labeling": {"kind": "sequence_labeling", "dataset": "UD English EWT, UPOS (sample)", "metric": metric,
                     "train_examples": 1000, "validation_examples": 100, "validation_units": n, "understanding": True},
        "classification": {"kind": "classification", "dataset": "SST-2 (sample)", "metric": metric,
                           "train_examples": 1000, "validation_examples": n, "validation_units": n,
                           "understanding": True},
        "pairs": {"kind": "sentence_pairs", "dataset": "MRPC (sample)", "metric": metric, "train_examples": 800,
                  "validation_examples": n, "validation_units": n, "understanding": True},
        "generation": {"kind": "generation", "dataset": "E2E NLG (sample)", "metric": "bleu", "train_examples": 500,
                       "validation_examples": 80, "validation_units": 80, "understanding": False},
    }

    def cell(family, task, variant, score, main):
        failed = score == "failed"
        return {"family": family, "task": task, "variant": variant, "main": main,
                "status": "failed" if failed else "ok", "error": f"RuntimeError: {family} {task} broke" if failed
                else None, "reused": False, "score": None if failed else score, "metric": tasks[task]["metric"],
                "metrics": {}, "seconds": 1.0, "train_examples": tasks[task]["train_examples"]}

    finetuning = []
    for task, scores in main_scores.items():
        for family, score in scores.items():
            variant = "finetuned" if task == "generation" and family in ("elmo", "gpt", "bert") \
                else MAIN_VARIANT[family]
            finetuning.append(cell(family, task, variant, score, True))
            if both_regimes and tasks[task]["understanding"]:  # the other regime's cell, with the same score
                other = "frozen" if variant == "finetuned" else "finetuned"
                if not any(c[:3] == (family, task, other) for c in extra_cells):
                    finetuning.append(cell(family, task, other, score, False))
    finetuning += [cell(family, task, variant, score, False) for family, task, variant, score in extra_cells]

    def pretraining(family, loss, perplexity):
        words = [40_000 * i for i in range(1, 11)]
        return {"status": "ok", "error": None, "reused": False, "config": "tiny", "objective": f"{family} objective",
                "parameters": 123_456, "seconds": 61.25, "steps": 300, "words_seen": 400_000, "tokens_seen": 500_000,
                "final_train_loss": loss, "validation": {} if perplexity is None else
                {"loss": math.log(perplexity), "perplexity": perplexity},
                "curve": [{"step": 30 * i, "words_seen": w, "seconds": i, "train_loss": loss + 5 / i}
                          for i, w in enumerate(words, 1)],
                "eval_curve": [] if perplexity is None else
                [{"step": 300, "words_seen": 400_000, "loss": math.log(perplexity), "perplexity": perplexity}]}

    return {
        "version": "0.1.0.dev0", "created": "2026-11-22T23:10:00Z", "command": "hf-lineage lineage --output-dir report",
        "machine": "x86_64, 2 CPU cores, torch 2.13.0+cpu", "seconds_total": 812.3, "scale": "tiny", "seed": 0,
        "budget": {"kind": "words", "words": 400_000, "seconds": None, "epochs": 2.0,
                   "description": "2 passes over the corpus (400,000 corpus words) per family"},
        "corpus": {"name": "embedded WikiText-2 sample", "train_words": 200_000, "validation_words": 20_000,
                   "license": "CC BY-SA"},
        "families": list(FAMILIES), "tasks": tasks,
        "pretraining": {"nnlm": pretraining("nnlm", 5.1, 180.5), "word2vec": pretraining("word2vec", 2.7, None),
                        "elmo": pretraining("elmo", 4.9, 140.25), "gpt": pretraining("gpt", 4.4, 95.0),
                        "bert": pretraining("bert", 5.8, 310.0)},
        "finetuning": finetuning, "main_variant": dict(MAIN_VARIANT), "notes": ["a note from the orchestrator"],
    }


# The family-against-family claims are judged in each regime on its own; these tests read the fine-tuned one.
IN_REGIME = {"understanding_order", "bidirectional", "contextual_beats_static"}


def claim(results, claim_id):
    claim_id = f"{claim_id}_finetuned" if claim_id in IN_REGIME else claim_id
    (found,) = [c for c in evaluate_claims(results) if c["id"] == claim_id]
    return found


def on_tasks(*per_task):
    """Main scores for the three understanding tasks from one {family: score} dict each (same one if given once)."""
    per_task = per_task * 3 if len(per_task) == 1 else per_task
    return dict(zip(UNDERSTANDING, per_task))


def with_(base, **changes):
    return {**base, **changes}


# --- the noise band ---------------------------------------------------------------------------------------------


def test_noise_margin_by_hand():
    # p = 0.75, p(1 - p) = 0.1875, * 2 / 300 = 0.00125, sqrt = 0.0353553, * 1.96 = 0.0692965
    assert noise_margin(0.70, 0.80, 300) == pytest.approx(0.0692965, abs=1e-6)
    results = make_results(on_tasks({"gpt": 0.70, "bert": 0.80}, {"gpt": 0.70, "bert": 0.76},
                                    {"gpt": 0.80, "bert": 0.70}), n=300)
    comparisons = claim(results, "bidirectional")["comparisons"]
    assert [c["margin"] for c in comparisons[:2]] == pytest.approx([0.0692965, 1.96 * math.sqrt(0.73 * 0.27 * 2 / 300)])
    assert [c["outcome"] for c in comparisons] == ["holds", "within noise", "reversed"]
    with pytest.raises(ValueError, match="positive number of units"):
        noise_margin(0.5, 0.6, 0)


def test_metric_that_is_not_an_accuracy_has_no_noise_estimate():
    results = make_results(on_tasks({"gpt": 0.700, "bert": 0.701}), metric="f1")
    found = claim(results, "bidirectional")
    assert all(c["margin"] == 0 and not c["noise_estimate"] and c["outcome"] == "holds" for c in found["comparisons"])
    assert found["verdict"] == "confirmed" and "no noise estimate" in found["evidence"]


# --- claim 1: static < ELMo < GPT < BERT ------------------------------------------------------------------------


def test_order_confirmed_and_static_is_the_better_of_nnlm_and_word2vec():
    found = claim(make_results(on_tasks(ORDERED)), "understanding_order")
    assert found["verdict"] == "confirmed"
    assert len(found["comparisons"]) == 9  # 3 adjacent pairs × 3 understanding tasks
    first = found["comparisons"][0]
    assert (first["lower"], first["lower_score"], first["higher"]) == ("static (word2vec)", 0.55, "ELMo")
    assert "classification: static (word2vec) 0.550 < ELMo 0.650 (holds, margin 0.0" in found["evidence"]
    assert found["rule"].startswith("Within one regime (every family fine-tuned)") and "1.96" in found["rule"]
    assert found["regime"] == "finetuned" and found["claim"].endswith("(every family fine-tuned).")
    json.dumps(evaluate_claims(make_results(on_tasks(ORDERED))))  # goes into results.json as it is


def test_order_not_confirmed_when_a_pair_is_reversed_on_most_tasks():
    reversed_bert = with_(ORDERED, bert=0.60)
    found = claim(make_results(on_tasks(reversed_bert, reversed_bert, ORDERED)), "understanding_order")
    assert found["verdict"] == "not confirmed"
    assert [c["outcome"] for c in found["comparisons"] if c["pair"] == "gpt<bert"] == ["reversed", "reversed", "holds"]
    assert "Reversed on most of the tasks compared: gpt < bert." in found["evidence"]


def test_order_not_confirmed_when_the_averaged_order_differs_with_one_reversal():
    # ELMo far above GPT on one task, a hair below it (within noise) on two: averaged, ELMo > GPT.
    strong_elmo, close_elmo = with_(ORDERED, elmo=0.95), with_(ORDERED, elmo=0.74)
    found = claim(make_results(on_tasks(strong_elmo, close_elmo, close_elmo)), "understanding_order")
    outcomes = [c["outcome"] for c in found["comparisons"] if c["pair"] == "elmo<gpt"]
    assert outcomes == ["reversed", "within noise", "within noise"]  # not a majority ...
    assert found["verdict"] == "not confirmed"  # ... but the averaged order is wrong
    assert "(out of the claimed order)" in found["evidence"]


def test_order_inconclusive_when_everything_is_within_noise():
    close = {"nnlm": 0.70, "word2vec": 0.69, "elmo": 0.71, "gpt": 0.72, "bert": 0.73}
    found = claim(make_results(on_tasks(close), n=100), "understanding_order")
    assert {c["outcome"] for c in found["comparisons"]} == {"within noise"}
    assert found["verdict"] == "inconclusive"


def test_order_inconclusive_with_one_reversal_when_the_average_keeps_the_order():
    found = claim(make_results(on_tasks(with_(ORDERED, bert=0.60), with_(ORDERED, bert=0.95),
                                        with_(ORDERED, bert=0.95))), "understanding_order")
    assert sum(c["outcome"] == "reversed" for c in found["comparisons"]) == 1
    assert found["verdict"] == "inconclusive"
    assert "(in the claimed order)" in found["evidence"]


def test_order_not_tested_without_two_groups_and_compares_across_a_gap():
    only_bert = {"nnlm": "failed", "word2vec": "failed", "elmo": "failed", "gpt": "failed", "bert": 0.8}
    found = claim(make_results(on_tasks(only_bert)), "understanding_order")
    assert (found["verdict"], found["comparisons"]) == ("not tested", [])
    assert "groups with any score: bert" in found["evidence"]
    # ELMo failed everywhere: static is compared with GPT directly.
    found = claim(make_results(on_tasks(with_(ORDERED, elmo="failed"))), "understanding_order")
    assert [c["pair"] for c in found["comparisons"][:2]] == ["static<gpt", "gpt<bert"]
    assert found["verdict"] == "confirmed"


def test_generation_does_not_count_for_the_claims():
    upside_down = {"nnlm": 30.0, "word2vec": 25.0, "elmo": 20.0, "gpt": 15.0, "bert": 1.0}
    results = make_results({**on_tasks(ORDERED), "generation": upside_down})
    for found in evaluate_claims(results):
        assert all(c["task"] != "generation" for c in found["comparisons"])
    assert claim(results, "understanding_order")["verdict"] == "confirmed"


# --- claim 2: bidirectional beats unidirectional -----------------------------------------------------------------


@pytest.mark.parametrize("bert, verdict", [
    ((0.85, 0.85, 0.85), "confirmed"),
    ((0.85, 0.85, 0.76), "confirmed"),  # holds on 2 of 3, within noise on one, reversed on none
    ((0.60, 0.60, 0.85), "not confirmed"),
    ((0.85, 0.60, 0.76), "inconclusive"),  # one holds, one reversed, one within noise
    ((0.76, 0.74, 0.75), "inconclusive"),
])
def test_bidirectional_verdicts(bert, verdict):
    results = make_results(on_tasks(*({"gpt": 0.75, "bert": b} for b in bert)))
    found = claim(results, "bidirectional")
    assert found["verdict"] == verdict
    assert [c["higher_score"] for c in found["comparisons"]] == list(bert)
    assert found["comparisons"][0]["lower"] == "GPT (finetuned)"


def test_bidirectional_not_tested_without_gpt():
    found = claim(make_results(on_tasks({"gpt": "failed", "bert": 0.9})), "bidirectional")
    assert found["verdict"] == "not tested" and found["comparisons"] == []


# --- claim 3: pretraining beats training from scratch -----------------------------------------------------------


def scratch_cells(scores):
    """{(family, task): scratch score}."""
    return [(family, task, "scratch", score) for (family, task), score in scores.items()]


@pytest.mark.parametrize("scratch, verdict", [
    ({("bert", "labeling"): 0.50, ("bert", "pairs"): 0.55, ("gpt", "labeling"): 0.40}, "confirmed"),
    ({("bert", "labeling"): 0.95, ("bert", "pairs"): 0.95, ("gpt", "labeling"): 0.40}, "not confirmed"),
    ({("bert", "labeling"): 0.50, ("bert", "pairs"): 0.95}, "inconclusive"),
    ({("bert", "labeling"): 0.84, ("gpt", "labeling"): 0.76}, "inconclusive"),
    ({("bert", "labeling"): "failed"}, "not tested"),
])
def test_pretraining_helps_verdicts(scratch, verdict):
    found = claim(make_results(on_tasks(ORDERED), scratch_cells(scratch)), "pretraining_helps")
    assert found["verdict"] == verdict
    assert len(found["comparisons"]) == sum(score != "failed" for score in scratch.values())


def test_pretraining_helps_compares_the_finetuned_cell_only():
    extra = scratch_cells({("elmo", "labeling"): 0.30, ("nnlm", "labeling"): 0.30})
    extra.append(("elmo", "labeling", "finetuned", 0.70))  # ELMo's main cell is frozen (0.65): not used here
    found = claim(make_results(on_tasks(ORDERED), extra, both_regimes=False), "pretraining_helps")
    by_family = {c["family"]: c for c in found["comparisons"]}
    assert (by_family["elmo"]["higher"], by_family["elmo"]["higher_score"]) == ("ELMo pretrained (finetuned)", 0.70)
    assert "nnlm" not in by_family  # a frozen cell against scratch would compare a frozen network with a trained one
    assert "ELMo: labeling 0.700 (finetuned) vs scratch 0.300 (holds, margin" in found["evidence"]
    assert "labeling 1,000" in found["evidence"]  # the size of the small labelled set


def test_bad_results_raise_value_errors():
    with pytest.raises(ValueError, match="'families'"):
        evaluate_claims({"tasks": {}, "finetuning": []})
    results = make_results(on_tasks(ORDERED))
    results["finetuning"].append(copy.deepcopy(results["finetuning"][0]))
    with pytest.raises(ValueError, match="two cells for family 'nnlm', task 'labeling', variant 'frozen'"):
        evaluate_claims(results)
    results["finetuning"].pop()
    results["finetuning"][0]["score"] = "0.5"
    with pytest.raises(ValueError, match=r"score of nnlm × labeling \(frozen\) is not a number"):
        evaluate_claims(results)


# --- report.md ----------------------------------------------------------------------------------------------------


def table_rows(text, header_start):
    """The rows (lists of cells) of the markdown table whose header starts with ``header_start``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows[0], rows[2:]


def full_results(tmp_path):
    scores = {task: {f: s + 0.01 * i for f, s in ORDERED.items()} for i, task in enumerate(UNDERSTANDING)}
    scores["pairs"]["bert"] = "failed"
    scores["generation"] = {"nnlm": 3.25, "word2vec": 2.5, "elmo": 8.125, "gpt": 12.5, "bert": 10.0}
    extra = scratch_cells({("bert", "labeling"): 0.40, ("gpt", "classification"): 0.45})
    extra += [("elmo", "labeling", "finetuned", 0.70), ("gpt", "labeling", "frozen", 0.6)]
    results = make_results(scores, extra, both_regimes=False)
    results["claims"] = evaluate_claims(results)
    results["plots"] = write_plots(results, tmp_path)
    return results


def test_report_main_table(tmp_path):
    results = full_results(tmp_path)
    text = open(write_report(results, tmp_path), encoding="utf-8").read()
    header, rows = table_rows(text, "| family | used as |")
    assert header[2:] == ["labeling: UD English EWT, UPOS (sample) (accuracy)",
                          "classification: SST-2 (sample) (accuracy)", "pairs: MRPC (sample) (accuracy)",
                          "generation: E2E NLG (sample) (bleu)"]
    assert [row[:2] for row in rows] == [["NNLM", "frozen"], ["word2vec", "frozen"], ["ELMo", "frozen"],
                                          ["GPT", "finetuned"], ["BERT", "finetuned"]]
    assert rows[0][2:] == ["0.500", "0.510", "0.520", "3.250"]
    assert rows[2][2:] == ["0.650", "0.660", "0.670", "8.125 (finetuned)"]  # generation: ELMo fine-tuned
    assert rows[4][2:4] == ["0.850", "0.860"] and rows[4][5] == "10.000"
    assert rows[4][4].startswith("failed[^")  # the failed cell, its footnote ...
    label = rows[4][4][len("failed"):]
    assert f"{label}: BERT × pairs (finetuned) failed: RuntimeError: bert pairs broke" in text
    failed_section = text.split("## Failed stages")[1].split("##")[0]  # ... and the list of failed stages
    assert "fine-tuning BERT × pairs (finetuned): failed — RuntimeError: bert pairs broke" in failed_section


def test_report_pretraining_table_perplexities(tmp_path):
    text = open(write_report(full_results(tmp_path), tmp_path), encoding="utf-8").read()
    header, rows = table_rows(text, "| family | objective |")
    perplexity = header.index("perplexity")
    by_family = {row[0]: row for row in rows}
    assert by_family["word2vec"][perplexity].startswith("—[^")  # never a made-up perplexity
    assert by_family["word2vec"][header.index("validation loss")] == "—"
    assert by_family["NNLM"][perplexity].startswith("180.50[^") and by_family["ELMo"][perplexity].startswith("140.25[^")
    assert by_family["BERT"][perplexity].startswith("310.00[^")
    assert by_family["GPT"][header.index("parameters")] == "123,456"
    assert by_family["GPT"][header.index("time (s)")] == "61.2"
    notes = {row[0]: by_family[row[0]][perplexity].split("—" if row[0] == "word2vec" else "[", 1)[1]
             for row in rows}
    footnote = {line.split(":", 1)[0]: line for line in text.splitlines() if line.startswith("[^")}
    assert "not a language model" in footnote[notes["word2vec"]]
    assert "masked-LM" in footnote["[" + notes["BERT"]]
    assert "not directly comparable" in footnote["[" + notes["GPT"]]
    assert notes["GPT"] == notes["NNLM"] == notes["ELMo"]


def test_report_claims_variants_plots_and_caveats(tmp_path):
    results = full_results(tmp_path)
    text = open(write_report(results, tmp_path), encoding="utf-8").read()
    for number, found in enumerate(results["claims"], 1):
        assert f"### {number}. {found['claim']}" in text
        assert f"**Verdict: {found['verdict']}.**" in text and found["evidence"] in text
    header, rows = table_rows(text, "| family | variant |")
    assert header[2:] == ["labeling (accuracy)", "classification (accuracy)", "pairs (accuracy)"]  # no generation
    by_row = {(row[0], row[1]): row[2:] for row in rows}
    assert by_row[("ELMo", "finetuned")] == ["0.700", "—", "—"]
    assert by_row[("GPT", "frozen")] == ["0.600", "—", "—"]
    assert by_row[("BERT", "scratch")] == ["0.400", "—", "—"]
    assert by_row[("BERT", "finetuned (main)")][2].startswith("failed[^")
    for name in ("pretraining_curves.png", "downstream_scores.png", "frozen_vs_finetuned.png"):
        assert f"]({name})" in text
    assert text.count("margin = 1.96 · sqrt(p(1 − p) · 2 / n)") == 1  # the noise rule, printed once
    assert "- a note from the orchestrator" in text
    assert "Differences inside the intervals are called within noise" in text
    assert "one seed (0)" in text  # the caveats say what a single seed does not measure
    assert write_report(results, tmp_path) and open(tmp_path / "report.md").read() == text  # deterministic


def test_report_without_claims_or_plots(tmp_path):
    results = make_results(on_tasks(ORDERED))
    text = open(write_report(results, tmp_path), encoding="utf-8").read()
    assert "The claims were not evaluated" in text and "No plots were drawn" in text
    assert "None: every stage that was requested ran to the end." in text
    with pytest.raises(ValueError, match="'pretraining'"):
        write_report({k: v for k, v in results.items() if k != "pretraining"}, tmp_path)


# --- plots ------------------------------------------------------------------------------------------------------


def assert_png(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_write_plots_writes_three_pngs(tmp_path):
    results = full_results(tmp_path / "first")
    assert results["plots"] == ["pretraining_curves.png", "downstream_scores.png", "frozen_vs_finetuned.png"]
    for name in results["plots"]:
        assert_png(tmp_path / "first" / name)
    # Same results, same bytes.
    assert write_plots(results, tmp_path / "second") == results["plots"]
    for name in results["plots"]:
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "second" / name).read_bytes()


def test_write_plots_skips_plots_without_data(tmp_path):
    all_failed = {f: "failed" for f in FAMILIES}
    results = make_results(on_tasks(all_failed))
    assert write_plots(results, tmp_path / "a") == ["pretraining_curves.png"]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["pretraining_curves.png"]
    results = make_results(on_tasks(ORDERED))
    for stage in results["pretraining"].values():
        stage.update(curve=[], eval_curve=[], validation={})
    results["pretraining"]["gpt"] = {"status": "failed", "error": "boom"}
    assert write_plots(results, tmp_path / "b") == ["downstream_scores.png", "frozen_vs_finetuned.png"]
    assert_png(tmp_path / "b" / "downstream_scores.png")


def test_contextual_beats_static_and_one_seed_verdicts():
    """The claims of issue 32: each contextual family against the best static one on the tasks that need context,
    and pretrained against scratch below the main table's size; a verdict from one seed is only "suggested"."""
    from hf_lineage.lineage.claims import _claim

    results = make_results({"labeling": {f: s for f, s in ORDERED.items()}})
    results["tasks"]["shift"] = {"metric": "accuracy", "understanding": True, "needs_context": True,
                                 "validation_examples": 1000}
    for family, score in {"nnlm": 0.55, "word2vec": 0.60, "elmo": 0.70, "gpt": 0.75, "bert": 0.50}.items():
        results["finetuning"].append({"family": family, "task": "shift", "variant": "frozen", "main": True,
                                      "status": "ok", "score": score})
    (found,) = [c for c in evaluate_claims(results) if c["id"] == "contextual_beats_static_frozen"]
    outcomes = {c["family"]: c["outcome"] for c in found["comparisons"]}
    assert outcomes == {"elmo": "holds", "gpt": "holds", "bert": "reversed"}
    assert found["verdict"] == "inconclusive" and "static (word2vec) 0.600 < ELMo 0.700" in found["evidence"]
    assert all(c["task"] == "shift" for c in found["comparisons"])  # labeling does not need context
    one_seed = {"outcome": "holds (one seed)", "seed_differences": [0.1]}
    assert _claim("contextual_beats_static", "confirmed", "", [one_seed])["verdict"] == "suggested (one seed)"
    assert _claim("contextual_beats_static", "not confirmed", "", [one_seed])["verdict"] == "contradicted (one seed)"


def test_pretraining_helps_small_compares_every_curve_size_below_the_main_one():
    results = make_results({"labeling": {f: s for f, s in ORDERED.items()}})
    results["main_train_size"], results["curve_sizes"] = 1000, [100, 300, 1000]
    for variant, scores in (("finetuned", (0.70, 0.75)), ("scratch", (0.50, 0.74))):
        for size, score in zip((100, 300), scores):
            results["finetuning"].append({"family": "gpt", "task": "labeling", "variant": variant, "status": "ok",
                                          "score": score, "train_size": size, "main": False})
    found = claim(results, "pretraining_helps_small")
    assert [(c["size"], c["outcome"]) for c in found["comparisons"]] == [(100, "holds"), (300, "within noise")]
    assert found["verdict"] == "inconclusive" and "GPT on labeling @100: +0.200" in found["evidence"]


# --- cells that did not train, the regimes, the shrink's interval, multiplicity (issue 42) -------------------------


def test_training_flags_one_class_and_never_moved():
    from hf_lineage.lineage.finetuning import training_flags

    curve = [{"epoch": e, "score": s} for e, s in enumerate((0.50, 0.60, 0.70), 1)]
    trained = {"task": "order", "predictions": ["original"] * 90 + ["rotated"] * 10, "dev_curve": curve}
    assert training_flags(trained) == []
    one_class = {**trained, "predictions": ["original"] * 96 + ["rotated"] * 4}
    assert training_flags(one_class) == ["one class"]
    stuck = {**trained, "dev_curve": [{"epoch": e, "score": 0.535} for e in (1, 2, 3)]}
    assert training_flags(stuck) == ["never moved"]
    tagger = {"task": "labeling", "predictions": [["NOUN"] * 19 + ["VERB"]] * 5, "dev_curve": curve}
    assert training_flags(tagger) == ["one class"]  # 95 % of the tokens one tag


def test_flagged_cells_are_left_out_of_every_verdict_and_marked(tmp_path):
    results = make_results(on_tasks(ORDERED), scratch_cells({("bert", "labeling"): 0.90}))
    scratch = next(c for c in results["finetuning"] if c["variant"] == "scratch")
    assert claim(results, "pretraining_helps")["comparisons"][0]["outcome"] == "reversed"  # 0.85 < 0.90
    scratch.update(flags=["one class"], trained=False)
    found = claim(results, "pretraining_helps")
    assert found["verdict"] == "not tested" and "BERT scratch on labeling @None (one class)" in found["evidence"]
    results["claims"] = evaluate_claims(results)
    text = open(write_report(results, tmp_path), encoding="utf-8").read()
    assert "(0.900, did not train: one class)" in text


def test_family_claims_are_judged_within_each_regime_never_across():
    # Frozen: static < ELMo < GPT < BERT; fine-tuned: the reverse. Each regime gets its own verdict.
    reverse = dict(zip(ORDERED, sorted(ORDERED.values(), reverse=True)))
    extra = [(f, t, "frozen", s) for t in UNDERSTANDING for f, s in ORDERED.items()]
    extra += [(f, t, "finetuned", s) for t in UNDERSTANDING for f, s in reverse.items()]
    results = make_results({}, extra)
    verdicts = {c["id"]: c["verdict"] for c in evaluate_claims(results)}
    assert verdicts["understanding_order_frozen"] == "confirmed"
    assert verdicts["understanding_order_finetuned"] == "not confirmed"
    assert verdicts["bidirectional_frozen"] == "confirmed" and verdicts["bidirectional_finetuned"] == "not confirmed"


def test_the_shrink_of_the_gain_has_its_own_interval():
    """little_data: (pretrained − scratch) at 100 − the same at 1000, on the same units, with a bootstrap interval."""
    import numpy as np

    from hf_lineage.lineage.scoring import Scored, contrast

    rng = np.random.default_rng(0)

    def system(accuracy, seeds=3):
        per_seed = [(rng.random(1000) < accuracy).astype(float) for _ in range(seeds)]
        return Scored({"score": float(np.mean(per_seed)), "seed_scores": [float(v.mean()) for v in per_seed]},
                      np.mean(per_seed, axis=0), per_seed)

    big_gain = [system(0.80), system(0.50), system(0.86), system(0.84)]  # +0.30 at 100, +0.02 at 1000
    shrink = contrast("order", big_gain, (1, -1, -1, 1))
    assert shrink["difference"] == pytest.approx(0.28, abs=0.05) and shrink["interval"][0] > 0.2
    same_gain = [system(0.80), system(0.70), system(0.85), system(0.75)]
    low, high = contrast("order", same_gain, (1, -1, -1, 1))["interval"]
    assert low < 0 < high


def test_multiplicity_counts_the_comparisons_behind_the_verdicts():
    from hf_lineage.lineage.claims import multiplicity

    claims = evaluate_claims(make_results(on_tasks(ORDERED)))
    found = multiplicity(claims)
    n = sum(len(c["comparisons"]) for c in claims)
    assert found["comparisons"] == n > 0 and found["expected_by_chance_per_direction"] == round(0.025 * n, 1)
    assert f"rest on {n} comparisons" in found["note"]


def test_learning_rate_sweep_keeps_the_best_dev_score_and_noisy_tasks_get_more_seeds():
    from hf_lineage.lineage.experiment import noisy_tasks, pick_learning_rate

    def record(dev, status="ok"):
        return {"status": status, "error": None if status == "ok" else "boom", "result": {"dev_score": dev}}

    tried = [(3e-4, record(0.61)), (1e-3, record(0.70)), (3e-3, record(0.70))]
    assert pick_learning_rate(tried)["result"]["dev_score"] == 0.70 and pick_learning_rate(tried) is tried[1][1]
    assert pick_learning_rate([*tried, (1e-2, record(None, "failed"))])["status"] == "failed"
    cells = [{"task": "order", "spread": {"std": 0.08}}, {"task": "labeling", "spread": {"std": 0.01}},
             {"task": "order_pairs", "spread": None}]
    assert noisy_tasks(cells) == ["order"]


def test_learned_enough_names_a_model_that_knows_less_than_word_identity(tmp_path):
    from hf_lineage.lineage.diagnostics import learned_enough

    results = make_results(on_tasks(ORDERED), [("elmo", "labeling", "scratch", 0.70),
                                               ("gpt", "labeling", "scratch", 0.60)])
    results["main_train_size"] = None
    for cell in results["finetuning"]:
        cell.setdefault("train_size", None)
    upos = {"elmo": (0.661, [0.64, 0.68]), "gpt": (0.80, [0.78, 0.82])}
    results["probes"] = {"scores": [
        {"family": f, "layer_name": "layer 1", "property": "upos", "accuracy": a, "accuracy_interval": i,
         "majority": 0.725} for f, (a, i) in upos.items()]}
    rows = {r["family"]: r for r in learned_enough(results)}
    assert set(rows) == {"elmo", "gpt", "bert"}  # the contextual families only
    assert not rows["elmo"]["enough"] and "below each word's most frequent tag (0.725)" in rows["elmo"]["why"]
    assert "frozen, it tags worse (0.650)" in rows["elmo"]["why"]
    assert rows["gpt"]["enough"]  # frozen (0.75, copied from its main cell) beats scratch 0.60, probe above majority
    assert rows["bert"]["enough"] is None  # no probe, no scratch cell: nothing to judge by, not a silent "yes"
    results["learned_enough"] = list(rows.values())
    results["claims"], results["probes"] = evaluate_claims(results), None
    report = open(write_report(results, tmp_path)).read()
    assert "## Did each contextual model learn enough to be compared?" in report and "| not measured |" in report
    # a fine-tuned cell that loses to the same network from scratch: its pretraining gave the task nothing
    results["finetuning"].append({**next(c for c in results["finetuning"] if c["family"] == "bert"
                                         and c["task"] == "labeling"), "variant": "scratch", "score": 0.99, "main": False})
    bert = {r["family"]: r for r in learned_enough(results)}["bert"]
    assert bert["enough"] is False and "fine-tuned, it tags worse" in bert["why"] and "(0.990)" in bert["why"]


# --- BERT's ablations (issue 45) ----------------------------------------------------------------------------------


def with_ablations(bert, no_nsp, ltr, n=1000):
    """The lineage's results with BERT's ablations run: on each understanding task and on one that needs context
    (``shift``, every validation set of ``n`` units), BERT, BERT without NSP and BERT left to right, fine-tuned."""
    results = make_results(on_tasks(ORDERED), n=n)
    results["tasks"]["shift"] = {"metric": "accuracy", "understanding": True, "needs_context": True,
                                 "validation_examples": n, "validation_units": n}
    results["families"] += ["bert-no-nsp", "bert-ltr"]
    for task in (*UNDERSTANDING, "shift"):
        for family, score in {"bert": bert, "bert-no-nsp": no_nsp, "bert-ltr": ltr}.items():
            if family == "bert" and task != "shift":
                results["finetuning"] = [c for c in results["finetuning"]
                                         if (c["family"], c["task"], c["variant"]) != ("bert", task, "finetuned")]
            results["finetuning"].append({"family": family, "task": task, "variant": "finetuned", "main": True,
                                          "status": "ok", "score": score})
    return results


def ablation_claim(results, claim_id):
    (found,) = [c for c in evaluate_claims(results) if c["id"] == f"{claim_id}_finetuned"]
    return found


@pytest.mark.parametrize("bert, no_nsp, n, verdict, effect", [
    (0.800, 0.801, 200_000, "confirmed", "small"),  # the intervals inside the ±0.02 margin
    (0.850, 0.750, 1000, "not confirmed", "large"),  # NSP helps far beyond noise and the margin
    (0.700, 0.800, 1000, "not confirmed", "large"),  # ... or hurts: either way it matters
    (0.800, 0.810, 1000, "inconclusive", "undecided"),  # inside the noise, but the noise is wider than the margin
])
def test_nsp_matters_little_is_judged_against_a_margin_fixed_up_front(bert, no_nsp, n, verdict, effect):
    found = ablation_claim(with_ablations(bert, no_nsp, 0.5, n=n), "nsp_little")
    assert found["verdict"] == verdict and {c["effect"] for c in found["comparisons"]} == {effect}
    assert len(found["comparisons"]) == 4 and "margin of 0.02" in found["rule"]


@pytest.mark.parametrize("bert, no_nsp, ltr, verdict", [
    (0.80, 0.80, 0.60, "confirmed"),  # left to right is far worse on the task that needs context
    (0.80, 0.80, 0.79, "inconclusive"),  # within noise
    (0.80, 0.80, 0.95, "not confirmed"),  # left to right is better
    (0.50, 0.80, 0.60, "inconclusive"),  # the direction gap holds but NSP's effect (0.3) is larger: not *the* key
])
def test_bidirectional_is_the_key_factor_compares_bert_without_nsp_with_it_left_to_right(bert, no_nsp, ltr, verdict):
    found = ablation_claim(with_ablations(bert, no_nsp, ltr), "bidirectional_key")
    assert found["verdict"] == verdict
    assert [c["task"] for c in found["comparisons"]] == ["shift"]  # only the task built to need context
    assert found["comparisons"][0]["lower"].startswith("BERT left-to-right")


def test_the_ablation_claims_appear_only_when_it_ran_and_leave_the_lineage_claims_alone():
    plain = make_results(on_tasks(ORDERED))
    assert not {"nsp_little", "bidirectional_key"} & {c["id"].rsplit("_", 1)[0] for c in evaluate_claims(plain)}
    ablated = with_ablations(ORDERED["bert"], 0.1, 0.1)
    ablated["tasks"].pop("shift")
    ablated["finetuning"] = [c for c in ablated["finetuning"] if c["task"] != "shift"]
    claims = evaluate_claims(ablated)
    lineage = [c for c in claims if not c["id"].startswith(("nsp_little", "bidirectional_key"))]
    assert lineage == evaluate_claims(plain)  # the ablations' (far lower) scores change no lineage verdict
    assert {c["id"] for c in claims} - {c["id"] for c in lineage} == {
        f"{claim}_{regime}" for claim in ("nsp_little", "bidirectional_key") for regime in ("frozen", "finetuned")}
