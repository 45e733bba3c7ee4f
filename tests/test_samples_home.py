"""The package's data home (``hf_lineage/samples``): every shipped data sample sits there (or, for the pretrained
folders, in ``hf_lineage/checkpoints``), each folder with its README and its builder in ``scripts/``, every manifest's
hashes match its files, and ``pyproject.toml``'s package data takes every file of the home into a wheel (read from
setuptools' own configuration, without building or installing anything)."""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
import warnings
from pathlib import Path

import pytest

from hf_lineage import samples

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "hf_lineage"
HOMES = (PACKAGE / "samples", PACKAGE / "checkpoints")  # the data home and the shipped pretrained folders
# What a data file is: text and table formats, model and array files, archives.
DATA_SUFFIXES = {".jsonl", ".json", ".txt", ".csv", ".tsv", ".conllu", ".tokens", ".npy", ".npz", ".safetensors",
                 ".bin", ".h5", ".hdf5", ".pt", ".gz", ".zip", ".bz2", ".xz"}


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _home_data() -> set[Path]:
    """Every file in the data home but its own Python module."""
    return {p for p in _files(samples.SAMPLES) if p.suffix not in (".py", ".pyc")}


def test_no_shipped_data_outside_the_home():
    outside = [str(p.relative_to(REPO)) for p in _files(PACKAGE)
               if p.suffix.lower() in DATA_SUFFIXES and not any(home in p.parents for home in HOMES)]
    assert not outside, ("data files outside hf_lineage/samples (move them into a folder there, with its README, "
                         f"and read them through hf_lineage.samples): {outside}")


def test_the_home_is_where_the_package_says_and_every_folder_has_its_readme():
    assert samples.SAMPLES == PACKAGE / "samples"
    folders = {p for p in samples.SAMPLES.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(samples.FOLDERS)
    for folder in samples.FOLDERS:
        assert (folder / "README.md").is_file(), folder
        assert samples.path(folder.name) == folder
    # No loose files: every sample sits in a folder beside its README.
    assert {p.name for p in samples.SAMPLES.iterdir() if p.is_file()} == {"__init__.py"}
    assert samples.path("lineage", "corpus.train.txt").is_file()
    with pytest.raises(ValueError, match="no shipped sample folder 'nope'"):
        samples.path("nope")


def test_every_folder_is_built_by_its_script_in_scripts():
    """The builders have one home, the repository's scripts/ (developer tools, outside the package): the home's
    docstring names each folder's builder there, the builder exists, and the folder's README names it."""
    entries = re.findall(r"^    (\w+)/ +(.*?)(?=^    \w+/|^\S|\Z)", samples.__doc__, flags=re.M | re.S)
    builders = {folder: re.findall(r"\((\S+\.py)\)", text) for folder, text in entries}
    assert set(builders) == {folder.name for folder in samples.FOLDERS}
    for folder, named in builders.items():
        assert len(named) == 1 and named[0].startswith("scripts/make_"), (folder, named)
        assert (REPO / named[0]).is_file(), named[0]
        assert named[0] in (samples.path(folder) / "README.md").read_text(encoding="utf-8"), folder


def test_the_home_module_imports_nothing_of_the_package():
    tree = ast.parse((samples.SAMPLES / "__init__.py").read_text(encoding="utf-8"))
    imported = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert not [n for n in imported if isinstance(n, ast.ImportFrom) and n.level]
    names = [a.name for n in imported if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in imported if isinstance(n, ast.ImportFrom) and n.module]
    assert not [name for name in names if name.split(".")[0] == "hf_lineage"], names


def test_every_manifest_hash_matches_its_file():
    manifests = sorted(samples.SAMPLES.glob("*/manifest.json"))
    assert {m.parent.name for m in manifests} == {"lineage", "context_tasks", "slots", "crosslingual", "cloze", "blimp"}
    for manifest in manifests:
        for name, entry in json.loads(manifest.read_text(encoding="utf-8"))["files"].items():
            data = (manifest.parent / name).read_bytes()
            assert hashlib.sha256(data).hexdigest() == entry["sha256"], manifest.parent / name


def test_the_package_data_globs_match_every_file_in_the_home():
    """pyproject.toml's one package-data entry for the home, globbed as setuptools does (relative to the package)."""
    tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else pytest.importorskip("tomli")
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    globs = config["package-data"]["hf_lineage.samples"]
    matched = {p for pattern in globs for p in samples.SAMPLES.glob(pattern) if p.is_file()}
    assert matched == _home_data()
    # No other package's entry names a sample folder any more (the old homes are gone).
    assert set(config["package-data"]) == {"hf_lineage.samples", "hf_lineage.checkpoints"}


def test_a_wheel_would_take_every_file_in_the_home(monkeypatch):
    """What setuptools' build_py copies into a wheel (and a non-editable ``pip install``), computed from the project
    configuration without building: the home's module and every data file in it."""
    dist_module = pytest.importorskip("setuptools.dist")
    monkeypatch.chdir(REPO)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # setuptools' deprecation notes on the license table
        dist = dist_module.Distribution()
        dist.parse_config_files()
    # include_package_data would read a MANIFEST.in through egg_info (writing an .egg-info folder); the project has
    # none, so the package-data globs alone decide what ships.
    assert not (REPO / "MANIFEST.in").exists()
    dist.include_package_data = False
    build_py = dist.get_command_obj("build_py")
    build_py.ensure_finalized()
    assert "hf_lineage.samples" in build_py.packages
    shipped = {REPO / src / name for package, src, _, names in build_py.data_files
               if package == "hf_lineage.samples" or package.startswith("hf_lineage.samples.") for name in names}
    assert shipped == _home_data()
