"""Sentence scores with no task head, one scorer per kind of model (``model_specs.kind_of_config``):

``causal``  Σ_t log P(token_t | start, token_<t) after the model's start token (lineage NNLM: its context-start word
            ``</s>``; lineage GPT and GPT-2: ``<|endoftext|>``; else the tokenizer's bos, then eos; a model with none
            of them scores its tokens after the first, and says so). No end token is scored.
``masked``  pseudo-log-likelihood (Salazar et al. 2020): each token masked in turn, Σ_t log P(token_t | the sentence
            with token_t masked), every masked copy of a sentence in one batch; and PLL-word-l2r (Kauf & Ivanova 2023):
            when token_t is not the last token of its word, the tokens of the same word to its right are masked too,
            so a word split into pieces is not scored from its own other pieces. Words are the tokenizer's
            (``word_ids``: BERT's pre-tokenizer splits at spaces and punctuation).
``elmo``    its forward LM Σ_t log P(w_t | <S>, w_<t), its backward LM Σ_t log P(w_t | w_>t, </S>), and their sum;
            the markers ``<S>``/``</S>`` are context, never scored.
``ngram``   Kneser-Ney: Σ_t log P(w_t | the order − 1 words before, ``</s>`` before the first).
``vectors`` svd, word2vec, GloVe define no probability of a sentence: no scorer (``NoSentenceProbability``).

Every scorer reads a sentence as ``text_preparation.prepare(sentence, spec.text_style)`` makes it, and returns, with
the scores (natural-log probabilities), each sentence's model input as a hashable key: two sentences with the same key
are the same input to the model (different words both out of its vocabulary), whatever their scores.

    >>> scorer = load_scorer(resolve_model("gpt"))                                     # doctest: +SKIP
    >>> scorer.score(["Mary doesn't like herself.", "Mary don't like herself."]).variants["sum"]   # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from .model_specs import ModelSpec
from .pairs import MinimalPairsError
from .text_preparation import lowercases, prepare

VARIANTS = {
    "causal": {"sum": "Σ log P(token | start, tokens before)"},
    "ngram": {"sum": "Σ log P(word | the n − 1 words before)"},
    "masked": {"PLL": "pseudo-log-likelihood, each token masked in turn (Salazar et al. 2020)",
               "PLL-word-l2r": "PLL, the tokens of the same word to the right masked too (Kauf & Ivanova 2023)"},
    "elmo": {"forward": "forward LM: Σ log P(word | <S>, words before)",
             "backward": "backward LM: Σ log P(word | words after, </S>)",
             "forward+backward": "the sum of both directions' log-probabilities"},
}


class NoSentenceProbability(MinimalPairsError):
    """A model with static vectors alone: it gives no probability to a sentence."""


@dataclass
class SentenceScores:
    """Scores of a list of sentences: ``variants`` maps a scoring (``"sum"``, ``"PLL"``, ``"forward"`` ...) to (N,)
    natural-log scores; ``inputs`` holds each sentence's model input (hashable): equal inputs are ties."""

    variants: dict
    inputs: list = field(default_factory=list)


def _batches(items, size):
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _progress(total, label, enabled):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"scoring {label}", unit=" sentences", disable=not enabled, mininterval=2.0,
                leave=False)


class Scorer:
    """Scores raw sentences the way one model reads them. What every scorer declares:

    - ``kind``: the kind of model it scores (``model_specs.KINDS``; ``SCORERS`` maps each kind to its scorer);
    - ``variants``: its scorings, name → what it is (an instance may say more, e.g. the start token it uses);
    - ``primary``: the one a comparison between models uses, chosen by the method's merits and never by which scores
      higher;
    - ``reads``: what its scores are sums over;
    - ``lowercases``: whether it reads ``The`` as ``the`` (its tokenizer's doing; None where no tokenizer decides).
    """

    kind: str = ""
    primary: str = ""
    reads: str = ""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.variants = dict(VARIANTS[self.kind])
        self.notes: list[str] = []  # what the report should say about this model's scores

    @property
    def lowercases(self) -> bool | None:
        return None

    def prepared(self, sentence: str) -> str:
        return prepare(sentence, self.spec.text_style)

    def score(self, sentences, progress: bool = False) -> SentenceScores:
        texts = [self.prepared(s) for s in sentences]
        return self.score_prepared(texts, progress)

    def score_prepared(self, texts, progress: bool = False) -> SentenceScores:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe_input(self, sentence: str) -> str:
        """What the model reads for ``sentence``, for the report: the tokens after text preparation."""
        return self.prepared(sentence)


# --------------------------------------------------------------------------- neural models


class NeuralScorer(Scorer):
    auto_class = "AutoModelForCausalLM"

    def __init__(self, spec: ModelSpec, device: str = "cpu", batch_size: int = 64):
        super().__init__(spec)
        import torch
        import transformers
        from transformers import AutoTokenizer
        from transformers.utils import logging

        self.torch, self.device, self.batch_size = torch, torch.device(device), batch_size
        where = str(spec.folder) if spec.folder is not None else spec.hub_id
        verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
        logging.set_verbosity_error()  # a pre-training folder's unused heads (NSP, pooler) are expected, not news
        logging.disable_progress_bar()
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(where)
            self.model = getattr(transformers, self.auto_class).from_pretrained(where, dtype=torch.float32)
        except (OSError, ValueError) as error:
            raise MinimalPairsError(f"--models {spec.argument}: cannot load the model or its tokenizer from {where} "
                                    f"({type(error).__name__}: {str(error).strip().splitlines()[0]})") from None
        finally:
            logging.set_verbosity(verbosity)
            if bars:
                logging.enable_progress_bar()
        self.model.to(self.device).eval()

    @property
    def lowercases(self) -> bool:
        return lowercases(self.tokenizer)

    def describe_input(self, sentence: str) -> str:
        ids = self.tokenizer(self.prepared(sentence), add_special_tokens=False)["input_ids"]
        return " ".join(self.tokenizer.convert_ids_to_tokens(ids))


class CausalScorer(NeuralScorer):
    """Σ_t log P(token_t | start, tokens before t), batched with right padding."""

    kind, primary, reads = "causal", "sum", "the model's tokens, each given those before it"

    def __init__(self, spec, device="cpu", batch_size=64):
        super().__init__(spec, device, batch_size)
        self.start_id = start_token_id(self.model.config, self.tokenizer)
        if self.start_id is None:
            self.notes.append("no start token (no bos, eos or context-start id): the first token is not scored")
        else:
            name = self.tokenizer.convert_ids_to_tokens(self.start_id)
            self.variants = {"sum": f"Σ log P(token | {name}, tokens before)"}

    def score_prepared(self, texts, progress=False):
        torch = self.torch
        encoded = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        rows = [([self.start_id] if self.start_id is not None else []) + list(ids) for ids in encoded]
        scores = np.zeros(len(rows))
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        bar = _progress(len(rows), self.spec.label, progress)
        with torch.inference_mode():
            for chunk in _batches(order, self.batch_size):
                length = max(len(rows[i]) for i in chunk)
                if length < 2:
                    bar.update(len(chunk))
                    continue
                ids = torch.full((len(chunk), length), pad, dtype=torch.long)
                mask = torch.zeros((len(chunk), length), dtype=torch.long)
                for b, i in enumerate(chunk):
                    ids[b, :len(rows[i])] = torch.tensor(rows[i])
                    mask[b, :len(rows[i])] = 1
                ids, mask = ids.to(self.device), mask.to(self.device)
                logits = self.model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()  # (B, T-1, V)
                targets = ids[:, 1:]
                token = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - logits.logsumexp(-1)  # (B, T-1)
                scores[chunk] = (token * mask[:, 1:]).sum(1).double().cpu().numpy()
                bar.update(len(chunk))
        bar.close()
        return SentenceScores({"sum": scores}, [tuple(ids) for ids in encoded])


def start_token_id(config, tokenizer) -> int | None:
    """The token a causal LM's sentences start after: the NNLM's context-start word, else the tokenizer's bos, else
    its eos (GPT-2 and lineage GPT: ``<|endoftext|>``), else the config's; None when there is none."""
    for value in (getattr(config, "context_start_token_id", None), tokenizer.bos_token_id, tokenizer.eos_token_id,
                  getattr(config, "bos_token_id", None), getattr(config, "eos_token_id", None)):
        if isinstance(value, int):
            return value
    return None


class MaskedScorer(NeuralScorer):
    """PLL and PLL-word-l2r. A sentence's masked copies all go into one forward pass (with other sentences' copies
    when they fit in ``batch_size`` rows); a PLL-word-l2r copy is made only where it differs from the PLL copy (a
    token with pieces of its word to its right)."""

    auto_class = "AutoModelForMaskedLM"
    # PLL-word-l2r: plain PLL scores a word split into pieces from its own other pieces, which inflates many-piece
    # words (Kauf & Ivanova 2023), and BLiMP's pairs often differ in a word a small vocabulary splits.
    kind, primary, reads = "masked", "PLL-word-l2r", "the model's tokens, each masked in turn"

    def __init__(self, spec, device="cpu", batch_size=128):
        super().__init__(spec, device, batch_size)
        if self.tokenizer.mask_token_id is None:
            raise MinimalPairsError(f"--models {spec.argument}: its tokenizer has no mask token (no PLL without one)")
        import inspect

        # Lineage BERT computes its vocabulary layer only where there are labels: the same numbers, a fraction of
        # the work (that layer is most of a small model's).
        self.sparse = "sparse_logits" in inspect.signature(self.model.forward).parameters

    def describe_input(self, sentence):
        ids = self.tokenizer(self.prepared(sentence))["input_ids"]
        return " ".join(self.tokenizer.convert_ids_to_tokens(ids))

    def masked_copies(self, ids, special, word_ids):
        """The copies of one sentence: [(masked ids, position, target, is_l2r)], the PLL copies first."""
        mask_id = self.tokenizer.mask_token_id
        positions = [j for j in range(len(ids)) if not special[j]]
        copies = []
        for j in positions:
            row = list(ids)
            row[j] = mask_id
            copies.append((row, j, ids[j], False))
        for j in positions:
            right = [k for k in positions if k > j and word_ids[k] is not None and word_ids[k] == word_ids[j]]
            if right:
                row = list(ids)
                for k in [j, *right]:
                    row[k] = mask_id
                copies.append((row, j, ids[j], True))
        return copies

    def score_prepared(self, texts, progress=False):
        torch = self.torch
        encoding = self.tokenizer(list(texts), return_special_tokens_mask=True)
        if not encoding.is_fast:
            raise MinimalPairsError(f"--models {self.spec.argument}: PLL-word-l2r needs the word of each token "
                                    "(a fast tokenizer's word_ids)")
        sentences = []
        for i, ids in enumerate(encoding["input_ids"]):
            sentences.append(self.masked_copies(ids, encoding["special_tokens_mask"][i], encoding.word_ids(i)))
        pll, l2r = np.zeros(len(texts)), np.zeros(len(texts))
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        order = sorted(range(len(texts)), key=lambda i: len(encoding["input_ids"][i]))
        groups, group, rows = [], [], 0  # sentences whose copies fill one forward pass, a sentence never split
        for i in order:
            if group and rows + len(sentences[i]) > self.batch_size:
                groups.append(group)
                group, rows = [], 0
            group.append(i)
            rows += len(sentences[i])
        if group:
            groups.append(group)
        bar = _progress(len(texts), self.spec.label, progress)
        with torch.inference_mode():
            for group in groups:
                copies = [(i, *copy) for i in group for copy in sentences[i]]
                if not copies:
                    bar.update(len(group))
                    continue
                length = max(len(c[1]) for c in copies)
                ids = torch.full((len(copies), length), pad, dtype=torch.long)
                mask = torch.zeros((len(copies), length), dtype=torch.long)
                for r, (_, row, *_) in enumerate(copies):
                    ids[r, :len(row)] = torch.tensor(row)
                    mask[r, :len(row)] = 1
                ids, mask = ids.to(self.device), mask.to(self.device)
                extra = ({"token_type_ids": torch.zeros_like(ids)}
                         if "token_type_ids" in self.tokenizer.model_input_names else {})
                rows_ = torch.arange(len(copies), device=self.device)
                at = torch.tensor([c[2] for c in copies], device=self.device)
                target = torch.tensor([c[3] for c in copies], device=self.device)
                if self.sparse:  # the vocabulary layer at the one scored position of each copy only: (R, V)
                    labels = torch.full_like(ids, -100)
                    labels[rows_, at] = target
                    chosen = self.model(input_ids=ids, attention_mask=mask, labels=labels, sparse_logits=True,
                                        **extra).logits.float()
                else:
                    chosen = self.model(input_ids=ids, attention_mask=mask, **extra).logits.float()[rows_, at]
                token = (chosen.gather(-1, target[:, None]).squeeze(-1) - chosen.logsumexp(-1)).double().cpu().numpy()
                by_position = {}
                for r, (i, _, j, _, is_l2r) in enumerate(copies):
                    by_position.setdefault((i, j), {})[is_l2r] = token[r]
                for (i, j), values in by_position.items():
                    pll[i] += values[False]
                    l2r[i] += values.get(True, values[False])
                bar.update(len(group))
        bar.close()
        return SentenceScores({"PLL": pll, "PLL-word-l2r": l2r}, [tuple(ids) for ids in encoding["input_ids"]])


class ElmoScorer(NeuralScorer):
    """ELMo's two language models over ``<S> words </S>``, from its pre-training head (the softmax both share)."""

    auto_class = "AutoModelForPreTraining"
    kind, primary, reads = "elmo", "forward+backward", "words, each given the words on one side"  # the whole biLM

    def describe_input(self, sentence):
        ids = self.tokenizer(self.prepared(sentence))["input_ids"]
        return " ".join(self.tokenizer.convert_ids_to_tokens(ids))

    def score_prepared(self, texts, progress=False):
        torch = self.torch
        texts = list(texts)
        forward, backward = np.zeros(len(texts)), np.zeros(len(texts))
        inputs = [None] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i].split()))
        bar = _progress(len(texts), self.spec.label, progress)
        with torch.inference_mode():
            for chunk in _batches(order, self.batch_size):
                batch = self.tokenizer([texts[i] for i in chunk], padding=True, return_tensors="pt")
                batch = {k: v.to(self.device) for k, v in batch.items()}
                with warnings.catch_warnings():  # torch's note that a projected LSTM runs without oneDNN
                    warnings.filterwarnings("ignore", message="LSTM with projections")
                    out = self.model(**batch)
                ids, mask = batch["input_ids"], batch["attention_mask"]
                lengths = mask.sum(1)  # <S> w_1 .. w_n </S>: n + 2
                position = torch.arange(ids.shape[1], device=self.device)[None]  # (1, T)
                word = (position >= 1) & (position <= lengths[:, None] - 2)  # (B, T): positions of w_1 .. w_n
                # Forward: position t predicts token t + 1; backward: position t predicts token t − 1.
                fwd = out.logits[:, :-1].float()
                fwd = fwd.gather(-1, ids[:, 1:, None]).squeeze(-1) - fwd.logsumexp(-1)  # (B, T-1), target t+1
                bwd = out.backward_logits[:, 1:].float()
                bwd = bwd.gather(-1, ids[:, :-1, None]).squeeze(-1) - bwd.logsumexp(-1)  # (B, T-1), target t-1
                forward[chunk] = (fwd * word[:, 1:]).sum(1).double().cpu().numpy()
                backward[chunk] = (bwd * word[:, :-1]).sum(1).double().cpu().numpy()
                chars = batch.get("char_ids")
                for b, i in enumerate(chunk):
                    n = int(lengths[b])
                    key = ids[b, :n].cpu().numpy().tobytes()
                    inputs[i] = key + (chars[b, :n].cpu().numpy().tobytes() if chars is not None else b"")
                bar.update(len(chunk))
        bar.close()
        return SentenceScores({"forward": forward, "backward": backward, "forward+backward": forward + backward},
                              inputs)


# --------------------------------------------------------------------------- the n-gram


class NgramScorer(Scorer):
    """A Kneser-Ney model trained here, on ``train_files`` or the embedded WikiText-2 sample."""

    kind, primary, reads = "ngram", "sum", "words, each given the order - 1 words before it"

    def __init__(self, spec: ModelSpec, train_files=None):
        super().__init__(spec)
        from .. import samples
        from .kneser_ney import WordKneserNey

        files = list(train_files) if train_files else [samples.path("lineage", "corpus.train.txt")]
        lines = []
        for name in files:
            with open(name, encoding="utf-8") as f:
                lines.extend(f)
        self.model = WordKneserNey(lines, order=spec.order)
        self.train_files = [str(f) for f in files]
        text = ", ".join(self.train_files) if train_files else "the embedded WikiText-2 sample"
        size = f"{self.model.words:,} tokens, {len(self.model.vocabulary):,} words in its vocabulary"
        self.notes.append(f"trained on {text} ({size})")

    def score_prepared(self, texts, progress=False):
        scores, inputs = np.zeros(len(texts)), []
        bar = _progress(len(texts), self.spec.label, progress)
        for i, text in enumerate(texts):
            words = text.split()
            scores[i] = self.model.sentence_log_prob(words)
            inputs.append(tuple(self.model.encode(words)))
            if i % 1000 == 999 or i == len(texts) - 1:
                bar.update(i % 1000 + 1)
        bar.close()
        return SentenceScores({"sum": scores}, inputs)

    def describe_input(self, sentence):
        words = self.prepared(sentence).split()
        vocabulary = self.model.vocabulary
        return " ".join(w if w in vocabulary else "<unk>" for w in words)


SCORERS = {scorer.kind: scorer for scorer in (CausalScorer, MaskedScorer, ElmoScorer, NgramScorer)}


def load_scorer(spec: ModelSpec, device: str = "cpu", batch_size: int | None = None, ngram_train_files=None
                ) -> Scorer:
    """The scorer of a resolved model (``model_specs.resolve_model``): the model loaded, the n-gram trained. A
    ``NoSentenceProbability`` for static vectors."""
    if not spec.sentence_probability:
        raise NoSentenceProbability(f"{spec.label}: {spec.why_no_probability}")
    if spec.kind == "ngram":
        return NgramScorer(spec, ngram_train_files)
    scorer = SCORERS[spec.kind]
    return scorer(spec, device, batch_size) if batch_size else scorer(spec, device)
