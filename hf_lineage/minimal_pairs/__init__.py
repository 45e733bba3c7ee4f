"""Minimal pairs, zero-shot: what each model knows of grammar with no task head (``hf-lineage evaluate
minimal-pairs``; docs/minimal_pairs.md).

A minimal pair is a grammatical and an ungrammatical sentence that differ minimally (BLiMP, Warstadt et al. 2020); a
model gets it right when it scores the grammatical one higher. The pieces, each usable alone:

    pairs             read and check BLiMP-format jsonl (``read_pairs``; errors name the file and line)
    text_preparation  the one place that writes a sentence as a model's pretraining text was written
    model_specs       what a ``--models`` argument names and how it is scored (``resolve_model``)
    kneser_ney        the interpolated Kneser-Ney n-gram LM (``KneserNey``, ``WordKneserNey``)
    scorers           sentence scores per kind of model (``load_scorer``): causal, masked (PLL, PLL-word-l2r),
                      ELMo (forward, backward, sum), n-gram; static vectors have none
    tallies           pairs right, wrong or tied; accuracies per paradigm, field and phenomenon with bootstrap
                      intervals (``score_pairs``, ``summarize``), two models' paired difference
                      (``paired_difference``); BLiMP's published rows
    zero_shot         all of it for a list of models (``evaluate_models``)
    outputs           the JSON, the Markdown table and the plot
    cli               ``hf-lineage evaluate``

Importing this package imports none of them (nor torch).

    >>> from hf_lineage.minimal_pairs import model_specs, pairs, scorers, tallies             # doctest: +SKIP
    >>> scorer = scorers.load_scorer(model_specs.resolve_model("gpt"))                        # doctest: +SKIP
    >>> read = pairs.read_pairs("blimp/data", limit=40)                                       # doctest: +SKIP
    >>> outcomes = tallies.score_pairs(scorer, read)                                          # doctest: +SKIP
    >>> tallies.summarize(read, {"gpt": outcomes["sum"]})["gpt"]["overall"]["accuracy"]       # doctest: +SKIP
"""
