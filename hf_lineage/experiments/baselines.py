"""Baselines for the four lineage tasks, computed on the exact training/validation split the models see.

Pure functions over task rows (python dicts, as read from the task files)::

    labeling        {"tokens": [...], "tags": [...]}
    classification  {"sentence": str, "label": str}
    pairs           {"sentence1": str, "sentence2": str, "label": str}
    generation      {"mr": str, "ref": str}   (the standardized {"source": str, "target": str} is accepted too)
    qa              {"question": str, "context": str, "answers": {"text": [...], ...}}   (no text: unanswerable)
    intent_slots    {"words": [...], "slots": [...], "intent": str}
    multiple choice {"context": str with a "___" blank, "ending0": str, ..., "endingN": str, "label": int}
                    (or the recipe's {"context", "choices": [...], "label"})

Every baseline returns its predictions in the unit order the task's scorer expects, so the report scores them with the
same functions as the models (:func:`hf_lineage.experiments.statistics.unit_scores` and ``bleu_statistics``):

- labeling: one list of tags per validation sentence (scored per token);
- classification / pairs: one label per validation row;
- generation: one output string per distinct validation MR, in order of first appearance (:func:`mr_groups` gives the
  matching reference lists);
- qa: one answer string per validation question ("" = no answer);
- intent_slots: one ``[intent, tags]`` per validation utterance;
- multiple choice: the index of the chosen ending per validation item.

Nothing here is random except the cross-validation folds of the logistic regressions
(:func:`bag_of_words_logistic_regression`, :func:`edge_words_logistic_regression`), which are seeded; every tie
is broken by a stated rule, so a baseline is a deterministic function of its inputs.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict

__all__ = [
    "C_GRID",
    "EDGE_WORDS",
    "TOKEN_PATTERN",
    "answer_by_counting",
    "bag_of_words_logistic_regression",
    "edge_word_choice",
    "edge_words",
    "edge_words_logistic_regression",
    "intent_and_slots_by_counting",
    "majority_class",
    "majority_position",
    "most_frequent_choice",
    "most_frequent_tag",
    "mr_groups",
    "nearest_mr_retrieval",
    "parse_mr",
]

# Words (any run of word characters, single letters included) and every punctuation character as a token of its own:
# scikit-learn's default pattern (two or more word characters) would drop "?", "!", "," and "I", which carry genre.
TOKEN_PATTERN = r"(?u)\w+|[^\w\s]"
# The inverse regularization strengths tried by 5-fold cross-validation on the training rows.
C_GRID = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0)

_TASKS = {"labeling": "labeling", "sequence_labeling": "labeling", "classification": "classification",
          "pairs": "pairs", "sentence_pairs": "pairs", "generation": "generation"}


def _task(task: str) -> str:
    try:
        return _TASKS[task]
    except KeyError:
        raise ValueError(f"Unknown task {task!r}; one of {sorted(_TASKS)}") from None


def _most_frequent(counts: Counter, prior: Counter | None = None) -> str:
    """The key with the highest count; ties go to the key with the higher ``prior`` count, then the smallest key."""
    prior = prior or Counter()
    return min(counts, key=lambda k: (-counts[k], -prior[k], k))


# --------------------------------------------------------------------------- labels


def majority_class(train_rows, validation_rows, task: str) -> list:
    """The training set's most frequent label for every validation unit.

    labeling: the most frequent training tag (counted over tokens) for every token, one list per sentence;
    classification / pairs: the most frequent training label for every row. Ties: the alphabetically first label.
    """
    task = _task(task)
    if task == "labeling":
        tag = _most_frequent(Counter(t for row in train_rows for t in row["tags"]))
        return [[tag] * len(row["tokens"]) for row in validation_rows]
    if task in ("classification", "pairs"):
        label = _most_frequent(Counter(str(row["label"]) for row in train_rows))
        return [label] * len(validation_rows)
    raise ValueError("majority_class is for labeling, classification and pairs; generation has nearest_mr_retrieval")


def most_frequent_tag(train_rows, validation_rows) -> list[list[str]]:
    """The most-frequent-tag baseline for sequence labeling, one list of tags per validation sentence.

    Each validation token gets, in this order:

    1. if the exact word form occurs in training: its most frequent training tag;
    2. else, if its lowercased form equals the lowercased form of training tokens: the most frequent tag of all those
       tokens together ("The" unseen but "the" seen → the tag of "the"/"THE"/... pooled);
    3. else (an unknown word): the most frequent tag in the whole training set.

    Ties between tags, at any step, go to the tag more frequent in the whole training set, then to the alphabetically
    first one.
    """
    overall = Counter()
    exact, lower = defaultdict(Counter), defaultdict(Counter)
    for row in train_rows:
        for word, tag in zip(row["tokens"], row["tags"], strict=True):
            overall[tag] += 1
            exact[word][tag] += 1
            lower[word.lower()][tag] += 1
    if not overall:
        raise ValueError("most_frequent_tag needs at least one training token")
    default = _most_frequent(overall)
    exact_tag = {w: _most_frequent(c, overall) for w, c in exact.items()}
    lower_tag = {w: _most_frequent(c, overall) for w, c in lower.items()}

    def tag(word: str) -> str:
        if word in exact_tag:
            return exact_tag[word]
        return lower_tag.get(word.lower(), default)

    return [[tag(w) for w in row["tokens"]] for row in validation_rows]


# --------------------------------------------------------------------------- bag of words


def _vectorizer(**kwargs):
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(lowercase=True, token_pattern=TOKEN_PATTERN, **kwargs)


def _words(text: str) -> list[str]:
    return re.findall(TOKEN_PATTERN, text.lower())


def _bigrams(words: list[str]) -> set:
    return set(itertools.pairwise(words))


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _first(pair):
    return pair[0]


def _second(pair):
    return pair[1]


class _PairFeatures:
    """Features of a sentence pair (fit on the training pairs, then applied to any pairs).

    - ``s1:`` word uni+bigram counts of sentence1 and ``s2:`` those of sentence2, two separate namespaces;
    - ``both:`` the bag of shared words (binary: the lowercased words occurring in both sentences);
    - ``one:`` the bag of unshared words (binary: the words occurring in exactly one of the two);
    - two dense overlaps, standardized with the training pairs' mean and standard deviation: the Jaccard overlap of
      the two sentences' word sets and of their word-bigram sets. (Unscaled, a [0, 1] feature gets too little of the
      L2-regularized weight next to the bags, and pairs of unseen words, where only the overlaps fire, are misjudged.)
    """

    def fit(self, rows):
        from sklearn.feature_extraction.text import CountVectorizer

        self.first = _vectorizer(ngram_range=(1, 2)).fit([r["sentence1"] for r in rows])
        self.second = _vectorizer(ngram_range=(1, 2)).fit([r["sentence2"] for r in rows])
        sets = self._sets(rows)
        # None when no training pair has such a word (e.g. two orderings of one sentence share every word).
        self.shared = CountVectorizer(analyzer=_first, binary=True).fit(sets) if any(s[0] for s in sets) else None
        self.unshared = CountVectorizer(analyzer=_second, binary=True).fit(sets) if any(s[1] for s in sets) else None
        overlaps = self._overlaps(rows)
        self.mean = overlaps.mean(axis=0)
        self.scale = overlaps.std(axis=0)
        self.scale[self.scale == 0] = 1.0
        return self

    @staticmethod
    def _sets(rows):
        out = []
        for r in rows:
            a, b = set(_words(r["sentence1"])), set(_words(r["sentence2"]))
            out.append((sorted(a & b), sorted(a ^ b)))
        return out

    @staticmethod
    def _overlaps(rows):
        import numpy as np

        out = []
        for r in rows:
            a, b = _words(r["sentence1"]), _words(r["sentence2"])
            out.append([_jaccard(set(a), set(b)), _jaccard(_bigrams(a), _bigrams(b))])
        return np.asarray(out, dtype=float).reshape(len(rows), 2)

    def transform(self, rows):
        import scipy.sparse as sp

        sets = self._sets(rows)
        return sp.hstack([
            self.first.transform([r["sentence1"] for r in rows]),
            self.second.transform([r["sentence2"] for r in rows]),
            *(bag.transform(sets) for bag in (self.shared, self.unshared) if bag is not None),
            sp.csr_matrix((self._overlaps(rows) - self.mean) / self.scale),
        ]).tocsr()


def _fit_logistic_regression(X, y, seed: int):
    """A LogisticRegression with C chosen from :data:`C_GRID` by stratified 5-fold cross-validation (accuracy) on
    ``X, y`` only; folds shuffled with ``seed``; a tie in mean accuracy goes to the smaller C (more regularized)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    def model(C):
        return LogisticRegression(C=C, solver="newton-cg", max_iter=1000, random_state=seed)

    counts = Counter(y)
    folds = min(5, max(counts.values()))
    C = 1.0
    if len(counts) > 1 and folds >= 2:
        import warnings

        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        with warnings.catch_warnings():  # a class rarer than the number of folds: a warning only, the split is valid
            warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
            means = [float(np.mean(cross_val_score(model(c), X, y, cv=splitter, scoring="accuracy")))
                     for c in C_GRID]
        C = C_GRID[int(np.argmax(means))]  # argmax: the first (smallest) C of a tie
    return model(C).fit(X, y), C


def bag_of_words_logistic_regression(train_rows, validation_rows, task: str, seed: int = 0) -> list[str]:
    """Predicted labels of a logistic regression over bags of words, one per validation row.

    classification: word unigram + bigram counts of the sentence (scikit-learn ``CountVectorizer``, lowercased,
    tokens :data:`TOKEN_PATTERN`: words and single punctuation characters).

    pairs: sentence1's and sentence2's uni+bigram counts in two separate namespaces, plus overlap features: the
    binary bag of shared words (lowercased words in both sentences), the binary bag of unshared words (in exactly one),
    and the Jaccard overlaps of the two word sets and of the two word-bigram sets (standardized on the training rows).

    The vocabulary is the training rows'. ``LogisticRegression`` (newton-cg solver, L2, multinomial) with ``C``
    chosen from :data:`C_GRID` by stratified 5-fold cross-validation on the training rows only (folds shuffled with
    ``seed``; ties go to the smaller C), then refit on all training rows. Deterministic for a given ``seed``.
    """
    task = _task(task)
    y = [str(r["label"]) for r in train_rows]
    if len(set(y)) == 1:
        return [y[0]] * len(validation_rows)
    if task == "classification":
        features = _vectorizer(ngram_range=(1, 2)).fit([r["sentence"] for r in train_rows])
        X, X_val = (features.transform([r["sentence"] for r in rows]) for rows in (train_rows, validation_rows))
    elif task == "pairs":
        features = _PairFeatures().fit(train_rows)
        X, X_val = features.transform(train_rows), features.transform(validation_rows)
    else:
        raise ValueError(f"bag_of_words_logistic_regression is for classification and pairs, not {task!r}")
    model, _ = _fit_logistic_regression(X, y, seed)
    return [str(p) for p in model.predict(X_val)] if len(validation_rows) else []


# --------------------------------------------------------------------------- edge words

# A task that a model should solve by reading word order can still leak through the words at its edges: a rotated
# sentence starts with an unusual word and has a sentence-final word in its middle (issue 42).
EDGE_WORDS = "edge words (first, last, final punctuation) logistic regression"
_NONE = "<none>"


def edge_words(sentence: str) -> dict[str, str]:
    """The three edge features of a sentence, lowercased and tokenised with :data:`TOKEN_PATTERN`:

    - ``first``: the first word token (a run of word characters; leading punctuation is skipped);
    - ``last``: the last word token, so that in ``"the cat sat ."`` it is ``sat``, the word before the final mark;
    - ``punct``: the last token if it is punctuation (``.``, ``?``, ``"`` ...), else ``<none>``.

    A sentence without any word token has ``<none>`` as its first and last word.
    """
    tokens = _words(sentence)
    words = [t for t in tokens if re.match(r"\w", t)]
    return {"first": words[0] if words else _NONE, "last": words[-1] if words else _NONE,
            "punct": tokens[-1] if tokens and not re.match(r"\w", tokens[-1]) else _NONE}


def _edge_features(row, task: str) -> dict[str, int]:
    if task == "classification":
        return {f"{k}={v}": 1 for k, v in edge_words(row["sentence"]).items()}
    return {f"{side}:{k}={v}": 1 for side in ("sentence1", "sentence2") for k, v in edge_words(row[side]).items()}


def edge_words_logistic_regression(train_rows, validation_rows, task: str, seed: int = 0) -> list[str]:
    """Predicted labels of a logistic regression over the words at the sentence's edges, one per validation row.

    Features (one-hot, the training rows' vocabulary; see :func:`edge_words`): the first word, the last word and the
    final punctuation mark of the sentence; for pairs those of sentence1 and of sentence2 in two separate
    namespaces. Fitted as :func:`bag_of_words_logistic_regression` is (C from :data:`C_GRID` by stratified 5-fold
    cross-validation on the training rows only, folds shuffled with ``seed``; ties to the smaller C), so it is
    deterministic for a given ``seed``. Far above the majority class, a task meant to need word order is solved by
    its edges (a partial-input check in the spirit of Poliak et al. 2018).
    """
    from sklearn.feature_extraction import DictVectorizer

    task = _task(task)
    if task not in ("classification", "pairs"):
        raise ValueError(f"edge_words_logistic_regression is for classification and pairs, not {task!r}")
    y = [str(r["label"]) for r in train_rows]
    if len(set(y)) == 1:
        return [y[0]] * len(validation_rows)
    features = DictVectorizer().fit([_edge_features(r, task) for r in train_rows])
    X = features.transform([_edge_features(r, task) for r in train_rows])
    model, _ = _fit_logistic_regression(X, y, seed)
    if not validation_rows:
        return []
    return [str(p) for p in model.predict(features.transform([_edge_features(r, task) for r in validation_rows]))]


# A partial-input baseline (Poliak et al. 2018; Gururangan et al. 2018): a pair task's labels predicted from its second
# sentence alone. It is a trained model, not a counting baseline.
SECOND_SENTENCE_ONLY = "bag-of-words, second sentence only"
BAG_OF_WORDS_INTENT = "bag-of-words intent, most frequent tag per word"
TRAINED_BASELINES = ("bag-of-words logistic regression", SECOND_SENTENCE_ONLY, BAG_OF_WORDS_INTENT, EDGE_WORDS)


def second_sentence_only(rows) -> list[dict]:
    """Pair rows as single-sentence rows of their second sentence (the label kept)."""
    return [{"sentence": r["sentence2"], **({"label": r["label"]} if "label" in r else {})} for r in rows]


# --------------------------------------------------------------------------- question answering


def _words_of_question(question: str) -> set[str]:
    return set(_words(question))


def _occurs(text: str, passage: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(text) + r"(?!\w)", passage) is not None


def answer_by_counting(train_rows, validation_rows) -> list[str]:
    """A counting baseline for extractive QA (SQuAD 2.0 style): one answer per validation question.

    Each training question's first gold answer (the empty string for an unanswerable one) is a class; the
    candidates of a validation question are the empty answer and every training answer that occurs in its passage
    (whole words, case-sensitive). Each is scored by naive Bayes over the question's lowercased words:
    ``log n(a) + sum over words w of log((n(a, w) + 1) / (n(a) + 2))``, with ``n(a)`` the training questions
    answered ``a`` and ``n(a, w)`` those of them containing ``w``. The best wins; ties go to the more frequent
    answer, then the alphabetically first. It learns which question words go with which answers ("food" with
    "Chinese") and that an answer must be in the passage, and nothing about where in the passage it is.
    """
    import math

    answers, together = Counter(), defaultdict(Counter)
    for row in train_rows:
        texts = [t for t in row["answers"]["text"] if t.strip()]
        answer = texts[0] if texts else ""
        answers[answer] += 1
        together[answer].update(_words_of_question(row["question"]))
    if not answers:
        raise ValueError("answer_by_counting needs at least one training question")
    known = sorted(a for a in answers if a)

    def score(answer, words):
        n = answers[answer]
        return math.log(n) + sum(math.log((together[answer][w] + 1) / (n + 2)) for w in words)

    predictions = []
    for row in validation_rows:
        words = _words_of_question(row["question"])
        candidates = [""] * (answers[""] > 0) + [a for a in known if _occurs(a, row["context"])]
        if not candidates:
            predictions.append("")
            continue
        predictions.append(min(candidates, key=lambda a: (-score(a, words), -answers[a], a)))
    return predictions


def no_answer(validation_rows) -> list[str]:
    """The empty answer for every question: SQuAD 2.0's "unanswerable" majority, F1 = the unanswerable share."""
    return [""] * len(validation_rows)


# --------------------------------------------------------------------------- intent and slots


def intent_and_slots_by_counting(train_rows, validation_rows, seed: int = 0,
                                 bag_of_words_intent: bool = False) -> list[list]:
    """``[intent, tags]`` per validation utterance: every word's most frequent training slot tag
    (:func:`most_frequent_tag`), and the majority intent, or with ``bag_of_words_intent`` the intent of the
    classification bag-of-words logistic regression over the utterance's words (a trained model)."""
    as_tags = [{"tokens": r["words"], "tags": r["slots"]} for r in train_rows]
    tags = most_frequent_tag(as_tags, [{"tokens": r["words"]} for r in validation_rows])
    if bag_of_words_intent:
        sentences = [[{"sentence": " ".join(r["words"]), "label": r.get("intent")} for r in rows]
                     for rows in (train_rows, validation_rows)]
        intents = bag_of_words_logistic_regression(*sentences, "classification", seed)
    else:
        intent = _most_frequent(Counter(str(r["intent"]) for r in train_rows))
        intents = [intent] * len(validation_rows)
    return [[i, t] for i, t in zip(intents, tags)]


# --------------------------------------------------------------------------- generation

_SLOT = re.compile(r"(?:^|,)\s*([^,\[\]]+?)\s*\[\s*([^\]]*?)\s*\]")  # slot names may have spaces
# Slots whose values are names copied into the text: substituted in the retrieved text.
SUBSTITUTED_SLOTS = ("name", "near")


def parse_mr(mr: str) -> dict[str, str]:
    """An E2E meaning representation as slot → value: ``"name [ X ] , customer rating [ Y ]"`` (and the original
    ``"name[X], customer rating[Y]"``) → ``{"name": "X", "customer rating": "Y"}``."""
    return {slot: value for slot, value in _SLOT.findall(mr)}


def _mr_and_ref(row) -> tuple[str, str | None]:
    if "mr" in row:
        return row["mr"], row.get("ref")
    return row["source"], row.get("target")


def mr_groups(rows) -> tuple[list[str], list[list[str]]]:
    """(the distinct MRs in order of first appearance, the list of their references in file order), from generation
    rows (``mr``/``ref`` or the standardized ``source``/``target``). An MR with no reference gets an empty list."""
    references: dict[str, list[str]] = {}
    for row in rows:
        mr, ref = _mr_and_ref(row)
        references.setdefault(mr, [])
        if ref is not None:
            references[mr].append(ref)
    mrs = list(references)
    return mrs, [references[m] for m in mrs]


def _match(query: dict, candidate: dict) -> tuple[int, int]:
    """(slot-value overlap: shared slots with equal values, shared slot names) of two parsed MRs."""
    shared = query.keys() & candidate.keys()
    return sum(1 for s in shared if query[s] == candidate[s]), len(shared)


def nearest_mr_retrieval(train_rows, validation_rows) -> list[str]:
    """A retrieval/template baseline for E2E generation: one output per distinct validation MR, in order of first
    appearance (the order of :func:`mr_groups`).

    For each validation MR (parsed by :func:`parse_mr`): the distinct training MR with the highest slot-value overlap
    (the number of slots both have with exactly the same value, ``name`` and ``near`` included); ties go to the MR
    sharing the most slot names, then to the first in the training file. Its first training reference is taken, and
    in it every occurrence of the retrieved MR's ``name`` and ``near`` values is replaced by the validation MR's ones
    (exact string matches, replaced simultaneously so that names cannot chain; a slot either MR lacks is left as it
    is).
    """
    train_mrs, train_refs = mr_groups(train_rows)
    candidates = [(parse_mr(m), refs[0]) for m, refs in zip(train_mrs, train_refs) if refs]
    if not candidates:
        raise ValueError("nearest_mr_retrieval needs at least one training reference")
    outputs = []
    for mr in mr_groups(validation_rows)[0]:
        query = parse_mr(mr)
        best, best_key = None, None
        for slots, ref in candidates:  # first in file wins a tie: only a strictly better key replaces it
            key = _match(query, slots)
            if best_key is None or key > best_key:
                best, best_key = (slots, ref), key
        slots, text = best
        replace = {slots[s]: query[s] for s in SUBSTITUTED_SLOTS if s in slots and s in query and slots[s]}
        if replace:
            pattern = re.compile("|".join(re.escape(v) for v in sorted(replace, key=len, reverse=True)))
            text = pattern.sub(lambda m, replace=replace: replace[m.group(0)], text)
        outputs.append(text)
    return outputs


# --------------------------------------------------------------------------- multiple choice (the cloze)

BLANK = "___"  # the cloze sample's blank (hf_lineage/samples/cloze)


def choices_of(row) -> list[str]:
    """A multiple-choice row's choices: its ``choices`` list (the recipe's columns), or ``ending0``, ``ending1``, ...
    in order (the file's)."""
    if "choices" in row:
        return list(row["choices"])
    return [row[f"ending{k}"] for k in itertools.takewhile(lambda k: f"ending{k}" in row, itertools.count())]


def _filled(row) -> list[str]:
    """A cloze row's sentence with the right choice in the blank, as lowercased words."""
    return _words(row["context"].replace(BLANK, choices_of(row)[int(row["label"])]))


def _pick(choices: list[str], score) -> int:
    """The index of the best-scoring choice (lowercased); ties go to the first of them."""
    return max(range(len(choices)), key=lambda k: (score(choices[k].lower()), -k))


def majority_position(train_rows, validation_rows) -> list[int]:
    """The training items' most frequent right position for every validation item (ties: the lowest)."""
    position = int(_most_frequent(Counter(str(int(r["label"])) for r in train_rows)))
    return [position] * len(validation_rows)


def most_frequent_choice(train_rows, validation_rows) -> list[int]:
    """The choice seen most often in the training items' sentences (the right choice in each blank): what a guess
    from word frequency alone gets. Ties go to the first choice."""
    counts = Counter(w for row in train_rows for w in _filled(row))
    return [_pick(choices_of(row), lambda c: counts[c]) for row in validation_rows]


def edge_word_choice(train_rows, validation_rows) -> list[int]:
    """The choice the words next to the blank predict: how often the training items' sentences (the right choice in
    each blank) have it right after the blank's left neighbour plus right before its right neighbour; ties go to the
    more frequent word, then to the first choice. A model that reads only the two words around the blank (a bigram
    model) gets this far."""
    words, bigrams = Counter(), Counter()
    for row in train_rows:
        filled = _filled(row)
        words.update(filled)
        bigrams.update(itertools.pairwise(filled))
    predictions = []
    for row in validation_rows:
        context = _words(row["context"])
        i = context.index(BLANK.lower()) if BLANK in context else -1
        left = context[i - 1] if i > 0 else None
        right = context[i + 1] if 0 <= i < len(context) - 1 else None
        predictions.append(_pick(choices_of(row),
                                 lambda c: (bigrams[(left, c)] + bigrams[(c, right)], words[c])))
    return predictions
