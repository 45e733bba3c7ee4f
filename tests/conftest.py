import json
import os
import sys
from pathlib import Path

import pytest

# The suite is a CPU suite: it runs on CI's machine, and its numbers (bit-identical resumes, clock-driven schedules,
# reference comparisons at float32 tolerances) are CPU numbers. On a CUDA machine CUDA is therefore hidden from every
# test and from every process a test starts (set before torch is imported; CUDA starts lazily and reads it then), so
# the suite tests the same thing everywhere, and its multi-process tests (ACCELERATE_USE_CPU=1) use gloo on the CPU.
# The GPU paths have their own tests, marked ``cuda``: they run with HF_LINEAGE_TEST_CUDA=1 on a CUDA machine
# (``benchmarks/gpu_check.sh`` runs both) and are skipped, with that reason, everywhere else.
CUDA_TESTS = os.environ.get("HF_LINEAGE_TEST_CUDA") == "1"
if not CUDA_TESTS:
    os.environ["CUDA_VISIBLE_DEVICES"] = ""

import torch  # noqa: E402 - after CUDA_VISIBLE_DEVICES

# What the package keeps between runs (downloads, --help texts, frozen networks' layers) goes to a folder of this
# session's own: the suite neither reads what a user's runs left in ~/.cache/hf_lineage nor leaves anything there.
if "HF_LINEAGE_CACHE" not in os.environ:
    import tempfile

    os.environ["HF_LINEAGE_CACHE"] = tempfile.mkdtemp(prefix="hf_lineage_tests_")


# Test files whose subject is hf_lineage's own logic, numbers and documents, on code paths where none of the pinned
# libraries (transformers, tokenizers, accelerate, datasets, evaluate, scikit-learn) decides anything that the rest of
# the suite does not already exercise: CI's pass on the oldest supported releases deselects them
# (``-m "not version_independent"``; docs/versions.md says why and what it saves). Each with the reason.
VERSION_INDEPENDENT = {
    "test_architecture_map.py": "the docs' map of the package against the source tree",
    "test_copies.py": "the '# Copied from' checker, on source text",
    "test_docs_commands.py": "the docs' commands against the argument parsers (argparse only)",
    "test_docs_crosslingual.py": "shipped reports against their results.json",
    "test_docs_lineage.py": "shipped reports against their results.json",
    "test_import_graph.py": "the import graph, read from the source with ast",
    "test_samples_home.py": "the data home's folders, READMEs and manifests",
    "test_crosslingual_samples.py": "the cross-lingual samples' hashes, counts and tags",
    "test_context_tasks.py": "the context tasks' embedded data (labels, balance, bag-of-words gate)",
    "test_lineage_report.py": "the report written from synthetic results dicts (markdown, verdicts, plots)",
    "test_lineage_diagnostics.py": "seen/unseen-word accuracies on hand-made predictions",
    "test_convert_downloads.py": "the download cache against a loopback HTTP server (standard library)",
    "test_kneser_ney.py": "the n-gram LM in pure Python and numpy",
    "test_lineage_scales.py": "test_lineage.py's code paths (which the pass runs) at the small and base sizes",
    "test_cuda.py": "GPU only; skipped on CI's machine",
}
# Single tests of files that otherwise run in that pass: the slowest whose subject is the package's own bookkeeping,
# on code that the pass's other tests (the same file's full lineage run above all) already run on the pinned libraries.
VERSION_INDEPENDENT_TESTS = {
    "test_lineage.py::test_a_failed_stage_is_reported_and_the_others_continue_then_a_fixed_rerun_reuses_them":
        "the stage records' failure and reuse logic; the full run covers the stages themselves",
    "test_lineage.py::test_a_moved_report_folder_is_reused_from_its_new_place": "paths in the stage records",
    "test_lineage.py::test_a_second_run_in_parallel_workers_gives_the_full_runs_numbers":
        "the same cells as the full run, again in child processes: the lineage's own reproducibility",
    "test_lineage.py::test_question_answering_and_intent_slots_run_as_lineage_tasks_scored_like_their_recipes":
        "the lineage's scoring of the recipes' prediction files; the recipes run in test_question_answering.py and "
        "test_intent_and_slots.py",
}


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: checks a GPU path; runs only with HF_LINEAGE_TEST_CUDA=1 on a CUDA machine")
    config.addinivalue_line("markers", "version_independent: a file in conftest.VERSION_INDEPENDENT or a test in "
                            "VERSION_INDEPENDENT_TESTS (its reason there); the oldest-releases CI pass deselects it")


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """What a test leaves alive (imported modules, session fixtures, caches) is exempted from later cyclic garbage
    collections, as between the lineage's stages: each Trainer.train otherwise walks every object the session has
    made, 0.3 s and more a call."""
    from hf_lineage.experiments.stages import freeze_long_lived_objects

    freeze_long_lived_objects()


def pytest_collection_modifyitems(config, items):
    if CUDA_TESTS and not torch.cuda.is_available():
        raise pytest.UsageError("HF_LINEAGE_TEST_CUDA=1 but torch sees no CUDA device")
    here = Path(__file__).parent
    stale = sorted(name for name in VERSION_INDEPENDENT if not (here / name).is_file())
    stale += sorted(name for name in VERSION_INDEPENDENT_TESTS if not (here / name.split("::")[0]).is_file()
                    or f"def {name.split('::')[1]}(" not in (here / name.split("::")[0]).read_text(encoding="utf-8"))
    if stale:  # a renamed file would otherwise leave the list silently
        raise pytest.UsageError(f"conftest.VERSION_INDEPENDENT(_TESTS) names no such test file or test: {stale}")
    for item in items:
        test = f"{item.path.name}::{item.originalname}"
        if item.path.name in VERSION_INDEPENDENT or test in VERSION_INDEPENDENT_TESTS:
            item.add_marker(pytest.mark.version_independent)
        is_cuda_test = item.get_closest_marker("cuda") is not None
        if is_cuda_test and not CUDA_TESTS:
            item.add_marker(pytest.mark.skip(reason="a GPU test: run with HF_LINEAGE_TEST_CUDA=1 on a CUDA machine"))
        elif CUDA_TESTS and not is_cuda_test:
            item.add_marker(pytest.mark.skip(reason="a CPU test: run without HF_LINEAGE_TEST_CUDA (CUDA hidden)"))

REPO = Path(__file__).resolve().parents[1]
# Larger real datasets, present on the project's machines but not in a clean clone; tests that read them skip
# without them (the suite runs on the fixtures shipped under tests/ and the package's embedded samples).
# HF_LINEAGE_SHARED_DATA points elsewhere, e.g. at a missing folder to check how the suite runs without it.
SHARED_DATA = Path(os.environ.get("HF_LINEAGE_SHARED_DATA") or REPO.parent / "shared" / "data")

# A few sentences of mixed shape (punctuation, casing, CJK) to train throwaway tokenizers on.
CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A journey of a thousand miles begins with a single step.",
    "Language models predict the next word from the previous words.",
    "BERT masks fifteen percent of the tokens and predicts them.",
    "Paris is the capital of France, and Berlin is the capital of Germany.",
    "The cat sat on the mat; the dog sat on the log.",
    "東京は日本の首都です。",
    "Neural networks learn distributed representations of words.",
] * 4


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture
def one_torch_thread():
    """Tiny recurrent models gain nothing from a second thread, and on a shared CPU they lose a lot to it."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def wordpiece_tokenizer():
    from hf_lineage.tokenization import train_wordpiece_tokenizer

    return train_wordpiece_tokenizer(iterator=CORPUS, vocab_size=300, min_frequency=1, model_max_length=64)


def run_without_hf_lineage(code: str, cwd) -> str:
    """Run ``code`` in a fresh interpreter where ``import hf_lineage`` fails, as on a machine without it; returns its
    standard output. The interpreter is a fork of one that has imported only torch and transformers (``_Forks``),
    which saves each call that import (about 6 s); a call whose environment differs in what those read as they load
    gets a new interpreter."""
    returncode, stdout, stderr = _FORKS.run(code, str(cwd), {**without_pythonpath(os.environ), "HF_HUB_OFFLINE": "1"})
    assert returncode == 0, stderr[-3000:]
    return stdout


# The interpreter _Forks forks: hf_lineage blocked, torch and transformers' Auto classes imported (no torch op run, so
# no thread pool exists to be lost in a fork), then for each request a child that runs the code as `python -c` would,
# in the request's folder, its output in files whose names the request gives.
_FORK_SERVER = r"""
import importlib, json, os, sys, traceback, types
sys.modules["hf_lineage"] = None  # makes any import of hf_lineage raise
import torch, transformers
from transformers import AutoConfig, AutoModel, AutoTokenizer, GenerationMixin, PreTrainedModel, pipeline  # noqa: F401
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        status = 0
        try:
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            importlib.invalidate_caches()  # "" on sys.path now names this folder
            for fd, name in ((1, "stdout"), (2, "stderr")):
                os.dup2(os.open(request[name], os.O_WRONLY), fd)
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            main = sys.modules["__main__"] = types.ModuleType("__main__")  # the code's own, as under `python -c`
            exec(compile(request["code"], "<string>", "exec"), main.__dict__)
        except SystemExit as stop:  # sys.exit(n), or sys.exit(message): the message on stderr, status 1
            status = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
            if stop.code is not None and not isinstance(stop.code, int):
                print(stop.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status), flush=True)
"""


class _Forks:
    """``run(code, cwd, env)`` → (return code, stdout, stderr) of ``python -c code`` where hf_lineage is blocked. The
    server starts on first use and serves every call whose environment agrees with the suite's starting one on what
    the server's libraries read as they load (``_settings``); a call that differs there (a test that set HF_HOME, say)
    gets a new interpreter of its own."""

    def __init__(self, env: dict):
        self.server, self.env, self.settings = None, env, _settings(env)

    def run(self, code: str, cwd: str, env: dict):
        import select
        import subprocess
        import tempfile

        if _settings(env) != self.settings:
            prelude = "import sys; sys.modules['hf_lineage'] = None\n"
            result = subprocess.run([sys.executable, "-c", prelude + code], cwd=cwd, env=env, capture_output=True,
                                    text=True, timeout=300)
            return result.returncode, result.stdout, result.stderr
        if self.server is None or self.server.poll() is not None:
            self.server = subprocess.Popen([sys.executable, "-c", _FORK_SERVER], env=self.env, text=True,
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tempfile.mkdtemp())
        with tempfile.TemporaryDirectory() as folder:
            out, err = Path(folder, "stdout"), Path(folder, "stderr")
            out.touch()
            err.touch()
            request = {"code": code, "cwd": cwd, "env": env, "stdout": str(out), "stderr": str(err)}
            self.server.stdin.write(json.dumps(request) + "\n")
            self.server.stdin.flush()
            if not select.select([self.server.stdout], [], [], 300)[0]:
                self.server.kill()
                raise TimeoutError(f"run_without_hf_lineage: no answer in 300 s; stderr so far:\n{err.read_text()}")
            line = self.server.stdout.readline()
            if not line:
                raise RuntimeError("the fork server of run_without_hf_lineage exited")
            return int(line), out.read_text(), err.read_text()


# What the server's libraries (torch, transformers, huggingface_hub, NumPy) and Python read from the environment as
# they load: a call under other values of these gets a new interpreter. Any other variable reaches the child, which
# runs under the call's whole environment (TOKENIZERS_PARALLELISM, which transformers sets during the suite, is read
# by tokenizers when it runs).
_READ_AT_IMPORT = ("HF_", "HUGGINGFACE", "TRANSFORMERS", "TORCH", "PYTORCH", "CUDA", "OMP_", "MKL_", "OPENBLAS",
                   "NPY_", "USE_", "PYTHON", "LD_", "XDG_", "HOME", "LANG", "LC_", "TZ")
# ... less inductor's cache folder, which torch sets in the suite's environment when a test first compiles.
_SET_BY_THE_RUNNING_SUITE = ("TORCHINDUCTOR_CACHE_DIR",)


def _settings(env: dict) -> dict:
    return {k: v for k, v in env.items() if k.startswith(_READ_AT_IMPORT) and k not in _SET_BY_THE_RUNNING_SUITE}


def without_pythonpath(env) -> dict:
    return {k: v for k, v in env.items() if k != "PYTHONPATH"}


_FORKS = _Forks({**without_pythonpath(os.environ), "HF_HUB_OFFLINE": "1"})


def enable_activation_checkpointing(model, base) -> list:
    """Turns on activation checkpointing through transformers' public call — ``activation_checkpointing_enable``
    from 5.24 on, ``gradient_checkpointing_enable`` (deprecated there) before — and counts the checkpointed calls
    of ``base``'s layers (transformers' ``GradientCheckpointingLayer``s), so a test sees that layers really were
    recomputed."""
    from transformers.modeling_layers import GradientCheckpointingLayer

    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    layers = [m for m in base.modules() if isinstance(m, GradientCheckpointingLayer)]
    assert layers and all(layer.gradient_checkpointing for layer in layers)
    calls = []

    def counting(checkpoint):
        def call(*args, **kwargs):
            calls.append(1)
            return checkpoint(*args, **kwargs)

        return call

    for layer in layers:
        layer._gradient_checkpointing_func = counting(layer._gradient_checkpointing_func)
    return calls
