"""transformers' BERT <-> lineage BERT.

The two models hold the same numbers under different names (query/key/value are ``attention.query`` where
transformers has ``attention.self.query``, ...); one structural difference: a decoder's cross-attention projects
the encoder's key and value with one module, ``crossattention.key_value`` (key rows, then value rows), where
transformers has ``crossattention.self.key`` and ``.value``. Lineage folders saved on disk hold self-attention's
query/key/value fused (see ``modeling_lineage_bert.WEIGHT_CONVERSIONS``), but the models' state dicts do not.

``release(sources, max_vocab)`` is ``hf-lineage convert bert SOURCE`` (``hf_lineage.convert.releases``): Google's
BERT as transformers publishes it (``google-bert/bert-base-uncased``, ``-cased``, ``-multilingual-cased``,
``bert-large-uncased``, ...) or a local transformers BERT folder, as a ``LineageBertForPreTraining`` with the
release's own tokenizer::

    >>> from hf_lineage.convert.releases import convert
    >>> convert("bert", ["google-bert/bert-base-uncased"], "bert-base-uncased")   # doctest: +SKIP

Reading and checking such a release is ``convert.transformers_release``'s, which OpenAI GPT's converter shares.
"""

from __future__ import annotations

import json
import re

import torch
import transformers

from ..models import configuration_lineage_bert, modeling_lineage_bert
from .common import load_converted

# transformers class name -> lineage class name
CLASS_PAIRS = {
    "BertModel": "LineageBertModel",
    "BertForPreTraining": "LineageBertForPreTraining",
    "BertForMaskedLM": "LineageBertForMaskedLM",
    "BertLMHeadModel": "LineageBertForCausalLM",
    "BertForNextSentencePrediction": "LineageBertForNextSentencePrediction",
    "BertForSequenceClassification": "LineageBertForSequenceClassification",
    "BertForTokenClassification": "LineageBertForTokenClassification",
    "BertForMultipleChoice": "LineageBertForMultipleChoice",
    "BertForQuestionAnswering": "LineageBertForQuestionAnswering",
}

# Plain renames, transformers name -> lineage name (regex on the full parameter name).
_RENAMES = [
    (r"\.attention\.output\.dense\.", ".attention.dense."),
    (r"\.attention\.output\.LayerNorm\.", ".attention.LayerNorm."),
    (r"\.crossattention\.output\.dense\.", ".crossattention.dense."),
    (r"\.crossattention\.output\.LayerNorm\.", ".crossattention.LayerNorm."),
    (r"\.crossattention\.self\.query\.", ".crossattention.query."),
    (r"\.attention\.self\.query\.", ".attention.query."),
    (r"\.attention\.self\.key\.", ".attention.key."),
    (r"\.attention\.self\.value\.", ".attention.value."),
    (r"cls\.predictions\.transform\.dense\.", "cls.predictions.transform_dense."),
    (r"cls\.predictions\.transform\.LayerNorm\.", "cls.predictions.transform_LayerNorm."),
]
# transformers' cross-attention key and value projections, fused into lineage's ``key_value`` in this order.
_CROSS_KEY_VALUE = (".crossattention.self.key.", ".crossattention.self.value.")
_FUSED_KEY_VALUE = ".crossattention.key_value."
# Present in transformers' state dicts but not ours: tied copies and constant buffers.
_DROPPED = re.compile(r"(cls\.predictions\.decoder\.bias|embeddings\.position_ids|embeddings\.token_type_ids)$")


def _config_to(target_class, source_config):
    fields = {f for f in target_class.__dataclass_fields__}
    values = {k: v for k, v in source_config.to_dict().items()
              if k in fields and k not in ("model_type", "architectures", "transformers_version", "auto_map")}
    return target_class(**values)


def _hf_to_lineage(state_dict):
    out = {}
    for name, tensor in state_dict.items():
        if _DROPPED.search(name) or _CROSS_KEY_VALUE[1] in name:
            continue
        if _CROSS_KEY_VALUE[0] in name:  # key rows, then value rows
            value = state_dict[name.replace(*_CROSS_KEY_VALUE)]
            name, tensor = name.replace(_CROSS_KEY_VALUE[0], _FUSED_KEY_VALUE), torch.cat([tensor, value])
        for pattern, replacement in _RENAMES:
            name = re.sub(pattern, replacement, name)
        out[name] = tensor
    return out


def _lineage_to_hf(state_dict):
    out = {}
    for name, tensor in state_dict.items():
        if _FUSED_KEY_VALUE in name:
            key, value = tensor.chunk(2)
            out[name.replace(_FUSED_KEY_VALUE, _CROSS_KEY_VALUE[0])] = key
            out[name.replace(_FUSED_KEY_VALUE, _CROSS_KEY_VALUE[1])] = value
            continue
        for pattern, replacement in _RENAMES:
            # invert the rename: the replacement is a literal name, the pattern an escaped one
            name = name.replace(replacement, pattern.replace("\\", ""))
        out[name] = tensor
    if "cls.predictions.bias" in out:
        out["cls.predictions.decoder.bias"] = out["cls.predictions.bias"]
    return out


def _load(model, state_dict):
    # The decoder weight is tied to the word embeddings; everything else must be accounted for.
    return load_converted(model, state_dict, r"(decoder\.weight|decoder\.bias|position_ids|token_type_ids)$")


def from_transformers(model):
    lineage_class = getattr(modeling_lineage_bert, CLASS_PAIRS[type(model).__name__])
    config = _config_to(configuration_lineage_bert.LineageBertConfig, model.config)
    lineage = lineage_class(config)
    return _load(lineage, _hf_to_lineage(model.state_dict()))


def to_transformers(model):
    hf_name = {v: k for k, v in CLASS_PAIRS.items()}[type(model).__name__]
    if getattr(model.config, "pair_encoding", "cross") == "siamese":
        raise ValueError("this model reads sentence pairs siamese (pair_encoding='siamese', a pair_classifier on "
                         "[u, v, |u-v|, u*v]); transformers' BERT classifies a pair as one sequence from [CLS]")
    config = _config_to(transformers.BertConfig, model.config)
    hf_model = getattr(transformers, hf_name)(config)
    return _load(hf_model, _lineage_to_hf(model.state_dict()))


# --------------------------------------------------------------------------- hf-lineage convert bert

CITATION = """\
@inproceedings{devlin-etal-2019-bert,
    title = "{BERT}: Pre-training of Deep Bidirectional Transformers for Language Understanding",
    author = "Devlin, Jacob and Chang, Ming-Wei and Lee, Kenton and Toutanova, Kristina",
    booktitle = "Proceedings of the 2019 Conference of the North {A}merican Chapter of the Association for
                 Computational Linguistics: Human Language Technologies, Volume 1 (Long and Short Papers)",
    month = jun,
    year = "2019",
    address = "Minneapolis, Minnesota",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/N19-1423",
    doi = "10.18653/v1/N19-1423",
    pages = "4171--4186",
}
"""

_ENGLISH = (3_300_000_000, "Devlin et al. (2019), §3.1: BooksCorpus (800 M words) and English Wikipedia (2,500 M "
                           "words); the model read about 40 epochs of it (1,000,000 steps of 256 sequences of 512 "
                           "tokens, appendix A.2)")
# What each of Google's releases was trained on: (words, where the number comes from, language). A release not
# named here (a local folder, another BERT on the Hub) gets no figures: its training data is not known from here.
TRAINED_ON = {
    "google-bert/bert-base-uncased": (*_ENGLISH, "en"),
    "google-bert/bert-base-cased": (*_ENGLISH, "en"),
    "google-bert/bert-large-uncased": (*_ENGLISH, "en"),
    "google-bert/bert-large-cased": (*_ENGLISH, "en"),
    "google-bert/bert-base-multilingual-cased": (
        None, "the Wikipedias of the 104 languages with the largest Wikipedias, exponentially smoothed in sampling "
              "(google-research/bert, multilingual.md); no word count was published", "multilingual"),
    "google-bert/bert-base-multilingual-uncased": (
        None, "the Wikipedias of the 102 languages with the largest Wikipedias, exponentially smoothed in sampling "
              "(google-research/bert, multilingual.md); no word count was published", "multilingual"),
}
def release(sources: list[str], max_vocab: int | None = None):
    """``hf-lineage convert bert SOURCE``: transformers' BERT (a Hub id or a local folder) as a ``Release``.

    The weights are loaded as ``BertForPreTraining`` and converted by ``from_transformers``. A checkpoint without
    the pre-training heads (a ``BertModel`` or ``BertForMaskedLM`` one) still converts: the heads it lacks are
    newly initialised (seeded, so the same every time) and the card names them. The tokenizer is the release's own,
    saved as it loaded, so the ids are the original's. The outputs are checked against the release's on a few
    sentences before anything is written.

    Example:
        >>> release(["google-bert/bert-base-uncased"], None).model     # doctest: +SKIP
        LineageBertForPreTraining(...)
    """
    from .releases import Release
    from .transformers_release import check_same_outputs, load_transformers_release, outputs_notes

    loaded = load_transformers_release("bert", sources)
    model = from_transformers(loaded.model)
    differences = check_same_outputs(loaded, model, ["prediction_logits", "seq_relationship_logits"])
    words_seen, words_seen_from, language = TRAINED_ON.get(loaded.hub_id, (None, "", None))
    if not words_seen_from:
        words_seen_from = "not known for this source (the figures are given for Google's releases by Hub id)"
    notes = (tokenizer_notes(loaded.tokenizer) + heads_notes(loaded.newly_initialised, loaded.source)
             + outputs_notes(differences))
    return Release(model=model, tokenizer=loaded.tokenizer, source=loaded.source, license="apache-2.0",
                   citation=CITATION, words_seen=words_seen, words_seen_from=words_seen_from, language=language,
                   base_model=loaded.hub_id, notes=notes)


def tokenizer_notes(tokenizer) -> str:
    """What the saved tokenizer does, read from its own normaliser: lowercasing, accents, Chinese characters."""
    normalizer = json.loads(tokenizer.backend_tokenizer.to_str()).get("normalizer") or {}
    lowercase = bool(normalizer.get("lowercase"))
    strip_accents = normalizer.get("strip_accents")
    strip_accents = lowercase if strip_accents is None else bool(strip_accents)
    steps = [
        "text is lowercased and accents are stripped (\"Café\" reads as \"cafe\")" if lowercase and strip_accents
        else "text is lowercased, accents are kept" if lowercase
        else "case is kept, accents are stripped" if strip_accents else "case and accents are kept",
        "text is split at whitespace and punctuation"
        + (", each CJK character a word of its own" if normalizer.get("handle_chinese_chars") else "")
        + " (BERT's basic tokenizer)",
        "words are split into WordPiece pieces (`##` marks a piece inside a word)",
        "inputs are `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`",
    ]
    return (f"\n### Tokenization\n\nThe tokenizer is the release's own ({type(tokenizer).__name__}, "
            f"{len(tokenizer):,} tokens), saved as transformers loaded it, so every id is the original's: "
            + "; ".join(steps) + ".\n")


def heads_notes(newly_initialised: list[str], source: str) -> str:
    """What the card says of the pre-training heads: the release's, or which weights are new and what that changes."""
    if not newly_initialised:
        return "\nBoth pre-training heads (masked LM and next sentence prediction) are the release's.\n"
    affected = []
    if any(k.startswith("cls.predictions.") for k in newly_initialised):
        affected.append("the masked-LM logits")
    if any(k.startswith("bert.pooler.") for k in newly_initialised):
        affected.append("the pooled output")
    if any(k.startswith(("cls.seq_relationship.", "bert.pooler.")) for k in newly_initialised):
        affected.append("the next-sentence logits")
    affected = affected or ["the outputs that read them"]
    encoder = [k for k in newly_initialised if not k.startswith(("cls.", "bert.pooler."))]
    return (f"\n**{source} holds no weights for {', '.join(f'`{k}`' for k in newly_initialised)}**: transformers "
            f"initialised them anew (seeded, so every conversion is the same), so {' and '.join(affected)} are not "
            "the original's until trained" + ("." if encoder else "; the encoder's hidden states are.") + "\n")
