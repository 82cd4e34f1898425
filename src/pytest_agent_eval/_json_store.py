"""Small JSON entries on disk, one file per SHA-256 key: what the judge's verdict cache and the
simulated caller's cache share.

An entry is ``<directory>/<key[:2]>/<key>.json`` holding a mapping with a ``format`` number;
an entry of another format, unreadable or not a mapping, is a miss. Writes are atomic (a
temporary file renamed over the target), so xdist workers share a folder safely, and a folder
that cannot be written is skipped: a cache is an optimisation, and a read-only disk must not
fail a run.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ._atomic import write_atomic

__all__ = ["JsonStore", "recorded_now", "sha256_key"]


def recorded_now() -> str:
    """When an entry is recorded, as the reports show it (UTC, to the second): what a reader of
    a replayed verdict needs to judge how old it is."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def sha256_key(parts: dict[str, Any]) -> str:
    """A SHA-256 over ``parts`` as sorted JSON (values JSON cannot hold as their ``str``)."""
    payload = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class JsonStore:
    """Entries of one ``format`` stored as ``<directory>/<key[:2]>/<key>.json``.

    Args:
        directory: The folder; created on first write.
        format: The layout version written into each entry and required of each read.
    """

    def __init__(self, directory: Path, *, format: int) -> None:
        self.directory = Path(directory)
        self.format = format

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry stored for ``key``, or None (missing, unreadable, of another format)."""
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != self.format:
            return None
        return data

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Store ``entry`` (with this store's ``format``) atomically, or skip it when the
        folder cannot be written."""
        body = json.dumps({"format": self.format, **entry}, ensure_ascii=False, indent=2)
        try:
            write_atomic(self._path(key), body)
        except OSError:
            return
