"""Every fact about a family, in its one record: ``FAMILIES`` maps a family name to its ``Family``.

What the library knows (configuration, modeling and tokenizer classes, objective, CPU trainer, how it scores a
sentence with no task head, the task rules), what ``convert`` and ``pretrain --init-from`` know (its transformers
base, its release converter and published source, whether it can be continued), PEFT's LoRA targets, and what the
lineage experiment knows (``Family.lineage``: sizes per scale, budgets, learning rates, colours, its place in the
claims). Every other table of the package is derived from these records, so a new family is its models files plus
one entry here (docs/architecture.md, "Where to add a new family").

Plain data: this module imports nothing, so reading a record costs nothing at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TransformersBase:
    """transformers' own model of a family, which ``pretrain --init-from`` continues and ``convert`` reads, both
    through the family's converter module in ``hf_lineage.convert`` (``from_transformers`` / ``to_transformers``)."""

    model_type: str  # "bert"
    class_name: str  # "BertForPreTraining"
    name: str  # how messages name it: "BERT"
    example_id: str  # a Hub id messages give as an example: "google-bert/bert-base-uncased"
    converter: str  # its module in hf_lineage.convert: "bert"


@dataclass(frozen=True)
class PublishedRelease:
    """A family's entry in the standard set of published releases (``lineage --checkpoints published``)."""

    sources: tuple[str, ...]
    name: str  # "BERT-base, uncased"
    parameters: str  # "110 M", or the vectors' shape
    words: str  # what its paper says it read: "3.3 B words of BooksCorpus + English Wikipedia"
    license: str
    max_vocab: int | None = None  # --max-vocab used for it in the standard set


@dataclass(frozen=True)
class LineageFamily:
    """What the lineage experiment knows of a family (``Family.lineage``; BERT's ablations, which are experiments
    and not families, have their own in ``hf_lineage.lineage.settings``)."""

    label: str  # its name in the report and plots
    color: str  # its matplotlib colour in the plots
    objective: str  # what it pretrains on, in words, for the report
    # How its paper used the pretrained model downstream: static vectors and ELMo as fixed features under a task
    # model (ELMo: "we freeze the weights of the biLM"), GPT and BERT fine-tuned end to end. The main table shows
    # these cells. On generation the language model itself must learn the output format, so there the LMs (ELMo's
    # forward LM, GPT, BERT2BERT) are fine-tuned; the static-vector families keep fixed vectors under their own
    # LSTM decoder.
    main_variant: str
    generation_variant: str
    # Its place in the claims: "static" (a vector per word) or its own group in "static < ELMo < GPT < BERT";
    # "root" (PPMI-SVD) is static for "contextual beats static" but outside that ordering.
    claim_group: str
    # scale → (named config, config overrides, pretraining overrides)
    sizes: dict
    # scale → learning rate when the pretrained network is trained (fine-tuned or from scratch)
    finetune_learning_rate: dict
    # Its equal-time budget (the tiny scale's default): the corpus words it reads in ``TINY_EQUAL_TIME_SECONDS`` of
    # pretraining on ``REFERENCE_MACHINE`` (both in ``hf_lineage.lineage.settings``; measured with ``hf-lineage
    # lineage --budget-seconds``, whose results.json reports the words each family saw).
    equal_time_words: int
    # How a budget reaches its trainer: "steps" (the engine, sequences of the scale's length in the scale's batches),
    # "passes" (word2vec: whole passes with the learning rate decaying over them all, as the C tool and gensim),
    # "one pass" (svd: one counting pass and a factorisation; glove: one counting pass and its config's iterations
    # over the counts; no steps to budget).
    budget_unit: str = "steps"
    in_default_run: bool = True
    # One id per word and <unk> for every other word (the labeling diagnostics count the words outside it).
    word_level: bool = False
    # What its validation perplexity is: "causal" (exp of a next-token loss), "masked" (exp of the masked-LM loss),
    # "none" (not a language model: its validation loss is its own objective's, with no perplexity), or None (no
    # validation at all).
    perplexity: str | None = None
    # Its fine-tuned cells pick their learning rate from ``Scale.learning_rate_sweep`` on the dev split.
    sweep_learning_rate: bool = False
    # An ablation of a library family (BERT's, ``claim_group`` "ablation"): the registry family it is pretrained and
    # fine-tuned as (None: its own name), and the ``PretrainArguments`` it changes (its ``sizes`` the config).
    library_family: str | None = None
    pretrain_options: dict = field(default_factory=dict)
    # Its size as the report writes it, from a pretrained folder's config.json (``pretraining.describe_size``): (width
    # keys, layer keys, further keys), the first width and layer key present counting ("2 × 64"; no layer key: "64-d",
    # one vector per word), each further key present added by name (NNLM: "64-d, hidden 128").
    size_keys: tuple = (("vector_size",), (), ())
    # A language model of the grammar claim ("n-gram < NNLM < ELMo < GPT < BERT" on BLiMP), in lineage order.
    in_grammar_claim: bool = False
    # Its fine-tuning cells are among the slowest of their kind (ELMo's projected LSTMs have no oneDNN kernel): the
    # fine-tuning pool starts them early.
    slow_cells: bool = False
    # The report's reproducibility note when its CPU trainer ran on several threads (``{threads}``); "" when its
    # pretraining is deterministic.
    threads_note: str = ""


@dataclass(frozen=True)
class Family:
    """One family's record. Module names are in ``hf_lineage.models``; ``"module:Class"`` strings are read on first
    use, so registering a family imports only its configuration and modeling modules."""

    config: str  # "configuration_lineage_gpt:LineageGPTConfig"
    modeling: str  # "modeling_lineage_gpt", whose AUTO_CLASSES table names the classes
    objective: str  # its pre-training objective for the engine, "hf_lineage.objectives.gpt:GPTObjective"
    # The named size of its paper's configuration, what ``hf-lineage pretrain FAMILY`` trains unless ``--config`` says
    # otherwise (as ``BertConfig()`` is BERT-base and gensim's ``Word2Vec()`` the C tool's); ``tiny`` is for tests.
    paper_size: str
    # Its own CPU trainer, ``function(settled PretrainArguments, objective) -> output dir``, which ``pretrain()`` may
    # pick instead of the engine (``--backend``); imported only then (numba, scikit-learn).
    cpu_trainer: str | None = None
    # Its own tokenizer class (ELMo's also gives character ids) and that class's `tokenizers`-backed twin, which
    # AutoTokenizer returns; None: a `tokenizers` pipeline in the generic PreTrainedTokenizerFast, so a saved folder
    # loads anywhere.
    tokenizer: str | None = None
    fast_tokenizer: str | None = None
    # A left-to-right language model: its checkpoints ship a generation config and generate
    # (``AutoModelForCausalLM``, ``pipeline("text-generation")``). BERT's causal head only serves as the decoder of an
    # ``EncoderDecoderModel``, so BERT is not one.
    causal_lm: bool = False
    # Sequence labelling tags a word at its last token for a model that reads left to right (GPT, NNLM), else at its
    # first.
    labels_last_token: bool = False
    # Generation can continue a left-padded batch of prompts (ELMo's forward LSTM reads padding as input: its prompts
    # are generated in groups of equal length instead).
    left_padding: bool = True
    # One vector per word of a word-level vocabulary, whatever the sentence (NNLM, word2vec, svd, glove): the analyses
    # read its input embeddings as ``WordVectors`` (``word_vector_model_types``).
    word_vectors: bool = False
    # GPT's task input transformations (Radford et al. 2018, fig. 1): start, delimiter and extract tokens added to
    # the vocabulary when fine-tuning on sentence pairs and question answering.
    task_tokens: bool = False
    # Its task heads are ``modeling_lineage_static.py``'s: its word features (fixed or trained) → a task encoder (a
    # BiLSTM by default) → classifier, which is also what a distillation's BiLSTM student is (``--student bilstm:``).
    static_task_heads: bool = False
    # Its sequence classifier reads a sentence pair either as one sequence, its paper's way, or each sentence alone
    # (the recipes' --pair_encoding cross|siamese: GPT, BERT); the others always read each sentence alone.
    pair_as_one_sequence: bool = False
    # How ``hf-lineage evaluate minimal-pairs`` and the lineage's zero-shot stage score a sentence with no task head
    # (``minimal_pairs.scorers.SCORERS``): "masked" (pseudo-log-likelihood), "elmo" (its two directions); unset, a
    # causal LM's left-to-right log-probability (``causal_lm``) or none. A folder of a word-vector family without a
    # language-model head has none either way.
    sentence_scoring: str | None = None
    # What its hidden states are called, the first (the input layer) and the rest (numbered from 1): ELMo's are its
    # character-CNN token layer and its biLSTM layers.
    layer_words: tuple[str, str] = ("embeddings", "layer")
    # transformers' own model of the family, continued by ``--init-from`` and read by ``convert``; None: none.
    transformers_base: TransformersBase | None = None
    # ``hf-lineage convert``: the converter of its paper's published release (``"module:function"`` in
    # hf_lineage.convert, ``function(sources, max_vocab) -> Release``), or why there is none (``no_release``); its
    # entry in the standard set (``published``); and releases the converter knows by name (ELMo's AllenNLP files).
    release_converter: str | None = None
    no_release: str = ""
    published: PublishedRelease | None = None
    named_releases: dict = field(default_factory=dict)
    # Why ``pretrain --init-from`` cannot continue it ("" when it can).
    not_continuable: str = ""
    # PEFT's default LoRA targets for its model type (what ``LoraConfig()`` without ``target_modules`` adapts).
    lora_targets: tuple[str, ...] = ()
    # What the lineage experiment knows of it; None: the lineage does not run it.
    lineage: LineageFamily | None = None

    @property
    def head_free_scoring(self) -> str | None:
        """``sentence_scoring``, or "causal" for a causal LM, or None."""
        return self.sentence_scoring or ("causal" if self.causal_lm else None)


# Sizes: tiny gives representations of ~64 dimensions for every family, learning rates raised for few steps (the
# papers' rates are for millions of steps). Small and base follow the papers more closely and expect a real corpus and
# a GPU: base is the papers' sizes (BERT base, GPT, ELMo original, 300-d word2vec) except NNLM, widened to 512
# dimensions because its paper's 30-100 would be no comparison. The task models of the static families and ELMo
# (LSTMs trained from scratch on top) need a larger fine-tuning step than the pretrained Transformers.
#
# The tiny scale's budget is equal pretraining time, fixed as the corpus words each family reads in that time on the
# reference machine, so that a run is reproducible and the budget means the same on every machine. word2vec's was
# lowered from 70M when two default runs spent 67 s and 80 s on it, against the others' 49-51 s; 45M then took 26-35
# s. Its speed on the shared reference machine varies up to threefold from run to run. Its skip-gram kernel then
# became about 3x faster (pWord2Vec's shared negatives): 45M took 15 s of training on 2026-11-26 while NNLM, ELMo, GPT
# and BERT took 59-92 s on the same (slower) machine, so it was raised to 200M (about 67 s there). svd always counts
# over the whole corpus once (the method has no steps or passes to budget); its entry is that pass over the embedded
# sample, which takes about 5 s.
TRANSFORMER_SMALL = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 1024}
TRANSFORMER_SMALL_TRAINING = {"learning_rate": 5e-4, "warmup_ratio": 0.02}
TRANSFORMER_SIZE_KEYS = (("hidden_size",), ("num_hidden_layers",), ())
_STATIC_RATES = {"tiny": 1e-2, "small": 1e-3, "base": 1e-3}
_TRANSFORMER_LORA = ("query", "value")  # PEFT's for transformers' BERT; lineage GPT's self-attention uses the same

_ELMO = "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo/"
# AllenNLP's ELMo releases by name: hf-lineage convert elmo small|medium|original|5.5B.
ELMO_RELEASES = {
    name: (f"{_ELMO}{stem}/elmo_{stem}_options.json", f"{_ELMO}{stem}/elmo_{stem}_weights.hdf5")
    for name, stem in {"small": "2x1024_128_2048cnn_1xhighway", "medium": "2x2048_256_2048cnn_1xhighway",
                       "original": "2x4096_512_2048cnn_2xhighway",
                       "5.5B": "2x4096_512_2048cnn_2xhighway_5.5B"}.items()
}

# In lineage order: the count-based root (PPMI-SVD, Levy et al. 2015) first.
FAMILIES = {
    "svd": Family(
        "configuration_lineage_svd:LineageSvdConfig", "modeling_lineage_svd", "hf_lineage.objectives.svd:SvdObjective",
        "levy2015", cpu_trainer="hf_lineage.word_vector_trainers.svd:pretrain_svd", causal_lm=True, word_vectors=True,
        static_task_heads=True,
        no_release="PPMI-SVD (Levy, Goldberg & Dagan 2015) has no published vectors; build them with `hf-lineage "
        "pretrain svd`",
        not_continuable="svd's vectors are a factorisation of one corpus's whole co-occurrence counts: there are no "
        "weights to take further steps from; factorise the combined corpus instead",
        # Not in the default run: its vectors take seconds, but its fine-tuning cells would add minutes to a default
        # budget that is already full.
        lineage=LineageFamily(
            "PPMI-SVD", "tab:purple", "PPMI of window counts, truncated SVD (no training steps)", "frozen", "frozen",
            "root", sizes={"tiny": ("levy2015", {"vector_size": 64, "min_count": 2}, {}),
                           "small": ("levy2015", {"vector_size": 256}, {}), "base": ("levy2015", {}, {})},
            finetune_learning_rate=_STATIC_RATES, equal_time_words=598_000, budget_unit="one pass",
            in_default_run=False, word_level=True)),
    "nnlm": Family(
        "configuration_lineage_nnlm:LineageNNLMConfig", "modeling_lineage_nnlm",
        "hf_lineage.objectives.nnlm:NNLMObjective", "mlp1", causal_lm=True, labels_last_token=True, word_vectors=True,
        static_task_heads=True,
        no_release="Bengio et al. (2003) published no trained model; pretrain one with `hf-lineage pretrain nnlm`",
        lineage=LineageFamily(
            "NNLM", "tab:brown", "next word from the n-1 previous (causal LM)", "frozen", "frozen", "static",
            sizes={"tiny": ("tiny", {"embedding_size": 64, "hidden_size": 128, "context_size": 4}, {}),
                   "small": ("mlp1", {"embedding_size": 256, "hidden_size": 512}, {}),
                   "base": ("mlp1", {"embedding_size": 512, "hidden_size": 1024, "context_size": 5}, {})},
            finetune_learning_rate=_STATIC_RATES, equal_time_words=380_000, word_level=True, perplexity="causal",
            size_keys=(("embedding_size",), (), ("hidden_size",)), in_grammar_claim=True)),
    "word2vec": Family(
        "configuration_lineage_word2vec:LineageWord2VecConfig", "modeling_lineage_word2vec",
        "hf_lineage.objectives.word2vec:Word2VecObjective", "mikolov2013",
        cpu_trainer="hf_lineage.word_vector_trainers.word2vec:pretrain_word2vec", causal_lm=True, word_vectors=True,
        static_task_heads=True,
        release_converter="word2vec:release",
        published=PublishedRelease(("fse/word2vec-google-news-300",), "GoogleNews-vectors-negative300",
                                   "3 M words × 300, the first 200,000 kept", "about 100 B words of Google News",
                                   "apache-2.0", max_vocab=200_000),
        not_continuable="word2vec's vocabulary, word counts, Huffman tree and noise distribution are all made from "
        "the corpus it starts on, and continuing on new text would need them rebuilt (gensim's "
        "build_vocab(update=True)), which neither of its trainers does; train it on the combined corpus instead",
        lineage=LineageFamily(
            "word2vec", "tab:olive", "skip-gram/CBOW, negative sampling", "frozen", "frozen", "static",
            sizes={"tiny": ("tiny", {"vector_size": 64, "window": 5, "negative": 5, "min_count": 2}, {}),
                   "small": ("gensim", {"vector_size": 256}, {}), "base": ("mikolov2013", {}, {})},
            finetune_learning_rate=_STATIC_RATES, equal_time_words=200_000_000, budget_unit="passes", word_level=True,
            perplexity="none",
            # Only a run that pretrains trains word2vec (on a GPU machine the engine does, deterministically).
            threads_note="Not reproducible: word2vec's CPU trainer updates its vectors from {threads} threads without "
            "locks (Hogwild, as word2vec.c and gensim do), so its vectors, and the word2vec cells, differ slightly "
            "from run to run (in two default runs on the reference machine the understanding scores moved by at most "
            "0.011). Every other number is identical for the same arguments and seed; on one CPU word2vec is too.")),
    "glove": Family(
        "configuration_lineage_glove:LineageGloveConfig", "modeling_lineage_glove",
        "hf_lineage.objectives.glove:GloveObjective", "pennington2014",
        cpu_trainer="hf_lineage.word_vector_trainers.glove:pretrain_glove", causal_lm=True, word_vectors=True,
        static_task_heads=True,
        release_converter="glove:release",
        published=PublishedRelease(("stanfordnlp/glove/glove.6B.zip#glove.6B.300d.txt",), "glove.6B.300d",
                                   "400 k words × 300, the first 200,000 kept",
                                   "6 B tokens of Wikipedia 2014 + Gigaword 5", "pddl", max_vocab=200_000),
        not_continuable="glove is made by its own CPU trainer alone, which starts from nothing (its counts, then "
        "AdaGrad's state over them); train it on the combined corpus instead",
        # Not in the default run, as svd: the count-based rival of word2vec, run when named (``--families ... glove``).
        lineage=LineageFamily(
            "GloVe", "tab:pink", "weighted least squares on log co-occurrence counts (AdaGrad)", "frozen", "frozen",
            "static", sizes={"tiny": ("pennington2014", {"vector_size": 64, "min_count": 2, "epochs": 25}, {}),
                             "small": ("pennington2014", {"vector_size": 256, "epochs": 50}, {}),
                             "base": ("pennington2014", {}, {})},
            finetune_learning_rate=_STATIC_RATES, equal_time_words=598_000, budget_unit="one pass",
            in_default_run=False, word_level=True)),
    "elmo": Family(
        "configuration_lineage_elmo:LineageElmoConfig", "modeling_lineage_elmo",
        "hf_lineage.objectives.elmo:ElmoObjective", "original",
        tokenizer="tokenization_lineage_elmo:LineageElmoTokenizer",
        fast_tokenizer="tokenization_lineage_elmo:LineageElmoTokenizerFast", causal_lm=True, left_padding=False,
        static_task_heads=True,
        sentence_scoring="elmo", layer_words=("token", "biLSTM"), release_converter="allennlp_elmo:release",
        named_releases=ELMO_RELEASES,
        # The paper's own size (Peters et al. 2018's 93.6 M biLM): frozen only on a CPU, which fits the published
        # run's hour there (docs/published.md, "Time and memory"; the small release's 13.6 M would be fine-tuned too).
        published=PublishedRelease(ELMO_RELEASES["original"], "AllenNLP's ELMo original", "93.6 M parameters",
                                   "about 0.8 B words of the 1B Word Benchmark", "apache-2.0"),
        lineage=LineageFamily(
            "ELMo", "tab:green", "forward + backward LM (train: sum, validation: mean)", "frozen", "finetuned", "elmo",
            # No cell/projection clipping at the smaller sizes: the LSTMs then run fused (bilm-tf's clipping needs a
            # per-step loop).
            sizes={"tiny": ("tiny", {"lstm_cell_size": 128, "projection_size": 32, "cell_clip": None,
                                     "proj_clip": None}, {}),
                   "small": ("small", {"projection_size": 128, "cell_clip": None, "proj_clip": None}, {}),
                   "base": ("original", {}, {})},
            finetune_learning_rate={"tiny": 3e-3, "small": 1e-3, "base": 1e-3}, equal_time_words=280_000,
            perplexity="causal", size_keys=(("projection_size", "lstm_cell_size"), ("num_lstm_layers",), ()),
            in_grammar_claim=True, slow_cells=True)),
    "gpt": Family(
        "configuration_lineage_gpt:LineageGPTConfig", "modeling_lineage_gpt", "hf_lineage.objectives.gpt:GPTObjective",
        "gpt", causal_lm=True, labels_last_token=True, task_tokens=True, pair_as_one_sequence=True,
        transformers_base=TransformersBase("openai-gpt", "OpenAIGPTLMHeadModel", "OpenAI GPT",
                                           "openai-community/openai-gpt", "gpt"),
        release_converter="gpt:release",
        published=PublishedRelease(("openai-community/openai-gpt",), "OpenAI GPT", "117 M parameters",
                                   "about 0.8 B words of BooksCorpus", "mit"),
        lora_targets=_TRANSFORMER_LORA,
        lineage=LineageFamily(
            "GPT", "tab:blue", "causal LM", "finetuned", "finetuned", "gpt",
            # lm_loss_weight 0 at tiny: GPT's auxiliary LM loss off when fine-tuning on 1,000 examples. Radford et al.
            # (2018, table 5) found it helps the large datasets and not the small ones (average 74.7 with it, 75.0
            # without); here it would also cost 5x the time of a fine-tuning step (the 8,000-word projection of every
            # token is larger than the 64-wide network).
            sizes={"tiny": ("tiny", {"lm_loss_weight": 0.0}, {"learning_rate": 1e-3, "warmup_ratio": 0.05}),
                   "small": ("tiny", TRANSFORMER_SMALL, TRANSFORMER_SMALL_TRAINING), "base": ("gpt", {}, {})},
            finetune_learning_rate={"tiny": 1e-3, "small": 1e-4, "base": 6.25e-5}, equal_time_words=700_000,
            perplexity="causal", sweep_learning_rate=True, size_keys=TRANSFORMER_SIZE_KEYS, in_grammar_claim=True)),
    "bert": Family(
        "configuration_lineage_bert:LineageBertConfig", "modeling_lineage_bert",
        "hf_lineage.objectives.bert:BertObjective", "base", sentence_scoring="masked", pair_as_one_sequence=True,
        transformers_base=TransformersBase("bert", "BertForPreTraining", "BERT", "google-bert/bert-base-uncased",
                                           "bert"),
        release_converter="bert:release",
        published=PublishedRelease(("google-bert/bert-base-uncased",), "BERT-base, uncased", "110 M parameters",
                                   "3.3 B words of BooksCorpus + English Wikipedia", "apache-2.0"),
        lora_targets=_TRANSFORMER_LORA,
        lineage=LineageFamily(
            "BERT", "tab:red", "masked LM + NSP (validation: masked LM)", "finetuned", "finetuned", "bert",
            sizes={"tiny": ("tiny", {}, {"learning_rate": 1e-3, "warmup_ratio": 0.05}),
                   "small": ("tiny", TRANSFORMER_SMALL, TRANSFORMER_SMALL_TRAINING), "base": ("base", {}, {})},
            finetune_learning_rate={"tiny": 1e-3, "small": 1e-4, "base": 5e-5}, equal_time_words=1_850_000,
            perplexity="masked", sweep_learning_rate=True, size_keys=TRANSFORMER_SIZE_KEYS, in_grammar_claim=True)),
}
