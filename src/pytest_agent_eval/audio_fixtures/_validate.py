"""Check that a WAV fixture can feed a voice test: present, audio, not empty, not silent."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import AudioFixtureError
from ._clip import AudioClip, read_wav
from ._stats import SILENCE_FLOOR_DBFS, voiced_frames

__all__ = ["SYNTHESIZE_COMMAND", "synthesize_command", "validate_fixture"]

SYNTHESIZE_COMMAND = "python -m pytest_agent_eval.synthesize_audio"


def synthesize_command(
    yaml_path: str | os.PathLike[str] | None = None, *, force: bool = False
) -> str:
    """The command that (re)creates fixtures, for ``yaml_path`` when known."""
    parts = [SYNTHESIZE_COMMAND]
    if force:
        parts.append("--force")
    if yaml_path is not None:
        parts.append(str(yaml_path))
    return " ".join(parts)


def validate_fixture(
    path: str | os.PathLike[str],
    *,
    yaml_path: str | os.PathLike[str] | None = None,
    floor_dbfs: float = SILENCE_FLOOR_DBFS,
) -> AudioClip:
    """Read ``path`` and make sure it holds audible audio.

    Args:
        path: The WAV fixture.
        yaml_path: The transcript that refers to it, so the message can give the exact command.
        floor_dbfs: A fixture none of whose 20 ms frames is louder than this is silent.

    Returns:
        The fixture as a mono clip.

    Raises:
        AudioFixtureError: With a message naming the file, the problem and the fix, when the
            file is missing, is not readable audio, has no samples, or is silent.
    """
    p = Path(path)
    where = f"audio fixture {p}"
    if not p.exists():
        raise AudioFixtureError(
            f"{where} does not exist. Create it with: {synthesize_command(yaml_path)}"
        )
    if not p.is_file():
        raise AudioFixtureError(f"{where} is not a file. Point 'audio:' at a WAV file.")
    try:
        clip = read_wav(p)
    except AudioFixtureError as exc:
        cause = exc.__cause__ or exc
        raise AudioFixtureError(
            f"{where} is not readable audio ({cause}); it may be truncated or not a WAV. "
            f"Re-create it with: {synthesize_command(yaml_path, force=True)}"
        ) from exc
    if len(clip.samples) == 0:
        raise AudioFixtureError(
            f"{where} is empty (a valid WAV header but no samples). "
            f"Re-create it with: {synthesize_command(yaml_path, force=True)}"
        )
    voiced, _ = voiced_frames(clip, floor_dbfs=floor_dbfs)
    if voiced.size == 0:
        raise AudioFixtureError(
            f"{where} is silent: no 20 ms frame is louder than {floor_dbfs:g} dBFS "
            f"({clip.duration_s:.2f} s of silence). "
            f"Re-create it with: {synthesize_command(yaml_path, force=True)}"
        )
    return clip
