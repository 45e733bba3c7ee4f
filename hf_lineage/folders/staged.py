"""An output folder written whole or not at all: every file goes into a staging folder beside it, which replaces it
at the end, so a failure (or an interrupt) never leaves a half-written output."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path


@contextlib.contextmanager
def staged_folder(output_dir):
    """``with staged_folder(out) as staging:`` write into ``staging``; on success it becomes ``out`` (an existing
    ``out`` is replaced whole: the caller decides whether that is allowed), on an error it is removed."""
    out = Path(output_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.writing-", dir=out.parent))
    try:
        yield staging
        if out.exists():
            # Out of the way first, then in: at no moment is ``out`` half old, half new.
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.rename(out, old / "replaced")
            os.rename(staging, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
