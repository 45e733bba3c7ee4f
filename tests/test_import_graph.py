"""The package's import graph: no circles, and lower layers never import higher ones.

The graph is read from the source with ``ast``, not by importing: an edge A -> B for every ``import``/``from ... import``
in A that names a module of ``hf_lineage`` (relative imports resolved; ``from pkg import name`` counts as importing
``pkg.name`` when that is a module, else ``pkg``). Imports inside functions count the same as module-level ones: a
deferred import hides a circle from Python at load time but not from a reader (the circle between the objectives and
the engine's optimiser builder was entirely inside functions). Imports under ``if TYPE_CHECKING:`` count too: they
never run, but a module that names another's type back for its annotations is a circle all the same (the one between
``vectors.word_vectors`` and its ``formats``/``conversion`` mixins was such). Not seen: ``importlib.import_module`` by
name (the "module:Name" strings of the registry's family entries).

Circles are looked for twice: between modules, and between the package's folders. The folder graph collapses every
module to its top-level part (``hf_lineage.engine.loop`` -> ``hf_lineage.engine``; a top-level module such as
``hf_lineage.cli`` is its own node, and so is the package root ``hf_lineage``): a folder imports another
when any of its modules, ``__init__`` or ``__main__`` included, imports any module of the other. Two circles lived
there while the module graph had none: ``engine/cli.py`` -> ``pretrain_dispatch`` -> ``engine``, and
``checkpoints/build.py`` -> ``lineage`` -> (``lineage/settings.py``) ``checkpoints``. Both were allowed because LAYERS
placed those two modules on floors above their own folder's. No module is its own node in the folder graph, whatever
LAYERS says (a ``__main__`` neither: it is run as part of its folder and imports for it), and LAYERS therefore names
only whole folders and top-level modules (checked): one folder, one floor, so that "a module never imports a higher
layer" also means "a folder never imports a higher folder".
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hf_lineage"

# Layers, lowest first, each folder or top-level module with why it sits there: a module may import its own layer and
# those below, never one above. A module's layer is that of its top-level folder or module listed here ("hf_lineage"
# stands for the package root alone); nothing deeper is listed (test_a_folder_sits_on_one_layer).
LAYERS = [
    {
        # Copied next to the weights when a model is saved, for trust_remote_code: torch, transformers and same-folder
        # siblings only.
        "hf_lineage.models": "saved with the weights; import nothing of the package outside their folder",
    },
    {
        "hf_lineage.registry": "plugs each family's config and modeling modules (read by name) into the Auto classes",
        "hf_lineage.checkpoints": "the shipped pretrained folders (data, no code) and their paths, one per registered "
        "family; made and shipped by hf_lineage.shipping, above the lineage",
        "hf_lineage.folders": "the folders the commands write whole or not at all: the one every trainer saves a "
        "pretrained model as, with its generation defaults (from the registry), its code and its Hub push; any "
        "output folder, staged (the standard library only)",
        "hf_lineage.machine": "what the machine computes: the mixed precision its device runs natively, for every "
        "command that trains, and the line naming the machine; torch only",
        "hf_lineage.pretrained_folder": "deprecated: 0.1.0's address of hf_lineage.folders.pretrained; it warns, and "
        "nothing imports it",
        "hf_lineage.contextual": "deprecated: 0.1.0's address of hf_lineage.vectors.contextual; it warns, and nothing "
        "imports it",
        "hf_lineage.samples": "the data home: every shipped data sample (data) and the folders' paths; imports "
        "nothing of the package, so every layer above the models may ask it where a sample is",
        "hf_lineage.tokenization": "tokenizer trainers on the tokenizers library",
        "hf_lineage.data": "collators, readers and the reproducible examples and samplers, on tokenizers",
        "hf_lineage.metrics": "local evaluate modules",
        "hf_lineage.convert": "checkpoint import and export: builds models and tokenizers",
        "hf_lineage.vectors": "WordVectors: static vectors read from a saved model or a word2vec file; "
        "ContextualVectors, read from any loaded model's hidden states",
        "hf_lineage.word_vector_trainers": "the CPU trainers of static word vectors (word2vec's Hogwild SGD and its "
        "numba kernels, svd's counts and SVD) on their own typed arguments, and the sampling tables the engine's "
        "word2vec objective shares; they know nothing of the engine",
    },
    {
        "hf_lineage.objectives": "what each family decides for pre-training, built on models, data and tokenizers, "
        "and the optimiser builder the engine uses too",
        "hf_lineage.optimization": "deprecated: 0.1.0's address of hf_lineage.objectives.optimization; it warns, and "
        "nothing imports it",
        "hf_lineage": "the package root registers the families and re-exports the public names, up to the CPU "
        "trainers; nothing below it may import it by name",
    },
    {
        "hf_lineage.engine": "the one Accelerate loop that runs any objective, on arguments settled above it (it "
        "imports nothing of hf_lineage.pretraining: no call back up into the command's modules)",
    },
    {
        "hf_lineage.pretraining": "hf-lineage pretrain's command line (python -m hf_lineage.pretraining, what "
        "accelerate launch -m runs), PretrainArguments settled and checked once, and pretrain(), which hands them "
        "down to the engine or to the family's CPU trainer as its own typed arguments; above both",
        "hf_lineage.pretrain": "deprecated: the old address of the pretrain names; it warns, and nothing imports it",
    },
    {
        "hf_lineage.tasks": "fine-tuning on the four task types (Trainer), from pretrained folders",
        "hf_lineage.analysis": "looks inside saved models (polysemy, attention heads, probes); trains none of them",
        "hf_lineage.compression": "makes trained models smaller (head pruning); beside the recipes that train them",
        "hf_lineage.minimal_pairs": "scores saved models zero-shot on minimal pairs (hf-lineage evaluate); trains "
        "nothing but its n-gram's counts, and the experiment above may report it",
        "hf_lineage.experiments": "what the experiment commands share (stages, baselines, bootstrap statistics); "
        "imports nothing of hf_lineage",
        "hf_lineage.evaluations": "hf-lineage evaluate's table of head-free evaluations; each entry names its "
        "command-line module (minimal_pairs.cli), imported by name when the command is built",
    },
    {
        "hf_lineage.lineage": "the experiment: drives pre-training and fine-tuning of every family",
    },
    {
        "hf_lineage.crosslingual": "the cross-lingual experiment, built from the lineage's settings, stages, "
        "fine-tuning cells, baselines and statistics",
        "hf_lineage.shipping": "the shipped checkpoints made and shipped in one place: their build (the lineage's "
        "pretraining stage run once per family, so above the lineage) and `hf-lineage checkpoints` (list, build, push, "
        "export); the folders themselves stay in the checkpoints package, floors below, for every layer to find",
        "hf_lineage.cli": "the command line over all of it",
    },
]

def module_files() -> dict[str, Path]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


class _Imports(ast.NodeVisitor):
    """(line, imported name, names taken from it) of every import, wherever it stands (functions and
    ``if TYPE_CHECKING:`` blocks included)."""

    def __init__(self):
        self.found = []

    def visit_Import(self, node):
        self.found += [(node.lineno, alias.name, (), 0) for alias in node.names]

    def visit_ImportFrom(self, node):
        self.found.append((node.lineno, node.module or "", tuple(a.name for a in node.names), node.level))


def _known(name: str, modules) -> str | None:
    """The longest prefix of a dotted name that is one of the package's modules."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: line of the first such import}."""
    modules = module_files()
    graph = {}
    for module, path in modules.items():
        # The package a relative import starts from: the module's own for an __init__, else its parent.
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        visitor = _Imports()
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        edges = graph.setdefault(module, {})
        for line, name, taken, level in visitor.found:
            if level:
                base = package.split(".")[: len(package.split(".")) - (level - 1)]
                name = ".".join(base + ([name] if name else []))
            targets = [f"{name}.{t}" if f"{name}.{t}" in modules else name for t in taken] or [name]
            for target in targets:
                target = _known(target, modules)
                if target and target != module:
                    edges.setdefault(target, line)
    return graph


def folder_of(module: str) -> str:
    """A module's top-level folder or module: ``hf_lineage.engine.loop`` -> ``hf_lineage.engine``; the root is its own."""
    return ".".join(module.split(".")[:2])


def folder_graph(graph: dict[str, dict[str, int]]) -> dict[str, dict[str, str]]:
    """folder -> {imported folder: "module:line" of the first import that makes the edge}; no self-edges."""
    folders = {}
    for module, edges in sorted(graph.items()):
        into = folders.setdefault(folder_of(module), {})
        for target, line in sorted(edges.items()):
            if folder_of(target) != folder_of(module):
                into.setdefault(folder_of(target), f"{module}:{line} imports {target}")
    return folders


def find_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One import circle as [a, b, ..., a], or None; depth-first, in sorted order so the answer is stable."""
    done, on_path, path = set(), set(), []

    def visit(node):
        on_path.add(node)
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt in on_path:
                return path[path.index(nxt):] + [nxt]
            if nxt not in done and (cycle := visit(nxt)):
                return cycle
        on_path.discard(path.pop())
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done and (cycle := visit(start)):
            return cycle
    return None


def layer_of(module: str) -> int | None:
    """The index in LAYERS of the longest prefix that names ``module`` (the root names only itself); None if none."""
    owners = [(len(p), i) for i, layer in enumerate(LAYERS) for p in layer
              if module == p or (p != "hf_lineage" and module.startswith(p + "."))]
    return max(owners)[1] if owners else None


def test_the_cycle_check_names_a_circle_and_passes_a_tree():
    assert find_cycle({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": 1, "c": 1}, "b": {"c": 1}, "c": {}}) is None


def test_imports_under_type_checking_are_edges_too():
    """A circle hidden under ``if TYPE_CHECKING:`` is still found: the visitor reads those imports."""
    visitor = _Imports()
    visitor.visit(ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .word_vectors import X\n"))
    assert (3, "word_vectors", ("X",), 1) in visitor.found


def test_no_import_circles():
    graph = import_graph()
    cycle = find_cycle(graph)
    if cycle:
        steps = [f"{a} (line {graph[a][b]}) -> {b}" for a, b in zip(cycle, cycle[1:])]
        pytest.fail("import circle:\n  " + "\n  ".join(steps))


def test_no_import_circles_between_folders():
    """A circle between folders is one too, whatever the modules' layers: ``engine/cli.py`` imported
    ``pretrain_dispatch``, which imports ``engine``."""
    folders = folder_graph(import_graph())
    cycle = find_cycle(folders)
    if cycle:
        pytest.fail("import circle between folders:\n  " + "\n  ".join(
            f"{a} -> {b} ({folders[a][b]})" for a, b in zip(cycle, cycle[1:])))


def test_the_folder_check_finds_the_two_old_circles():
    """The two circles the module check missed (issue 51), on the edges they had, are found between folders."""
    old = {"hf_lineage.engine.cli": {"hf_lineage.pretrain_dispatch": 13, "hf_lineage.engine": 12},
           "hf_lineage.pretrain_dispatch": {"hf_lineage.engine": 24},
           "hf_lineage.engine": {"hf_lineage.objectives": 40}, "hf_lineage.objectives": {}}
    assert find_cycle(old) is None  # no circle between modules
    assert find_cycle(folder_graph(old)) == ["hf_lineage.engine", "hf_lineage.pretrain_dispatch", "hf_lineage.engine"]
    old = {"hf_lineage.checkpoints.build": {"hf_lineage.lineage.pretraining": 24, "hf_lineage.lineage.settings": 25},
           "hf_lineage.lineage.settings": {"hf_lineage.checkpoints": 555},
           "hf_lineage.lineage.pretraining": {"hf_lineage.lineage.settings": 20}, "hf_lineage.checkpoints": {}}
    assert find_cycle(old) is None
    assert find_cycle(folder_graph(old)) == ["hf_lineage.checkpoints", "hf_lineage.lineage", "hf_lineage.checkpoints"]


def test_a_folder_sits_on_one_layer():
    """LAYERS names whole folders and top-level modules only: a module placed above its own folder is how both old
    circles passed the layer check."""
    deeper = [name for layer in LAYERS for name in layer if folder_of(name) != name]
    assert not deeper, f"LAYERS places modules apart from their folder: {deeper}"


def test_the_engine_never_calls_back_up_into_pretraining():
    """Arguments travel one way: ``hf_lineage.pretraining`` settles them and hands them to the engine, which imports
    nothing of it (what both need, ``PretrainError``, is the engine's own ``engine.errors``)."""
    up = [f"{a}:{line} imports {b}" for a, edges in sorted(import_graph().items())
          if folder_of(a) == "hf_lineage.engine"
          for b, line in sorted(edges.items()) if folder_of(b) == "hf_lineage.pretraining"]
    assert up == []


def test_every_module_has_a_layer():
    unplaced = [module for module in import_graph() if layer_of(module) is None]
    assert not unplaced, f"add these to a layer in LAYERS (with the reason): {unplaced}"


def test_lower_layers_never_import_higher_ones():
    graph = import_graph()
    upward = [f"{a}:{line} imports {b} (layer {layer_of(a)} -> {layer_of(b)})"
              for a, edges in sorted(graph.items()) for b, line in sorted(edges.items())
              if layer_of(b) > layer_of(a)]
    assert not upward, "imports from a higher layer:\n  " + "\n  ".join(upward)


def test_importing_the_package_leaves_the_trainers_heavy_libraries_for_first_use():
    """``import hf_lineage`` registers the families (torch, transformers) and adds nothing more: scikit-learn and
    numba load only when a trainer or WordVectors is first used, through the package's lazy names."""
    import subprocess
    import sys

    # Some transformers releases import scikit-learn themselves (5.16's generation.candidate_generator): what
    # counts is that hf_lineage adds nothing to what transformers' model and generation classes import.
    code = ("import sys\n"
            "from transformers import GenerationMixin, PreTrainedModel\n"
            "by_transformers = 'sklearn' in sys.modules\n"
            "import hf_lineage\n"
            "before = {'sklearn': 'sklearn' in sys.modules and not by_transformers,\n"
            "          **{m: m in sys.modules for m in ('numba', 'hf_lineage.vectors')}}\n"
            "assert hf_lineage.WordVectors.__name__ == 'WordVectors' and callable(hf_lineage.train_svd)\n"
            "assert callable(hf_lineage.train_word2vec) and hf_lineage.ContextualVectors\n"
            "assert set(hf_lineage.__all__) <= set(dir(hf_lineage))\n"
            "print(before, 'hf_lineage.vectors' in sys.modules)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["{'sklearn':", "False,", "'numba':", "False,", "'hf_lineage.vectors':", "False}",
                                  "True"]
    with pytest.raises(AttributeError, match="no attribute 'train_elmo'"):
        import hf_lineage

        hf_lineage.train_elmo  # noqa: B018


# Modules named after a family may repeat across folders whose names say their role (objectives/bert.py, convert/bert.py,
# word_vector_trainers/svd.py), and so may a package's command line (cli.py: build_parser, run_namespace, description,
# main, in the folder whose command it is, e.g. lineage/cli.py; __main__.py for python -m); any other file name is one module's.
FAMILY_NAMED = {"bert.py", "gpt.py", "nnlm.py", "elmo.py", "word2vec.py", "svd.py", "glove.py"}
COMMAND_LINE = {"cli.py", "__main__.py"}


def test_no_two_modules_share_a_file_name_unless_it_names_a_family_or_a_command_line():
    seen = {}
    for module, path in module_files().items():
        if path.name == "__init__.py" or path.name in FAMILY_NAMED | COMMAND_LINE:
            continue
        if module.startswith("hf_lineage.metrics."):
            continue  # one evaluate module per folder, as evaluate wants
        if module in DEPRECATED:
            continue  # 0.1.0's address of a moved module (below), which it is
        seen.setdefault(path.name, []).append(module)
    assert not {name: modules for name, modules in seen.items() if len(modules) > 1}


# ------------------------------------------------------------------ 0.1.0's module addresses, deprecated

# Each old address of a module that moved after 0.1.0 -> the module it now is. Each shim warns (a FutureWarning,
# shown by default) and is that module (sys.modules), so that patching either patches both; hf_lineage.pretrain
# re-exports names from several modules and also runs the command (python -m hf_lineage.pretrain).
DEPRECATED = {"hf_lineage.pretrained_folder": "hf_lineage.folders.pretrained",
              "hf_lineage.optimization": "hf_lineage.objectives.optimization",
              "hf_lineage.contextual": "hf_lineage.vectors.contextual"}
OLD_ADDRESS = re.compile(r"hf_lineage\.pretrain\b(?!_)|from \.+pretrain import|"
                         r"hf_lineage\.(pretrained_folder|optimization|contextual)\b|"
                         r"from \.+(pretrained_folder|optimization|contextual) import")


def test_nothing_imports_the_deprecated_addresses():
    """The old addresses are kept for users' scripts only: the package imports them nowhere, and the tests (but the
    shims' own, below), benchmarks and recipes use the new places (``hf_lineage.pretraining``, ``python -m
    hf_lineage.pretraining``, ``DEPRECATED``'s)."""
    old = {"hf_lineage.pretrain", *DEPRECATED}
    assert [module for module, edges in import_graph().items() if old & set(edges)] == []
    root = PACKAGE.parent
    users = [f"{path.relative_to(root)}:{number}" for folder in ("tests", "benchmarks", "recipes", "scripts")
             for path in sorted((root / folder).rglob("*")) if path.suffix in (".py", ".sh", ".yaml", ".md")
             and path.name != Path(__file__).name
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if OLD_ADDRESS.search(line)]
    assert users == []


@pytest.mark.parametrize("old", sorted(DEPRECATED))
def test_a_moved_module_still_imports_at_its_0_1_0_address_and_warns(old):
    code = ("import importlib, json, warnings\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            f"    module = importlib.import_module({old!r})\n"
            f"print(json.dumps([module is importlib.import_module({DEPRECATED[old]!r}), "
            "[(w.category.__name__, str(w.message)) for w in caught]]))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    same, warned = json.loads(run.stdout)
    assert same and ["FutureWarning", f"{old} is deprecated: import from {DEPRECATED[old]}"] in warned


def test_the_old_pretrain_address_still_runs_and_warns_where_users_see_it():
    """``python -m hf_lineage.pretrain`` is still ``hf-lineage pretrain`` (here its help), with a FutureWarning (shown
    by default, unlike a DeprecationWarning raised outside __main__) naming the new module."""
    run = subprocess.run([sys.executable, "-m", "hf_lineage.pretrain", "--help"], capture_output=True, text=True,
                         timeout=300, cwd=PACKAGE.parent)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "usage: hf-lineage pretrain" in run.stdout and "--backend" in run.stdout
    assert "FutureWarning: hf_lineage.pretrain is deprecated" in run.stderr
    assert "python -m hf_lineage.pretraining" in run.stderr
    code = ("import warnings\nwarnings.simplefilter('error')\n"
            "try:\n    import hf_lineage.pretrain\nexcept FutureWarning as w:\n    print('warned', w)\n"
            "import hf_lineage.pretraining as p\n"
            "print(p.pretrain.__module__, p.PretrainArguments.__module__)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "warned hf_lineage.pretrain is deprecated" in run.stdout
    assert "hf_lineage.pretraining.dispatch hf_lineage.pretraining.arguments" in run.stdout


def test_python_m_pretraining_is_the_command():
    """``python -m hf_lineage.pretraining`` (what ``accelerate launch -m`` runs) is ``hf-lineage pretrain``."""
    run = subprocess.run([sys.executable, "-m", "hf_lineage.pretraining", "--help"], capture_output=True, text=True,
                         timeout=300, cwd=PACKAGE.parent)
    assert run.returncode == 0 and "usage: hf-lineage pretrain" in run.stdout, run.stderr[-2000:]
    assert run.stderr == ""
