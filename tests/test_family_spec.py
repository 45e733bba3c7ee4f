"""A family is one registry entry (``hf_lineage.registry.FAMILIES``: its library facts) plus one lineage entry
(``hf_lineage.lineage.settings.LINEAGE_FAMILIES``: its experiment facts). A toy family added through those two entries
alone — its models files a subclass of NNLM's — is built by the Auto classes, listed by ``hf-lineage families``,
pretrained by ``hf-lineage pretrain`` and taken by the lineage's pretraining stage, with nothing else edited; a masked
toy (BERT's subclass, ``sentence_scoring="masked"``) and the causal one are scored by ``hf-lineage evaluate
minimal-pairs`` with their own method, and ``convert`` tells both they have no release.

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
from hf_lineage.models.modeling_lineage_nnlm import LineageNNLMForCausalLM, LineageNNLMModel

from .configuration_lineage_toy import LineageToyConfig


class LineageToyModel(LineageNNLMModel):
    config_class = LineageToyConfig


class LineageToyForCausalLM(LineageNNLMForCausalLM):
    config_class = LineageToyConfig


AUTO_CLASSES = {"AutoModel": "LineageToyModel", "AutoModelForCausalLM": "LineageToyForCausalLM"}
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
    LineageBertModel,
)

from .configuration_lineage_toymlm import LineageToyMlmConfig


class LineageToyMlmModel(LineageBertModel):
    config_class = LineageToyMlmConfig


class LineageToyMlmForPreTraining(LineageBertForPreTraining):
    config_class = LineageToyMlmConfig


class LineageToyMlmForMaskedLM(LineageBertForMaskedLM):
    config_class = LineageToyMlmConfig


AUTO_CLASSES = {"AutoModel": "LineageToyMlmModel", "AutoModelForPreTraining": "LineageToyMlmForPreTraining",
                "AutoModelForMaskedLM": "LineageToyMlmForMaskedLM"}
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
# The two entries: nothing else is edited.
registry.FAMILIES["toy"] = registry.Family("toy_family.configuration_lineage_toy:LineageToyConfig",
                                           "toy_family.modeling_lineage_toy", "toy_family.objective_toy:ToyObjective",
                                           "tiny", causal_lm=True, labels_last_token=True)
registry.register_family("toy")
settings.LINEAGE_FAMILIES["toy"] = dataclasses.replace(
    settings.LINEAGE_FAMILIES["nnlm"], label="Toy", color="tab:pink", objective="a toy objective",
    sizes={scale: ("tiny", {"embedding_size": 8, "hidden_size": 16, "context_size": 2}, {}) for scale in settings.SCALES})

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

# The masked toy: one registry entry, its head-free scoring said there.
registry.FAMILIES["toymlm"] = registry.Family("toy_family.configuration_lineage_toymlm:LineageToyMlmConfig",
                                              "toy_family.modeling_lineage_toymlm",
                                              "toy_family.objective_toymlm:ToyMlmObjective", "tiny",
                                              sentence_scoring="masked")
registry.register_family("toymlm")
documents = out / "documents.txt"  # BERT's sentence pairs are drawn within documents, B from another one at random
lines = Path(corpus).read_text().splitlines()
documents.write_text("\\n\\n".join("\\n".join(lines[i:i + 40]) for i in range(0, len(lines), 40)) + "\\n")
found["masked_pretrain_cli"] = cli.main(["pretrain", "toymlm", "--train-file", str(documents), "--output-dir",
                                         str(out / "mlm"), "--max-steps", "2", "--vocab-size", "80"])
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


def test_a_toy_family_added_by_one_registry_and_one_lineage_entry_runs_through_every_layer(tmp_path):
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
                     "masked_pretrain_cli": 0,
                     "scored_as": {"toy": ["sum"], "toymlm": ["PLL", "PLL-word-l2r"]}}
    assert found["lineage_steps"] >= 1
    assert [message.split(":")[0] for message in convert] == ["toy", "toymlm"]
    assert all("no published release" in message for message in convert), convert
