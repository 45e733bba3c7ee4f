"""Wall time and peak memory of ``hf-lineage lineage --checkpoints published`` at full size, offline (issue 60).

The releases themselves cannot be downloaded here, and their values do not change a run's time: their shapes,
vocabularies and file formats do. So this builds **full-size stand-ins** with random values, each in its release's
own format and placed where the run looks for it (a Hugging Face Hub cache under the real ids, hf_lineage's download
cache under the real URLs), and runs the lineage on them with ``HF_HUB_OFFLINE=1``:

- ``google-bert/bert-base-uncased``: ``BertForPreTraining(BertConfig())`` (12 layers, 768 wide, 110 M parameters)
  with an uncased ``BertTokenizer`` of 30,522 WordPiece entries (trained on the embedded corpus, the rest of the
  ids filled with unused pieces, as the release's ``[unused*]`` are);
- ``openai-community/openai-gpt``: ``OpenAIGPTLMHeadModel(OpenAIGPTConfig())`` (117 M) with an ``OpenAIGPTTokenizer``
  of 40,478 entries (character BPE trained on the embedded corpus, filled up to the release's size);
- ``fse/word2vec-google-news-300``: a gensim ``KeyedVectors`` of 3,000,000 words × 300 saved as fse's copy is
  (``.model`` + ``.model.vectors.npy``, 3.4 GiB), which the standard set cuts to its first 200,000 words;
- ``stanfordnlp/glove`` ``glove.6B.zip`` holding ``glove.6B.300d.txt``: 400,000 lowercased words × 300 as text;
- AllenNLP's ELMo (``--elmo small`` or ``original``, the release's own ``options.json``) as ``options.json`` +
  ``weights.hdf5`` at the download-cache paths of its URLs.

Then it runs ``hf-lineage lineage --checkpoints published`` (ELMo: the named release) with the default tasks and one
seed, twice: a first run with empty caches, and a second run into another folder with the caches the first one
filled (the frozen layers' memo, the converted folders are rebuilt). For each it records the wall time, each stage's
time, and the peak resident memory of the whole process tree (the main process and its workers, summed, sampled
twice a second). Prints the CPU, the commands and a Markdown table; writes ``summary.json`` into ``--work-dir``.
The values are random, so the scores of these runs mean nothing; the times and memory are the point.

    python benchmarks/bench_published_run.py --work-dir /tmp/published-bench             # about an hour on 2 cores
    python benchmarks/bench_published_run.py --work-dir /tmp/published-bench --elmo small
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import numpy as np

from hf_lineage.machine.precision import cpu_name

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "hf_lineage" / "samples" / "lineage" / "corpus.train.txt"
FAMILIES = ["nnlm", "word2vec", "glove", "elmo", "gpt", "bert"]  # the default families, and GloVe beside word2vec
BERT_VOCAB, GPT_VOCAB = 30_522, 40_478
GOOGLE_NEWS_WORDS, GLOVE_WORDS, DIM = 3_000_000, 400_000, 300
# AllenNLP's options.json of each release (allennlp-models' pretrained ELMo files), what the stand-in's shapes follow.
ELMO_OPTIONS = {
    name: {"lstm": {"use_skip_connections": True, "projection_dim": projection, "cell_clip": 3, "proj_clip": 3,
                    "dim": cells, "n_layers": 2},
           "char_cnn": {"activation": "relu", "n_highway": highways, "embedding": {"dim": 16}, "n_characters": 262,
                        "max_characters_per_token": 50,
                        "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]}}
    for name, (cells, projection, highways) in {"small": (1024, 128, 1), "original": (4096, 512, 2)}.items()
}


def corpus_words(limit: int | None = None) -> list[str]:
    """The embedded corpus's words, most frequent first (ties alphabetical)."""
    from collections import Counter

    counts = Counter(CORPUS.read_text(encoding="utf-8").split())
    words = [word for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]
    return words[:limit]


def snapshot_folder(hub: Path, repo_id: str) -> Path:
    sys.path.insert(0, str(REPO / "tests"))
    from standins_transformers import snapshot_folder as folder  # the tests' Hub-cache layout, one home

    return folder(hub, repo_id)


def save_bert(hub: Path) -> None:
    import torch
    from transformers import BertConfig, BertForPreTraining, BertTokenizer

    from hf_lineage.tokenization import train_wordpiece_tokenizer

    trained = train_wordpiece_tokenizer([str(CORPUS)], vocab_size=BERT_VOCAB, lowercase=True)
    vocab = [token for token, _ in sorted(trained.get_vocab().items(), key=lambda item: item[1])]
    vocab += [f"[unused{i}]" for i in range(BERT_VOCAB - len(vocab))]
    tokenizer = BertTokenizer(vocab={token: i for i, token in enumerate(vocab)}, do_lower_case=True)
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig(vocab_size=BERT_VOCAB, pad_token_id=tokenizer.pad_token_id)).eval()
    snapshot = snapshot_folder(hub, "google-bert/bert-base-uncased")
    model.save_pretrained(snapshot)
    tokenizer.save_pretrained(snapshot)


def save_gpt(hub: Path) -> None:
    import torch
    from transformers import OpenAIGPTConfig, OpenAIGPTLMHeadModel, OpenAIGPTTokenizer

    from hf_lineage.tokenization import train_bpe_tokenizer

    trained = train_bpe_tokenizer([str(CORPUS)], vocab_size=GPT_VOCAB, byte_level=False, lowercase=True)
    model_json = json.loads(trained.backend_tokenizer.to_str())["model"]
    tokens = [t for t, _ in sorted(model_json["vocab"].items(), key=lambda item: item[1])
              if t not in (trained.pad_token, trained.eos_token)]
    tokens += [f"unused{i}</w>" for i in range(GPT_VOCAB - len(tokens))]  # ids no merge reaches, as padding
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model_json["merges"]]
    tokenizer = OpenAIGPTTokenizer(vocab={t: i for i, t in enumerate(tokens)}, merges=merges)
    torch.manual_seed(0)
    model = OpenAIGPTLMHeadModel(OpenAIGPTConfig(vocab_size=GPT_VOCAB)).eval()
    snapshot = snapshot_folder(hub, "openai-community/openai-gpt")
    model.save_pretrained(snapshot)
    tokenizer.save_pretrained(snapshot)


def vocabulary(size: int, lowercase: bool) -> list[str]:
    """The corpus's words first (so the tasks find most of theirs), then made-up words up to ``size``; GoogleNews'
    phrases joined by ``_`` among them."""
    words = corpus_words()
    if lowercase:
        words = list(dict.fromkeys(word.lower() for word in words))
    words += [f"w{i}" + ("_phrase" if i % 7 == 0 and not lowercase else "") for i in range(size - len(words))]
    return words[:size]


def random_rows(count: int, dim: int, seed: int) -> np.ndarray:
    rng, rows = np.random.default_rng(seed), np.empty((count, dim), dtype=np.float32)
    for start in range(0, count, 500_000):
        rows[start:start + 500_000] = rng.standard_normal((min(500_000, count - start), dim), dtype=np.float32)
    return rows


def save_word2vec(hub: Path) -> None:
    from gensim.models import KeyedVectors

    words = ["</s>", *vocabulary(GOOGLE_NEWS_WORDS - 1, lowercase=False)]
    kv = KeyedVectors(DIM, count=0, dtype=np.float32)
    kv.index_to_key = words
    kv.key_to_index = {word: i for i, word in enumerate(words)}
    kv.vectors = random_rows(len(words), DIM, 2013)
    kv.expandos = {"count": np.arange(len(words), 0, -1, dtype=np.int64)}  # gensim's made-up counts
    snapshot = snapshot_folder(hub, "fse/word2vec-google-news-300")
    kv.save(str(snapshot / "word2vec-google-news-300.model"), separately=["vectors"])


def save_glove(hub: Path) -> None:
    words, rows = vocabulary(GLOVE_WORDS, lowercase=True), random_rows(GLOVE_WORDS, DIM, 2014) * 0.4
    snapshot = snapshot_folder(hub, "stanfordnlp/glove")
    with zipfile.ZipFile(snapshot / "glove.6B.zip", "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("glove.6B.300d.txt", "w", force_zip64=True) as member:
            for start in range(0, GLOVE_WORDS, 10_000):
                lines = [word + " " + " ".join(f"{v:.6g}" for v in row) + "\n"  # Stanford's ~6 significant digits
                         for word, row in zip(words[start:start + 10_000], rows[start:start + 10_000].tolist())]
                member.write("".join(lines).encode())


def save_elmo(cache: Path, name: str) -> None:
    import h5py

    from hf_lineage.registry.families import ELMO_RELEASES
    from hf_lineage.convert.sources import cached_url_path

    os.environ["HF_LINEAGE_CACHE"] = str(cache)
    options_path, weights_path = (cached_url_path(url) for url in ELMO_RELEASES[name])
    options = ELMO_OPTIONS[name]
    options_path.parent.mkdir(parents=True, exist_ok=True)
    weights_path.parent.mkdir(parents=True, exist_ok=True)
    options_path.write_text(json.dumps(options))
    cnn, lstm = options["char_cnn"], options["lstm"]
    E, filters, C, P = cnn["embedding"]["dim"], cnn["filters"], lstm["dim"], lstm["projection_dim"]
    F = sum(n for _, n in filters)
    rng = np.random.default_rng(2018)

    def put(f, name, *shape, scale=0.05):
        f.create_dataset(name, data=(rng.standard_normal(shape, dtype=np.float32) * scale))

    with h5py.File(weights_path, "w") as f:
        put(f, "char_embed", 261, E)
        for i, (width, n) in enumerate(filters):
            put(f, f"CNN/W_cnn_{i}", 1, width, E, n)
            put(f, f"CNN/b_cnn_{i}", n)
        for k in range(cnn["n_highway"]):
            for part in ("carry", "transform"):
                put(f, f"CNN_high_{k}/W_{part}", F, F, scale=0.02)
                put(f, f"CNN_high_{k}/b_{part}", F)
        put(f, "CNN_proj/W_proj", F, P, scale=0.02)
        put(f, "CNN_proj/b_proj", P)
        for d in range(2):
            for layer in range(lstm["n_layers"]):
                cell = f"RNN_{d}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
                put(f, cell + "W_0", P + P, 4 * C, scale=0.02)
                put(f, cell + "B", 4 * C)
                put(f, cell + "W_P_0", C, P, scale=0.02)


def build_standins(work: Path, elmo: str) -> dict:
    hub, cache = work / "hub", work / "cache"
    seconds = {}
    for name, build in (("bert", lambda: save_bert(hub)), ("gpt", lambda: save_gpt(hub)),
                        ("word2vec", lambda: save_word2vec(hub)), ("glove", lambda: save_glove(hub)),
                        ("elmo", lambda: save_elmo(cache, elmo))):
        started = time.perf_counter()
        build()
        seconds[name] = round(time.perf_counter() - started, 1)
        print(f"[bench] stand-in {name}: {seconds[name]} s", flush=True)
    return seconds


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants, summed."""
    import psutil

    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


STAGE_LINE = re.compile(r"hf-lineage lineage \[\d+/\d+\] (\S+): (running|done in ([\d.]+) s|FAILED)")


def run_lineage(work: Path, output: str, elmo: str, log_name: str) -> dict:
    """One run of the lineage, streamed to ``work/log_name``; wall time, peak tree memory, each stage's time and
    the peak memory while it ran."""
    command = ["hf-lineage", "lineage", "--checkpoints", "published", f"elmo={elmo}", "--families", *FAMILIES,
               "--output-dir", str(work / output)]
    env = dict(os.environ, HF_HUB_CACHE=str(work / "hub"), HF_HUB_OFFLINE="1", HF_LINEAGE_CACHE=str(work / "cache"),
               TOKENIZERS_PARALLELISM="false")
    print("[bench] " + " ".join(command), flush=True)
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               bufsize=1)
    samples, running = [], {}
    stages = {}
    done = threading.Event()

    def sample():
        while not done.is_set():
            samples.append((time.perf_counter() - started, tree_rss(process.pid)))
            done.wait(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with open(work / log_name, "w", encoding="utf-8") as log:
        for line in process.stdout:
            log.write(line)
            now = time.perf_counter() - started
            if line.startswith("hf-lineage lineage"):
                print(line.rstrip()[:200], flush=True)
            for match in STAGE_LINE.finditer(line):
                name, what = match.group(1), match.group(2)
                if what == "running":
                    running[name] = now
                else:
                    stages[name] = {"start": running.get(name, now), "end": now,
                                    "seconds": float(match.group(3)) if match.group(3) else None,
                                    "status": "failed" if what == "FAILED" else "ok"}
    code = process.wait()
    done.set()
    sampler.join()
    wall = time.perf_counter() - started
    for stage in stages.values():
        inside = [rss for t, rss in samples if stage["start"] - 0.5 <= t <= stage["end"] + 0.5]
        stage["peak_tree_mib"] = round(max(inside) / 2**20) if inside else None
    return {"command": " ".join(command), "exit_code": code, "wall_seconds": round(wall, 1),
            "peak_tree_mib": round(max((rss for _, rss in samples), default=0) / 2**20), "stages": stages}


def markdown(summary: dict) -> str:
    lines = [f"CPU: {summary['cpu']}, {summary['cores']} cores; ELMo release: {summary['elmo']}; stand-ins built in "
             f"{sum(summary['standin_seconds'].values()):.0f} s ({summary['standin_seconds']}).", ""]
    first, second = summary["runs"]
    lines += ["| stage | first run (s) | peak memory, tree (MiB) | second run (s) |", "|---|---|---|---|"]
    for name, stage in first["stages"].items():
        other = second["stages"].get(name, {})
        lines.append(f"| {name} | {stage['seconds']} | {stage['peak_tree_mib']} | {other.get('seconds')} |")
    lines.append(f"| **whole run** | **{first['wall_seconds']}** | **{first['peak_tree_mib']}** | "
                 f"**{second['wall_seconds']}** |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work-dir", required=True, type=Path, help="stand-ins, caches, runs and summary.json")
    parser.add_argument("--elmo", choices=sorted(ELMO_OPTIONS), default="original")
    parser.add_argument("--runs", type=int, choices=(1, 2), default=2, help="2: also the second run on filled caches")
    args = parser.parse_args()
    work = args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    print(f"[bench] CPU: {cpu_name()}, {os.cpu_count()} cores; python {platform.python_version()}", flush=True)
    summary = {"cpu": cpu_name(), "cores": os.cpu_count(), "elmo": args.elmo, "created": time.strftime("%Y-%m-%d"),
               "standin_seconds": build_standins(work, args.elmo), "runs": []}
    for k in range(args.runs):
        summary["runs"].append(run_lineage(work, f"run{k + 1}", args.elmo, f"run{k + 1}.log"))
        (work / "summary.json").write_text(json.dumps(summary, indent=1))
        print(f"[bench] run {k + 1}: {summary['runs'][-1]['wall_seconds']} s, peak "
              f"{summary['runs'][-1]['peak_tree_mib']} MiB, exit {summary['runs'][-1]['exit_code']}", flush=True)
    if args.runs == 2:
        print(markdown(summary))


if __name__ == "__main__":
    main()
