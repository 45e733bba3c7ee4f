"""``conftest.run_without_hf_lineage``, on which every "loads without hf_lineage" test rests, runs its code as a fresh
``python -c`` would (forked from a server that has imported torch and transformers): hf_lineage cannot be imported,
the code runs in the folder given with the environment of the call, its output comes back, and a failure fails."""

import pytest

from conftest import run_without_hf_lineage

PROBE = """
import os, sys
forked = "torch" in sys.modules  # the server's import, or a new interpreter's nothing
try:
    import hf_lineage
except ImportError:
    print("blocked")
print(os.getcwd())
print(os.environ.get("LINEAGE_PROBE"), os.environ.get("HF_LINEAGE_PROBE"), os.environ["HF_HUB_OFFLINE"])
print(__name__, sys.modules["__main__"].__dict__ is globals())
open("made_here.txt", "w").write("x")
print("forked" if forked else "new interpreter")
"""


def test_the_code_runs_as_python_c_would_without_hf_lineage(tmp_path):
    out = run_without_hf_lineage(PROBE, cwd=tmp_path).splitlines()
    assert out == ["blocked", str(tmp_path), "None None 1", "__main__ True", "forked"]
    assert (tmp_path / "made_here.txt").is_file()


@pytest.mark.parametrize("name, expected, how", [
    ("LINEAGE_PROBE", "set None 1", "forked"),  # read at run time: the fork runs under it
    ("HF_LINEAGE_PROBE", "None set 1", "new interpreter"),  # what the preloaded libraries may read as they load
])
def test_a_variable_the_test_sets_reaches_the_code(tmp_path, monkeypatch, name, expected, how):
    monkeypatch.setenv(name, "set")
    out = run_without_hf_lineage(PROBE, cwd=tmp_path).splitlines()
    assert out[2] == expected and out[-1] == how


@pytest.mark.parametrize("code, shown", [
    ("import hf_lineage", "ModuleNotFoundError"),
    ("assert 1 == 2, 'the check failed'", "the check failed"),
    ("import sys; print('to stderr', file=sys.stderr); sys.exit(3)", "to stderr"),
    ("import sys; sys.exit('a message for the user')", "a message for the user"),
])
def test_a_failing_code_fails_the_call_with_its_error(tmp_path, code, shown):
    with pytest.raises(AssertionError, match=shown):
        run_without_hf_lineage(code, cwd=tmp_path)


def test_one_calls_state_does_not_reach_the_next(tmp_path):
    (tmp_path / "left_behind.py").write_text("")
    run_without_hf_lineage("import json, left_behind; json.LEFT_BEHIND = 1", cwd=tmp_path)
    out = run_without_hf_lineage("import sys, json; print(hasattr(json, 'LEFT_BEHIND'), 'left_behind' in sys.modules)",
                                 cwd=tmp_path)
    assert out.split() == ["False", "False"]
