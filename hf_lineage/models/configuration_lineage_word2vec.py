"""Configuration of lineage word2vec (Mikolov et al., 2013, "Efficient Estimation of Word Representations in Vector
Space" and "Distributed Representations of Words and Phrases and their Compositionality").

Field names are gensim 4's ``Word2Vec`` arguments (``vector_size``, ``window``, ``negative``, ``hs``, ``sample``,
``ns_exponent``, ``cbow_mean``, ``min_count``, ``alpha``, ``min_alpha``, ``epochs``), with ``architecture`` in place
of gensim's ``sg`` flag, so a gensim model maps onto this config field by field. The model type is
``lineage-word2vec``.
"""

from typing import ClassVar

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig

from .configuration_lineage_utils import (
    CheckedSizesMixin,
    NamedSizesMixin,
    RegisteredPipelinesMixin,
    TaskHeadConfigMixin,
    check_task_fields,
)

ARCHITECTURES = ("skipgram", "cbow")


@strict
class LineageWord2VecConfig(RegisteredPipelinesMixin, NamedSizesMixin, CheckedSizesMixin, TaskHeadConfigMixin,
                            PreTrainedConfig):
    r"""
    Named configurations::

        >>> from hf_lineage import LineageWord2VecConfig
        >>> LineageWord2VecConfig.from_named("gensim", vocab_size=30000)       # gensim 4 / C tool defaults (CBOW)
        >>> LineageWord2VecConfig.from_named("mikolov2013", vocab_size=30000)  # the NIPS paper's skip-gram NEG-5
        >>> LineageWord2VecConfig.from_named("tiny", vocab_size=100)

    ``architecture`` is ``"skipgram"`` (each context word predicts the centre word) or ``"cbow"`` (the sum or, with
    ``cbow_mean``, the mean of the context vectors predicts the centre word). The output layer is negative sampling
    with ``negative`` noise words drawn from the unigram distribution raised to ``ns_exponent``, hierarchical
    softmax over a Huffman tree (``hs=True``), or both (their updates add up, as in the C tool).

    The vocabulary counts that the Huffman tree and the noise distribution are built from are not config fields:
    they are the ``word_counts`` buffer of ``LineageWord2VecForPreTraining`` (see there) and the tokenizer's
    ``word_counts``.
    """

    model_type = "lineage-word2vec"
    # Cited in model cards (not a field: never written to config.json).
    paper = ("Mikolov et al. (2013), Efficient Estimation of Word Representations in Vector Space "
             "(https://arxiv.org/abs/1301.3781) and Distributed Representations of Words and Phrases and their "
             "Compositionality (https://arxiv.org/abs/1310.4546).")
    # Trainer leaves the cache (a decoder's or the LSTM language model's, under either name) out of predictions.
    keys_to_ignore_at_inference: ClassVar[list[str]] = ["past_key_values", "cache"]
    named_sizes: ClassVar[dict] = {
        # For tests and laptops: every code path, a handful of weights per word.
        "tiny": dict(vector_size=16, window=3, negative=3, min_count=1, epochs=1),
        # gensim 4's Word2Vec() defaults, which are the C tool's (CBOW, 100 dimensions, window 5, NEG-5,
        # sample 1e-3, 5 epochs) except alpha: the C tool starts CBOW at 0.05, gensim at 0.025.
        "gensim": dict(architecture="cbow", vector_size=100, window=5, negative=5, hs=False, sample=1e-3,
                       ns_exponent=0.75, cbow_mean=True, min_count=5, alpha=0.025, min_alpha=0.0001, epochs=5),
        # Mikolov et al. (2013b), section 4: skip-gram, 300 dimensions, context size 5, NEG-5 from U(w)^(3/4)/Z
        # (section 2.2), sub-sampling threshold 1e-5 (section 2.3), words seen fewer than 5 times discarded.
        # The paper does not state the learning rate or the number of passes: those keep the C tool's defaults.
        "mikolov2013": dict(architecture="skipgram", vector_size=300, window=5, negative=5, hs=False, sample=1e-5,
                            ns_exponent=0.75, min_count=5),
    }

    vocab_size: int = 30000
    vector_size: int = 100
    architecture: str = "skipgram"
    # Largest distance between the centre word and a context word; each centre word draws its own window
    # uniformly from 1..window (the C tool's "dynamic window", which weights near words more).
    window: int = 5
    negative: int = 5
    hs: bool = False
    # Frequent-word subsampling threshold t: a word of corpus frequency f is kept with probability
    # (sqrt(f / t) + 1) · t / f (the C tool's formula). 0 turns subsampling off.
    sample: float | int = 1e-3
    ns_exponent: float | int = 0.75
    cbow_mean: bool = True
    # Used when the vocabulary is built (words seen fewer times are dropped from the corpus, as by gensim).
    min_count: int = 5
    # The learning rate decays linearly from alpha to min_alpha over all words of all epochs.
    alpha: float | int = 0.025
    min_alpha: float | int = 0.0001
    epochs: int = 5
    # Downstream: keep the pretrained vectors fixed (feature-based use) or fine-tune them with the task.
    freeze_vectors: bool = False

    # The word-level tokenizer's specials: <pad>=0 <unk>=1 <s>=2 </s>=3.
    pad_token_id: int | None = 0
    bos_token_id: int | None = 2
    eos_token_id: int | list[int] | None = 3
    # Input and output vectors are two different matrices; nothing is tied.
    tie_word_embeddings: bool = False

    def check_sizes(self):
        """Reject settings the model cannot be trained with, with a ValueError that names the field."""
        for name in ("vocab_size", "vector_size", "window", "epochs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)}")
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {self.architecture!r}")
        if self.negative < 0:
            raise ValueError(f"negative must be >= 0 (0 turns negative sampling off), got {self.negative}")
        if self.negative == 0 and not self.hs:
            raise ValueError("negative=0 and hs=False leave no output layer: set negative > 0, hs=True, or both")
        if self.sample < 0:
            raise ValueError(f"sample must be >= 0 (0 turns subsampling off), got {self.sample}")
        if self.min_count < 0:
            raise ValueError(f"min_count must be >= 0, got {self.min_count}")
        if not self.alpha > 0:
            raise ValueError(f"alpha (the initial learning rate) must be > 0, got {self.alpha}")
        if not 0 <= self.min_alpha <= self.alpha:
            raise ValueError(f"min_alpha must be in [0, alpha={self.alpha}], got {self.min_alpha}")
        check_task_fields(self)


__all__ = ["LineageWord2VecConfig"]
