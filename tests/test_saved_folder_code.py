"""The code a saved folder carries: ``save_pretrained`` copies a family's modeling and configuration files and, through
their same-folder imports, exactly the shared ``*_lineage_utils`` modules they need; in a process where hf_lineage
cannot be imported, ``trust_remote_code`` builds every family from those copies alone and it computes what the
package's model computed (the task loss and logits; generation through the attention cache and the LSTM state)."""

import json

import torch
import transformers

import hf_lineage  # noqa: F401  (registers the families with the Auto classes)
from hf_lineage.registry import FAMILIES, family_classes

from conftest import REPO, run_without_hf_lineage

# What every family's files import, directly or through each other (the question-answering pipeline too: the QA
# mixin imports it when it saves, and transformers follows that import as it follows the others).
SHARED = {"configuration_lineage_utils.py", "modeling_lineage_utils.py", "card_lineage_utils.py",
          "pruning_lineage_utils.py", "loss_lineage_utils.py", "cache_lineage_utils.py", "heads_lineage_utils.py",
          "modeling_lineage_static.py", "modeling_lineage_intent_and_slots.py",
          "pipeline_lineage_question_answering.py", "feature_memo_lineage_utils.py"}
# Only the Transformers attend.
EXTRA = {"bert": {"attention_lineage_utils.py"}, "gpt": {"attention_lineage_utils.py"}}
# Shipped beside a tokenizer, not a model (tests/test_elmo_fast_tokenizer.py loads it from a folder).
TOKENIZER_FILES = {"tokenization_lineage_elmo.py"}


def tiny(family, **overrides):
    config_class, _ = family_classes(family)
    return config_class.from_named("tiny", vocab_size=300, **overrides)


def inputs(family, config):
    ids = torch.randint(5, 300, (2, 7))
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0
    batch = {"input_ids": ids, "attention_mask": mask, "labels": torch.randint(0, 3, (2, 7))}
    if family == "elmo":
        batch["char_ids"] = torch.randint(1, config.n_characters, (2, 7, config.max_characters_per_token))
    return batch


def test_every_family_saves_exactly_its_modules_and_computes_the_same_from_them_without_hf_lineage(tmp_path):
    shipped, expected = {}, {}
    for family in FAMILIES:
        torch.manual_seed(0)
        config = tiny(family, num_labels=3)
        model = transformers.AutoModelForTokenClassification.from_config(config).eval()
        model.save_pretrained(tmp_path / family)
        files = {path.name for path in (tmp_path / family).glob("*.py")}
        assert files == {f"configuration_lineage_{family}.py", f"modeling_lineage_{family}.py"} | SHARED | EXTRA.get(
            family, set()), family
        shipped[family] = files
        batch = inputs(family, config)
        torch.save(batch, tmp_path / f"{family}-inputs.pt")
        with torch.no_grad():
            out = model(**batch)
        expected[family] = [out.loss.item(), out.logits.flatten().tolist()]
    # Every module of models/ travels with some family, so the load below imports each of them from a copy.
    package_modules = {path.name for path in (REPO / "hf_lineage" / "models").glob("*.py")} - {"__init__.py"}
    assert set().union(*shipped.values()) == package_modules - TOKENIZER_FILES

    got = json.loads(run_without_hf_lineage(f"""
import json, torch
from transformers import AutoModelForTokenClassification
got = {{}}
for family in {list(FAMILIES)!r}:
    model = AutoModelForTokenClassification.from_pretrained({str(tmp_path)!r} + "/" + family, trust_remote_code=True)
    assert model.__module__.startswith("transformers_modules."), model.__module__
    with torch.no_grad():
        out = model.eval()(**torch.load({str(tmp_path)!r} + f"/{{family}}-inputs.pt"))
    got[family] = [out.loss.item(), out.logits.flatten().tolist()]
print(json.dumps(got))
""", cwd=tmp_path).strip().splitlines()[-1])
    assert set(got) == set(FAMILIES)
    for family in FAMILIES:
        torch.testing.assert_close(torch.tensor(got[family][1]), torch.tensor(expected[family][1]), atol=1e-5, rtol=0)
        assert abs(got[family][0] - expected[family][0]) <= 1e-5, family


def test_generation_from_the_copies_follows_the_attention_cache_and_the_lstm_state(tmp_path):
    """GPT carries transformers' attention cache, ELMo's forward LM an ``LSTMStateCache`` (cache_lineage_utils):
    greedy generation from the copied code gives the package's tokens."""
    prompt = torch.tensor([[7, 8, 9, 10]])
    expected = {}
    for family, overrides in (("gpt", {}), ("elmo", {"use_char_inputs": False})):  # ELMo reads word ids alone
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(tiny(family, **overrides)).eval()
        model.save_pretrained(tmp_path / family)
        expected[family] = model.generate(prompt, max_new_tokens=5, do_sample=False, pad_token_id=0).tolist()
    got = json.loads(run_without_hf_lineage(f"""
import json, torch
from transformers import AutoModelForCausalLM
got = {{}}
for family in ("gpt", "elmo"):
    model = AutoModelForCausalLM.from_pretrained({str(tmp_path)!r} + "/" + family, trust_remote_code=True).eval()
    got[family] = model.generate(torch.tensor({prompt.tolist()!r}), max_new_tokens=5, do_sample=False,
                                 pad_token_id=0).tolist()
print(json.dumps(got))
""", cwd=tmp_path).strip().splitlines()[-1])
    assert got == expected and len(expected["gpt"][0]) == 9
