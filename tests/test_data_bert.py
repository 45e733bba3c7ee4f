"""Tests for BERT's pretraining data: masked-LM collator and next-sentence pairs."""

import random

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from hf_lineage.data import (
    DataCollatorForMaskedLM,
    create_next_sentence_examples,
    documents_from_text,
    mask_tokens,
    next_sentence_dataset,
)

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PAD, UNK, CLS, SEP, MASK = range(5)
N_WORDS = 3000  # whole words "w0".."w2999" get ids 5..3004, increasing with their number
PIECES = ["play", "##ing", "##ed", "##er", "un", "##believ", "##able", "##ly", "re", "##do", "the", "a", "."]
MULTI_PIECE_WORDS = ["playing", "played", "player", "unbelievably", "unbelievable", "redo", "replayed"]


@pytest.fixture(scope="module")
def tokenizer():
    vocab = {tok: i for i, tok in enumerate(SPECIALS + [f"w{i}" for i in range(N_WORDS)] + PIECES)}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", CLS), ("[SEP]", SEP)],
    )
    tok.decoder = decoders.WordPiece()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
        sep_token="[SEP]", mask_token="[MASK]",
    )


def random_features(n, rng, lo=20, hi=60):
    """Sequences [CLS] body [SEP] body [SEP] of ordinary word ids."""
    feats = []
    for _ in range(n):
        a = [rng.randrange(5, 5 + N_WORDS) for _ in range(rng.randint(lo, hi) // 2)]
        b = [rng.randrange(5, 5 + N_WORDS) for _ in range(rng.randint(lo, hi) // 2)]
        feats.append({
            "input_ids": [CLS, *a, SEP, *b, SEP],
            "token_type_ids": [0] * (len(a) + 2) + [1] * (len(b) + 1),
        })
    return feats


def expected_count(num_tokens, p=0.15, cap=None):
    k = max(1, round(num_tokens * p))
    return k if cap is None else min(cap, k)


# ----------------------------------------------------------------------------------- masked LM


def test_mask_fraction_and_80_10_10_split(tokenizer):
    feats = random_features(300, random.Random(0))
    batch = DataCollatorForMaskedLM(tokenizer, seed=0)(feats)
    original = torch.full_like(batch["input_ids"], PAD)
    for i, f in enumerate(feats):
        original[i, : len(f["input_ids"])] = torch.tensor(f["input_ids"])
    chosen = batch["labels"] != -100
    ids = batch["input_ids"]

    # Exactly the original script's count per sequence (num_tokens includes [CLS]/[SEP]).
    for i, f in enumerate(feats):
        assert int(chosen[i].sum()) == expected_count(len(f["input_ids"]))
    eligible = (original >= 5).sum()
    assert eligible > 10_000
    # 15 % of the sequence length (as the original, specials counted), so a bit more of the eligible.
    assert abs(chosen.sum() / (original != PAD).sum() - 0.15) < 0.005
    assert abs(chosen.sum() / eligible - 0.15) < 0.02

    # Labels: original id where chosen, -100 elsewhere; unchosen tokens are untouched.
    assert torch.equal(batch["labels"][chosen], original[chosen])
    assert torch.equal(ids[~chosen], original[~chosen])

    n = chosen.sum().item()
    masked = (ids == MASK) & chosen
    kept = (ids == original) & chosen
    randomised = chosen & ~masked & ~kept
    assert abs(masked.sum().item() / n - 0.8) < 0.03
    assert abs(kept.sum().item() / n - 0.1) < 0.025
    assert abs(randomised.sum().item() / n - 0.1) < 0.025
    assert (ids[randomised] >= 5).all()  # random replacements are never special tokens
    assert ids[randomised].unique().numel() > 100  # ... and spread over the vocabulary

    # Positions are uniform: the first and second half of each sequence are hit equally often.
    first_half = torch.zeros_like(chosen)
    for i, f in enumerate(feats):
        first_half[i, : len(f["input_ids"]) // 2] = True
    a, b = (chosen & first_half).sum().item(), (chosen & ~first_half).sum().item()
    assert abs(a - b) / n < 0.08


def bert_objective(**given):
    """BERT's pre-training objective with ``hf-lineage pretrain bert``'s switches, the paper's filling the rest."""
    from hf_lineage.pretraining.arguments import PretrainArguments, resolve_defaults
    from hf_lineage.objectives import objective_class

    args = PretrainArguments(family="bert", output_dir="unused", config="tiny", **given)
    objective = objective_class("bert")(args)
    resolve_defaults(args, objective)
    return objective


def test_the_objectives_mask_rate_and_split_reach_the_collator(tokenizer):
    feats = [{**f, "mask_seed": i} for i, f in enumerate(random_features(400, random.Random(1)))]
    batch = bert_objective(mlm_probability=0.3, mask_split=(0.5, 0.3, 0.2)).collator(tokenizer)(feats)
    chosen, ids = batch["labels"] != -100, batch["input_ids"]
    for i, f in enumerate(feats):  # the original script's count, at the asked rate
        assert int(chosen[i].sum()) == expected_count(len(f["input_ids"]), p=0.3)
    original = batch["labels"][chosen]
    n = chosen.sum().item()
    masked = (ids[chosen] == MASK).sum().item() / n
    kept = (ids[chosen] == original).sum().item() / n
    assert n > 4000 and abs(masked - 0.5) < 0.03 and abs(kept - 0.2) < 0.025
    assert abs(1 - masked - kept - 0.3) < 0.03  # a random token
    # The paper's defaults give the collator the package always had, bit for bit (the same masks for a seed).
    default = bert_objective().collator(tokenizer)(feats)
    before = DataCollatorForMaskedLM(tokenizer)(feats)
    assert all(torch.equal(default[key], before[key]) for key in before) and default.keys() == before.keys()


def test_without_nsp_the_pairs_are_the_same_and_only_the_label_goes():
    documents = [[[10 + d * 50 + s * 5 + t for t in range(4)] for s in range(6)] for d in range(8)]
    with_nsp, without = bert_objective(), bert_objective(next_sentence_prediction=False)
    for objective in (with_nsp, without):
        objective.tokenizer_ids = (CLS, SEP)
    a, b = with_nsp._examples(documents, seed=3), without._examples(documents, seed=3)
    assert {0, 1} == {e["next_sentence_label"] for e in a} and all("next_sentence_label" not in e for e in b)
    assert [{k: v for k, v in e.items() if k != "next_sentence_label"} for e in a] == b


def test_never_special_tokens_or_padding(tokenizer):
    rng = random.Random(1)
    feats = random_features(200, rng, lo=4, hi=30)
    # Some already padded (right) with attention_mask zeros, as from tokenizer(padding="max_length").
    for f in feats[::3]:
        extra = rng.randint(1, 10)
        f["attention_mask"] = [1] * len(f["input_ids"]) + [0] * extra
        f["token_type_ids"] = f["token_type_ids"] + [0] * extra
        f["input_ids"] = f["input_ids"] + [PAD] * extra
    batch = DataCollatorForMaskedLM(tokenizer, mlm_probability=0.5, seed=1)(feats)
    chosen = batch["labels"] != -100
    for i, f in enumerate(feats):
        n = len(f["input_ids"])
        row_ids, row_chosen = batch["input_ids"][i], chosen[i]
        special = torch.tensor([t < 5 for t in f["input_ids"]])
        assert not row_chosen[:n][special].any()
        assert not row_chosen[n:].any()
        assert torch.equal(row_ids[:n][special], torch.tensor(f["input_ids"])[special])  # untouched
        assert (row_ids[n:] == PAD).all()
        # Budget counts the unpadded length only (padding in the features does not change it).
        real = sum(f.get("attention_mask", [1] * n))
        assert int(row_chosen.sum()) == expected_count(real, 0.5)
        assert batch["attention_mask"][i].sum() == real


def test_mask_tokens_function_and_options():
    ids = [CLS] + list(range(10, 110)) + [SEP]
    common = dict(special_ids={PAD, UNK, CLS, SEP, MASK}, mask_id=MASK, vocab_ids_for_random=range(5, 500))

    # Unchanged-only config: chosen tokens really keep their original id.
    out, labels = mask_tokens(ids, generator=torch.Generator().manual_seed(0),
                              mask_replace_prob=0.0, random_replace_prob=0.0, **common)
    assert torch.equal(out, torch.tensor(ids))
    assert int((labels != -100).sum()) == expected_count(len(ids))
    # All-random config: every chosen token is replaced by a non-special id, never [MASK].
    out, labels = mask_tokens(ids, generator=torch.Generator().manual_seed(0),
                              mask_replace_prob=0.0, random_replace_prob=1.0, **common)
    chosen = labels != -100
    assert (out[chosen] != torch.tensor(ids)[chosen]).float().mean() > 0.9
    assert (out[chosen] >= 5).all() and (out[~chosen] == torch.tensor(ids)[~chosen]).all()
    # max_predictions_per_seq caps the count; a 1-D tensor input works as well.
    _, labels = mask_tokens(torch.tensor(ids), generator=torch.Generator().manual_seed(0),
                            max_predictions_per_seq=5, **common)
    assert int((labels != -100).sum()) == 5
    # At least one prediction even in a tiny sequence; none possible if all special.
    _, labels = mask_tokens([CLS, 42, SEP], **common)
    assert labels.tolist() == [-100, 42, -100]
    out, labels = mask_tokens([CLS, SEP], **common)
    assert (labels == -100).all() and out.tolist() == [CLS, SEP]


def word_groups(word_ids):
    """Positions of each word; pair encodings restart word ids for B, so key by (segment, id)."""
    groups, segment = {}, 0
    for pos, w in enumerate(word_ids):
        if w is None:
            segment += pos > 0
            continue
        groups.setdefault((segment, w), []).append(pos)
    return list(groups.values())


@pytest.mark.parametrize("use_word_ids_column", [True, False])
def test_whole_word_masking(tokenizer, use_word_ids_column):
    rng = random.Random(2)
    vocab_words = MULTI_PIECE_WORDS + [f"w{i}" for i in range(50)]
    feats, groups = [], []
    for _ in range(150):
        a = " ".join(rng.choice(vocab_words) for _ in range(rng.randint(5, 20)))
        b = " ".join(rng.choice(vocab_words) for _ in range(rng.randint(5, 20)))
        enc = tokenizer(a, b, return_token_type_ids=True)
        f = {"input_ids": enc["input_ids"], "token_type_ids": enc["token_type_ids"]}
        if use_word_ids_column:
            f["word_ids"] = enc.word_ids()
        feats.append(f)
        groups.append(word_groups(enc.word_ids()))
    batch = DataCollatorForMaskedLM(tokenizer, whole_word_mask=True, seed=3)(feats)
    assert "word_ids" not in batch
    chosen = batch["labels"] != -100
    multi_piece_hits = total = budget = 0
    for i, f in enumerate(feats):
        k = int(chosen[i].sum())
        budget += expected_count(len(f["input_ids"]))
        total += k
        assert 0 < k <= expected_count(len(f["input_ids"]))  # budget counts tokens, never exceeded
        for g in groups[i]:
            hit = chosen[i, g]
            assert hit.all() or not hit.any(), "a word must be masked entirely or not at all"
            multi_piece_hits += len(g) > 1 and bool(hit.all())
    assert multi_piece_hits > 20  # multi-piece words really are chosen as units
    assert total / budget > 0.9  # skipping over-budget words only loses a little

    # Sanity of the check itself: token-level masking does split words.
    chosen = DataCollatorForMaskedLM(tokenizer, seed=3)(feats)["labels"] != -100
    assert any(0 < chosen[i, g].sum() < len(g) for i in range(len(feats)) for g in groups[i])


def test_mask_seed_independent_of_batching(tokenizer):
    feats = random_features(6, random.Random(4))
    for i, f in enumerate(feats):
        f["mask_seed"] = 1000 + i
    collator = DataCollatorForMaskedLM(tokenizer, seed=123)

    def rows(batch_feats):
        batch = collator(batch_feats)
        return {f["mask_seed"]: (batch["input_ids"][j, : len(f["input_ids"])].tolist(),
                                 batch["labels"][j, : len(f["input_ids"])].tolist())
                for j, f in enumerate(batch_feats)}

    reference = {}
    for f in feats:  # each example alone
        reference.update(rows([f]))
    torch.manual_seed(999)  # global RNG state must not matter either
    assert rows(feats) == reference
    assert rows(feats[::-1]) == reference
    subset = rows([feats[4], feats[1]])
    assert subset == {s: reference[s] for s in (1004, 1001)}
    # Another collator (other seed, other "process") gives the same masks.
    other = DataCollatorForMaskedLM(tokenizer, seed=7)
    batch = other([feats[2], feats[0]])
    assert batch["labels"][1, : len(feats[0]["input_ids"])].tolist() == reference[1000][1]
    # Through a DataLoader with different batch sizes.
    for bs in (1, 4):
        loader = torch.utils.data.DataLoader(feats, batch_size=bs, collate_fn=collator)
        labels = [row[row != -100].tolist() for b in loader for row in b["labels"]]
        assert labels == [[t for t in reference[1000 + i][1] if t != -100] for i in range(6)]
    # Different seeds give different masks.
    assert len({tuple(reference[s][1]) for s in reference}) == 6
    seeds_changed = [dict(f, mask_seed=f["mask_seed"] + 50) for f in feats]
    assert rows(seeds_changed) != {s + 50: v for s, v in reference.items()}


def test_collator_seed_without_mask_seed(tokenizer):
    feats = random_features(8, random.Random(5))
    a = DataCollatorForMaskedLM(tokenizer, seed=11)(feats)
    b = DataCollatorForMaskedLM(tokenizer, seed=11)(feats)
    c = DataCollatorForMaskedLM(tokenizer, seed=12)(feats)
    assert torch.equal(a["labels"], b["labels"]) and not torch.equal(a["labels"], c["labels"])


def test_padding_and_output_format(tokenizer):
    feats = [
        {"input_ids": [CLS, 10, 11, SEP], "token_type_ids": [0, 0, 0, 0], "next_sentence_label": 1,
         "mask_seed": 1, "special_tokens_mask": [1, 0, 0, 1]},
        {"input_ids": [CLS, 10, 11, 12, SEP, 13, 14, 15, SEP], "token_type_ids": [0] * 5 + [1] * 4,
         "next_sentence_label": 0, "mask_seed": 2, "special_tokens_mask": [1, 0, 0, 0, 1, 0, 0, 0, 1]},
    ]
    batch = DataCollatorForMaskedLM(tokenizer)(feats)
    assert set(batch) == {"input_ids", "attention_mask", "token_type_ids", "labels", "next_sentence_label"}
    assert all(v.dtype == torch.long for v in batch.values())
    assert batch["input_ids"].shape == (2, 9)
    assert batch["attention_mask"].tolist() == [[1] * 4 + [0] * 5, [1] * 9]
    assert batch["input_ids"][0, 4:].tolist() == [PAD] * 5
    assert batch["labels"][0, 4:].tolist() == [-100] * 5
    assert batch["token_type_ids"].tolist() == [[0] * 9, [0] * 5 + [1] * 4]
    assert batch["next_sentence_label"].tolist() == [1, 0]

    batch = DataCollatorForMaskedLM(tokenizer, pad_to_multiple_of=8)(feats)
    assert batch["input_ids"].shape == (2, 16)
    assert batch["attention_mask"].sum(1).tolist() == [4, 9]
    assert (batch["labels"][:, 9:] == -100).all() and (batch["input_ids"][:, 9:] == PAD).all()

    # Without token_type_ids / NSP labels in the features, those keys are not invented.
    batch = DataCollatorForMaskedLM(tokenizer)([{"input_ids": [CLS, 10, SEP]}])
    assert set(batch) == {"input_ids", "attention_mask", "labels"}


# ------------------------------------------------------------------------------- next sentence


def make_corpus(n_docs=40, seed=0):
    """Documents of sentences whose words are globally unique and increasing: w0 w1 w2 ..."""
    rng, counter, docs = random.Random(seed), 0, []
    for _ in range(n_docs):
        doc = []
        for _ in range(rng.randint(3, 12)):
            n = rng.randint(2, 9)
            doc.append(" ".join(f"w{counter + j}" for j in range(n)))
            counter += n
        docs.append(doc)
    assert counter < N_WORDS
    return docs


def doc_streams(docs, tokenizer):
    """Per document, its full token stream (no special tokens)."""
    return [[t for s in doc for t in tokenizer(s, add_special_tokens=False)["input_ids"]] for doc in docs]


def split_example(ex):
    ids = ex["input_ids"]
    assert ids[0] == CLS and ids[-1] == SEP and ids.count(SEP) == 2
    first_sep = ids.index(SEP)
    return ids[1:first_sep], ids[first_sep + 1 : -1], first_sep


def locate(tokens, streams):
    """(document, start) where tokens occur contiguously, or None."""
    for d, stream in enumerate(streams):
        if tokens[0] in stream:
            start = stream.index(tokens[0])
            return (d, start) if stream[start : start + len(tokens)] == tokens else None
    return None


def test_next_sentence_pairs(tokenizer):
    docs = make_corpus()
    streams = doc_streams(docs, tokenizer)
    max_len = 32
    examples = create_next_sentence_examples(docs, tokenizer, max_seq_length=max_len, dupe_factor=5, seed=1)
    assert len(examples) > 300
    labels = [ex["next_sentence_label"] for ex in examples]
    assert set(labels) == {0, 1}
    # One-sentence chunks are forced to be random, so slightly above the 50 % coin.
    assert 0.45 < sum(labels) / len(labels) < 0.6

    for ex in examples:
        assert set(ex) == {"input_ids", "token_type_ids", "next_sentence_label"}
        assert len(ex["input_ids"]) <= max_len
        a, b, first_sep = split_example(ex)
        assert a and b
        assert ex["token_type_ids"] == [0] * (first_sep + 1) + [1] * (len(b) + 1)
        (doc_a, start_a), (doc_b, start_b) = locate(a, streams), locate(b, streams)
        if ex["next_sentence_label"] == 0:
            # True continuation: same document, B after A; adjacent unless truncation trimmed
            # A's back / B's front (truncation only happens when the pair had to be cut).
            assert doc_a == doc_b and start_b >= start_a + len(a)
            if len(a) + len(b) < max_len - 3:
                assert start_b == start_a + len(a)
        else:
            assert doc_a != doc_b


def test_next_sentence_probability_is_used(tokenizer):
    docs = make_corpus()
    few = create_next_sentence_examples(docs, tokenizer, max_seq_length=32, nsp_probability=0.1, dupe_factor=3)
    many = create_next_sentence_examples(docs, tokenizer, max_seq_length=32, nsp_probability=0.9, dupe_factor=3)
    frac = lambda exs: sum(e["next_sentence_label"] for e in exs) / len(exs)
    assert frac(few) < 0.3 and frac(many) > 0.85


def test_next_sentence_deterministic_and_short_seqs(tokenizer):
    docs = make_corpus()
    a = create_next_sentence_examples(docs, tokenizer, max_seq_length=64, seed=3)
    b = create_next_sentence_examples(docs, tokenizer, max_seq_length=64, seed=3)
    c = create_next_sentence_examples(docs, tokenizer, max_seq_length=64, seed=4)
    assert a == b and a != c
    # short_seq_prob=1: every document uses a random (mostly shorter) target length.
    full = create_next_sentence_examples(docs, tokenizer, max_seq_length=64, short_seq_prob=0.0, dupe_factor=3)
    short = create_next_sentence_examples(docs, tokenizer, max_seq_length=64, short_seq_prob=1.0, dupe_factor=3)
    mean = lambda exs: sum(len(e["input_ids"]) for e in exs) / len(exs)
    assert mean(short) < 0.8 * mean(full)


def test_next_sentence_edge_cases(tokenizer):
    with pytest.raises(ValueError, match="at least 2"):
        create_next_sentence_examples([["w1 w2.", "w3 w4."]], tokenizer)
    with pytest.raises(ValueError, match="at least 2"):  # the second document is only empty lines
        create_next_sentence_examples([["w1 w2.", "w3."], ["", "  "]], tokenizer)
    # Empty lines are skipped; very long sentences are truncated to fit.
    long_sentence = " ".join(f"w{i}" for i in range(300))
    docs = [["w1000 w1001.", "", long_sentence, "w1002."], [long_sentence], ["w2000 w2001.", "w2002."]]
    examples = create_next_sentence_examples(docs, tokenizer, max_seq_length=32, dupe_factor=5)
    assert examples
    for ex in examples:
        a, b, _ = split_example(ex)
        assert a and b and len(ex["input_ids"]) <= 32 and UNK not in ex["input_ids"]


def test_documents_from_text():
    lines = ["First sentence.\n", "Second one.\n", "\n", "  \n", "\n", "Doc two.  \n", "\n"]
    assert documents_from_text(lines) == [["First sentence.", "Second one."], ["Doc two."]]
    assert documents_from_text([]) == []


def test_dataset_to_bert_pretraining_end_to_end(tokenizer):
    from transformers import BertConfig, BertForPreTraining

    ds = next_sentence_dataset(make_corpus(10), tokenizer, max_seq_length=32, seed=0)
    assert set(ds.column_names) == {"input_ids", "token_type_ids", "next_sentence_label"}
    ds = ds.map(lambda ex, i: {"mask_seed": i}, with_indices=True)
    collator = DataCollatorForMaskedLM(tokenizer, max_predictions_per_seq=5)
    batch = collator([ds[i] for i in range(4)])
    assert set(batch) == {"input_ids", "attention_mask", "token_type_ids", "labels", "next_sentence_label"}
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32)
    out = BertForPreTraining(config)(**batch)
    assert torch.isfinite(out.loss)
