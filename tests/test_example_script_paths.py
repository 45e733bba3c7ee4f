"""The code paths of transformers' example scripts (run_clm.py, run_glue.py, run_ner.py) on every family (issue 35):
Auto classes, plain ``Trainer`` (not the recipes' subclass) with ``remove_unused_columns=True``, and run_clm's
``preprocess_logits_for_metrics``. Tiny configs, a few seconds in all."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from datasets import Dataset
from transformers import (
    AutoModelForCausalLM,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    Trainer,
    TrainingArguments,
    default_data_collator,
)

import hf_lineage  # noqa: F401  (registers the families with the Auto classes)
from hf_lineage.registry import FAMILIES, family_classes

V, B, T = 40, 4, 6
CAUSAL = [f for f in FAMILIES if f != "bert"] + ["bert"]  # BERT's causal head from a config without is_decoder


def tiny(family, **overrides):
    config_class, _ = family_classes(family)
    sizes = {"task_hidden_size": 8} if family in ("svd", "nnlm", "word2vec", "elmo") else {}
    return config_class.from_named("tiny", vocab_size=V, **{**sizes, **overrides})


def rows(family, config, n=B, **columns):
    torch.manual_seed(0)
    data = {"input_ids": torch.randint(5, V, (n, T)).tolist(), "attention_mask": [[1] * T] * n, **columns}
    if family == "elmo":
        data["char_ids"] = torch.randint(1, 200, (n, T, config.max_characters_per_token)).tolist()
    return Dataset.from_dict(data)


def trainer(model, tmp_path, eval_dataset, **kwargs):
    args = TrainingArguments(output_dir=str(tmp_path), per_device_eval_batch_size=2, report_to=[], use_cpu=True,
                             remove_unused_columns=True)
    return Trainer(model=model, args=args, eval_dataset=eval_dataset, data_collator=default_data_collator, **kwargs)


# run_clm.py's metric path, as written there.
def preprocess_logits_for_metrics(logits, labels):
    if isinstance(logits, tuple):
        logits = logits[0]
    return logits.argmax(dim=-1)


def compute_metrics(eval_preds):
    preds, labels = eval_preds
    labels, preds = labels[:, 1:].reshape(-1), preds[:, :-1].reshape(-1)
    return {"accuracy": float((preds == labels).mean())}


@pytest.mark.parametrize("family", CAUSAL)
def test_causal_lm_with_labels_returns_logits_per_position_and_run_clm_metrics_work(family, tmp_path):
    from transformers.testing_utils import CaptureLogger

    from hf_lineage.models import modeling_lineage_bert

    config = tiny(family)
    # Caught at the model's own logger: an earlier test (a recipe, Trainer) may have changed propagation or levels.
    bert_logger = modeling_lineage_bert.logger
    level = bert_logger.level
    bert_logger.setLevel("WARNING")
    try:
        with CaptureLogger(bert_logger) as captured:
            model = AutoModelForCausalLM.from_config(config).eval()
    finally:
        bert_logger.setLevel(level)
    if family == "bert":  # as transformers' BertLMHeadModel: a warning, and the config becomes a decoder's
        assert model.config.is_decoder and "is_decoder=True" in captured.out
    data = rows(family, config)
    batch = {k: torch.tensor(v) for k, v in data[:2].items()}
    with torch.no_grad():
        out = model(**batch, labels=batch["input_ids"])
        plain = model(**batch).logits
    assert out.logits.shape == (2, T, V)
    torch.testing.assert_close(out.logits, plain)
    expected = F.cross_entropy(plain[:, :-1].reshape(-1, V).float(), batch["input_ids"][:, 1:].reshape(-1))
    torch.testing.assert_close(out.loss, expected, atol=1e-5, rtol=1e-5)

    data = data.add_column("labels", data["input_ids"])
    metrics = trainer(model, tmp_path, data, compute_metrics=compute_metrics,
                      preprocess_logits_for_metrics=preprocess_logits_for_metrics).evaluate()
    assert 0 <= metrics["eval_accuracy"] <= 1 and np.isfinite(metrics["eval_loss"])


@pytest.mark.parametrize("family", ["nnlm", "word2vec", "svd"])
def test_sparse_logits_keep_the_loss_and_are_the_predicted_rows(family):
    model = AutoModelForCausalLM.from_config(tiny(family)).eval()
    ids = torch.randint(5, V, (2, T))
    labels = ids.clone()
    labels[0, :3] = -100
    with torch.no_grad():
        dense = model(input_ids=ids, labels=labels)
        sparse = model(input_ids=ids, labels=labels, sparse_logits=True)
    predicting = F.pad(labels[:, 1:], (0, 1), value=-100) != -100
    assert sparse.logits.shape == (int(predicting.sum()), V)
    torch.testing.assert_close(sparse.logits, dense.logits[predicting])
    torch.testing.assert_close(sparse.loss, dense.loss, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("auto_class", [AutoModelForSequenceClassification, AutoModelForTokenClassification])
def test_trainer_keeps_elmo_char_ids(auto_class, tmp_path):
    config = tiny("elmo", num_labels=2)
    model = auto_class.from_config(config)
    labels = [0, 1] * (B // 2) if auto_class is AutoModelForSequenceClassification else [[0, 1, 0, 1, 0, 1]] * B
    data = rows("elmo", config, labels=labels)
    run = trainer(model, tmp_path, data)
    assert "char_ids" in run._remove_unused_columns(data).column_names
    assert np.isfinite(run.evaluate()["eval_loss"])


def test_gpt_classification_eval_loss_is_the_task_cross_entropy(tmp_path):
    config = tiny("gpt", num_labels=2, lm_loss_weight=0.5, pad_token_id=0)
    model = AutoModelForSequenceClassification.from_config(config)
    data = rows("gpt", config, labels=[0, 1, 1, 0])
    prediction = trainer(model, tmp_path, data).predict(data)
    logits = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
    task = F.cross_entropy(torch.tensor(logits), torch.tensor([0, 1, 1, 0])).item()
    assert prediction.metrics["test_loss"] == pytest.approx(task, abs=1e-5)
    # Training still optimises the paper's L3 = task + λ · LM.
    batch = {k: torch.tensor(v) for k, v in data[:].items()}
    model.train()
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if hasattr(module, "attn_dropout"):
            module.attn_dropout = 0.0
    with torch.no_grad():
        out = model(**batch)
    assert out.lm_loss is not None
    torch.testing.assert_close(out.loss, F.cross_entropy(out.logits, batch["labels"]) + 0.5 * out.lm_loss)
