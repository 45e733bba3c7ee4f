"""Polysemy: one word in several senses, seen by every family (``hf-lineage analyze polysemy``).

A static family (NNLM, word2vec) gives "play" one vector whatever the sentence; a contextual one (ELMo, GPT, BERT)
gives every occurrence its own, and if it has learned the senses, occurrences of one sense lie closer together than
occurrences of different senses. For each word, model and layer this module reports:

* the mean cosine similarity between occurrences of the same sense (``within``), between occurrences of different
  senses (``across``) and ``difference = within - across`` (0 for a static family: every occurrence is one vector);
* each occurrence's nearest other occurrences, and how often the nearest has the same sense (``nn_agreement``, ties
  shared out, next to ``chance``, what a random neighbour would give); for a static family, the word's nearest
  words in the vocabulary;
* a 2-D PCA (scikit-learn) of the unit-length occurrence vectors, plotted coloured by sense (matplotlib).

Layers: static families (NNLM, word2vec, the count-based svd) have one (``"static"``, the input embeddings); ELMo
has its character-based token layer and each biLSTM layer (its scalar mix is left out: a pretrained biLM's mix
weights are still at their initial, equal values, so it is only the average of the layers); GPT, BERT and other
transformers encoders have the embeddings and each layer's output (``hidden_states``). A word split into sub-words
gets the mean of its sub-words' states (see ``hf_lineage.vectors.contextual.ContextualVectors``, which computes every
contextual vector here)::

    >>> from hf_lineage.analysis.polysemy import analyze_polysemy, load_sentences
    >>> result = analyze_polysemy(["out/word2vec", "out/bert"], load_sentences(words=["play", "bank"]))  # doctest: +SKIP
    >>> print(result.markdown())                                                        # doctest: +SKIP
    >>> result.plot("play.png", word="play")                                            # doctest: +SKIP
    >>> json.dumps(result.to_dict())                                                    # doctest: +SKIP

The shipped sentences (``hf_lineage/samples/analysis/polysemy.jsonl``, written for this project, Apache-2.0) hold six words (play, bank,
spring, match, light, record) with two or three senses each and six or seven sentences per sense (83 in all).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from .. import samples as _samples
from ..registry import hidden_layer_names, word_vector_model_types

SENTENCES = _samples.ANALYSIS / "polysemy.jsonl"
STATIC_MODEL_TYPES = word_vector_model_types()  # the registry's: read as WordVectors, input embeddings
TIE_TOLERANCE = 1e-6  # cosines this close count as a tie between nearest neighbours


# --------------------------------------------------------------------------- sentences


@dataclass(frozen=True)
class SenseSentence:
    """One sentence (whitespace-separated words) in which ``word`` is used in ``sense``."""

    word: str
    sense: str
    sentence: str


def load_sentences(path: str | Path | None = None, words: list[str] | None = None) -> list[SenseSentence]:
    """The sense-labelled sentences of ``path`` (JSON lines ``{"word", "sense", "sentence"}``; the shipped set by
    default), only those of ``words`` when given. Raises ValueError for a malformed line, a sentence without its
    word, a word the file does not hold, or a word with fewer than two senses."""
    path = Path(path) if path is not None else SENTENCES
    if not path.is_file():
        raise ValueError(f"{path}: no such sentence file")
    rows = [_sense_sentence(path, number, line)
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if line.strip()]
    if words is not None:
        unknown = sorted(set(words) - {row.word for row in rows})
        if unknown:
            raise ValueError(f"{path} has no sentences for {unknown}; it has {sorted({r.word for r in rows})}")
        rows = [row for row in rows if row.word in words]
    if not rows:
        raise ValueError(f"{path} holds no sentences")
    for word in dict.fromkeys(row.word for row in rows):
        _check_senses(path, word, Counter(row.sense for row in rows if row.word == word))
    return rows


def _check_senses(path: Path, word: str, senses: Counter) -> None:
    """Within-sense similarity needs two sentences of a sense, across-sense similarity two senses."""
    if len(senses) < 2:
        raise ValueError(f"{path}: {word!r} has one sense ({next(iter(senses))!r}); polysemy needs two or more")
    lonely = sorted(sense for sense, n in senses.items() if n < 2)
    if lonely:
        raise ValueError(f"{path}: {word!r} has one sentence for the senses {lonely}; each sense needs two or more")


def _sense_sentence(path: Path, number: int, line: str) -> SenseSentence:
    try:
        row = json.loads(line)
        sentence = SenseSentence(str(row["word"]), str(row["sense"]), str(row["sentence"]))
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ValueError(f"{path}:{number}: expected a JSON object with word, sense and sentence ({error})") from None
    if sentence.word not in sentence.sentence.split():
        raise ValueError(f"{path}:{number}: {sentence.word!r} is not one of the sentence's whitespace-separated "
                         f"words: {sentence.sentence!r}")
    return sentence


# --------------------------------------------------------------------------- numbers


@dataclass
class SenseSimilarity:
    within: float  # mean cosine between two occurrences of the same sense
    across: float  # mean cosine between occurrences of different senses
    nn_agreement: float  # share of occurrences whose nearest other occurrence has their sense (ties shared out)
    chance: float  # the same share for a neighbour drawn at random

    @property
    def difference(self) -> float:
        return self.within - self.across


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    from sklearn.metrics.pairwise import cosine_similarity

    return cosine_similarity(np.asarray(vectors, dtype=np.float64))


def sense_similarity(vectors: np.ndarray, senses: list[str]) -> SenseSimilarity:
    """Within- and across-sense cosine of ``vectors`` (N, D), one per occurrence, labelled ``senses``; each sense
    needs two occurrences (else ``within`` has no pair) and there must be two senses."""
    labels = np.asarray(senses)
    if len(set(senses)) < 2 or min(np.unique(labels, return_counts=True)[1]) < 2:
        raise ValueError(f"need two or more senses with two or more occurrences each, got {sorted(senses)}")
    return _similarity(cosine_matrix(vectors), labels)


def _similarity(cosine: np.ndarray, labels: np.ndarray) -> SenseSimilarity:
    same = labels[:, None] == labels[None, :]
    other = ~np.eye(len(labels), dtype=bool)
    return SenseSimilarity(within=float(cosine[same & other].mean()), across=float(cosine[~same].mean()),
                           nn_agreement=_nearest_agreement(cosine, same, other),
                           chance=float(((same & other).sum(1) / other.sum(1)).mean()))


def _nearest_agreement(cosine: np.ndarray, same: np.ndarray, other: np.ndarray) -> float:
    """Mean over occurrences of the same-sense share among their nearest others: a static family's ties (every
    cosine is 1) then score chance rather than whatever order a sort leaves them in."""
    scores = np.where(other, cosine, -np.inf)
    nearest = scores >= scores.max(axis=1, keepdims=True) - TIE_TOLERANCE
    return float(((nearest & same).sum(1) / nearest.sum(1)).mean())


def permutation_p_values(layers: list[WordLayer], permutations: int = 1000, seed: int = 0) -> dict[str, float]:
    """How often senses shuffled within each word give a mean (over ``layers``' words) ``difference`` and
    ``nn_agreement`` at least as large as the real senses: ``(1 + hits) / (1 + permutations)``, one-sided. With a
    few sentences per sense a 1-NN share well above chance can still be luck; this says how likely."""
    rng = np.random.default_rng(seed)
    cosines = [cosine_matrix(layer.vectors) for layer in layers]
    observed = [np.mean([getattr(layer.similarity, key) for layer in layers]) for key in ("difference",
                                                                                         "nn_agreement")]
    hits = np.zeros(2)
    for _ in range(permutations):
        shuffled = [_similarity(c, rng.permutation(layer.senses)) for c, layer in zip(cosines, layers)]
        null = [np.mean([s.difference for s in shuffled]), np.mean([s.nn_agreement for s in shuffled])]
        hits += np.asarray(null) >= np.asarray(observed) - TIE_TOLERANCE
    p = (1 + hits) / (1 + permutations)
    return {"p_difference": float(p[0]), "p_nn_agreement": float(p[1])}


def nearest_occurrences(vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
    """For each occurrence, its ``k`` nearest other occurrences as (index, cosine), most similar first."""
    cosine = cosine_matrix(vectors)
    np.fill_diagonal(cosine, -np.inf)
    order = np.argsort(-cosine, axis=1, kind="stable")[:, :k]
    return [[(int(j), float(cosine[i, j])) for j in row] for i, row in enumerate(order)]


def project(vectors: np.ndarray) -> np.ndarray:
    """(N, 2) PCA of the unit-length vectors (cosine is what the numbers compare); all zeros when every occurrence
    is the same vector, as for a static family, where PCA has no direction to find."""
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import normalize

    unit = normalize(np.asarray(vectors, dtype=np.float64))
    if np.ptp(unit, axis=0).max() < TIE_TOLERANCE:
        return np.zeros((len(unit), 2))
    coordinates = PCA(n_components=min(2, *unit.shape)).fit_transform(unit)
    return np.pad(coordinates, ((0, 0), (0, 2 - coordinates.shape[1])))


# --------------------------------------------------------------------------- models


@dataclass
class ModelSource:
    """A loaded model: static families as ``WordVectors``, the others as model and tokenizer."""

    name: str
    family: str
    path: str
    word_vectors: object = None
    model: object = None
    tokenizer: object = None

    @property
    def static(self) -> bool:
        return self.word_vectors is not None

    @cached_property
    def layer_names(self) -> list[str]:
        if self.static:
            return ["static"]
        return hidden_layer_names(self.model.config.model_type, _hidden_state_count(self.model, self.tokenizer))


def load_model(path: str | Path, name: str | None = None) -> ModelSource:
    """A saved lineage (or transformers) model folder; ValueError when it is not one."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from ..vectors import WordVectors

    folder = Path(path)
    if not (folder / "config.json").is_file():
        raise ValueError(f"{folder}: not a saved model folder (no config.json); give the folder `hf-lineage "
                         "pretrain` wrote, e.g. out/bert")
    try:
        model_type = AutoConfig.from_pretrained(folder).model_type
    except (ValueError, OSError, KeyError) as error:
        raise ValueError(f"{folder}: transformers cannot read its config.json ({error})") from None
    family = model_type.removeprefix("lineage-")
    source = ModelSource(name or family, family, str(folder))
    try:
        if model_type in STATIC_MODEL_TYPES:
            source.word_vectors = WordVectors.from_pretrained(folder)
        else:
            source.model = AutoModel.from_pretrained(folder).eval()
            source.tokenizer = AutoTokenizer.from_pretrained(folder)
    except OSError as error:
        raise ValueError(f"{folder}: cannot load the {family} model or its tokenizer ({error})") from None
    return source


def _hidden_state_count(model, tokenizer) -> int:
    import torch

    model = getattr(model, "base_model", model)  # as ContextualVectors reads it
    batch = tokenizer(["a"], return_tensors="pt").to(next(model.parameters()).device)
    with torch.no_grad():
        output = model(**batch, output_hidden_states=True, return_dict=True)
    if getattr(output, "hidden_states", None) is None:
        raise ValueError(f"{type(model).__name__} returns no hidden_states, so it has no layers to compare")
    return len(output.hidden_states)


# --------------------------------------------------------------------------- results


@dataclass
class WordLayer:
    """One model's vectors of one word at one layer, and what they show."""

    model: str
    layer: str
    word: str
    sentence_index: list[int]  # per occurrence: its sentence in ``PolysemyResult.sentences``
    senses: list[str]  # per occurrence
    vectors: np.ndarray  # (occurrences, D)
    similarity: SenseSimilarity
    neighbours: list[list[tuple[int, float]]]  # per occurrence: nearest other occurrences (index, cosine)
    projection: np.ndarray  # (occurrences, 2)
    vocabulary_neighbours: list[tuple[str, float]] | None = None  # static families: nearest words

    def to_dict(self) -> dict:
        return {
            "model": self.model, "layer": self.layer, "word": self.word,
            "within": self.similarity.within, "across": self.similarity.across,
            "difference": self.similarity.difference, "nn_agreement": self.similarity.nn_agreement,
            "chance": self.similarity.chance,
            "occurrences": [
                {"sentence": s, "sense": sense, "projection": point.tolist(),
                 "neighbours": [{"occurrence": j, "sentence": self.sentence_index[j], "sense": self.senses[j],
                                 "cosine": cosine} for j, cosine in near]}
                for s, sense, point, near in zip(self.sentence_index, self.senses, self.projection, self.neighbours)],
            "vocabulary_neighbours": self.vocabulary_neighbours,
        }


@dataclass
class PolysemyResult:
    """Every (model, layer, word) of one analysis. ``to_dict()`` for JSON (the vectors themselves stay out: they
    are in ``layers[i].vectors``), ``markdown()`` for the tables, ``plot()`` / ``plot_summary()`` for figures."""

    sentences: list[SenseSentence]
    models: list[dict]  # name, family, path, static
    layers: list[WordLayer]
    skipped: list[str] = field(default_factory=list)  # why some (model, word) pairs have no numbers
    permutations: int = 1000  # label shuffles behind the p-values of ``summary()``
    _summary: list[dict] | None = field(default=None, repr=False)  # computed once: the shuffles take a moment

    @property
    def words(self) -> list[str]:
        return list(dict.fromkeys(s.word for s in self.sentences))

    def model_layers(self) -> list[tuple[str, str]]:
        return list(dict.fromkeys((r.model, r.layer) for r in self.layers))

    def summary(self) -> list[dict]:
        """Per (model, layer): the numbers averaged over the words it has (each word weighs the same)."""
        if self._summary is None:
            self._summary = [self._summary_row(model, layer) for model, layer in self.model_layers()]
        return self._summary

    def _summary_row(self, model: str, layer: str) -> dict:
        found = [r for r in self.layers if (r.model, r.layer) == (model, layer)]
        return {"model": model, "layer": layer, "words": len(found),
                **{key: float(np.mean([getattr(r.similarity, key) for r in found]))
                   for key in ("within", "across", "difference", "nn_agreement", "chance")},
                **permutation_p_values(found, self.permutations)}

    def to_dict(self) -> dict:
        return {"sentences": [vars(s) for s in self.sentences], "models": self.models, "summary": self.summary(),
                "layers": [r.to_dict() for r in self.layers], "skipped": self.skipped}

    def markdown(self) -> str:
        lines = ["| model | layer | words | within | across | difference | p | 1-NN same sense | chance | p |",
                 "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['model']} | {r['layer']} | {r['words']} | {r['within']:.3f} | {r['across']:.3f} | "
                  f"{_signed(r['difference'])} | {r['p_difference']:.3f} | {r['nn_agreement']:.2f} | "
                  f"{r['chance']:.2f} | {r['p_nn_agreement']:.3f} |" for r in self.summary()]
        shuffles = self.permutations
        lines += ["", f"p: (1 + shuffles of the senses within each word that do as well) / (1 + {shuffles} shuffles)."]
        lines += ["", "Difference (within − across) per word:", "",
                  "| model | layer | " + " | ".join(self.words) + " |", "|---|---|" + "---:|" * len(self.words)]
        for model, layer in self.model_layers():
            by_word = {r.word: r.similarity.difference for r in self.layers if (r.model, r.layer) == (model, layer)}
            cells = [_signed(by_word[w]) if w in by_word else "—" for w in self.words]
            lines.append(f"| {model} | {layer} | " + " | ".join(cells) + " |")
        lines += [f"\n- {note}" for note in self.skipped]
        return "\n".join(lines) + "\n"

    def plot(self, path: str | Path, word: str | None = None) -> None:
        """One PNG for ``word`` (the first word by default): a row per model, a panel per layer, each occurrence a
        point of the layer's PCA, coloured by sense."""
        word = word or self.words[0]
        if word not in self.words:
            raise ValueError(f"{word!r} is not one of this result's words {self.words}")
        models = list(dict.fromkeys(m for m, _ in self.model_layers()))
        found = {(r.model, r.layer): r for r in self.layers if r.word == word}
        columns = max(len([1 for m, _ in self.model_layers() if m == model]) for model in models)
        figure, axes = _figure(len(models), columns, panel=(2.4, 2.2), header=0.7)
        senses = list(dict.fromkeys(s.sense for s in self.sentences if s.word == word))
        colours = {sense: f"C{i}" for i, sense in enumerate(senses)}
        for row, model in enumerate(models):
            layers = [layer for m, layer in self.model_layers() if m == model]
            for column in range(columns):
                axis = axes[row][column]
                if column >= len(layers) or (model, layers[column]) not in found:
                    axis.set_axis_off()
                    continue
                _scatter(axis, found[(model, layers[column])], colours)
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], marker="o", linestyle="", color=c, label=s) for s, c in colours.items()]
        figure.legend(handles=handles, loc="upper center", ncol=len(colours), title=f'"{word}"', frameon=False)
        figure.savefig(path, dpi=90)

    def plot_summary(self, path: str | Path) -> None:
        """One PNG, a bar per (model, layer) averaged over the words (dots: each word): within − across cosine on
        top, the nearest occurrence's same-sense share below, with chance as a tick."""
        rows, pairs = self.summary(), self.model_layers()
        figure, axes = _figure(2, 1, panel=(max(5.0, 0.75 * len(rows)), 2.4))
        for axis, key, label in ((axes[0][0], "difference", "within − across cosine"),
                                 (axes[1][0], "nn_agreement", "1-NN same sense")):
            axis.bar(range(len(rows)), [r[key] for r in rows], color="lightgray", edgecolor="gray")
            for x, pair in enumerate(pairs):
                values = [getattr(r.similarity, key) for r in self.layers if (r.model, r.layer) == pair]
                axis.plot([x] * len(values), values, "o", color="C0", markersize=3)
            axis.set_ylabel(label, fontsize=8)
            axis.set_xticks(range(len(rows)), [f"{m}\n{layer}" for m, layer in pairs], fontsize=7)
        axes[0][0].axhline(0, color="black", linewidth=0.6)
        axes[1][0].plot(range(len(rows)), [r["chance"] for r in rows], "_", color="C3", markersize=18,
                        label="chance")
        axes[1][0].legend(fontsize=7, loc="lower right")
        axes[0][0].set_title("Sense separation per layer (bars: mean over words; dots: words)", fontsize=9)
        figure.savefig(path, dpi=90)


def _signed(value: float) -> str:
    """+0.123; rounding noise of a static family's 0 (-1e-17) reads +0.000 rather than -0.000."""
    return f"{round(value, 3) + 0.0:+.3f}"


def _figure(rows: int, columns: int, panel: tuple[float, float], header: float = 0.0):
    """A figure of rows × columns panels, each ``panel`` inches, with ``header`` inches on top for a legend."""
    # A bare Figure renders with Agg: no display, no pyplot state.
    from matplotlib.figure import Figure

    height = panel[1] * rows + header
    figure = Figure(figsize=(panel[0] * columns, height), layout="constrained")
    figure.get_layout_engine().set(rect=(0, 0, 1, 1 - header / height))
    return figure, figure.subplots(rows, columns, squeeze=False)


def _scatter(axis, result: WordLayer, colours: dict[str, str]) -> None:
    senses = np.asarray(result.senses)
    for sense, colour in colours.items():
        points = result.projection[senses == sense]
        axis.scatter(points[:, 0], points[:, 1], s=14, color=colour, alpha=0.75)
    axis.set_title(f"{result.model} · {result.layer}\nwithin − across {result.similarity.difference:+.2f}",
                   fontsize=8)
    axis.set_xticks([])
    axis.set_yticks([])


# --------------------------------------------------------------------------- analysis


def analyze_polysemy(models: list, sentences: list[SenseSentence], k: int = 3,
                     permutations: int = 1000) -> PolysemyResult:
    """Every model's vectors for every occurrence of each word of ``sentences`` (see ``load_sentences``), per layer,
    with the numbers of the module docstring. ``models``: folders or ``ModelSource``s (``load_model``); ``k``:
    neighbours kept per occurrence; ``permutations``: sense shuffles behind the summary's p-values."""
    if not models:
        raise ValueError("give at least one model")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if permutations < 1:
        raise ValueError(f"permutations must be >= 1, got {permutations}")
    sources = _named([m if isinstance(m, ModelSource) else load_model(m) for m in models])
    result = PolysemyResult(list(sentences), [{"name": s.name, "family": s.family, "path": s.path,
                                               "static": s.static} for s in sources], [],
                            permutations=permutations)
    for source in sources:
        for word in result.words:
            _add_word(result, source, word, k)
    return result


def _named(sources: list[ModelSource]) -> list[ModelSource]:
    """Models of one family get their folder's position as a suffix (bert, bert-2) so that names stay unique."""
    seen: dict[str, int] = {}
    for source in sources:
        seen[source.name] = seen.get(source.name, 0) + 1
        if seen[source.name] > 1:
            source.name = f"{source.name}-{seen[source.name]}"
    return sources


def _add_word(result: PolysemyResult, source: ModelSource, word: str, k: int) -> None:
    indices = [i for i, s in enumerate(result.sentences) if s.word == word]
    texts = [result.sentences[i].sentence for i in indices]
    if source.static and word not in source.word_vectors:
        result.skipped.append(f"{source.name}: {word!r} is not in the vocabulary, so it has no vector")
        return
    for layer_index, layer in enumerate(source.layer_names):
        occurrence_sentence, vectors = _occurrence_vectors(source, layer_index, word, texts)
        sentence_index = [indices[i] for i in occurrence_sentence]
        senses = [result.sentences[i].sense for i in sentence_index]
        result.layers.append(WordLayer(
            source.name, layer, word, sentence_index, senses, vectors, sense_similarity(vectors, senses),
            nearest_occurrences(vectors, k), project(vectors),
            source.word_vectors.most_similar(word, topn=k) if source.static else None))


def _occurrence_vectors(source: ModelSource, layer: int, word: str, texts: list[str]):
    """(sentence of each occurrence in ``texts``, (occurrences, D) vectors); a word used twice in a sentence is
    two occurrences."""
    if source.static:
        found = [i for i, text in enumerate(texts) for w in text.split() if w == word]
        return found, np.repeat(source.word_vectors[word][None, :], len(found), axis=0)
    from ..vectors.contextual import ContextualVectors

    occurrences = ContextualVectors(source.model, source.tokenizer, layer=layer).word_vectors(word, texts)
    return occurrences.sentence_index, occurrences.vectors.numpy()


# --------------------------------------------------------------------------- command line


def main(args: argparse.Namespace) -> int:
    """Computes everything first and writes the files only once all of it worked, into a fresh folder moved into
    place, so that an error never leaves a half-written output folder."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()  # loading a pre-training checkpoint's base model lists its head
    transformers_logging.disable_progress_bar()
    try:
        result = analyze_polysemy(args.models, load_sentences(args.sentences, args.words), k=args.neighbours,
                                  permutations=args.permutations)
    except ValueError as error:
        print(f"hf-lineage analyze polysemy: error: {error}", file=sys.stderr)
        return 2
    output = Path(args.output_dir)
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=output.parent, prefix=f".{output.name}.") as staging:
        write_outputs(result, Path(staging))
        output.mkdir(exist_ok=True)
        for file in Path(staging).iterdir():
            shutil.move(file, output / file.name)
    print(result.markdown())
    print(f"wrote {output}/")
    return 0


def write_outputs(result: PolysemyResult, folder: Path) -> None:
    (folder / "results.json").write_text(json.dumps(result.to_dict(), indent=1) + "\n", encoding="utf-8")
    (folder / "summary.md").write_text("# Polysemy\n\n" + result.markdown(), encoding="utf-8")
    result.plot_summary(folder / "summary.png")
    for word in result.words:
        result.plot(folder / f"polysemy_{word}.png", word=word)


__all__ = ["ModelSource", "PolysemyResult", "SenseSentence", "SenseSimilarity", "WordLayer", "analyze_polysemy",
           "cosine_matrix", "load_model", "load_sentences", "nearest_occurrences", "permutation_p_values", "project",
           "sense_similarity"]
