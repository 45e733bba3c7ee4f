"""A frozen network's layers for each sentence, computed once and read back every later time it is asked for.

A task head on a frozen base (the lineage's frozen cells, ``--freeze_base --cache_frozen_features`` in the recipes)
pushes the same training and evaluation sentences through the same fixed network at every epoch, every seed and
every rerun. The network is in eval mode under ``no_grad`` there, so a sentence's layers never change; ``LayersMemo``
keeps them, per sentence, the first time a batch holds it, and builds later batches from what it kept. Only the
forward pass of the frozen part is saved: the head (scalar mix, task encoder, classifier) trains as before.

Kept in memory (``max_bytes`` at most; past it a sentence is computed every time, as without the memo) and, with
``folder``, on disk as well: ``folder/<network fingerprint>/<sentence key>.npy``, float32, where the fingerprint is a
hash of the frozen network's class and weights. So another seed, a rerun or another run on the same checkpoint reads
the layers back instead of computing them, and a changed checkpoint (another fingerprint) never reads stale ones.
Files are written whole (a temporary name, then renamed), so processes sharing the folder never read half a file.
Beside them ``forward_seconds.json`` records what computing them cost (sentences, seconds), so that a later run that
only reads them can still say what they spared it (``summary``'s ``saved_seconds``).

A sentence is keyed by what the network reads of it (its ids, and its token types or character ids where given) up
to its length, so the same sentence padded to another length in another batch is found. Rows padded on the left
(a mask that is not a prefix) are computed as before, never kept. The layers kept are the ones the first batch
computed: in exact arithmetic every batch gives the same; in float32 a sentence's values can differ in the last bits
with the batch's padding (``tests/test_feature_memo.py`` bounds the difference, and ``tests/test_recipes.py`` checks
that a frozen head's scores stay the same).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np
import torch


def network_fingerprint(network: torch.nn.Module) -> str:
    """A hash of ``network``'s class, parameter and buffer names, shapes, dtypes and values."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(type(network).__qualname__.encode())
    for name, tensor in network.state_dict().items():
        tensor = tensor.detach().cpu().contiguous()
        digest.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype}".encode())
        digest.update(tensor.view(torch.uint8).numpy().tobytes() if tensor.numel() else b"")
    return digest.hexdigest()


class LayersMemo:
    """Per-sentence layers of a frozen network: ``layers(compute, mask, keys, network)``."""

    def __init__(self, max_bytes: int = 2 << 30, folder=None):
        self.max_bytes = int(max_bytes)
        self.folder = Path(folder) if folder is not None else None
        self.fingerprint = None  # of the network, taken at the first call (with a folder)
        self.rows: dict[bytes, torch.Tensor] = {}  # sentence key -> (L + 1, length, C)
        self.bytes = 0
        self.computed = 0  # sentences the network ran on
        self.loaded = 0  # sentences read from the folder
        self.reused = 0  # sentences read back from memory
        self.compute_seconds = 0.0  # in the network, for the computed sentences
        self.load_seconds = 0.0  # reading the folder's files
        self.bytes_written = 0  # into the folder

    def layers(self, compute, mask: torch.Tensor, keys: list[torch.Tensor], network=None) -> tuple[torch.Tensor, ...]:
        """The L + 1 layers, each (B, T, C), zeros past each sentence's end, for a batch whose (B, T) bool ``mask``
        marks its tokens; ``keys``: the (B, T, ...) inputs that make a sentence what it is; ``network``: the frozen
        module whose weights make its layers what they are (its fingerprint names the folder's subfolder).
        ``compute(rows)`` runs the network on the batch's rows ``rows`` (a LongTensor) and returns their L + 1
        layers, each (len(rows), T, C)."""
        lengths = mask.sum(dim=1)
        positions = torch.arange(mask.shape[1], device=mask.device)
        if not torch.equal(mask, positions[None, :] < lengths[:, None]):  # left padding: not kept
            return tuple(compute(torch.arange(mask.shape[0], device=mask.device)))
        lengths = lengths.tolist()
        keys = [key.cpu().numpy() for key in keys]  # one copy off the device per batch, not one a row
        names = [b"".join(key[row, :n].tobytes() for key in keys) + n.to_bytes(4, "little")
                 for row, n in enumerate(lengths)]
        found = {}  # sentence key -> (L + 1, length, C) read from the folder or computed here (None: neither yet)
        for row, name in enumerate(names):
            if name not in self.rows and name not in found:
                found[name] = self._load(name, network)
        missing = [row for row, name in enumerate(names) if name not in self.rows and found.get(name) is None]
        if missing:
            started = time.perf_counter()
            computed = compute(torch.tensor(missing, device=mask.device))
            self.compute_seconds += time.perf_counter() - started
            stacked = torch.stack([layer.detach() for layer in computed])  # (L + 1, len(missing), T, C)
            for position, row in enumerate(missing):
                if found.get(names[row]) is None:  # a sentence twice in one batch: saved once
                    found[names[row]] = stacked[:, position, :lengths[row]].clone()
                    self._save(names[row], found[names[row]], network)
            self.computed += len(missing)
            self._record_price(network)
        self.reused += sum(name in self.rows for name in names)
        out = None
        for row, name in enumerate(names):
            kept = self.rows.get(name)
            if kept is None:
                kept = found[name].to(mask.device)
                self._keep(name, kept)
            if out is None:
                out = kept.new_zeros((kept.shape[0], mask.shape[0], mask.shape[1], kept.shape[-1]))
            out[:, row, :lengths[row]] = kept
        return tuple(out.unbind(0))

    def summary(self) -> dict:
        """What it kept and did; ``saved_seconds``: the network time it spared, each sentence read back (from memory
        or the folder) priced at this memo's own mean seconds per computed sentence, less the time spent reading
        the folder (when it computed nothing: at the price the folder records; None without one)."""
        per_sentence = self.compute_seconds / self.computed if self.computed else self._recorded_price()
        saved = None if per_sentence is None else (self.reused + self.loaded) * per_sentence - self.load_seconds
        return {"sentences_kept": len(self.rows), "bytes": self.bytes, "computed": self.computed,
                "loaded": self.loaded, "reused": self.reused, "compute_seconds": round(self.compute_seconds, 6),
                "load_seconds": round(self.load_seconds, 6), "bytes_written": self.bytes_written,
                "saved_seconds": None if saved is None else round(saved, 6)}

    def _keep(self, name: bytes, layers: torch.Tensor) -> None:
        size = layers.numel() * layers.element_size()
        if name not in self.rows and self.bytes + size <= self.max_bytes:
            self.rows[name] = layers
            self.bytes += size

    def _subfolder(self, network=None) -> Path | None:
        """``folder/<fingerprint of network>``, the fingerprint taken at the first call given the network."""
        if self.folder is None:
            return None
        if self.fingerprint is None and network is not None:
            self.fingerprint = network_fingerprint(network)
        return None if self.fingerprint is None else self.folder / self.fingerprint

    def _path(self, name: bytes, network) -> Path | None:
        subfolder = self._subfolder(network)
        return None if subfolder is None else subfolder / f"{hashlib.blake2b(name, digest_size=20).hexdigest()}.npy"

    def _price_path(self, network=None) -> Path | None:
        subfolder = self._subfolder(network)
        return None if subfolder is None else subfolder / "forward_seconds.json"

    def _record_price(self, network) -> None:
        """This memo's own forward time per sentence, for runs that will read the folder instead of computing."""
        path = self._price_path(network)
        if path is None:
            return
        temporary = path.with_name(f"forward_seconds.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(json.dumps({"sentences": self.computed, "seconds": self.compute_seconds}))
            os.replace(temporary, path)
        except OSError:
            pass  # only the saved-time estimate of a later run is lost

    def _recorded_price(self) -> float | None:
        path = self._price_path()
        try:
            record = json.loads(path.read_text()) if path is not None else None
        except (OSError, ValueError):
            return None
        return record["seconds"] / record["sentences"] if record and record.get("sentences") else None

    def _load(self, name: bytes, network) -> torch.Tensor | None:
        path = self._path(name, network)
        if path is None or not path.is_file():
            return None
        started = time.perf_counter()
        try:
            layers = torch.from_numpy(np.load(path))
        except (OSError, ValueError):  # unreadable: computed again (and written anew)
            return None
        finally:
            self.load_seconds += time.perf_counter() - started
        self.loaded += 1
        return layers

    def _save(self, name: bytes, layers: torch.Tensor, network) -> None:
        path = self._path(name, network)
        if path is None:
            return
        temporary = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npy")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(temporary, layers.cpu().float().numpy())
            os.replace(temporary, path)
            self.bytes_written += path.stat().st_size
        except OSError:  # a full or read-only disk, or not a folder: kept in memory only, as without a folder
            if temporary.is_file():
                temporary.unlink()
            self.folder = None
