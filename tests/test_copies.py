"""The ``# Copied from`` markers in hf_lineage/models: every marked copy equals its source (after the ``with A->B``
replacements), and the checker (utils/check_copies.py) notices an altered copy and a marker naming nothing."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_copies", ROOT / "utils" / "check_copies.py")
check_copies = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_copies)

SOURCE = '''class FooHead:
    """The Foo head."""

    def forward(self, x):
        return self.foo_proj(x)
'''

COPY = '''import torch


# Copied from pkg.source.FooHead with Foo->Bar, foo_->bar_
class BarHead:
    """The Bar head."""

    def forward(self, x):
        return self.bar_proj(x)


def after():
    return 1
'''


@pytest.fixture
def tree(tmp_path):
    """A repository root holding pkg/source.py and pkg/copy.py, the second a marked copy of the first."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "source.py").write_text(SOURCE)
    (tmp_path / "pkg" / "copy.py").write_text(COPY)
    return tmp_path


def test_every_marked_copy_in_models_equals_its_source():
    problems = check_copies.check_folder()
    assert not problems, "run `python utils/check_copies.py --fix`, or change the source:\n" + "\n".join(problems)


def test_the_models_folder_keeps_its_markers():
    # A copy that loses its marker is no longer checked: the count only goes down on purpose (from 21 to 16 when the
    # configs' five copies of BERT's __post_init__ became configuration_lineage_utils.CheckedSizesMixin).
    assert len(check_copies.marked_copies()) >= 16


def test_a_copy_equal_after_the_replacements_passes(tree):
    assert check_copies.check_file(tree / "pkg" / "copy.py", root=tree) == []


@pytest.mark.parametrize("altered", ["copy", "source"])
def test_an_altered_copy_or_source_is_detected_and_fixed(tree, altered):
    path = tree / "pkg" / f"{altered}.py"
    path.write_text(path.read_text().replace("return self.", "return 2 * self."))
    copy = tree / "pkg" / "copy.py"
    problems = check_copies.check_file(copy, root=tree)
    assert problems == ["copy.py:4: differs from pkg.source.FooHead with Foo->Bar, foo_->bar_"]

    assert check_copies.check_file(copy, root=tree, fix=True) == problems
    assert check_copies.check_file(copy, root=tree) == []
    expected = SOURCE.replace("Foo", "Bar").replace("foo_", "bar_")
    if altered == "source":
        expected = expected.replace("return self.", "return 2 * self.")
    assert expected in copy.read_text()
    assert copy.read_text().endswith("\n\ndef after():\n    return 1\n")  # the code after the copy is untouched


def test_an_altered_copy_in_the_models_folder_is_detected(tmp_path):
    """The real files: a changed line inside a marked class of models/modeling_lineage_svd.py is reported."""
    text = (check_copies.MODELS / "modeling_lineage_svd.py").read_text()
    altered = text.replace("    base_model_class = LineageSvdModel\n", "    base_model_class = None\n", 1)
    assert altered != text
    (tmp_path / "modeling_lineage_svd.py").write_text(altered)
    problems = check_copies.check_file(tmp_path / "modeling_lineage_svd.py")
    assert len(problems) == 1 and "LineageWord2VecForTokenClassification with Word2Vec->Svd" in problems[0]


@pytest.mark.parametrize("name, message", [
    ("pkg.source.NoSuchHead", "no class or function 'NoSuchHead'"),
    ("pkg.source.FooHead.backward", "no class or function 'FooHead.backward'"),
    ("pkg.nowhere.FooHead", "no module for 'pkg.nowhere.FooHead'"),
])
def test_a_marker_naming_nothing_fails_loudly(tree, name, message):
    copy = tree / "pkg" / "copy.py"
    copy.write_text(COPY.replace("pkg.source.FooHead", name))
    with pytest.raises(check_copies.CopyMarkerError, match=message):
        check_copies.check_file(copy, root=tree)


def test_a_marker_not_above_a_class_or_def_fails_loudly(tree):
    copy = tree / "pkg" / "copy.py"
    copy.write_text(COPY.replace("class BarHead:", "BarHead = None\nclass BarHead:"))
    with pytest.raises(check_copies.CopyMarkerError, match="must stand above a class or def"):
        check_copies.check_file(copy, root=tree)


def test_the_command_line_exits_non_zero_on_a_difference(monkeypatch, tree, capsys):
    assert check_copies.main([]) == 0
    copy = tree / "pkg" / "copy.py"
    copy.write_text(copy.read_text().replace("bar_proj", "baz_proj"))
    monkeypatch.setattr(check_copies, "MODELS", tree / "pkg")
    monkeypatch.setattr(check_copies, "ROOT", tree)
    assert check_copies.main([]) == 1
    assert "copy.py:4: differs" in capsys.readouterr().out
