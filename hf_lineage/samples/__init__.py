"""The package's data home: every data sample shipped with hf_lineage sits in a folder here, each folder with the
README (source, license, how it was built) of its files.

    lineage/        the corpus and the four task samples ``hf-lineage lineage`` runs on (scripts/make_lineage_samples.py)
    context_tasks/  the context tasks of ``hf-lineage lineage`` (scripts/make_context_tasks.py)
    qa/             the extractive-QA sample (scripts/make_qa_samples.py)
    slots/          the intent-and-slots sample (scripts/make_slots_samples.py)
    analysis/       the probing sample of ``hf-lineage analyze probes`` (scripts/make_probing_samples.py) and the
                    sentences of ``hf-lineage analyze polysemy``
    crosslingual/   German and French UPOS test and dev sets and dev text for zero-shot cross-lingual POS tagging
                    (scripts/make_crosslingual_samples.py)
    cloze/          the multiple-choice cloze over UD English EWT, SWAG's columns (scripts/make_cloze_sample.py)
    blimp/          BLiMP's published accuracies per paradigm, shown beside ``hf-lineage evaluate minimal-pairs``'
                    rows, and 20 of its minimal pairs per paradigm (the command's default data and the grammar section
                    of ``hf-lineage lineage``) (scripts/make_blimp_samples.py)

Every folder is written by its builder in ``scripts/`` (named above), a developer tool outside the package; the
package only reads the written files. The folders are data; the code here only names them, and imports nothing of the
package (it sits in the lowest layer, beside ``hf_lineage.checkpoints``), so any module may ask it where a sample is.

    >>> from hf_lineage import samples
    >>> samples.path("lineage", "corpus.train.txt").name
    'corpus.train.txt'
"""

from __future__ import annotations

from pathlib import Path

SAMPLES = Path(__file__).resolve().parent
LINEAGE = SAMPLES / "lineage"
CONTEXT_TASKS = SAMPLES / "context_tasks"
QA = SAMPLES / "qa"
SLOTS = SAMPLES / "slots"
ANALYSIS = SAMPLES / "analysis"
CROSSLINGUAL = SAMPLES / "crosslingual"
CLOZE = SAMPLES / "cloze"
BLIMP = SAMPLES / "blimp"
FOLDERS = (LINEAGE, CONTEXT_TASKS, QA, SLOTS, ANALYSIS, CROSSLINGUAL, CLOZE, BLIMP)


def path(folder: str, name: str | None = None) -> Path:
    """The shipped sample folder ``folder`` (``lineage``, ``context_tasks``, ``qa``, ``slots``, ``analysis``,
    ``crosslingual``, ``cloze``, ``blimp``), or the file ``name`` in it."""
    known = {f.name: f for f in FOLDERS}
    if folder not in known:
        raise ValueError(f"no shipped sample folder {folder!r}; shipped: {', '.join(known)}")
    return known[folder] if name is None else known[folder] / name
