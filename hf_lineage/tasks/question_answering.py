"""Extractive question answering (SQuAD v1.1 / v2.0) for every family, with two checks of whether a score comes
from reading: a passage-only input ablation and AddSent-style distractors.

Every family's ``AutoModelForQuestionAnswering`` gives a start and an end logit per token; the answer is the best
span of the passage, read back as transformers' ``run_qa.py`` / ``utils_qa.py`` do it:

* training features (``prepare_train_features``): ``question + passage`` — question first, which GPT's causal
  reading needs (``<s> question $ passage <e>``) — cut into windows of ``--max_seq_length`` tokens overlapping by
  ``--doc_stride``; a window's labels are the tokens where the first gold answer starts and ends, or position 0
  (BERT's ``[CLS]``, GPT's ``<s>``) when the window does not hold the whole answer or the question has none;
* evaluation (``best_answers`` in ``models/pipeline_lineage_question_answering.py``): the ``--n_best_size`` best
  starts and ends of every window, spans inside the passage of at most ``--max_answer_length`` tokens, scored by
  start + end logit, the best over all windows of a question; with ``--version_2_with_negative`` the empty answer
  wins when position 0's score beats the best span by more than ``--null_score_diff_threshold``;
* scores: the shipped ``squad`` metric (exact match and F1 in percent, SQuAD's answer normalisation; ``HasAns_*``
  and ``NoAns_*`` when there are unanswerable questions).

Data: SQuAD's own JSON (``{"data": [{"paragraphs": [{"context", "qas": [...]}]}]}``, v1.1 or v2.0), or the flat
JSON lines of Hugging Face's ``squad`` / ``squad_v2`` (``{"id", "question", "context", "answers": {"text": [...],
"answer_start": [...]}}``), or ``--dataset_name squad`` / ``squad_v2`` from the Hub. Offline, the package ships a
SQuAD 2.0-style sample built from E2E NLG (``hf_lineage.samples.path("qa", "qa.train.jsonl")``). Every answer must
be found in its passage at its ``answer_start``; a training question without an answer needs
``--version_2_with_negative``.

Shortcut checks (in every ``--do_eval``, ``--shortcut_checks`` on by default; Kaushik & Lipton 2018, Jia & Liang
2017), reported next to the normal score:

* ``eval_passage_only_*``: the same model with the question replaced by an empty one. A model that reads the
  question loses most of its score; one that has learned "answer the name / the food" keeps it. (A question-only
  input has no extractive counterpart: without a passage there is no span to give.) ``--blank_question`` trains
  and evaluates a model on passages alone, the stronger baseline of Kaushik & Lipton: what can be learned at all
  without the question;
* ``eval_distractor_*``: each answerable question whose question names an entity (a run of capitalised words)
  gets a sentence appended to its passage that repeats the question's words with that entity swapped for another
  one of the data, plus another question's answer (``What kind of food does The Eagle serve ?`` →
  ``kind of food does The Punter serve Chinese .``): it shares words with the question but does not answer it.
  ``eval_distractor_original_*`` is the normal score on the same questions; the drop is what the distractor costs.

Families: BERT and GPT read the pair as one sequence; NNLM, word2vec, SVD and ELMo run their task BiLSTM over
``[question; passage]`` (``StaticVectorsForQuestionAnswering``). Word-level tokenizers give whole-word spans: an
answer must be a run of whole (whitespace-separated) words of the passage, as in the shipped sample.

Outputs: ``eval_predictions.json`` (id → answer), ``eval_nbest_predictions.json``, ``eval_shortcut_predictions.json``;
``--do_predict`` ``predict_predictions.json`` / ``predict_nbest_predictions.json``. The saved folder works with
``pipeline("question-answering", model=folder)`` after ``import hf_lineage``, and without hf_lineage with
``trust_remote_code=True`` (transformers 5 dropped that pipeline: the folder carries hf_lineage's, as every saved
lineage QA model does), or ``question_answering_pipeline(folder)``.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import shutil
from dataclasses import dataclass, field

import datasets
from transformers import (
    AutoModelForQuestionAnswering,
    AutoTokenizer,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
)

from .. import metrics as lineage_metrics
from ..data.gpt_tasks import task_token_ids
from ..data.readers import DataFormatError
from ..models import pipeline_lineage_question_answering as qa_pipeline_module
from ..models.modeling_lineage_utils import QuestionAnsweringPipelineMixin
from ..models.pipeline_lineage_question_answering import (
    LineageQuestionAnsweringPipeline,
    best_answers,
    custom_pipelines_with_question_answering,
    encode_question_context,
    uses_segment_ids,
)
from . import recipe_arguments, training
from .recipe_arguments import DataTrainingArguments, ModelArguments
from .splits import Split, hub_split, wanted_splits
from .training import RecipeTrainerMixin, family_of, family_rules

logger = logging.getLogger(__name__)

TASK = "question_answering"
COLUMNS = ("id", "question", "context", "answers")


@dataclass
class QuestionAnsweringArguments:
    """What extractive QA adds to the data arguments (``--max_seq_length`` is the window length)."""

    doc_stride: int | None = field(
        default=None, metadata={"help": "Tokens two windows of a long passage share (default: a quarter of "
                                        "--max_seq_length, at most 128, run_qa.py's value for 384-token windows)."})
    n_best_size: int = field(default=20, metadata={"help": "Best starts and ends tried per window."})
    max_answer_length: int = field(default=30, metadata={"help": "Longest answer, in tokens."})
    version_2_with_negative: bool = field(
        default=False, metadata={"help": "SQuAD 2.0: some questions have no answer; the empty answer may win."})
    null_score_diff_threshold: float = field(
        default=0.0, metadata={"help": "SQuAD 2.0: answer '' when the null score beats the best span by more."})
    question_column_name: str | None = field(default=None, metadata={"help": "Column with the question."})
    context_column_name: str | None = field(default=None, metadata={"help": "Column with the passage."})
    answer_column_name: str | None = field(default=None, metadata={"help": "Column with the answers."})
    shortcut_checks: bool = field(
        default=True, metadata={"help": "With --do_eval, also score the passage-only input and AddSent-style "
                                        "distractors (eval_passage_only_*, eval_distractor_*)."})
    blank_question: bool = field(
        default=False, metadata={"help": "Passage-only baseline: train and evaluate with every question empty."})
    distractor_seed: int = field(default=0, metadata={"help": "Seed of the distractors' entity and answer."})

    def __post_init__(self):
        for name in ("n_best_size", "max_answer_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} must be a positive integer, got {getattr(self, name)}")
        if self.doc_stride is not None and self.doc_stride < 0:
            raise ValueError(f"--doc_stride must be 0 or more, got {self.doc_stride}")


ARGUMENTS = (ModelArguments, DataTrainingArguments, QuestionAnsweringArguments, TrainingArguments)


def parse_arguments(argv=None):
    """(ModelArguments, DataTrainingArguments, QuestionAnsweringArguments, TrainingArguments) from ``argv`` (or a
    single ``.json`` file); a bare ``--freeze_base`` means true, as in the other recipes."""
    return recipe_arguments.parse_arguments(argv, dataclass_types=ARGUMENTS)


# --------------------------------------------------------------------------- data


def _flatten_squad(data: dict, path: str) -> list[dict]:
    rows = []
    for article in data["data"]:
        for paragraph in article.get("paragraphs", []):
            for qa in paragraph.get("qas", []):
                answers = qa.get("answers")
                if qa.get("is_impossible"):
                    answers = []
                row = {"id": str(qa.get("id", len(rows))), "question": qa.get("question"),
                       "context": paragraph.get("context")}
                if answers is not None:  # a test file may have none
                    row["answers"] = {"text": [a.get("text") for a in answers],
                                      "answer_start": [a.get("answer_start") for a in answers]}
                rows.append(row)
    if not rows:
        raise DataFormatError(path, None, "no questions in the SQuAD file")
    return rows


def read_qa_file(path: str) -> list[dict]:
    """Rows of a SQuAD JSON file (v1.1/v2.0, nested) or of flat JSON lines (or a JSON list) as in HF datasets."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No such file: {path}")
    with open(path, encoding="utf-8-sig") as f:
        text = f.read()
    if not text.strip():
        raise DataFormatError(path, None, "no examples")
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and "data" in whole:
        return _flatten_squad(whole, path)
    if isinstance(whole, list):
        return whole
    if isinstance(whole, dict):
        return [whole]
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise DataFormatError(path, number, f"not JSON ({error.msg})") from None
    return rows


def _answers_of(value, where: str, index):
    """``{"text": [...], "answer_start": [...]}`` from HF's dict or a list of SQuAD answer dicts."""
    if isinstance(value, list):
        value = {"text": [a.get("text") for a in value], "answer_start": [a.get("answer_start") for a in value]}
    if not isinstance(value, dict) or "text" not in value or "answer_start" not in value:
        raise ValueError(f"{where}: question {index}: answers must be {{'text': [...], 'answer_start': [...]}}, "
                         f"got {value!r}")
    texts, starts = list(value["text"] or []), list(value["answer_start"] or [])
    if len(texts) != len(starts):
        raise ValueError(f"{where}: question {index}: {len(texts)} answer texts but {len(starts)} answer_start values")
    return {"text": [str(t) for t in texts], "answer_start": [int(s) for s in starts]}


def standardize_qa(rows, where: str, qa_args: QuestionAnsweringArguments) -> datasets.Dataset:
    """Rows (dicts, or a Hub dataset) in the task's columns ``id``, ``question``, ``context`` and, when the data has
    them, ``answers``; every answer checked against its passage."""
    if isinstance(rows, datasets.Dataset):
        rows = rows.to_list()
    names = {"question": qa_args.question_column_name or "question",
             "context": qa_args.context_column_name or "context",
             "answers": qa_args.answer_column_name or "answers"}
    has_answers = any(isinstance(row, dict) and row.get(names["answers"]) is not None for row in rows)
    columns = {name: [] for name in COLUMNS if name != "answers" or has_answers}
    seen = set()
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"{where}: item {i} is not a JSON object")
        ident = str(row.get("id", i))
        for column in ("question", "context"):
            if not isinstance(row.get(names[column]), str):
                raise ValueError(f"{where}: question {ident}: no {names[column]!r} text (the columns are "
                                 f"{sorted(row)})")
        if ident in seen:
            raise ValueError(f"{where}: the id {ident!r} occurs twice")
        seen.add(ident)
        context = row[names["context"]]
        columns["id"].append(ident)
        columns["question"].append(row[names["question"]])
        columns["context"].append(context)
        if not has_answers:
            continue
        if names["answers"] not in row or row[names["answers"]] is None:
            raise ValueError(f"{where}: question {ident} has no {names['answers']!r} field (other questions do)")
        answers = _answers_of(row[names["answers"]], where, ident)
        for text, start in zip(answers["text"], answers["answer_start"]):
            if context[start:start + len(text)] != text:
                raise ValueError(f"{where}: question {ident}: the answer {text!r} is not at answer_start {start} "
                                 f"of its context (found {context[start:start + len(text)]!r} there)")
        columns["answers"].append(answers)
    return datasets.Dataset.from_dict(columns)


def load_qa_splits(data_args: DataTrainingArguments, qa_args: QuestionAnsweringArguments,
                   training_args) -> dict[str, Split]:
    """The splits the run needs, read, standardized, checked and cut to ``--max_*_samples``."""
    wanted = wanted_splits(data_args, training_args)
    hub = None
    if data_args.dataset_name is not None and not all(file for _, file, *_ in wanted):
        hub = datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name)
    splits = {}
    for split, file, limit, flag, option in wanted:
        if file is not None:
            source, rows = file, read_qa_file(file)
        else:
            source, rows = hub_split(hub, split, data_args, flag, option)
        if limit is not None:
            rows = rows.select(range(min(limit, len(rows)))) if isinstance(rows, datasets.Dataset) else rows[:limit]
        if len(rows) == 0:
            raise DataFormatError(source, None, "no examples")
        dataset = standardize_qa(rows, source, qa_args)
        if split in ("train", "validation") and "answers" not in dataset.column_names:
            raise ValueError(f"{source}: no answers ({qa_args.answer_column_name or 'answers'!r}); "
                             f"{'training' if split == 'train' else 'evaluation'} needs them")
        if split == "train" and not qa_args.version_2_with_negative:
            empty = [i for i, a in zip(dataset["id"], dataset["answers"]) if not a["text"]]
            if empty:
                raise ValueError(f"{source}: {len(empty)} questions have no answer (e.g. {empty[0]}): SQuAD 2.0 data "
                                 "needs --version_2_with_negative")
        splits[split] = Split(dataset, source)
    return splits


# --------------------------------------------------------------------------- features


def prepare_train_features(examples, tokenizer, max_length, doc_stride, segment_ids=True):
    """Windows with ``start_positions`` / ``end_positions``: the tokens of the first gold answer, or 0 (the null
    position) when the window does not hold it whole or there is none."""
    windows = encode_question_context(tokenizer, examples["question"], examples["context"], max_length, doc_stride,
                                      segment_ids)
    offsets, origin = windows.pop("offset_mapping"), windows.pop("example_index")
    starts, ends = [], []
    for window_offsets, index in zip(offsets, origin):
        answers = examples["answers"][index]
        start, end = 0, 0
        if answers["text"]:
            first = answers["answer_start"][0]
            last = first + len(answers["text"][0])
            passage = [k for k, span in enumerate(window_offsets) if span is not None]
            if passage and window_offsets[passage[0]][0] <= first and window_offsets[passage[-1]][1] >= last:
                start = max(k for k in passage if window_offsets[k][0] <= first)
                end = min(k for k in passage if window_offsets[k][1] >= last)
        starts.append(start)
        ends.append(end)
    windows["start_positions"], windows["end_positions"] = starts, ends
    return windows


@dataclass
class EvalFeatures:
    """The windows of an evaluation set: model inputs, and what reading answers back needs."""

    examples: datasets.Dataset
    inputs: datasets.Dataset
    offsets: list
    example_index: list


def prepare_eval_features(examples: datasets.Dataset, tokenizer, max_length, doc_stride, segment_ids=True):
    windows = encode_question_context(tokenizer, examples["question"], examples["context"], max_length, doc_stride,
                                      segment_ids)
    offsets, origin = windows.pop("offset_mapping"), windows.pop("example_index")
    return EvalFeatures(examples, datasets.Dataset.from_dict(windows), offsets, origin)


def read_answers(start_logits, end_logits, features: EvalFeatures, qa_args):
    """id → (answer, n-best list) from the windows' logits (Trainer pads them with -100 across batches)."""
    by_example = {}
    for k, index in enumerate(features.example_index):
        by_example.setdefault(index, []).append((start_logits[k], end_logits[k], features.offsets[k]))
    out = {}
    for index, (ident, context) in enumerate(zip(features.examples["id"], features.examples["context"])):
        answer, nbest, _ = best_answers(by_example.get(index, []), context, qa_args.n_best_size,
                                        qa_args.max_answer_length, qa_args.version_2_with_negative,
                                        qa_args.null_score_diff_threshold)
        out[ident] = (answer, nbest)
    return out


def squad_scores(answers: dict, examples: datasets.Dataset, version_2: bool) -> dict:
    metric = lineage_metrics.load("squad")
    predictions = [{"id": i, "prediction_text": answers[i][0]} for i in examples["id"]]
    references = [{"id": i, "answers": a} for i, a in zip(examples["id"], examples["answers"])]
    return metric.compute(predictions=predictions, references=references, version_2=version_2)


# --------------------------------------------------------------------------- shortcut checks


def passage_only(examples: datasets.Dataset) -> datasets.Dataset:
    """The examples with every question replaced by an empty one (Kaushik & Lipton 2018's passage-only input)."""
    return examples.map(lambda row: {"question": ""}, desc="Blanking the questions")


QUESTION_WORDS = {"what", "which", "who", "whom", "whose", "where", "when", "why", "how",
                  "in", "at", "on", "of", "for", "to", "from", "by", "with", "about"}


def _entity_runs(words: list[str]) -> list[tuple[int, int]]:
    """(start, end) of each run of capitalised words, the question's first word left out (capitalised anyway)."""
    runs, start = [], None
    for k, word in enumerate(words + [""]):
        capital = k > 0 and word[:1].isupper()
        if capital and start is None:
            start = k
        elif not capital and start is not None:
            runs.append((start, k))
            start = None
    return runs


def _normalized(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def add_distractors(examples: datasets.Dataset, seed: int = 0) -> tuple[datasets.Dataset, list[str]]:
    """AddSent-style adversarial passages (Jia & Liang 2017), made by rule: for each answerable question that names
    an entity, the question's words without its question word, the entity swapped for another entity of the data
    that its passage does not mention, and a fake answer (another question's gold answer that is not this one's),
    appended to the passage as a sentence. The gold answers keep their offsets. Returns the changed examples and
    their ids (questions without an entity or an answer are left out)."""
    rng = random.Random(seed)
    questions = examples["question"]
    entities = sorted({" ".join(q.split()[a:b]) for q in questions for a, b in _entity_runs(q.split())})
    golds = sorted({t for a in examples["answers"] for t in a["text"] if t.strip()})
    rows, kept = [], []
    for row in examples:
        if not row["answers"]["text"]:
            continue
        words = row["question"].split()
        while words and _normalized(words[-1]) == "":
            words.pop()  # the question mark
        runs = _entity_runs(words)
        if not runs:
            continue
        a, b = max(runs, key=lambda run: run[1] - run[0])
        while words and words[0].lower() in QUESTION_WORDS and a > 0:
            words, a, b = words[1:], a - 1, b - 1
        context, gold = _normalized(row["context"]), {_normalized(t) for t in row["answers"]["text"]}
        entity = " ".join(words[a:b])
        others = [e for e in entities if e != entity and _normalized(e) not in context
                  and not any(g and g in _normalized(e) for g in gold)]
        fakes = [t for t in golds if _normalized(t) not in gold
                 and not any(g and (g in _normalized(t) or _normalized(t) in g) for g in gold)]
        if not others or not fakes:
            continue
        sentence = " ".join(words[:a] + [rng.choice(others)] + words[b:] + [rng.choice(fakes)]) + " ."
        if any(g and g in _normalized(sentence) for g in gold):
            continue
        rows.append({**row, "context": row["context"].rstrip() + " " + sentence})
        kept.append(row["id"])
    columns = {name: [r[name] for r in rows] for name in examples.column_names}
    return datasets.Dataset.from_dict(columns, features=examples.features), kept


# --------------------------------------------------------------------------- trainer


class QuestionAnsweringTrainer(RecipeTrainerMixin, Trainer):
    """Evaluation reads answers back from the windows' logits and scores them with the ``squad`` metric, then runs
    the shortcut checks. A lineage model names and copies the question-answering pipeline itself when saved
    (``QuestionAnsweringPipelineMixin``); for another library's model (transformers' ``BertForQuestionAnswering``)
    saving copies the file here and ``run`` names it in the config."""

    qa_args: QuestionAnsweringArguments
    eval_features: EvalFeatures | None = None
    probes: dict | None = None  # name -> (EvalFeatures, ids of the original questions they correspond to)
    output_prefix: str = "eval"

    def _save(self, output_dir=None, state_dict=None):
        super()._save(output_dir, state_dict)
        if isinstance(self.model, QuestionAnsweringPipelineMixin):
            return
        output_dir = output_dir or self.args.output_dir
        shutil.copy(qa_pipeline_module.__file__, os.path.join(output_dir, os.path.basename(
            qa_pipeline_module.__file__)))

    def answers(self, features: EvalFeatures):
        compute_metrics, self.compute_metrics = self.compute_metrics, None
        try:
            output = Trainer.predict(self, features.inputs, metric_key_prefix="qa")
        finally:
            self.compute_metrics = compute_metrics
        start_logits, end_logits = output.predictions[:2]
        return read_answers(start_logits, end_logits, features, self.qa_args)

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix="eval"):
        version_2 = self.qa_args.version_2_with_negative
        answers = self.answers(self.eval_features)
        metrics = {f"{metric_key_prefix}_{k}": v
                   for k, v in squad_scores(answers, self.eval_features.examples, version_2).items()}
        probe_answers = {}
        for name, (features, ids) in (self.probes or {}).items():
            found = self.answers(features)
            probe_answers[name] = {i: found[i][0] for i in ids}
            for k, v in squad_scores(found, features.examples, version_2).items():
                if k in ("exact_match", "f1"):
                    metrics[f"{metric_key_prefix}_{name}_{k}"] = v
            metrics[f"{metric_key_prefix}_{name}_examples"] = len(ids)
            if name == "distractor" and ids:
                chosen = set(ids)
                subset = self.eval_features.examples.filter(lambda row: row["id"] in chosen)
                for k, v in squad_scores(answers, subset, version_2).items():
                    if k in ("exact_match", "f1"):
                        metrics[f"{metric_key_prefix}_distractor_original_{k}"] = v
        if self.is_world_process_zero():
            os.makedirs(self.args.output_dir, exist_ok=True)
            _write_json(os.path.join(self.args.output_dir, f"{metric_key_prefix}_predictions.json"),
                        {i: a for i, (a, _) in answers.items()})
            _write_json(os.path.join(self.args.output_dir, f"{metric_key_prefix}_nbest_predictions.json"),
                        {i: n for i, (_, n) in answers.items()})
            if probe_answers:
                _write_json(os.path.join(self.args.output_dir, f"{metric_key_prefix}_shortcut_predictions.json"),
                            probe_answers)
        self.log(metrics)
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        return metrics


def _write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False, indent=2)


# --------------------------------------------------------------------------- pipeline


def question_answering_pipeline(model, tokenizer=None, **kwargs) -> LineageQuestionAnsweringPipeline:
    """``pipeline("question-answering")`` for a lineage QA model (a folder, Hub id or loaded model), without
    trust_remote_code: transformers 5 has no such pipeline of its own. ``kwargs`` go to the pipeline (``device``,
    ...)."""
    if isinstance(model, str):
        tokenizer = tokenizer or AutoTokenizer.from_pretrained(model)
        model = AutoModelForQuestionAnswering.from_pretrained(model)
    elif tokenizer is None:
        raise ValueError("Pass the tokenizer with a loaded model")
    return LineageQuestionAnsweringPipeline(model=model, tokenizer=tokenizer, **kwargs)


# --------------------------------------------------------------------------- the recipe


def main(argv=None) -> dict:
    """Run the recipe on a command line (default ``sys.argv[1:]``); returns the metrics of ``all_results.json``.

    >>> main(["--model_name_or_path", "out/bert", "--dataset_name", "squad", "--do_train", "--do_eval",
    ...       "--output_dir", "ft/bert-squad"])  # doctest: +SKIP
    """
    return run(*parse_arguments(argv))


def eval_features_and_probes(examples: datasets.Dataset, qa_args: QuestionAnsweringArguments, encoding: dict):
    """The evaluation windows and, with ``--shortcut_checks``, the probes' (name -> (windows, the ids of the
    questions they ask)): the passage-only input, and the distractors where some question names an entity."""
    probes = {}
    if qa_args.shortcut_checks and not qa_args.blank_question:
        probes["passage_only"] = (prepare_eval_features(passage_only(examples), **encoding), list(examples["id"]))
        distracted, ids = add_distractors(examples, qa_args.distractor_seed)
        if ids:
            probes["distractor"] = (prepare_eval_features(distracted, **encoding), ids)
        else:
            logger.warning("No question names an entity: no distractor evaluation")
    return prepare_eval_features(examples, **encoding), probes


def run(model_args, data_args, qa_args, training_args, callbacks=None) -> dict:
    """The recipe on parsed arguments; ``callbacks`` are extra ``TrainerCallback``s."""
    training.start(training_args)
    # Everything that can be wrong with the input is found here, before the Trainer creates the output directory.
    if getattr(data_args, "partial_input", None):
        raise ValueError("--partial_input keeps one sentence of each sentence pair; the question-answering "
                         "partial-input baseline is --blank_question (the passage only)")
    splits = load_qa_splits(data_args, qa_args, training_args)
    if qa_args.blank_question:
        splits = {name: Split(passage_only(split.dataset), split.source) for name, split in splits.items()}
    config = training.checked_config(model_args, AutoModelForQuestionAnswering, TASK)
    config = training.task_config(model_args, config)
    gpt = family_rules(config).task_tokens  # tokenizer(question, passage) -> <s> question $ passage <e>
    model, tokenizer = training.load_model(model_args, AutoModelForQuestionAnswering, config, gpt_task_tokens=gpt)
    if gpt:
        model.config.delimiter_token_id = task_token_ids(tokenizer)["delimiter"]
    tokenizer.padding_side = "right"
    if not isinstance(model, QuestionAnsweringPipelineMixin):  # a lineage model names its pipeline on saving
        model.config.custom_pipelines = custom_pipelines_with_question_answering(
            getattr(model.config, "custom_pipelines", None))  # the saved folder names its pipeline (see _save)
    max_length = training.sequence_length_limit(data_args.max_seq_length, tokenizer, config)
    if qa_args.doc_stride is None:
        qa_args.doc_stride = min(128, max_length // 4)
    if qa_args.doc_stride >= max_length // 2:
        raise ValueError(f"--doc_stride {qa_args.doc_stride} must be less than half of --max_seq_length "
                         f"({max_length}): windows would barely advance")
    logger.info("%s (%s) for %s, windows of %d tokens, stride %d", model_args.model_name_or_path, family_of(config),
                TASK, max_length, qa_args.doc_stride)

    encoding = dict(tokenizer=tokenizer, max_length=max_length, doc_stride=qa_args.doc_stride,
                    segment_ids=uses_segment_ids(config))
    train = {"train": splits["train"]} if "train" in splits else {}
    encoded = training.encode_splits(train, prepare_train_features, encoding, data_args, "Windows of the questions in")
    eval_features, probes = None, {}
    if "validation" in splits:
        eval_features, probes = eval_features_and_probes(splits["validation"].dataset, qa_args, encoding)
        encoded["validation"] = eval_features.inputs
    test_features = prepare_eval_features(splits["test"].dataset, **encoding) if "test" in splits else None

    card = training.card_info(
        TASK, model_args, data_args, config, splits, AutoModelForQuestionAnswering, max_seq_length=max_length,
        doc_stride=qa_args.doc_stride, max_answer_length=qa_args.max_answer_length, n_best_size=qa_args.n_best_size,
        version_2_with_negative=qa_args.version_2_with_negative,
        null_score_diff_threshold=qa_args.null_score_diff_threshold, blank_question=qa_args.blank_question,
        freeze_base=model_args.freeze_base)
    trainer = training.make_trainer(QuestionAnsweringTrainer, model, tokenizer, training_args, encoded,
                                    DataCollatorWithPadding(tokenizer), card, callbacks=callbacks)
    trainer.qa_args, trainer.eval_features, trainer.probes = qa_args, eval_features, probes

    def write_predictions(trainer, test_dataset):
        answers = trainer.answers(test_features)
        metrics = {}
        examples = test_features.examples
        if "answers" in examples.column_names:
            metrics = {f"predict_{k}": v for k, v in
                       squad_scores(answers, examples, qa_args.version_2_with_negative).items()}
        if trainer.is_world_process_zero():
            _write_json(os.path.join(training_args.output_dir, "predict_predictions.json"),
                        {i: a for i, (a, _) in answers.items()})
            _write_json(os.path.join(training_args.output_dir, "predict_nbest_predictions.json"),
                        {i: n for i, (_, n) in answers.items()})
        return metrics

    # Evaluation and prediction count questions, not windows.
    counted = {"train": encoded.get("train"), "validation": eval_features and eval_features.examples,
               "test": test_features and test_features.examples}
    return training.train_evaluate_predict(trainer, counted, write_predictions)
