"""Where a published release's files come from: a local path, a URL (downloaded once, with a progress bar, into a
cache), a member of a zip archive (``ARCHIVE.zip#MEMBER``), or a Hugging Face Hub repository (``OWNER/NAME``, or
``OWNER/NAME/FILE`` for one file of it). Every problem is a ``ConversionError`` with a one-line message naming
the thing.

The download cache is ``$HF_LINEAGE_CACHE`` (default ``~/.cache/hf_lineage``)``/downloads/<hash of the URL>/<file
name>``: a URL is fetched once, then read from there, also offline (``HF_HUB_OFFLINE=1``). ``cached_url_path(url)``
is where a URL's file lives, so a file placed there is what the URL gives (the tests' stand-ins).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import zipfile
from pathlib import Path
from urllib.parse import unquote, urlparse


class ConversionError(ValueError):
    """A release that cannot be converted: a missing or unreachable source, a file of another format, an unknown
    family. The message is one line and names the thing."""


def one_line(error) -> str:
    text = " ".join(str(error).split())
    return (text[:300] + "...") if len(text) > 300 else text or type(error).__name__


def cache_root() -> Path:
    return Path(os.environ.get("HF_LINEAGE_CACHE") or Path.home() / ".cache" / "hf_lineage").expanduser()


def is_url(source: str) -> bool:
    return str(source).startswith(("http://", "https://"))


# OWNER/NAME with Hub's characters; a third part onwards is a file inside the repository.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+(/.+)?$")


def looks_like_hub_id(source: str) -> bool:
    """``OWNER/NAME`` or ``OWNER/NAME/PATH`` that is not a local path (no leading ``/ . ~``) nor a URL."""
    source = str(source)
    return not is_url(source) and not source.startswith(("/", ".", "~")) and bool(_HUB_ID.match(source))


def looks_like_model_id(name: str) -> bool:
    """``OWNER/NAME`` or a bare ``NAME`` (``gpt2``) as the Hub spells model ids; the caller has ruled out a local
    folder of that name."""
    return bool(re.fullmatch(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?", str(name))) and ".." not in str(name)


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


def cached_url_path(url: str) -> Path:
    """Where the file of ``url`` is kept once downloaded."""
    name = Path(unquote(urlparse(url).path)).name or "download"
    return cache_root() / "downloads" / hashlib.sha256(url.encode()).hexdigest()[:16] / name


def download(url: str) -> Path:
    """The local copy of ``url``: from the cache, or downloaded there first (progress bar on stderr; written to a
    ``.partial`` file and renamed when whole, so an interrupted download is never taken for the file)."""
    target = cached_url_path(url)
    if target.is_file():
        return target
    if offline():
        raise ConversionError(f"{url}: not in the download cache ({target.parent}) and HF_HUB_OFFLINE is set")
    import urllib.request

    from tqdm.auto import tqdm

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            total = int(response.headers.get("Content-Length") or 0) or None
            with open(partial, "wb") as out, tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024,
                                                  desc=f"downloading {target.name}") as bar:
                while chunk := response.read(1 << 20):
                    out.write(chunk)
                    bar.update(len(chunk))
        if total is not None and partial.stat().st_size != total:
            raise ConversionError(f"{url}: the download stopped at {partial.stat().st_size:,} of {total:,} bytes")
        os.replace(partial, target)
    except ConversionError:
        partial.unlink(missing_ok=True)
        raise
    except Exception as error:  # unreachable host, 404, timeout: the same to the user
        partial.unlink(missing_ok=True)
        raise ConversionError(f"{url}: could not be downloaded ({type(error).__name__}: {one_line(error)})") from None
    return target


def hub_file(repo_id: str, filename: str) -> Path:
    """One file of a Hub model repository, through huggingface_hub's cache (offline: from the cache alone)."""
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(repo_id, filename))
    except Exception as error:
        raise ConversionError(f"{repo_id}/{filename}: not found on the Hugging Face Hub or in its cache "
                              f"({type(error).__name__}: {one_line(error)})") from None


def hub_snapshot(repo_id: str, allow_patterns=None) -> Path:
    """A Hub model repository's files (those matching ``allow_patterns``), through huggingface_hub's cache."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, allow_patterns=allow_patterns))
    except Exception as error:
        raise ConversionError(f"{repo_id}: not a local path, and not found on the Hugging Face Hub or in its cache "
                              f"({type(error).__name__}: {one_line(error)})") from None


def local_file(source: str) -> Path:
    """A source that names one file: a local path, a URL, ``ARCHIVE.zip#MEMBER`` (the archive itself a path or a
    URL; the member is extracted once next to it) or ``OWNER/NAME/FILE`` on the Hub."""
    source = str(source)
    if "#" in source:
        archive, member = source.rsplit("#", 1)
        return _zip_member(local_file(archive), member, source)
    path = Path(source).expanduser()
    if path.is_file():
        return path
    if path.exists():
        raise ConversionError(f"{source}: a folder, where a file was expected")
    if is_url(source):
        return download(source)
    if looks_like_hub_id(source) and source.count("/") >= 2:
        owner, name, filename = source.split("/", 2)
        return hub_file(f"{owner}/{name}", filename)
    raise ConversionError(f"{source}: no such file (nor a URL or a Hub OWNER/NAME/FILE)")


def _zip_member(archive: Path, member: str, source: str) -> Path:
    target = archive.with_name(archive.name + ".members") / member
    if target.is_file():
        return target
    try:
        with zipfile.ZipFile(archive) as zipped:
            if member not in zipped.namelist():
                raise ConversionError(f"{source}: the archive has no {member!r} (it holds "
                                      f"{', '.join(zipped.namelist()[:8])})")
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".partial")
            with zipped.open(member) as inside, open(partial, "wb") as out:
                shutil.copyfileobj(inside, out, 1 << 20)
            os.replace(partial, target)
    except zipfile.BadZipFile:
        raise ConversionError(f"{source}: {archive.name} is not a zip archive") from None
    return target


__all__ = ["ConversionError", "cache_root", "cached_url_path", "download", "hub_file", "hub_snapshot", "is_url",
           "local_file", "looks_like_hub_id", "looks_like_model_id", "offline", "one_line"]
