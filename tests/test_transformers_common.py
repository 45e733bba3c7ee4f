"""transformers' own common model tests (``ModelTesterMixin``) on lineage BERT (masked LM, and as a causal decoder)
and lineage GPT, the way transformers tests its BERT and OpenAI GPT.

Opt-in: transformers' tests are not installed with it, so this module is skipped unless ``TRANSFORMERS_TESTS``
names a folder holding them as the package ``transformers_tests`` (and ``site/`` with ``parameterized``);
``bash utils/transformers_common_tests.sh`` prepares that folder from the installed release's source archive and runs
this file. Only the testers live here; transformers' test code stays outside the repository. The release archive
has no tests/generation/test_utils.py, so ``GenerationTesterMixin`` is the script's empty stand-in there (inherited,
as transformers' BERT and GPT tests do, but running no generation test: ``test_transformers_conventions.py``
covers generation).
"""

import os
import sys
import unittest

import pytest

FOLDER = os.environ.get("TRANSFORMERS_TESTS")
if not FOLDER or not os.path.isfile(os.path.join(FOLDER, "transformers_tests", "test_modeling_common.py")):
    pytest.skip("transformers' common tests not prepared (bash utils/transformers_common_tests.sh runs them)",
                allow_module_level=True)
sys.path[:0] = [FOLDER, os.path.join(FOLDER, "site")]

import torch  # noqa: E402
import transformers_tests.test_modeling_common as common  # noqa: E402
from transformers_tests.generation.test_utils import GenerationTesterMixin  # noqa: E402
from transformers_tests.test_modeling_common import ModelTesterMixin, ids_tensor, random_attention_mask  # noqa: E402

import hf_lineage  # noqa: E402
from hf_lineage import LineageBertConfig, LineageGPTConfig  # noqa: E402

# The mixin picks inputs and labels by class name from transformers' *_MAPPING_NAMES tables (its own models only);
# in this test process the lineage classes are entered there as a model of transformers would be.
for table, entries in {
    "MODEL_MAPPING_NAMES": {"lineage-bert": "LineageBertModel", "lineage-gpt": "LineageGPTModel"},
    "MODEL_FOR_PRETRAINING_MAPPING_NAMES": {"lineage-bert": "LineageBertForPreTraining"},
    "MODEL_FOR_MASKED_LM_MAPPING_NAMES": {"lineage-bert": "LineageBertForMaskedLM"},
    "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES": {"lineage-bert": "LineageBertForCausalLM", "lineage-gpt": "LineageGPTForCausalLM"},
    "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES": {"lineage-bert": "LineageBertForSequenceClassification",
                                                        "lineage-gpt": "LineageGPTForSequenceClassification"},
    "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES": {"lineage-bert": "LineageBertForTokenClassification"},
    "MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES": {"lineage-bert": "LineageBertForQuestionAnswering"},
    "MODEL_FOR_MULTIPLE_CHOICE_MAPPING_NAMES": {"lineage-bert": "LineageBertForMultipleChoice"},
}.items():
    getattr(common, table).update(entries)


class LineageModelTester:
    """What transformers' ``BertModelTester`` gives the mixin: sizes, a config built by calling the class, and the
    inputs of ``prepare_config_and_inputs_for_common``."""

    def __init__(self, parent, family, is_decoder=False, batch_size=13, seq_length=7):
        self.parent, self.family, self.is_decoder = parent, family, is_decoder
        self.batch_size, self.seq_length, self.is_training = batch_size, seq_length, True
        self.vocab_size, self.hidden_size, self.num_hidden_layers, self.num_attention_heads = 99, 32, 2, 4
        self.intermediate_size, self.type_vocab_size, self.num_labels, self.num_choices = 37, 16, 3, 4
        self.add_cross_attention = False

    def get_config(self):
        sizes = dict(vocab_size=self.vocab_size, hidden_size=self.hidden_size, num_hidden_layers=self.num_hidden_layers,
                     num_attention_heads=self.num_attention_heads, intermediate_size=self.intermediate_size,
                     hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                     max_position_embeddings=512, initializer_range=0.02, num_labels=self.num_labels)
        if self.family == "bert":
            return LineageBertConfig(**sizes, type_vocab_size=self.type_vocab_size,
                                     is_decoder=self.is_decoder or self.add_cross_attention,
                                     add_cross_attention=self.add_cross_attention)
        return LineageGPTConfig(**sizes)

    def prepare_config_and_inputs_for_common(self):
        inputs = {"input_ids": ids_tensor([self.batch_size, self.seq_length], self.vocab_size),
                  "attention_mask": random_attention_mask([self.batch_size, self.seq_length])}
        if self.family == "bert" and not self.is_decoder:
            inputs["token_type_ids"] = ids_tensor([self.batch_size, self.seq_length], self.type_vocab_size)
        return self.get_config(), inputs


def classes(family, *heads):
    prefix = "LineageBert" if family == "bert" else "LineageGPT"
    return tuple(getattr(hf_lineage, prefix + head) for head in heads)


class BertWeightConversionsWithCrossAttention:
    """Lineage BERT's folders keep the fused layouts (``WEIGHT_CONVERSIONS``: self-attention's ``qkv``,
    cross-attention's ``key_value``). transformers' round-trip check wants every conversion to match a key, and the
    cross-attention one matches only in a model that has cross-attention (a decoder's): it runs on one, so both are
    checked."""

    def test_reverse_loading_mapping(self):
        self.model_tester.add_cross_attention = True
        try:
            super().test_reverse_loading_mapping()
        finally:
            self.model_tester.add_cross_attention = False


class LineageBertModelTest(BertWeightConversionsWithCrossAttention, ModelTesterMixin, unittest.TestCase):
    all_model_classes = classes("bert", "Model", "ForMaskedLM", "ForPreTraining", "ForSequenceClassification",
                                "ForTokenClassification", "ForQuestionAnswering", "ForMultipleChoice")

    def setUp(self):
        self.model_tester = LineageModelTester(self, "bert")

    def _prepare_for_class(self, inputs_dict, model_class, return_labels=False):
        # As transformers' BertModelTest: the pre-training head takes both losses' labels.
        inputs_dict = super()._prepare_for_class(inputs_dict, model_class, return_labels=return_labels)
        if return_labels and model_class.__name__ == "LineageBertForPreTraining":
            shape = (self.model_tester.batch_size, self.model_tester.seq_length)
            inputs_dict["labels"] = torch.zeros(shape, dtype=torch.long)
            inputs_dict["next_sentence_label"] = torch.zeros(self.model_tester.batch_size, dtype=torch.long)
        return inputs_dict


class LineageBertAsDecoderModelTest(BertWeightConversionsWithCrossAttention, ModelTesterMixin, GenerationTesterMixin,
                                    unittest.TestCase):
    all_model_classes = classes("bert", "ForCausalLM")

    def setUp(self):
        self.model_tester = LineageModelTester(self, "bert", is_decoder=True)


class LineageGPTModelTest(ModelTesterMixin, GenerationTesterMixin, unittest.TestCase):
    all_model_classes = classes("gpt", "Model", "ForCausalLM", "ForSequenceClassification")

    def setUp(self):
        self.model_tester = LineageModelTester(self, "gpt")

