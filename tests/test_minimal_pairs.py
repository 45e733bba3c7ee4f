"""``hf-lineage evaluate minimal-pairs`` (``hf_lineage.minimal_pairs``): each scorer against its definition computed by
hand on tiny models built here (lineage GPT, NNLM, BERT, ELMo; transformers' GPT-2, OpenAI GPT and BERT), the text
preparation against WikiText's own files and the shipped checkpoints' vocabularies, ties, the bootstrap, the published
rows, errors that name the file and line, and the command end to end on the shipped checkpoints."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from hf_lineage import samples
from hf_lineage.checkpoints import path as shipped
from hf_lineage.evaluations import cli as evaluate_cli
from hf_lineage.minimal_pairs.model_specs import kind_of_config, resolve_model, resolve_models
from hf_lineage.minimal_pairs.pairs import MinimalPair, MinimalPairsError, read_pairs
from hf_lineage.minimal_pairs.scorers import NoSentenceProbability, load_scorer, start_token_id
from hf_lineage.minimal_pairs.tallies import (
    Grouping,
    canonical_groups,
    compare,
    load_published,
    published_summary,
    score_pairs,
    summarize,
)
from hf_lineage.minimal_pairs.text_preparation import lowercases, prepare, text_style, wikitext_words

from conftest import CORPUS

SENTENCES = ["The cat sat on the mat.", "A journey of a thousand miles begins.", "Neural networks learn.",
             "Paris is the capital of France, and Berlin is the capital of Germany."]


def blimp_line(good, bad, uid="anaphor_gender_agreement", field="morphology", term="anaphor_agreement", pair_id=0):
    return json.dumps({"sentence_good": good, "sentence_bad": bad, "field": field, "linguistics_term": term,
                       "UID": uid, "pairID": str(pair_id)}) + "\n"


# --------------------------------------------------------------------------- tiny models, saved


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Tiny random models saved as folders: lineage GPT, NNLM, BERT, ELMo and transformers' GPT-2, OpenAI GPT
    (its tokenizer without a start token) and BERT."""
    from transformers import BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel, OpenAIGPTConfig, \
        OpenAIGPTLMHeadModel

    from hf_lineage import (
        LineageBertConfig,
        LineageBertForPreTraining,
        LineageElmoConfig,
        LineageElmoForPreTraining,
        LineageGPTConfig,
        LineageGPTForCausalLM,
        LineageNNLMConfig,
        LineageNNLMForCausalLM,
    )
    from hf_lineage.objectives.elmo import elmo_tokenizer_from_corpus
    from hf_lineage.tokenization import train_bpe_tokenizer, train_wordlevel_tokenizer, train_wordpiece_tokenizer

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("minimal_pairs_models")
    out = {}
    bpe = train_bpe_tokenizer(iterator=CORPUS, vocab_size=300, model_max_length=64)
    words = train_wordlevel_tokenizer(iterator=CORPUS)
    pieces = train_wordpiece_tokenizer(iterator=CORPUS, vocab_size=120, min_frequency=1, model_max_length=64)
    elmo_tok = elmo_tokenizer_from_corpus(iterator=CORPUS)
    built = {
        "gpt": (LineageGPTForCausalLM(LineageGPTConfig.from_named(
            "tiny", vocab_size=len(bpe), pad_token_id=bpe.pad_token_id, bos_token_id=bpe.eos_token_id,
            eos_token_id=bpe.eos_token_id, max_position_embeddings=64)), bpe),
        "nnlm": (LineageNNLMForCausalLM(LineageNNLMConfig.from_named("tiny", vocab_size=len(words))), words),
        "bert": (LineageBertForPreTraining(LineageBertConfig.from_named(
            "tiny", vocab_size=len(pieces), max_position_embeddings=64)), pieces),
        "elmo": (LineageElmoForPreTraining(LineageElmoConfig.from_named(
            "tiny", vocab_size=len(elmo_tok), dropout=0.0, scalar_mix_dropout=0.0)), elmo_tok),
        "gpt2": (GPT2LMHeadModel(GPT2Config(vocab_size=len(bpe), n_positions=64, n_embd=32, n_layer=2, n_head=2,
                                            bos_token_id=bpe.eos_token_id, eos_token_id=bpe.eos_token_id)), bpe),
        "hf-bert": (BertForMaskedLM(BertConfig(vocab_size=len(pieces), hidden_size=32, num_hidden_layers=2,
                                               num_attention_heads=2, intermediate_size=64,
                                               max_position_embeddings=64)), pieces),
    }
    for name, (model, tokenizer) in built.items():
        model.eval().save_pretrained(root / name)
        tokenizer.save_pretrained(root / name)
        out[name] = root / name
    openai = OpenAIGPTLMHeadModel(OpenAIGPTConfig(vocab_size=len(bpe), n_positions=64, n_embd=32, n_layer=2, n_head=2))
    openai.eval().save_pretrained(root / "openai-gpt")
    no_start = train_bpe_tokenizer(iterator=CORPUS, vocab_size=300, model_max_length=64)
    no_start.bos_token = no_start.eos_token = None
    no_start.save_pretrained(root / "openai-gpt")
    out["openai-gpt"] = root / "openai-gpt"
    return out


def scorer_of(folder, **kwargs):
    return load_scorer(resolve_model(str(folder)), **kwargs)


# --------------------------------------------------------------------------- text preparation


def test_wikitext_preparation_is_how_wikitext_writes_text():
    """Clitics split at the apostrophe (WikiText holds ``doesn 't``, never ``does n't``), punctuation split, hyphens
    as ``@-@``, case kept."""
    assert wikitext_words("Mary doesn't like herself.") == ["Mary", "doesn", "'t", "like", "herself", "."]
    assert wikitext_words("Who can't the ladies' ex-wives see?") == ["Who", "can", "'t", "the", "ladies", "'", "ex",
                                                                      "@-@", "wives", "see", "?"]
    assert wikitext_words("It's 1,000 or 3.5 (maybe).") == ["It", "'s", "1", "@,@", "000", "or", "3", "@.@", "5",
                                                           "(", "maybe", ")", "."]
    assert prepare("Mary doesn't like herself.", "wikitext") == " Mary doesn 't like herself ."
    assert prepare("Mary doesn't like herself.", "raw") == "Mary doesn't like herself."
    corpus = samples.path("lineage", "corpus.train.txt").read_text(encoding="utf-8")
    for written in (" doesn 't ", " didn 't ", " 's ", " @-@ ", " . "):
        assert written in corpus, written
    assert " does n't " not in corpus and "n't" not in corpus
    with pytest.raises(ValueError, match="unknown text format"):
        prepare("a", "moses")


def test_the_shipped_checkpoints_read_blimp_sentences_as_their_pretraining_text():
    """Every shipped checkpoint records WikiText; prepared that way, a BLiMP sentence has no word the NNLM's
    vocabulary lacks, while the raw sentence has two; BERT lowercases by itself (its pretraining did), the NNLM does
    not."""
    from transformers import AutoTokenizer

    for family in ("nnlm", "gpt", "elmo", "bert", "word2vec"):
        assert text_style(shipped(family))[0] == "wikitext"
    nnlm = AutoTokenizer.from_pretrained(shipped("nnlm"))
    sentence = "Mary doesn't like herself."
    assert nnlm.unk_token not in nnlm.tokenize(prepare(sentence, "wikitext"))
    assert nnlm.tokenize(prepare(sentence, "raw")).count(nnlm.unk_token) == 2  # doesn't, herself.
    bert = AutoTokenizer.from_pretrained(shipped("bert"))
    assert lowercases(bert) and not lowercases(nnlm)
    assert bert.tokenize(prepare(sentence, "wikitext"))[:3] == ["mary", "doesn", "'"]
    gpt = load_scorer(resolve_model("gpt"))
    assert gpt.describe_input(sentence).startswith("ĠMary Ġdoesn Ġ'")  # WikiText lines start with a space


def test_the_text_format_comes_from_the_folders_record_or_the_option(tmp_path, folders):
    assert text_style(folders["gpt"]) == ("raw", "no WikiText pre-training recorded: the sentence as it is")
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "pretraining.json").write_text(json.dumps({"corpus": {"files": ["en=wiki.train.tokens"]}}))
    assert text_style(tmp_path)[0] == "wikitext"
    (tmp_path / "pretraining.json").write_text(json.dumps({"text_format": "raw", "corpus": {"files": ["wiki.tokens"]}}))
    assert text_style(tmp_path)[0] == "raw"
    assert text_style(shipped("gpt"), "raw") == ("raw", "--text-format raw")
    assert resolve_model("gpt", text_format="raw").text_style == "raw"
    assert resolve_model("kneser-ney").text_style == "wikitext"  # the embedded WikiText-2 sample


# --------------------------------------------------------------------------- models named, kinds


def test_a_lineage_familys_scoring_is_its_registry_records_not_its_name(monkeypatch):
    """A new masked or bidirectional family is scored as its ``Family.sentence_scoring`` says: no module tests a
    family's name to decide (issue 61)."""
    import dataclasses

    from hf_lineage import registry

    for name, scoring in (("toymlm", "masked"), ("toybilm", "elmo"), ("toylm", None)):
        record = dataclasses.replace(registry.FAMILIES["gpt"], sentence_scoring=scoring)
        monkeypatch.setitem(registry.FAMILIES, name, record)
        assert kind_of_config({"model_type": f"lineage-{name}", "architectures": []}) == (scoring or "causal")
    monkeypatch.setitem(registry.FAMILIES, "toyvectors", dataclasses.replace(registry.FAMILIES["bert"],
                                                                              sentence_scoring=None))
    assert kind_of_config({"model_type": "lineage-toyvectors", "architectures": []}) == "vectors"


def test_model_arguments_name_shipped_checkpoints_folders_and_the_ngram(folders):
    kinds = {family: resolve_model(family).kind for family in ("svd", "nnlm", "word2vec", "glove", "elmo", "gpt",
                                                                "bert")}
    assert kinds == {"svd": "vectors", "nnlm": "causal", "word2vec": "vectors", "glove": "vectors", "elmo": "elmo",
                     "gpt": "causal", "bert": "masked"}
    assert resolve_model("gpt").folder == shipped("gpt")
    assert {name: resolve_model(str(folder)).kind for name, folder in folders.items()} == {
        "gpt": "causal", "nnlm": "causal", "bert": "masked", "elmo": "elmo", "gpt2": "causal", "hf-bert": "masked",
        "openai-gpt": "causal"}
    ngram = resolve_model("kneser-ney:3")
    assert (ngram.kind, ngram.order, ngram.label) == ("ngram", 3, "kneser-ney:3")
    assert resolve_model("kneser-ney").order == 5
    assert resolve_model("mine=bert").label == "mine"
    with pytest.raises(MinimalPairsError, match="order is one of 2, 3, 4, 5"):
        resolve_model("kneser-ney:7")
    with pytest.raises(MinimalPairsError, match="named twice"):
        resolve_models(["gpt", "gpt"])
    with pytest.raises(MinimalPairsError, match="neither a causal nor a masked"):
        kind_of_config({"model_type": "t5", "architectures": ["T5ForConditionalGeneration"]})
    with pytest.raises(NoSentenceProbability, match="no probability of a sentence"):
        load_scorer(resolve_model("word2vec"))


# --------------------------------------------------------------------------- causal LMs


def hand_causal(model, rows):
    """Σ_t log_softmax(model(prefix_<t)[-1])[token_t], one prefix at a time, no padding."""
    scores = []
    with torch.no_grad():
        for ids in rows:
            total = 0.0
            for t in range(1, len(ids)):
                logits = model(input_ids=torch.tensor([ids[:t]])).logits[0, -1]
                total += torch.log_softmax(logits.double(), -1)[ids[t]].item()
            scores.append(total)
    return np.array(scores)


@pytest.mark.parametrize("name", ["gpt", "nnlm", "gpt2", "openai-gpt"])
def test_the_causal_score_is_a_hand_loop_over_log_softmax(folders, name):
    scorer = scorer_of(folders[name], batch_size=3)  # batches of unequal lengths, right-padded
    texts = [" " + s for s in SENTENCES] if name == "nnlm" else SENTENCES
    got = scorer.score_prepared(texts)
    encoded = [scorer.tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    start = scorer.start_id
    expected = hand_causal(scorer.model, [([start] if start is not None else []) + ids for ids in encoded])
    np.testing.assert_allclose(got.variants["sum"], expected, rtol=1e-5, atol=1e-4)
    assert got.inputs == [tuple(ids) for ids in encoded]
    if name == "nnlm":
        assert start == scorer.model.config.context_start_token_id  # </s>, where every training line starts
    if name in ("gpt", "gpt2"):
        assert scorer.tokenizer.convert_ids_to_tokens(start) == "<|endoftext|>"
    if name == "openai-gpt":
        assert start is None and "first token is not scored" in scorer.notes[0]


def test_the_start_token_is_the_context_start_then_bos_then_eos():
    class Stand:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    tok = Stand(bos_token_id=None, eos_token_id=7)
    assert start_token_id(Stand(context_start_token_id=3), tok) == 3
    assert start_token_id(Stand(), Stand(bos_token_id=5, eos_token_id=7)) == 5
    assert start_token_id(Stand(), tok) == 7
    assert start_token_id(Stand(), Stand(bos_token_id=None, eos_token_id=None)) is None


# --------------------------------------------------------------------------- masked LMs


def hand_pll(model, tokenizer, text, l2r=False):
    """PLL (or PLL-word-l2r) of one sentence, one masked copy at a time."""
    enc = tokenizer(text, return_special_tokens_mask=True)
    ids, special, words = enc["input_ids"], enc["special_tokens_mask"], enc.word_ids()
    total = 0.0
    with torch.no_grad():
        for j in range(len(ids)):
            if special[j]:
                continue
            row = list(ids)
            masked = [j] + ([k for k in range(j + 1, len(ids)) if not special[k] and words[k] == words[j]] if l2r
                            else [])
            for k in masked:
                row[k] = tokenizer.mask_token_id
            logits = model(input_ids=torch.tensor([row])).logits[0, j]
            total += torch.log_softmax(logits.double(), -1)[ids[j]].item()
    return total


@pytest.mark.parametrize("name", ["bert", "hf-bert"])
def test_pll_with_every_masked_copy_in_one_batch_is_masking_one_at_a_time(folders, name):
    scorer = scorer_of(folders[name], batch_size=200)  # every copy of every sentence in one forward pass
    assert scorer.sparse == (name == "bert")  # lineage BERT's vocabulary layer runs at the scored positions only
    got = scorer.score_prepared(SENTENCES)
    for i, text in enumerate(SENTENCES):
        assert got.variants["PLL"][i] == pytest.approx(hand_pll(scorer.model, scorer.tokenizer, text), abs=1e-4)
        assert got.variants["PLL-word-l2r"][i] == pytest.approx(
            hand_pll(scorer.model, scorer.tokenizer, text, l2r=True), abs=1e-4)
    one_by_one = scorer_of(folders[name], batch_size=1).score_prepared(SENTENCES)  # each sentence's copies alone
    for variant in ("PLL", "PLL-word-l2r"):
        np.testing.assert_allclose(one_by_one.variants[variant], got.variants[variant], rtol=1e-5, atol=1e-4)


def test_pll_word_l2r_differs_from_pll_exactly_when_a_word_has_several_tokens(folders):
    scorer = scorer_of(folders["bert"])
    tokenizer = scorer.tokenizer
    split = [w for w in "quick journey thousand distributed representations capital".split()
             if len(tokenizer.tokenize(w)) >= 3]
    whole = [w for w in "the cat sat on a mat".split() if len(tokenizer.tokenize(w)) == 1]
    assert split and len(whole) >= 4
    texts = [" ".join(whole), f"the {split[0]} sat", f"a {split[-1]}"]
    got = scorer.score_prepared(texts)
    pll, l2r = got.variants["PLL"], got.variants["PLL-word-l2r"]
    assert pll[0] == l2r[0]  # no word in pieces: the same copies, the same score
    assert pll[1] != l2r[1] and pll[2] != l2r[2]
    # The definition on a hand-made case: in "a W" with W = p1 p2 p3, l2r masks {p1, p2, p3} for p1, {p2, p3} for p2,
    # {p3} for p3 (as PLL does); "a" alone.
    enc = tokenizer(texts[2], return_special_tokens_mask=True)
    copies = scorer.masked_copies(enc["input_ids"], enc["special_tokens_mask"], enc.word_ids())
    mask = tokenizer.mask_token_id
    l2r_masks = sorted((j, tuple(k for k, t in enumerate(row) if t == mask)) for row, j, _, is_l2r in copies if is_l2r)
    pieces = len(tokenizer.tokenize(split[-1]))
    assert l2r_masks == [(2 + p, tuple(range(2 + p, 2 + pieces))) for p in range(pieces - 1)]


# --------------------------------------------------------------------------- ELMo


def test_elmo_scores_its_two_language_models_and_their_sum(folders):
    """Forward and backward scores are the model's own losses over the words (the markers left out), and the third
    scoring is their sum."""
    scorer = scorer_of(folders["elmo"], batch_size=2)
    texts = ["the cat sat on the mat", "a dog", "the quick brown fox jumps over the lazy dog"]
    got = scorer.score_prepared(texts)
    np.testing.assert_allclose(got.variants["forward+backward"], got.variants["forward"] + got.variants["backward"])
    for i, text in enumerate(texts):
        enc = scorer.tokenizer([text], return_tensors="pt")
        labels = enc["input_ids"].clone()
        labels[:, 0] = labels[:, -1] = -100  # <S> and </S>: context, never scored
        with torch.no_grad():
            out = scorer.model(**enc, labels=labels)
        words = len(text.split())
        assert got.variants["forward"][i] == pytest.approx(-out.forward_loss.item() * words, abs=1e-4)
        assert got.variants["backward"][i] == pytest.approx(-out.backward_loss.item() * words, abs=1e-4)


# --------------------------------------------------------------------------- ties, tallies, the bootstrap


def pairs_of(rows):
    return [MinimalPair(g, b, uid, field, term, str(i), "x.jsonl", i + 1)
            for i, (g, b, uid, field, term) in enumerate(rows)]


def test_a_pair_read_alike_is_a_tie_counted_half_and_counted(tmp_path):
    """Two names both out of the shipped NNLM's vocabulary are the same input (``<unk>``): a tie, whatever a float
    says, for the NNLM and the n-gram; GPT's bytes tell them apart."""
    data = tmp_path / "pairs.jsonl"
    data.write_text(blimp_line("Xqzzyl likes herself.", "Plughvv likes herself.")
                    + blimp_line("Mary likes herself.", "Mary likes himself.", pair_id=1))
    pairs = read_pairs(data)
    for model in ("nnlm", "kneser-ney:2"):
        outcome = score_pairs(load_scorer(resolve_model(model)), pairs)["sum"]
        assert outcome.tie.tolist() == [True, False]
        assert outcome.right[0] == 0.5
        summary = summarize(pairs, {model: outcome}, resamples=50)[model]["overall"]
        assert summary["ties"] == 1
        assert summary["accuracy"] == pytest.approx((0.5 + outcome.right[1]) / 2)
        assert summary["accuracy_ties_wrong"] == pytest.approx(outcome.right[1] / 2)
        assert summary["accuracy_ties_right"] == pytest.approx((1 + outcome.right[1]) / 2)
    assert not score_pairs(load_scorer(resolve_model("gpt")), pairs)["sum"].tie[0]
    assert compare([1.0, 2.0], [1.0, 3.0]).right.tolist() == [0.5, 0.0]  # equal scores are a tie too


def test_accuracy_is_the_mean_over_paradigms_with_deterministic_bootstrap_intervals():
    rows = [("g", "b", "p1", "syntax", "binding")] * 10 + [("g", "b", "p2", "syntax", "binding")] * 30
    rows += [("g", "b", "p3", "semantics", "quantifiers")] * 20
    pairs = pairs_of(rows)
    rng = np.random.default_rng(1)
    right = np.concatenate([np.ones(10), rng.integers(0, 2, 30).astype(float), np.zeros(20)])
    outcome = compare(right, np.full(60, 0.5))
    first = summarize(pairs, {"m": outcome}, resamples=200, seed=3)["m"]
    p2 = right[10:40].mean()
    assert first["paradigms"]["p2"]["accuracy"] == pytest.approx(p2)
    assert first["phenomena"]["binding"]["accuracy"] == pytest.approx((1 + p2) / 2)  # not pooled: (10 + 30 p2) / 40
    assert first["overall"]["accuracy"] == pytest.approx((1 + p2 + 0) / 3)
    assert first["overall"]["pooled_accuracy"] == pytest.approx(right.mean())
    assert first["fields"]["semantics"] == {"accuracy": 0.0, "low": 0.0, "high": 0.0, "pairs": 20, "ties": 0}
    assert first["overall"]["low"] < first["overall"]["accuracy"] < first["overall"]["high"]
    assert summarize(pairs, {"m": outcome}, resamples=200, seed=3)["m"] == first  # same arguments, same numbers
    assert summarize(pairs, {"m": outcome}, resamples=200, seed=4)["m"]["paradigms"]["p2"] != first["paradigms"]["p2"]
    # A paradigm's draws do not depend on the other paradigms present.
    alone = summarize(pairs[10:40], {"m": compare(right[10:40], np.full(30, 0.5))}, resamples=200, seed=3)["m"]
    assert alone["paradigms"]["p2"] == first["paradigms"]["p2"]
    assert Grouping(pairs).groups["phenomena"] == {"binding": ["p1", "p2"], "quantifiers": ["p3"]}


def test_the_published_rows_are_blimps_means_over_the_paradigms_present():
    published = load_published()
    assert published["license"] == "CC BY 4.0" and len(published["paradigms"]) == 67
    pairs = pairs_of([("g", "b", uid, entry["field"], entry["phenomenon"])
                      for uid, entry in published["paradigms"].items()])
    summary = published_summary(pairs, published)
    # models_summary.jsonl's own "overall" rows: 0.6124029851 (5-gram), 0.830238806 (GPT-2); humans 88.6 % (paper).
    assert summary["5-gram"]["overall"]["accuracy"] == pytest.approx(0.6124029851)
    assert summary["GPT-2"]["overall"]["accuracy"] == pytest.approx(0.830238806)
    assert summary["GPT-2"]["phenomena"]["island_effects"]["accuracy"] == pytest.approx(0.72725)
    assert summary["human"]["overall"]["accuracy"] == pytest.approx(0.886, abs=5e-4)
    # BLiMP's data files group three paradigms otherwise than its published tables; the tables' grouping is used.
    as_in_data = pairs_of([("g", "b", "animate_subject_trans", "syntax", "s-selection"),
                           ("g", "b", "principle_A_case_2", "syntax/semantics", "binding")])
    grouping = Grouping(as_in_data, canonical_groups(published))
    assert grouping.groups["phenomena"] == {"argument_structure": ["animate_subject_trans"],
                                            "binding": ["principle_A_case_2"]}
    assert set(grouping.groups["fields"]) == {"syntax", "syntax_semantics"} and len(grouping.regrouped) == 2
    assert set(Grouping(as_in_data).groups["phenomena"]) == {"s-selection", "binding"}
    mixed = pairs[:2] + pairs_of([("g", "b", "my_own_paradigm", "syntax", "island_effects")])
    assert published_summary(mixed, published)["5-gram"]["overall"]["accuracy"] is None  # not BLiMP's paradigm set


# --------------------------------------------------------------------------- data errors, the command


def test_a_malformed_line_or_a_missing_field_is_an_error_naming_the_file_and_line(tmp_path, capsys, monkeypatch):
    good = blimp_line("Mary likes herself.", "Mary likes himself.")
    cases = {
        "broken.jsonl": (good + good + '{"sentence_good": "a", \n', r"broken\.jsonl:3: not a JSON line"),
        "missing.jsonl": (good + json.dumps({"sentence_good": "a", "sentence_bad": "b", "UID": "u"}) + "\n",
                          r"missing\.jsonl:2: missing fields field, linguistics_term"),
        "empty.jsonl": (good + good.replace('"Mary likes himself."', '""'), r"empty\.jsonl:2: sentence_bad must be"),
        "list.jsonl": ("[1, 2]\n", r"list\.jsonl:1: a JSON object was expected"),
        "mixed.jsonl": (good + blimp_line("a", "b", field="syntax"), r"mixed\.jsonl:2: paradigm anaphor_gender"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(MinimalPairsError, match=message):
            read_pairs(tmp_path / name)
    out = tmp_path / "out"
    status = evaluate_cli.main(["minimal-pairs", "--models", "kneser-ney:2", "--data", str(tmp_path / "broken.jsonl"),
                                "--output-dir", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith(f"hf-lineage evaluate: error: {tmp_path / 'broken.jsonl'}:3: not a JSON")
    assert not out.exists()
    (tmp_path / "ok.jsonl").write_text(good)
    for model, message in (("no-such-model/../x", "unknown model 'no-such-model/../x'"),
                           ("gtp", "unknown model 'gtp'"),
                           ("gtp", "(did you mean gpt?)"), (str(tmp_path), f"no config.json in {tmp_path}")):
        assert evaluate_cli.main(["minimal-pairs", "--models", "gpt", model, "--data", str(tmp_path / "ok.jsonl"),
                                  "--output-dir", str(out), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
        assert not out.exists()
    # Without --data the embedded sample is read; an install that lacks it asks for --data.
    monkeypatch.setattr("hf_lineage.minimal_pairs.pairs.embedded_sample", lambda: None)
    assert evaluate_cli.main(["minimal-pairs", "--models", "gpt", "--output-dir", str(out), "--quiet"]) == 2
    assert "give --data" in capsys.readouterr().err


def test_the_command_on_the_shipped_checkpoints_writes_json_markdown_and_plot(tmp_path, capsys):
    """Every kind once, on a few BLiMP-style pairs: word2vec listed with no sentence probability, the published rows
    beside ours, the text each model read, the files moved into place whole."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "anaphor_gender_agreement.jsonl").write_text(
        blimp_line("Mary doesn't like herself.", "Mary doesn't like himself.")
        + blimp_line("The ladies' ex-wives hurt themselves.", "The ladies' ex-wives hurt itself.", pair_id=1))
    (data / "adjunct_island.jsonl").write_text(
        blimp_line("Who should Derek hug after shocking Richard?", "Who should Derek hug Richard after shocking?",
                   uid="adjunct_island", field="syntax", term="island_effects"))
    out = tmp_path / "report"
    status = evaluate_cli.main(["minimal-pairs", "--models", "nnlm", "elmo", "bert", "word2vec", "kneser-ney:2",
                                "--data", str(data), "--output-dir", str(out), "--resamples", "20", "--pair-scores",
                                "--quiet"])
    assert status == 0, capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["minimal_pairs.json", "minimal_pairs.md", "minimal_pairs.png",
                                                     "pair_scores.jsonl"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".report")]  # no staging folder left
    results = json.loads((out / "minimal_pairs.json").read_text())
    assert list(results["systems"]) == ["nnlm", "elmo (forward)", "elmo (backward)", "elmo (forward+backward)",
                                        "bert (PLL)", "bert (PLL-word-l2r)", "kneser-ney:2"]
    models = {m["label"]: m for m in results["models"]}
    assert models["word2vec"]["sentence_probability"] is False and not models["word2vec"]["systems"]
    assert models["nnlm"]["example"]["reads"] == "Mary doesn 't like herself ."
    assert models["bert"]["lowercases"] and models["nnlm"]["text_format"] == "wikitext"
    assert results["data"] == {"files": [str(data / "adjunct_island.jsonl"),
                                         str(data / "anaphor_gender_agreement.jsonl")],
                               "pairs": 3, "paradigms": 2, "fields": ["morphology", "syntax"],
                               "phenomena": ["anaphor_agreement", "island_effects"], "regrouped": {}}
    assert results["published"]["summary"]["GPT-2"]["overall"]["accuracy"] == pytest.approx((0.894 + 0.994) / 2)
    markdown = (out / "minimal_pairs.md").read_text()
    assert ("no accuracy here (none is invented): **word2vec** (static word vectors define no probability of a "
            "sentence)") in markdown and "GPT-2 †" in markdown
    assert "CC BY 4.0" in markdown and results["command"].startswith("hf-lineage evaluate minimal-pairs --models")
    lines = (out / "pair_scores.jsonl").read_text().splitlines()
    assert len(lines) == 3 and set(json.loads(lines[0])) >= {"UID", "line", "nnlm", "bert (PLL)"}
    # An existing, non-empty output folder is refused without --overwrite, replaced whole with it.
    again = ["minimal-pairs", "--models", "kneser-ney:2", "--data", str(data), "--output-dir", str(out), "--quiet",
             "--resamples", "0"]
    assert evaluate_cli.main(again) == 2 and "--overwrite" in capsys.readouterr().err
    assert evaluate_cli.main(again + ["--overwrite"]) == 0
    assert not (out / "pair_scores.jsonl").exists()
    assert list(json.loads((out / "minimal_pairs.json").read_text())["systems"]) == ["kneser-ney:2"]


def test_evaluate_help_imports_no_torch():
    code = textwrap.dedent("""
        import contextlib, io, json, sys
        from hf_lineage import cli
        shown = []
        for argv in (["evaluate", "--help"], ["evaluate", "minimal-pairs", "--help"]):
            with contextlib.redirect_stdout(io.StringIO()) as text:
                try:
                    cli.main(argv)
                except SystemExit:
                    pass
            shown.append(text.getvalue())
        print(json.dumps({"torch": "torch" in sys.modules, "kinds": "minimal-pairs" in shown[0],
                          "options": "--ngram-train-file" in shown[1]}))
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {"torch": False, "kinds": True, "options": True}
    assert evaluate_cli.run_namespace({"evaluation": None}) == 2


def test_an_evaluation_is_one_table_entry_and_a_module(monkeypatch, tmp_path, capsys):
    """``hf-lineage evaluate`` is built from ``EVALUATIONS``: a new kind is an entry naming a module with
    ``description``, ``add_arguments`` and ``run``, and nothing else to change."""
    import types

    from hf_lineage import evaluations

    module = types.ModuleType("hf_lineage.toy_evaluation")
    module.description = lambda: "a toy evaluation"
    module.add_arguments = lambda parser: parser.add_argument("--answer", type=int, required=True) or parser
    module.run = lambda options: print(f"answer {options['answer']}") or 0
    monkeypatch.setitem(sys.modules, "hf_lineage.toy_evaluation", module)
    monkeypatch.setitem(evaluations.EVALUATIONS, "toy", evaluations.Evaluation("asks a toy question",
                                                                               "toy_evaluation"))
    assert evaluate_cli.main(["toy", "--answer", "42"]) == 0 and "answer 42" in capsys.readouterr().out
    parser = evaluate_cli.build_parser(argparse.ArgumentParser(prog="hf-lineage evaluate"))
    assert "toy" in parser.format_help() and "minimal-pairs" in parser.format_help()
