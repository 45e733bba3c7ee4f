"""Build the small data samples that ``hf-lineage lineage`` runs on: ``hf_lineage/samples/lineage/``.

A developer tool, not part of the package: it reads the shared data folder (``<repo>/../shared/data`` by default)
and (re)writes every file in the samples folder. The package only reads the written files, never the shared data.
The build is deterministic: running it twice writes byte-identical files (fixed seeds, no set/dict-order
dependence, fixed serialisation).

    python scripts/make_lineage_samples.py                      # default folders
    python scripts/make_lineage_samples.py --data-dir /work/shared/data --output-dir /tmp/samples

Only data whose license allows redistribution is used: WikiText-2 (CC BY-SA), UD English EWT (CC BY-SA 4.0) and
E2E NLG (CC BY-SA 4.0). How each file is derived ("words" of EWT are its syntactic words, as
``hf_lineage.data.readers.read_conllu`` returns them: multiword-token lines ``1-2`` and empty nodes ``8.1`` are
skipped):

``corpus.train.txt``
    ``wikitext-2/wiki.train.tokens``, unchanged lines (WikiText format: `` = Title = `` headings, lines holding a
    single space between paragraphs, one paragraph per line), whole articles from the start of the file up to the
    article boundary closest to ``CORPUS_TRAIN_WORDS`` (600,000) whitespace tokens. An article starts at the line
    holding a single space right before a top-level heading `` = Title = `` (not `` = = Section = = ``); the first
    article also takes the file's first line.
``corpus.validation.txt``
    ``wikitext-2/wiki.valid.tokens``, the same way, up to the boundary closest to ``CORPUS_VALIDATION_WORDS``
    (40,000) tokens.
``labeling.{train,validation}.jsonl``
    UPOS tagging, ``{"tokens": [...], "tags": [...]}`` per line, from ``ud_english_ewt/en_ewt-ud-train.conllu``
    (4,000 sentences) and ``en_ewt-ud-dev.conllu`` (1,000; more, in steps of 100, if 1,000 sentences held fewer than
    ``LABELING_MIN_VALIDATION_WORDS`` = 10,000 words -- they do not). Candidates: sentences of 3 to 60 words (first
    occurrence of a repeated word sequence only). The genre of a sentence is its ``# sent_id`` prefix (answers, email,
    newsgroup, reviews, weblog); the sample takes the same number from each genre (``even_counts``: a genre with too
    few candidates gives all it has, the others share the rest), each genre's sentences drawn with
    ``random.Random(0).sample``, then the whole sample shuffled with the same generator, so that the first N lines
    are a fair sub-sample.
``classification.{train,validation}.jsonl``
    Reading E2E's ``familyFriendly`` slot back from a human reference: ``{"sentence": <the reference, tokenized like
    WikiText>, "label": "yes" | "no" | "not mentioned"}`` -- the MR's ``familyFriendly[...]`` value, or ``not
    mentioned`` when the MR has no such slot. (It replaces EWT genre classification, which stayed near the
    majority baseline for every model.) E2E's training set (``trainset.csv``) is not in the shared data, so the
    rows come from the two E2E files the other samples use, ``e2e_nlg/devset.csv`` and ``testset_w_refs.csv``, with
    the split those samples already made: an MR is held out (validation) when it is one of the generation sample's
    80 validation MRs (devset) or one of the pairs sample's validation MRs (testset); every other MR is train. So
    no MR is in both files, and no text of any E2E validation file is in any E2E training file. Candidates: every
    reference (tokenized) whose text occurs under one MR only (a text under two MRs has no single label and is
    dropped; a text repeated under one MR counts once), in file order (devset, then testset). Each file is
    ``random.Random(0).sample(candidates, n)`` (a fresh generator per file; the draw is in random order, so the
    file is shuffled): 4,000 train, 1,200 validation, the natural class distribution (no class is subsampled:
    the majority class, ``yes``, is 55.8 % of train and 58.0 % of validation).
``pairs.{train,validation}.jsonl``
    Paraphrase detection, ``{"sentence1", "sentence2", "label": "paraphrase" | "different", "mr_ids": [i, j]}``,
    from ``e2e_nlg/testset_w_refs.csv``. ``mr_ids`` number the file's distinct MRs (meaning representations) in
    order of first appearance, one per sentence (the recipes ignore the column; it lets tests check the split).
    With ``rng = random.Random(0)``: the MR ids are shuffled and the first 20 % (rounded) go to validation, the rest
    to train, so no MR is in both files. Within a split, a positive pair is two different reference texts of one MR;
    a negative pair is a reference of one MR and a reference of another MR of the same split with the same
    ``name[...]`` value (so the restaurant name does not give the answer away) -- distinct MRs always differ in
    their attribute set or values. Candidates per MR: every 2-combination of its distinct references (shuffled) for
    positives; for negatives one candidate per other same-name MR (those MRs shuffled), pairing a random reference of
    each. Pairs are taken round-robin over the MRs (in shuffled order; one pair per MR per round, positives first),
    so every MR contributes about equally; a text pair (in either order) is used at most once in a file. Half
    positive, half negative (2,000 + 2,000 train, 600 + 600 validation; fewer, still balanced, if a split cannot give
    that many), each pair's order flipped with probability 1/2, then shuffled. Texts are tokenized like WikiText
    (``tokenize_like_wikitext``).
``generation.{train,validation}.csv``
    E2E data-to-text, header ``mr,ref``, from ``e2e_nlg/devset.csv``: with ``random.Random(0)``, 80 of its distinct
    MRs go to validation with all their references, every other MR to train; rows keep the original file's order
    (grouped by MR), written as the original is (the csv module's default quoting, CRLF line ends); MR and reference
    tokenized like WikiText (``tokenize_like_wikitext``).
``README.md``, ``manifest.json``
    Sources, licenses, citations and counts; the manifest lists each data file with its counts (classification
    files also their label counts and majority-class share) and sha256 and, per task, the metric and label names
    (what the ``lineage`` orchestrator reads).
"""

from __future__ import annotations

import argparse
import collections
import csv
import hashlib
import io
import itertools
import json
import random
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing the package

from hf_lineage.data.readers import read_conllu, read_e2e_csv  # noqa: E402

DEFAULT_DATA_DIR = REPO.parent / "shared" / "data"
DEFAULT_OUTPUT_DIR = REPO / "hf_lineage" / "samples" / "lineage"

SEED = 0
CORPUS_TRAIN_WORDS = 600_000
CORPUS_VALIDATION_WORDS = 40_000
LABELING_SIZES = {"train": 4000, "validation": 1000}
LABELING_WORDS = (3, 60)  # inclusive bounds on a sentence's syntactic words
LABELING_MIN_VALIDATION_WORDS = 10_000  # token-level accuracy needs enough tokens for a tight interval
CLASSIFICATION_SIZES = {"train": 4000, "validation": 1200}
FAMILY_FRIENDLY_LABELS = ("no", "not mentioned", "yes")  # sorted, as the recipes order label names
PAIRS_SIZES = {"train": 4000, "validation": 1200}
PAIRS_VALIDATION_FRACTION = 0.2
GENERATION_VALIDATION_MRS = 80

GENRES = ("answers", "email", "newsgroup", "reviews", "weblog")
EWT_FILES = {"train": "en_ewt-ud-train.conllu", "validation": "en_ewt-ud-dev.conllu"}

CC_BY_SA_4 = "CC BY-SA 4.0"
CC_BY_SA_4_URL = "https://creativecommons.org/licenses/by-sa/4.0/"
WIKITEXT_LICENSE = "CC BY-SA"  # what the source states: no version number


# --------------------------------------------------------------------------- helpers


def even_counts(available: dict[str, int], total: int) -> dict[str, int]:
    """How many to take from each group so the groups are as even as the data allows: the smallest groups first,
    each gets an equal share of what is left (or all it has). Sums to ``min(total, sum(available))``.

    >>> even_counts({"a": 10, "b": 2, "c": 10}, 12)
    {'a': 5, 'b': 2, 'c': 5}
    """
    counts, remaining = {}, total
    groups = sorted(available, key=lambda g: (available[g], g))
    for i, group in enumerate(groups):
        counts[group] = min(available[group], remaining // (len(groups) - i))
        remaining -= counts[group]
    # Integer shares leave at most len(groups) - 1 over; give them to the groups that still have data.
    for group in sorted(available):
        if remaining and counts[group] < available[group]:
            counts[group] += 1
            remaining -= 1
    return {g: counts[g] for g in sorted(available)}


def jsonl(records: list[dict]) -> bytes:
    lines = (json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in records)
    return "".join(line + "\n" for line in lines).encode("utf-8")


def e2e_csv(rows: list[tuple[str, str]]) -> bytes:
    """An ``mr,ref`` CSV written the way ``devset.csv`` is: the csv module's defaults (a field quoted only when it
    needs it, CRLF line ends). Writing all of ``devset.csv``'s rows this way reproduces it byte for byte."""
    out = io.StringIO(newline="")
    csv.writer(out).writerows([("mr", "ref"), *rows])
    return out.getvalue().encode("utf-8")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- WikiText


def wikitext_head(path: Path, target_words: int) -> tuple[str, dict]:
    """Whole articles from the start of a WikiText file, up to the article boundary closest to ``target_words``."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the file ends with a newline
    # An article starts at the single-space line right before a top-level heading " = Title = ".
    starts = [i - 1 for i in range(1, len(lines))
              if lines[i].startswith(" = ") and not lines[i].startswith(" = = ") and lines[i - 1] == " "]
    if not starts or starts[0] != 0:
        starts = [0] + starts  # the first article takes whatever precedes its heading
    boundaries = starts[1:] + [len(lines)]
    words_before = [0]
    for line in lines:
        words_before.append(words_before[-1] + len(line.split()))
    end = min(boundaries, key=lambda b: (abs(words_before[b] - target_words), b))
    text = "".join(line + "\n" for line in lines[:end])
    return text, {"lines": end, "words": words_before[end], "articles": boundaries.index(end) + 1}


# --------------------------------------------------------------------------- UD English EWT


def ewt_sentences(path: Path) -> list[dict]:
    """Every sentence of a CoNLL-U file: ``tokens`` and ``tags`` (UPOS) from ``read_conllu``, plus ``text`` and
    ``genre`` from its ``# text`` and ``# sent_id`` comments (the reader drops comments)."""
    words = read_conllu(path, column="upos")
    # The comments of each sentence, cut where the reader cuts: at blank lines, keeping blocks that have word lines.
    comments, current, has_words = [], {}, False
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                if has_words:
                    comments.append(current)
                current, has_words = {}, False
            elif line.startswith("# sent_id = ") or line.startswith("# text = "):
                key, value = line[2:].split(" = ", 1)
                current[key] = value
            elif not line.startswith("#"):
                has_words = True
    if has_words:
        comments.append(current)
    if len(comments) != len(words):
        raise ValueError(f"{path}: {len(comments)} comment blocks but {len(words)} sentences")
    sentences = []
    for row, comment in zip(words, comments):
        if "sent_id" not in comment or "text" not in comment:
            raise ValueError(f"{path}: a sentence without '# sent_id' or '# text': {comment}")
        genre = comment["sent_id"].split("-", 1)[0]
        if genre not in GENRES:
            raise ValueError(f"{path}: sent_id {comment['sent_id']!r} has no known genre prefix {GENRES}")
        sentences.append({"tokens": row["tokens"], "tags": row["tags"], "text": comment["text"], "genre": genre})
    return sentences


def stratified_sample(candidates: list[dict], total: int, rng: random.Random) -> tuple[list[dict], dict]:
    """``total`` candidates, as even over the genres as the data allows, shuffled. Also returns the counts."""
    by_genre = {g: [c for c in candidates if c["genre"] == g] for g in GENRES}
    counts = even_counts({g: len(by_genre[g]) for g in GENRES}, total)
    sample = [c for g in GENRES for c in rng.sample(by_genre[g], counts[g])]
    rng.shuffle(sample)
    return sample, counts


def first_occurrences(items: list[dict], key) -> list[dict]:
    seen, out = set(), []
    for item in items:
        k = key(item)
        if k not in seen:
            seen.add(k)
            out.append(item)
    return out


def labeling_file(sentences: list[dict], total: int, min_words: int = 0) -> tuple[bytes, dict]:
    """``total`` sentences -- or more, in steps of 100, until they hold at least ``min_words`` words."""
    low, high = LABELING_WORDS
    candidates = first_occurrences([s for s in sentences if low <= len(s["tokens"]) <= high],
                                   key=lambda s: tuple(s["tokens"]))
    while True:
        sample, counts = stratified_sample(candidates, total, random.Random(SEED))
        words = sum(len(s["tokens"]) for s in sample)
        if words >= min_words or len(sample) == len(candidates):
            break
        total += 100
    if words < min_words:
        raise ValueError(f"all {len(candidates)} candidate sentences hold {words} words, fewer than {min_words}")
    records = [{"tokens": s["tokens"], "tags": s["tags"]} for s in sample]
    tags = sorted({t for s in sample for t in s["tags"]})
    return jsonl(records), {"examples": len(records), "words": words, "genres": counts,
                            "candidates": len(candidates), "labels": tags}


# --------------------------------------------------------------------------- E2E


def tokenize_like_wikitext(text: str) -> str:
    """Raw text split the way WikiText is (the pretraining corpus): punctuation apart from words, clitics apart
    (``don't`` → ``don 't``), a hyphen inside a word as `` @-@ ``; tokens joined by single spaces. The word-level
    families (NNLM, word2vec) then meet E2E's words in the form they were pretrained on, not as ``riverside,``."""
    text = re.sub(r"(?<=\w)-(?=\w)", " @-@ ", text)
    return " ".join(re.findall(r"@-@|'\w+|\w+|[^\w\s]", text))


def e2e_mrs(path: Path) -> tuple[list[str], list[list[str]]]:
    """The file's distinct MRs in order of first appearance, and each MR's references in file order."""
    rows = read_e2e_csv(path)
    mrs, refs, index = [], [], {}
    for source, target in zip(rows["source"], rows["target"]):
        if source not in index:
            index[source] = len(mrs)
            mrs.append(source)
            refs.append([])
        refs[index[source]].append(target)
    return mrs, refs


def mr_name(mr: str) -> str:
    """The ``name[...]`` value of an E2E meaning representation."""
    for part in mr.split(","):
        part = part.strip()
        if part.startswith("name[") and part.endswith("]"):
            return part[len("name["):-1]
    raise ValueError(f"E2E MR without a name[...] attribute: {mr!r}")


def round_robin(candidate_lists: list[list], wanted: int, used: set) -> list:
    """Up to ``wanted`` candidates ``(text1, text2, id1, id2)``, one per list per round; a pair of equal texts or a
    text pair already in ``used`` (either order) is skipped, and each taken pair is added to ``used``."""
    queues = [iter(c) for c in candidate_lists if c]
    taken = []
    while queues and len(taken) < wanted:
        still_open = []
        for queue in queues:
            for candidate in queue:
                key = frozenset(candidate[:2])
                if len(key) == 2 and key not in used:
                    used.add(key)
                    taken.append(candidate)
                    still_open.append(queue)
                    break
            if len(taken) == wanted:
                break
        queues = still_open
    return taken


def pair_records(mr_ids: list[int], mrs: list[str], refs: list[list[str]], total: int,
                 rng: random.Random) -> tuple[list[dict], dict]:
    order = list(mr_ids)
    rng.shuffle(order)
    texts = {i: list(dict.fromkeys(map(tokenize_like_wikitext, refs[i]))) for i in order}  # distinct, file order
    positives_by_mr = []
    for i in order:
        pairs = [(a, b, i, i) for a, b in itertools.combinations(texts[i], 2)]
        rng.shuffle(pairs)
        positives_by_mr.append(pairs)
    by_name = {}
    for i in sorted(mr_ids):
        by_name.setdefault(mr_name(mrs[i]), []).append(i)
    negatives_by_mr = []
    for i in order:
        # One candidate per other MR of the same name (in shuffled order), with a random reference of each: enough
        # for a few negatives per MR without listing every reference combination.
        partners = [j for j in by_name[mr_name(mrs[i])] if j != i]
        rng.shuffle(partners)
        negatives_by_mr.append([(rng.choice(texts[i]), rng.choice(texts[j]), i, j) for j in partners])
    used = set()
    positives = round_robin(positives_by_mr, total // 2, used)
    negatives = round_robin(negatives_by_mr, total // 2, used)
    n = min(len(positives), len(negatives))  # keep the classes balanced
    records = []
    for label, pairs in (("paraphrase", positives[:n]), ("different", negatives[:n])):
        for a, b, i, j in pairs:
            if rng.random() < 0.5:
                a, b, i, j = b, a, j, i
            records.append({"sentence1": a, "sentence2": b, "label": label, "mr_ids": [i, j]})
    rng.shuffle(records)
    return records, {"examples": len(records), "paraphrase": n, "different": n, "mrs": len(mr_ids),
                     "available_positive": sum(map(len, positives_by_mr))}


def pairs_split(n_mrs: int, rng: random.Random) -> dict[str, list[int]]:
    """The pairs sample's split of MR ids ``0 .. n_mrs - 1``: shuffled, the first 20 % (rounded) to validation."""
    ids = list(range(n_mrs))
    rng.shuffle(ids)
    n_validation = round(PAIRS_VALIDATION_FRACTION * len(ids))
    return {"train": sorted(ids[n_validation:]), "validation": sorted(ids[:n_validation])}


def generation_validation_mrs(mrs: list[str]) -> set[str]:
    """The generation sample's held-out MRs, from ``devset.csv``'s distinct MRs in order of first appearance."""
    return set(random.Random(SEED).sample(mrs, GENERATION_VALIDATION_MRS))


def pairs_files(path: Path) -> dict[str, tuple[bytes, dict]]:
    mrs, refs = e2e_mrs(path)
    rng = random.Random(SEED)
    split_ids = pairs_split(len(mrs), rng)  # the same generator goes on to build the pairs
    out = {}
    for split in ("train", "validation"):
        records, info = pair_records(split_ids[split], mrs, refs, PAIRS_SIZES[split], rng)
        out[split] = (jsonl(records), dict(info, labels=["different", "paraphrase"]))
    return out


def generation_files(path: Path) -> dict[str, tuple[bytes, dict]]:
    rows = read_e2e_csv(path)
    validation = generation_validation_mrs(list(dict.fromkeys(rows["source"])))
    out = {}
    for split, keep in (("train", lambda mr: mr not in validation), ("validation", lambda mr: mr in validation)):
        selected = [(tokenize_like_wikitext(mr), tokenize_like_wikitext(ref))
                    for mr, ref in zip(rows["source"], rows["target"]) if keep(mr)]
        out[split] = (e2e_csv(selected), {"examples": len(selected), "mrs": len({mr for mr, _ in selected})})
    return out


def family_friendly(mr: str) -> str:
    """The ``familyFriendly[...]`` value of an E2E MR (``yes`` or ``no``), or ``not mentioned`` without the slot."""
    values = [part.strip()[len("familyFriendly["):-1] for part in mr.split(",")
              if part.strip().startswith("familyFriendly[") and part.strip().endswith("]")]
    if len(values) > 1 or values and values[0] not in ("yes", "no"):
        raise ValueError(f"E2E MR with an unexpected familyFriendly slot: {mr!r}")
    return values[0] if values else "not mentioned"


def classification_files(dev_path: Path, test_path: Path) -> dict[str, tuple[bytes, dict]]:
    """The familyFriendly task: references of both files, split by MR the way generation and pairs split them."""
    dev_mrs, _ = e2e_mrs(dev_path)
    test_mrs, _ = e2e_mrs(test_path)
    if set(dev_mrs) & set(test_mrs):
        raise ValueError(f"{dev_path} and {test_path} share MRs: the split by MR would be ambiguous")
    dev_set = set(dev_mrs)
    held_out = generation_validation_mrs(dev_mrs)
    held_out |= {test_mrs[i] for i in pairs_split(len(test_mrs), random.Random(SEED))["validation"]}
    mrs_of = {}  # tokenized text -> its MRs, texts in file order (devset, then testset)
    for path in (dev_path, test_path):
        rows = read_e2e_csv(path)
        for mr, ref in zip(rows["source"], rows["target"]):
            mrs_of.setdefault(tokenize_like_wikitext(ref), []).append(mr)
    pools = {"train": [], "validation": []}
    for text, mrs in mrs_of.items():
        if len(set(mrs)) == 1:  # a text under two MRs has no single label
            pools["validation" if mrs[0] in held_out else "train"].append((text, mrs[0]))
    out = {}
    for split in ("train", "validation"):
        sample = random.Random(SEED).sample(pools[split], CLASSIFICATION_SIZES[split])  # random order: shuffled
        records = [{"sentence": text, "label": family_friendly(mr)} for text, mr in sample]
        counts = collections.Counter(r["label"] for r in records)
        out[split] = (jsonl(records), {
            "examples": len(records), "mrs": len({mr for _, mr in sample}),
            "candidates": len(pools[split]), "candidate_mrs": len({mr for _, mr in pools[split]}),
            "dropped_ambiguous": sum(len(set(mrs)) > 1 for mrs in mrs_of.values()),
            "label_counts": {label: counts[label] for label in FAMILY_FRIENDLY_LABELS},
            "majority_share": round(max(counts.values()) / len(records), 4),
            "from_devset": sum(mr in dev_set for _, mr in sample),
            "labels": list(FAMILY_FRIENDLY_LABELS)})
    return out


# --------------------------------------------------------------------------- README and manifest

SOURCES = {
    "wikitext": "WikiText-2 (tokenized release, wikitext-2-v1)",
    "ewt": "Universal Dependencies English Web Treebank (UD_English-EWT)",
    "e2e": "E2E NLG Challenge dataset",
}

TASKS = {  # recipe task name -> (file prefix, metric)
    "sequence_labeling": ("labeling", "accuracy"),
    "classification": ("classification", "accuracy"),
    "sentence_pairs": ("pairs", "accuracy"),
    "generation": ("generation", "bleu"),
}


def readme(info: dict) -> str:
    def n(name, key="examples"):
        return f"{info[name][key]:,}"

    def genres(name):
        return ", ".join(f"{g} {c:,}" for g, c in info[name]["genres"].items())

    rows = [  # file, task, source, size
        ("corpus.train.txt", "pretraining corpus", "WikiText-2 `wiki.train.tokens`", "words", "tokens"),
        ("corpus.validation.txt", "pretraining corpus", "WikiText-2 `wiki.valid.tokens`", "words", "tokens"),
        ("labeling.train.jsonl", "sequence labeling (UPOS)", "UD EWT `en_ewt-ud-train.conllu`", "examples",
         "sentences"),
        ("labeling.validation.jsonl", "sequence labeling (UPOS)", "UD EWT `en_ewt-ud-dev.conllu`", "examples",
         "sentences"),
        ("classification.train.jsonl", "classification (familyFriendly)",
         "E2E `devset.csv` + `testset_w_refs.csv`", "examples", "references"),
        ("classification.validation.jsonl", "classification (familyFriendly)",
         "E2E `devset.csv` + `testset_w_refs.csv`", "examples", "references"),
        ("pairs.train.jsonl", "sentence pairs (paraphrase)", "E2E `testset_w_refs.csv`", "examples", "pairs"),
        ("pairs.validation.jsonl", "sentence pairs (paraphrase)", "E2E `testset_w_refs.csv`", "examples", "pairs"),
        ("generation.train.csv", "generation (data-to-text)", "E2E `devset.csv`", "examples", "rows"),
        ("generation.validation.csv", "generation (data-to-text)", "E2E `devset.csv`", "examples", "rows"),
    ]
    table = "\n".join(
        ["| file | task | source | size | license |", "|---|---|---|---|---|"]
        + [f"| `{name}` | {task} | {source} | {n(name, key)} {unit} | "
           f"{WIKITEXT_LICENSE if name.startswith('corpus.') else CC_BY_SA_4} |"
           for name, task, source, key, unit in rows])
    upos = info["labeling.train.jsonl"]["labels"]
    ct, cv = info["corpus.train.txt"], info["corpus.validation.txt"]
    pt, pv = info["pairs.train.jsonl"], info["pairs.validation.jsonl"]
    gt, gv = info["generation.train.csv"], info["generation.validation.csv"]
    kt, kv = info["classification.train.jsonl"], info["classification.validation.jsonl"]

    def distribution(c):
        return ", ".join(f"`{label}` {count:,} ({count / c['examples']:.1%})"
                         for label, count in c["label_counts"].items())

    majority = max(kv["label_counts"], key=kv["label_counts"].get)
    return f"""# Data samples for `hf-lineage lineage`

Small samples of three public datasets whose licenses allow redistribution, embedded so that `hf-lineage lineage`
runs without network access: a pretraining corpus (WikiText-2) and one data set for each of the four task types
(UD English EWT for sequence labeling, E2E NLG for classification, sentence pairs and generation).

They are written by `scripts/make_lineage_samples.py` (deterministic, seeded: re-running it reproduces every file
byte for byte; its docstring gives the exact procedure) from unchanged copies of the source files.
`manifest.json` lists every data file with its counts, source, license and sha256, and each task's metric and labels.

**License.** These derived data files are distributed under the license of their source dataset (CC BY-SA;
ShareAlike: adaptations must be shared under the same license), separately from the hf_lineage code, which is
licensed under Apache-2.0. The Apache-2.0 license does not apply to these files. Changes made: selection of
articles, sentences and rows, and re-formatting into JSON lines / CSV, as described below.

{table}

## WikiText-2: `corpus.train.txt`, `corpus.validation.txt`

- Source: {SOURCES["wikitext"]}, files `wiki.train.tokens` and `wiki.valid.tokens` (byte-identical to
  `word_language_model/data/wikitext-2/{{train,valid}}.txt` in pytorch/examples, commit
  77f55b912142e11fcfdf5b530231fb9c52f181e8).
- Derived: the first whole articles of each file, lines unchanged (WikiText format: ` = Title = ` and
  ` = = Section = = ` heading lines, a line holding one space between paragraphs, one paragraph per line, tokens
  separated by single spaces, rare words as `<unk>`), up to the article boundary closest to 600,000 (train) and
  40,000 (validation) whitespace tokens: train {ct["articles"]} articles, {ct["lines"]:,} lines, {ct["words"]:,}
  tokens; validation {cv["articles"]} articles, {cv["lines"]:,} lines, {cv["words"]:,} tokens.
- License: WikiText is distributed by its authors under the Creative Commons Attribution-ShareAlike license
  (CC BY-SA), as the source states, without a version number (the current version, CC BY-SA 4.0:
  {CC_BY_SA_4_URL}).
- Citation: Stephen Merity, Caiming Xiong, James Bradbury and Richard Socher. 2016. *Pointer Sentinel Mixture
  Models*. arXiv:1609.07843.

## UD English EWT: `labeling.*.jsonl`

- Source: {SOURCES["ewt"]}, UniversalDependencies/UD_English-EWT commit
  15d613d8447b3478787d4c278730a1e48a945efb (May 2025), files `en_ewt-ud-train.conllu` and `en_ewt-ud-dev.conllu`.
  The EWT is the English Web Treebank (LDC2012T13) re-annotated in Universal Dependencies.
- `labeling.*.jsonl` — UPOS tagging, one `{{"tokens": [...], "tags": [...]}}` per line. Words are the syntactic
  words (FORM) with their UPOS; multiword-token lines (`1-2`) and empty nodes (`8.1`) are skipped. Sentences of 3
  to 60 words (a repeated word sequence counted once), sampled with seed 0, the same number from each genre (the
  `# sent_id` prefix) where the data allows, in shuffled order (the first N lines are a fair sub-sample).
  Train {n("labeling.train.jsonl")} sentences ({genres("labeling.train.jsonl")}),
  {n("labeling.train.jsonl", "words")} words; validation {n("labeling.validation.jsonl")} sentences
  ({genres("labeling.validation.jsonl")}), {n("labeling.validation.jsonl", "words")} words.
  Labels: {len(upos)} UPOS tags ({", ".join(upos)}). Metric: token accuracy.
  The validation file must hold at least {LABELING_MIN_VALIDATION_WORDS:,} words (a tight interval on token
  accuracy): 1,000 sentences do; the script would take more otherwise.
- License: Creative Commons Attribution-ShareAlike 4.0 International (CC BY-SA 4.0), {CC_BY_SA_4_URL}.
- Earlier versions also held a genre classification task built from EWT (the `# sent_id` prefix: answers, email,
  newsgroup, reviews, weblog); it was replaced by the E2E familyFriendly task below because every model stayed
  near the majority baseline on it.
- Citations: Natalia Silveira, Timothy Dozat, Marie-Catherine de Marneffe, Samuel Bowman, Miriam Connor, John Bauer
  and Christopher D. Manning. 2014. *A Gold Standard Dependency Corpus for English*. In Proceedings of LREC 2014.
  And Universal Dependencies: Marie-Catherine de Marneffe, Christopher D. Manning, Joakim Nivre and Daniel Zeman.
  2021. *Universal Dependencies*. Computational Linguistics 47(2): 255–308; https://universaldependencies.org/.

## E2E NLG: `classification.*.jsonl`, `pairs.*.jsonl`, `generation.*.csv`

- Source: {SOURCES["e2e"]}, tuetschek/e2e-dataset commit ab0d967dd5729ce455ef14ba9ffafc456a335264, files
  `testset_w_refs.csv` (pairs, classification) and `devset.csv` (generation, classification). Each row is a meaning
  representation (MR, e.g. `name[Alimentum], area[city centre], familyFriendly[no]`) and one crowd-sourced reference
  text. E2E's training set (`trainset.csv`) is not used: it is not among the shared copies.
- `classification.*.jsonl` — reading the `familyFriendly` slot back from a human reference, one
  `{{"sentence": ..., "label": ...}}` per line: a reference text, tokenized like WikiText, and its MR's
  `familyFriendly` value, `yes` or `no`, or `not mentioned` when the MR has no `familyFriendly` slot (E2E
  references sometimes leave out a slot of their MR, so some `yes` / `no` labels are noisy). It replaces a genre
  classification task built from UD EWT, on which every model stayed near the majority baseline.
  Rows are drawn from both files with the split the other two E2E samples made, by MR: validation takes the
  references of the generation sample's {gv["mrs"]} validation MRs (`devset.csv`) and of the pairs sample's
  {pv["mrs"]} validation MRs (`testset_w_refs.csv`), train the references of every other MR, so no MR is in both
  files and no text of an E2E validation file is in an E2E training file. A text that occurs under two different
  MRs is dropped ({kt["dropped_ambiguous"]} texts: no single label); a text repeated under one MR counts once.
  Each file is a uniform sample (seed 0, in random order, so the first N lines are a fair sub-sample) of its
  candidates ({kt["candidates"]:,} train, {kv["candidates"]:,} validation), with the natural class distribution
  (no class subsampled).
  Train {kt["examples"]:,} references of {kt["mrs"]:,} MRs ({kt["from_devset"]:,} from `devset.csv`):
  {distribution(kt)}.
  Validation {kv["examples"]:,} references of {kv["mrs"]:,} MRs ({kv["from_devset"]:,} from `devset.csv`):
  {distribution(kv)}.
  Majority-class share of validation: {kv["majority_share"]:.3f} (`{majority}`). Labels: `no`, `not mentioned`,
  `yes`. Metric: accuracy.
- `pairs.*.jsonl` — paraphrase detection built from `testset_w_refs.csv`, one
  `{{"sentence1", "sentence2", "label", "mr_ids"}}` per line (`mr_ids`: the two sentences' MRs, numbered by first
  appearance in the source file; the recipes ignore it). The source's distinct MRs are split 80/20 (seed 0) into
  train ({pt["mrs"]} MRs) and validation ({pv["mrs"]} MRs): no MR is in both files. `paraphrase`: two different
  references of one MR. `different`: a reference of one MR and a reference of another MR with the same `name[...]`
  value (so the name does not give the answer away) and a different attribute set or values. Pairs are taken
  round-robin over the MRs, each text pair at most once; classes balanced, order shuffled; texts tokenized like
  WikiText (punctuation and clitics split off, `@-@` for a hyphen inside a word). Train
  {pt["examples"]:,} pairs ({pt["paraphrase"]:,} + {pt["different"]:,}); validation {pv["examples"]:,} pairs
  ({pv["paraphrase"]:,} + {pv["different"]:,}). Metric: accuracy.
- `generation.*.csv` — data-to-text, the original `mr,ref` CSV format (one row per reference; rows of an MR are
  adjacent, in the source's order; MR and reference tokenized like WikiText, e.g.
  `name [ Alimentum ] , area [ city centre ]`). `devset.csv`'s distinct MRs are split (seed 0): validation
  {gv["mrs"]} MRs with all their references ({gv["examples"]:,} rows), train the other {gt["mrs"]} MRs
  ({gt["examples"]:,} rows).
  Metric: BLEU, with all references of an MR.
- License: Creative Commons Attribution-ShareAlike 4.0 International (CC BY-SA 4.0), {CC_BY_SA_4_URL}.
- Why tokenized: the pretraining corpus (WikiText) is tokenized text, so the word-level families (NNLM, word2vec)
  know `riverside` and `,` but not `riverside,`; the task samples are given in the same form (EWT's words are
  UD's tokens, already split this way).
- Citation: Jekaterina Novikova, Ondřej Dušek and Verena Rieser. 2017. *The E2E Dataset: New Challenges For
  End-to-End Generation*. In Proceedings of the 18th Annual SIGdial Meeting on Discourse and Dialogue. arXiv:1706.09254.
"""


def build(data_dir: Path) -> dict[str, bytes]:
    """Every sample file's bytes, by file name (README.md and manifest.json included)."""
    files, info = {}, {}
    wikitext = data_dir / "wikitext-2"
    for split, name, target in (("train", "wiki.train.tokens", CORPUS_TRAIN_WORDS),
                                ("validation", "wiki.valid.tokens", CORPUS_VALIDATION_WORDS)):
        text, counts = wikitext_head(wikitext / name, target)
        files[f"corpus.{split}.txt"] = text.encode("utf-8")
        info[f"corpus.{split}.txt"] = dict(counts, source=f"wikitext-2/{name}")
    for split, name in EWT_FILES.items():
        sentences = ewt_sentences(data_dir / "ud_english_ewt" / name)
        data, counts = labeling_file(sentences, LABELING_SIZES[split],
                                     LABELING_MIN_VALIDATION_WORDS if split == "validation" else 0)
        files[f"labeling.{split}.jsonl"] = data
        info[f"labeling.{split}.jsonl"] = dict(counts, source=f"ud_english_ewt/{name}")
    e2e = data_dir / "e2e_nlg"
    for split, (data, counts) in classification_files(e2e / "devset.csv", e2e / "testset_w_refs.csv").items():
        files[f"classification.{split}.jsonl"] = data
        info[f"classification.{split}.jsonl"] = dict(counts, source="e2e_nlg/devset.csv + e2e_nlg/testset_w_refs.csv")
    for split, (data, counts) in pairs_files(data_dir / "e2e_nlg" / "testset_w_refs.csv").items():
        files[f"pairs.{split}.jsonl"] = data
        info[f"pairs.{split}.jsonl"] = dict(counts, source="e2e_nlg/testset_w_refs.csv")
    for split, (data, counts) in generation_files(data_dir / "e2e_nlg" / "devset.csv").items():
        files[f"generation.{split}.csv"] = data
        info[f"generation.{split}.csv"] = dict(counts, source="e2e_nlg/devset.csv")

    order = ["corpus", *(prefix for prefix, _ in TASKS.values())]  # the manifest lists corpus, then task order
    files = dict(sorted(files.items(), key=lambda item: (order.index(item[0].split(".")[0]), "validation" in item[0])))
    manifest = {"files": {}, "corpus": {"train": "corpus.train.txt", "validation": "corpus.validation.txt"},
                "tasks": {}}
    for name, data in files.items():
        entry = {}
        if name.startswith("corpus."):
            entry.update(corpus="wikitext-2", split=name.split(".")[1], lines=info[name]["lines"],
                         words=info[name]["words"], license=WIKITEXT_LICENSE)
        else:
            prefix, split = name.split(".")[:2]
            task = next(t for t, (p, _) in TASKS.items() if p == prefix)
            entry.update(task=task, split=split, examples=info[name]["examples"], license=CC_BY_SA_4)
            if "words" in info[name]:
                entry["words"] = info[name]["words"]
            if "mrs" in info[name]:
                entry["mrs"] = info[name]["mrs"]
            if "label_counts" in info[name]:
                entry.update(label_counts=info[name]["label_counts"], majority_share=info[name]["majority_share"])
        entry.update(source=info[name]["source"], sha256=sha256(data))
        manifest["files"][name] = entry
    for task, (prefix, metric) in TASKS.items():
        entry = {"train": f"{prefix}.train.{'csv' if task == 'generation' else 'jsonl'}"}
        entry["validation"] = entry["train"].replace(".train.", ".validation.")
        entry["metric"] = metric
        if "labels" in info[entry["train"]]:
            entry["labels"] = info[entry["train"]]["labels"]
        manifest["tasks"][task] = entry
    files["manifest.json"] = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    files["README.md"] = readme(info).encode("utf-8")
    return files


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                        help=f"the shared data folder (default: {DEFAULT_DATA_DIR})")
    parser.add_argument("--output-dir", type=Path, default=DEFAULT_OUTPUT_DIR,
                        help=f"where the samples are written (default: {DEFAULT_OUTPUT_DIR})")
    args = parser.parse_args(argv)
    needed = ["wikitext-2/wiki.train.tokens", "wikitext-2/wiki.valid.tokens",
              *(f"ud_english_ewt/{name}" for name in EWT_FILES.values()),
              "e2e_nlg/testset_w_refs.csv", "e2e_nlg/devset.csv"]
    missing = [name for name in needed if not (args.data_dir / name).is_file()]
    if missing:
        parser.exit(2, f"error: {args.data_dir} lacks {', '.join(missing)}\n")
    files = build(args.data_dir)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (args.output_dir / name).write_bytes(data)
    total = sum(map(len, files.values()))
    print(f"wrote {len(files)} files, {total:,} bytes, to {args.output_dir}")
    for name, entry in json.loads(files["manifest.json"])["files"].items():
        counts = ", ".join(f"{key} {entry[key]:,}" for key in ("lines", "examples", "words", "mrs") if key in entry)
        if "label_counts" in entry:
            counts += f"; labels {entry['label_counts']}, majority share {entry['majority_share']:.3f}"
        print(f"  {name}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
