"""Lineage NNLM (Bengio et al. 2003): config validation, the vectorised forward against a per-position loop of the
paper's equation, the loss, generation and the pipeline, the Hub, and pre-training (blocks, CLI, bad input)."""

import json

import datasets
import numpy as np
import pytest
import torch
import torch.nn.functional as F
import transformers
from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

import hf_lineage
from hf_lineage import LineageNNLMConfig, LineageNNLMForCausalLM, LineageNNLMModel
from hf_lineage.models import modeling_lineage_nnlm
from hf_lineage.objectives.nnlm import DataCollatorForNNLM, NNLMBlocks, NNLMObjective, word_stream

from conftest import CORPUS, run_without_hf_lineage

V = 57
START = 3  # </s>: the default context-start word


def tiny(**overrides):
    return LineageNNLMConfig.from_named("tiny", **{"vocab_size": V, **overrides})


@pytest.fixture(scope="module")
def word_tokenizer():
    from hf_lineage.tokenization import train_wordlevel_tokenizer

    return train_wordlevel_tokenizer(iterator=CORPUS, min_count=1)


# --------------------------------------------------------------------------- registration and config


def test_every_auto_class_builds_its_lineage_class():
    config = AutoConfig.for_model("lineage-nnlm", **LineageNNLMConfig.named_sizes["tiny"], vocab_size=50)
    assert isinstance(config, LineageNNLMConfig)
    for auto_name, class_name in modeling_lineage_nnlm.AUTO_CLASSES.items():
        assert type(getattr(transformers, auto_name).from_config(config)).__name__ == class_name
    assert "nnlm" in hf_lineage.FAMILIES


def test_named_sizes_are_the_papers_brown_rows():
    rows = {name: LineageNNLMConfig.from_named(name) for name in ("mlp1", "mlp3", "mlp5", "mlp7", "mlp9")}
    table = {name: (c.context_size + 1, c.hidden_size, c.embedding_size, c.direct_connections)
             for name, c in rows.items()}
    # Table 1 of Bengio et al. (2003): (n, h, m, direct)
    assert table == {"mlp1": (5, 50, 60, True), "mlp3": (5, 0, 60, True), "mlp5": (5, 50, 30, True),
                     "mlp7": (3, 50, 30, True), "mlp9": (5, 100, 30, False)}
    config = LineageNNLMConfig()
    specials = (config.pad_token_id, config.bos_token_id, config.eos_token_id, config.context_start_token_id)
    assert specials == (0, 2, 3, 3)
    assert (config.task_encoder, config.task_hidden_size, config.task_num_layers, config.task_dropout) == (
        "bilstm", 128, 1, 0.1)
    assert config.freeze_vectors is False and config.tie_word_embeddings is False


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(vocab_size=0), "vocab_size must be a positive"),
        (dict(context_size=0), "context_size must be a positive"),
        (dict(embedding_size=0), "embedding_size must be a positive"),
        (dict(hidden_size=-1), "hidden_size must be >= 0"),
        (dict(hidden_size=0, direct_connections=False), "hidden_size=0 needs direct_connections=True"),
        (dict(embedding_dropout=1.0), "embedding_dropout"),
        (dict(hidden_dropout=-0.1), "hidden_dropout"),
        (dict(initializer_range=0.0), "initializer_range"),
        (dict(vocab_size=10, context_start_token_id=10), "context_start_token_id"),
        (dict(tie_word_embeddings=True), "tie_word_embeddings=True is not supported"),
        (dict(task_encoder="gru"), "task_encoder"),
        (dict(task_hidden_size=0), "task_hidden_size"),
    ],
)
def test_invalid_config_raises_value_error_naming_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LineageNNLMConfig(**kwargs)


def test_unknown_named_size_is_refused():
    with pytest.raises(ValueError, match="Unknown lineage-nnlm size"):
        LineageNNLMConfig.from_named("mlp2")


# --------------------------------------------------------------------------- the paper's equation


def naive_logits(model, input_ids, attention_mask=None):
    """y = b + W·x + U·tanh(d + H·x), one position at a time, straight from the paper."""
    config = model.config
    n1, h = config.context_size, config.hidden_size
    C = model.nnlm.word_embeddings.weight
    ids = input_ids if attention_mask is None else input_ids.masked_fill(attention_mask == 0, START)
    weight, b = model.lm_head.weight, model.lm_head.bias
    U, W = weight[:, :h], weight[:, h:]  # lm_head's weight is [U W]
    B, T = ids.shape
    out = torch.empty(B, T, config.vocab_size)
    for i in range(B):
        for t in range(T):
            # x = (C(w_t), C(w_{t-1}), ..., C(w_{t-n+2})); before the sequence start: the start word's vector
            x = torch.cat([C[ids[i, t - k] if t - k >= 0 else START] for k in range(n1)])
            y = b.clone()
            if h > 0:
                y += U @ torch.tanh(model.nnlm.hidden.bias + model.nnlm.hidden.weight @ x)
            if config.direct_connections:
                y += W @ x
            out[i, t] = y
    return out


ARCHITECTURES = [dict(), dict(direct_connections=False), dict(hidden_size=0), dict(context_size=1)]


@pytest.mark.parametrize("overrides", ARCHITECTURES, ids=["hidden+direct", "hidden-only", "direct-only", "bigram"])
def test_vectorised_forward_equals_a_per_position_loop_of_the_papers_equation(overrides):
    model = LineageNNLMForCausalLM(tiny(initializer_range=0.3, **overrides)).eval()
    with torch.no_grad():  # non-zero biases, so a mix-up of b and d cannot go unnoticed
        model.lm_head.bias.normal_()
        if model.nnlm.hidden is not None:
            model.nnlm.hidden.bias.normal_()
    ids = torch.randint(4, V, (2, 9))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0  # left padding: those positions hold the start word
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, naive_logits(model, ids), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(model(ids, attention_mask=mask).logits, naive_logits(model, ids, mask),
                                   atol=1e-5, rtol=1e-5)
        # The base model's outputs are the pieces of the same equation.
        out = model.nnlm(ids)
        n1, m = model.config.context_size, model.config.embedding_size
        C = model.nnlm.word_embeddings.weight
        torch.testing.assert_close(out.context_features[0, 5, :m], C[ids[0, 5]])  # most recent word first
        torch.testing.assert_close(out.context_features[0, 5, -m:], C[ids[0, 5 - n1 + 1]])
        assert out.last_hidden_state.shape == (2, 9, model.config.hidden_size)


def test_left_padding_changes_nothing_for_the_real_words():
    model = LineageNNLMForCausalLM(tiny()).eval()
    ids = torch.randint(4, V, (1, 6))
    padded = torch.cat([torch.zeros(1, 3, dtype=torch.long), ids], 1)
    mask = torch.tensor([[0, 0, 0] + [1] * 6])
    with torch.no_grad():
        torch.testing.assert_close(model(padded, attention_mask=mask).logits[:, 3:], model(ids).logits)


def test_loss_is_the_hand_computed_negative_log_likelihood():
    model = LineageNNLMForCausalLM(tiny()).eval()
    ids = torch.randint(4, V, (3, 8))
    labels = ids.clone()
    labels[:, :2] = -100  # context words: not predicted
    labels[2, 6:] = -100
    with torch.no_grad():
        full = model(ids).logits  # (B, T, V)
        out = model(ids, labels=labels)
        summed = model(ids, labels=labels, num_items_in_batch=torch.tensor(50)).loss
    log_probs = full.log_softmax(-1)
    terms = [-log_probs[i, t, labels[i, t + 1]] for i in range(3) for t in range(7) if labels[i, t + 1] != -100]
    torch.testing.assert_close(out.loss, torch.stack(terms).mean())
    torch.testing.assert_close(summed, torch.stack(terms).sum() / 50)
    # With labels the logits are (B, T, V) as without; with sparse_logits the output layer ran only where a word is
    # predicted: (N, V), rows in (batch, position) order, and the same loss.
    assert out.logits.shape == (3, 8, V)
    torch.testing.assert_close(out.logits, full)
    predicting = modeling_lineage_nnlm.shift_labels(labels) != -100
    with torch.no_grad():
        sparse = model(ids, labels=labels, sparse_logits=True)
    assert sparse.logits.shape == (len(terms), V)
    torch.testing.assert_close(sparse.logits, full[predicting])
    torch.testing.assert_close(sparse.loss, out.loss)


def test_sparse_logits_run_the_output_layer_only_at_labelled_positions():
    model = LineageNNLMForCausalLM(tiny())
    rows = []
    model.lm_head.register_forward_hook(lambda module, inputs, output: rows.append(inputs[0].shape[:-1]))
    ids = torch.randint(4, V, (2, 10))
    labels = ids.clone()
    labels[:, :4] = -100
    model(ids, labels=labels, sparse_logits=True).loss.backward()
    assert rows == [torch.Size([2 * 6])]  # positions 3..8 of each row predict words 4..9; position 9 nothing
    assert model.nnlm.word_embeddings.weight.grad.abs().sum() > 0


def test_dropout_only_in_training():
    model = LineageNNLMForCausalLM(tiny(embedding_dropout=0.5, hidden_dropout=0.5))
    ids = torch.randint(4, V, (2, 6))
    model.eval()
    torch.testing.assert_close(model(ids).logits, model(ids).logits)
    model.train()
    assert not torch.allclose(model(ids).logits, model(ids).logits)


# --------------------------------------------------------------------------- generation


def test_greedy_generation_equals_full_recompute():
    model = LineageNNLMForCausalLM(tiny(eos_token_id=None, initializer_range=0.3)).eval()
    prompt = torch.randint(4, V, (3, 5))
    seen = []
    handle = model.register_forward_hook(lambda m, args, kwargs, out: seen.append(kwargs["input_ids"].shape[1]),
                                         with_kwargs=True)
    generated = model.generate(prompt, max_new_tokens=12, do_sample=False)
    handle.remove()
    assert max(seen) == model.config.context_size  # each step feeds the last n − 1 words only
    expected = prompt
    with torch.no_grad():
        for _ in range(12):  # the whole sequence through the model at every step
            expected = torch.cat([expected, model(expected).logits[:, -1].argmax(-1, keepdim=True)], 1)
    assert torch.equal(generated, expected)


def test_batched_left_padded_generation_equals_each_prompt_alone():
    model = LineageNNLMForCausalLM(tiny(eos_token_id=None, initializer_range=0.3)).eval()
    long, short = torch.randint(4, V, (1, 6)), torch.randint(4, V, (1, 2))
    ids = torch.cat([long, torch.cat([torch.zeros(1, 4, dtype=torch.long), short], 1)])
    mask = torch.tensor([[1] * 6, [0] * 4 + [1] * 2])
    together = model.generate(ids, attention_mask=mask, max_new_tokens=7, do_sample=False)
    assert torch.equal(together[0], model.generate(long, max_new_tokens=7, do_sample=False)[0])
    assert torch.equal(together[1, 4:], model.generate(short, max_new_tokens=7, do_sample=False)[0])


@pytest.mark.parametrize("kwargs", [dict(do_sample=True, top_k=10, temperature=0.8), dict(do_sample=True, top_p=0.9),
                                    dict(num_beams=3, do_sample=False), dict(num_beams=2, num_return_sequences=2)])
def test_sampling_and_beam_search(kwargs):
    model = LineageNNLMForCausalLM(tiny(eos_token_id=None)).eval()
    prompt = torch.randint(4, V, (2, 4))
    out = model.generate(prompt, max_new_tokens=6, **kwargs)
    r = kwargs.get("num_return_sequences", 1)
    assert out.shape == (2 * r, 10)
    assert torch.equal(out[:, :4], prompt.repeat_interleave(r, 0)) and int(out.max()) < V


def test_beam_search_scores_are_the_models_log_probabilities():
    model = LineageNNLMForCausalLM(tiny(eos_token_id=None, initializer_range=0.3)).eval()
    prompt = torch.randint(4, V, (1, 3))
    out = model.generate(prompt, max_new_tokens=4, num_beams=3, do_sample=False, output_scores=True,
                         return_dict_in_generate=True, length_penalty=0.0)
    sequence = out.sequences[:1]
    with torch.no_grad():
        log_probs = model(sequence).logits.log_softmax(-1)
    expected = sum(log_probs[0, t - 1, sequence[0, t]] for t in range(3, 7))
    torch.testing.assert_close(out.sequences_scores[0], expected, atol=1e-4, rtol=0)


def test_text_generation_pipeline(tmp_path, word_tokenizer):
    model = LineageNNLMForCausalLM(tiny(vocab_size=len(word_tokenizer), eos_token_id=None))
    model.save_pretrained(tmp_path)
    word_tokenizer.save_pretrained(tmp_path)
    generator = transformers.pipeline("text-generation", model=str(tmp_path))
    assert isinstance(generator.model, LineageNNLMForCausalLM)
    out = generator("The quick brown fox", max_new_tokens=5, do_sample=False)[0]["generated_text"]
    assert out.startswith("The quick brown fox")
    new = generator("The quick brown fox", max_new_tokens=5, do_sample=False, return_full_text=False)
    prompt = word_tokenizer("The quick brown fox", return_tensors="pt")
    expected = model.generate(**prompt, max_new_tokens=5, do_sample=False)[0, 4:]
    assert new[0]["generated_text"] == word_tokenizer.decode(expected)
    assert len(new[0]["generated_text"].split()) == 5  # word-level: one word per generated token


# --------------------------------------------------------------------------- Hub and loading


def test_saved_folder_loads_with_trust_remote_code_without_hf_lineage(tmp_path, word_tokenizer):
    model = LineageNNLMForCausalLM(tiny(vocab_size=len(word_tokenizer))).eval()
    model.save_pretrained(tmp_path / "model")
    word_tokenizer.save_pretrained(tmp_path / "model")
    files = {p.name for p in (tmp_path / "model").iterdir()}
    assert {"configuration_lineage_nnlm.py", "modeling_lineage_nnlm.py", "modeling_lineage_utils.py",
            "modeling_lineage_static.py", "configuration_lineage_utils.py", "README.md"} <= files
    auto_map = json.loads((tmp_path / "model" / "config.json").read_text())["auto_map"]
    assert auto_map["AutoModelForCausalLM"] == "modeling_lineage_nnlm.LineageNNLMForCausalLM"
    assert "Bengio" in (tmp_path / "model" / "README.md").read_text()
    prompt = word_tokenizer("the cat sat on", return_tensors="pt")
    torch.save(model.generate(**prompt, max_new_tokens=6, do_sample=False), tmp_path / "expected.pt")
    out = run_without_hf_lineage(
        f"""
import torch
from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer
path = {str(tmp_path / 'model')!r}
tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=True)
model = AutoModelForCausalLM.from_pretrained(path, trust_remote_code=True).eval()
assert type(model).__name__ == "LineageNNLMForCausalLM" and "hf_lineage" not in type(model).__module__
got = model.generate(**tokenizer("the cat sat on", return_tensors="pt"), max_new_tokens=6, do_sample=False)
print(torch.equal(got, torch.load({str(tmp_path / 'expected.pt')!r})))
print(type(AutoModel.from_pretrained(path, trust_remote_code=True)).__name__)
""",
        cwd=tmp_path,
    )
    assert out.strip().splitlines()[-2:] == ["True", "LineageNNLMModel"]


def test_from_pretrained_keeps_table_c_and_initialises_missing_weights(tmp_path):
    config = tiny(vocab_size=2000, hidden_size=64, initializer_range=0.05)
    base = LineageNNLMModel(config)
    base.save_pretrained(tmp_path)
    lm = AutoModelForCausalLM.from_pretrained(tmp_path)  # lm_head is not in the checkpoint
    assert isinstance(lm, LineageNNLMForCausalLM)
    torch.testing.assert_close(lm.nnlm.word_embeddings.weight, base.word_embeddings.weight)
    torch.testing.assert_close(lm.nnlm.hidden.weight, base.hidden.weight)
    weight = lm.lm_head.weight
    assert torch.isfinite(weight).all() and abs(weight.std().item() - 0.05) < 0.005 and abs(weight.mean()) < 0.005
    assert lm.lm_head.bias.abs().max() == 0
    # And a fresh model's table C has the configured statistics too.
    C = LineageNNLMModel(config).word_embeddings.weight
    assert abs(C.std().item() - 0.05) < 0.005
    back = AutoModel.from_pretrained(tmp_path)
    torch.testing.assert_close(back.word_embeddings.weight, base.word_embeddings.weight)


# --------------------------------------------------------------------------- pre-training


class _Args:
    def __init__(self, **kw):
        self.__dict__.update(dict(overrides={}, max_seq_length=8, vocab_size=None, preprocessing_num_workers=None),
                             **kw)


def _windows_of(blocks, n1):
    """(context, target) of every labelled position of every block, in order."""
    pairs = []
    for k in range(len(blocks)):
        ids, labels = blocks[k]["input_ids"], blocks[k]["labels"]
        for i, label in enumerate(labels):
            if label != -100:
                assert label == ids[i] and i >= n1  # a predicted word always has n − 1 words before it
                pairs.append((tuple(ids[i - n1 : i]), label))
    return pairs


@pytest.mark.parametrize("context_size", [1, 3])
def test_blocks_predict_every_word_once_with_its_full_context(word_tokenizer, context_size):
    lines = CORPUS[:9] + [""] + CORPUS[9:12]  # a blank line adds nothing
    objective = NNLMObjective(_Args(overrides={"min_count": 1}))
    objective.build_config("tiny", word_tokenizer, {"context_size": context_size})
    blocks = objective.prepare(datasets.Dataset.from_dict({"text": lines}), word_tokenizer, "train")
    eos = word_tokenizer.eos_token_id
    words = [w for line in lines if line for w in word_tokenizer(line)["input_ids"] + [eos]]
    stream = [eos] * context_size + words  # the start context, then each line followed by </s>
    expected = [(tuple(stream[t - context_size : t]), stream[t]) for t in range(context_size, len(stream))]
    assert _windows_of(blocks, context_size) == expected
    assert len(blocks[len(blocks) - 1]["input_ids"]) <= 8  # the tail is kept, shorter
    # Streaming gives the same blocks.
    stream_blocks = list(objective.prepare_stream(datasets.Dataset.from_dict({"text": lines}).to_iterable_dataset(),
                                                  word_tokenizer, "train")(0))
    assert stream_blocks == [blocks[k] for k in range(len(blocks))]


def test_word_stream_and_collator():
    assert word_stream([[5, 6], [], [7]], eos_token_id=3, start_token_id=3, context_size=2).tolist() == [
        3, 3, 5, 6, 3, 7, 3]
    blocks = NNLMBlocks(np.arange(10), context_size=2, block_length=5)
    batch = DataCollatorForNNLM(pad_token_id=0)([blocks[1], blocks[2]])
    assert batch["labels"].tolist() == [[-100, -100, 5, 6, 7], [-100, -100, 8, 9, -100]]
    assert batch["attention_mask"].tolist() == [[1] * 5, [1, 1, 1, 1, 0]]
    with pytest.raises(ValueError, match="must exceed the context size"):
        NNLMBlocks(np.arange(10), context_size=4, block_length=4)


def _run_cli(tmp_path, *extra, train_lines=None):
    from hf_lineage.cli import main

    (tmp_path / "train.txt").write_text("\n".join(train_lines if train_lines is not None else CORPUS * 6) + "\n")
    (tmp_path / "valid.txt").write_text("\n".join(CORPUS[:8]) + "\n")
    out = tmp_path / "out"
    code = main(["pretrain", "nnlm", "--config", "tiny", "--train-file", str(tmp_path / "train.txt"), "--validation-file",
                 str(tmp_path / "valid.txt"), "--output-dir", str(out), "--max-seq-length", "24",
                 "--per-device-batch-size", "4", "--report-to", "none", *extra])
    return code, out


def test_cli_pretrain_runs_and_perplexity_falls(tmp_path):
    code, out = _run_cli(tmp_path, "--max-steps", "40", "--learning-rate", "1e-2", "--set", "min_count=1",
                         "--set", "context_size=2")
    assert code == 0
    results = json.loads((out / "train_results.json").read_text())
    model = AutoModelForCausalLM.from_pretrained(out)
    assert isinstance(model, LineageNNLMForCausalLM) and model.config.context_size == 2
    vocab = model.config.vocab_size
    # An untrained model is near uniform (perplexity ≈ |V|); training on the text brings it far below.
    assert results["eval"]["perplexity"] == pytest.approx(np.exp(results["eval"]["loss"]))
    assert results["eval"]["perplexity"] < vocab / 4, (results, vocab)
    assert "min_count" not in model.config.to_dict()  # a tokenizer option, not a config field


def test_a_diverging_engine_run_stops_in_one_line_without_a_final_model(tmp_path, capsys):
    """An absurd learning rate sends the loss to inf/NaN: the engine stops at the next log with one line naming the
    family and the step, and no final model is saved (the NNLM's embeddings and every engine family alike)."""
    code, out = _run_cli(tmp_path, "--max-steps", "20", "--learning-rate", "1e30", "--log-every", "1",
                         "--set", "min_count=1", "--set", "context_size=2")
    error = [line for line in capsys.readouterr().err.splitlines() if line.startswith("hf-lineage pretrain")]
    assert code == 2 and len(error) == 1 and "nnlm diverged by step" in error[0], error
    assert "training loss" in error[0] and "Lower --learning-rate (it was 1e+30)" in error[0]
    assert not (out / "model.safetensors").exists() and not (out / "config.json").exists()


def test_cli_refuses_bad_input_before_writing(tmp_path, capsys):
    code, out = _run_cli(tmp_path, "--max-steps", "2", train_lines=["", "   "])
    assert code == 2 and "is empty" in capsys.readouterr().err and not out.exists()
    code, out = _run_cli(tmp_path, "--max-steps", "2", "--set", "min_count=1000")
    assert code == 2 and "vocabulary is empty" in capsys.readouterr().err and not out.exists()
    code, out = _run_cli(tmp_path, "--max-steps", "2", "--set", "min_count=1", "--max-seq-length", "3")
    assert code == 2 and "must exceed the context size" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize(
    "make_inputs, message",
    [
        (lambda: dict(input_ids=torch.tensor([[5, V]])), rf"input_ids contains {V}, outside \[0, {V}\)"),
        (lambda: dict(input_ids=torch.tensor([[5, -1]])), "input_ids contains -1"),
        (lambda: dict(input_ids=torch.tensor([[5, 6]]), attention_mask=torch.ones(1, 3)),
         r"attention_mask has shape \(1, 3\) but input_ids has shape \(1, 2\)"),
        (lambda: dict(input_ids=torch.tensor([5, 6])), "must have shape"),
        (lambda: dict(), "input_ids are required"),
        (lambda: dict(input_ids=torch.tensor([[5, 6]]), labels=torch.tensor([[5, 6, 7]])), "labels has shape"),
    ],
)
def test_bad_input_raises_clear_value_error(make_inputs, message):
    model = LineageNNLMForCausalLM(tiny()).eval()
    with pytest.raises(ValueError, match=message):
        model(**make_inputs())
    with pytest.raises(ValueError, match=rf"input_ids contains 150"):
        model.generate(torch.tensor([[5, 150]]), max_new_tokens=2)
