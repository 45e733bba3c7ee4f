"""``hf-lineage convert FAMILY SOURCE... --output-dir OUT``: a published release (BERT, OpenAI GPT, AllenNLP's ELMo,
word2vec's and GloVe's vectors) as a lineage folder, optionally pushed to the Hub. Parsing imports no model code."""

from __future__ import annotations

import sys

USAGE_SOURCES = """\
sources, by family (a path, a URL, ARCHIVE.zip#MEMBER, or a Hugging Face Hub id):
  bert      a transformers BERT folder or Hub id: google-bert/bert-base-uncased, google-bert/bert-base-cased,
            google-bert/bert-base-multilingual-cased, google-bert/bert-large-uncased
  gpt       a transformers OpenAI GPT folder or Hub id: openai-community/openai-gpt
  elmo      small | medium | original | 5.5B (AllenNLP's releases, downloaded), or OPTIONS.json WEIGHTS.hdf5,
            or a folder holding both
  word2vec  the C tool's binary or text file (GoogleNews-vectors-negative300.bin[.gz]), gensim KeyedVectors or
            Word2Vec files, or a Hub repo holding one (fse/word2vec-google-news-300)
  glove     Stanford's text file (glove.6B.300d.txt; glove.840B.300d.txt, whose words may hold spaces), with or
            without a word2vec header; e.g. stanfordnlp/glove/glove.6B.zip#glove.6B.300d.txt
  nnlm, svd no published release exists

Downloads are cached under $HF_LINEAGE_CACHE (default ~/.cache/hf_lineage) and the Hub's cache. See
docs/published.md."""


def description() -> str:
    return ("Convert a paper's own published checkpoint into a lineage folder that loads with the Auto classes "
            "(after `import hf_lineage`, or with trust_remote_code=True without it), with a tokenizer that "
            "reproduces the original's and a card naming its source, license and citation.")


def build_parser(parser) -> None:
    import argparse

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = USAGE_SOURCES
    parser.add_argument("family", metavar="FAMILY", help="bert, gpt, elmo, word2vec or glove (nnlm, svd: none)")
    parser.add_argument("sources", nargs="+", metavar="SOURCE", help="the release (see below)")
    parser.add_argument("--output-dir", required=True, metavar="OUT",
                        help="the folder to write (must not exist or be empty); nothing is left in it on failure")
    parser.add_argument("--max-vocab", type=int, metavar="N",
                        help="word vectors only: keep the N most frequent words (the file's first N; gensim's limit)")
    parser.add_argument("--push-to-hub", metavar="REPO_ID", help="then upload the folder to this Hub repository")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --output-dir")


def run_namespace(namespace: dict) -> int:
    from .releases import convert
    from .sources import ConversionError, one_line

    import shlex

    from pathlib import Path

    # The command as parsed (not sys.argv, which a caller of main(argv) did not give), local paths by their names
    # alone: the card is published, the user's folders are not.
    def public(source: str) -> str:
        return Path(source).name if Path(source).expanduser().exists() else source

    parts = ["hf-lineage", "convert", namespace["family"], *map(public, namespace["sources"]), "--output-dir",
             Path(namespace["output_dir"]).name]
    if namespace.get("max_vocab"):
        parts += ["--max-vocab", str(namespace["max_vocab"])]
    command = shlex.join(parts)
    try:
        if namespace.get("push_to_hub"):
            from ..folders.pretrained import check_push

            check_push(namespace["push_to_hub"], flag="--push-to-hub")
        out = convert(namespace["family"], namespace["sources"], namespace["output_dir"],
                      max_vocab=namespace.get("max_vocab"), command=command, overwrite=namespace.get("overwrite"))
    except (ConversionError, ValueError, OSError) as error:
        print(f"hf-lineage convert: error: {one_line(error)}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    if namespace.get("push_to_hub"):
        from ..folders.pretrained import push_folder

        try:
            url = push_folder(out, namespace["push_to_hub"], commit_message=f"Converted by `{command}`")
        except Exception as error:  # the folder stays; the push is what failed
            print(f"hf-lineage convert: error: the push to {namespace['push_to_hub']} failed "
                  f"({type(error).__name__}: {one_line(error)}); the folder is in {out}", file=sys.stderr)
            return 1
        print(f"pushed to {url}")
    return 0


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="hf-lineage convert", description=description())
    build_parser(parser)
    return run_namespace(vars(parser.parse_args(argv)))


__all__ = ["build_parser", "description", "main", "run_namespace"]
