"""Lineage GPT: registration, config validation, fidelity to transformers' OpenAI GPT, generation and the cache,
the paper's fine-tuning (input transformations, heads, auxiliary LM loss), encoder-decoder, Hub, pre-training."""

import json

import pytest
import torch
import torch.nn.functional as F
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, EncoderDecoderConfig, EncoderDecoderModel

import hf_lineage
from hf_lineage import (
    LineageBertConfig,
    LineageGPTConfig,
    LineageGPTForCausalLM,
    LineageGPTForMultipleChoice,
    LineageGPTForSequenceClassification,
    LineageGPTForTokenClassification,
    LineageGPTModel,
)
from hf_lineage.convert import from_transformers, to_transformers
from hf_lineage.data import (
    DataCollatorForGPTTasks,
    add_gpt_task_tokens,
    format_classification,
    format_entailment,
    format_multiple_choice,
    format_similarity,
)
from hf_lineage.models import modeling_lineage_gpt

from conftest import CORPUS, REPO, enable_activation_checkpointing, run_without_hf_lineage

V = 99
NO_DROPOUT = dict(hidden_dropout_prob=0.0, embedding_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def tiny(**overrides):
    return LineageGPTConfig.from_named("tiny", **{"vocab_size": V, "max_position_embeddings": 64, **overrides})


def batch(B=3, T=11):
    """Random ids, right-padded: rows 1 and 2 are shorter (pad id 0, attention_mask 0)."""
    input_ids = torch.randint(3, V, (B, T))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 7:] = 0
    attention_mask[2, 3:] = 0
    input_ids[attention_mask == 0] = 0
    return dict(input_ids=input_ids, attention_mask=attention_mask)


@pytest.fixture(scope="module")
def bpe_tokenizer():
    from hf_lineage.tokenization import train_bpe_tokenizer

    return train_bpe_tokenizer(iterator=CORPUS, vocab_size=400, min_frequency=1, model_max_length=64)


# --------------------------------------------------------------------------- registration and config


def test_every_auto_class_builds_its_lineage_class():
    config = AutoConfig.for_model("lineage-gpt", **LineageGPTConfig.named_sizes["tiny"], vocab_size=50)
    assert isinstance(config, LineageGPTConfig)
    for auto_name, class_name in modeling_lineage_gpt.AUTO_CLASSES.items():
        model = getattr(transformers, auto_name).from_config(config)
        assert type(model).__name__ == class_name
    assert "gpt" in hf_lineage.FAMILIES


def test_named_sizes_match_the_paper():
    gpt = LineageGPTConfig.from_named("gpt")
    assert (gpt.num_hidden_layers, gpt.hidden_size, gpt.num_attention_heads, gpt.intermediate_size,
            gpt.max_position_embeddings) == (12, 768, 12, 3072, 512)
    assert (gpt.hidden_dropout_prob, gpt.embedding_dropout_prob, gpt.attention_probs_dropout_prob) == (0.1,) * 3
    assert gpt.lm_loss_weight == 0.5 and gpt.tie_word_embeddings
    assert LineageGPTConfig.from_named("tiny", hidden_size=32).hidden_size == 32


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(hidden_size=100, num_attention_heads=3), "not a multiple of num_attention_heads"),
        (dict(vocab_size=0), "vocab_size must be a positive"),
        (dict(max_position_embeddings=0), "max_position_embeddings must be a positive"),
        (dict(embedding_dropout_prob=1.0), "embedding_dropout_prob"),
        (dict(attention_probs_dropout_prob=-0.1), "attention_probs_dropout_prob"),
        (dict(classifier_dropout=2), "classifier_dropout"),
        (dict(lm_loss_weight=-1), "lm_loss_weight"),
        (dict(is_decoder=False), "is_decoder=False is not supported"),
    ],
)
def test_invalid_config_raises_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LineageGPTConfig(**kwargs)
    with pytest.raises(ValueError, match="Unknown lineage-gpt size"):
        LineageGPTConfig.from_named("gpt2")


# --------------------------------------------------------------------------- fidelity


def _hf_model(class_name, **overrides):
    config = transformers.OpenAIGPTConfig(vocab_size=V, n_positions=64, n_embd=32, n_layer=2, n_head=4,
                                          pad_token_id=0, **overrides)
    return getattr(transformers, class_name)(config).eval()


def _last_real(attention_mask):
    return (attention_mask * torch.arange(attention_mask.shape[-1])).argmax(-1)


def _run_pair(class_name, hf, ours):
    """The same inputs (right padding included) through both; returns the outputs to compare."""
    inputs = batch()
    with torch.no_grad():
        if class_name == "OpenAIGPTDoubleHeadsModel":
            # transformers' double-heads model takes no (B, C, T) mask; with right padding a causal model needs none
            # for the real tokens, and the classification token is given by position.
            ids, mask = inputs["input_ids"].view(1, 3, -1), inputs["attention_mask"].view(1, 3, -1)
            theirs = hf(ids, mc_token_ids=_last_real(mask)).mc_logits
            return theirs, ours(ids, attention_mask=mask).logits, None
        a = hf(**inputs, output_hidden_states=True)
        b = ours(**inputs, output_hidden_states=True)
        key = "last_hidden_state" if class_name == "OpenAIGPTModel" else "logits"
        if class_name == "OpenAIGPTModel":
            for x, y in zip(a.hidden_states, b.hidden_states, strict=True):
                torch.testing.assert_close(x, y, atol=1e-5, rtol=0)
        return getattr(a, key), getattr(b, key), inputs["attention_mask"]


CLASSES = ["OpenAIGPTModel", "OpenAIGPTLMHeadModel", "OpenAIGPTDoubleHeadsModel",
           "OpenAIGPTForSequenceClassification"]


@pytest.mark.parametrize("class_name", CLASSES)
def test_from_transformers_matches_outputs(class_name):
    hf = _hf_model(class_name, num_labels=3)
    ours = from_transformers(hf)
    assert type(ours).__name__ == hf_lineage.convert.gpt.CLASS_PAIRS[class_name]
    theirs, mine, mask = _run_pair(class_name, hf, ours)
    assert mine.shape == theirs.shape
    torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=0)


@pytest.mark.parametrize("class_name", CLASSES)
def test_to_transformers_matches_outputs(class_name):
    lineage_class = getattr(hf_lineage, hf_lineage.convert.gpt.CLASS_PAIRS[class_name])
    ours = lineage_class(tiny(hidden_size=32, num_attention_heads=4, intermediate_size=128, num_labels=3)).eval()
    with torch.no_grad():  # random biases and LayerNorms, so a mix-up of their layout cannot go unnoticed
        for name, p in ours.named_parameters():
            if p.ndim == 1:
                p.normal_(mean=1.0 if name.endswith("ln_1.weight") else 0.0, std=0.1)
    hf = to_transformers(ours)
    assert type(hf).__name__ == class_name
    theirs, mine, _ = _run_pair(class_name, hf, ours)
    torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=0)


def test_double_heads_losses_match_the_paper_objective():
    hf = _hf_model("OpenAIGPTDoubleHeadsModel")
    ours = from_transformers(hf)
    inputs = batch()
    ids, mask = inputs["input_ids"].view(1, 3, -1), inputs["attention_mask"].view(1, 3, -1)
    label = torch.tensor([2])
    with torch.no_grad():
        a = hf(ids, mc_token_ids=_last_real(mask), labels=ids.masked_fill(mask == 0, -100), mc_labels=label)
        b = ours(ids, attention_mask=mask, labels=label)
    # transformers returns the two losses of the paper separately; ours is L3 = L2 + λ L1 with λ = 0.5 in training,
    # L2 in evaluation.
    torch.testing.assert_close(b.lm_loss, a.loss, atol=1e-5, rtol=0)
    torch.testing.assert_close(b.loss, a.mc_loss, atol=1e-5, rtol=0)
    ours.train()
    for module in ours.modules():  # training mode without its noise
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if hasattr(module, "attn_dropout"):
            module.attn_dropout = 0.0
    with torch.no_grad():
        trained = ours(ids, attention_mask=mask, labels=label)
    torch.testing.assert_close(trained.loss, a.mc_loss + 0.5 * a.loss, atol=1e-5, rtol=0)


def test_conversion_refuses_what_transformers_cannot_hold():
    with pytest.raises(ValueError, match="intermediate_size = 4"):
        to_transformers(LineageGPTModel(tiny(intermediate_size=100)))
    with pytest.raises(ValueError, match="no cross-attention"):
        to_transformers(LineageGPTForCausalLM(tiny(add_cross_attention=True)))
    with pytest.raises(ValueError, match="siamese"):
        to_transformers(LineageGPTForSequenceClassification(tiny(pair_encoding="siamese", delimiter_token_id=5)))


def test_exported_model_loads_in_plain_transformers(tmp_path):
    ours = LineageGPTForCausalLM(tiny(hidden_size=32, num_attention_heads=4, intermediate_size=128)).eval()
    inputs = batch()
    with torch.no_grad():
        expected = ours(**inputs).logits
    to_transformers(ours).save_pretrained(tmp_path / "exported")
    torch.save({"inputs": inputs, "expected": expected}, tmp_path / "check.pt")
    out = run_without_hf_lineage(
        f"""
import torch, transformers
model = transformers.AutoModelForCausalLM.from_pretrained({str(tmp_path / 'exported')!r}).eval()
assert type(model).__name__ == "OpenAIGPTLMHeadModel", type(model)
check = torch.load({str(tmp_path / 'check.pt')!r})
with torch.no_grad():
    got = model(**check["inputs"]).logits
print((got - check["expected"]).abs().max().item())
""",
        cwd=tmp_path,
    )
    assert float(out.strip().splitlines()[-1]) <= 1e-5


# --------------------------------------------------------------------------- the model


def test_padding_does_not_change_real_tokens_left_or_right():
    model = LineageGPTModel(tiny()).eval()
    ids = torch.randint(3, V, (1, 6))
    pad, ones, zeros = torch.zeros(1, 4, dtype=torch.long), torch.ones(1, 6), torch.zeros(1, 4)
    with torch.no_grad():
        alone = model(ids).last_hidden_state
        right = model(torch.cat([ids, pad], 1), attention_mask=torch.cat([ones, zeros], 1).long())
        left = model(torch.cat([pad, ids], 1), attention_mask=torch.cat([zeros, ones], 1).long())
    torch.testing.assert_close(right.last_hidden_state[:, :6], alone, atol=1e-5, rtol=0)
    # Left padding: positions count from the first real token, so the states equal the unpadded ones.
    torch.testing.assert_close(left.last_hidden_state[:, 4:], alone, atol=1e-5, rtol=0)


def test_packed_sequences_attend_within_their_own_and_may_outrun_the_position_table():
    """Padding-free batches (transformers' DataCollatorWithFlattening): sequences packed in one row with positions
    that restart, no mask, no cache (as in training; with a cache the positions are read as a continuation, as in
    transformers' GPT-2). Each token attends only within its own sequence, and the row may be longer than
    max_position_embeddings: the positions are checked, not the length."""
    model = LineageGPTForCausalLM(tiny(max_position_embeddings=16)).eval()
    sequences = [torch.randint(3, V, (1, n)) for n in (12, 9, 14)]  # 35 tokens, 16 positions
    packed = torch.cat(sequences, dim=1)
    positions = torch.cat([torch.arange(s.shape[1]) for s in sequences])[None]
    with torch.no_grad():
        together = model(packed, position_ids=positions, use_cache=False).logits
        alone = torch.cat([model(s).logits for s in sequences], dim=1)
        torch.testing.assert_close(together, alone, atol=1e-5, rtol=0)
        with pytest.raises(ValueError, match=r"position_ids contains 16, outside \[0, 16\)"):
            model(packed[:, :17], position_ids=torch.arange(17)[None])


def test_a_4d_mask_is_taken_as_it_is():
    """transformers' convention: a 4-D mask (here a shared prefix with two continuations that do not see each
    other) goes to the attention as it is, boolean or additive float; integers are refused."""
    model = LineageGPTForCausalLM(tiny()).eval()
    prefix, a, b = torch.randint(3, V, (1, 3)), torch.randint(3, V, (1, 1)), torch.randint(3, V, (1, 1))
    allowed = torch.ones(5, 5, dtype=torch.bool).tril()
    allowed[4, 3] = False  # b does not see a
    additive = torch.zeros(5, 5).masked_fill(~allowed, torch.finfo(torch.float32).min)
    ids, positions = torch.cat([prefix, a, b], dim=1), torch.tensor([[0, 1, 2, 3, 3]])
    with torch.no_grad():
        for mask in (allowed[None, None], additive[None, None]):
            shared = model(ids, attention_mask=mask, position_ids=positions).logits
            torch.testing.assert_close(shared[:, 3], model(torch.cat([prefix, a], 1)).logits[:, 3], atol=1e-5, rtol=0)
            torch.testing.assert_close(shared[:, 4], model(torch.cat([prefix, b], 1)).logits[:, 3], atol=1e-5, rtol=0)
        with pytest.raises(ValueError, match="A 4-D attention_mask goes to the attention as it is"):
            model(ids, attention_mask=allowed[None, None].long(), position_ids=positions)


def test_attention_weights_are_causal_and_match_sdpa():
    model = LineageGPTModel(tiny()).eval()
    inputs = batch()
    out = model(**inputs, output_attentions=True, output_hidden_states=True)
    assert len(out.hidden_states) == 3 and len(out.attentions) == 2
    weights = out.attentions[0]  # (B, nh, T, T)
    assert weights.shape == (3, 2, 11, 11)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 11))
    assert weights.triu(1).abs().max() == 0  # no query sees a later key
    assert weights[2, :, :, 3:].abs().max() == 0  # padded keys get no attention
    torch.testing.assert_close(out.last_hidden_state, model(**inputs).last_hidden_state, atol=1e-5, rtol=0)


def test_gradient_checkpointing_gives_the_same_gradients():
    a, b = LineageGPTForCausalLM(tiny(**NO_DROPOUT)), LineageGPTForCausalLM(tiny(**NO_DROPOUT))
    b.load_state_dict(a.state_dict())
    checkpointed = enable_activation_checkpointing(b, b.transformer)
    inputs = batch()
    for model in (a, b):
        model.train()
        model(**inputs, labels=inputs["input_ids"]).loss.backward()
    assert len(checkpointed) == b.config.num_hidden_layers
    for (name, pa), pb in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(pa.grad, pb.grad, atol=1e-6, rtol=1e-5, msg=name)


def test_causal_lm_loss_is_next_token_cross_entropy_and_honours_num_items():
    model = LineageGPTForCausalLM(tiny()).eval()
    inputs = batch()
    labels = inputs["input_ids"].masked_fill(inputs["attention_mask"] == 0, -100)
    with torch.no_grad():
        out = model(**inputs, labels=labels)
        expected = F.cross_entropy(out.logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1))
        summed = model(**inputs, labels=labels, num_items_in_batch=torch.tensor(100)).loss
    torch.testing.assert_close(out.loss, expected, atol=1e-6, rtol=0)
    n_predicted = (labels[:, 1:] != -100).sum()
    torch.testing.assert_close(summed, expected * n_predicted / 100, atol=1e-6, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("num_items", [None, 123])
def test_vocabulary_cross_entropy_equals_cross_entropy_in_value_and_gradient(dtype, num_items):
    from hf_lineage.models.loss_lineage_utils import cross_entropy, vocabulary_cross_entropy

    logits = (torch.randn(2, 150, 1000) * 4).to(dtype).requires_grad_()  # 300 rows: several row blocks
    labels = torch.randint(0, 1000, (2, 150))
    labels[:, ::7] = -100
    expected = cross_entropy(logits, labels, num_items)
    (expected_grad,) = torch.autograd.grad(expected * 3, logits)
    got = vocabulary_cross_entropy(logits, labels, num_items)
    (grad,) = torch.autograd.grad(got * 3, logits)
    assert grad.dtype == dtype and grad.shape == logits.shape
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-6)
    torch.testing.assert_close(grad.float(), expected_grad.float(), atol=1e-6, rtol=1e-2)
    assert grad[:, ::7].abs().max() == 0  # ignored positions get no gradient


def test_the_vocabulary_loss_runs_blocked_on_the_cpu_and_as_f_cross_entropy_on_other_devices(monkeypatch):
    """The blocked loss is a CPU optimisation: on a GPU its small blocks launched ~25,000 kernels a GPT step. Any
    other device (here "meta", which computes shapes only; CUDA in test_cuda.py) takes F.cross_entropy."""
    from hf_lineage.models import loss_lineage_utils as utils

    blocked = []
    apply = utils._VocabularyCrossEntropy.apply
    monkeypatch.setattr(utils._VocabularyCrossEntropy, "apply",
                        lambda logits, *rest: blocked.append(logits.device.type) or apply(logits, *rest))
    labels = torch.randint(0, 50, (2, 8))
    utils.vocabulary_cross_entropy(torch.randn(2, 8, 50), labels)
    assert blocked == ["cpu"]
    loss = utils.vocabulary_cross_entropy(torch.randn(2, 8, 50, device="meta"), labels)
    assert blocked == ["cpu"] and loss.device.type == "meta" and loss.shape == ()


def test_tied_lm_head_survives_save_and_load(tmp_path):
    model = LineageGPTForCausalLM(tiny())
    assert model.lm_head.weight is model.transformer.tokens_embed.weight
    model.save_pretrained(tmp_path)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path)
    assert loaded.lm_head.weight is loaded.transformer.tokens_embed.weight
    torch.testing.assert_close(loaded.lm_head.weight, model.lm_head.weight)


# --------------------------------------------------------------------------- generation and the cache


def test_cache_gives_the_logits_of_a_full_pass():
    model = LineageGPTForCausalLM(tiny(initializer_range=0.3)).eval()  # peaked attention: every key matters
    ids = torch.randint(3, V, (2, 9))
    with torch.no_grad():
        full = model(ids).logits
        first = model(ids[:, :5], use_cache=True)
        assert first.past_key_values.get_seq_length() == 5
        rest = model(ids[:, 5:], past_key_values=first.past_key_values, use_cache=True)
    torch.testing.assert_close(rest.logits, full[:, 5:], atol=1e-4, rtol=1e-4)


def test_greedy_generation_with_cache_equals_without():
    model = LineageGPTForCausalLM(tiny()).eval()
    prompt = torch.randint(3, V, (3, 5))
    with_cache = model.generate(prompt, max_new_tokens=20, do_sample=False)
    without = model.generate(prompt, max_new_tokens=20, do_sample=False, use_cache=False)
    assert with_cache.shape == (3, 25)
    assert torch.equal(with_cache, without)


def test_batched_left_padded_generation_equals_each_prompt_alone():
    model = LineageGPTForCausalLM(tiny()).eval()
    long, short = torch.randint(3, V, (1, 7)), torch.randint(3, V, (1, 4))
    ids = torch.cat([long, torch.cat([torch.zeros(1, 3, dtype=torch.long), short], 1)])
    mask = torch.tensor([[1] * 7, [0] * 3 + [1] * 4])
    together = model.generate(ids, attention_mask=mask, max_new_tokens=8, do_sample=False)
    assert torch.equal(together[0], model.generate(long, max_new_tokens=8, do_sample=False)[0])
    assert torch.equal(together[1, 3:], model.generate(short, max_new_tokens=8, do_sample=False)[0])


def test_generation_computes_the_lm_head_on_the_last_position_only():
    model = LineageGPTForCausalLM(tiny()).eval()
    rows = []
    handle = model.lm_head.register_forward_hook(lambda m, i, o: rows.append(i[0].shape[1]))
    model.generate(torch.randint(3, V, (2, 6)), max_new_tokens=3, do_sample=False)
    handle.remove()
    assert rows == [1, 1, 1]


@pytest.mark.parametrize("kwargs", [dict(do_sample=True, top_k=10, temperature=0.8),
                                    dict(do_sample=True, top_p=0.9), dict(num_beams=3, do_sample=False),
                                    dict(num_beams=2, num_return_sequences=2)])
def test_sampling_and_beam_search_respect_max_new_tokens(kwargs):
    model = LineageGPTForCausalLM(tiny(eos_token_id=None)).eval()  # no early stop: every row runs to the limit
    prompt = torch.randint(3, V, (2, 4))
    out = model.generate(prompt, max_new_tokens=6, **kwargs)
    assert out.shape == (2 * kwargs.get("num_return_sequences", 1), 10)
    assert torch.equal(out[:, :4], prompt.repeat_interleave(kwargs.get("num_return_sequences", 1), 0))
    assert int(out.max()) < V


def test_beam_search_with_one_beam_is_greedy():
    model = LineageGPTForCausalLM(tiny()).eval()
    prompt = torch.randint(3, V, (2, 4))
    greedy = model.generate(prompt, max_new_tokens=8, do_sample=False)
    assert torch.equal(model.generate(prompt, max_new_tokens=8, num_beams=1, do_sample=False), greedy)
    beams = model.generate(prompt, max_new_tokens=8, num_beams=4, do_sample=False, output_scores=True,
                           return_dict_in_generate=True)
    assert beams.sequences.shape[1] <= 12


def test_text_generation_pipeline_on_a_saved_model(tmp_path, bpe_tokenizer):
    model = LineageGPTForCausalLM(tiny(vocab_size=len(bpe_tokenizer), pad_token_id=bpe_tokenizer.pad_token_id,
                                       eos_token_id=None, bos_token_id=None))
    model.save_pretrained(tmp_path)
    bpe_tokenizer.save_pretrained(tmp_path)
    generator = transformers.pipeline("text-generation", model=str(tmp_path))
    assert isinstance(generator.model, LineageGPTForCausalLM)
    out = generator("The quick brown fox", max_new_tokens=5, do_sample=False)
    assert out[0]["generated_text"].startswith("The quick brown fox")
    n_prompt = len(bpe_tokenizer("The quick brown fox")["input_ids"])
    assert len(bpe_tokenizer(out[0]["generated_text"])["input_ids"]) > n_prompt


# --------------------------------------------------------------------------- bad input


def test_generate_refuses_a_prompt_or_length_past_the_context_before_generating():
    model = LineageGPTForCausalLM(tiny()).eval()
    calls = []
    handle = model.register_forward_hook(lambda *args: calls.append(1))
    with pytest.raises(ValueError, match=r"prompt has 70 tokens but the model's context is 64"):
        model.generate(torch.randint(3, V, (1, 70)), max_new_tokens=2)
    with pytest.raises(ValueError, match=r"prompt \(10 tokens\) \+ max_new_tokens \(60\) = 70 .*context of 64.*at "
                                         r"most 54 new tokens"):
        model.generate(torch.randint(3, V, (1, 10)), max_new_tokens=60)
    handle.remove()
    assert calls == []  # refused before any forward pass
    assert model.generate(torch.randint(3, V, (1, 10)), max_new_tokens=54, do_sample=False).shape == (1, 64)


@pytest.mark.parametrize(
    "make_inputs, message",
    [
        (lambda: dict(input_ids=torch.randint(3, V, (1, 65))), "Sequence length 65 exceeds the context"),
        (lambda: dict(input_ids=torch.tensor([[5, V]])), rf"input_ids contains {V}, outside \[0, {V}\)"),
        (lambda: dict(input_ids=torch.tensor([[5, -1]])), "input_ids contains -1"),
        (lambda: dict(input_ids=torch.tensor([[5, 6]]), attention_mask=torch.ones(1, 3)),
         r"attention_mask has shape \(1, 3\) but input_ids has shape \(1, 2\)"),
        (lambda: dict(input_ids=torch.tensor([[5, 6]]), attention_mask=torch.ones(1, 1, 3, 3)),
         r"A 4-D attention_mask has shape .*got \(1, 1, 3, 3\) for input_ids of shape \(1, 2\)"),
        (lambda: dict(input_ids=torch.tensor([[5, 6]]), position_ids=torch.tensor([[0, 64]])),
         r"position_ids contains 64, outside \[0, 64\) given by config.max_position_embeddings"),
        (lambda: dict(input_ids=torch.tensor([5, 6])), "must have shape"),
        (lambda: dict(), "exactly one of input_ids or inputs_embeds"),
    ],
)
def test_bad_input_raises_clear_value_error(make_inputs, message):
    model = LineageGPTForCausalLM(tiny()).eval()
    with pytest.raises(ValueError, match=message):
        model(**make_inputs())


def test_ids_past_the_vocabulary_in_generate_are_a_value_error():
    model = LineageGPTForCausalLM(tiny()).eval()
    with pytest.raises(ValueError, match=rf"input_ids contains 150, outside \[0, {V}\)"):
        model.generate(torch.tensor([[5, 150]]), max_new_tokens=2)


# --------------------------------------------------------------------------- fine-tuning (section 3.3)


@pytest.fixture()
def task_tokenizer(bpe_tokenizer):
    import copy

    tokenizer = copy.deepcopy(bpe_tokenizer)
    return tokenizer, add_gpt_task_tokens(tokenizer)


def test_add_gpt_task_tokens_adds_special_tokens_and_resizes_the_model(bpe_tokenizer):
    import copy

    tokenizer = copy.deepcopy(bpe_tokenizer)
    model = LineageGPTForCausalLM(tiny(vocab_size=len(tokenizer)))
    before = len(tokenizer)
    ids = add_gpt_task_tokens(tokenizer, model)
    assert set(ids) == {"start", "delimiter", "extract"}
    assert tokenizer.convert_ids_to_tokens([ids["start"], ids["delimiter"], ids["extract"]]) == ["<s>", "$", "<e>"]
    assert model.config.vocab_size == len(tokenizer) > before
    assert model.lm_head.weight is model.transformer.tokens_embed.weight  # still tied after the resize
    assert model.lm_head.weight.shape[0] == len(tokenizer)
    # never split, removed by skip_special_tokens, and a second call changes nothing
    assert tokenizer("<s>hi<e>")["input_ids"][0] == ids["start"]
    assert "<e>" not in tokenizer.decode(tokenizer("<s> hi <e>")["input_ids"], skip_special_tokens=True)
    assert add_gpt_task_tokens(tokenizer, model) == ids and model.config.vocab_size == len(tokenizer)


def test_formatting_helpers_produce_the_papers_layouts(task_tokenizer):
    tokenizer, t = task_tokenizer
    s, d, e = t["start"], t["delimiter"], t["extract"]
    a, b, c = "the cat sat", "a dog ran", "on the mat"

    def ids(text):
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    assert format_classification(tokenizer, a)["input_ids"] == [s, *ids(a), e]
    assert format_entailment(tokenizer, a, b)["input_ids"] == [s, *ids(a), d, *ids(b), e]
    assert format_similarity(tokenizer, a, b)["input_ids"] == [[s, *ids(a), d, *ids(b), e],
                                                               [s, *ids(b), d, *ids(a), e]]
    mc = format_multiple_choice(tokenizer, a, [b, c])
    assert mc["input_ids"] == [[s, *ids(a), d, *ids(b), e], [s, *ids(a), d, *ids(c), e]]
    assert mc["attention_mask"] == [[1] * len(r) for r in mc["input_ids"]]
    # Truncation cuts the longest part, never the task tokens.
    long = " ".join(["the cat sat on the mat"] * 10)
    cut = format_entailment(tokenizer, long, b, max_length=20)["input_ids"]
    assert len(cut) == 20 and cut[0] == s and cut[-1] == e and cut[-2 - len(ids(b)):-1] == [d, *ids(b)]



def test_formatting_without_the_task_tokens_is_refused(bpe_tokenizer):
    with pytest.raises(ValueError, match="add_gpt_task_tokens"):
        format_classification(bpe_tokenizer, "the cat")


def test_collator_pads_single_and_multi_sequence_examples(task_tokenizer):
    tokenizer, _ = task_tokenizer
    collate = DataCollatorForGPTTasks(pad_token_id=tokenizer.pad_token_id)
    flat = collate([{**format_classification(tokenizer, "a b c d"), "label": 1},
                    {**format_classification(tokenizer, "a"), "label": 0}])
    assert flat["input_ids"].shape == flat["attention_mask"].shape and flat["input_ids"].dim() == 2
    assert flat["labels"].tolist() == [1, 0] and flat["attention_mask"][1].sum() < flat["attention_mask"][0].sum()
    nested = collate([{**format_multiple_choice(tokenizer, "q", ["x", "y z", "w"]), "label": 2}] * 2)
    assert nested["input_ids"].shape[:2] == (2, 3) and nested["labels"].tolist() == [2, 2]
    assert (nested["input_ids"][nested["attention_mask"] == 0] == tokenizer.pad_token_id).all()


def _finetuning_model(cls, **overrides):
    return cls(tiny(num_labels=3, **NO_DROPOUT, **overrides)).eval()


def test_sequence_classifier_reads_the_extract_token():
    model = _finetuning_model(LineageGPTForSequenceClassification)
    inputs = batch()
    with torch.no_grad():
        out = model(**inputs, output_hidden_states=True)
        states = out.hidden_states[-1][torch.arange(3), _last_real(inputs["attention_mask"])]  # (B, C)
        # Without a mask the padding is found from pad_token_id: the same rows are read.
        no_mask = model(input_ids=inputs["input_ids"]).logits
    torch.testing.assert_close(out.logits, model.classifier(states), atol=1e-6, rtol=0)
    torch.testing.assert_close(no_mask, out.logits, atol=1e-6, rtol=0)
    assert model.classifier.bias is None  # softmax(h W_y), no bias, as in the paper


def test_similarity_sums_both_orders_and_is_order_invariant():
    model = _finetuning_model(LineageGPTForSequenceClassification)
    a, b = torch.randint(3, V, (2, 4)), torch.randint(3, V, (2, 6))
    s, d, e = 95, 96, 97
    ab = torch.cat([torch.full((2, 1), s), a, torch.full((2, 1), d), b, torch.full((2, 1), e)], 1)
    ba = torch.cat([torch.full((2, 1), s), b, torch.full((2, 1), d), a, torch.full((2, 1), e)], 1)
    with torch.no_grad():
        pair = model(torch.stack([ab, ba], 1)).logits  # (B, 2, T)
        swapped = model(torch.stack([ba, ab], 1)).logits
        h = lambda ids: model.transformer(ids).last_hidden_state[:, -1]  # noqa: E731
        by_hand = model.classifier(h(ab) + h(ba))
    assert pair.shape == (2, 3)
    torch.testing.assert_close(pair, by_hand, atol=1e-5, rtol=0)
    torch.testing.assert_close(pair, swapped, atol=1e-5, rtol=0)
    assert not torch.allclose(model(ab).logits, model(ba).logits)  # one order alone is not invariant


def test_siamese_pairs_mean_pool_each_text_alone_in_either_order():
    """pair_encoding='siamese': u is the mean of the states of <s> a (before $), computed as if b were not there
    (causal attention), v the same for <s> b; the classifier reads [u, v, |u-v|, u*v]."""
    model = _finetuning_model(LineageGPTForSequenceClassification, pair_encoding="siamese", delimiter_token_id=96)
    a, b, other_b = torch.randint(3, 95, (2, 4)), torch.randint(3, 95, (2, 6)), torch.randint(3, 95, (2, 6))
    s, d, e = 95, 96, 97  # <s> $ <e>: ids the texts do not use
    join = lambda x, y: torch.cat([torch.full((2, 1), s), x, torch.full((2, 1), d), y, torch.full((2, 1), e)], 1)  # noqa: E731
    with torch.no_grad():
        logits = model(join(a, b)).logits
        mean = lambda x: model.transformer(torch.cat([torch.full((2, 1), s), x], 1)).last_hidden_state.mean(1)  # noqa: E731
        u, v = mean(a), mean(b)
        by_hand = model.pair_classifier(torch.cat([u, v, (u - v).abs(), u * v], -1))
        other = model(join(a, other_b)).logits
    torch.testing.assert_close(logits, by_hand, atol=1e-5, rtol=0)
    assert not torch.allclose(other, logits)  # the second text is read
    with pytest.raises(ValueError, match="delimiter_token_id"):
        _finetuning_model(LineageGPTForSequenceClassification, pair_encoding="siamese")(join(a, b))


def test_multiple_choice_is_a_softmax_over_the_options():
    model = _finetuning_model(LineageGPTForMultipleChoice, lm_loss_weight=0.0)
    inputs = {k: v.view(1, 3, -1).repeat(2, 1, 1) for k, v in batch().items()}
    labels = torch.tensor([0, 2])
    with torch.no_grad():
        out = model(**inputs, labels=labels)
        # Each option is scored on its own: an option's score does not depend on the others.
        alone = model(**{k: v[:, :1] for k, v in inputs.items()}).logits
    assert out.logits.shape == (2, 3)
    torch.testing.assert_close(out.loss, -out.logits.log_softmax(-1)[torch.arange(2), labels].mean())
    torch.testing.assert_close(alone[:, 0], out.logits[:, 0], atol=1e-6, rtol=0)


@pytest.mark.parametrize("cls", [LineageGPTForSequenceClassification, LineageGPTForMultipleChoice,
                                 LineageGPTForTokenClassification])
def test_auxiliary_lm_loss_is_added_with_weight_lambda(cls):
    model = _finetuning_model(cls, lm_loss_weight=0.3)
    inputs = batch()
    if cls is LineageGPTForMultipleChoice:
        inputs = {k: v.view(1, 3, -1) for k, v in inputs.items()}
        labels = torch.tensor([1])
    elif cls is LineageGPTForTokenClassification:
        labels = torch.randint(0, 3, (3, 11)).masked_fill(inputs["attention_mask"] == 0, -100)
    else:
        labels = torch.tensor([0, 2, 1])
    lm = LineageGPTForCausalLM(model.config).eval()
    lm.load_state_dict(model.state_dict(), strict=False)
    flat = {k: v.reshape(-1, v.shape[-1]) for k, v in inputs.items()}
    with torch.no_grad():
        out = model(**inputs, labels=labels)
        task = F.cross_entropy(out.logits.reshape(-1, out.logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
        lm_loss = lm(**flat, labels=flat["input_ids"].masked_fill(flat["attention_mask"] == 0, -100)).loss
    torch.testing.assert_close(out.lm_loss, lm_loss, atol=1e-5, rtol=0)
    # Evaluation reports the task loss as ``loss``; training optimises L3 = task + λ · LM (no dropout here).
    torch.testing.assert_close(out.loss, task, atol=1e-5, rtol=0)
    with torch.no_grad():
        trained = model.train()(**inputs, labels=labels)
    model.eval()
    torch.testing.assert_close(trained.loss, task + 0.3 * lm_loss, atol=1e-5, rtol=0)
    torch.testing.assert_close(trained.lm_loss, lm_loss, atol=1e-5, rtol=0)

    # λ = 0: the task loss alone, and the vocabulary projection is never computed.
    model.config.lm_loss_weight = 0.0
    calls = []
    handle = model.lm_head.register_forward_hook(lambda *args: calls.append(1))
    with torch.no_grad():
        out = model(**inputs, labels=labels)
    handle.remove()
    assert calls == [] and out.lm_loss is None
    torch.testing.assert_close(out.loss, task, atol=1e-6, rtol=0)


def test_task_heads_start_from_a_pretrained_causal_lm(tmp_path):
    pretrained = LineageGPTForCausalLM(tiny())
    pretrained.save_pretrained(tmp_path)
    for auto in ("AutoModelForSequenceClassification", "AutoModelForMultipleChoice",
                 "AutoModelForTokenClassification"):
        model = getattr(transformers, auto).from_pretrained(tmp_path, num_labels=3)
        for name, p in pretrained.transformer.state_dict().items():
            torch.testing.assert_close(model.transformer.state_dict()[name], p, msg=f"{auto}: {name}")
        assert model.lm_head.weight is model.transformer.tokens_embed.weight


def test_no_labels_means_no_loss_and_no_lm_head():
    model = _finetuning_model(LineageGPTForSequenceClassification)
    calls = []
    model.lm_head.register_forward_hook(lambda *args: calls.append(1))
    out = model(**batch())
    assert out.loss is None and out.lm_loss is None and calls == []


def test_auxiliary_loss_trains_the_shared_weights_through_the_tied_head():
    model = _finetuning_model(LineageGPTForSequenceClassification).train()
    out = model(**batch(), labels=torch.tensor([0, 1, 2]))
    out.loss.backward()
    assert model.transformer.tokens_embed.weight.grad.abs().sum() > 0
    assert model.classifier.weight.grad.abs().sum() > 0


# --------------------------------------------------------------------------- encoder-decoder


def test_cross_attention_decoder_with_cache_gives_the_logits_of_a_full_pass():
    from transformers.cache_utils import DynamicCache, EncoderDecoderCache

    # Large weights make attention peaked, so a wrong key or value in the cache shows in the logits.
    model = LineageGPTForCausalLM(tiny(add_cross_attention=True, initializer_range=0.3)).eval()
    ids = torch.randint(3, V, (3, 9))
    encoder_states = torch.randn(3, 6, 64)
    encoder_mask = torch.ones(3, 6, dtype=torch.long)
    encoder_mask[0, 4:] = 0
    kwargs = dict(encoder_hidden_states=encoder_states, encoder_attention_mask=encoder_mask)
    with torch.no_grad():
        full = model(ids, **kwargs).logits
        cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        first = model(ids[:, :5], past_key_values=cache, use_cache=True, **kwargs)
        steps = [model(ids[:, t:t + 1], past_key_values=first.past_key_values, use_cache=True, **kwargs).logits
                 for t in range(5, 9)]
        # The encoder's masked positions really are masked: changing them changes nothing.
        noisy = encoder_states.clone()
        noisy[0, 4:] += 5
        masked = model(ids, encoder_hidden_states=noisy, encoder_attention_mask=encoder_mask).logits
    torch.testing.assert_close(torch.cat(steps, 1), full[:, 5:], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(masked, full, atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="add_cross_attention=False"):
        LineageGPTForCausalLM(tiny())(ids, **kwargs)


def test_bert_encoder_gpt_decoder_learns_to_copy_and_cache_matches_no_cache():
    config = EncoderDecoderConfig.from_encoder_decoder_configs(
        LineageBertConfig.from_named("tiny", vocab_size=30, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
        LineageGPTConfig.from_named("tiny", vocab_size=30, max_position_embeddings=16, **NO_DROPOUT),
    )
    config.decoder_start_token_id, config.pad_token_id, config.eos_token_id = 2, 0, 3
    model = EncoderDecoderModel(config=config)
    assert isinstance(model.decoder, LineageGPTForCausalLM)
    assert config.decoder.add_cross_attention and hasattr(model.decoder.transformer.h[0], "crossattention")
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(150):
        source = torch.randint(5, 30, (16, 5))
        labels = torch.cat([source, torch.full((16, 1), 3)], dim=1)
        loss = model(input_ids=source, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.5
    model.eval()
    source = torch.randint(5, 30, (8, 5))
    source_mask = torch.ones_like(source)
    source_mask[0, 4:] = 0  # a padded source row goes through the encoder mask and the cross-attention
    with_cache = model.generate(source, attention_mask=source_mask, max_new_tokens=7, do_sample=False)
    without = model.generate(source, attention_mask=source_mask, max_new_tokens=7, do_sample=False,
                             use_cache=False)
    assert torch.equal(with_cache, without)
    copied = (with_cache[1:, 1:6] == source[1:]).all(dim=1).float().mean()
    assert copied >= 0.75, with_cache
    assert model.generate(source, max_new_tokens=7, num_beams=3).shape[0] == 8


# --------------------------------------------------------------------------- Hub


def test_saved_folder_loads_with_trust_remote_code_without_hf_lineage(tmp_path, bpe_tokenizer):
    model = LineageGPTForCausalLM(tiny(vocab_size=len(bpe_tokenizer))).eval()
    model.save_pretrained(tmp_path / "model")
    bpe_tokenizer.save_pretrained(tmp_path / "model")
    files = {p.name for p in (tmp_path / "model").iterdir()}
    assert {"model.safetensors", "config.json", "configuration_lineage_gpt.py", "modeling_lineage_gpt.py",
            "modeling_lineage_utils.py", "configuration_lineage_utils.py", "README.md"} <= files
    auto_map = json.loads((tmp_path / "model" / "config.json").read_text())["auto_map"]
    assert auto_map["AutoModelForCausalLM"] == "modeling_lineage_gpt.LineageGPTForCausalLM"
    assert auto_map["AutoModelForSequenceClassification"] == "modeling_lineage_gpt.LineageGPTForSequenceClassification"
    assert "Radford et al. (2018)" in (tmp_path / "model" / "README.md").read_text()

    prompt = bpe_tokenizer("the quick brown fox", return_tensors="pt")
    expected = model.generate(**prompt, max_new_tokens=8, do_sample=False)
    torch.save(expected, tmp_path / "expected.pt")
    out = run_without_hf_lineage(
        f"""
import torch
from transformers import AutoModelForCausalLM, AutoModelForMultipleChoice, AutoTokenizer
path = {str(tmp_path / 'model')!r}
tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=True)
model = AutoModelForCausalLM.from_pretrained(path, trust_remote_code=True).eval()
assert type(model).__name__ == "LineageGPTForCausalLM" and "hf_lineage" not in type(model).__module__
got = model.generate(**tokenizer("the quick brown fox", return_tensors="pt"), max_new_tokens=8, do_sample=False)
print(torch.equal(got, torch.load({str(tmp_path / 'expected.pt')!r})))
print(type(AutoModelForMultipleChoice.from_pretrained(path, trust_remote_code=True)).__name__)
""",
        cwd=tmp_path,
    )
    assert out.strip().splitlines()[-2:] == ["True", "LineageGPTForMultipleChoice"]


# --------------------------------------------------------------------------- pre-training


@pytest.fixture(scope="module")
def wikitext(tmp_path_factory):
    root = tmp_path_factory.mktemp("wikitext")
    source = REPO / "hf_lineage" / "samples" / "lineage"  # the start of WikiText-2's train and valid files
    (root / "train.txt").write_text((source / "corpus.train.txt").read_text(encoding="utf-8")[:60_000])
    (root / "valid.txt").write_text((source / "corpus.validation.txt").read_text(encoding="utf-8")[:15_000])
    return root


def test_pretrain_gpt_end_to_end_and_the_saved_model_generates(wikitext, tmp_path, capsys):
    from hf_lineage.cli import main

    out = tmp_path / "gpt"
    code = main(["pretrain", "gpt", "--config", "tiny", "--train-file", str(wikitext / "train.txt"),
                 "--validation-file", str(wikitext / "valid.txt"), "--output-dir", str(out), "--vocab-size", "500", "--max-seq-length",
                 "64", "--per-device-batch-size", "8", "--max-steps", "30", "--warmup-steps", "3",
                 "--learning-rate", "3e-3", "--report-to", "none", "--log-every", "10"])
    assert code == 0
    # Said before the first step: what will be trained.
    said = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("hf-lineage pretrain gpt:"))
    for part in ("config tiny", "M parameters", "vocabulary ", "sequences of 64 tokens", "global batch 8",
                 "30 optimiser steps", "on cpu", "precision no"):
        assert part in said, (part, said)
    results = json.loads((out / "train_results.json").read_text())
    assert results["step"] == 30 and results["examples_seen"] == 240
    evaluation = results["eval"]
    assert evaluation["perplexity"] == pytest.approx(torch.tensor(evaluation["loss"]).exp().item())
    assert evaluation["loss"] < 6.2 < torch.log(torch.tensor(500.0)).item()  # it learned something
    model = AutoModelForCausalLM.from_pretrained(out)
    assert isinstance(model, LineageGPTForCausalLM) and model.config.max_position_embeddings == 512
    tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    assert model.config.vocab_size == len(tokenizer) <= 500
    assert model.config.eos_token_id == tokenizer.eos_token_id == tokenizer.convert_tokens_to_ids("<|endoftext|>")
    text = transformers.pipeline("text-generation", model=str(out))(" The game", max_new_tokens=12,
                                                                     do_sample=False)[0]["generated_text"]
    assert text.startswith(" The game") and len(text) > len(" The game")


def test_gpt_objective_packs_documents_with_end_of_text_and_uses_the_papers_optimiser(wikitext):
    import datasets

    from hf_lineage.objectives.gpt import GPTObjective
    from hf_lineage.pretraining.arguments import PretrainArguments, resolve_defaults
    from hf_lineage.tokenization import train_bpe_tokenizer

    args = PretrainArguments(family="gpt", output_dir="unused", config="gpt", max_seq_length=32)  # the paper's size
    objective = GPTObjective(args)
    resolve_defaults(args, objective)
    assert (args.learning_rate, args.lr_scheduler, args.warmup_steps, args.weight_decay, args.adam_epsilon,
            args.per_device_batch_size) == (2.5e-4, "cosine", 2000, 0.01, 1e-8, 64)
    assert objective.perplexity_of == "loss"
    ratio = PretrainArguments(family="gpt", output_dir="unused", warmup_ratio=0.1)
    resolve_defaults(ratio, GPTObjective(ratio))
    assert ratio.warmup_steps is None and ratio.warmup_ratio == 0.1  # an explicit ratio replaces the 2000 steps

    tokenizer = train_bpe_tokenizer(files=[str(wikitext / "train.txt")], vocab_size=400)
    eos = tokenizer.eos_token_id
    lines = [" = Article One = ", "", " first paragraph .", "", " = Article Two = ", " second ."]
    blocks = objective.prepare(datasets.Dataset.from_dict({"text": lines * 20}), tokenizer, "train")
    stream = [t for block in blocks["input_ids"] for t in block]
    assert all(len(block) == 32 for block in blocks["input_ids"])
    expected = []
    for line in lines * 20:
        if line.startswith(" = "):
            expected.append(eos)
        if line.strip():
            expected += tokenizer(line + "\n", add_special_tokens=False)["input_ids"]
    assert stream == expected[:len(stream)] and len(expected) - len(stream) < 32
    # Plain text: a blank line (or a run of them) ends a document.
    plain = objective.prepare(datasets.Dataset.from_dict({"text": ["a b", "c", "", "", "d"] * 40}), tokenizer, "x")
    flat = [t for block in plain["input_ids"] for t in block]
    one = tokenizer("a b\n", add_special_tokens=False)["input_ids"] + tokenizer("c\n", add_special_tokens=False)[
        "input_ids"] + [eos] + tokenizer("d\n", add_special_tokens=False)["input_ids"]
    assert flat[:len(one)] == one

    batch = objective.collator(tokenizer)([{"input_ids": b, "mask_seed": 1} for b in blocks["input_ids"][:2]])
    assert set(batch) == {"input_ids", "labels"} and torch.equal(batch["labels"], batch["input_ids"])
    assert objective.loss_counts(batch)["num_items_in_batch"] == 2 * 31  # predicted tokens, not inputs
    with pytest.raises(ValueError, match="fewer tokens than one block"):
        objective.prepare(datasets.Dataset.from_dict({"text": ["tiny"]}), tokenizer, "validation")


def test_pretrain_gpt_streaming(wikitext, tmp_path):
    from hf_lineage.pretraining.cli import main

    out = tmp_path / "stream"
    assert main(["gpt", "--config", "tiny", "--train-file", str(wikitext / "train.txt"), "--streaming",
                 "--output-dir", str(out),
                 "--vocab-size", "400", "--max-seq-length", "32", "--per-device-batch-size", "4", "--max-steps", "3",
                 "--warmup-steps", "1", "--report-to", "none"]) == 0
    assert json.loads((out / "train_results.json").read_text())["examples_seen"] == 12
