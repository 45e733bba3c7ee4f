"""A family is its models files plus one record (``hf_lineage.registry.FAMILIES``: every fact about it, its lineage
settings in ``Family.lineage``). Two toy families added that way alone — a causal one (NNLM's subclass) and a masked,
bidirectional one (BERT's, ``sentence_scoring="masked"``) — are built by the Auto classes, listed by ``hf-lineage
families``, pretrained by ``hf-lineage pretrain`` (the causal one also by the lineage's pretraining stage), fine-tuned
and reported by ``hf-lineage lineage --families toy toymlm`` on their pretrained folders, scored by ``hf-lineage
evaluate minimal-pairs`` with their own method, and told by ``convert`` that they have no release.

The toy runs in a subprocess: registering a model type with transformers cannot be undone in a process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

CONFIGURATION = '''
from hf_lineage.models.configuration_lineage_nnlm import LineageNNLMConfig


class LineageToyConfig(LineageNNLMConfig):
    model_type = "lineage-toy"
    paper = "A toy family, to show what adding one takes"
'''

MODELING = '''
from hf_lineage.models.modeling_lineage_nnlm import (
    LineageNNLMForCausalLM,
    LineageNNLMForSequenceClassification,
    LineageNNLMModel,
)

from .configuration_lineage_toy import LineageToyConfig


class LineageToyModel(LineageNNLMModel):
    config_class = LineageToyConfig


class LineageToyForCausalLM(LineageNNLMForCausalLM):
    config_class = LineageToyConfig


class LineageToyForSequenceClassification(LineageNNLMForSequenceClassification):
    config_class = LineageToyConfig


AUTO_CLASSES = {"AutoModel": "LineageToyModel", "AutoModelForCausalLM": "LineageToyForCausalLM",
                "AutoModelForSequenceClassification": "LineageToyForSequenceClassification"}
'''

OBJECTIVE = '''
from hf_lineage.objectives.nnlm import NNLMObjective

from .configuration_lineage_toy import LineageToyConfig


class ToyObjective(NNLMObjective):
    family = "toy"
    model_class_name = "LineageToyForCausalLM"

    def build_config(self, size, tokenizer, overrides):
        super().build_config(size, tokenizer, overrides)
        self.config = LineageToyConfig(**{k: v for k, v in self.config.to_diff_dict().items() if k != "model_type"})
        return self.config
'''

MASKED_CONFIGURATION = '''
from hf_lineage.models.configuration_lineage_bert import LineageBertConfig


class LineageToyMlmConfig(LineageBertConfig):
    model_type = "lineage-toymlm"
    paper = "A masked toy family"
'''

MASKED_MODELING = '''
from hf_lineage.models.modeling_lineage_bert import (
    LineageBertForMaskedLM,
    LineageBertForPreTraining,
    LineageBertForSequenceClassification,
    LineageBertModel,
)

from .configuration_lineage_toymlm import LineageToyMlmConfig


class LineageToyMlmModel(LineageBertModel):
    config_class = LineageToyMlmConfig


class LineageToyMlmForPreTraining(LineageBertForPreTraining):
    config_class = LineageToyMlmConfig


class LineageToyMlmForMaskedLM(LineageBertForMaskedLM):
    config_class = LineageToyMlmConfig


class LineageToyMlmForSequenceClassification(LineageBertForSequenceClassification):
    config_class = LineageToyMlmConfig


AUTO_CLASSES = {"AutoModel": "LineageToyMlmModel", "AutoModelForPreTraining": "LineageToyMlmForPreTraining",
                "AutoModelForMaskedLM": "LineageToyMlmForMaskedLM",
                "AutoModelForSequenceClassification": "LineageToyMlmForSequenceClassification"}
'''

MASKED_OBJECTIVE = '''
from hf_lineage.objectives.bert import BertObjective

from .configuration_lineage_toymlm import LineageToyMlmConfig


class ToyMlmObjective(BertObjective):
    family = "toymlm"
    model_class_name = "LineageToyMlmForPreTraining"

    def build_config(self, size, tokenizer, overrides):
        config = super().build_config(size, tokenizer, overrides)
        return LineageToyMlmConfig(**{k: v for k, v in config.to_diff_dict().items() if k != "model_type"})
'''

SCRIPT = '''
import dataclasses, json, sys
from pathlib import Path

from hf_lineage import cli, registry
from hf_lineage.lineage import settings
from hf_lineage.lineage.pretraining import pretrain_family
from transformers import AutoConfig, AutoModelForCausalLM

corpus, out = sys.argv[1], Path(sys.argv[2])
# One record each: nothing else is edited.
registry.FAMILIES["toy"] = registry.Family(
    "toy_family.configuration_lineage_toy:LineageToyConfig", "toy_family.modeling_lineage_toy",
    "toy_family.objective_toy:ToyObjective", "tiny", causal_lm=True, labels_last_token=True,
    lineage=dataclasses.replace(registry.FAMILIES["nnlm"].lineage, label="Toy", color="tab:pink",
                                objective="a toy objective",
                                sizes={scale: ("tiny", {"embedding_size": 8, "hidden_size": 16, "context_size": 2}, {})
                                       for scale in settings.SCALES}))
registry.FAMILIES["toymlm"] = registry.Family(
    "toy_family.configuration_lineage_toymlm:LineageToyMlmConfig", "toy_family.modeling_lineage_toymlm",
    "toy_family.objective_toymlm:ToyMlmObjective", "tiny", sentence_scoring="masked",
    lineage=dataclasses.replace(registry.FAMILIES["bert"].lineage, label="ToyMLM", color="tab:gray",
                                objective="a masked toy objective", in_default_run=False))
registry.register_family("toy")
registry.register_family("toymlm")

found = {}
found["auto"] = type(AutoModelForCausalLM.from_config(AutoConfig.for_model("lineage-toy", vocab_size=20))).__name__
found["listed"] = "lineage-toy" in cli.families_table()
found["pretrain_cli"] = cli.main(["pretrain", "toy", "--train-file", corpus, "--output-dir", str(out / "cli"),
                                  "--max-steps", "2", "--vocab-size", "60"])
found["saved"] = type(AutoModelForCausalLM.from_pretrained(out / "cli")).__name__
found["generation_config"] = (out / "cli" / "generation_config.json").is_file()
args = settings.LineageArguments(families=["toy"], budget_words=4_800)
settings.check_arguments(args)
found["default_run"] = "toy" in settings.default_families()
result = pretrain_family("toy", settings.SCALES["tiny"], args, {"train": [corpus], "validation": [], "train_words": 4_800},
                         out / "lineage")
found["lineage_objective"] = result["objective"]
found["lineage_steps"] = result["steps"]

documents = out / "documents.txt"  # BERT's sentence pairs are drawn within documents, B from another one at random
lines = Path(corpus).read_text().splitlines()
documents.write_text("\\n\\n".join("\\n".join(lines[i:i + 40]) for i in range(0, len(lines), 40)) + "\\n")
found["masked_pretrain_cli"] = cli.main(["pretrain", "toymlm", "--train-file", str(documents), "--output-dir",
                                         str(out / "mlm"), "--max-steps", "2", "--vocab-size", "80"])
# Both in the lineage, fine-tuned (and frozen) on a task from their pretrained folders, and reported.
report = out / "report"
found["lineage_cli"] = cli.main([
    "lineage", "--families", "toy", "toymlm", "--checkpoints", f"toy={out / 'cli'}", f"toymlm={out / 'mlm'}",
    "--tasks", "order", "--variants", "frozen", "finetuned", "--task-train", "32", "--task-validation", "16",
    "--finetune-epochs", "1", "--curve-sizes", "--workers", "0", "--blimp-pairs", "0", "--output-dir", str(report)])
results = json.loads((report / "results.json").read_text())
found["lineage_cells"] = sorted((c["family"], c["variant"], c["status"]) for c in results["finetuning"])
found["lineage_report"] = all(label in (report / "report.md").read_text() for label in ("Toy", "ToyMLM"))
from hf_lineage.convert.releases import ConversionError, converter
from hf_lineage.minimal_pairs.model_specs import resolve_model
from hf_lineage.minimal_pairs.pairs import MinimalPair
from hf_lineage.minimal_pairs.zero_shot import evaluate_models

pair = MinimalPair("the cat sat on the mat .", "the cat sat the on mat .", "toy", "syntax", "order", "0", "-", 1)
evaluated = evaluate_models([resolve_model(f"toy={out / 'cli'}"), resolve_model(f"toymlm={out / 'mlm'}")], [pair],
                            resamples=0)
found["scored_as"] = {m["label"]: [evaluated["systems"][name]["variant"] for name in m["systems"]]
                      for m in evaluated["models"]}
found["convert"] = []
for family in ("toy", "toymlm"):
    try:
        converter(family)
    except ConversionError as error:
        found["convert"].append(str(error))
print("FOUND " + json.dumps(found))
'''


def test_two_toy_families_added_by_one_record_each_run_through_every_layer(tmp_path):
    package = tmp_path / "toy_family"  # a real family's modules sit in hf_lineage/models; the toy's in a package
    package.mkdir()
    for name, text in (("__init__.py", ""), ("configuration_lineage_toy.py", CONFIGURATION),
                       ("modeling_lineage_toy.py", MODELING), ("objective_toy.py", OBJECTIVE),
                       ("configuration_lineage_toymlm.py", MASKED_CONFIGURATION),
                       ("modeling_lineage_toymlm.py", MASKED_MODELING), ("objective_toymlm.py", MASKED_OBJECTIVE)):
        (package / name).write_text(textwrap.dedent(text))
    (tmp_path / "run_toy.py").write_text(SCRIPT)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"the cat number {i % 7} sat on the mat near dog {i % 5} ." for i in range(400)) + "\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
           "CUDA_VISIBLE_DEVICES": ""}
    run = subprocess.run([sys.executable, str(tmp_path / "run_toy.py"), str(corpus), str(tmp_path / "out")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout.split("FOUND ", 1)[1])
    convert = found.pop("convert")
    assert found == {"auto": "LineageToyForCausalLM", "listed": True, "pretrain_cli": 0,
                     "saved": "LineageToyForCausalLM", "generation_config": True, "default_run": True,
                     "lineage_objective": "a toy objective", "lineage_steps": found["lineage_steps"],
                     "masked_pretrain_cli": 0, "lineage_cli": 0, "lineage_report": True,
                     "lineage_cells": [["toy", "finetuned", "ok"], ["toy", "frozen", "ok"],
                                       ["toymlm", "finetuned", "ok"], ["toymlm", "frozen", "ok"]],
                     "scored_as": {"toy": ["sum"], "toymlm": ["PLL", "PLL-word-l2r"]}}
    assert found["lineage_steps"] >= 1
    assert [message.split(":")[0] for message in convert] == ["toy", "toymlm"]
    assert all("no published release" in message for message in convert), convert


def test_no_module_outside_the_records_compares_a_family_name():
    """A family's facts are read from its record, not from ``if family == "elmo"`` far from it (issue 61): only the
    models files, the records (``registry/``), the families' own objectives, CPU trainers and shipped folders, and
    the two places below whose subject is one named family, compare a value with a family's name."""
    import ast
    from pathlib import Path

    import hf_lineage
    from hf_lineage.registry import FAMILIES

    names = set(FAMILIES) | {f"lineage-{name}" for name in FAMILIES}
    own_folders = {"models", "registry", "objectives", "word_vector_trainers", "checkpoints"}
    about_one_family = {
        "compression/distillation.py",  # DistilBERT's student copies a subset of a BERT teacher's layers
        "compression/distillation_recipe.py",
        "lineage/claims.py",  # the report's claims name the families they are about (GPT vs BERT, BERT's ablations)
    }
    root = Path(hf_lineage.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.split("/")[0] in own_folders or relative in about_one_family:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and any(isinstance(c, ast.Constant) and c.value in names
                                                     for c in ast.walk(node)):
                found.append(f"{relative}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "compare with a family's name instead of reading its record:\n" + "\n".join(found)
