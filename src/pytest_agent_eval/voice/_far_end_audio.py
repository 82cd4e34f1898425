"""A far-end turn heard as audio (``far_end: {as: audio}``): its pieces (`FarEndPiece`: a
spoken line, a beep, ringback, a busy tone, hold music) as one clean clip at the rate the
agent takes, for a voice adapter to stream like a caller's fixture, under the turn's audio
conditions (a phone line) as every streamed clip is.

Spoken lines are the fixtures the synthesizer made (`pytest_agent_eval.models._far_end.far_end_wav`,
next to the transcript); the sounds are made by `voice._line_sounds`. Pieces follow one another
after a short pause, as a voicemail's beep follows its greeting. Nothing here needs a
framework: both voice adapters share it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import AudioFixtureError
from ..models import Transcript
from ..models._far_end import FarEndPiece, far_end_wav
from ._clip import AudioClip, _numpy, read_wav, resample
from ._line_sounds import beep, busy_tone, hold_music, ringback

if TYPE_CHECKING:
    import numpy

__all__ = ["PIECE_GAP_S", "far_end_clip", "far_end_fixture"]

PIECE_GAP_S = 0.3
"""Silence between two pieces of one turn (a greeting and the hold music after it)."""
RINGS = 2
"""Rings of a line nobody answers (12 s of ringback)."""
BUSY_CYCLES = 4
"""Cycles of a busy tone (4 s)."""
HOLD_S = 4.0
"""Seconds of hold music per turn of it."""


def far_end_fixture(transcript: Transcript, part: str) -> Path:
    """The fixture of the far end's spoken line ``part``, next to ``transcript``'s file."""
    relative = Path(far_end_wav(transcript.id, part))
    return transcript.path.parent / relative if transcript.path is not None else relative


def far_end_clip(
    transcript: Transcript, pieces: Sequence[FarEndPiece], sample_rate: int
) -> AudioClip:
    """One far-end turn's ``pieces`` as one clip at ``sample_rate``, clean (the adapter applies
    the turn's conditions when it streams it).

    Raises:
        AudioFixtureError: A spoken line's fixture is missing or not audio; the message names
            it and the command that makes it.
        ValueError: A turn with no pieces.
    """
    np = _numpy()
    if not pieces:
        raise ValueError("a far-end turn has at least one piece")
    parts: list[numpy.ndarray] = []
    gap = np.zeros(round(sample_rate * PIECE_GAP_S), dtype=np.float32)
    for index, piece in enumerate(pieces):
        if index:
            parts.append(gap)
        parts.append(_piece(transcript, piece, sample_rate).samples)
    return AudioClip(np.concatenate(parts).astype(np.float32), sample_rate)


def _piece(transcript: Transcript, piece: FarEndPiece, sample_rate: int) -> AudioClip:
    if piece.sound == "beep":
        return beep(sample_rate=sample_rate)
    if piece.sound == "ringback":
        return ringback(cycles=RINGS, sample_rate=sample_rate)
    if piece.sound == "busy":
        return busy_tone(cycles=BUSY_CYCLES, sample_rate=sample_rate)
    if piece.sound == "hold_music":
        return hold_music(seconds=HOLD_S, sample_rate=sample_rate)
    wav = far_end_fixture(transcript, piece.part)
    try:
        spoken = read_wav(wav)
    except AudioFixtureError as exc:
        source = str(transcript.path) if transcript.path is not None else "the transcript"
        raise AudioFixtureError(
            f"transcript {transcript.id!r}, far_end.{piece.part}: {exc}; make it with "
            f"python -m pytest_agent_eval.synthesize_audio {source}"
        ) from exc
    return resample(spoken, sample_rate)
