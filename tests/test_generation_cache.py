"""Every family that generates carries its cache through transformers' ``generate`` with the installed transformers.

transformers 5.24 renamed the cache (forward argument and output field) from ``past_key_values`` to ``cache``; a
model that read only the old name silently started a new cache at every step. These tests watch what each forward
call receives during ``generate``: after the prompt, one new token per step and the cache that the previous step
returned — a Transformer's ``DynamicCache`` / ``EncoderDecoderCache``, a recurrent model's ``LSTMStateCache``.
"""

import pytest
import torch
from transformers import EncoderDecoderConfig, EncoderDecoderModel
from transformers.cache_utils import DynamicCache, EncoderDecoderCache

from hf_lineage import (
    LineageBertConfig,
    LineageBertForCausalLM,
    LineageBertModel,
    LineageElmoConfig,
    LineageElmoForCausalLM,
    LineageElmoTokenizer,
    LineageGPTConfig,
    LineageGPTForCausalLM,
    LineageNNLMConfig,
    LineageNNLMForCausalLM,
    LineageWord2VecConfig,
    LSTMStateCache,
)
from hf_lineage.models.cache_lineage_utils import CACHE_FIELD, output_cache
from hf_lineage.models.modeling_lineage_word2vec import LineageWord2VecForCausalLM

V = 40
ELMO_VOCAB = ["<pad>", "<UNK>", "<S>", "</S>", *[f"w{i}" for i in range(V - 4)]]


def gpt():
    return LineageGPTForCausalLM(LineageGPTConfig.from_named("tiny", vocab_size=V, max_position_embeddings=64))


def bert_decoder():
    return LineageBertForCausalLM(LineageBertConfig.from_named("tiny", vocab_size=V, is_decoder=True))


def elmo():
    model = LineageElmoForCausalLM(LineageElmoConfig.from_named("tiny", vocab_size=V, dropout=0.0))
    model.set_vocabulary_characters(LineageElmoTokenizer(vocab=ELMO_VOCAB))
    return model


def word2vec():
    return LineageWord2VecForCausalLM(LineageWord2VecConfig.from_named("tiny", vocab_size=V, task_dropout=0.0))


def nnlm():
    return LineageNNLMForCausalLM(LineageNNLMConfig.from_named("tiny", vocab_size=V))


def record_forward_calls(model):
    """Wraps ``model.forward`` to record (number of input positions, the cache it was given) per call."""
    calls, forward = [], model.forward

    def recording(*args, **kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        given = kwargs.get("cache", kwargs.get("past_key_values"))
        calls.append((ids.shape[1], given))
        return forward(*args, **kwargs)

    model.forward = recording
    return calls


CACHED_FAMILIES = {"gpt": (gpt, DynamicCache), "bert": (bert_decoder, DynamicCache),
                   "elmo": (elmo, LSTMStateCache), "word2vec": (word2vec, LSTMStateCache)}


@pytest.mark.parametrize("family", sorted(CACHED_FAMILIES))
def test_generate_feeds_one_token_per_step_and_the_cache_of_the_step_before(family):
    build, cache_class = CACHED_FAMILIES[family]
    torch.manual_seed(0)
    model = build().eval()
    prompt = torch.randint(4, V, (2, 5))
    calls = record_forward_calls(model)
    out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=6, do_sample=False,
                         eos_token_id=None, pad_token_id=0)
    assert out.shape == (2, 11)
    assert [length for length, _ in calls] == [5] + [1] * 5
    caches = [cache for _, cache in calls[1:]]
    assert all(isinstance(c, cache_class) for c in caches), [type(c).__name__ for c in caches]
    assert all(c is caches[0] for c in caches)  # one cache, updated in place step after step
    assert caches[0].get_seq_length() == 10  # it has read the prompt and every token fed since
    # And the cached steps give what recomputing the whole prefix gives.
    model.forward = type(model).forward.__get__(model)
    plain = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=6, do_sample=False,
                           eos_token_id=None, pad_token_id=0, use_cache=False)
    assert torch.equal(out, plain)


@pytest.mark.parametrize("family", ["elmo", "word2vec"])
def test_beam_search_reorders_the_lstm_state(family):
    """Beam search keeps the state of the beams it keeps (``LSTMStateCache.reorder_cache``): with the state it
    picks the sequences it picks when it rereads every prefix."""
    torch.manual_seed(1)
    model = CACHED_FAMILIES[family][0]().eval()
    prompt = torch.randint(4, V, (2, 4))
    kwargs = dict(max_new_tokens=6, num_beams=4, num_return_sequences=2, do_sample=False, eos_token_id=None,
                  pad_token_id=0)
    cached = model.generate(prompt, **kwargs)
    plain = model.generate(prompt, use_cache=False, **kwargs)
    assert cached.shape == (4, 10) and torch.equal(cached, plain)


def test_word2vec_lm_state_continues_a_left_padded_prompt_as_one_pass():
    model = word2vec().eval()
    ids = torch.randint(4, V, (2, 7))
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1], [1] * 7])
    with torch.no_grad():
        full = model(input_ids=ids, attention_mask=mask).logits
        first = model(input_ids=ids[:, :5], attention_mask=mask[:, :5], use_cache=True)
        state = output_cache(first)
        assert isinstance(state, LSTMStateCache) and state.get_seq_length() == 5
        rest = model(input_ids=ids[:, 5:], cache=state, use_cache=True)
    torch.testing.assert_close(rest.logits, full[:, 5:], atol=1e-5, rtol=1e-5)
    assert state.get_seq_length() == 7


@pytest.mark.parametrize("family", ["gpt", "bert", "elmo", "word2vec"])
def test_the_cache_goes_in_under_either_name_and_comes_out_under_the_installed_one(family):
    model = CACHED_FAMILIES[family][0]().eval()
    ids = torch.randint(4, V, (1, 6))
    with torch.no_grad():
        full = model(input_ids=ids).logits
        first = model(input_ids=ids[:, :4], use_cache=True)
        assert CACHE_FIELD in first.keys()  # where generate() looks for it, whatever transformers is installed
        # a recurrent state is updated in place: each name gets its own copy of the first call's state
        state = output_cache(first)
        copies = [state, LSTMStateCache(state.h, state.c, 4)] if isinstance(state, LSTMStateCache) else None
        for i, name in enumerate(("cache", "past_key_values")):
            given = copies[i] if copies else model(input_ids=ids[:, :4], use_cache=True)[CACHE_FIELD]
            rest = model(input_ids=ids[:, 4:], use_cache=True, **{name: given})
            torch.testing.assert_close(rest.logits, full[:, 4:], atol=1e-4, rtol=1e-4)
        with pytest.raises(ValueError, match="not both"):
            model(input_ids=ids[:, 4:], cache=output_cache(first), past_key_values=output_cache(first))


def test_an_lstm_state_is_checked_and_accepted_as_a_tuple():
    model = word2vec().eval()
    ids = torch.randint(4, V, (2, 3))
    state = output_cache(model(input_ids=ids, use_cache=True))
    as_tuple = model(input_ids=ids[:, :1], past_key_values=(state.h, state.c)).logits
    torch.testing.assert_close(as_tuple, model(input_ids=ids[:, :1], cache=state.detach()).logits)
    with pytest.raises(ValueError, match="for 2 rows"):
        model(input_ids=ids[:1], cache=state)
    with pytest.raises(ValueError, match="h \\(layers, batch, hidden\\)"):
        LSTMStateCache(state.h[0], state.c)
    with pytest.raises(ValueError, match="LSTMStateCache or a tuple"):
        model(input_ids=ids, cache=DynamicCache())


def test_nnlm_needs_no_cache_and_reads_its_last_n_minus_1_words():
    """NNLM's next word depends only on the previous n − 1 words: generation feeds that window at every step and
    keeps no state (nothing is recomputed beyond the window)."""
    model = nnlm().eval()
    n1 = model.config.context_size
    prompt = torch.randint(4, V, (1, n1 + 3))
    calls = record_forward_calls(model)
    out = model.generate(prompt, max_new_tokens=4, do_sample=False, eos_token_id=None, pad_token_id=0)
    assert out.shape == (1, n1 + 7)
    assert [length for length, _ in calls] == [n1] * 4 and all(cache is None for _, cache in calls)


def test_bert_to_gpt_encoder_decoder_carries_an_encoder_decoder_cache():
    encoder = LineageBertModel(LineageBertConfig.from_named("tiny", vocab_size=V))
    decoder = LineageGPTForCausalLM(LineageGPTConfig.from_named("tiny", vocab_size=V, add_cross_attention=True,
                                                                max_position_embeddings=64))
    config = EncoderDecoderConfig.from_encoder_decoder_configs(encoder.config, decoder.config)
    config.decoder_start_token_id, config.pad_token_id = 1, 0
    model = EncoderDecoderModel(config=config, encoder=encoder, decoder=decoder).eval()
    calls = record_forward_calls(model.decoder)
    source = torch.randint(4, V, (2, 6))
    out = model.generate(source, attention_mask=torch.ones_like(source), max_new_tokens=5, do_sample=False,
                         eos_token_id=None)
    assert out.shape == (2, 6)
    assert [length for length, _ in calls] == [1] * 5
    assert all(isinstance(cache, EncoderDecoderCache) for _, cache in calls[1:])
    plain = model.generate(source, attention_mask=torch.ones_like(source), max_new_tokens=5, do_sample=False,
                           eos_token_id=None, use_cache=False)
    assert torch.equal(out, plain)


@pytest.mark.parametrize("family", sorted(CACHED_FAMILIES))
def test_the_old_cache_name_gives_the_same_step_and_warns_where_transformers_renamed_it(family):
    """transformers 5.24 renamed the forward's ``past_key_values`` to ``cache`` and warns on the old name in its own
    models (its common test ``test_bc_cache_name_forward``); ours do the same there, and stay silent before 5.24,
    where the old name is the name. generate() passes the installed name: never a warning."""
    import copy
    import warnings

    torch.manual_seed(0)
    model = CACHED_FAMILIES[family][0]().eval()
    ids = torch.randint(5, model.config.vocab_size, (2, 6))
    with torch.no_grad():
        first = model(input_ids=ids[:, :4], use_cache=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            old = model(input_ids=ids[:, 4:], past_key_values=copy.deepcopy(output_cache(first))).logits
        new = model(input_ids=ids[:, 4:], cache=copy.deepcopy(output_cache(first))).logits
        torch.testing.assert_close(old, new, rtol=0, atol=0)
        warned = [w for w in caught if "`past_key_values` is deprecated" in str(w.message)]
        assert bool(warned) == (CACHE_FIELD == "cache")
        with warnings.catch_warnings(record=True) as during_generation:
            warnings.simplefilter("always")
            model.generate(ids[:, :3], max_new_tokens=3, do_sample=False)
    assert not [w for w in during_generation if "`past_key_values` is deprecated" in str(w.message)]
