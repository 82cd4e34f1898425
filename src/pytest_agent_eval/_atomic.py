"""Atomic file writes, so a reader or a crash never leaves a half-written report, WAV or cache entry.

Every writer goes through `write_atomic`: the data goes to a temporary file in the target's folder,
named ``.<name>.<pid>.<random>.tmp`` so that `clean_stale_temp_files` can tell a dead writer's
leftovers from a live one's, is flushed to disk, given a normal file mode, then renamed over the
target. A failure removes the temporary file and leaves the previous file untouched.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "FILE_MODE",
    "WrittenFile",
    "clean_stale_temp_files",
    "temp_prefix",
    "write_atomic",
]

FILE_MODE = 0o644
"""Mode of written files: mkstemp's 0600 would hide them from CI users and containers."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WrittenFile:
    """What `write_atomic` wrote, so callers need not read the file back."""

    path: Path
    size_bytes: int
    sha256: str
    """Hex sha256 of the bytes written."""


def temp_prefix(path: Path) -> str:
    """Prefix of the temporary files written next to ``path``; it carries the writer's pid."""
    return f".{path.name}.{os.getpid()}."


def write_atomic(
    path: str | os.PathLike[str], data: bytes | str, *, mode: int = FILE_MODE
) -> WrittenFile:
    """Write ``data`` to ``path`` so that ``path`` is either the old file or the whole new one.

    Parent folders are created. Text is written as UTF-8 with the newlines it has.

    Args:
        path: The target file.
        data: The whole content.
        mode: Permission bits of the written file.

    Returns:
        The path, size and sha256 of what was written.
    """
    p = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(p), suffix=".tmp", dir=p.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return WrittenFile(path=p, size_bytes=len(raw), sha256=hashlib.sha256(raw).hexdigest())


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_temp_files(folder: str | os.PathLike[str]) -> list[Path]:
    """Delete temp files in ``folder`` left by a writer that died (SIGKILL, power loss).

    Temp files of live processes are kept, so two runs over one folder do not break each other.

    Returns:
        The files removed.
    """
    removed: list[Path] = []
    base = Path(folder)
    if not base.is_dir():
        return removed
    for tmp in base.glob(".*.tmp"):
        parts = tmp.name.split(".")
        # ".<name>.<pid>.<random>.tmp" -> the pid is the third field from the end (mkstemp's
        # random part has no dots).
        if len(parts) < 5 or not parts[-3].isdigit() or _pid_alive(int(parts[-3])):
            continue
        with contextlib.suppress(OSError):
            tmp.unlink()
            removed.append(tmp)
    return removed
