"""Task data readers (hf_lineage.data.readers) on the shipped fixtures and, where ../shared/data is present, on the
real files; their errors; and the offline metric modules."""

import os
import subprocess
import sys

import pytest

from conftest import REPO, SHARED_DATA
from hf_lineage import metrics
from hf_lineage.data.readers import (
    DataFormatError,
    iob1_to_iob2,
    read_conll2003,
    read_conllu,
    read_e2e_csv,
    read_glue_tsv,
    read_parallel_text,
    read_table,
    read_trec,
    sniff_format,
)

FIXTURES = REPO / "tests" / "fixtures" / "task_data"

needs_data = pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="checks the full real files in ../shared/data, not "
                                "present; the formats themselves are tested on tests/fixtures")


def test_iob1_to_iob2_starts_every_chunk_with_b():
    assert iob1_to_iob2(["I-ORG", "I-ORG", "O", "I-PER", "B-PER", "I-LOC", "I-MISC"]) == [
        "B-ORG", "I-ORG", "O", "B-PER", "B-PER", "B-LOC", "B-MISC"]


@needs_data
def test_real_files_have_their_documented_counts():
    # Counts from each folder's README / the GLUE papers.
    assert len(read_conll2003(SHARED_DATA / "conll2003" / "eng.testa")) == 3250
    ud = read_conllu(SHARED_DATA / "ud_english_ewt" / "en_ewt-ud-dev.conllu")
    assert len(ud) == 2001 and ud[0]["tags"][:3] == ["ADP", "DET", "PROPN"]
    mrpc = read_glue_tsv(SHARED_DATA / "glue_mrpc" / "train.tsv")  # header starts with a BOM
    assert len(mrpc) == 3668 and sorted(mrpc.column_names) == ["label", "sentence1", "sentence2"]
    assert set(mrpc["label"]) == {"0", "1"}
    rte = read_glue_tsv(SHARED_DATA / "glue_rte" / "dev.tsv")
    assert len(rte) == 277 and set(rte["label"]) == {"entailment", "not_entailment"}
    assert read_glue_tsv(SHARED_DATA / "glue_sst2" / "test.tsv").column_names == ["sentence"]
    assert len(read_parallel_text(SHARED_DATA / "multi30k" / "val.de", SHARED_DATA / "multi30k" / "val.en")) == 1014
    e2e = read_e2e_csv(SHARED_DATA / "e2e_nlg" / "devset.csv")
    assert e2e[0]["source"].startswith("name[Alimentum]")


@needs_data
def test_real_files_of_other_names_are_recognised_by_content(tmp_path):
    # TREC as distributed (TREC.train is train_5500.label; one Latin-1 byte on line 66).
    trec = SHARED_DATA / "trec" / "TREC.train"
    assert sniff_format(trec) == "trec"
    coarse, fine = read_trec(trec), read_trec(trec, labels="fine")
    assert len(coarse) == 5452 and len(set(coarse["label"])) == 6 and len(set(fine["label"])) == 50
    assert fine[0] == {"sentence": "How did serfdom develop in and then leave Russia ?", "label": "DESC:manner"}
    assert "sister\xf0city" in coarse[65]["sentence"]
    assert sniff_format(SHARED_DATA / "conll2003" / "eng.testa") == "conll2003"
    assert sniff_format(SHARED_DATA / "ud_english_ewt" / "en_ewt-ud-dev.conllu") == "conllu"
    assert sniff_format(SHARED_DATA / "multi30k" / "val.de") is None


def test_trec_reader_coarse_and_fine_labels(tmp_path):
    train = read_trec(FIXTURES / "trec" / "train.label")
    assert train[0] == {"sentence": "How do bees make honey ?", "label": "DESC"}
    assert set(train["label"]) == {"ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"}
    fine = read_trec(FIXTURES / "trec" / "train.label", labels="fine")
    assert fine[0]["label"] == "DESC:manner" and len(set(fine["label"])) == 22
    latin1 = tmp_path / "q.label"  # the original training file has one byte that is not UTF-8
    latin1.write_bytes(b"LOC:city Which city is a sister\xf0city of Rome ?\n")
    assert read_trec(latin1)[0]["sentence"] == "Which city is a sister\xf0city of Rome ?"
    bad = tmp_path / "bad.label"
    bad.write_text("DESC:def What is a comet ?\nno label here\n")
    with pytest.raises(DataFormatError, match=r"bad.label:2: a TREC line is 'COARSE:fine question'"):
        read_trec(bad)
    with pytest.raises(ValueError, match="TREC labels must be one of"):
        read_trec(FIXTURES / "trec" / "train.label", labels="medium")


def test_formats_are_recognised_by_content(tmp_path):
    assert sniff_format(FIXTURES / "conll2003" / "train.txt") == "conll2003"  # -DOCSTART- first
    no_docstart = tmp_path / "ner.txt"
    no_docstart.write_text("EU NNP I-NP I-ORG\nrejects VBZ I-VP O\n\nPeter NNP I-NP I-PER\n")
    assert sniff_format(no_docstart) == "conll2003"
    conllu = tmp_path / "ud.txt"
    conllu.write_text("1\tHi\thi\tINTJ\tUH\t_\t0\troot\t0:root\t_\n2\tthere\tthere\tADV\tRB\t_\t1\tadvmod\t1:advmod\t_\n")
    assert sniff_format(conllu) == "conllu"
    assert sniff_format(FIXTURES / "trec" / "test.label") == "trec"
    for text in ("The cat sat.\nThe dog ran.\n", "a b c\nd e\n", "word NN\nother VB\n", ""):
        (tmp_path / "other.txt").write_text(text)
        assert sniff_format(tmp_path / "other.txt") is None, text


def test_conll_line_with_wrong_columns_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.conll"
    bad.write_text("-DOCSTART- -X- O O\n\nEU NNP I-NP I-ORG\nrejects VBZ O\n")
    with pytest.raises(DataFormatError, match=r"bad.conll:4: expected 4 .*found 3"):
        read_conll2003(bad)
    conllu = tmp_path / "bad.conllu"
    conllu.write_text("# sent_id = 1\n1\tHi\thi\tINTJ\tUH\t_\t0\troot\t0:root\t_\n2\tthere\n")
    with pytest.raises(DataFormatError, match=r"bad.conllu:3: .*10 tab-separated columns, found 2"):
        read_conllu(conllu)


def test_empty_and_malformed_files_are_errors(tmp_path):
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    with pytest.raises(DataFormatError, match="empty.tsv: empty file"):
        read_glue_tsv(empty)
    with pytest.raises(DataFormatError, match="empty file"):
        read_table(empty)
    ragged = tmp_path / "ragged.tsv"
    ragged.write_text("sentence\tlabel\ngood film\t1\nbad\n")
    with pytest.raises(DataFormatError, match=r"ragged.tsv:3: 1 tab-separated fields, the header has 2"):
        read_glue_tsv(ragged)
    (tmp_path / "a.de").write_text("x\ny\n")
    (tmp_path / "a.en").write_text("x\n")
    with pytest.raises(DataFormatError, match="line-aligned"):
        read_parallel_text(tmp_path / "a.de", tmp_path / "a.en")


def test_metrics_compute_known_values():
    assert metrics.load("accuracy").compute(predictions=[0, 1, 1, 2], references=[0, 1, 0, 2])["accuracy"] == 0.75
    f1 = metrics.load("f1")
    # class 0: P=1 R=1/2 F=2/3; class 1: P=1/2 R=1 F=2/3; class 2: F=1
    assert f1.compute(predictions=[0, 1, 1, 2], references=[0, 1, 0, 2], average="macro")["f1"] == pytest.approx(7 / 9)
    assert f1.compute(predictions=[0, 1, 1, 0], references=[0, 1, 0, 1])["f1"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="two classes"):
        f1.compute(predictions=[0, 2], references=[0, 1])
    scores = metrics.load("seqeval").compute(
        predictions=[["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]],
        references=[["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "O"]],
    )
    # 3 true entities, 3 predicted, 2 right.
    assert scores["overall_f1"] == pytest.approx(2 / 3) and scores["overall_accuracy"] == pytest.approx(5 / 6)
    bleu = metrics.load("sacrebleu").compute(predictions=["the cat sat on the mat"],
                                             references=[["the cat sat on the mat"]])
    assert bleu["score"] == pytest.approx(100.0)
    rouge = metrics.load("rouge").compute(predictions=["the cat sat"], references=["the cat sat on"])
    assert rouge["rouge1"] == pytest.approx(2 * 3 / 7)  # P = 1, R = 3/4


def test_metrics_load_through_evaluate_without_network(tmp_path):
    code = (
        "import socket, evaluate\n"
        "def no_network(*a, **k): raise OSError('network disabled in this test')\n"
        "socket.socket.connect = no_network\n"
        f"m = evaluate.load({metrics.path('accuracy')!r})\n"
        "print(m.compute(predictions=[1, 0], references=[1, 1])['accuracy'])\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("0.5")
