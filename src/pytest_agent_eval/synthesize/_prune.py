"""``--prune``: remove fixtures that no transcript refers to any more."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..voice._fixtures import SIDECAR_SUFFIX, clean_stale_temp_files, read_embedded, sidecar_path

__all__ = ["find_orphans", "prune_orphans"]


def find_orphans(folders: Iterable[Path], referenced: Iterable[Path]) -> list[Path]:
    """WAVs under ``folders`` that this tool (or its predecessor) made and no transcript
    ``referenced``: those with a sidecar, and those whose sidecar was lost but that carry our
    provenance inside; plus sidecars whose WAV is gone. A WAV with neither is someone's
    recording and is never touched."""
    keep = {_canonical(Path(p)) for p in referenced}
    orphans: set[Path] = set()
    for folder in folders:
        for side in Path(folder).rglob(f"*.wav{SIDECAR_SUFFIX}"):
            wav = side.with_name(side.name[: -len(SIDECAR_SUFFIX)]).absolute()
            if _canonical(wav) in keep:
                continue
            orphans.add(side.absolute())
            if wav.exists():
                orphans.add(wav)
        for wav in Path(folder).rglob("*.wav"):
            if wav.name.startswith(".") or sidecar_path(wav).exists():
                continue
            if _canonical(wav) not in keep and read_embedded(wav) is not None:
                orphans.add(wav.absolute())
    return sorted(orphans)


def _canonical(path: Path) -> Path:
    """The same file however it was spelt (``..``, symlinked folders), without following a
    symlinked WAV itself: the link is what the transcript names."""
    path = path.expanduser().absolute()
    return path.parent.resolve() / path.name


def prune_orphans(folders: Iterable[Path], referenced: Iterable[Path]) -> list[Path]:
    """Delete `find_orphans` (the WAV first, then its sidecar) and stale temp files.

    Returns:
        Every file removed.
    """
    folders = list(folders)
    removed: list[Path] = []
    orphans = find_orphans(folders, referenced)
    wavs = [p for p in orphans if p.suffix == ".wav"]
    for wav in wavs:
        wav.unlink(missing_ok=True)
        removed.append(wav)
        side = sidecar_path(wav)
        side.unlink(missing_ok=True)
        removed.append(side)
    for side in orphans:
        if side not in removed:
            side.unlink(missing_ok=True)
            removed.append(side)
    for folder in {tmp.parent for f in folders for tmp in Path(f).rglob(".*.tmp")}:
        removed += clean_stale_temp_files(folder)
    return removed
