"""``pipeline("question-answering")`` for QA models however they were made (issue 35): a lineage QA model built
with ``from_config`` and saved with ``save_pretrained`` names and carries the pipeline (so the folder works with
``trust_remote_code`` alone, without hf_lineage), and after ``import hf_lineage`` the task, which transformers 5
removed, works for transformers' own extractive QA models too. Every answer is checked against an exhaustive
argmax over the model's own start and end logits."""

import json
from pathlib import Path

import pytest
import torch
import transformers
from transformers import AutoModelForQuestionAnswering, pipeline

import hf_lineage
from hf_lineage.tokenization import train_bpe_tokenizer, train_wordlevel_tokenizer, train_wordpiece_tokenizer

from conftest import run_without_hf_lineage

QUESTION = "Where is The Eagle ?"
CONTEXT = "The Eagle is a coffee shop near Burger King ."
TEXTS = [QUESTION, CONTEXT] * 4
MAX_ANSWER_LEN = 4
FAMILIES = ("bert", "gpt", "nnlm")


def _tokenizer(family):
    if family == "bert":
        return train_wordpiece_tokenizer(iterator=TEXTS, vocab_size=200, min_frequency=1, model_max_length=64)
    if family == "gpt":
        return train_bpe_tokenizer(iterator=TEXTS, vocab_size=300, min_frequency=1, model_max_length=64)
    return train_wordlevel_tokenizer(iterator=TEXTS)


def _lineage_model(family, vocab_size):
    config_class, _ = hf_lineage.registry.family_classes(family)
    sizes = {"max_position_embeddings": 64} if family in ("bert", "gpt") else {"task_hidden_size": 16}
    torch.manual_seed(0)
    return AutoModelForQuestionAnswering.from_config(config_class.from_named("tiny", vocab_size=vocab_size, **sizes))


def argmax_answer(model, tokenizer, segment_ids: bool) -> dict:
    """The best span by hand: every (start, end) pair inside the passage, end >= start, at most MAX_ANSWER_LEN
    tokens, scored by start logit + end logit, read back as characters without surrounding spaces (GPT's BPE
    tokens carry the space before them). The input must be short enough for the pipeline to try every pair too
    (it tries the 20 best starts and ends)."""
    encoding = tokenizer(QUESTION, CONTEXT, return_offsets_mapping=True, return_tensors="pt",
                         return_token_type_ids=True if segment_ids else None)
    sequence_ids, offsets = encoding.sequence_ids(0), encoding.pop("offset_mapping")[0].tolist()
    if not segment_ids:
        encoding.pop("token_type_ids", None)
    assert len(sequence_ids) <= 20, "too long for the pipeline's 20 best starts and ends to cover every pair"
    with torch.no_grad():
        output = model.eval()(**encoding)
    start_logits, end_logits = output.start_logits[0], output.end_logits[0]
    best = None
    for s in range(len(sequence_ids)):
        for e in range(s, min(len(sequence_ids), s + MAX_ANSWER_LEN)):
            if sequence_ids[s] != 1 or sequence_ids[e] != 1:
                continue
            text = CONTEXT[offsets[s][0]:offsets[e][1]]
            begin = offsets[s][0] + len(text) - len(text.lstrip())
            finish = offsets[e][1] - (len(text) - len(text.rstrip()))
            score = float(start_logits[s] + end_logits[e])
            if begin < finish and (best is None or score > best[0]):
                best = (score, begin, finish)
    assert best is not None
    return {"start": best[1], "end": best[2], "answer": CONTEXT[best[1]:best[2]]}


def _span(answer: dict) -> dict:
    return {key: answer[key] for key in ("start", "end", "answer")}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """family -> (folder, model, tokenizer): lineage QA models made as a user makes them (from_config, their own
    training, save_pretrained), never through the recipe."""
    out = {}
    for family in FAMILIES:
        tokenizer = _tokenizer(family)
        model = _lineage_model(family, len(tokenizer))
        folder = tmp_path_factory.mktemp(f"qa-{family}")
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        out[family] = (str(folder), model, tokenizer)
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_a_saved_lineage_qa_model_answers_through_the_pipeline_as_its_logits_say(family, saved):
    folder, model, tokenizer = saved[family]
    with open(f"{folder}/config.json", encoding="utf-8") as f:
        config = json.load(f)
    assert config["custom_pipelines"]["question-answering"]["impl"] == (
        "pipeline_lineage_question_answering.LineageQuestionAnsweringPipeline")
    shipped = Path(hf_lineage.models.pipeline_lineage_question_answering.__file__)
    assert (Path(folder) / shipped.name).read_bytes() == shipped.read_bytes()
    expected = argmax_answer(model, tokenizer, segment_ids=family != "gpt")

    from_folder = pipeline("question-answering", model=folder, trust_remote_code=True)
    assert _span(from_folder(question=QUESTION, context=CONTEXT, max_answer_len=MAX_ANSWER_LEN)) == expected
    # The entry is written, not kept: the model in memory still goes through the registered pipeline.
    assert not hasattr(model.config, "custom_pipelines")
    in_memory = pipeline("question-answering", model=model, tokenizer=tokenizer)
    assert type(in_memory) is hf_lineage.models.pipeline_lineage_question_answering.LineageQuestionAnsweringPipeline
    assert _span(in_memory(question=QUESTION, context=CONTEXT, max_answer_len=MAX_ANSWER_LEN)) == expected


def test_the_saved_folders_answer_without_hf_lineage(saved, tmp_path):
    expected = {family: argmax_answer(model, tokenizer, segment_ids=family != "gpt")
                for family, (_, model, tokenizer) in saved.items()}
    folders = {family: folder for family, (folder, _, _) in saved.items()}
    code = (
        "import json\n"
        "from transformers import pipeline\n"
        f"answers = {{family: pipeline('question-answering', model=folder, trust_remote_code=True)(\n"
        f"    question={QUESTION!r}, context={CONTEXT!r}, max_answer_len={MAX_ANSWER_LEN})\n"
        f"    for family, folder in {folders!r}.items()}}\n"
        "print(json.dumps(answers))\n"
    )
    answers = json.loads(run_without_hf_lineage(code, cwd=tmp_path).strip().splitlines()[-1])
    assert {family: _span(answer) for family, answer in answers.items()} == expected


def _transformers_model(kind, vocab_file):
    torch.manual_seed(0)
    if kind == "bert":
        config = transformers.BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                         intermediate_size=32, max_position_embeddings=64)
        return transformers.BertForQuestionAnswering(config), transformers.BertTokenizer(vocab_file)
    config = transformers.DistilBertConfig(vocab_size=60, dim=16, n_layers=1, n_heads=2, hidden_dim=32,
                                           max_position_embeddings=64)
    return transformers.DistilBertForQuestionAnswering(config), transformers.DistilBertTokenizer(vocab_file)


@pytest.mark.parametrize("kind", ["bert", "distilbert"])
def test_transformers_own_qa_models_answer_through_the_pipeline_after_import_hf_lineage(kind, tmp_path):
    """transformers 5 removed the task; ``import hf_lineage`` brings it back for every extractive QA model.
    DistilBERT's tokenizer gives no token_type_ids and its model takes none."""
    words = sorted({w.lower() for w in (QUESTION + " " + CONTEXT).split()})
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    model, tokenizer = _transformers_model(kind, str(vocab_file))
    folder = tmp_path / kind
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    assert "custom_pipelines" not in json.loads((folder / "config.json").read_text())

    qa = pipeline("question-answering", model=str(folder))
    assert type(qa).__name__ == "LineageQuestionAnsweringPipeline"
    answer = qa(question=QUESTION, context=CONTEXT, max_answer_len=MAX_ANSWER_LEN)
    assert _span(answer) == argmax_answer(model, tokenizer, segment_ids=kind == "bert")
    assert "question-answering" in transformers.pipelines.get_supported_tasks()
