"""What each attention head looks at — Clark et al. (2019), "What Does BERT Look At?".

For every layer and head of a BERT- or GPT-style transformer, over a set of sentences:

* **entropy** — the mean entropy (nats) of a query's attention distribution, and the same divided by its maximum
  ``log(k)`` (``k`` = keys the query may see: all tokens for BERT, itself and the past for GPT), so 1 is uniform;
* **shares** — the mean share of a query's attention on the **first** token (``[CLS]`` for BERT, ``<|endoftext|>``
  put first for GPT, whatever comes first otherwise), on **[SEP]** (the tokenizer's ``sep``/``eos`` tokens after
  position 0), on **punctuation** (tokens made only of Unicode punctuation, special tokens excluded), on the
  **previous** and on the **next** token. A causal model cannot look ahead: its next-token share is 0 by
  construction (``AttentionResult.causal`` says so, and the pattern "next token" never comes up for it);
* a **pattern** per head (``classify_heads``), from the means above:

  1. the target with the largest share, if that share is at least ``SHARE_THRESHOLD`` (0.5): "[CLS]" (or "first
     token" when the model has no [CLS]), "[SEP]", "punctuation", "previous token" or "next token";
  2. else "broad" if the normalized entropy is at least ``BROAD_THRESHOLD`` (0.8);
  3. else "mixed" (no single pattern dominates);

* **clusters** — the distance between two heads is the Jensen-Shannon distance (base 2, so in [0, 1]) between
  their attention distributions for the same query, averaged over every query of every sentence, as Clark et al.
  (section 6); scipy's average-linkage clustering of that matrix gives the dendrogram, and the silhouette of the
  layers (scikit-learn, on the same distances) says whether heads of one layer sit together (> 0) or not (<= 0).

Only real tokens count: padding (``attention_mask`` 0) is cropped from every map before anything is measured, and a
causal model's first query, which can only attend to itself, is left out of every mean (its distribution is
forced, not learnt).

Attention comes through the standard ``output_attentions=True`` path, so any transformers encoder or decoder that
returns attentions works (lineage BERT/GPT, transformers' ``BertModel`` and ``OpenAIGPTModel``, ...). When the
model runs SDPA and returns no weights, it is switched to eager attention (``set_attn_implementation("eager")``)
and run again::

    >>> from hf_lineage.analysis.attention import analyze_attention, load_model, sample_sentences
    >>> model, tokenizer = load_model("lineage_report/stages/pretrain-gpt/model")        # doctest: +SKIP
    >>> result = analyze_attention(model, tokenizer, sample_sentences(64))               # doctest: +SKIP
    >>> result.patterns                                                                  # doctest: +SKIP
    [['broad', 'broad'], ['mixed', 'broad']]
    >>> result.plot("attention")                                                         # doctest: +SKIP

Every share is best read beside ``result.uniform``, the same measures for a head that attends evenly over the same
sentences. ``plot_example`` draws every head's map on one input.

From the command line: ``hf-lineage analyze attention --model FOLDER --output-dir DIR`` (see ``--help``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from scipy.cluster.hierarchy import dendrogram, linkage
from scipy.spatial.distance import squareform
from scipy.special import entr
from scipy.stats import entropy as distribution_entropy
from sklearn.metrics import silhouette_score

from .. import samples as _samples

SHARE_THRESHOLD = 0.5
BROAD_THRESHOLD = 0.8
# share name -> the pattern a head dominated by it gets ("first" is renamed "[CLS]" for models with a [CLS] token)
SHARE_PATTERNS = {"first": "first token", "sep": "[SEP]", "punctuation": "punctuation",
                  "previous": "previous token", "next": "next token"}
OTHER_PATTERNS = ("broad", "mixed")
# The shipped WikiText sample (CC BY-SA) of the lineage experiment, from the package's data home (hf_lineage.samples,
# the lowest layer): analysis sits below lineage in the layers and imports nothing from it.
SAMPLE_CORPUS = _samples.LINEAGE / "corpus.validation.txt"


# --------------------------------------------------------------------------- measures over attention maps


@dataclass
class SentenceRoles:
    """Which key positions of one sentence are [SEP]-like and which are punctuation (boolean arrays of length n)."""

    sep: np.ndarray
    punctuation: np.ndarray


def crop_padding(attentions, attention_mask) -> list[np.ndarray]:
    """One (layers, heads, n, n) float64 array per row of the batch, ``n`` its real (unpadded) length.

    ``attentions``: the model's tuple of (B, heads, T, T) tensors; ``attention_mask``: (B, T), 1 on real tokens.
    Padding may sit on either side; the real tokens of a row must be contiguous."""
    stacked = torch.stack([a.detach().float().cpu() for a in attentions], dim=1).numpy()  # (B, L, H, T, T)
    maps = []
    for row, mask in zip(stacked, attention_mask.bool().cpu().numpy()):
        real = np.flatnonzero(mask)
        if real.size == 0 or real[-1] - real[0] + 1 != real.size:
            raise ValueError("every row of attention_mask needs one contiguous run of real tokens")
        maps.append(row[..., real[:, None], real[None, :]].astype(np.float64))
    return maps


def _first_query(causal: bool) -> int:
    # A causal model's first token can only attend to itself: its distribution is forced, so it is left out.
    return 1 if causal else 0


def _per_query_measures(attention: np.ndarray, roles: SentenceRoles, causal: bool) -> dict[str, np.ndarray]:
    """(layers, heads, queries) arrays of every measure for one sentence's (L, H, n, n) map."""
    n = attention.shape[-1]
    queries = np.arange(_first_query(causal), n)
    rows = attention[..., queries, :]  # (L, H, q, n)
    visible = queries + 1 if causal else np.full(queries.size, n)
    entropy = distribution_entropy(rows, axis=-1)
    sep = roles.sep.copy()
    sep[0] = False  # position 0 is the first token's own share
    # (L, H, q): query i's weight on key i - 1 / i + 1, 0 where there is no such token
    previous = np.where(queries > 0, attention[..., queries, np.maximum(queries - 1, 0)], 0.0)
    following = np.where(queries < n - 1, attention[..., queries, np.minimum(queries + 1, n - 1)], 0.0)
    return {
        "entropy": entropy,
        "normalized_entropy": entropy / np.log(np.maximum(visible, 2)),
        "first": rows[..., 0],
        "sep": rows[..., sep].sum(axis=-1),
        "punctuation": rows[..., roles.punctuation].sum(axis=-1),
        "previous": previous,
        "next": following,
    }


def head_measures(maps: list[np.ndarray], roles: list[SentenceRoles], causal: bool) -> dict[str, np.ndarray]:
    """Every measure as a (layers, heads) array: the mean over all queries of all sentences (token-weighted)."""
    if not maps:
        raise ValueError("no attention maps to measure")
    per_sentence = [_per_query_measures(a, r, causal) for a, r in zip(maps, roles, strict=True)]
    return {name: np.concatenate([m[name] for m in per_sentence], axis=-1).mean(axis=-1)
            for name in per_sentence[0]}


def uniform_measures(maps: list[np.ndarray], roles: list[SentenceRoles], causal: bool) -> dict[str, float]:
    """The measures of a head that spreads its attention evenly over the keys it may see, on the same sentences:
    the baseline a share is worth comparing with (a [SEP] share of 0.1 is nothing in 10-token sentences)."""
    uniform = []
    for attention in maps:
        n = attention.shape[-1]
        visible = np.tril(np.ones((n, n))) if causal else np.ones((n, n))
        uniform.append((visible / visible.sum(axis=-1, keepdims=True))[None, None])
    return {name: float(values[0, 0]) for name, values in head_measures(uniform, roles, causal).items()}


def classify_heads(measures: dict[str, np.ndarray], first_label: str = "[CLS]") -> list[list[str]]:
    """A pattern per head (see the module docstring for the rule and thresholds); ``first_label`` names the
    first-token pattern ("[CLS]" for BERT, "first token" otherwise)."""
    names = list(SHARE_PATTERNS)
    shares = np.stack([measures[name] for name in names], axis=-1)  # (L, H, targets)
    labels = {**SHARE_PATTERNS, "first": first_label}
    patterns = []
    for layer_shares, layer_entropy in zip(shares, measures["normalized_entropy"]):
        row = []
        for head_shares, head_entropy in zip(layer_shares, layer_entropy):
            top = int(np.argmax(head_shares))
            if head_shares[top] >= SHARE_THRESHOLD:
                row.append(labels[names[top]])
            else:
                row.append("broad" if head_entropy >= BROAD_THRESHOLD else "mixed")
        patterns.append(row)
    return patterns


def _stacked_queries(maps: list[np.ndarray], causal: bool) -> np.ndarray:
    """(L·H, queries of all sentences, widest n): each head's attention rows, keys zero-padded to one width (a zero
    adds nothing to either distribution of a Jensen-Shannon distance)."""
    first, width = _first_query(causal), max(a.shape[-1] for a in maps)
    per_sentence = []
    for attention in maps:
        L, H, n, _ = attention.shape
        rows = attention[..., first:, :].reshape(L * H, n - first, n)
        per_sentence.append(np.pad(rows, [(0, 0), (0, 0), (0, width - n)]))
    return np.concatenate(per_sentence, axis=1)


def head_distances(maps: list[np.ndarray], causal: bool, block: int = 16) -> np.ndarray:
    """(L·H, L·H) Jensen-Shannon distances (base 2, in [0, 1]) between heads' attention distributions for the same
    query, averaged over all queries; heads are numbered layer by layer (index = layer * heads + head).

    Per query, JS divergence = H(m) - (H(p) + H(q)) / 2 with m = (p + q) / 2 (the same number as scipy's
    ``jensenshannon`` squared, which the tests check): each head's entropies are computed once and the mixtures
    ``block`` heads at a time, which makes BERT-base's 144 heads about five times faster than pair by pair."""
    rows = _stacked_queries(maps, causal)  # (heads, queries, keys)
    own = entr(rows).sum(axis=-1)  # (heads, queries): H(p) in nats
    count = rows.shape[0]
    distances = np.zeros((count, count))
    for i in range(count):
        for start in range(i + 1, count, block):
            others = slice(start, min(start + block, count))
            mixture = entr((rows[i] + rows[others]) / 2).sum(axis=-1)  # (block, queries)
            divergence = (mixture - (own[i] + own[others]) / 2) / np.log(2)
            # rounding leaves about -1e-17 for identical rows: clip before the square root
            distances[i, others] = np.sqrt(np.clip(divergence, 0.0, None)).mean(axis=-1)
    return np.maximum(distances, distances.T)


def layer_cohesion(distances: np.ndarray, num_layers: int, num_heads: int) -> dict[str, float | None]:
    """Do heads of one layer cluster together? ``silhouette``: scikit-learn's silhouette of the layers on the
    distances (> 0: heads sit nearer their own layer's heads; None with one layer or one head per layer);
    ``same_layer_nearest``: the share of heads whose nearest head is in the same layer, beside ``chance``, that
    share for a random nearest head ((heads - 1) / (all heads - 1))."""
    layers = np.repeat(np.arange(num_layers), num_heads)
    count = layers.size
    silhouette = (float(silhouette_score(distances, layers, metric="precomputed"))
                  if 2 <= num_layers <= count - 1 and num_heads > 1 else None)
    others = distances + np.diag(np.full(count, np.inf))
    nearest = others.argmin(axis=1)
    return {
        "silhouette": silhouette,
        "same_layer_nearest": float(np.mean(layers[nearest] == layers)) if count > 1 else None,
        "chance": (num_heads - 1) / (count - 1) if count > 1 else None,
    }


# --------------------------------------------------------------------------- the result


@dataclass
class AttentionResult:
    """Per layer and head: ``measures`` (name -> (layers, heads) array: entropy, normalized_entropy and the shares
    first, sep, punctuation, previous, next), ``patterns`` (layers × heads labels), ``distances`` between heads
    (L·H × L·H, index layer * heads + head), ``cohesion`` (``layer_cohesion``) and ``uniform``, the measures of
    a head attending evenly (``uniform_measures``)."""

    model: str
    causal: bool
    first_token: str
    measures: dict[str, np.ndarray]
    patterns: list[list[str]]
    distances: np.ndarray
    cohesion: dict[str, float | None]
    num_sentences: int
    num_queries: int
    uniform: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def shape(self) -> tuple[int, int]:
        return self.measures["entropy"].shape

    def head_names(self) -> list[str]:
        layers, heads = self.shape
        return [f"L{layer + 1}H{head + 1}" for layer in range(layers) for head in range(heads)]

    def to_dict(self) -> dict:
        layers, heads = self.shape
        return {
            "model": self.model, "layers": layers, "heads": heads, "causal": self.causal,
            "first_token": self.first_token, "sentences": self.num_sentences, "queries": self.num_queries,
            "thresholds": {"share": SHARE_THRESHOLD, "broad_normalized_entropy": BROAD_THRESHOLD},
            "measures": {name: values.round(6).tolist() for name, values in self.measures.items()},
            "patterns": self.patterns,
            "head_names": self.head_names(),
            "distances": self.distances.round(6).tolist(),
            "cohesion": self.cohesion,
            "uniform": self.uniform,
            "notes": self.notes,
        }

    def markdown(self) -> str:
        """The layers × heads table: pattern, entropy and every share."""
        names = ["first", "sep", "punctuation", "previous", "next"]
        first = self.first_token.replace("|", "\\|")  # GPT's <|endoftext|> would split the table's cells
        header = ["layer", "head", "pattern", "entropy (nats)", "normalized entropy", f"{first} share",
                  "[SEP] share", "punct. share", "prev. share", "next share"]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        layers, heads = self.shape
        for layer in range(layers):
            for head in range(heads):
                values = [self.measures["entropy"][layer, head], self.measures["normalized_entropy"][layer, head]]
                values += [self.measures[name][layer, head] for name in names]
                cells = [str(layer + 1), str(head + 1), self.patterns[layer][head]] + [f"{v:.2f}" for v in values]
                lines.append("| " + " | ".join(cells) + " |")
        if self.uniform:
            values = [self.uniform[name] for name in ["entropy", "normalized_entropy"] + names]
            lines.append("| uniform | | (baseline) | " + " | ".join(f"{v:.2f}" for v in values) + " |")
        return "\n".join(lines) + "\n"

    def plot(self, output_dir) -> list[str]:
        """Writes patterns.png (layers × heads coloured by pattern, entropy written in), shares.png (every head's
        shares and normalized entropy, and a uniform head's below them) and heads_dendrogram.png (heads clustered
        by JS distance, labels coloured by layer); returns the paths."""
        import matplotlib

        matplotlib.use("Agg")  # files only, never a window
        import matplotlib.pyplot as plt

        os.makedirs(output_dir, exist_ok=True)
        written = []
        for name, draw in (("patterns.png", self._plot_patterns), ("shares.png", self._plot_shares),
                           ("heads_dendrogram.png", self._plot_dendrogram)):
            figure = draw(plt)
            path = os.path.join(output_dir, name)
            figure.savefig(path, dpi=100, bbox_inches="tight")
            plt.close(figure)
            written.append(path)
        return written

    def _pattern_names(self) -> list[str]:
        first = "[CLS]" if self.first_token == "[CLS]" else "first token"
        return [first if key == "first" else label for key, label in SHARE_PATTERNS.items()] + list(OTHER_PATTERNS)

    def _plot_patterns(self, plt):
        from matplotlib.colors import ListedColormap

        names = self._pattern_names()
        codes = np.array([[names.index(p) for p in row] for row in self.patterns])
        layers, heads = self.shape
        figure, axes = plt.subplots(figsize=(1.2 * heads + 3, 0.6 * layers + 1.5))
        colors = ListedColormap(plt.get_cmap("tab10").colors[: len(names)])
        axes.imshow(codes, cmap=colors, vmin=-0.5, vmax=len(names) - 0.5, aspect="auto")
        for layer in range(layers):
            for head in range(heads):
                axes.text(head, layer, f"{self.patterns[layer][head]}\nH={self.measures['entropy'][layer, head]:.2f}",
                          ha="center", va="center", fontsize=8)
        axes.set(xticks=range(heads), xticklabels=[str(h + 1) for h in range(heads)], xlabel="head",
                 yticks=range(layers), yticklabels=[str(l + 1) for l in range(layers)], ylabel="layer",
                 title=f"{self.model}: each head's dominant pattern")
        handles = [plt.Rectangle((0, 0), 1, 1, color=colors(i)) for i in range(len(names))]
        axes.legend(handles, names, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
        return figure

    def _plot_shares(self, plt):
        names = ["first", "sep", "punctuation", "previous", "next", "normalized_entropy"]
        labels = [self.first_token, "[SEP]", "punctuation", "previous", "next", "entropy / max"]
        values = np.stack([self.measures[name].reshape(-1) for name in names], axis=1)
        rows = self.head_names()
        if self.uniform:  # the bottom row: what a head attending evenly would get, to read the others against
            values = np.vstack([values, [self.uniform[name] for name in names]])
            rows.append("uniform")
        figure, axes = plt.subplots(figsize=(0.8 * len(names) + 3, 0.35 * values.shape[0] + 1.5))
        image = axes.imshow(values, cmap="viridis", vmin=0, vmax=1, aspect="auto")
        for (row, column), value in np.ndenumerate(values):
            axes.text(column, row, f"{value:.2f}", ha="center", va="center", fontsize=7,
                      color="black" if value > 0.5 else "white")
        axes.set(xticks=range(len(names)), xticklabels=labels, yticks=range(values.shape[0]),
                 yticklabels=rows, title=f"{self.model}: where each head's attention goes")
        axes.tick_params(axis="x", rotation=30)
        figure.colorbar(image, ax=axes, fraction=0.05)
        return figure

    def _plot_dendrogram(self, plt):
        layers, heads = self.shape
        figure, axes = plt.subplots(figsize=(max(4.0, 0.4 * layers * heads + 2), 3.5))
        tree = linkage(squareform(self.distances, checks=False), method="average")
        dendrogram(tree, labels=self.head_names(), ax=axes, color_threshold=0, above_threshold_color="grey")
        colors = plt.get_cmap("viridis")(np.linspace(0, 0.9, layers))
        for label in axes.get_xticklabels():
            label.set_color(colors[int(label.get_text()[1:].split("H")[0]) - 1])
        silhouette = self.cohesion["silhouette"]
        axes.set(ylabel="Jensen-Shannon distance", title=f"{self.model}: heads clustered (labels coloured by layer;"
                 f" layer silhouette {'n/a' if silhouette is None else f'{silhouette:.2f}'})")
        return figure


def analyze_maps(maps: list[np.ndarray], roles: list[SentenceRoles], causal: bool, first_token: str = "[CLS]",
                 model: str = "model") -> AttentionResult:
    """The whole analysis over per-sentence (layers, heads, n, n) maps (padding already cropped, ``crop_padding``)
    and each sentence's token roles. ``first_token`` names position 0 ("[CLS]" makes the pattern "[CLS]")."""
    measures = head_measures(maps, roles, causal)
    layers, heads = measures["entropy"].shape
    distances = head_distances(maps, causal)
    notes = []
    if not any(r.sep[1:].any() for r in roles):
        notes.append("the inputs hold no [SEP] or end token after the first position, so the [SEP] share is 0")
    if causal:
        notes.append("causal model: a token cannot attend to the next one, so the next-token share is 0 by "
                     "construction; each sentence's first token (it sees only itself) is left out of the means")
    return AttentionResult(
        model=model, causal=causal, first_token=first_token, measures=measures,
        patterns=classify_heads(measures, "[CLS]" if first_token == "[CLS]" else "first token"),
        distances=distances, cohesion=layer_cohesion(distances, layers, heads), num_sentences=len(maps),
        num_queries=sum(a.shape[-1] - _first_query(causal) for a in maps),
        uniform=uniform_measures(maps, roles, causal), notes=notes,
    )


# --------------------------------------------------------------------------- running a model


def attention_maps(model, batch: dict) -> tuple[torch.Tensor, ...]:
    """The model's attentions (one (B, heads, T, T) tensor per layer) through ``output_attentions=True``; a model
    whose attention implementation returns no weights (SDPA in transformers) is switched to eager and run again."""
    with torch.no_grad():
        attentions = model(**batch, output_attentions=True, return_dict=True).attentions
        if not attentions or any(a is None for a in attentions):
            model.set_attn_implementation("eager")
            attentions = model(**batch, output_attentions=True, return_dict=True).attentions
    if not attentions or any(a is None for a in attentions):
        raise ValueError(f"{type(model).__name__} returns no attention weights, even with eager attention")
    return attentions


def _is_punctuation(text: str) -> bool:
    text = text.strip()
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


def _encode(tokenizer, item: str | tuple[str, str], max_length: int) -> dict[str, list[int]]:
    """One sentence or pair as the model saw text in pre-training: a pair as ``[CLS] a [SEP] b [SEP]`` when the
    tokenizer has a [SEP], else joined by a space; a tokenizer that puts nothing in front of the text (GPT's BPE)
    gets its bos token first, as GPT's pre-training put ``<|endoftext|>`` before every document."""
    first, second = (item, None) if isinstance(item, str) else item
    if second is not None and tokenizer.sep_token is None:
        first, second = f"{first} {second}", None
    if tokenizer.bos_token is not None and tokenizer.cls_token is None:
        plain = tokenizer(first, add_special_tokens=True)["input_ids"]
        if not plain or plain[0] not in tokenizer.all_special_ids:
            first = f"{tokenizer.bos_token} {first}"
    encoded = tokenizer(first, second, truncation=True, max_length=max_length)
    return {key: list(encoded[key]) for key in ("input_ids", "token_type_ids") if key in encoded}


def _roles(tokenizer, input_ids: list[int]) -> SentenceRoles:
    special = set(tokenizer.all_special_ids)
    sep_ids = {tokenizer.sep_token_id, tokenizer.eos_token_id} - {None}
    punctuation = [i not in special and _is_punctuation(tokenizer.decode([i])) for i in input_ids]
    return SentenceRoles(sep=np.isin(input_ids, list(sep_ids)), punctuation=np.array(punctuation, dtype=bool))


def _pad(encodings: list[dict[str, list[int]]], device) -> dict[str, torch.Tensor]:
    """Right-padded tensors and the attention mask (the filler id is masked out, so any id will do)."""
    width = max(len(e["input_ids"]) for e in encodings)
    batch = {key: torch.tensor([e[key] + [0] * (width - len(e[key])) for e in encodings], device=device)
             for key in encodings[0]}
    batch["attention_mask"] = torch.tensor([[1] * len(e["input_ids"]) + [0] * (width - len(e["input_ids"]))
                                            for e in encodings], device=device)
    return batch


def _looks_causal(maps: list[np.ndarray]) -> bool:
    # A causal mask leaves exact zeros above the diagonal in every head; softmax over visible keys never does.
    return all(not np.triu(a, k=1).any() for a in maps if a.shape[-1] > 1)


def analyze_attention(model, tokenizer, sentences: list, batch_size: int = 16, max_length: int = 128,
                      name: str | None = None) -> AttentionResult:
    """Runs ``model`` (its base model, eval mode, no gradients) over ``sentences`` — strings, or (a, b) pairs — and
    measures its heads (``analyze_maps``), each input cut to ``max_length`` tokens (or the model's limit). Causal
    or not is read off the maps (exact zeros above the diagonal)."""
    if isinstance(sentences, str) or not sentences:
        raise ValueError("analyze_attention takes a non-empty list of sentences or (a, b) pairs")
    base = getattr(model, "base_model", model).eval()
    device = next(base.parameters()).device
    # never longer than the model's positions or the tokenizer's limit
    max_length = min(max_length, tokenizer.model_max_length,
                     getattr(model.config, "max_position_embeddings", None) or max_length)
    encodings = [_encode(tokenizer, item, max_length) for item in sentences]
    maps = []
    for start in range(0, len(encodings), batch_size):
        batch = _pad(encodings[start : start + batch_size], device)
        maps += crop_padding(attention_maps(base, batch), batch["attention_mask"])
    roles = [_roles(tokenizer, e["input_ids"]) for e in encodings]
    first_token = tokenizer.convert_ids_to_tokens(encodings[0]["input_ids"][0])
    first_token = first_token if first_token in tokenizer.all_special_tokens else "first token"
    return analyze_maps(maps, roles, _looks_causal(maps), first_token, name or model.config.model_type)


def plot_example(model, tokenizer, item: str | tuple[str, str], path, max_length: int = 40) -> str:
    """Every head's attention on one input (cut to ``max_length`` tokens) as a grid of layers × heads heatmaps, row
    = query, column = the key it attends to, labelled with the tokens; writes ``path`` and returns it."""
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    base = getattr(model, "base_model", model).eval()
    encoding = _encode(tokenizer, item, max_length)
    batch = _pad([encoding], next(base.parameters()).device)
    attention = crop_padding(attention_maps(base, batch), batch["attention_mask"])[0]
    # byte-level BPE shows a leading space as "Ġ": print tokens as text, falling back to the raw token
    tokens = [tokenizer.convert_tokens_to_string([t]).strip() or t
              for t in tokenizer.convert_ids_to_tokens(encoding["input_ids"])]
    layers, heads, n, _ = attention.shape
    figure, axes = plt.subplots(layers, heads, figsize=(0.16 * n * heads + 1, 0.16 * n * layers + 1), squeeze=False)
    for (layer, head), axis in np.ndenumerate(axes):
        axis.imshow(attention[layer, head], cmap="Blues", vmin=0, vmax=1)
        axis.set_title(f"layer {layer + 1}, head {head + 1}", fontsize=9)
        axis.set_xticks(range(n), tokens, rotation=90, fontsize=6)
        axis.set_yticks(range(n), tokens if head == 0 else [], fontsize=6)
    figure.suptitle(f"{model.config.model_type}: attention of each query (row) on each key (column)")
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return str(path)


def load_model(folder):
    """(model, tokenizer) of a saved transformer with attention heads (any lineage-bert/-gpt folder, or a
    transformers BERT/GPT). A folder without attention heads (word2vec, NNLM, ELMo ...) raises ValueError naming
    its model type."""
    import transformers

    import hf_lineage  # noqa: F401  registers the lineage families with the Auto classes

    config = transformers.AutoConfig.from_pretrained(folder)
    if getattr(config, "num_attention_heads", None) is None:
        raise ValueError(f"{folder} holds a {config.model_type!r} model, which has no attention heads; "
                         f"`analyze attention` needs a transformer such as lineage-bert or lineage-gpt")
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # the pre-training heads' weights unused by AutoModel are expected
    try:
        model = transformers.AutoModel.from_pretrained(folder)
    finally:
        transformers.logging.set_verbosity(verbosity)
    return model, transformers.AutoTokenizer.from_pretrained(folder)


# --------------------------------------------------------------------------- sentences


def sample_sentences(count: int = 64, corpus=SAMPLE_CORPUS) -> list[tuple[str, str]]:
    """``count`` pairs of consecutive sentences from the shipped WikiText validation sample (headings and blank
    lines skipped), so that BERT sees ``[CLS] a [SEP] b [SEP]`` as in pre-training."""
    pairs = []
    for line in Path(corpus).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("="):
            continue
        sentences = re.split(r"(?<= \.) ", line)  # WikiText is tokenized: a sentence ends with " ."
        pairs += list(zip(sentences[0::2], sentences[1::2]))
        if len(pairs) >= count:
            break
    return pairs[:count]


def read_sentences(path) -> list[str | tuple[str, str]]:
    """One sentence per line (blank lines skipped); a tab splits a line into a sentence pair."""
    items = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            parts = [part.strip() for part in line.split("\t", 1)]
            items.append(tuple(parts) if len(parts) == 2 and all(parts) else " ".join(parts).strip())
    if not items:
        raise ValueError(f"{path} has no sentences (one per line, a tab between the two of a pair)")
    return items


# --------------------------------------------------------------------------- command line


def _write(result: AttentionResult, output_dir: str, draw_example) -> list[str]:
    """All files into a fresh folder beside ``output_dir``, then moved in: a failure leaves nothing half-written.
    ``draw_example(path)`` draws example.png."""
    parent = os.path.dirname(os.path.abspath(output_dir))
    os.makedirs(parent, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=parent) as staging:
        with open(os.path.join(staging, "results.json"), "w", encoding="utf-8") as f:
            json.dump(result.to_dict(), f, indent=2)
        with open(os.path.join(staging, "heads.md"), "w", encoding="utf-8") as f:
            f.write(result.markdown())
        result.plot(staging)
        draw_example(os.path.join(staging, "example.png"))
        os.makedirs(output_dir, exist_ok=True)
        names = sorted(os.listdir(staging))
        for file_name in names:
            shutil.move(os.path.join(staging, file_name), os.path.join(output_dir, file_name))
    return [os.path.join(output_dir, n) for n in names]


def main(args: argparse.Namespace) -> int:
    if args.max_sentences < 1:
        print("error: --max-sentences must be at least 1", file=sys.stderr)
        return 2
    try:
        sentences = read_sentences(args.sentences) if args.sentences else sample_sentences(args.max_sentences)
        model, tokenizer = load_model(args.model)
        sentences = sentences[: args.max_sentences]
        result = analyze_attention(model.to(args.device), tokenizer, sentences, args.batch_size, args.max_length)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    shortest = min(sentences, key=lambda item: len(item if isinstance(item, str) else " ".join(item)))
    for path in _write(result, args.output_dir, lambda path: plot_example(model, tokenizer, shortest, path)):
        print(path)
    for note in result.notes:
        print(f"note: {note}")
    return 0
