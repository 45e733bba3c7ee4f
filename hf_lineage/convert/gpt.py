"""transformers' OpenAI GPT <-> lineage GPT.

Parameter names are the same (lineage GPT kept transformers' ``tokens_embed``, ``ln_1``, ``mlp.c_fc`` ...) except
self-attention's projection: transformers' one fused ``h.N.attn.c_attn`` is lineage's ``h.N.attn.query``, ``key`` and
``value`` (split on the way in, concatenated on the way out).
The differences: transformers keeps OpenAI's ``Conv1D`` layers, whose weight is stored (in, out), where lineage GPT
has ``nn.Linear`` (out, in), so the block weights are transposed; the task heads have other names
(``score`` and ``multiple_choice_head.summary`` are lineage's ``classifier``); and the config fields are renamed.

Sizes transformers' class cannot express are refused: an MLP width other than 4 × hidden, cross-attention, an
activation it does not have.

``release(sources, max_vocab)`` is ``hf-lineage convert gpt SOURCE`` (``hf_lineage.convert.releases``): OpenAI's
GPT as transformers publishes it (``openai-community/openai-gpt``) or a local transformers OpenAI GPT folder, as a
``LineageGPTForCausalLM`` with the release's own tokenizer and the two special tokens fine-tuning needs::

    >>> from hf_lineage.convert.releases import convert
    >>> convert("gpt", ["openai-community/openai-gpt"], "openai-gpt")   # doctest: +SKIP
"""

from __future__ import annotations

import re

import torch
import transformers

from ..models import configuration_lineage_gpt, modeling_lineage_gpt
from .common import load_converted

# transformers class name -> lineage class name
CLASS_PAIRS = {
    "OpenAIGPTModel": "LineageGPTModel",
    "OpenAIGPTLMHeadModel": "LineageGPTForCausalLM",
    "OpenAIGPTDoubleHeadsModel": "LineageGPTForMultipleChoice",
    "OpenAIGPTForSequenceClassification": "LineageGPTForSequenceClassification",
}

# transformers' Conv1D layers, (in, out) weights.
_CONV1D = re.compile(r"h\.\d+\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight$")
# transformers name -> lineage name
_RENAMES = {"score.": "classifier.", "multiple_choice_head.summary.": "classifier."}

# (transformers OpenAIGPTConfig field, lineage field)
_FIELDS = [
    ("vocab_size", "vocab_size"), ("n_positions", "max_position_embeddings"), ("n_embd", "hidden_size"),
    ("n_layer", "num_hidden_layers"), ("n_head", "num_attention_heads"), ("resid_pdrop", "hidden_dropout_prob"),
    ("embd_pdrop", "embedding_dropout_prob"), ("attn_pdrop", "attention_probs_dropout_prob"),
    ("layer_norm_epsilon", "layer_norm_eps"), ("initializer_range", "initializer_range"),
    ("pad_token_id", "pad_token_id"), ("bos_token_id", "bos_token_id"), ("eos_token_id", "eos_token_id"),
    ("id2label", "id2label"), ("label2id", "label2id"), ("problem_type", "problem_type"),
]
# transformers' OpenAI GPT calls the tanh-approximated GELU of OpenAI's code "gelu".
_ACTIVATIONS = {"gelu": "gelu_pytorch_tanh", "relu": "relu", "silu": "silu", "swish": "swish"}
_HF_ACTIVATIONS = {"gelu_pytorch_tanh": "gelu", "gelu_new": "gelu", "relu": "relu", "silu": "silu", "swish": "swish"}


def _lineage_config(hf_config):
    hf = hf_config.to_dict()
    if hf.get("afn") not in _ACTIVATIONS:
        raise ValueError(f"Unsupported OpenAI GPT activation afn={hf.get('afn')!r}; supported: {list(_ACTIVATIONS)}")
    values = {ours: hf[theirs] for theirs, ours in _FIELDS if theirs in hf}
    return configuration_lineage_gpt.LineageGPTConfig(
        **values, hidden_act=_ACTIVATIONS[hf["afn"]], intermediate_size=4 * hf["n_embd"],
        classifier_dropout=hf.get("summary_first_dropout"),
    )


def _hf_config(config):
    if getattr(config, "pair_encoding", "cross") == "siamese":
        raise ValueError("this model reads sentence pairs siamese (pair_encoding='siamese', a pair_classifier on "
                         "[u, v, |u-v|, u*v]); transformers' OpenAI GPT classifies a pair as one sequence")
    if config.add_cross_attention:
        raise ValueError("transformers' OpenAI GPT has no cross-attention; this lineage GPT has add_cross_attention")
    if config.intermediate_size != 4 * config.hidden_size:
        raise ValueError(f"transformers' OpenAI GPT needs intermediate_size = 4 × hidden_size "
                         f"({4 * config.hidden_size}), got {config.intermediate_size}")
    afn = _HF_ACTIVATIONS.get(config.hidden_act)
    if afn is None:
        raise ValueError(f"transformers' OpenAI GPT has no activation for hidden_act={config.hidden_act!r}")
    ours = config.to_dict()
    values = {theirs: ours[name] for theirs, name in _FIELDS if name in ours}
    dropout = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
    return transformers.OpenAIGPTConfig(**values, afn=afn, summary_first_dropout=dropout)


_FUSED = ".attn.c_attn."  # transformers' fused q/k/v projection
_SPLIT = [".attn.query.", ".attn.key.", ".attn.value."]  # lineage's


def _hf_to_lineage(state_dict):
    out = {}
    for name, tensor in state_dict.items():
        if _CONV1D.search(name):
            tensor = tensor.t().contiguous()
        for theirs, ours in _RENAMES.items():
            if name.startswith(theirs):
                name = ours + name[len(theirs):]
        if _FUSED in name:  # (3C, C) after the transpose, or the (3C,) bias: q, k, v stacked
            for piece, part in zip(_SPLIT, tensor.chunk(3, dim=0)):
                out[name.replace(_FUSED, piece)] = part.contiguous()
            continue
        out[name] = tensor
    return out


def _lineage_to_hf(state_dict, hf_class_name):
    head = {"OpenAIGPTForSequenceClassification": "score.",
            "OpenAIGPTDoubleHeadsModel": "multiple_choice_head.summary."}.get(hf_class_name)
    out = {}
    for name, tensor in state_dict.items():
        if _SPLIT[0] in name:
            tensor = torch.cat([state_dict[name.replace(_SPLIT[0], piece)] for piece in _SPLIT], dim=0)
            name = name.replace(_SPLIT[0], _FUSED)
        elif any(piece in name for piece in _SPLIT[1:]):
            continue  # concatenated with the query above
        if _CONV1D.search(name):
            tensor = tensor.t().contiguous()
        if name.startswith("classifier."):
            name = head + name[len("classifier."):]
        out[name] = tensor
    return out


def _load(model, state_dict):
    # The LM head is tied to the token embedding; transformers' sequence classifier has no LM head at all.
    return load_converted(model, state_dict, r"^lm_head\.weight$")


def from_transformers(model):
    lineage_class = getattr(modeling_lineage_gpt, CLASS_PAIRS[type(model).__name__])
    if type(model).__name__ == "OpenAIGPTDoubleHeadsModel":
        c = model.config
        if (c.summary_type not in ("cls_index", "last") or not c.summary_use_proj or c.summary_activation
                or not c.summary_proj_to_labels):
            raise ValueError("Only the default multiple-choice summary (a linear layer on the classification "
                             "token) maps to LineageGPTForMultipleChoice")
    lineage = lineage_class(_lineage_config(model.config))
    with torch.no_grad():
        return _load(lineage, _hf_to_lineage(model.state_dict()))


def to_transformers(model):
    hf_name = {v: k for k, v in CLASS_PAIRS.items()}[type(model).__name__]
    hf_model = getattr(transformers, hf_name)(_hf_config(model.config))
    with torch.no_grad():
        return _load(hf_model, _lineage_to_hf(model.state_dict(), hf_name))


# --------------------------------------------------------------------------- hf-lineage convert gpt

CITATION = """\
@techreport{radford2018improving,
    title = {Improving Language Understanding by Generative Pre-Training},
    author = {Radford, Alec and Narasimhan, Karthik and Salimans, Tim and Sutskever, Ilya},
    institution = {OpenAI},
    year = {2018},
    url = {https://cdn.openai.com/research-covers/language-unsupervised/language_understanding_paper.pdf},
}
"""

# What the release was trained on: (words, where the number comes from). A source not named here (a local folder)
# gets no figures: its training data is not known from here.
TRAINED_ON = {
    "openai-community/openai-gpt": (
        800_000_000, "about 0.8 B words: Radford et al. (2018, §4.1) trained on BooksCorpus, \"over 7,000 unique "
                     "unpublished books\", for 100 epochs, and give no word count; 800 M words is BooksCorpus's size "
                     "as Devlin et al. (2019, §3.1) give it"),
}
# The special tokens the lineage's GPT has and OpenAI's tokenizer lacks (it has <unk> alone): an end of text, which
# is also the start (pre-training separates documents with it; generation ends a source and its target with it),
# and padding (the task collators pad with it). The shipped lineage GPT's own names.
ADDED_SPECIAL_TOKENS = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<pad>"}


def release(sources: list[str], max_vocab: int | None = None):
    """``hf-lineage convert gpt SOURCE``: transformers' OpenAI GPT (a Hub id or a local folder) as a ``Release``.

    The weights are loaded as ``OpenAIGPTLMHeadModel`` and converted by ``from_transformers``; the outputs are
    checked against the release's on a few sentences before anything is written. The tokenizer is the release's
    own (transformers' ``OpenAIGPTTokenizer``), with ``ADDED_SPECIAL_TOKENS`` added after its vocabulary (two new
    embedding rows, the mean of the others, which fine-tuning learns); no text tokenizes differently.

    Example:
        >>> release(["openai-community/openai-gpt"], None).tokenizer.eos_token     # doctest: +SKIP
        '<|endoftext|>'
    """
    from .transformers_release import check_same_outputs, load_transformers_release
    from .releases import Release

    loaded = load_transformers_release("gpt", sources)
    model = from_transformers(loaded.model)
    differences = check_same_outputs(loaded, model, ["logits"])
    original_size = len(loaded.tokenizer)
    added = add_special_tokens(model, loaded.tokenizer)
    words_seen, words_seen_from = TRAINED_ON.get(
        loaded.hub_id, (None, "not known for this source (the figure is given for OpenAI's release by Hub id)"))
    return Release(model=model, tokenizer=loaded.tokenizer, source=loaded.source, license="mit", citation=CITATION,
                   words_seen=words_seen, words_seen_from=words_seen_from, language="en", base_model=loaded.hub_id,
                   notes=notes(loaded, original_size, added, differences))


def add_special_tokens(model, tokenizer) -> list[str]:
    """Give ``tokenizer`` the bos, eos and pad tokens of ``ADDED_SPECIAL_TOKENS`` it lacks and ``model`` their
    embedding rows (the LM head is tied to them), each the mean of the original rows: a neutral start that
    fine-tuning learns, deterministic (transformers' ``mean_resizing`` would draw them at random around that mean).
    The config's pad, bos and eos ids follow. Returns the tokens added.

    Added tokens are matched as whole strings before BPE, so only text holding them literally tokenizes otherwise.
    """
    missing = {role: token for role, token in ADDED_SPECIAL_TOKENS.items() if getattr(tokenizer, role) is None}
    before, rows = len(tokenizer), model.get_input_embeddings().num_embeddings
    tokenizer.add_special_tokens(missing)
    added = [token for token in dict.fromkeys(missing.values()) if tokenizer.convert_tokens_to_ids(token) >= before]
    with torch.no_grad():
        mean = model.get_input_embeddings().weight[:before].mean(dim=0)
        if len(tokenizer) > rows:
            model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
        # Also where an embedding larger than the tokenizer already had the rows: no token of the release used them.
        model.get_input_embeddings().weight[[tokenizer.convert_tokens_to_ids(t) for t in added]] = mean
    model.config.pad_token_id = tokenizer.pad_token_id
    model.config.bos_token_id = tokenizer.bos_token_id
    model.config.eos_token_id = tokenizer.eos_token_id
    return added


def notes(loaded, original_size: int, added: list[str], differences: dict[str, float]) -> str:
    """The card's Markdown: what the tokenizer reproduces, the tokens added and why, the outputs as checked."""
    from .transformers_release import CHECK_SENTENCES

    tokenizer = loaded.tokenizer
    text = (f"\n### Tokenization\n\nThe tokenizer is the release's own ({type(tokenizer).__name__}, BPE on "
            "`</w>`-ended words), saved as transformers loaded it, so the ids of text are the original's: text is "
            "lowercased, accents are stripped and it is split at whitespace and punctuation (BERT's basic "
            "tokenizer: transformers' fallback, which leaves out the ftfy and spaCy clean-up of OpenAI's own code), "
            "then each word is merged by the release's BPE merges; nothing is added around the text.\n")
    if added:
        ids = ", ".join(f"`{token}` (id {tokenizer.convert_tokens_to_ids(token)})" for token in added)
        text += (f"\nAdded after its {original_size:,} tokens, as special tokens (matched only as whole strings, so "
                 f"no other text tokenizes differently): {ids}, each with a new embedding row (the tied LM head's "
                 "too), the mean of the original rows. `<|endoftext|>` is bos and eos: pre-training continued from "
                 "this model separates documents with it, and generation fine-tuning ends a source and a target "
                 "with it. `<pad>` pads fine-tuning batches (never attended to, never predicted). OpenAI's tokenizer "
                 "has `<unk>` alone, so the model never saw them: fine-tuning learns their rows. Fine-tuning on "
                 "sentence pairs, choices and questions adds GPT's task tokens `<s>`, `$` and `<e>` the same way "
                 "(Radford et al. 2018, §3.3), as transformers' OpenAI GPT fine-tuning adds `_start_`, "
                 "`_delimiter_` and `_classify_`.\n")
    measured = ", ".join(f"{name} {value:.1e}" for name, value in differences.items())
    text += (f"\nChecked at conversion: on {len(CHECK_SENTENCES)} sentences (a padded batch) the largest difference "
             f"between the release's outputs in transformers and this model's was {measured}"
             + (" (the logits of the original vocabulary; the added rows change none of them)" if added else "")
             + ".\n")
    return text
