"""What each layer learns: layer-wise linear probes with a control task (``hf-lineage analyze probes``).

For every layer of a saved model — static vectors (NNLM's table C, word2vec's input vectors) count as one layer,
ELMo has three (the character-based token layer and two biLSTM layers), GPT and BERT one per transformer layer plus
the embeddings — the frozen per-word vectors feed a linear classifier (scikit-learn's ``LogisticRegression`` on
standardised features, a fixed seed, C chosen on a dev split carved from the training sentences, then refit on all
of them) that predicts a property (``LEVELS`` files each under Jawahar et al.'s (2019) surface / syntactic /
semantic, the grouping of Conneau et al. 2018):

* ``upos``   — the universal part-of-speech tag of every word (17 labels);
* ``number`` — Sing/Plur of every noun;
* ``tense``  — Past/Pres of every finite verb or auxiliary;
* ``length`` — the sentence's length in words, ``LENGTH_EDGES`` bins (Conneau et al. 2018's SentLen);
* ``depth``  — the depth of its UD dependency tree, ``DEPTH_EDGES`` bins (their TreeDepth, on dependency trees);
* ``root_dependents`` — the root's UPOS and its core dependents' relations ("nsubj aux VERB obj"): the
  ``TOP_CLASSES`` most frequent training sequences and "other" — UD has no constituency trees, so this dependency
  analogue stands in for their TopConst ("NP VP .");
* ``agreement`` — a finite verb's number (Sing/Plur) read off the words *before* it, a noun (the attractor) between
  its subject and it (Linzen et al. 2016), with the accuracy also on the items whose attractor's number differs
  from the subject's.

A sentence property probes the sentence vector: the mean of the sentence's word vectors at that layer (or its last
word's with ``sentence_vector="last"``). ``agreement`` probes the vector of the last word of the sentence cut just
before the verb, so that no model sees the verb's own form (which gives its number away) and a left-to-right GPT
is asked exactly what its language model must know to predict the verb.

The words come from the embedded probing sample (UD English EWT, CC BY-SA 4.0: ``hf_lineage/samples/analysis/README.md``).
A word's vector is ``ContextualVectors``' (the mean over its sub-tokens for BERT's WordPiece and GPT's BPE); for
the static families it is the input-embedding row of the word (the ``<unk>`` row for a word outside the vocabulary).

Accuracy alone does not say whether the representation encodes the property or the probe memorised words: each
(family, layer, property) also gets the **control task** of Hewitt & Liang (2019) — every word *type* gets a random
label drawn from the property's label distribution (a fixed seed), and the same probe is trained on those labels.
**Selectivity** = accuracy − control accuracy. A **majority baseline** (each word type's most frequent training
label; unseen words get the most frequent label) says how far word identity alone goes. Every number has a 95 %
bootstrap interval over validation sentences (selectivity paired: the same resampled sentences for both).
Sentences have no word types: their control labels are drawn per type of the sentence's *first word* (a surface
feature that says next to nothing about the property), their majority baseline is the most frequent training
label. ``agreement``'s control and majority go by the type of the probed word (the last one before the verb). Where
a cheap cue exists it is a baseline too: ``depth`` from the length alone (the most frequent depth bin of each
length), ``agreement`` from the nearest noun before the verb (right exactly where the attractor matches)::

    >>> from hf_lineage.analysis.probes import run_probes
    >>> results = run_probes(["out/elmo", "out/bert"], properties=["upos", "number"])   # doctest: +SKIP
    >>> print(results.table())                                                          # doctest: +SKIP
    >>> results.plot("probes/")                                                         # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import tempfile
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from transformers.modeling_outputs import BaseModelOutput

from .. import samples as _samples
from ..registry import hidden_layer_names, word_vector_model_types
from ..vectors.contextual import ContextualVectors
from .options import BOOTSTRAP_SAMPLES, C_GRID, PROPERTIES, SENTENCE_VECTORS

SENTENCE_PROPERTIES = ("length", "depth", "root_dependents")
# Jawahar et al. (2019) after Conneau et al. (2018), who file Tense and subject/object number under semantics; at
# the word level noun number and tense are largely morphology, so "semantic" is the papers' grouping, not a claim.
LEVELS = {"length": "surface", "upos": "syntactic", "depth": "syntactic", "root_dependents": "syntactic",
          "agreement": "syntactic", "number": "semantic", "tense": "semantic"}
LENGTH_EDGES = (6, 10, 14, 19, 25)  # the last word count of every bin but the last: 1-6, 7-10, ..., 26+
DEPTH_EDGES = (3, 4, 5, 6)  # 1-3, 4, 5, 6, 7+ (the probing sample's sentences have depth 2 to 13)
TOP_CLASSES = 19  # root_dependents sequences kept as classes, the rest are "other" (Conneau et al.: 19 + other)
# Model types whose words have one vector whatever the sentence: probed through their input embeddings.
STATIC_MODEL_TYPES = word_vector_model_types()  # the registry's: read as WordVectors, input embeddings
DEV_FRACTION = 0.2  # of the training sentences, for choosing C


# --------------------------------------------------------------------------- the probing sample


def load_probing_sample(split: str, sentences: int | None = None, kind: str = "probing") -> list[dict]:
    """The first ``sentences`` (all when None) of the embedded ``{kind}.{split}.jsonl``. ``probing``: ``tokens``,
    ``upos``, for ``number``/``tense`` a list of (word position, label) for the words that carry the property,
    ``depth`` and ``root_dependents``; ``agreement``: ``tokens`` and its agreement ``items``."""
    if split not in ("train", "validation"):
        raise ValueError(f"split must be 'train' or 'validation', got {split!r}")
    if kind not in ("probing", "agreement"):
        raise ValueError(f"kind must be 'probing' or 'agreement', got {kind!r}")
    text = (_samples.ANALYSIS / f"{kind}.{split}.jsonl").read_text(encoding="utf-8")
    records = [json.loads(line) for line in text.splitlines()]
    return records if sentences is None else records[:sentences]


def bin_label(value: int, edges) -> str:
    """The bin of ``value`` (>= 1) whose upper ends are ``edges``: with (6, 10), 5 → "1-6", 10 → "7-10", 11 → "11+"."""
    lower = 1
    for upper in edges:
        if value <= upper:
            return str(upper) if lower == upper else f"{lower}-{upper}"
        lower = upper + 1
    return f"{lower}+"


def sentence_label(record: dict, prop: str) -> str:
    """A probing-sample sentence's label for a sentence property (root_dependents before the "other" cut)."""
    if prop == "length":
        return bin_label(len(record["tokens"]), LENGTH_EDGES)
    if prop == "depth":
        return bin_label(record["depth"], DEPTH_EDGES)
    if prop == "root_dependents":
        return record["root_dependents"]
    raise ValueError(f"{prop!r} is not a sentence property; those are: {', '.join(SENTENCE_PROPERTIES)}")


def top_classes(labels, k: int = TOP_CLASSES) -> set[str]:
    """The ``k`` most frequent labels (ties: alphabetical, so the cut does not depend on the order)."""
    counted = collections.Counter(labels)
    return set(sorted(counted, key=lambda label: (-counted[label], label))[:k])


@dataclass
class LabelledWords:
    """The words of some sentences that carry one property: each one's sentence, position, form and label."""

    sentence: np.ndarray
    position: np.ndarray
    words: list[str]
    labels: np.ndarray


def labelled_words(records: list[dict], prop: str) -> LabelledWords:
    """What a property probes in ``records``: words (``upos``, ``number``, ``tense``); sentences (position 0 and
    their first word, the type the control task goes by); or agreement items (the position of the last word before
    the verb, and that word)."""
    if prop not in PROPERTIES:
        raise ValueError(f"unknown property {prop!r}; known: {', '.join(PROPERTIES)}")
    rows = []
    for s, record in enumerate(records):
        if prop in SENTENCE_PROPERTIES:
            rows.append((s, 0, record["tokens"][0], sentence_label(record, prop)))
        elif prop == "agreement":
            rows += [(s, item["verb"] - 1, record["tokens"][item["verb"] - 1], item["number"])
                     for item in record["items"]]
        else:
            pairs = enumerate(record["upos"]) if prop == "upos" else record[prop]
            rows += [(s, p, record["tokens"][p], label) for p, label in pairs]
    sentence, position, words, labels = zip(*rows) if rows else ((), (), (), ())
    return LabelledWords(np.array(sentence, dtype=int), np.array(position, dtype=int), list(words),
                         np.array(labels, dtype=object))


def agreement_prefixes(records: list[dict]) -> list[dict]:
    """One record per agreement item, in ``labelled_words`` order: the sentence's words before the verb."""
    return [{"tokens": record["tokens"][:item["verb"]]} for record in records for item in record["items"]]


def nearest_noun_numbers(records: list[dict]) -> np.ndarray:
    """The attractor heuristic's guess for every agreement item: the number of the noun nearest before the verb."""
    return np.array([item["attractor_number"] for record in records for item in record["items"]], dtype=object)


def mismatched(records: list[dict]) -> np.ndarray:
    """Per agreement item: does the attractor's number differ from the subject's (= the verb's)?"""
    return np.array([item["attractor_number"] != item["number"] for record in records for item in record["items"]],
                    dtype=bool)


# --------------------------------------------------------------------------- features


class StackedLayers(torch.nn.Module):
    """A model seen as an encoder whose one output is every probed layer side by side, (B, T, layers · D), so that
    one pass of ``ContextualVectors`` pools all layers at once (the mean over sub-tokens is linear, so pooling the
    stack is pooling each layer). A static model's one layer is its input-embedding rows."""

    def __init__(self, model):
        super().__init__()
        self.model = getattr(model, "base_model", model)
        self.static = is_static(model)

    def layers(self, **inputs) -> tuple[torch.Tensor, ...]:
        """Every probed layer, each (B, T, D), for the tokenizer's ``inputs``."""
        if self.static:
            return (self.model.get_input_embeddings()(inputs["input_ids"]),)
        states = self.model(**inputs, output_hidden_states=True, return_dict=True).hidden_states
        if not states:
            raise ValueError(f"{type(self.model).__name__} returns no hidden_states: it cannot be probed layer by "
                             "layer")
        return states

    def forward(self, output_hidden_states=None, return_dict=None, **inputs):  # ContextualVectors asks for both
        return BaseModelOutput(last_hidden_state=torch.cat(self.layers(**inputs), dim=-1))


def family_of(model) -> str:
    """``nnlm``, ``word2vec``, ``elmo``, ``gpt``, ``bert`` for lineage models, else the config's model type."""
    return model.config.model_type.removeprefix("lineage-")


def is_static(model) -> bool:
    return model.config.model_type in STATIC_MODEL_TYPES


def layer_names(model, tokenizer) -> list[str]:
    """What each probed layer is: one for static vectors, else one per hidden state the model returns."""
    if is_static(model):
        return ["vectors"]
    with torch.no_grad():
        count = len(StackedLayers(model).layers(**tokenizer(["a probe"], return_tensors="pt")))
    return hidden_layer_names(model.config.model_type, count)


def layer_features(model, tokenizer, records: list[dict], batch_size: int = 32) -> list[list[np.ndarray]]:
    """Per layer, per sentence, an (n_words, D) float32 array: the frozen vector of every word."""
    sentences = [" ".join(record["tokens"]) for record in records]
    stacked = ContextualVectors(StackedLayers(model), tokenizer, batch_size=batch_size).embed(sentences)
    n_layers = len(layer_names(model, tokenizer))
    per_sentence = [np.split(v.numpy(), n_layers, axis=-1) for v in stacked]
    return [[layers[i] for layers in per_sentence] for i in range(n_layers)]


def gather(features: list[np.ndarray], words: LabelledWords) -> np.ndarray:
    """The rows of ``features`` (one array per sentence) at the labelled words: (N, D)."""
    return np.stack([features[s][p] for s, p in zip(words.sentence, words.position)])


def sentence_vectors(features: list[np.ndarray], how: str = "mean") -> np.ndarray:
    """One vector per sentence (one (n_words, D) array each): the mean of its word vectors, or its last word's."""
    if how not in SENTENCE_VECTORS:
        raise ValueError(f"sentence_vector must be one of {SENTENCE_VECTORS}, got {how!r}")
    return np.stack([words.mean(axis=0) if how == "mean" else words[-1] for words in features])


# --------------------------------------------------------------------------- baselines and the control task


def majority_baseline(train_words: list[str], train_labels, test_words: list[str]) -> np.ndarray:
    """Each test word's most frequent label among its training occurrences (ties: the label first seen); a word
    never seen in training gets the most frequent label overall."""
    by_word = collections.defaultdict(collections.Counter)
    for word, label in zip(train_words, train_labels):
        by_word[word][label] += 1
    overall = collections.Counter(train_labels).most_common(1)[0][0]
    return np.array([by_word[w].most_common(1)[0][0] if w in by_word else overall for w in test_words], dtype=object)


def control_labels(words: list[str], labels, seed: int = 0) -> dict[str, str]:
    """Hewitt & Liang's control task: every word type in ``words`` gets one label drawn at random from the empirical
    distribution of ``labels`` (types in sorted order, so the draw does not depend on the order words came in)."""
    values, counts = np.unique(np.asarray(labels, dtype=str), return_counts=True)
    types = sorted(set(words))
    draws = np.random.default_rng(seed).choice(values, size=len(types), p=counts / counts.sum())
    return dict(zip(types, draws.tolist()))


# --------------------------------------------------------------------------- the probe


@dataclass
class Probe:
    """A fitted linear probe and the C its dev split chose (``dev_accuracy`` per C tried)."""

    model: object
    C: float
    dev_accuracy: dict

    def predict(self, features: np.ndarray) -> np.ndarray:
        return self.model.predict(features)


def _classifier(C: float, seed: int):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=500, random_state=seed))


def _fit(features, labels, C, seed):
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    # One BLAS thread: a probe's matrices are small, and beside torch's OpenMP threads a multi-threaded OpenBLAS
    # spends its time waiting (measured: the lineage's probing stage took 51 s instead of 8 on 2 cores).
    with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
        # A probe that has not fully converged at max_iter is still a fair linear probe; its dev score chose C.
        warnings.simplefilter("ignore", ConvergenceWarning)
        return _classifier(C, seed).fit(features, labels)


def fit_probe(features: np.ndarray, labels, sentences: np.ndarray, grid=C_GRID, seed: int = 0) -> Probe:
    """A linear probe on (N, D) ``features``: C chosen by accuracy on the last ``DEV_FRACTION`` of the training
    sentences (``sentences`` gives each row's sentence, so no sentence is on both sides), then refit on all rows.
    With one C in ``grid`` (or no usable dev split) the grid's middle value is used without a dev split."""
    labels = np.asarray(labels, dtype=str)
    if len(np.unique(labels)) < 2:
        raise ValueError("a probe needs at least two labels among its training words")
    order = np.unique(sentences)
    dev = np.isin(sentences, order[int(len(order) * (1 - DEV_FRACTION)):])
    if len(grid) == 1 or dev.all() or not dev.any() or len(np.unique(labels[~dev])) < 2:
        dev_accuracy = {}
        C = grid[len(grid) // 2]
    else:
        dev_accuracy = {C: float((_fit(features[~dev], labels[~dev], C, seed).predict(features[dev])
                                  == labels[dev]).mean()) for C in grid}
        C = max(dev_accuracy, key=dev_accuracy.get)  # the first (smallest) C of the best score
    return Probe(_fit(features, labels, C, seed), C, dev_accuracy)


# --------------------------------------------------------------------------- intervals


def bootstrap_accuracies(correct: dict[str, np.ndarray], sentences: np.ndarray, samples: int = BOOTSTRAP_SAMPLES,
                         seed: int = 0) -> dict[str, np.ndarray]:
    """``samples`` bootstrap accuracies of each boolean array in ``correct`` (one entry per word, the same words for
    all), resampling the words' sentences with replacement — the same resampled sentences for every array, so that
    differences between them (selectivity) are paired."""
    ids, index = np.unique(sentences, return_inverse=True)
    words = np.bincount(index, minlength=len(ids))
    draws = np.random.default_rng(seed).integers(0, len(ids), size=(samples, len(ids)))
    totals = words[draws].sum(axis=1)
    return {name: np.bincount(index, weights=hits.astype(float), minlength=len(ids))[draws].sum(axis=1) / totals
            for name, hits in correct.items()}


def interval(values: np.ndarray) -> list[float]:
    """The 95 % percentile interval of bootstrap values."""
    return [float(x) for x in np.percentile(values, [2.5, 97.5])]


# --------------------------------------------------------------------------- results


@dataclass
class ProbeScore:
    """One (model, layer, property): the probe's, the control probe's and the majority baseline's accuracy on the
    validation words, selectivity = accuracy − control accuracy, each with its 95 % bootstrap interval."""

    model: str
    family: str
    layer: int
    layer_name: str
    property: str
    accuracy: float
    accuracy_interval: list[float]
    control_accuracy: float
    control_interval: list[float]
    selectivity: float
    selectivity_interval: list[float]
    majority: float
    majority_interval: list[float]
    C: float
    control_C: float
    train_words: int
    validation_words: int
    # A cheap cue's accuracy where one exists (depth: from the length alone; agreement: the nearest noun's number).
    cue: float | None = None
    cue_interval: list[float] | None = None
    # agreement only: items, accuracy, majority and cue (with intervals) on the items whose attractor mismatches.
    mismatched: dict | None = None


@dataclass
class ProbeResults:
    """Every ``ProbeScore``; ``models``: name → path, family and layer names; ``settings``: how the probes ran."""

    scores: list[ProbeScore]
    models: dict
    settings: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"settings": self.settings, "models": self.models, "scores": [asdict(s) for s in self.scores],
                "best_layers": self.best_layers()}

    def best_layers(self) -> list[dict]:
        """Per model and property, its level (``LEVELS``), the layer with the highest accuracy and the one with the
        highest selectivity (ties: the lower layer), each with its interval, the runner-up layer and whether the two
        are ``separable``: the best layer's 95 % interval lies wholly above the runner-up's (None for one layer).
        Non-overlapping intervals are a conservative test: the layers share their validation sentences."""
        best = []
        for name in self.models:
            for prop in self.settings["properties"]:
                rows = [s for s in self.scores if s.model == name and s.property == prop]
                if not rows:
                    continue
                entry = {"model": name, "property": prop, "level": LEVELS[prop]}
                for key in ("accuracy", "selectivity"):
                    ranked = sorted(rows, key=lambda s: getattr(s, key), reverse=True)  # stable: lower layer first
                    top, bounds = ranked[0], getattr(ranked[0], f"{key}_interval")
                    runner_up = ranked[1] if len(ranked) > 1 else None
                    entry.update({f"{key}_layer": top.layer_name, key: getattr(top, key), f"{key}_interval": bounds,
                                  f"{key}_runner_up": runner_up and runner_up.layer_name,
                                  f"{key}_separable": None if runner_up is None else
                                  bounds[0] > getattr(runner_up, f"{key}_interval")[1]})
                best.append(entry)
        return best

    def table(self) -> str:
        """A markdown table, one row per (model, layer, property); a cue-baseline column when a property has one."""
        cues = any(s.cue is not None for s in self.scores)
        lines = ["| model | layer | property | accuracy | control | selectivity | majority baseline | "
                 + ("cue baseline | " if cues else "") + "C |",
                 "|---|---|---|---|---|---|---|" + ("---|" if cues else "") + "---|"]
        for s in self.scores:
            cue = (f"{_cell(s.cue, s.cue_interval)} | " if s.cue is not None else "— | ") if cues else ""
            lines.append(f"| {s.model} | {s.layer} ({s.layer_name}) | {s.property} | "
                         f"{_cell(s.accuracy, s.accuracy_interval)} | {_cell(s.control_accuracy, s.control_interval)} | "
                         f"{_cell(s.selectivity, s.selectivity_interval)} | {_cell(s.majority, s.majority_interval)} | "
                         f"{cue}{s.C:g} |")
        return "\n".join(lines) + "\n"

    def agreement_table(self) -> str:
        """Subject-verb agreement per (model, layer): every item and the items whose attractor mismatches the subject
        (where the nearest-noun cue is always wrong); empty when ``agreement`` was not probed."""
        rows = [s for s in self.scores if s.mismatched is not None]
        if not rows:
            return ""
        lines = ["| model | layer | accuracy (all items) | mismatched attractor: accuracy | majority | nearest-noun cue |",
                 "|---|---|---|---|---|---|"]
        for s in rows:
            m = s.mismatched
            lines.append(f"| {s.model} | {s.layer} ({s.layer_name}) | {_cell(s.accuracy, s.accuracy_interval)} | "
                         f"{_cell(m['accuracy'], m['accuracy_interval'])} | {_cell(m['majority'], m['majority_interval'])}"
                         f" | {_cell(m['cue'], m['cue_interval'])} |")
        return "\n".join(lines) + "\n"

    def best_layers_table(self) -> str:
        """Which layer of each model holds each property best, by accuracy and by selectivity."""
        def best(b, key):
            text = f"{b[key + '_layer']}: {_cell(b[key], b[key + '_interval'])}"
            return text + ("" if b[key + "_separable"] in (None, True) else
                           f", not separable from {b[key + '_runner_up']}")

        lines = ["| model | property | level | best layer by accuracy | most selective layer |", "|---|---|---|---|---|"]
        lines += [f"| {b['model']} | {b['property']} | {b['level']} | {best(b, 'accuracy')} | {best(b, 'selectivity')} |"
                  for b in self.best_layers()]
        return "\n".join(lines) + "\n"

    def summary(self) -> list[str]:
        """One sentence per model: the best layer for each property, and whether it stands out from the next."""
        def apart(b, key):
            return "" if b[key + "_separable"] in (None, True) else f", not separable from {b[key + '_runner_up']}"

        sentences = []
        for name in self.models:
            parts = [f"{b['property']} ({b['level']}) at {b['accuracy_layer']} (accuracy {b['accuracy']:.3f}"
                     f"{apart(b, 'accuracy')}; most selective: {b['selectivity_layer']}, {b['selectivity']:.3f}"
                     f"{apart(b, 'selectivity')})" for b in self.best_layers() if b["model"] == name]
            sentences.append(f"{name}: " + "; ".join(parts) + ".")
        return sentences

    def plot(self, output_dir) -> list[str]:
        """``probes_<model>.png`` per model (layer on x; accuracy with the majority baseline, and selectivity, per
        property) and ``probes_overview.png`` (every model, one column per property); returns the file names."""
        import matplotlib

        matplotlib.use("Agg")  # files only, never a window
        import matplotlib.pyplot as plt

        output_dir = Path(output_dir)
        output_dir.mkdir(parents=True, exist_ok=True)
        names = []
        for name in self.models:
            names.append(f"probes_{name}.png")
            _plot_model(plt, self, name, output_dir / names[-1])
        names.append("probes_overview.png")
        _plot_overview(plt, self, output_dir / names[-1])
        return names


def _cell(value, bounds):
    return f"{value:.3f} [{bounds[0]:.3f}, {bounds[1]:.3f}]"


def _series(results, model, prop, key):
    """Layers, values and (N, 2) intervals of ``key`` ("accuracy" or "selectivity") for one model and property."""
    rows = sorted((s for s in results.scores if s.model == model and s.property == prop), key=lambda s: s.layer)
    bounds = np.array([getattr(s, f"{key}_interval") for s in rows]).reshape(-1, 2)
    return [s.layer for s in rows], np.array([getattr(s, key) for s in rows]), bounds, rows


def _errorbars(axis, x, values, bounds, **style):
    axis.errorbar(x, values, yerr=[values - bounds[:, 0], bounds[:, 1] - values], capsize=3, marker="o", **style)


def _plot_model(plt, results, name, path):
    properties = results.settings["properties"]
    layers = results.models[name]["layers"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4), sharex=True)
    for i, prop in enumerate(properties):
        color = f"C{i}"
        x, values, bounds, rows = _series(results, name, prop, "accuracy")
        _errorbars(left, x, values, bounds, color=color, label=f"{prop} ({LEVELS[prop]})")
        if rows:
            left.axhline(rows[0].majority, color=color, linestyle=":", linewidth=1)
            if rows[0].cue is not None:
                left.axhline(rows[0].cue, color=color, linestyle="-.", linewidth=1)
        x, values, bounds, _ = _series(results, name, prop, "selectivity")
        _errorbars(right, x, values, bounds, color=color, label=prop)
    left.set(title="accuracy (dotted: majority, dash-dot: cue)", ylabel="accuracy", ylim=(0, 1))
    right.set(title="selectivity (accuracy − control)", ylabel="selectivity")
    right.axhline(0, color="gray", linewidth=0.8)
    for axis in (left, right):
        axis.set_xticks(range(len(layers)), layers, rotation=20)
        axis.set_xlim(-0.5, len(layers) - 0.5)
        axis.grid(alpha=0.3)
    left.legend(fontsize=8)
    figure.suptitle(f"Linear probes per layer: {name}")
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)


def _plot_overview(plt, results, path):
    properties = results.settings["properties"]
    figure, axes = plt.subplots(2, len(properties), figsize=(3.6 * len(properties), 5.6), squeeze=False)
    for column, prop in enumerate(properties):
        for i, name in enumerate(results.models):
            for row, key in enumerate(("accuracy", "selectivity")):
                x, values, _, _ = _series(results, name, prop, key)
                axes[row, column].plot(x, values, marker="o", color=f"C{i}", label=name)
        majority = [s.majority for s in results.scores if s.property == prop][:1]
        for value in majority:  # the same for every model: it depends on the words only
            axes[0, column].axhline(value, color="black", linestyle=":", linewidth=1, label="majority baseline")
        axes[0, column].set(title=f"{prop} ({LEVELS[prop]})", ylim=(0, 1))
        axes[1, column].axhline(0, color="gray", linewidth=0.8)
    axes[0, 0].set_ylabel("accuracy")
    axes[1, 0].set_ylabel("selectivity")
    for axis in axes.flat:
        axis.grid(alpha=0.3)
        axis.xaxis.get_major_locator().set_params(integer=True)
    axes[0, -1].legend(fontsize=8)
    figure.supxlabel("layer (0: static vectors, ELMo's token layer, GPT/BERT embeddings)", fontsize=9)
    figure.suptitle("Linear probes: every model, every layer")
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)


# --------------------------------------------------------------------------- running the probes


def load_model(folder):
    """(model, tokenizer) of a saved model folder; ValueError when the folder is not one."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer
    from transformers.utils import logging

    import hf_lineage  # noqa: F401 - registers the lineage families with the Auto classes

    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise ValueError(f"{folder} is not a saved model folder (no config.json)")
    try:
        AutoConfig.from_pretrained(folder)
        tokenizer = AutoTokenizer.from_pretrained(folder)
    except (OSError, ValueError, KeyError) as error:
        raise ValueError(f"{folder} is not a model folder that transformers can load: {error}") from error
    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()  # a pre-training checkpoint's head weights are "unexpected" in the bare model
    logging.disable_progress_bar()
    try:
        model = AutoModel.from_pretrained(folder)
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()
    return model, tokenizer


def model_names(families: list[str]) -> list[str]:
    """Each model's name in tables and file names: its family, numbered when a family comes more than once."""
    names = []
    for family in families:
        names.append(family if families.count(family) == 1 else f"{family}-{names.count(family) + 1}")
    return names


def run_probes(models, properties=tuple(PROPERTIES), train_sentences: int | None = None,
               validation_sentences: int | None = None, grid=C_GRID, seed: int = 0,
               bootstrap_samples: int = BOOTSTRAP_SAMPLES, sentence_vector: str = "mean") -> ProbeResults:
    """Probe every layer of every model on every property.

    ``models``: saved folders, or (model, tokenizer) pairs. ``train_sentences``/``validation_sentences``: how many
    sentences of each embedded sample to use (default: all; probing 1,000 and 400, agreement 499 and 100).
    ``grid``: the C values tried on the dev split. ``sentence_vector``: "mean" or "last" word vector for the
    sentence properties. The control labels and the baselines depend on the words only, so they are the same for
    every model."""
    unknown = [p for p in properties if p not in PROPERTIES]
    if unknown or not properties:
        raise ValueError(f"unknown properties {unknown}; known: {', '.join(PROPERTIES)}")
    if sentence_vector not in SENTENCE_VECTORS:
        raise ValueError(f"sentence_vector must be one of {SENTENCE_VECTORS}, got {sentence_vector!r}")
    if not models:
        raise ValueError("no models given")
    loaded = [load_model(m) if isinstance(m, (str, Path)) else m for m in models]
    samples = {"probing": tuple(load_probing_sample(split, n) for split, n in
                                (("train", train_sentences), ("validation", validation_sentences)))}
    if "agreement" in properties:
        samples["agreement"] = tuple(load_probing_sample(split, n, "agreement") for split, n in
                                     (("train", train_sentences), ("validation", validation_sentences)))
    tasks = {prop: _property_task(*samples[_sample_of(prop)], prop, seed) for prop in properties}
    names = model_names([family_of(model) for model, _ in loaded])
    scores, described = [], {}
    for name, (model, tokenizer), source in zip(names, loaded, models):
        layers = layer_names(model, tokenizer)
        described[name] = {"family": family_of(model), "path": str(source) if isinstance(source, (str, Path))
                           else None, "layers": layers}
        # Per split, per layer, what each kind of property probes: the words' vectors, the sentence vectors, and the
        # last word of every agreement item's prefix. Only what the properties need is computed.
        features = []
        for split in (0, 1):
            per_layer = [{} for _ in layers]
            if any(_sample_of(p) == "probing" for p in properties):
                for layer, words in enumerate(layer_features(model, tokenizer, samples["probing"][split])):
                    per_layer[layer]["word"] = words
                    if any(p in SENTENCE_PROPERTIES for p in properties):
                        per_layer[layer]["sentence"] = sentence_vectors(words, sentence_vector)
            if "agreement" in samples:
                prefixes = agreement_prefixes(samples["agreement"][split])
                for layer, words in enumerate(layer_features(model, tokenizer, prefixes)):
                    per_layer[layer]["prefix"] = np.stack([vectors[-1] for vectors in words])
            features.append(per_layer)
        for layer, layer_name in enumerate(layers):
            for prop, task in tasks.items():
                x_train, x_validation = (_inputs(prop, words, features[i][layer])
                                         for i, words in enumerate((task.train, task.validation)))
                scores.append(_probe_layer(task, x_train, x_validation,
                                           (name, family_of(model), layer, layer_name, prop), grid, seed,
                                           bootstrap_samples))
    settings = {"properties": list(properties), "train_sentences": len(samples["probing"][0]),
                "validation_sentences": len(samples["probing"][1]), "C_grid": list(grid), "dev_fraction": DEV_FRACTION,
                "seed": seed, "bootstrap_samples": bootstrap_samples,
                "pooling": "mean over a word's sub-tokens (BERT WordPiece, GPT BPE); static families: the word's "
                           "input-embedding row",
                "data": "UD English EWT (CC BY-SA 4.0), hf_lineage/samples/analysis",
                "levels": {prop: LEVELS[prop] for prop in properties}}
    if any(p in SENTENCE_PROPERTIES for p in properties):
        settings["sentence_vector"] = f"{sentence_vector} of the sentence's word vectors at the layer"
    if "agreement" in samples:
        settings.update({"agreement_train_sentences": len(samples["agreement"][0]),
                         "agreement_validation_sentences": len(samples["agreement"][1]),
                         "agreement_vector": "the last word before the verb, the sentence cut before the verb"})
    return ProbeResults(scores, described, settings)


def _sample_of(prop: str) -> str:
    return "agreement" if prop == "agreement" else "probing"


def _inputs(prop: str, words: LabelledWords, features: dict) -> np.ndarray:
    """The (N, D) probe inputs of a property's labelled ``words`` from one layer's ``features``."""
    if prop == "agreement":
        return features["prefix"]  # one row per item, in the labelled order
    if prop in SENTENCE_PROPERTIES:
        return features["sentence"][words.sentence]
    return gather(features["word"], words)


@dataclass
class _PropertyTask:
    train: LabelledWords
    validation: LabelledWords
    control_train: np.ndarray
    control_validation: np.ndarray
    majority_correct: np.ndarray
    cue_correct: np.ndarray | None = None  # per validation unit: is the cheap cue right?
    mismatched: np.ndarray | None = None  # agreement: per validation item, does the attractor mismatch?


def _property_task(train, validation, prop, seed) -> _PropertyTask:
    train_words, validation_words = labelled_words(train, prop), labelled_words(validation, prop)
    if not len(train_words.labels) or not len(validation_words.labels):
        raise ValueError(f"no {prop} labels in the sample's first sentences: use more sentences")
    if prop == "root_dependents":  # Conneau et al.'s classes: the most frequent training sequences, and "other"
        kept = top_classes(train_words.labels)
        for words in (train_words, validation_words):
            words.labels = np.array([label if label in kept else "other" for label in words.labels], dtype=object)
    control = control_labels(train_words.words + validation_words.words, train_words.labels, seed)
    # Sentences have no type to look up: their majority baseline is the most frequent training label.
    keys = (lambda words: [""] * len(words.labels)) if prop in SENTENCE_PROPERTIES else (lambda words: words.words)
    majority = majority_baseline(keys(train_words), train_words.labels, keys(validation_words))
    cue = mismatch = None
    if prop == "depth":  # how far the length alone goes: each length's most frequent depth bin
        lengths = [[str(len(record["tokens"])) for record in records] for records in (train, validation)]
        cue = majority_baseline(lengths[0], train_words.labels, lengths[1]) == validation_words.labels
    if prop == "agreement":  # agree with the nearest noun: wrong exactly where the attractor mismatches
        cue, mismatch = nearest_noun_numbers(validation) == validation_words.labels, mismatched(validation)
    return _PropertyTask(train_words, validation_words, np.array([control[w] for w in train_words.words]),
                         np.array([control[w] for w in validation_words.words]),
                         majority == validation_words.labels, cue, mismatch)


def _probe_layer(task, x_train, x_validation, where, grid, seed, samples) -> ProbeScore:
    probe = fit_probe(x_train, task.train.labels, task.train.sentence, grid, seed)
    control = fit_probe(x_train, task.control_train, task.train.sentence, grid, seed)
    correct = {"accuracy": probe.predict(x_validation) == task.validation.labels.astype(str),
               "control": control.predict(x_validation) == task.control_validation,
               "majority": task.majority_correct}
    if task.cue_correct is not None:
        correct["cue"] = task.cue_correct
    boot = bootstrap_accuracies(correct, task.validation.sentence, samples, seed)
    accuracy = {name: float(values.mean()) for name, values in correct.items()}
    mismatched = None
    if task.mismatched is not None and task.mismatched.any():
        hard = {name: correct[name][task.mismatched] for name in ("accuracy", "majority", "cue")}
        hard_boot = bootstrap_accuracies(hard, task.validation.sentence[task.mismatched], samples, seed)
        mismatched = {"items": int(task.mismatched.sum())}
        for name, hits in hard.items():
            mismatched.update({name: float(hits.mean()), f"{name}_interval": interval(hard_boot[name])})
    return ProbeScore(*where, accuracy["accuracy"], interval(boot["accuracy"]), accuracy["control"],
                      interval(boot["control"]), accuracy["accuracy"] - accuracy["control"],
                      interval(boot["accuracy"] - boot["control"]), accuracy["majority"], interval(boot["majority"]),
                      probe.C, control.C, len(task.train.labels), len(task.validation.labels), accuracy.get("cue"),
                      interval(boot["cue"]) if "cue" in boot else None, mismatched)


# --------------------------------------------------------------------------- command line


def write_outputs(results: ProbeResults, output_dir) -> list[str]:
    """results.json, table.md and the plots, written to a temporary folder first and then moved into
    ``output_dir``: a failure leaves no half-written output."""
    output_dir = Path(output_dir)
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=output_dir.parent, prefix=f".{output_dir.name}.") as staging:
        staging = Path(staging)
        (staging / "results.json").write_text(json.dumps(results.to_dict(), indent=2) + "\n")
        summary = "\n".join(f"- {line}" for line in results.summary())
        agreement = results.agreement_table()
        agreement = agreement and f"## Subject-verb agreement across an attractor\n\n{agreement}\n"
        (staging / "table.md").write_text(f"# Linear probes per layer\n\n{results.table()}\n{agreement}"
                                          f"## Which layer holds each property\n\n{results.best_layers_table()}\n"
                                          f"{summary}\n")
        names = ["results.json", "table.md", *results.plot(staging)]
        output_dir.mkdir(exist_ok=True)
        for name in names:
            shutil.move(staging / name, output_dir / name)
    return names


def main(args: argparse.Namespace) -> int:
    for option in ("train_sentences", "validation_sentences", "bootstrap_samples"):
        value = getattr(args, option)
        if value is not None and value < 1:
            print(f"hf-lineage analyze probes: error: --{option.replace('_', '-')} must be >= 1", file=sys.stderr)
            return 2
    try:
        results = run_probes(args.models, args.properties, args.train_sentences, args.validation_sentences,
                             args.grid, args.seed, args.bootstrap_samples, args.sentence_vector)
    except ValueError as error:
        print(f"hf-lineage analyze probes: error: {error}", file=sys.stderr)
        return 2
    names = write_outputs(results, args.output_dir)
    print("\n".join(results.summary()))
    print(f"wrote {', '.join(names)} to {args.output_dir}")
    return 0


__all__ = ["LEVELS", "PROPERTIES", "SENTENCE_PROPERTIES", "LabelledWords", "Probe", "ProbeResults", "ProbeScore",
           "agreement_prefixes", "bin_label", "bootstrap_accuracies", "control_labels", "fit_probe",
           "labelled_words", "layer_features", "layer_names", "load_probing_sample", "majority_baseline",
           "run_probes", "sentence_label", "sentence_vectors"]
