"""AllenNLP / bilm-tf ELMo weights (``options.json`` + ``weights.hdf5``) → ``LineageElmoModel``.

    >>> from hf_lineage.convert.allennlp_elmo import load_allennlp_elmo
    >>> model, tokenizer = load_allennlp_elmo("elmo_options.json", "elmo_weights.hdf5",
    ...                                       vocab_file="vocab.txt")     # doctest: +SKIP
    >>> model.save_pretrained("elmo-original"); tokenizer.save_pretrained("elmo-original")   # doctest: +SKIP

``weights.hdf5`` is what bilm-tf's ``dump_weights`` writes (and what AllenNLP's ``Elmo`` reads): every trainable
TensorFlow variable except the softmax, under its variable name without the ``lm/`` scope. Shapes use
E = character embedding size, n_i = filters of width w_i, F = Σ n_i, P = projection size, C = LSTM cells,
I = the LSTM layer's input size (P for every layer):

=================================================  ======================  =====================================
dataset                                            shape                   meaning
=================================================  ======================  =====================================
``char_embed``                                     (261, E)                row c: character id c (bytes 0-255,
                                                                           <S> 256, </S> 257, begin-of-word 258,
                                                                           end-of-word 259, padding 260)
``CNN/W_cnn_{i}``                                  (1, w_i, E, n_i)        conv2d kernel over (1, chars)
``CNN/b_cnn_{i}``                                  (n_i,)
``CNN_high_{k}/W_carry``, ``W_transform``          (F, F)                  used as x @ W
``CNN_high_{k}/b_carry``, ``b_transform``          (F,)
``CNN_proj/W_proj``, ``CNN_proj/b_proj``           (F, P), (P,)            only when F != P
``RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/W_0``  (I + P, 4C)             d = 0 forward, 1 backward; l layer;
                                                                           [x; h] @ W_0, gates i, j, f, o
``.../LSTMCell/B``                                 (4C,)                   TensorFlow adds forget_bias = 1.0 to
                                                                           the f gate at run time (not stored)
``.../LSTMCell/W_P_0``                             (C, P)                  the output projection
=================================================  ======================  =====================================

The conversion (the same as AllenNLP's ``_ElmoCharacterEncoder`` / ``ElmoLstm.load_weights``): a zero row is put
before ``char_embed`` (id 0 = padding, every character id +1); conv kernels become (n_i, E, w_i); dense matrices
are transposed; ``W_0`` is split into ``weight_ih`` (first I rows) and ``weight_hh``, with the gate blocks
reordered from TensorFlow's (i, j, f, o) to PyTorch's (i, f, g, o), the same for the bias, which also gets the
forget bias of 1 added; ``bias_hh`` is zero. Highways keep bilm-tf's form (see ``LineageElmoHighway``), so their
weights need only a transpose.

``options.json`` has a ``char_cnn`` section (``embedding.dim``, ``filters``, ``activation``, ``n_highway``,
``max_characters_per_token``, ``n_characters``) and an ``lstm`` section (``dim``, ``projection_dim``,
``n_layers``, ``cell_clip``, ``proj_clip``, ``use_skip_connections``); see ``configuration_lineage_elmo``.

``release(sources, max_vocab)`` is ``hf-lineage convert elmo SOURCE...`` (``hf_lineage.convert.releases``): one of
AllenNLP's named releases (``small``, ``medium``, ``original``, ``5.5B``; downloaded once into the cache), the two
files ``OPTIONS WEIGHTS`` (paths or URLs), or a folder holding them, each optionally followed by bilm-tf's
``vocab.txt``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from ..models import LineageElmoConfig, LineageElmoModel, LineageElmoTokenizerFast


def config_from_options(options: dict, **overrides) -> LineageElmoConfig:
    """The ``LineageElmoConfig`` of a bilm-tf ``options.json`` (already parsed)."""
    cnn, lstm = options.get("char_cnn"), options.get("lstm")
    if cnn is None or lstm is None:
        raise ValueError("options.json must have 'char_cnn' and 'lstm' sections (a character-input biLM)")
    if not lstm.get("use_skip_connections"):
        raise ValueError("Only biLMs with residual connections (lstm.use_skip_connections) are supported, as in "
                         "AllenNLP")
    fields = dict(
        use_char_inputs=True,
        # 261 characters + the padding row (bilm-tf's training options say 261, AllenNLP's released ones 262).
        n_characters=max(262, cnn.get("n_characters", 262)),
        max_characters_per_token=cnn.get("max_characters_per_token", 50),
        char_embedding_size=cnn["embedding"]["dim"],
        char_cnn_filters=[list(f) for f in cnn["filters"]],
        char_cnn_activation=cnn.get("activation", "relu"),
        n_highway=cnn.get("n_highway") or 0,
        lstm_cell_size=lstm["dim"],
        projection_size=lstm["projection_dim"],
        num_lstm_layers=lstm.get("n_layers", 1),
        cell_clip=lstm.get("cell_clip"),
        proj_clip=lstm.get("proj_clip"),
        use_skip_connections=True,
        dropout=options.get("dropout", 0.1),
    )
    if "n_tokens_vocab" in options:
        fields["vocab_size"] = options["n_tokens_vocab"]
    return LineageElmoConfig(**{**fields, **overrides})


def _tf_gates_to_torch(array: np.ndarray, C: int) -> np.ndarray:
    """Reorder gate blocks along axis 0 from TensorFlow's (i, j, f, o) to PyTorch's (i, f, g=j, o)."""
    i, j, f, o = (array[k * C : (k + 1) * C] for k in range(4))
    return np.concatenate([i, f, j, o], axis=0)


def state_dict_from_hdf5(weights, config: LineageElmoConfig) -> dict[str, torch.Tensor]:
    """``LineageElmoModel`` parameter names → tensors, from an open ``h5py.File`` (or a dict of the same layout)."""

    def get(name):
        try:
            return np.asarray(weights[name][...], dtype=np.float32)
        except KeyError:
            raise ValueError(f"weights.hdf5 has no dataset {name!r}; is it a bilm-tf/AllenNLP ELMo file?") from None

    sd = {}
    prefix = "bilm.char_encoder."
    char_embed = get("char_embed")
    sd[prefix + "char_embedding.weight"] = np.concatenate([np.zeros((1, char_embed.shape[1]), np.float32),
                                                            char_embed])
    for i in range(len(config.char_cnn_filters)):
        sd[prefix + f"convs.{i}.weight"] = np.transpose(get(f"CNN/W_cnn_{i}").squeeze(0), (2, 1, 0))
        sd[prefix + f"convs.{i}.bias"] = get(f"CNN/b_cnn_{i}")
    for k in range(config.n_highway):
        for part in ("carry", "transform"):
            sd[prefix + f"highways.{k}.{part}.weight"] = get(f"CNN_high_{k}/W_{part}").T
            sd[prefix + f"highways.{k}.{part}.bias"] = get(f"CNN_high_{k}/b_{part}")
    if sum(n for _, n in config.char_cnn_filters) != config.projection_size:
        sd[prefix + "projection.weight"] = get("CNN_proj/W_proj").T
        sd[prefix + "projection.bias"] = get("CNN_proj/b_proj")

    C, P = config.lstm_cell_size, config.projection_size
    for d, direction in enumerate(("forward", "backward")):
        for layer in range(config.num_lstm_layers):
            cell = f"RNN_{d}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
            name = f"bilm.{direction}_layers.{layer}."
            kernel = _tf_gates_to_torch(get(cell + "W_0").T, C)  # (4C, I + P)
            input_size = kernel.shape[1] - P
            sd[name + "weight_ih_l0"] = kernel[:, :input_size]
            sd[name + "weight_hh_l0"] = kernel[:, input_size:]
            bias = _tf_gates_to_torch(get(cell + "B"), C)
            bias[C : 2 * C] += 1.0  # TensorFlow's forget_bias, added at run time there
            sd[name + "bias_ih_l0"] = bias
            sd[name + "bias_hh_l0"] = np.zeros_like(bias)
            if P < C:
                sd[name + "weight_hr_l0"] = get(cell + "W_P_0").T
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()}


_MISMATCH = "weights.hdf5 does not match options.json: "


def load_allennlp_elmo(options_file, weight_file, vocab_file=None, **config_overrides):
    """``LineageElmoModel`` (eval mode) with the weights of a bilm-tf/AllenNLP ELMo; with ``vocab_file`` (bilm-tf's
    one-word-per-line vocabulary) also returns the matching ``LineageElmoTokenizerFast``.

    ``config_overrides`` set other config fields (``num_output_representations``, ``do_layer_norm``, task fields,
    ``vocab_size`` ...). The model is ``stateful`` unless ``stateful=False`` is given: like AllenNLP's ``Elmo``, each
    row's LSTM states carry over from one batch to the next, so the features of a sentence depend on what the same
    row of the batches before it read (``model.reset_states()`` starts afresh). The file has no softmax:
    ``LineageElmoForPreTraining`` built from the result gets a new one.
    """
    import h5py

    with open(options_file, encoding="utf-8") as f:
        options = json.load(f)
    tokenizer = None
    if vocab_file is not None:
        tokenizer = LineageElmoTokenizerFast(vocab_file, max_characters_per_token=options["char_cnn"].get(
            "max_characters_per_token", 50))
        config_overrides = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id,
                            "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
                            **config_overrides}
    config = config_from_options(options, **{"stateful": True, **config_overrides})
    model = LineageElmoModel(config)
    with h5py.File(weight_file, "r") as weights:
        state_dict = state_dict_from_hdf5(weights, config)
    expected = {k: v.shape for k, v in model.state_dict().items() if not k.startswith("scalar_mixes.")}
    missing = sorted(set(expected) - set(state_dict))
    wrong = [f"{k}: file {tuple(v.shape)}, model {tuple(expected[k])}" for k, v in state_dict.items()
             if k in expected and v.shape != expected[k]]
    if missing or wrong:
        problems = ([f"missing {missing}"] if missing else []) + ([f"shape mismatches {wrong}"] if wrong else [])
        raise ValueError(f"{_MISMATCH}{', '.join(problems)}")
    model.load_state_dict(state_dict, strict=False)  # the scalar mixes keep their initial (equal) weights
    model.eval()
    return (model, tokenizer) if vocab_file is not None else model


# --------------------------------------------------------------------------- hf-lineage convert elmo

CITATION = """\
@inproceedings{peters-etal-2018-deep,
    title = "Deep Contextualized Word Representations",
    author = "Peters, Matthew E. and Neumann, Mark and Iyyer, Mohit and Gardner, Matt and Clark, Christopher and
              Lee, Kenton and Zettlemoyer, Luke",
    booktitle = "Proceedings of the 2018 Conference of the North American Chapter of the Association for
                 Computational Linguistics: Human Language Technologies, Volume 1 (Long Papers)",
    month = jun,
    year = "2018",
    address = "New Orleans, Louisiana",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/N18-1202",
    doi = "10.18653/v1/N18-1202",
    pages = "2227--2237",
}
"""

# What each named release was trained on (AllenNLP's ELMo page, https://allenai.org/allennlp/software/elmo).
_ONE_BILLION = (800_000_000, "the 1B Word Benchmark's training set, about 0.8 B words (Chelba et al. 2013), read "
                             "for 10 epochs (Peters et al. 2018, §3.4)")
TRAINED_ON = {
    "small": _ONE_BILLION,
    "medium": _ONE_BILLION,
    "original": _ONE_BILLION,
    "5.5B": (5_500_000_000, "5.5 B tokens: English Wikipedia (1.9 B) and all of the WMT 2008-2012 monolingual news "
                            "crawl (3.6 B) (AllenNLP's ELMo page; the architecture of 'original')"),
}
# The minimal vocabulary of a release without one (AllenNLP's biLMs ship none): the specials, in the ids the lineage
# config defaults to (<pad>=0, <UNK>=1, <S>=2, </S>=3). Every word is <UNK> to it; the model reads the characters.
SPECIALS = ["<pad>", "<UNK>", "<S>", "</S>"]


def release(sources: list[str], max_vocab: int | None = None):
    """``hf-lineage convert elmo SOURCE...``: AllenNLP's ELMo as a ``Release`` (``hf_lineage.convert.releases``).

    ``sources`` is one of

    * ``[NAME]`` — a named release (``small``, ``medium``, ``original``, ``5.5B``), its two files downloaded from
      AllenNLP's storage into the cache (``registry.families.ELMO_RELEASES``, ELMo's ``named_releases``);
    * ``[OPTIONS, WEIGHTS]`` — the options JSON and the weights HDF5 (paths or URLs);
    * ``[FOLDER]`` — a folder holding one ``*options*.json`` and one ``*weights*.hdf5`` (and perhaps one
      ``vocab*.txt``);

    each optionally followed by bilm-tf's one-word-per-line vocabulary (``vocab.txt``), which becomes the
    tokenizer's word ids. Without one the tokenizer holds only ``<pad> <UNK> <S> </S>``: every word's id is
    ``<UNK>``'s, and the model reads its characters, which is all AllenNLP's biLMs read. The saved model is
    stateless (see ``NOTES``). Every problem is a ``ConversionError`` naming the file.
    """
    from ..registry.families import ELMO_RELEASES
    from .releases import Release
    from .sources import ConversionError

    options_file, weights_file, vocab_file, name, source = _resolve(list(sources), ELMO_RELEASES)
    options = _read_options(options_file)
    if vocab_file is not None:
        try:
            tokenizer = LineageElmoTokenizerFast(str(vocab_file), max_characters_per_token=options["char_cnn"].get(
                "max_characters_per_token", 50))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise ConversionError(f"{vocab_file}: not a vocabulary of one word per line ({error})") from None
    else:
        tokenizer = LineageElmoTokenizerFast(vocab=SPECIALS, max_characters_per_token=options["char_cnn"].get(
            "max_characters_per_token", 50))
    model = _read_weights(options_file, weights_file, tokenizer)
    if name is None:
        # Files named as a named release's (elmo_2x1024_128_2048cnn_1xhighway_weights.hdf5): the same training data.
        name = next((n for n, (_, url) in ELMO_RELEASES.items() if url.rsplit("/", 1)[-1] == weights_file.name), None)
    words_seen, words_seen_from = TRAINED_ON.get(name, (None, ""))
    return Release(model=model, tokenizer=tokenizer, source=source, license="apache-2.0", citation=CITATION,
                   words_seen=words_seen, words_seen_from=words_seen_from,
                   no_sentence_probability="an AllenNLP ELMo release holds the biLM without its softmax, so its "
                   "language models give no probability of a word",
                   notes=NOTES + (VOCABULARY_NOTE if vocab_file is not None else NO_VOCABULARY_NOTE))


NOTES = """\
### Tokenization

The tokenizer gives AllenNLP's character ids (its `ELMoCharacterMapper`, bilm-tf's `UnicodeCharsVocabulary`): text
is split on whitespace (ELMo's corpora are pre-tokenized), each word is its UTF-8 bytes between begin- and end-of-word
markers in 50 slots (longer words keep their first 48 bytes), `<S>` and `</S>` are one special character each, and
every id is shifted by 1 so that 0 is padding. Each sentence is wrapped in `<S> ... </S>` as the biLM was trained;
the outputs keep those two positions (AllenNLP strips them).

### State across batches

AllenNLP's `Elmo` carries each row's LSTM states from one batch to the next, so a sentence's features depend on
what the same row of the batches before it read (AllenNLP advises warming the states up on a few batches). This
folder is saved **stateless** (`stateful: false`): every batch starts from zero states, so a sentence's features are
the same whatever was read before it, which fine-tuning on shuffled batches of unrelated sentences needs. On the
first batch both agree. For AllenNLP's behaviour batch after batch, load it with
`AutoModel.from_pretrained(folder, stateful=True)` (and `model.reset_states()` to start afresh).

### Not included

The release holds the biLM alone: no softmax (bilm-tf does not dump it), so `AutoModelForPreTraining` and
`AutoModelForCausalLM` start with a new, untrained one. The scalar mixes keep their initial equal weights; they
train with the task, as in AllenNLP.
"""
NO_VOCABULARY_NOTE = """
The release ships no vocabulary, so the tokenizer holds only `<pad> <UNK> <S> </S>`: every word's `input_ids` entry
is `<UNK>`'s, and its characters, which are all the biLM reads, carry the word.
"""
VOCABULARY_NOTE = """
The tokenizer's word ids are those of the vocabulary file given with the release (bilm-tf's `vocab.txt`); the
biLM itself reads only the characters.
"""


def _resolve(sources: list[str], releases: dict):
    """(options, weights, vocab or None, release name or None, what the card names as the source) of the
    command's sources."""
    from .sources import ConversionError, local_file

    usage = ("give a named release (small, medium, original, 5.5B), OPTIONS.json WEIGHTS.hdf5, or a folder holding "
             "both, each optionally followed by a vocab.txt")
    if not 1 <= len(sources) <= 3:
        raise ConversionError(f"elmo takes 1 to 3 sources, got {len(sources)} ({' '.join(map(str, sources))}): "
                              f"{usage}")
    first = str(sources[0])
    name = next((n for n in releases if n.lower() == first.lower()), None) if not Path(first).exists() else None
    if name is not None or Path(first).is_dir():
        if len(sources) > 2:
            raise ConversionError(f"elmo {first}: a named release or a folder takes at most a vocabulary after it, "
                                  f"got {len(sources) - 1} more sources")
        vocab = local_file(sources[1]) if len(sources) == 2 else None
        if name is not None:
            options_url, weights_url = releases[name]
            options, weights = local_file(options_url), local_file(weights_url)
            source = f"AllenNLP ELMo {name} ({options_url}, {weights_url})"
        else:
            folder = Path(first)
            options, weights = _one_file(folder, "*options*.json"), _one_file(folder, "*weights*.hdf5")
            if vocab is None and list(folder.glob("vocab*.txt")):
                vocab = _one_file(folder, "vocab*.txt")
            source = f"{folder.name}/{options.name} + {weights.name}"
        return options, weights, vocab, name, source + (f" + {vocab.name}" if vocab is not None else "")
    if len(sources) == 1:
        raise ConversionError(f"{first}: not a named release, a folder, nor two files; {usage}")
    options, weights = local_file(sources[0]), local_file(sources[1])
    vocab = local_file(sources[2]) if len(sources) == 3 else None
    # As the user named each: a URL whole, a path by its file name.
    source = " + ".join(str(s) if str(s).startswith(("http://", "https://")) else Path(s).name for s in sources)
    return options, weights, vocab, None, source


def _one_file(folder: Path, pattern: str) -> Path:
    from .sources import ConversionError

    found = sorted(p for p in folder.glob(pattern) if p.is_file())
    if len(found) != 1:
        raise ConversionError(f"{folder}: needs exactly one {pattern} file, found "
                              f"{', '.join(p.name for p in found) if found else 'none'}")
    return found[0]


def _read_options(path: Path) -> dict:
    """The options, checked to describe a character-input biLM this package can build."""
    from .sources import ConversionError

    try:
        options = json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConversionError(f"{path}: not a bilm-tf options JSON file ({type(error).__name__}: {error})") from None
    try:
        if not isinstance(options, dict):
            raise ValueError("options.json must be a JSON object")
        config_from_options(options)
    except (KeyError, TypeError, ValueError) as error:
        what = f"lacks {error}" if isinstance(error, KeyError) else str(error)
        raise ConversionError(f"{path}: not usable as ELMo options: {what}") from None
    return options


def _read_weights(options_file: Path, weights_file: Path, tokenizer):
    """The stateless ``LineageElmoModel`` with the weights of ``weights_file``, its word ids the tokenizer's."""
    import h5py

    from .sources import ConversionError

    if not h5py.is_hdf5(weights_file):
        raise ConversionError(f"{weights_file}: not an HDF5 file (bilm-tf's dump_weights writes one)")
    specials = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id,
                "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id}
    try:
        return load_allennlp_elmo(options_file, weights_file, stateful=False, **specials)
    except OSError as error:  # h5py's: a truncated or damaged file
        raise ConversionError(f"{weights_file}: cannot be read as HDF5, truncated or damaged? "
                              f"({' '.join(str(error).split())})") from None
    except ValueError as error:
        message = str(error)
        if message.startswith(_MISMATCH):  # named as the user named them, the details last (they may be long)
            message = f"does not match {Path(options_file).name}: {message[len(_MISMATCH):]}"
        raise ConversionError(f"{weights_file}: {message}") from None


__all__ = ["CITATION", "config_from_options", "load_allennlp_elmo", "release", "state_dict_from_hdf5"]
