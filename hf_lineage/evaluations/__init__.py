"""The head-free evaluations of saved models, ``hf-lineage evaluate KIND``: ``EVALUATIONS`` is the one table of them,
kind → ``Evaluation``, as ``hf_lineage.tasks.TASKS`` is for the fine-tuning tasks.

==================  ============================  ====================================================================
kind                module                        what it asks each model, with no task head
==================  ============================  ====================================================================
``minimal-pairs``   ``hf_lineage.minimal_pairs``  which sentence of a minimal pair (BLiMP's format) is the grammatical
                                                  one: accuracy per paradigm, field and phenomenon
==================  ============================  ====================================================================

An evaluation's command-line module gives ``description()`` (its ``--help`` text), ``add_arguments(parser)`` (its
options) and ``run(options) -> exit status``; adding an evaluation is a module with those three and one entry here
(``hf_lineage.evaluations.cli`` builds the command from the table, importing nothing heavy). The scorers an
evaluation asks are ``hf_lineage.minimal_pairs.scorers.Scorer``s, which say what they read and give.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Evaluation:
    """One kind of ``hf-lineage evaluate``: its one-line help and its command-line module (under ``hf_lineage``)."""

    help: str
    module: str

    def cli(self):
        """The command-line module (``description``, ``add_arguments``, ``run``), imported now."""
        return importlib.import_module(f"hf_lineage.{self.module}")


EVALUATIONS = {
    "minimal-pairs": Evaluation(
        "grammatical vs ungrammatical sentences (BLiMP's format) scored zero-shot by every family and a Kneser-Ney "
        "n-gram: accuracy per paradigm, field and phenomenon, BLiMP's published rows beside",
        "minimal_pairs.cli"),
}
