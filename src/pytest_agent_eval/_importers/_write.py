"""Writing an import: every file whole or not at all, and nothing the user may have edited
replaced unless they say so."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from .._atomic import write_atomic
from ..voice._fixtures import sidecar_path
from ._build import Imported
from ._call import CallImportError

__all__ = ["ImportedFile", "write_import"]


@dataclass(frozen=True, slots=True)
class ImportedFile:
    path: Path
    state: str
    """``written``, ``replaced`` or ``unchanged`` (already byte-identical)."""


def write_import(imported: Imported, *, force: bool = False) -> list[ImportedFile]:
    """Write the fixtures, then the transcript, each atomically.

    A file that exists with other content (an earlier import, since reviewed and edited), or a
    synthesizer's sidecar beside a fixture about to become a recording, is a conflict: nothing
    is written unless ``force``.

    Raises:
        CallImportError: Conflicts without ``force``.
    """
    targets = [(f.path, f.data) for f in imported.fixtures]
    targets.append((imported.transcript_path, imported.yaml_text.encode("utf-8")))
    conflicts: list[str] = []
    stale_sidecars: list[Path] = []
    for path, data in targets:
        if path.is_dir():
            raise CallImportError(f"{path} is a folder; choose another --out")
        if path.exists() and path.read_bytes() != data:
            conflicts.append(f"{path} exists with other content")
    for fixture in imported.fixtures:
        sidecar = sidecar_path(fixture.path)
        if sidecar.exists():
            stale_sidecars.append(sidecar)
            conflicts.append(
                f"{sidecar} says {fixture.path.name} was synthesized (it would be made again "
                "over the recording)"
            )
    if conflicts and not force:
        raise CallImportError(
            "nothing written: "
            + "; ".join(conflicts)
            + ". An earlier import you reviewed would be lost: pass --force to replace it, or "
            "--out to write elsewhere"
        )
    written = [_write(f.path, f.data) for f in imported.fixtures]
    for sidecar in stale_sidecars:
        # The fixture is a recording now; a sidecar left beside it would make it "stale".
        with contextlib.suppress(FileNotFoundError):
            sidecar.unlink()
    written.append(_write(imported.transcript_path, imported.yaml_text.encode("utf-8")))
    return written


def _write(path: Path, data: bytes) -> ImportedFile:
    if path.exists() and path.read_bytes() == data:
        return ImportedFile(path, "unchanged")
    state = "replaced" if path.exists() else "written"
    write_atomic(path, data)
    return ImportedFile(path, state)
