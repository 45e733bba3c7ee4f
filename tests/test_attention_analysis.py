"""hf_lineage.analysis.attention: measures on hand-built attention maps, padding, clustering, real models (lineage
BERT/GPT and transformers' own BERT/GPT) and the `hf-lineage analyze attention` command."""

import json
import math
import re

import numpy as np
import pytest
import torch
from conftest import CORPUS
from scipy.spatial.distance import jensenshannon
from transformers import BertConfig, BertModel, OpenAIGPTConfig, OpenAIGPTModel

from hf_lineage import (
    LineageBertConfig,
    LineageBertModel,
    LineageGPTConfig,
    LineageGPTModel,
)
from hf_lineage.analysis import attention
from hf_lineage.analysis.attention import SentenceRoles, analyze_attention, analyze_maps
from hf_lineage.cli import main as cli_main
from hf_lineage.convert import from_transformers
from hf_lineage.models import LineageWord2VecConfig
from hf_lineage.tokenization import train_bpe_tokenizer

SENTENCES = [("The cat sat on the mat.", "The dog sat on the log."), "Paris is the capital of France, they say.",
             ("A journey of a thousand miles.", "It begins with a single step!"), "Neural networks learn words."]


def plain_roles(n, sep=(), punctuation=()):
    return SentenceRoles(sep=np.isin(np.arange(n), sep), punctuation=np.isin(np.arange(n), punctuation))


def heads_like(pattern, layers=2, heads=2):
    """(layers, heads, n, n): every head the same (n, n) map."""
    return np.broadcast_to(pattern, (layers, heads, *pattern.shape)).copy()


def previous_token_map(n):
    pattern = np.eye(n, k=-1)
    pattern[0, 0] = 1.0  # the first token has no previous one: it keeps to itself
    return pattern


# --------------------------------------------------------------------------- hand-built maps


def test_previous_token_heads_are_classified_previous_token():
    maps = [heads_like(previous_token_map(n)) for n in (6, 9)]
    result = analyze_maps(maps, [plain_roles(6), plain_roles(9)], causal=False)
    assert result.patterns == [["previous token"] * 2] * 2
    np.testing.assert_allclose(result.measures["previous"], (5 + 8) / (6 + 9))
    np.testing.assert_allclose(result.measures["entropy"], 0.0, atol=1e-12)


def test_uniform_heads_are_broad_with_entropy_log_n():
    n = 7
    result = analyze_maps([heads_like(np.full((n, n), 1 / n))], [plain_roles(n)], causal=False)
    assert result.patterns == [["broad"] * 2] * 2
    np.testing.assert_allclose(result.measures["entropy"], math.log(n))
    np.testing.assert_allclose(result.measures["normalized_entropy"], 1.0)
    np.testing.assert_allclose(result.measures["first"], 1 / n)
    assert result.uniform["entropy"] == pytest.approx(math.log(n))


def test_heads_on_sep_are_classified_sep_and_first_token_is_named_after_the_model():
    n, sep = 8, 7
    pattern = np.zeros((n, n))
    pattern[:, sep] = 1.0
    roles = [plain_roles(n, sep=[sep])]
    result = analyze_maps([heads_like(pattern)], roles, causal=False)
    assert result.patterns == [["[SEP]"] * 2] * 2
    assert result.measures["sep"] == pytest.approx(np.ones((2, 2)))
    on_first = np.zeros((n, n))
    on_first[:, 0] = 1.0
    assert analyze_maps([heads_like(on_first)], roles, False, first_token="[CLS]").patterns[0][0] == "[CLS]"
    assert analyze_maps([heads_like(on_first)], roles, False, first_token="<s>").patterns[0][0] == "first token"


def test_entropy_and_shares_on_a_three_token_example():
    rows = np.array([[0.5, 0.5, 0.0], [0.1, 0.2, 0.7], [0.0, 0.6, 0.4]])
    roles = [plain_roles(3, sep=[2], punctuation=[1])]
    result = analyze_maps([rows[None, None]], roles, causal=False)
    m = {name: float(values[0, 0]) for name, values in result.measures.items()}
    entropies = [math.log(2), -(0.1 * math.log(0.1) + 0.2 * math.log(0.2) + 0.7 * math.log(0.7)),
                 -(0.6 * math.log(0.6) + 0.4 * math.log(0.4))]
    assert m["entropy"] == pytest.approx(sum(entropies) / 3)
    assert m["normalized_entropy"] == pytest.approx(sum(entropies) / 3 / math.log(3))
    assert m["first"] == pytest.approx((0.5 + 0.1 + 0.0) / 3)
    assert m["sep"] == pytest.approx((0.0 + 0.7 + 0.4) / 3)
    assert m["punctuation"] == pytest.approx((0.5 + 0.2 + 0.6) / 3)
    assert m["previous"] == pytest.approx((0.0 + 0.1 + 0.6) / 3)  # the first token has no previous token
    assert m["next"] == pytest.approx((0.5 + 0.7 + 0.0) / 3)  # nor the last a next one
    assert result.patterns == [["mixed"]]  # no share reaches 0.5 and entropy / log 3 = 0.73 < 0.8


def test_a_causal_map_leaves_out_the_first_query_and_has_no_next_token_share():
    rows = np.array([[1.0, 0.0, 0.0], [0.25, 0.75, 0.0], [0.5, 0.25, 0.25]])
    result = analyze_maps([rows[None, None]], [plain_roles(3)], causal=True)
    m = {name: float(values[0, 0]) for name, values in result.measures.items()}
    assert m["first"] == pytest.approx((0.25 + 0.5) / 2)  # queries 1 and 2 only
    assert m["previous"] == pytest.approx((0.25 + 0.25) / 2)
    assert m["next"] == 0.0
    h1, h2 = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75)), -(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25))
    assert m["normalized_entropy"] == pytest.approx((h1 / math.log(2) + h2 / math.log(3)) / 2)
    assert result.num_queries == 2 and any("next-token share is 0" in note for note in result.notes)


def test_padding_is_cropped_whichever_side_it_is_on():
    rng = np.random.default_rng(0)
    lengths, width = (4, 6, 3), 9
    maps = [rng.dirichlet(np.ones(n), size=(2, 2, n)) for n in lengths]
    padded = torch.tensor(rng.random((3, 2, 2, width, width)))  # garbage wherever padding is
    mask = torch.zeros(3, width, dtype=torch.long)
    starts = (0, 3, 0)  # the second row is left-padded
    for row, (n, start) in enumerate(zip(lengths, starts)):
        padded[row, :, :, start : start + n, start : start + n] = torch.tensor(maps[row])
        mask[row, start : start + n] = 1
    cropped = attention.crop_padding(tuple(padded.unbind(dim=1)), mask)
    for got, want in zip(cropped, maps):
        np.testing.assert_allclose(got, want)
    roles = [plain_roles(n, punctuation=[1]) for n in lengths]
    direct, via_batch = analyze_maps(maps, roles, False), analyze_maps(cropped, roles, False)
    for name in direct.measures:
        np.testing.assert_allclose(via_batch.measures[name], direct.measures[name])
    np.testing.assert_allclose(via_batch.distances, direct.distances)


# --------------------------------------------------------------------------- clustering


def test_identical_heads_are_at_js_distance_zero_and_layers_that_differ_separate():
    rng = np.random.default_rng(1)
    n = 6
    layer1, layer2 = rng.dirichlet(np.ones(n), size=n), previous_token_map(n)
    maps = [np.stack([np.stack([layer1, layer1]), np.stack([layer2, layer2])])]  # (2 layers, 2 heads, n, n)
    result = analyze_maps(maps, [plain_roles(n)], causal=False)
    d = result.distances
    assert d.shape == (4, 4) and np.allclose(d, d.T) and np.all(np.diag(d) == 0)
    assert d[0, 1] == pytest.approx(0.0, abs=1e-7) and d[2, 3] == pytest.approx(0.0, abs=1e-7)
    assert d[0, 2] > 0.3
    assert result.cohesion["same_layer_nearest"] == 1.0 and result.cohesion["silhouette"] > 0.9
    assert result.cohesion["chance"] == pytest.approx(1 / 3)
    # heads equal up to rounding: a tiny negative divergence must read as distance 0, not NaN
    nearly = maps[0].copy()
    nearly[0, 1] *= 1 + 1e-12 * rng.standard_normal((n, n))
    assert analyze_maps([nearly], [plain_roles(n)], causal=False).distances[0, 1] == pytest.approx(0.0, abs=1e-6)


def test_head_distances_are_scipys_jensen_shannon_distance_averaged_over_queries():
    rng = np.random.default_rng(3)
    maps = [rng.dirichlet(np.ones(n), size=(3, 2, n)) for n in (4, 7, 5)]
    rows = [m.reshape(6, n, n) for m, n in zip(maps, (4, 7, 5))]
    want = np.array([[np.concatenate([jensenshannon(r[i], r[j], axis=-1, base=2) for r in rows]).mean()
                      for j in range(6)] for i in range(6)])
    np.testing.assert_allclose(attention.head_distances(maps, causal=False, block=4), want, atol=1e-12)


def test_heads_alike_across_layers_give_a_negative_layer_silhouette():
    rng = np.random.default_rng(2)
    n = 6
    a, b = rng.dirichlet(np.ones(n), size=n), previous_token_map(n)
    maps = [np.stack([np.stack([a, b]), np.stack([a, b])])]  # each head has its twin in the other layer
    cohesion = analyze_maps(maps, [plain_roles(n)], causal=False).cohesion
    assert cohesion["silhouette"] < 0 and cohesion["same_layer_nearest"] == 0.0


# --------------------------------------------------------------------------- models


@pytest.fixture(scope="module")
def bpe_tokenizer():
    return train_bpe_tokenizer(iterator=CORPUS, vocab_size=300, min_frequency=1, model_max_length=64)


def tiny_lineage_bert(tokenizer):
    config = LineageBertConfig.from_named("tiny", vocab_size=len(tokenizer), max_position_embeddings=64,
                                          num_attention_heads=4)
    return LineageBertModel(config).eval()


def check_shapes(result, layers, heads):
    assert result.shape == (layers, heads)
    assert len(result.patterns) == layers and all(len(row) == heads for row in result.patterns)
    assert result.distances.shape == (layers * heads,) * 2
    assert all(0.0 <= value <= 1.0 + 1e-6 for name in ("first", "sep", "punctuation", "previous", "next")
               for value in result.measures[name].ravel())


def test_lineage_bert_sees_cls_and_sep_and_padding_changes_nothing(wordpiece_tokenizer):
    model = tiny_lineage_bert(wordpiece_tokenizer)
    batched = analyze_attention(model, wordpiece_tokenizer, SENTENCES, batch_size=4)
    one_by_one = analyze_attention(model, wordpiece_tokenizer, SENTENCES, batch_size=1)
    check_shapes(batched, 2, 4)
    assert not batched.causal and batched.first_token == "[CLS]" and batched.notes == []
    for name in batched.measures:
        np.testing.assert_allclose(batched.measures[name], one_by_one.measures[name], atol=1e-5)
    # random init attends almost evenly: shares sit near the uniform baseline
    assert abs(batched.measures["sep"].mean() - batched.uniform["sep"]) < 0.05
    json.dumps(batched.to_dict())


def test_lineage_gpt_is_causal_with_endoftext_first(bpe_tokenizer):
    config = LineageGPTConfig.from_named("tiny", vocab_size=len(bpe_tokenizer), max_position_embeddings=64)
    result = analyze_attention(LineageGPTModel(config).eval(), bpe_tokenizer, SENTENCES)
    check_shapes(result, 2, 2)
    assert result.causal and result.first_token == "<|endoftext|>"
    assert np.all(result.measures["next"] == 0.0)
    assert all("next token" not in row for row in result.patterns)
    # one cell per column on every line of the table, though the first token's name holds "|"
    cells = [len(re.split(r"(?<!\\)\|", line)) for line in result.markdown().splitlines()]
    assert len(set(cells)) == 1 and "<\\|endoftext\\|>" in result.markdown()


def test_transformers_bert_falls_back_to_eager_and_matches_its_lineage_conversion(wordpiece_tokenizer):
    config = BertConfig(vocab_size=len(wordpiece_tokenizer), hidden_size=32, num_hidden_layers=3,
                        num_attention_heads=4, intermediate_size=37, max_position_embeddings=64)
    theirs = BertModel(config).eval()
    assert theirs.config._attn_implementation == "sdpa"  # returns no weights: the analysis must switch to eager
    result = analyze_attention(theirs, wordpiece_tokenizer, SENTENCES)
    assert theirs.config._attn_implementation == "eager"
    check_shapes(result, 3, 4)
    ours = analyze_attention(from_transformers(theirs), wordpiece_tokenizer, SENTENCES)
    for name in result.measures:
        np.testing.assert_allclose(ours.measures[name], result.measures[name], atol=1e-5)


def test_transformers_openai_gpt_is_read_as_causal(bpe_tokenizer):
    config = OpenAIGPTConfig(vocab_size=len(bpe_tokenizer), n_embd=32, n_layer=2, n_head=4, n_positions=64)
    result = analyze_attention(OpenAIGPTModel(config).eval(), bpe_tokenizer, SENTENCES)
    check_shapes(result, 2, 4)
    assert result.causal and np.all(result.measures["next"] == 0.0)


def test_sample_sentences_are_pairs_from_the_shipped_corpus():
    pairs = attention.sample_sentences(5)
    assert len(pairs) == 5 and all(isinstance(p, tuple) and len(p) == 2 and all(p) for p in pairs)
    assert not any(s.startswith("=") for p in pairs for s in p)


# --------------------------------------------------------------------------- command line


def test_cli_writes_its_files(tmp_path, wordpiece_tokenizer, capsys):
    folder = tmp_path / "bert"
    tiny_lineage_bert(wordpiece_tokenizer).save_pretrained(folder)
    wordpiece_tokenizer.save_pretrained(folder)
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("The cat sat on the mat.\tThe dog sat on the log.\n\nParis is the capital of France.\n")
    out = tmp_path / "out"
    assert cli_main(["analyze", "attention", "--model", str(folder), "--sentences", str(sentences),
                     "--output-dir", str(out)]) == 0
    assert {p.name for p in out.iterdir()} == {"results.json", "heads.md", "patterns.png", "shares.png",
                                               "heads_dendrogram.png", "example.png"}
    results = json.loads((out / "results.json").read_text())
    assert (results["layers"], results["heads"], results["sentences"]) == (2, 4, 2)
    assert len((out / "heads.md").read_text().splitlines()) == 2 + 2 * 4 + 1  # header, heads, uniform row
    assert cli_main(["analyze", "attention", "--model", str(folder), "--max-sentences", "3",
                     "--output-dir", str(tmp_path / "sample")]) == 0
    assert json.loads((tmp_path / "sample" / "results.json").read_text())["sentences"] == 3


def test_cli_refuses_a_model_without_attention_and_an_empty_sentence_file(tmp_path, capsys, wordpiece_tokenizer):
    word2vec = tmp_path / "word2vec"
    LineageWord2VecConfig.from_named("tiny", vocab_size=20).save_pretrained(word2vec)
    out = tmp_path / "out"
    assert cli_main(["analyze", "attention", "--model", str(word2vec), "--output-dir", str(out)]) == 2
    assert "lineage-word2vec" in capsys.readouterr().err and not out.exists()
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    assert cli_main(["analyze", "attention", "--model", str(word2vec), "--sentences", str(empty),
                     "--output-dir", str(out)]) == 2
    assert "no sentences" in capsys.readouterr().err and not out.exists()
