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
"""

from __future__ import annotations

import json

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
        raise ValueError(f"weights.hdf5 does not match options.json: missing {missing}, shape mismatches {wrong}")
    model.load_state_dict(state_dict, strict=False)  # the scalar mixes keep their initial (equal) weights
    model.eval()
    return (model, tokenizer) if vocab_file is not None else model


__all__ = ["config_from_options", "load_allennlp_elmo", "state_dict_from_hdf5"]
