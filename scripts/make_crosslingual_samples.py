"""Build the target-language data of the zero-shot cross-lingual POS-tagging experiment: ``hf_lineage/samples/crosslingual/``.

The experiment fine-tunes a multilingual model on English UPOS (``hf_lineage/samples/lineage/labeling.*.jsonl``, UD
English EWT, written by ``scripts/make_lineage_samples.py``) and evaluates it, unchanged, on German and French. This
script writes the German and French side.

A developer tool, not part of the package: it reads the shared data folder (``<repo>/../shared/data`` by default)
and (re)writes every file in the samples folder. The package only reads the written files, never the shared data.
The build is deterministic: running it twice writes byte-identical files (no randomness at all, no set/dict-order
dependence, fixed serialisation).

    python scripts/make_crosslingual_samples.py                      # default folders
    python scripts/make_crosslingual_samples.py --data-dir /work/shared/data --output-dir /tmp/crosslingual

Sources: UD German GSD and UD French GSD, v2.16 (CC BY-SA 4.0), their dev and test files
(``ud_german_gsd/de_gsd-ud-{dev,test}.conllu``, ``ud_french_gsd/fr_gsd-ud-{dev,test}.conllu``; the shared data
has no training files). Words are the syntactic words, as ``hf_lineage.data.readers.read_conllu`` returns them
(multiword-token lines ``1-2`` and empty nodes ``8.1`` are skipped), with their UPOS; every tag must be one of the
17 UPOS tags (the script stops otherwise). For each language ``<lang>`` (``de``, ``fr``):

``<lang>.test.jsonl``
    The whole test file, every sentence in file order (duplicates kept), one ``{"tokens": [...], "tags": [...]}``
    per line (JSON with ``ensure_ascii=False`` and no spaces, as the lineage samples): the zero-shot evaluation set.
``<lang>.dev.jsonl``
    The whole dev file, the same way: labelled target-language data for the in-language ceiling (fine-tune on the
    target's dev labels, evaluate on its test file). Kept whole, so it still holds the few dev sentences whose text
    is also a test sentence (recorded in the manifest as ``shared_with_test``).
``<lang>.text.txt``
    Unlabelled target-language text for pretraining, in BERT's input format: the raw sentence text (the
    ``# text = ...`` comment) of the DEV file only, one sentence per line, in file order, a blank line between
    documents. A dev sentence whose text equals a test sentence's text -- compared after removing all whitespace
    and case-folding -- is left out (the manifest lists the left-out ``sent_id``\\ s), and the script asserts that no
    line of the file equals the text of any test sentence. Documents: a file's ``# newdoc`` markers when it has
    them; neither GSD dev file has any (German GSD keeps its source order -- reviews ``dev-s1``-``s500``, then news
    ``s501``-``s799`` -- but marks no review or article boundary; French GSD is shuffled), so the sentences are cut
    into blocks of ``DOCUMENT_SENTENCES`` (10) consecutive dev sentences (``1-10``, ``11-20``, ...; counted before
    leaving sentences out), each block a pseudo-document. For German the reviews/news boundary falls between two
    blocks.
``README.md``, ``manifest.json``
    Sources, license, changes made, citations and counts; the manifest lists each data file with its counts
    (sentences; words: syntactic words for the jsonl files, whitespace-separated tokens for the text files;
    documents for the text files), source file, license and sha256, and per language its treebank, files and tag
    set (the tags occurring in its dev and test files).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing the package

from hf_lineage.data.readers import read_conllu  # noqa: E402

DEFAULT_DATA_DIR = REPO.parent / "shared" / "data"
DEFAULT_OUTPUT_DIR = REPO / "hf_lineage" / "samples" / "crosslingual"

DOCUMENT_SENTENCES = 10  # sentences per pseudo-document when a file has no "# newdoc" markers
UPOS = ("ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN", "PUNCT",
        "SCONJ", "SYM", "VERB", "X")

CC_BY_SA_4 = "CC BY-SA 4.0"
CC_BY_SA_4_URL = "https://creativecommons.org/licenses/by-sa/4.0/"

# language -> what the manifest and README say of its treebank, and its files in the shared data folder
TREEBANKS = {
    "de": {
        "language": "German",
        "treebank": "UD_German-GSD",
        "version": "2.16",
        "commit": "297fcf350481058d0737a27f0f8fd03b2eadd67a",
        "folder": "ud_german_gsd",
        "files": {"dev": "de_gsd-ud-dev.conllu", "test": "de_gsd-ud-test.conllu"},
    },
    "fr": {
        "language": "French",
        "treebank": "UD_French-GSD",
        "version": "2.16",
        "commit": "830e2782304af08b3cc1c9250475343e04274d81",
        "folder": "ud_french_gsd",
        "files": {"dev": "fr_gsd-ud-dev.conllu", "test": "fr_gsd-ud-test.conllu"},
    },
}
SPLITS = ("test", "dev")  # the order of the files in the manifest, per language


# --------------------------------------------------------------------------- helpers


def jsonl(records: list[dict]) -> bytes:
    lines = (json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in records)
    return "".join(line + "\n" for line in lines).encode("utf-8")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def text_key(text: str) -> str:
    """What two sentence texts are compared by: all whitespace removed, case-folded."""
    return re.sub(r"\s+", "", text).casefold()


def ud_sentences(path: Path) -> list[dict]:
    """Every sentence of a CoNLL-U file: ``tokens`` and ``tags`` (UPOS) from ``read_conllu``, plus ``sent_id``,
    ``text`` and ``newdoc`` (whether a ``# newdoc`` comment precedes it) from its comments (the reader drops
    comments)."""
    words = read_conllu(path, column="upos")
    # The comments of each sentence, cut where the reader cuts: at blank lines, keeping blocks that have word lines.
    comments, current, has_words = [], {}, False
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                if has_words:
                    comments.append(current)
                    current = {}
                has_words = False  # a comment-only block (none in GSD) hands its comments to the next sentence
            elif line.startswith(("# sent_id = ", "# text = ")):
                key, value = line[2:].split(" = ", 1)
                current[key] = value
            elif line.startswith("# newdoc"):
                current["newdoc"] = True
            elif not line.startswith("#"):
                has_words = True
    if has_words:
        comments.append(current)
    if len(comments) != len(words):
        raise ValueError(f"{path}: {len(comments)} comment blocks but {len(words)} sentences")
    sentences = []
    for row, comment in zip(words, comments):
        if "sent_id" not in comment or "text" not in comment:
            raise ValueError(f"{path}: a sentence without '# sent_id' or '# text': {comment}")
        unknown = sorted(set(row["tags"]) - set(UPOS))
        if unknown:
            raise ValueError(f"{path}: sentence {comment['sent_id']} has tags outside the 17 UPOS tags: {unknown}")
        if not comment["text"].strip() or "\n" in comment["text"]:
            raise ValueError(f"{path}: sentence {comment['sent_id']} has no one-line text")
        sentences.append({"tokens": row["tokens"], "tags": row["tags"], "sent_id": comment["sent_id"],
                          "text": comment["text"], "newdoc": bool(comment.get("newdoc"))})
    return sentences


def labeled_file(sentences: list[dict]) -> tuple[bytes, dict]:
    records = [{"tokens": s["tokens"], "tags": s["tags"]} for s in sentences]
    return jsonl(records), {"sentences": len(records), "words": sum(len(s["tokens"]) for s in sentences)}


def documents(sentences: list[dict]) -> tuple[list[list[dict]], str]:
    """The sentences cut into documents: at ``# newdoc`` markers when the file has any, else into blocks of
    ``DOCUMENT_SENTENCES`` consecutive sentences. Also returns how they were cut."""
    if any(s["newdoc"] for s in sentences):
        docs = []
        for s in sentences:
            if s["newdoc"] or not docs:
                docs.append([])
            docs[-1].append(s)
        return docs, "newdoc"
    return ([sentences[i:i + DOCUMENT_SENTENCES] for i in range(0, len(sentences), DOCUMENT_SENTENCES)],
            f"blocks of {DOCUMENT_SENTENCES} sentences")


def text_file(dev: list[dict], test: list[dict]) -> tuple[bytes, dict]:
    """The dev sentences' text, one per line, a blank line between documents, without any test sentence."""
    test_keys = {text_key(s["text"]) for s in test}
    docs, cut = documents(dev)
    kept_docs = [[s for s in doc if text_key(s["text"]) not in test_keys] for doc in docs]
    kept_docs = [doc for doc in kept_docs if doc]
    left_out = [s["sent_id"] for s in dev if text_key(s["text"]) in test_keys]
    text = "\n".join("".join(s["text"] + "\n" for s in doc) for doc in kept_docs)
    lines = text.split("\n")[:-1]
    # The promise of the file: no line of it is the text of a test sentence.
    test_texts = {s["text"] for s in test}
    assert not [line for line in lines if line in test_texts], "a test sentence's text in the pretraining text"
    assert sum(1 for line in lines if line) == len(dev) - len(left_out)
    return text.encode("utf-8"), {"sentences": len(dev) - len(left_out), "words": len(text.split()),
                                  "documents": len(kept_docs), "documents_from": cut, "left_out": left_out}


# --------------------------------------------------------------------------- README


def readme(info: dict, languages: dict) -> str:
    def n(name, key="sentences"):
        return f"{info[name][key]:,}"

    rows = []
    for lang, tb in TREEBANKS.items():
        for split, role in (("test", "zero-shot evaluation (UPOS)"), ("dev", "in-language ceiling (UPOS)")):
            name = f"{lang}.{split}.jsonl"
            rows.append(f"| `{name}` | {role} | {tb['treebank']} `{tb['files'][split]}` (whole) | "
                        f"{n(name)} sentences, {n(name, 'words')} words | {CC_BY_SA_4} |")
        name = f"{lang}.text.txt"
        rows.append(f"| `{name}` | pretraining text (unlabelled) | {tb['treebank']} `{tb['files']['dev']}` "
                    f"(`# text`) | {n(name)} sentences, {n(name, 'words')} words | {CC_BY_SA_4} |")
    table = "\n".join(["| file | use | source | size | license |", "|---|---|---|---|---|", *rows])

    def shared(lang):
        ids = info[f"{lang}.text.txt"]["left_out"]
        return f"{len(ids)} ({', '.join(f'`{i}`' for i in ids)})" if ids else "none"

    de, fr = languages["de"], languages["fr"]
    missing_fr = sorted(set(UPOS) - set(fr["tags"]))
    missing_de = sorted(set(UPOS) - set(de["tags"]))

    def missing(tags):
        return f"all but {', '.join(f'`{t}`' for t in tags)}" if tags else "all 17"

    return f"""# Data samples for zero-shot cross-lingual POS tagging (German, French)

The target-language side of a zero-shot cross-lingual experiment: fine-tune a multilingual model (multilingual BERT)
on English UPOS tagging — `../lineage/labeling.train.jsonl` and `labeling.validation.jsonl` (UD English EWT) — and
evaluate it, without any German or French labels, on the German and French test sets here. The dev files give the
in-language ceiling (fine-tune on the target language's dev labels, evaluate on its test file), and the text files
unlabelled target-language text for an offline pretraining run.

They are written by `scripts/make_crosslingual_samples.py` (deterministic, no randomness: re-running it reproduces
every file byte for byte; its docstring gives the exact procedure) from unchanged copies of the UD source files.
`manifest.json` lists every data file with its counts, source, license and sha256, and per language its treebank,
files and tag set.

**License.** These derived data files are distributed under the license of their source treebanks, Creative Commons
Attribution-ShareAlike 4.0 International (CC BY-SA 4.0,
{CC_BY_SA_4_URL}; ShareAlike: adaptations must be shared under the same license), separately from the hf_lineage code, which is licensed under Apache-2.0. The Apache-2.0
license does not apply to these files. Changes made: the CoNLL-U files are reduced to their word forms and UPOS
tags (JSON lines) or to their sentence text (plain text, with a few sentences left out and blank lines added between
pseudo-documents), as described below; nothing else is changed.

{table}

## Sources

- German: Universal Dependencies German GSD ({de["treebank"]}) v{de["version"]}, UniversalDependencies/UD_German-GSD
  commit {de["commit"]} (May 2025; equal to the release tag `r2.16` but for `eval.log`), files
  `de_gsd-ud-dev.conllu` and `de_gsd-ud-test.conllu`. The German part of Google's universal dependency treebank v2.0:
  reviews and news (dev: reviews `dev-s1`–`s500`, news `s501`–`s799`; test: reviews `test-s1`–`s301`, news
  `s302`–`s977`, according to the upstream README). UPOS converted from manual annotation.
- French: Universal Dependencies French GSD ({fr["treebank"]}) v{fr["version"]}, UniversalDependencies/UD_French-GSD
  commit {fr["commit"]} (May 2025; equal to the release tag `r2.16` but for `eval.log`), files
  `fr_gsd-ud-dev.conllu` and `fr_gsd-ud-test.conllu`. The French part of Google's universal dependency treebank v2.0,
  corrected since 2015: blogs, news, reviews and Wikipedia sentences, shuffled (no genre or document per sentence).
- The training files of the two treebanks are not used (they are not among the shared copies).

## How the files were made

- `<lang>.test.jsonl`, `<lang>.dev.jsonl` — UPOS tagging, one `{{"tokens": [...], "tags": [...]}}` per line, the
  whole file in file order (nothing sampled or dropped; the German test file holds one sentence twice, kept twice).
  Words are the syntactic words (FORM) with their UPOS, as `hf_lineage.data.readers.read_conllu` reads them:
  multiword-token lines (German `im` → `in dem`, French `du` → `de le`) are skipped and their syntactic words kept;
  neither treebank has empty nodes. A few French words hold a space (numbers such as `80 000`), as in the source.
  German test {n("de.test.jsonl")} sentences ({n("de.test.jsonl", "words")} words), dev {n("de.dev.jsonl")}
  ({n("de.dev.jsonl", "words")} words); French test {n("fr.test.jsonl")} ({n("fr.test.jsonl", "words")} words), dev
  {n("fr.dev.jsonl")} ({n("fr.dev.jsonl", "words")} words); the same as UD's own counts.
- Tags: every tag is one of the 17 UPOS tags (the English training labels); none is `_`. German uses
  {missing(missing_de)}, French {missing(missing_fr)}. Metric: token accuracy.
- `<lang>.text.txt` — BERT's input format: the raw text of each dev sentence (its `# text = ...` comment), one
  sentence per line, in file order, a blank line between documents. Only the dev files are used: no test sentence
  is in a text file. A dev sentence whose text is also the text of a test sentence (compared without whitespace and
  case) is left out: German {shared("de")}; French {shared("fr")}. They are still in `<lang>.dev.jsonl`, which is
  the whole dev file, so the in-language ceiling sees them while fine-tuning (short, mostly stock phrases).
  Documents: neither file has `# newdoc` markers — German GSD keeps its source order but marks no boundary between
  reviews or news articles, and French GSD is shuffled — so the documents are pseudo-documents, blocks of
  {DOCUMENT_SENTENCES} consecutive dev sentences (counted before sentences are left out; the German reviews/news
  boundary falls between two blocks): German {n("de.text.txt", "documents")} blocks,
  {n("de.text.txt")} sentences, {n("de.text.txt", "words")} whitespace-separated tokens; French
  {n("fr.text.txt", "documents")} blocks, {n("fr.text.txt")} sentences, {n("fr.text.txt", "words")} tokens.
  Consecutive French sentences are unrelated, so next-sentence prediction on this text learns little.

## Citations

- Ryan McDonald, Joakim Nivre, Yvonne Quirmbach-Brundage, Yoav Goldberg, Dipanjan Das, Kuzman Ganchev, Keith Hall,
  Slav Petrov, Hao Zhang, Oscar Täckström, Claudia Bedini, Núria Bertomeu Castelló and Jungmee Lee. 2013.
  *Universal Dependency Annotation for Multilingual Parsing*. In Proceedings of ACL 2013 (Volume 2: Short Papers),
  92–97.
- French GSD: Bruno Guillaume, Marie-Catherine de Marneffe and Guy Perrier. 2019. *Conversion et améliorations de
  corpus du français annotés en Universal Dependencies*. Traitement Automatique des Langues 60(2): 71–95.
- Universal Dependencies: Marie-Catherine de Marneffe, Christopher D. Manning, Joakim Nivre and Daniel Zeman. 2021.
  *Universal Dependencies*. Computational Linguistics 47(2): 255–308; https://universaldependencies.org/.
"""


# --------------------------------------------------------------------------- build


def build(data_dir: Path) -> dict[str, bytes]:
    """Every sample file's bytes, by file name (README.md and manifest.json included)."""
    files, info, languages = {}, {}, {}
    for lang, tb in TREEBANKS.items():
        sentences = {split: ud_sentences(data_dir / tb["folder"] / tb["files"][split]) for split in SPLITS}
        for split in SPLITS:
            name = f"{lang}.{split}.jsonl"
            files[name], info[name] = labeled_file(sentences[split])
            info[name].update(split=split, source=f"{tb['folder']}/{tb['files'][split]}")
        test_keys = {text_key(s["text"]) for s in sentences["test"]}
        info[f"{lang}.dev.jsonl"]["shared_with_test"] = [s["sent_id"] for s in sentences["dev"]
                                                         if text_key(s["text"]) in test_keys]
        name = f"{lang}.text.txt"
        files[name], info[name] = text_file(sentences["dev"], sentences["test"])
        info[name].update(split="dev", source=f"{tb['folder']}/{tb['files']['dev']}")
        tags = collections.Counter(t for split in SPLITS for s in sentences[split] for t in s["tags"])
        languages[lang] = {"language": tb["language"], "treebank": tb["treebank"], "version": tb["version"],
                           "commit": tb["commit"], "test": f"{lang}.test.jsonl", "dev": f"{lang}.dev.jsonl",
                           "text": f"{lang}.text.txt", "tags": [t for t in UPOS if tags[t]]}

    manifest = {"files": {}, "languages": languages, "labels": list(UPOS),
                "english": {"train": "lineage/labeling.train.jsonl", "validation": "lineage/labeling.validation.jsonl"}}
    for name, data in files.items():
        lang = name.split(".")[0]
        entry = {"language": lang, "split": info[name]["split"], "sentences": info[name]["sentences"],
                 "words": info[name]["words"]}
        if name.endswith(".txt"):
            entry.update(documents=info[name]["documents"], documents_from=info[name]["documents_from"],
                         left_out=info[name]["left_out"])
        elif "shared_with_test" in info[name]:
            entry["shared_with_test"] = info[name]["shared_with_test"]
        entry.update(license=CC_BY_SA_4, source=info[name]["source"], sha256=sha256(data))
        manifest["files"][name] = entry
    files["manifest.json"] = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    files["README.md"] = readme(info, languages).encode("utf-8")
    return files


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                        help=f"the shared data folder (default: {DEFAULT_DATA_DIR})")
    parser.add_argument("--output-dir", type=Path, default=DEFAULT_OUTPUT_DIR,
                        help=f"where the samples are written (default: {DEFAULT_OUTPUT_DIR})")
    args = parser.parse_args(argv)
    needed = [f"{tb['folder']}/{name}" for tb in TREEBANKS.values() for name in tb["files"].values()]
    missing = [name for name in needed if not (args.data_dir / name).is_file()]
    if missing:
        parser.exit(2, f"error: {args.data_dir} lacks {', '.join(missing)}\n")
    files = build(args.data_dir)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (args.output_dir / name).write_bytes(data)
    total = sum(map(len, files.values()))
    print(f"wrote {len(files)} files, {total:,} bytes, to {args.output_dir}")
    for name, entry in json.loads(files["manifest.json"])["files"].items():
        counts = ", ".join(f"{key} {entry[key]:,}" for key in ("sentences", "words", "documents") if key in entry)
        if entry.get("left_out"):
            counts += f"; left out (text of a test sentence): {', '.join(entry['left_out'])}"
        print(f"  {name}: {counts}, {len(files[name]):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
