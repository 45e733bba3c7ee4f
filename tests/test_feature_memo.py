"""``LayersMemo``: a frozen network's layers computed once per sentence and read back (the lineage's frozen cells,
the recipes' ``--cache_frozen_features``). The scores with and without it are compared in ``test_recipes.py``."""

import pytest
import torch

from hf_lineage.models.feature_memo_lineage_utils import LayersMemo

LAYERS, WIDTH = 3, 4


class Network:
    """Stands in for a frozen network: layer l of a token is (l + 1) · its id in every channel; records which rows
    it ran on."""

    def __init__(self):
        self.calls = []

    def compute(self, ids):
        def run(rows):
            self.calls.append(rows.tolist())
            picked = ids[rows].float()
            return [picked[..., None].expand(-1, -1, WIDTH) * (layer + 1) for layer in range(LAYERS)]
        return run


def padded(rows, length):
    ids = torch.zeros(len(rows), length, dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = torch.tensor(row)
    mask = torch.arange(length)[None, :] < torch.tensor([len(r) for r in rows])[:, None]
    return ids, mask


def expected(ids, mask):
    return [ids.float()[..., None].expand(-1, -1, WIDTH) * (layer + 1) * mask[..., None] for layer in range(LAYERS)]


def test_each_sentence_runs_once_whatever_batch_or_padding_it_comes_in():
    memo, network = LayersMemo(), Network()
    a, b, c = [5, 6, 7], [8, 9, 10, 11, 12], [5, 6]  # c is a prefix of a: another sentence
    ids, mask = padded([a, b], 5)
    for got, want in zip(memo.layers(network.compute(ids), mask, [ids]), expected(ids, mask)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    ids, mask = padded([b, c, a, c], 7)  # padded longer, another order, c twice
    out = memo.layers(network.compute(ids), mask, [ids])
    assert network.calls == [[0, 1], [1, 3]]  # only c ran (both copies in one pass), a and b were read back
    for got, want in zip(out, expected(ids, mask)):
        assert got.shape == (4, 7, WIDTH)
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    summary = memo.summary()
    assert {k: summary[k] for k in ("sentences_kept", "bytes", "computed", "loaded", "reused", "bytes_written")} == {
        "sentences_kept": 3, "bytes": 4 * LAYERS * WIDTH * (3 + 5 + 2), "computed": 4, "loaded": 0, "reused": 2,
        "bytes_written": 0}
    # The time it spared: the 2 sentences read back, at the mean network time of the 4 it computed.
    assert summary["compute_seconds"] > 0 and summary["load_seconds"] == 0
    assert summary["saved_seconds"] == pytest.approx(2 * summary["compute_seconds"] / 4, abs=2e-3)


def test_token_types_are_part_of_a_sentence():
    memo, network = LayersMemo(), Network()
    ids, mask = padded([[5, 6, 7]], 3)
    memo.layers(network.compute(ids), mask, [ids, torch.tensor([[0, 0, 1]])])
    memo.layers(network.compute(ids), mask, [ids, torch.tensor([[0, 1, 1]])])
    assert len(network.calls) == 2


def test_left_padding_and_a_full_memo_compute_as_without_it():
    memo, network = LayersMemo(max_bytes=4 * LAYERS * WIDTH * 3), Network()
    ids = torch.tensor([[0, 5, 6], [7, 8, 9]])
    mask = ids != 0  # left padded: not kept
    for _ in range(2):
        for got, want in zip(memo.layers(network.compute(ids), mask, [ids]), expected(ids, mask)):
            torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert network.calls == [[0, 1], [0, 1]] and memo.summary()["sentences_kept"] == 0
    ids, mask = padded([[5, 6, 7], [8, 9, 10]], 3)  # room for one sentence: the second is computed every time
    memo.layers(network.compute(ids), mask, [ids])
    memo.layers(network.compute(ids), mask, [ids])
    assert network.calls[2:] == [[0, 1], [1]] and memo.bytes <= memo.max_bytes


def _bert_token_head():
    import hf_lineage

    config = hf_lineage.LineageBertConfig.from_named("tiny", vocab_size=40, max_position_embeddings=32,
                                                     hidden_size=16, num_attention_heads=2, intermediate_size=32,
                                                     task_head="scalar_mix", task_hidden_size=8, num_labels=3)
    model = hf_lineage.LineageBertForTokenClassification(config)
    for param in model.base_model.parameters():  # what --freeze_base does
        param.requires_grad_(False)
    return model


def _elmo_token_head():
    from hf_lineage.models.modeling_lineage_elmo import LineageElmoConfig, LineageElmoForTokenClassification

    config = LineageElmoConfig.from_named("tiny", vocab_size=40, use_char_inputs=False, num_labels=3, freeze_bilm=True)
    return LineageElmoForTokenClassification(config)


@pytest.mark.parametrize("build", [_bert_token_head, _elmo_token_head], ids=["bert", "elmo"])
def test_a_frozen_head_reads_the_same_features_from_the_memo(build):
    """The logits of a frozen head with the memo equal those without it, for batches padded to other lengths; the
    network runs only on sentences it has not seen."""
    torch.manual_seed(0)
    model = build().eval()
    sentences = [[1, 11, 12, 13, 2], [1, 14, 2], [1, 15, 16, 17, 18, 19, 2]]
    first, first_mask = padded(sentences[:2], 5)
    second, second_mask = padded(sentences[::-1], 9)
    with torch.no_grad():
        plain = [model(input_ids=ids, attention_mask=mask).logits for ids, mask in
                 ((first, first_mask), (second, second_mask))]
        model.remember_frozen_layers()
        runs = []
        network = getattr(model.base_model, "bilm", model.base_model)  # ELMo's biLM, BERT's encoder
        handle = network.register_forward_hook(lambda *args: runs.append(1))
        memo = [model(input_ids=ids, attention_mask=mask).logits for ids, mask in
                ((first, first_mask), (second, second_mask))]
        handle.remove()
    for got, want, mask in zip(memo, plain, (first_mask, second_mask)):
        torch.testing.assert_close(got[mask], want[mask], rtol=1e-5, atol=1e-5)
    assert model.frozen_layers_memo.summary()["computed"] == 3 and model.frozen_layers_memo.reused == 2
    assert len(runs) == 2  # the second batch ran the network on its one new sentence only


def test_an_unfrozen_base_ignores_the_memo():
    model = _bert_token_head()
    for param in model.base_model.parameters():
        param.requires_grad_(True)
    model.remember_frozen_layers()
    ids, mask = padded([[1, 11, 2]], 3)
    model(input_ids=ids, attention_mask=mask)
    assert model.frozen_layers_memo.computed == 0


def test_a_folder_keeps_the_layers_for_another_run_on_the_same_weights_only(tmp_path):
    """With a folder, a second memo (another seed, a rerun) reads every sentence from disk and runs the network on
    none; a network with other weights (another fingerprint) computes its own; a folder that cannot be written leaves
    the memo working in memory."""
    torch.manual_seed(0)
    model = _bert_token_head().eval()
    ids, mask = padded([[1, 11, 12, 13, 2], [1, 14, 2]], 5)
    with torch.no_grad():
        model.remember_frozen_layers(folder=tmp_path)
        first = model(input_ids=ids, attention_mask=mask).logits
        assert model.frozen_layers_memo.summary()["computed"] == 2
        assert len(list(tmp_path.glob("*/*.npy"))) == 2 and not list(tmp_path.glob("*/*.tmp.npy"))
        assert model.frozen_layers_memo.summary()["bytes_written"] == sum(
            path.stat().st_size for path in tmp_path.glob("*/*.npy"))
        model.remember_frozen_layers(folder=tmp_path)  # a fresh memo: nothing in memory
        runs = []
        handle = model.base_model.register_forward_hook(lambda *args: runs.append(1))
        again = model(input_ids=ids, attention_mask=mask).logits
        handle.remove()
        summary = model.frozen_layers_memo.summary()
        assert runs == [] and summary["loaded"] == 2 and summary["computed"] == 0
        # What the folder's 2 sentences cost the first memo prices what they spared this one (forward_seconds.json)
        assert summary["saved_seconds"] is not None and summary["load_seconds"] > 0
        torch.testing.assert_close(again, first, rtol=0, atol=0)
        model.base_model.embeddings.word_embeddings.weight.add_(0.5)  # other weights: not the stored layers
        model.remember_frozen_layers(folder=tmp_path)
        changed = model(input_ids=ids, attention_mask=mask).logits
        assert model.frozen_layers_memo.computed == 2 and len(list(tmp_path.iterdir())) == 2
        assert not torch.allclose(changed, first)
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    model.remember_frozen_layers(folder=blocked)
    with torch.no_grad():
        model(input_ids=ids, attention_mask=mask)
        model(input_ids=ids, attention_mask=mask)
    assert model.frozen_layers_memo.computed == 2 and model.frozen_layers_memo.reused == 2
