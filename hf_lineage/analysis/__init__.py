"""Looking inside the models (``hf-lineage analyze``): what a pretrained model does with a word, a head or a layer.

Each analysis is one module with a Python API and a ``main(args)`` that runs it from the command line; its options
are in ``options`` (light, for a quick ``--help``), and ``hf_lineage.analysis.cli`` wires them up:

* ``polysemy``  — one word in several senses: every family's vector per occurrence, within- vs across-sense
  similarity, neighbours per occurrence, a 2-D projection coloured by sense;
* ``attention`` — per layer and head of a BERT/GPT-style encoder: attention entropy, where the attention goes
  ([CLS], [SEP], punctuation, previous/next token), a pattern per head, a layers × heads map, heads clustered;
* ``probes``    — layer-wise linear probes with a control task (selectivity), for every family.

They read saved models (any lineage family, or transformers' own through ``hf_lineage.convert``) and never train
them; numerics come from numpy, scipy and scikit-learn, plots from matplotlib.
"""
