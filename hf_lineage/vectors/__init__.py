"""Static word vectors with the API users know from gensim's ``KeyedVectors``.

``WordVectors`` holds the words (index order), their vectors as one float32 numpy matrix (N, d) and, optionally,
their corpus counts. It reads them from any saved lineage model with a word-level vocabulary (word2vec, NNLM),
from the word2vec C tool's text and binary files, or from a gensim ``Word2Vec`` / ``KeyedVectors``, and answers the
usual questions — nearest neighbours, analogies, similarity benchmarks — with gensim's semantics, so numbers
computed here and with gensim agree::

    >>> from hf_lineage import WordVectors
    >>> wv = WordVectors.from_pretrained("out/word2vec")                 # doctest: +SKIP
    >>> wv.most_similar(positive=["king", "woman"], negative=["man"], topn=1)  # doctest: +SKIP
    [('queen', 0.71...)]
    >>> from gensim.test.utils import datapath                             # doctest: +SKIP
    >>> score, sections = wv.evaluate_word_analogies(datapath("questions-words.txt"))  # doctest: +SKIP
    >>> wv.save_word2vec_format("vectors.bin", binary=True)               # doctest: +SKIP

Where this differs from gensim, on purpose: keys are words (strings) only; a word missing from the vocabulary
raises ``WordNotInVocabularyError`` (a ``KeyError``, as gensim raises, whose message names the word) everywhere,
including ``n_similarity``; ``most_similar_cosmul`` honours ``restrict_vocab`` (gensim 4.4 ignores it); an
analogy file without questions is a ValueError (gensim divides by zero); files written by ``save_word2vec_format``
keep the index order (gensim re-sorts by count) and use ``%.9g``, which round-trips float32 exactly; malformed
files raise ValueError naming the file and line (gensim reads a truncated text file's header count of lines and
ignores extra ones).

The package is split by what a user does with the vectors; ``WordVectors`` gathers them under gensim's method names:

=====================  ================================================================================================
module                 what
=====================  ================================================================================================
``word_vectors``       ``WordVectors`` itself: the table of words, vectors and counts; ``wv[word]``, ``get_vector``
``query``              nearest neighbours and similarities: ``most_similar``, ``similarity``, ``doesnt_match``, ...
``evaluation``         benchmarks: ``evaluate_word_analogies``, ``evaluate_word_pairs``
``formats``            the word2vec C tool's text and binary files: ``save_/load_word2vec_format``
``conversion``         a lineage model's input embeddings (``from_pretrained``) and gensim (``from_/to_gensim``)
=====================  ================================================================================================
"""

from .word_vectors import WordNotInVocabularyError, WordVectors

__all__ = ["WordNotInVocabularyError", "WordVectors"]
