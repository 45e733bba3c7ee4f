"""A stand-in for AllenNLP's published ELMo releases, so ``hf-lineage convert elmo small`` (and ``hf-lineage
lineage --checkpoints published``) run offline in tests: AllenNLP's own test biLM (``tests/fixtures/allennlp_elmo/``,
Apache-2.0: a small character-CNN biLM in the released format, 2 layers of 64 cells projected to 16) placed in the
download cache where the named release's two URLs would have been downloaded to. The conversion then reads it as
if it were the release (``hf_lineage.convert.sources.cached_url_path``)."""

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

from conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "allennlp_elmo"


@contextmanager
def _cache_at(cache_root):
    """``HF_LINEAGE_CACHE`` set to ``cache_root`` while the cache paths are computed, restored after."""
    before = os.environ.get("HF_LINEAGE_CACHE")
    os.environ["HF_LINEAGE_CACHE"] = str(cache_root)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("HF_LINEAGE_CACHE", None)
        else:
            os.environ["HF_LINEAGE_CACHE"] = before


def save_elmo_standin(cache_root, name="small") -> tuple[Path, Path]:
    """Writes AllenNLP's test ``options.json`` and ``lm_weights.hdf5`` at the download-cache paths of the named
    release's options and weights URLs (``ELMO_RELEASES[name]``) under ``cache_root``; returns those two paths.

    Convert with ``HF_LINEAGE_CACHE=cache_root`` and ``HF_HUB_OFFLINE=1`` (so nothing is downloaded)::

        save_elmo_standin(tmp_path / "cache")
        monkeypatch.setenv("HF_LINEAGE_CACHE", str(tmp_path / "cache"))
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        convert("elmo", ["small"], tmp_path / "out")
    """
    from hf_lineage.registry.families import ELMO_RELEASES
    from hf_lineage.convert.sources import cached_url_path

    options_url, weights_url = ELMO_RELEASES[name]
    with _cache_at(cache_root):
        targets = cached_url_path(options_url), cached_url_path(weights_url)
    for source, target in zip((FIXTURES / "options.json", FIXTURES / "lm_weights.hdf5"), targets):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return targets
