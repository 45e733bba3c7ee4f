"""transformers' own common model tests on lineage BERT and lineage GPT, the way transformers tests its BERT and
OpenAI GPT: ``ModelTesterMixin`` (with ``ExportTesterMixin``, its base) and ``GenerationTesterMixin``.

Opt-in: transformers' tests are not installed with it, so this module is skipped unless ``TRANSFORMERS_TESTS``
names a folder holding them as the package ``transformers_tests`` (and ``site/`` with ``parameterized``);
``bash utils/transformers_common_tests.sh`` prepares that folder from the installed release's source archive, adds
upstream's generation and export mixins (not in the archive) and runs this file. Only the testers live here;
transformers' test code stays outside the repository.

The testers are shaped like upstream's ``BertModelTester`` / ``BertModelTest`` and ``OpenAIGPTModelTester`` /
``OpenAIGPTModelTest`` (tests/models/bert and tests/models/openai): the same sizes and inputs, every head in
``all_model_classes`` with the causal LM among them, so the mixins' generation tests run on it
(``all_generative_model_classes`` is the classes that can generate). Where they differ from upstream it is said
below, with the reason. On the same harness upstream's own two tests pass in full, and every test they pass passes
here; every skip here is one of theirs, for their reason. The export tests (``ExportTesterMixin``) and a few others
are marked slow upstream and skip for both; under ``RUN_SLOW=1`` the export tests fail for transformers' own models
too (the mixin file, older than transformers 5.24, calls ``ExportedModel.module()``, which 5.24 does not have).
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
from transformers.testing_utils import torch_device  # noqa: E402
from transformers_tests.generation.test_utils import GenerationTesterMixin  # noqa: E402
from transformers_tests.test_modeling_common import (  # noqa: E402
    ModelTesterMixin,
    floats_tensor,
    ids_tensor,
    random_attention_mask,
)

import hf_lineage  # noqa: E402
from hf_lineage import LineageBertConfig, LineageGPTConfig  # noqa: E402
from hf_lineage.models.cache_lineage_utils import output_cache  # noqa: E402

# The mixins pick inputs and labels by class name from transformers' *_MAPPING_NAMES tables (its own models only);
# in this test process the lineage classes are entered there as a model of transformers would be.
for table, entries in {
    "MODEL_MAPPING_NAMES": {"lineage-bert": "LineageBertModel", "lineage-gpt": "LineageGPTModel"},
    "MODEL_FOR_PRETRAINING_MAPPING_NAMES": {"lineage-bert": "LineageBertForPreTraining"},
    "MODEL_FOR_MASKED_LM_MAPPING_NAMES": {"lineage-bert": "LineageBertForMaskedLM"},
    "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES": {"lineage-bert": "LineageBertForCausalLM",
                                          "lineage-gpt": "LineageGPTForCausalLM"},
    "MODEL_FOR_NEXT_SENTENCE_PREDICTION_MAPPING_NAMES": {"lineage-bert": "LineageBertForNextSentencePrediction"},
    "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES": {"lineage-bert": "LineageBertForSequenceClassification",
                                                        "lineage-gpt": "LineageGPTForSequenceClassification"},
    "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES": {"lineage-bert": "LineageBertForTokenClassification",
                                                     "lineage-gpt": "LineageGPTForTokenClassification"},
    "MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES": {"lineage-bert": "LineageBertForQuestionAnswering",
                                                   "lineage-gpt": "LineageGPTForQuestionAnswering"},
    "MODEL_FOR_MULTIPLE_CHOICE_MAPPING_NAMES": {"lineage-bert": "LineageBertForMultipleChoice",
                                                "lineage-gpt": "LineageGPTForMultipleChoice"},
}.items():
    getattr(common, table).update(entries)


def classes(prefix, *heads):
    return tuple(getattr(hf_lineage, prefix + head) for head in heads)


class LineageBertModelTester:
    """transformers' ``BertModelTester``: its sizes, a config built by calling the class, and its inputs."""

    def __init__(self, parent, batch_size=13, seq_length=7, is_training=True, use_input_mask=True,
                 use_token_type_ids=True, use_labels=True, vocab_size=99, hidden_size=32, num_hidden_layers=2,
                 num_attention_heads=4, intermediate_size=37, hidden_act="gelu", hidden_dropout_prob=0.1,
                 attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=16,
                 type_sequence_label_size=2, initializer_range=0.02, num_labels=3, num_choices=4, scope=None):
        self.parent, self.batch_size, self.seq_length, self.is_training = parent, batch_size, seq_length, is_training
        self.use_input_mask, self.use_token_type_ids, self.use_labels = use_input_mask, use_token_type_ids, use_labels
        self.vocab_size, self.hidden_size, self.num_hidden_layers = vocab_size, hidden_size, num_hidden_layers
        self.num_attention_heads, self.intermediate_size = num_attention_heads, intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob, self.attention_probs_dropout_prob = hidden_dropout_prob, attention_probs_dropout_prob
        self.max_position_embeddings, self.type_vocab_size = max_position_embeddings, type_vocab_size
        self.type_sequence_label_size, self.initializer_range = type_sequence_label_size, initializer_range
        self.num_labels, self.num_choices, self.scope = num_labels, num_choices, scope

    def prepare_config_and_inputs(self):
        input_ids = ids_tensor([self.batch_size, self.seq_length], self.vocab_size)
        input_mask = random_attention_mask([self.batch_size, self.seq_length]) if self.use_input_mask else None
        token_type_ids = (ids_tensor([self.batch_size, self.seq_length], self.type_vocab_size)
                          if self.use_token_type_ids else None)
        sequence_labels = token_labels = choice_labels = None
        if self.use_labels:
            sequence_labels = ids_tensor([self.batch_size], self.type_sequence_label_size)
            token_labels = ids_tensor([self.batch_size, self.seq_length], self.num_labels)
            choice_labels = ids_tensor([self.batch_size], self.num_choices)
        return (self.get_config(), input_ids, token_type_ids, input_mask, sequence_labels, token_labels,
                choice_labels)

    def get_config(self):
        return LineageBertConfig(
            vocab_size=self.vocab_size, hidden_size=self.hidden_size, num_hidden_layers=self.num_hidden_layers,
            num_attention_heads=self.num_attention_heads, intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act, hidden_dropout_prob=self.hidden_dropout_prob,
            attention_probs_dropout_prob=self.attention_probs_dropout_prob,
            max_position_embeddings=self.max_position_embeddings, type_vocab_size=self.type_vocab_size,
            initializer_range=self.initializer_range, num_labels=self.num_labels,
        )

    def prepare_config_and_inputs_for_decoder(self):
        config, *inputs = self.prepare_config_and_inputs()
        config.is_decoder = True
        encoder_hidden_states = floats_tensor([self.batch_size, self.seq_length, self.hidden_size])
        encoder_attention_mask = ids_tensor([self.batch_size, self.seq_length], vocab_size=2)
        return config, *inputs, encoder_hidden_states, encoder_attention_mask

    def create_and_check_model(self, config, input_ids, token_type_ids, input_mask, *labels):
        model = hf_lineage.LineageBertModel(config).to(torch_device).eval()
        model(input_ids, attention_mask=input_mask, token_type_ids=token_type_ids)
        model(input_ids, token_type_ids=token_type_ids)
        result = model(input_ids)
        self.parent.assertEqual(result.last_hidden_state.shape, (self.batch_size, self.seq_length, self.hidden_size))
        self.parent.assertEqual(result.pooler_output.shape, (self.batch_size, self.hidden_size))

    def create_and_check_model_as_decoder(self, config, input_ids, token_type_ids, input_mask, *labels_and_encoder):
        encoder_hidden_states, encoder_attention_mask = labels_and_encoder[-2:]
        config.add_cross_attention = True
        model = hf_lineage.LineageBertModel(config).to(torch_device).eval()
        model(input_ids, attention_mask=input_mask, token_type_ids=token_type_ids,
              encoder_hidden_states=encoder_hidden_states, encoder_attention_mask=encoder_attention_mask)
        model(input_ids, attention_mask=input_mask, token_type_ids=token_type_ids,
              encoder_hidden_states=encoder_hidden_states)
        result = model(input_ids, attention_mask=input_mask, token_type_ids=token_type_ids)
        self.parent.assertEqual(result.last_hidden_state.shape, (self.batch_size, self.seq_length, self.hidden_size))

    def create_and_check_decoder_model_past_large_inputs(self, config, input_ids, token_type_ids, input_mask,
                                                         *labels_and_encoder):
        """Three new tokens on a cache (self- and cross-attention) give what the whole sequence gives at once."""
        encoder_hidden_states, encoder_attention_mask = labels_and_encoder[-2:]
        config.is_decoder = config.add_cross_attention = True
        model = hf_lineage.LineageBertForCausalLM(config).to(torch_device).eval()
        encoder = dict(encoder_hidden_states=encoder_hidden_states, encoder_attention_mask=encoder_attention_mask)
        cache = output_cache(model(input_ids, attention_mask=input_mask, use_cache=True, **encoder))
        next_tokens = ids_tensor((self.batch_size, 3), config.vocab_size)
        next_mask = ids_tensor((self.batch_size, 3), vocab_size=2)
        all_ids, all_mask = torch.cat([input_ids, next_tokens], dim=-1), torch.cat([input_mask, next_mask], dim=-1)
        whole = model(all_ids, attention_mask=all_mask, output_hidden_states=True, **encoder).hidden_states[0]
        step = model(next_tokens, attention_mask=all_mask, cache=cache, output_hidden_states=True,
                     **encoder).hidden_states[0]
        self.parent.assertEqual(step.shape[1], next_tokens.shape[1])
        torch.testing.assert_close(step, whole[:, -3:], atol=1e-3, rtol=0)

    def create_and_check_for_pretraining(self, config, input_ids, token_type_ids, input_mask, sequence_labels,
                                         token_labels, choice_labels):
        model = hf_lineage.LineageBertForPreTraining(config).to(torch_device).eval()
        result = model(input_ids, attention_mask=input_mask, token_type_ids=token_type_ids, labels=token_labels,
                       next_sentence_label=sequence_labels)
        self.parent.assertEqual(result.prediction_logits.shape, (self.batch_size, self.seq_length, self.vocab_size))
        self.parent.assertEqual(result.seq_relationship_logits.shape, (self.batch_size, 2))

    def prepare_config_and_inputs_for_common(self):
        config, input_ids, token_type_ids, input_mask, *_ = self.prepare_config_and_inputs()
        return config, {"input_ids": input_ids, "token_type_ids": token_type_ids, "attention_mask": input_mask}


class LineageBertModelTest(ModelTesterMixin, GenerationTesterMixin, unittest.TestCase):
    """transformers' ``BertModelTest``, every head of lineage BERT (``LineageBertForCausalLM`` as ``BertLMHeadModel``;
    it attends left to right whatever the config says, see its docstring)."""

    all_model_classes = classes(
        "LineageBert", "Model", "ForCausalLM", "ForMaskedLM", "ForMultipleChoice", "ForNextSentencePrediction",
        "ForPreTraining", "ForQuestionAnswering", "ForSequenceClassification", "ForTokenClassification",
    )
    model_split_percents = [0.5, 0.8, 0.9]

    def setUp(self):
        self.model_tester = LineageBertModelTester(self)

    def _prepare_for_class(self, inputs_dict, model_class, return_labels=False):
        # As transformers' BertModelTest: the pre-training head takes both losses' labels.
        inputs_dict = super()._prepare_for_class(inputs_dict, model_class, return_labels=return_labels)
        if return_labels and model_class.__name__ == "LineageBertForPreTraining":
            shape = (self.model_tester.batch_size, self.model_tester.seq_length)
            inputs_dict["labels"] = torch.zeros(shape, dtype=torch.long, device=torch_device)
            inputs_dict["next_sentence_label"] = torch.zeros(shape[0], dtype=torch.long, device=torch_device)
        return inputs_dict

    # What transformers' BertModelTest adds to the mixins (a selection: the checks of shapes and of the decoder;
    # not test_config: ConfigTester needs tests/utils/, which the release archive lacks).

    def test_model(self):
        self.model_tester.create_and_check_model(*self.model_tester.prepare_config_and_inputs())

    def test_model_as_decoder(self):
        self.model_tester.create_and_check_model_as_decoder(
            *self.model_tester.prepare_config_and_inputs_for_decoder())

    def test_decoder_model_past_with_large_inputs(self):
        self.model_tester.create_and_check_decoder_model_past_large_inputs(
            *self.model_tester.prepare_config_and_inputs_for_decoder())

    def test_for_pretraining(self):
        self.model_tester.create_and_check_for_pretraining(*self.model_tester.prepare_config_and_inputs())


class LineageGPTModelTester:
    """transformers' ``OpenAIGPTModelTester``: its sizes (the feed-forward size is BERT's tester's, 37, where
    ``OpenAIGPTConfig`` takes 4 × 32), token types in the common inputs, the last id as padding. And an attention
    mask, as ``GPT2ModelTester`` gives (``OpenAIGPTModelTester`` has none): lineage GPT takes one (OpenAI GPT does
    not), and the mixins' padding tests (left padding, padded vs packed sequences) run only on inputs with one."""

    def __init__(self, parent, batch_size=13, seq_length=7, is_training=True, use_input_mask=True,
                 use_token_type_ids=True, use_labels=True, vocab_size=99, hidden_size=32, num_hidden_layers=2,
                 num_attention_heads=4,
                 intermediate_size=37, hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                 max_position_embeddings=512, type_vocab_size=16, type_sequence_label_size=2, initializer_range=0.02,
                 num_labels=3, num_choices=4, scope=None):
        self.parent, self.batch_size, self.seq_length, self.is_training = parent, batch_size, seq_length, is_training
        self.use_input_mask, self.use_token_type_ids, self.use_labels = use_input_mask, use_token_type_ids, use_labels
        self.vocab_size, self.hidden_size, self.num_hidden_layers = vocab_size, hidden_size, num_hidden_layers
        self.num_attention_heads, self.intermediate_size = num_attention_heads, intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob, self.attention_probs_dropout_prob = hidden_dropout_prob, attention_probs_dropout_prob
        self.max_position_embeddings, self.type_vocab_size = max_position_embeddings, type_vocab_size
        self.type_sequence_label_size, self.initializer_range = type_sequence_label_size, initializer_range
        self.num_labels, self.num_choices, self.scope = num_labels, num_choices, scope
        self.pad_token_id = self.vocab_size - 1

    def prepare_config_and_inputs(self):
        input_ids = ids_tensor([self.batch_size, self.seq_length], self.vocab_size)
        input_mask = random_attention_mask([self.batch_size, self.seq_length]) if self.use_input_mask else None
        token_type_ids = (ids_tensor([self.batch_size, self.seq_length], self.type_vocab_size)
                          if self.use_token_type_ids else None)
        sequence_labels = token_labels = choice_labels = None
        if self.use_labels:
            sequence_labels = ids_tensor([self.batch_size], self.type_sequence_label_size)
            token_labels = ids_tensor([self.batch_size, self.seq_length], self.num_labels)
            choice_labels = ids_tensor([self.batch_size], self.num_choices)
        return (self.get_config(), input_ids, token_type_ids, input_mask, sequence_labels, token_labels,
                choice_labels)

    def get_config(self):
        return LineageGPTConfig(
            vocab_size=self.vocab_size, hidden_size=self.hidden_size, num_hidden_layers=self.num_hidden_layers,
            num_attention_heads=self.num_attention_heads, intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act, hidden_dropout_prob=self.hidden_dropout_prob,
            attention_probs_dropout_prob=self.attention_probs_dropout_prob,
            max_position_embeddings=self.max_position_embeddings, initializer_range=self.initializer_range,
            pad_token_id=self.pad_token_id, num_labels=self.num_labels,
        )

    def create_and_check_lm_head_model(self, config, input_ids, token_type_ids, input_mask, *labels):
        model = hf_lineage.LineageGPTForCausalLM(config).to(torch_device).eval()
        result = model(input_ids, token_type_ids=token_type_ids, labels=input_ids)
        self.parent.assertEqual(result.loss.shape, ())
        self.parent.assertEqual(result.logits.shape, (self.batch_size, self.seq_length, self.vocab_size))

    def create_and_check_for_sequence_classification(self, config, input_ids, token_type_ids, input_mask,
                                                     sequence_labels, *labels):
        model = hf_lineage.LineageGPTForSequenceClassification(config).to(torch_device).eval()
        result = model(input_ids, token_type_ids=token_type_ids, labels=sequence_labels)
        self.parent.assertEqual(result.logits.shape, (self.batch_size, self.num_labels))

    def prepare_config_and_inputs_for_common(self):
        config, input_ids, token_type_ids, input_mask, *_ = self.prepare_config_and_inputs()
        return config, {"input_ids": input_ids, "token_type_ids": token_type_ids, "attention_mask": input_mask}


class LineageGPTModelTest(ModelTesterMixin, GenerationTesterMixin, unittest.TestCase):
    """transformers' ``OpenAIGPTModelTest``, every head of lineage GPT (``LineageGPTForMultipleChoice`` where
    transformers has ``OpenAIGPTDoubleHeadsModel``, and the token-classification and question-answering heads
    transformers' OpenAI GPT does not have)."""

    all_model_classes = classes(
        "LineageGPT", "Model", "ForCausalLM", "ForMultipleChoice", "ForSequenceClassification",
        "ForTokenClassification", "ForQuestionAnswering",
    )

    def setUp(self):
        self.model_tester = LineageGPTModelTester(self)

    def test_lineage_gpt_lm_head_model(self):
        self.model_tester.create_and_check_lm_head_model(*self.model_tester.prepare_config_and_inputs())

    def test_lineage_gpt_classification_model(self):
        self.model_tester.create_and_check_for_sequence_classification(
            *self.model_tester.prepare_config_and_inputs())


class LineageBertDecoderModelTester(LineageBertModelTester):
    """``BertModelTester.prepare_config_and_inputs_for_decoder`` as the common inputs: a decoder
    (``is_decoder=True``) with cross-attention (``add_cross_attention=True``) over encoder states given with every
    call, the configuration transformers' own encoder-decoder models build from BERT (``EncoderDecoderModel``)."""

    def get_config(self):
        config = super().get_config()
        config.is_decoder = config.add_cross_attention = True
        return config

    def prepare_config_and_inputs_for_common(self):
        config, input_ids, token_type_ids, input_mask, *_, encoder_hidden_states, encoder_attention_mask = (
            self.prepare_config_and_inputs_for_decoder())
        return config, {"input_ids": input_ids, "token_type_ids": token_type_ids, "attention_mask": input_mask,
                        "encoder_hidden_states": encoder_hidden_states,
                        "encoder_attention_mask": encoder_attention_mask}


class LineageBertForCausalLMTest(ModelTesterMixin, GenerationTesterMixin, unittest.TestCase):
    """The mixins again on BERT as a decoder with cross-attention (``LineageBertForCausalLM`` as transformers'
    ``BertLMHeadModel`` in an encoder-decoder, and the bare model under the same config)."""

    all_model_classes = classes("LineageBert", "Model", "ForCausalLM")

    def setUp(self):
        self.model_tester = LineageBertDecoderModelTester(self)
