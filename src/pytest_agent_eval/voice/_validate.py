"""Check that a WAV fixture can feed a voice test: present, audio, not empty, not silent, not
longer than the fixture duration cap; and say what fixes it, for what the file is."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import AudioFixtureError, MissingExtraError, require_extra
from ._clip import AudioClip, _numpy, read_wav
from ._stats import SILENCE_FLOOR_DBFS, voiced_frames

__all__ = [
    "DEFAULT_MAX_FIXTURE_S",
    "RECORDING_FIX",
    "SYNTHESIZE_COMMAND",
    "TOO_LONG_FIX",
    "audio_problem",
    "decoded_audio_mime",
    "max_fixture_s",
    "set_max_fixture_s",
    "synthesize_command",
    "validate_fixture",
]

SYNTHESIZE_COMMAND = "python -m pytest_agent_eval.synthesize_audio"

DEFAULT_MAX_FIXTURE_S = 120.0
"""Longest fixture accepted, in seconds (``max_fixture_s`` in ``[tool.agent_eval]``). A user turn
is seconds long; an hour-long file would hold gigabytes in memory and minutes of work, so it is
refused from its header, before any decoding."""

RECORDING_FIX = (
    "re-record or replace it (the synthesizer never writes over a recording; delete it to have "
    "the turn's text synthesized instead)"
)
TOO_LONG_FIX = "use a shorter clip, or raise max_fixture_s in [tool.agent_eval]"

_max_fixture_s = DEFAULT_MAX_FIXTURE_S


def max_fixture_s() -> float:
    """The duration cap in force in this process."""
    return _max_fixture_s


def set_max_fixture_s(seconds: float | None) -> None:
    """Set the duration cap for this process (None: back to `DEFAULT_MAX_FIXTURE_S`).

    The pytest plugin and the command line call it with ``max_fixture_s`` from
    ``[tool.agent_eval]``, so every check (the gate, ``--check``, ``--verify``, the LiveKit
    adapter's loader) applies the same cap.
    """
    global _max_fixture_s
    if seconds is not None and not seconds > 0:
        raise ValueError(f"max_fixture_s must be > 0, got {seconds!r}")
    _max_fixture_s = DEFAULT_MAX_FIXTURE_S if seconds is None else float(seconds)


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


def _too_long(seconds: float, limit: float) -> str:
    return f"is {seconds:.1f} s long, over the {limit:g} s limit for a fixture"


def _header(path: Path) -> tuple[int, int, int]:
    """(frames, sample rate, channels) from the header only.

    Raises:
        AudioFixtureError: The file is not audio libsndfile can open.
    """
    require_extra("soundfile", extra="voice", feature="Reading WAV fixtures")
    import soundfile

    try:
        info = soundfile.info(str(path))
    except (soundfile.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        raise AudioFixtureError(
            f"is not readable audio ({exc}); it may be truncated or not a WAV"
        ) from None
    return int(info.frames), int(info.samplerate), int(info.channels)


_EMBEDDABLE = {"WAV": "audio/wav", "WAVEX": "audio/wav", "FLAC": "audio/flac", "OGG": "audio/ogg"}


def decoded_audio_mime(path: str | os.PathLike[str]) -> tuple[str | None, str]:
    """The MIME type of ``path`` when it decodes, whole, as WAV, FLAC or OGG audio.

    Whatever a path names (``/proc/self/environ`` in an ``audio:`` field, a text file renamed
    ``.wav``), only real audio may be embedded in a report: the file is decoded first.

    Returns:
        ``(mime, "")``, or ``(None, why)`` when it is not audio of those formats.
    """
    try:
        require_extra("soundfile", extra="voice", feature="Embedding audio in reports")
    except MissingExtraError as exc:
        return None, str(exc)
    import soundfile

    try:
        info = soundfile.info(str(path))
        mime = _EMBEDDABLE.get(str(info.format))
        if mime is None:
            return None, f"is {info.format} audio, not WAV, FLAC or OGG"
        for _ in soundfile.blocks(str(path), blocksize=65536, dtype="float32"):
            pass
    except (soundfile.LibsndfileError, RuntimeError, TypeError, ValueError, OSError) as exc:
        return None, f"is not readable audio ({exc})"
    if int(info.frames) <= 0:
        return None, "is empty (a valid header but no samples)"
    return mime, ""


def audio_problem(
    path: str | os.PathLike[str],
    *,
    max_duration_s: float | None = None,
    floor_dbfs: float = SILENCE_FLOOR_DBFS,
) -> str | None:
    """What makes ``path`` unusable as a fixture, cheaply: the header (readable, not empty,
    not over the cap) and a level scan that stops at the first voiced 20 ms frame, so a file is
    decoded in full only when it is silent (and it is never longer than the cap).

    Returns:
        A phrase such as ``"is silent: ..."`` (to follow ``audio fixture X``), or None.
    """
    np = _numpy()
    import soundfile

    p = Path(path)
    limit = max_fixture_s() if max_duration_s is None else max_duration_s
    try:
        frames, rate, _ = _header(p)
    except AudioFixtureError as exc:
        return str(exc)
    if frames <= 0 or rate <= 0:
        return "is empty (a valid header but no samples)"
    if frames / rate > limit:
        return _too_long(frames / rate, limit)
    block = max(1, int(rate * 0.02)) * 50  # one second of whole 20 ms frames
    seen = 0
    try:
        for chunk in soundfile.blocks(str(p), blocksize=block, dtype="float32", always_2d=True):
            seen += len(chunk)
            mono = chunk.mean(axis=1) if chunk.shape[1] > 1 else chunk[:, 0]
            clip = AudioClip(np.ascontiguousarray(mono), rate)
            if voiced_frames(clip, floor_dbfs=floor_dbfs)[0].size:
                return None
    except (soundfile.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        return f"is not readable audio ({exc}); it may be truncated or not a WAV"
    if seen == 0:
        return "is empty (a valid header but no samples)"
    return (
        f"is silent: no 20 ms frame is louder than {floor_dbfs:g} dBFS "
        f"({seen / rate:.2f} s of silence)"
    )


def _fix(path: Path, yaml_path: str | os.PathLike[str] | None) -> str:
    """What fixes a broken fixture: a synthesized one is made again; a recording is not ours."""
    from ._provenance import Origin, read_provenance

    if read_provenance(path).origin is Origin.RECORDING:
        return f"It is a recording (no sidecar, no provenance): {RECORDING_FIX}"
    return f"Re-create it with: {synthesize_command(yaml_path, force=True)}"


def validate_fixture(
    path: str | os.PathLike[str],
    *,
    yaml_path: str | os.PathLike[str] | None = None,
    floor_dbfs: float = SILENCE_FLOOR_DBFS,
    max_duration_s: float | None = None,
) -> AudioClip:
    """Read ``path`` and make sure it holds audible audio no longer than the cap.

    Args:
        path: The WAV fixture.
        yaml_path: The transcript that refers to it, so the message can give the exact command.
        floor_dbfs: A fixture none of whose 20 ms frames is louder than this is silent.
        max_duration_s: Longest accepted duration; None for the process's `max_fixture_s`.
            Checked from the header, before the samples are decoded.

    Returns:
        The fixture as a mono clip.

    Raises:
        AudioFixtureError: With a message naming the file, the problem and the fix, when the
            file is missing, is not readable audio, has no samples, is silent or too long. The
            fix fits the file: a synthesized fixture is made again, a recording is re-recorded
            (the synthesizer never writes over one).
    """
    p = Path(path)
    where = f"audio fixture {p}"
    if not p.exists():
        raise AudioFixtureError(
            f"{where} does not exist. Create it with: {synthesize_command(yaml_path)}"
        )
    if not p.is_file():
        raise AudioFixtureError(f"{where} is not a file. Point 'audio:' at a WAV file.")
    limit = max_fixture_s() if max_duration_s is None else max_duration_s
    try:
        frames, rate, _ = _header(p)
    except AudioFixtureError as exc:
        raise AudioFixtureError(f"{where} {exc}. {_fix(p, yaml_path)}") from None
    if frames <= 0:
        raise AudioFixtureError(
            f"{where} is empty (a valid WAV header but no samples). {_fix(p, yaml_path)}"
        )
    if frames / rate > limit:
        raise AudioFixtureError(f"{where} {_too_long(frames / rate, limit)}: {TOO_LONG_FIX}")
    try:
        clip = read_wav(p)
    except AudioFixtureError as exc:
        raise AudioFixtureError(
            f"{where} is not readable audio ({exc}); it may be truncated or not a WAV. "
            f"{_fix(p, yaml_path)}"
        ) from None
    if len(clip.samples) == 0:
        raise AudioFixtureError(
            f"{where} is empty (a valid WAV header but no samples). {_fix(p, yaml_path)}"
        )
    voiced, _ = voiced_frames(clip, floor_dbfs=floor_dbfs)
    if voiced.size == 0:
        raise AudioFixtureError(
            f"{where} is silent: no 20 ms frame is louder than {floor_dbfs:g} dBFS "
            f"({clip.duration_s:.2f} s of silence). {_fix(p, yaml_path)}"
        )
    return clip
