"""Extractive question answering for every lineage family: encoding a question and its passage into overlapping
windows, reading the best answer spans back from start/end logits, and ``LineageQuestionAnsweringPipeline``.

transformers 5 removed its ``question-answering`` pipeline; this one brings back its behaviour for the lineage
models (and any ``AutoModelForQuestionAnswering`` with a fast tokenizer): the passage is cut into windows of
``max_seq_len`` tokens overlapping by ``doc_stride``, each window is scored, and the answer is the best span over
all windows, at most ``max_answer_len`` tokens, inside the passage, mapped back to characters. With
``handle_impossible_answer`` the empty answer (the score at position 0) competes as in SQuAD 2.0.

Two ways reach it through ``pipeline("question-answering", ...)``:

* ``import hf_lineage`` registers it with transformers' ``PIPELINE_REGISTRY`` for the task (``hf_lineage.registry``),
  so it serves any extractive QA model — a lineage family's, or transformers' own (``BertForQuestionAnswering``);
* every lineage ``*ForQuestionAnswering`` names this file in ``config.custom_pipelines`` when saved and carries a
  copy of it (``QuestionAnsweringPipelineMixin`` in ``modeling_lineage_utils.py``), so
  ``pipeline("question-answering", model=folder, trust_remote_code=True)`` builds it without hf_lineage installed,
  from the folder or its Hub copy.

With hf_lineage imported, the first way serves a saved folder too, without ``trust_remote_code``: a lineage config
leaves the folder's entry out on loading when the registered pipeline is this one (``RegisteredPipelinesMixin`` in
``configuration_lineage_utils.py``). ``hf_lineage.tasks.question_answering.question_answering_pipeline(folder)``
builds it directly.

Encoding: question first, as every family reads it (GPT: ``<s> question $ passage <e>``; a causal model must
have read the question before the passage). Fast tokenizers (every family's, ELMo's ``LineageElmoTokenizerFast``
included) give character offsets and overflowing windows themselves. ELMo's Python tokenizer
(``LineageElmoTokenizer``) splits on whitespace: its windows and offsets are made here from the whitespace-separated
words of the passage, which is exactly how it splits (an answer is then a run of whole words).

This file is copied next to a saved model, so it imports only torch, numpy and transformers.
"""

import re

import numpy as np
from transformers import Pipeline

# Families whose QA heads read no segment ids: GPT marks the passage with its delimiter ``$``, and its
# ``token_type_ids`` would be embedded as tokens (GPT-1's convention), not as segments.
NO_SEGMENT_IDS = ("lineage-gpt",)
CUSTOM_PIPELINE = {
    "question-answering": {
        "impl": "pipeline_lineage_question_answering.LineageQuestionAnsweringPipeline",
        "pt": ["AutoModelForQuestionAnswering"],
    }
}


def uses_segment_ids(config) -> bool:
    return getattr(config, "model_type", None) not in NO_SEGMENT_IDS


def custom_pipelines_with_question_answering(custom_pipelines=None) -> dict:
    """``config.custom_pipelines`` with this file's question-answering entry added (a new dict: transformers
    rewrites the entry it reads in place, and a shared one would end up in the next config written)."""
    merged = dict(custom_pipelines or {})
    merged.update({task: {key: list(value) if isinstance(value, (list, tuple)) else value
                          for key, value in entry.items()} for task, entry in CUSTOM_PIPELINE.items()})
    return merged


def pipeline_uses_segment_ids(config, tokenizer) -> bool:
    """Whether the pipeline gives the model ``token_type_ids``. A lineage family: as in fine-tuning
    (``uses_segment_ids``). Another library's model: when its tokenizer lists them among its model inputs, as
    transformers 4's question-answering pipeline did (DistilBERT's does not, and its model takes none)."""
    if str(getattr(config, "model_type", "")).startswith("lineage-"):
        return uses_segment_ids(config)
    return "token_type_ids" in (getattr(tokenizer, "model_input_names", None) or ())


def _word_spans(text: str):
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def encode_question_context(tokenizer, questions, contexts, max_length: int, doc_stride: int,
                            segment_ids: bool = True) -> dict:
    """Encode (question, passage) pairs into windows: a dict of per-window lists — the model inputs (``input_ids``,
    ``attention_mask``, ``token_type_ids`` when ``segment_ids``, ELMo's ``char_ids``), ``offset_mapping`` (a
    (start, end) character span in the passage for every passage token, None for every other token) and
    ``example_index`` (which pair the window is from). A passage longer than a window is cut into windows that
    overlap by ``doc_stride`` tokens (transformers' ``stride``)."""
    questions = [q.lstrip() for q in questions]  # leading spaces only waste room (transformers' run_qa does this)
    contexts = list(contexts)
    if getattr(tokenizer, "is_fast", False):
        encoding = tokenizer(
            questions, contexts, truncation="only_second", max_length=max_length, stride=doc_stride,
            return_overflowing_tokens=True, return_offsets_mapping=True,
            return_token_type_ids=True if segment_ids else None,
        )
        offsets = []
        for i, row in enumerate(encoding["offset_mapping"]):
            sequence_ids = encoding.sequence_ids(i)
            offsets.append([tuple(span) if sequence_ids[k] == 1 else None for k, span in enumerate(row)])
        out = {key: list(encoding[key]) for key in encoding.keys()
               if key not in ("offset_mapping", "overflow_to_sample_mapping")}
        if not segment_ids:
            out.pop("token_type_ids", None)
        out["offset_mapping"] = offsets
        out["example_index"] = list(encoding["overflow_to_sample_mapping"])
        return out
    return _encode_words(tokenizer, questions, contexts, max_length, doc_stride, segment_ids)


def _encode_words(tokenizer, questions, contexts, max_length, doc_stride, segment_ids):
    """The windows for a word-level slow tokenizer (``LineageElmoTokenizer``): one token per whitespace-separated
    word."""
    out = {"offset_mapping": [], "example_index": []}
    special = tokenizer.num_special_tokens_to_add(pair=True)
    for index, (question, context) in enumerate(zip(questions, contexts)):
        question_words, spans = question.split(), _word_spans(context)
        budget = max_length - len(question_words) - special
        if budget <= doc_stride:
            raise ValueError(f"max_seq_length={max_length} leaves {budget} passage words next to a question of "
                             f"{len(question_words)} words, not more than doc_stride={doc_stride}")
        start = 0
        while True:
            window = spans[start:start + budget]
            encoding = tokenizer(question_words, [context[a:b] for a, b in window], is_split_into_words=True,
                                 return_token_type_ids=True, return_special_tokens_mask=True)
            passage = [k for k, (segment, mark) in enumerate(zip(encoding["token_type_ids"],
                                                                 encoding["special_tokens_mask"]))
                       if segment == 1 and not mark]
            offsets = [None] * len(encoding["input_ids"])
            for k, span in zip(passage, window):
                offsets[k] = span
            for key in encoding.keys():
                if key == "special_tokens_mask" or (key == "token_type_ids" and not segment_ids):
                    continue
                out.setdefault(key, []).append(encoding[key])
            out["offset_mapping"].append(offsets)
            out["example_index"].append(index)
            if start + budget >= len(spans):
                break
            start += budget - doc_stride
    return out


def _trimmed(context: str, start: int, end: int):
    """The span without the spaces a byte-level BPE token carries in its offsets (GPT's ``Ġword``)."""
    while start < end and context[start].isspace():
        start += 1
    while end > start and context[end - 1].isspace():
        end -= 1
    return start, end


def best_answers(windows, context: str, n_best: int = 20, max_answer_length: int = 30,
                 with_null: bool = False, null_score_diff_threshold: float = 0.0):
    """The answer to one question from the logits of its windows, as transformers' ``postprocess_qa_predictions``
    reads them. ``windows``: (start_logits, end_logits, offsets) per window, offsets as ``encode_question_context``
    gives them (None outside the passage). A candidate span starts and ends inside the passage, ends at or after its
    start and is at most ``max_answer_length`` tokens long; its score is start logit + end logit; the ``n_best``
    best starts and ends of each window are tried. The null score (SQuAD 2.0) is position 0's start + end logit,
    the smallest over the windows.

    Returns ``(answer, candidates, null_score)``: ``answer`` is the best span's text — or "" with ``with_null`` when
    the null score beats it by more than ``null_score_diff_threshold`` (or no span is valid) — and ``candidates``
    the n best, best first, dicts with ``text``, ``start``/``end`` (characters), ``score`` and ``probability``
    (softmax over the listed candidates, the null answer among them with ``with_null``)."""
    candidates, null_score = [], None
    for start_logits, end_logits, offsets in windows:
        start_logits, end_logits = np.asarray(start_logits, dtype=np.float64), np.asarray(end_logits,
                                                                                         dtype=np.float64)
        length = min(len(offsets), len(start_logits))
        window_null = float(start_logits[0] + end_logits[0])
        null_score = window_null if null_score is None else min(null_score, window_null)
        starts = np.argsort(start_logits[:length])[::-1][:n_best]
        ends = np.argsort(end_logits[:length])[::-1][:n_best]
        for s in starts:
            for e in ends:
                if offsets[s] is None or offsets[e] is None or e < s or e - s + 1 > max_answer_length:
                    continue
                begin, finish = _trimmed(context, offsets[s][0], offsets[e][1])
                if begin >= finish:
                    continue
                candidates.append({"text": context[begin:finish], "start": begin, "end": finish,
                                   "score": float(start_logits[s] + end_logits[e])})
    candidates.sort(key=lambda c: c["score"], reverse=True)
    # The same span found in two overlapping windows counts once, with its best score.
    seen, unique = set(), []
    for candidate in candidates:
        if (candidate["start"], candidate["end"]) not in seen:
            seen.add((candidate["start"], candidate["end"]))
            unique.append(candidate)
    candidates = unique[:n_best]
    listed = candidates + ([{"text": "", "start": 0, "end": 0, "score": null_score}] if with_null else [])
    if listed:
        scores = np.array([c["score"] for c in listed])
        probabilities = np.exp(scores - scores.max())
        probabilities /= probabilities.sum()
        for candidate, probability in zip(listed, probabilities):
            candidate["probability"] = float(probability)
    if not candidates:
        answer = ""
    elif with_null and null_score - candidates[0]["score"] > null_score_diff_threshold:
        answer = ""
    else:
        answer = candidates[0]["text"]
    listed.sort(key=lambda c: c["score"], reverse=True)
    return answer, listed, null_score


class LineageQuestionAnsweringPipeline(Pipeline):
    """``pipeline("question-answering")`` as transformers 4 had it, for extractive QA models.

    Call it with ``question=..., context=...`` (strings, or lists of the same length), a ``{"question", "context"}``
    dict or a list of them. Returns ``{"score", "start", "end", "answer"}`` per question (a list of ``top_k`` such
    dicts when ``top_k > 1``); ``context[start:end] == answer``. Options: ``top_k`` (1), ``doc_stride`` (128),
    ``max_answer_len`` (15), ``max_seq_len`` (384, capped by the tokenizer's limit), ``handle_impossible_answer``
    (False: SQuAD 2.0's empty answer may win, with start = end = 0)."""

    def _sanitize_parameters(self, top_k=None, doc_stride=None, max_answer_len=None, max_seq_len=None,
                             handle_impossible_answer=None, **kwargs):
        preprocess, postprocess = {}, {}
        if doc_stride is not None:
            preprocess["doc_stride"] = doc_stride
        if max_seq_len is not None:
            preprocess["max_seq_len"] = max_seq_len
        if top_k is not None:
            if top_k < 1:
                raise ValueError(f"top_k must be at least 1, got {top_k}")
            postprocess["top_k"] = top_k
        if max_answer_len is not None:
            if max_answer_len < 1:
                raise ValueError(f"max_answer_len must be at least 1, got {max_answer_len}")
            postprocess["max_answer_len"] = max_answer_len
        if handle_impossible_answer is not None:
            postprocess["handle_impossible_answer"] = handle_impossible_answer
        return preprocess, {}, postprocess

    def __call__(self, *args, **kwargs):
        if args and len(args) == 2 and all(isinstance(a, str) for a in args):
            inputs = {"question": args[0], "context": args[1]}
        elif args:
            inputs = args[0]
        elif "question" in kwargs and "context" in kwargs:
            question, context = kwargs.pop("question"), kwargs.pop("context")
            if isinstance(question, str) != isinstance(context, str) or (
                    not isinstance(question, str) and len(question) != len(context)):
                raise ValueError("question and context must both be strings or lists of the same length")
            inputs = ({"question": question, "context": context} if isinstance(question, str)
                      else [{"question": q, "context": c} for q, c in zip(question, context)])
        else:
            raise ValueError("Give question=... and context=..., or {'question': ..., 'context': ...}")
        for item in inputs if isinstance(inputs, list) else [inputs]:
            if not isinstance(item, dict) or not item.get("context") or "question" not in item:
                raise ValueError(f"Each input needs a question and a non-empty context, got {item!r}")
        return super().__call__(inputs, **kwargs)

    def preprocess(self, example, max_seq_len=384, doc_stride=128):
        limit = getattr(self.tokenizer, "model_max_length", None) or max_seq_len
        positions = getattr(self.model.config, "max_position_embeddings", None) or max_seq_len
        max_length = int(min(max_seq_len, limit, positions))
        doc_stride = min(doc_stride, max_length // 2)
        windows = encode_question_context(self.tokenizer, [example["question"]], [example["context"]], max_length,
                                          doc_stride,
                                          segment_ids=pipeline_uses_segment_ids(self.model.config, self.tokenizer))
        offsets = windows.pop("offset_mapping")
        windows.pop("example_index")
        model_inputs = self.tokenizer.pad(windows, return_tensors="pt")
        return {"model_inputs": dict(model_inputs), "offsets": offsets, "context": example["context"]}

    def _forward(self, inputs):
        output = self.model(**inputs["model_inputs"])
        return {"start_logits": output.start_logits, "end_logits": output.end_logits, "offsets": inputs["offsets"],
                "context": inputs["context"]}

    def postprocess(self, outputs, top_k=1, max_answer_len=15, handle_impossible_answer=False):
        start, end = outputs["start_logits"].float().numpy(), outputs["end_logits"].float().numpy()
        windows = list(zip(start, end, outputs["offsets"]))
        _, candidates, _ = best_answers(windows, outputs["context"], n_best=max(20, top_k),
                                        max_answer_length=max_answer_len, with_null=handle_impossible_answer)
        answers = [{"score": c["probability"], "start": c["start"], "end": c["end"], "answer": c["text"]}
                   for c in candidates[:top_k]]
        if not answers:
            answers = [{"score": 0.0, "start": 0, "end": 0, "answer": ""}]
        return answers[0] if top_k == 1 else answers


__all__ = ["LineageQuestionAnsweringPipeline", "best_answers", "custom_pipelines_with_question_answering",
           "encode_question_context", "pipeline_uses_segment_ids", "uses_segment_ids"]
