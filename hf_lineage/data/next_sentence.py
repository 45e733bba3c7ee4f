"""BERT next-sentence-prediction pairs, mirroring ``create_instances_from_document`` in Google's
``create_pretraining_data.py``.

Input format (as BERT's): one sentence per line, a blank line between documents.  Output examples:

    {"input_ids": [CLS] A [SEP] B [SEP],
     "token_type_ids": 0 for "[CLS] A [SEP]", 1 for "B [SEP]",
     "next_sentence_label": 0 if B really follows A, 1 if B is a random span}

The label convention is transformers' (``BertForPreTraining``: 0 = "is next", 1 = "is random"),
i.e. the original's ``is_random_next`` as an int.  Masking is not done here: feed the examples to
:class:`hf_lineage.data.masked_lm.DataCollatorForMaskedLM` (dynamic masking).

One deliberate difference: the original tried 10 times to draw a random document different from the
current one and silently accepted the same one after that; we draw directly from the *other*
documents, so a "random" B never comes from A's document.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from typing import Any


def documents_from_text(lines: Iterable[str]) -> list[list[str]]:
    """Split BERT-format text (one sentence per line, blank line between documents) into documents.

    >>> documents_from_text(["a b.", "c d.", "", "", "e f."])
    [['a b.', 'c d.'], ['e f.']]
    """
    documents: list[list[str]] = [[]]
    for line in lines:
        line = line.strip()
        if line:
            documents[-1].append(line)
        elif documents[-1]:
            documents.append([])
    return [doc for doc in documents if doc]


# WikiText marks articles with " = Title = " lines (sections use " = = Section = = "); a line is a paragraph.
_WIKITEXT_ARTICLE = re.compile(r"^ ?= [^=].* = ?$")
_WIKITEXT_SENTENCE_END = re.compile(r"(?<= [.!?]) (?=\S)")


def looks_like_wikitext(lines: Iterable[str]) -> bool:
    """True when the text has WikiText's article headings (checked on the lines given, e.g. the first 1000)."""
    return any(_WIKITEXT_ARTICLE.match(line.rstrip("\n")) for line in lines)


def split_line(line: str, wikitext: bool) -> tuple[bool, list[str]]:
    """One line of input as ``(starts_new_document, sentences)``.

    BERT's format: a line is a sentence and a blank line ends a document. WikiText: an article heading starts a
    document, blank lines and section headings are skipped, and each paragraph line is split into sentences at
    " . " (the text is pre-tokenised), so NSP sees real sentence boundaries inside real documents.

    >>> split_line(" = Valkyria Chronicles = ", wikitext=True)
    (True, [])
    >>> split_line("It was released . It sold well .", wikitext=True)
    (False, ['It was released .', 'It sold well .'])
    """
    text = line.strip()
    if not wikitext:
        return (not text, [text] if text else [])
    if _WIKITEXT_ARTICLE.match(line.rstrip("\n")):
        return True, []
    if not text or text.startswith("= "):
        return False, []
    return False, [s.strip() for s in _WIKITEXT_SENTENCE_END.split(text) if s.strip()]


def truncate_seq_pair(tokens_a: list[int], tokens_b: list[int], max_num_tokens: int, rng: random.Random) -> None:
    """Truncate in place, one token at a time from the longer side, randomly its front or back.

    Random front/back (rather than always the back) avoids a bias towards sentence ends, as the
    original notes.
    """
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        trunc = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del trunc[0]
        else:
            trunc.pop()


def _instances_from_document(
    docs: list[list[list[int]]],
    doc_index: int,
    max_seq_length: int,
    short_seq_prob: float,
    nsp_probability: float,
    cls_id: int,
    sep_id: int,
    rng: random.Random,
) -> list[dict[str, Any]]:
    document = docs[doc_index]
    max_num_tokens = max_seq_length - 3  # room for [CLS], [SEP], [SEP]
    # Mostly fill the sequence (pretraining efficiency), but sometimes use shorter ones so the model
    # also sees the short inputs of fine-tuning.  Chosen once per document, as in the original.
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)

    instances = []
    chunk: list[list[int]] = []
    chunk_length = 0
    i = 0
    while i < len(document):
        chunk.append(document[i])
        chunk_length += len(document[i])
        if i == len(document) - 1 or chunk_length >= target_seq_length:
            # Split the chunk of whole sentences into A (first a_end sentences) and B.
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            tokens_a = [t for sentence in chunk[:a_end] for t in sentence]
            tokens_b: list[int] = []
            # A one-sentence chunk has no true continuation, so it must get a random B.
            is_random_next = len(chunk) == 1 or rng.random() < nsp_probability
            if is_random_next:
                target_b_length = target_seq_length - len(tokens_a)
                other = rng.randint(0, len(docs) - 2)
                other += other >= doc_index  # skip the current document
                random_document = docs[other]
                start = rng.randint(0, len(random_document) - 1)
                for sentence in random_document[start:]:
                    tokens_b.extend(sentence)
                    if len(tokens_b) >= target_b_length:
                        break
                # "Put back" the sentences of this chunk that B did not use, so they are not wasted.
                i -= len(chunk) - a_end
            else:
                tokens_b = [t for sentence in chunk[a_end:] for t in sentence]
            truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
            instances.append(
                {
                    "input_ids": [cls_id, *tokens_a, sep_id, *tokens_b, sep_id],
                    "token_type_ids": [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1),
                    "next_sentence_label": int(is_random_next),
                }
            )
            chunk, chunk_length = [], 0
        i += 1
    return instances


def create_next_sentence_examples(
    documents: Sequence[Sequence[str]],
    tokenizer: Any,
    *,
    max_seq_length: int = 128,
    short_seq_prob: float = 0.1,
    nsp_probability: float = 0.5,
    seed: int = 12345,
    dupe_factor: int = 1,
) -> list[dict[str, Any]]:
    """Build shuffled BERT NSP examples from documents (lists of sentence strings).

    Sentences are tokenized without special tokens; empty ones and empty documents are dropped.
    ``dupe_factor`` repeats the pass over the corpus (each pass splits differently), as the original.
    Deterministic for a fixed ``seed``.  Raises ``ValueError`` with fewer than 2 non-empty documents
    (a random B must come from another document).

    >>> docs = documents_from_text(open("corpus.txt"))                        # doctest: +SKIP
    >>> examples = create_next_sentence_examples(docs, tokenizer, max_seq_length=128)  # doctest: +SKIP
    >>> examples[0].keys()                                                    # doctest: +SKIP
    dict_keys(['input_ids', 'token_type_ids', 'next_sentence_label'])
    """
    if tokenizer.cls_token_id is None or tokenizer.sep_token_id is None:
        raise ValueError("The tokenizer needs [CLS] and [SEP] tokens.")
    documents = [list(doc) for doc in documents]  # allow generators; iterated twice below
    # Tokenize all sentences in one batched call (fast), then regroup per document.
    sentences = [s.strip() for doc in documents for s in doc]
    encoded = iter(tokenizer(sentences, add_special_tokens=False)["input_ids"] if sentences else [])
    docs = [[next(encoded) for _ in doc] for doc in documents]
    return next_sentence_examples_from_ids(
        docs, tokenizer.cls_token_id, tokenizer.sep_token_id, max_seq_length=max_seq_length,
        short_seq_prob=short_seq_prob, nsp_probability=nsp_probability, seed=seed, dupe_factor=dupe_factor,
    )


def next_sentence_examples_from_ids(
    docs: Sequence[Sequence[Sequence[int]]],
    cls_id: int,
    sep_id: int,
    *,
    max_seq_length: int = 128,
    short_seq_prob: float = 0.1,
    nsp_probability: float = 0.5,
    seed: int = 12345,
    dupe_factor: int = 1,
) -> list[dict[str, Any]]:
    """:func:`create_next_sentence_examples` on documents already tokenized (lists of sentences of ids).

    The pre-training engine tokenizes with ``datasets.map`` (parallel, cached) and calls this.
    """
    if max_seq_length < 5:
        raise ValueError("max_seq_length must be >= 5 ([CLS] A [SEP] B [SEP] with non-empty A and B).")
    docs = [[list(s) for s in doc if len(s)] for doc in docs]
    docs = [doc for doc in docs if doc]
    if len(docs) < 2:
        raise ValueError(
            f"Next-sentence examples need at least 2 non-empty documents (got {len(docs)}): "
            "random segments B are drawn from a different document."
        )
    rng = random.Random(seed)
    instances = []
    for _ in range(dupe_factor):
        for doc_index in range(len(docs)):
            instances.extend(
                _instances_from_document(
                    docs, doc_index, max_seq_length, short_seq_prob, nsp_probability, cls_id, sep_id, rng
                )
            )
    rng.shuffle(instances)
    return instances


def next_sentence_dataset(documents: Sequence[Sequence[str]], tokenizer: Any, **kwargs: Any):
    """Like :func:`create_next_sentence_examples` but returns a ``datasets.Dataset``.

    >>> ds = next_sentence_dataset(docs, tokenizer, max_seq_length=128, seed=0)  # doctest: +SKIP
    >>> ds = ds.map(lambda ex, i: {"mask_seed": i}, with_indices=True)          # doctest: +SKIP
    """
    import datasets  # optional dependency, only needed here

    return datasets.Dataset.from_list(create_next_sentence_examples(documents, tokenizer, **kwargs))
