"""What each layer learns: layer-wise linear probes with a control task (``hf-lineage analyze probes``).

For every layer of a saved model — static vectors (NNLM's table C, word2vec's input vectors) count as one layer,
ELMo has three (the character-based token layer and two biLSTM layers), GPT and BERT one per transformer layer plus
the embeddings — the frozen per-word vectors feed a linear classifier (scikit-learn's ``LogisticRegression`` on
standardised features, a fixed seed, C chosen on a dev split carved from the training sentences, then refit on all
of them) that predicts a word property:

* ``upos``   — the universal part-of-speech tag of every word (17 labels);
* ``number`` — Sing/Plur of every noun;
* ``tense``  — Past/Pres of every finite verb or auxiliary.

The words come from the embedded probing sample (UD English EWT, CC BY-SA 4.0: ``hf_lineage/samples/analysis/README.md``).
A word's vector is ``ContextualVectors``' (the mean over its sub-tokens for BERT's WordPiece and GPT's BPE); for
the static families it is the input-embedding row of the word (the ``<unk>`` row for a word outside the vocabulary).

Accuracy alone does not say whether the representation encodes the property or the probe memorised words: each
(family, layer, property) also gets the **control task** of Hewitt & Liang (2019) — every word *type* gets a random
label drawn from the property's label distribution (a fixed seed), and the same probe is trained on those labels.
**Selectivity** = accuracy − control accuracy. A **majority baseline** (each word type's most frequent training
label; unseen words get the most frequent label) says how far word identity alone goes. Every number has a 95 %
bootstrap interval over validation sentences (selectivity paired: the same resampled sentences for both)::

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
from ..registry import word_vector_model_types
from ..contextual import ContextualVectors

PROPERTIES = {
    "upos": "universal part-of-speech tag of every word",
    "number": "Sing/Plur of every noun (UPOS NOUN)",
    "tense": "Past/Pres of every finite verb or auxiliary",
}
# Model types whose words have one vector whatever the sentence: probed through their input embeddings.
STATIC_MODEL_TYPES = word_vector_model_types()  # the registry's: read as WordVectors, input embeddings
C_GRID = (0.01, 0.1, 1.0, 10.0)
DEV_FRACTION = 0.2  # of the training sentences, for choosing C
BOOTSTRAP_SAMPLES = 1000


# --------------------------------------------------------------------------- the probing sample


def load_probing_sample(split: str, sentences: int | None = None) -> list[dict]:
    """The first ``sentences`` (all when None) of the embedded ``probing.{split}.jsonl``: ``tokens``, ``upos`` and
    for ``number``/``tense`` a list of (word position, label) for the words that carry the property."""
    if split not in ("train", "validation"):
        raise ValueError(f"split must be 'train' or 'validation', got {split!r}")
    text = (_samples.ANALYSIS / f"probing.{split}.jsonl").read_text(encoding="utf-8")
    records = [json.loads(line) for line in text.splitlines()]
    return records if sentences is None else records[:sentences]


@dataclass
class LabelledWords:
    """The words of some sentences that carry one property: each one's sentence, position, form and label."""

    sentence: np.ndarray
    position: np.ndarray
    words: list[str]
    labels: np.ndarray


def labelled_words(records: list[dict], prop: str) -> LabelledWords:
    if prop not in PROPERTIES:
        raise ValueError(f"unknown property {prop!r}; known: {', '.join(PROPERTIES)}")
    rows = []
    for s, record in enumerate(records):
        pairs = enumerate(record["upos"]) if prop == "upos" else record[prop]
        rows += [(s, p, record["tokens"][p], label) for p, label in pairs]
    sentence, position, words, labels = zip(*rows) if rows else ((), (), (), ())
    return LabelledWords(np.array(sentence, dtype=int), np.array(position, dtype=int), list(words),
                         np.array(labels, dtype=object))


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
    first, unit = ("token", "biLSTM") if family_of(model) == "elmo" else ("embeddings", "layer")
    return [first] + [f"{unit} {i}" for i in range(1, count)]


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
        """Per model and property, the layer with the highest accuracy and the one with the highest selectivity."""
        best = []
        for name in self.models:
            for prop in self.settings["properties"]:
                rows = [s for s in self.scores if s.model == name and s.property == prop]
                if rows:
                    top, selective = max(rows, key=lambda s: s.accuracy), max(rows, key=lambda s: s.selectivity)
                    best.append({"model": name, "property": prop, "accuracy_layer": top.layer_name,
                                 "accuracy": top.accuracy, "selectivity_layer": selective.layer_name,
                                 "selectivity": selective.selectivity})
        return best

    def table(self) -> str:
        """A markdown table, one row per (model, layer, property)."""
        def cell(value, bounds):
            return f"{value:.3f} [{bounds[0]:.3f}, {bounds[1]:.3f}]"

        lines = ["| model | layer | property | accuracy | control | selectivity | majority baseline | C |",
                 "|---|---|---|---|---|---|---|---|"]
        for s in self.scores:
            lines.append(f"| {s.model} | {s.layer} ({s.layer_name}) | {s.property} | "
                         f"{cell(s.accuracy, s.accuracy_interval)} | {cell(s.control_accuracy, s.control_interval)} | "
                         f"{cell(s.selectivity, s.selectivity_interval)} | {cell(s.majority, s.majority_interval)} | "
                         f"{s.C:g} |")
        return "\n".join(lines) + "\n"

    def summary(self) -> list[str]:
        """One sentence per model: the best layer for each property."""
        sentences = []
        for name in self.models:
            parts = [f"{b['property']} at {b['accuracy_layer']} (accuracy {b['accuracy']:.3f}; most selective: "
                     f"{b['selectivity_layer']}, {b['selectivity']:.3f})" for b in self.best_layers()
                     if b["model"] == name]
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
        _errorbars(left, x, values, bounds, color=color, label=prop)
        if rows:
            left.axhline(rows[0].majority, color=color, linestyle=":", linewidth=1)
        x, values, bounds, _ = _series(results, name, prop, "selectivity")
        _errorbars(right, x, values, bounds, color=color, label=prop)
    left.set(title="accuracy (dotted: majority baseline)", ylabel="accuracy", ylim=(0, 1))
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
        axes[0, column].set(title=prop, ylim=(0, 1))
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
               bootstrap_samples: int = BOOTSTRAP_SAMPLES) -> ProbeResults:
    """Probe every layer of every model on every property.

    ``models``: saved folders, or (model, tokenizer) pairs. ``train_sentences``/``validation_sentences``: how many
    sentences of the embedded sample to use (default: all, 1,000 and 400). ``grid``: the C values tried on the dev
    split. The control labels and the majority baseline depend on the words only, so they are the same for every
    model."""
    unknown = [p for p in properties if p not in PROPERTIES]
    if unknown or not properties:
        raise ValueError(f"unknown properties {unknown}; known: {', '.join(PROPERTIES)}")
    if not models:
        raise ValueError("no models given")
    loaded = [load_model(m) if isinstance(m, (str, Path)) else m for m in models]
    train, validation = load_probing_sample("train", train_sentences), load_probing_sample("validation",
                                                                                          validation_sentences)
    tasks = {prop: _property_task(train, validation, prop, seed) for prop in properties}
    names = model_names([family_of(model) for model, _ in loaded])
    scores, described = [], {}
    for name, (model, tokenizer), source in zip(names, loaded, models):
        layers = layer_names(model, tokenizer)
        described[name] = {"family": family_of(model), "path": str(source) if isinstance(source, (str, Path))
                           else None, "layers": layers}
        train_features = layer_features(model, tokenizer, train)
        validation_features = layer_features(model, tokenizer, validation)
        for layer, layer_name in enumerate(layers):
            for prop, task in tasks.items():
                scores.append(_probe_layer(task, train_features[layer], validation_features[layer],
                                           (name, family_of(model), layer, layer_name, prop), grid, seed,
                                           bootstrap_samples))
    settings = {"properties": list(properties), "train_sentences": len(train), "validation_sentences":
                len(validation), "C_grid": list(grid), "dev_fraction": DEV_FRACTION, "seed": seed,
                "bootstrap_samples": bootstrap_samples,
                "pooling": "mean over a word's sub-tokens (BERT WordPiece, GPT BPE); static families: the word's "
                           "input-embedding row",
                "data": "UD English EWT (CC BY-SA 4.0), hf_lineage/samples/analysis"}
    return ProbeResults(scores, described, settings)


@dataclass
class _PropertyTask:
    train: LabelledWords
    validation: LabelledWords
    control_train: np.ndarray
    control_validation: np.ndarray
    majority_correct: np.ndarray


def _property_task(train, validation, prop, seed) -> _PropertyTask:
    train_words, validation_words = labelled_words(train, prop), labelled_words(validation, prop)
    if not len(train_words.labels) or not len(validation_words.labels):
        raise ValueError(f"no {prop} labels in the sample's first sentences: use more sentences")
    control = control_labels(train_words.words + validation_words.words, train_words.labels, seed)
    majority = majority_baseline(train_words.words, train_words.labels, validation_words.words)
    return _PropertyTask(train_words, validation_words, np.array([control[w] for w in train_words.words]),
                         np.array([control[w] for w in validation_words.words]),
                         majority == validation_words.labels)


def _probe_layer(task, train_features, validation_features, where, grid, seed, samples) -> ProbeScore:
    x_train, x_validation = gather(train_features, task.train), gather(validation_features, task.validation)
    probe = fit_probe(x_train, task.train.labels, task.train.sentence, grid, seed)
    control = fit_probe(x_train, task.control_train, task.train.sentence, grid, seed)
    correct = {"accuracy": probe.predict(x_validation) == task.validation.labels.astype(str),
               "control": control.predict(x_validation) == task.control_validation,
               "majority": task.majority_correct}
    boot = bootstrap_accuracies(correct, task.validation.sentence, samples, seed)
    accuracy = {name: float(values.mean()) for name, values in correct.items()}
    return ProbeScore(*where, accuracy["accuracy"], interval(boot["accuracy"]), accuracy["control"],
                      interval(boot["control"]), accuracy["accuracy"] - accuracy["control"],
                      interval(boot["accuracy"] - boot["control"]), accuracy["majority"], interval(boot["majority"]),
                      probe.C, control.C, len(task.train.labels), len(task.validation.labels))


# --------------------------------------------------------------------------- command line


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    add = parser.add_argument
    add("--models", nargs="+", required=True, metavar="FOLDER", help="saved model folders (any lineage family, or "
        "a transformers encoder that returns hidden_states)")
    add("--properties", nargs="+", default=list(PROPERTIES), choices=list(PROPERTIES), metavar="PROPERTY",
        help=f"what to probe for: {', '.join(PROPERTIES)} (default: all)")
    add("--train-sentences", type=int, metavar="N", help="training sentences of the probing sample (default: all 1,000)")
    add("--validation-sentences", type=int, metavar="N", help="validation sentences (default: all 400)")
    add("--C", type=float, nargs="+", default=list(C_GRID), dest="grid", metavar="C",
        help="inverse regularisation strengths tried on the dev split (default: %(default)s)")
    add("--bootstrap-samples", type=int, default=BOOTSTRAP_SAMPLES, metavar="N",
        help="bootstrap resamples of the validation sentences (default: %(default)s)")
    add("--seed", type=int, default=0, help="seed of the probes, the control labels and the bootstrap")
    add("--output-dir", required=True, help="where results.json, table.md and the PNG plots go")
    return parser


def write_outputs(results: ProbeResults, output_dir) -> list[str]:
    """results.json, table.md and the plots, written to a temporary folder first and then moved into
    ``output_dir``: a failure leaves no half-written output."""
    output_dir = Path(output_dir)
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=output_dir.parent, prefix=f".{output_dir.name}.") as staging:
        staging = Path(staging)
        (staging / "results.json").write_text(json.dumps(results.to_dict(), indent=2) + "\n")
        summary = "\n".join(f"- {line}" for line in results.summary())
        (staging / "table.md").write_text(f"# Linear probes per layer\n\n{results.table()}\n{summary}\n")
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
                             args.grid, args.seed, args.bootstrap_samples)
    except ValueError as error:
        print(f"hf-lineage analyze probes: error: {error}", file=sys.stderr)
        return 2
    names = write_outputs(results, args.output_dir)
    print("\n".join(results.summary()))
    print(f"wrote {', '.join(names)} to {args.output_dir}")
    return 0


__all__ = ["PROPERTIES", "LabelledWords", "Probe", "ProbeResults", "ProbeScore", "add_arguments",
           "bootstrap_accuracies", "control_labels", "fit_probe", "labelled_words", "layer_features", "layer_names",
           "load_probing_sample", "majority_baseline", "run_probes"]
