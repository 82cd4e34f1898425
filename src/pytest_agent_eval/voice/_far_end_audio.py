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
from ..models import AudioCondition, Transcript
from ..models._far_end import FarEndPiece, far_end_wav, spoken_lines
from ._clip import AudioClip, _numpy, read_wav, resample
from ._fixture_pcm import FixturePCM
from ._line_sounds import beep, busy_tone, hold_music, ringback
from ._sidecar import TimedWord

if TYPE_CHECKING:
    import numpy

__all__ = [
    "CLIP_RATE",
    "PIECE_GAP_S",
    "SETTLE_S",
    "far_end_clip",
    "far_end_fixture",
    "far_end_pcm",
    "far_end_words",
    "prove_far_end_lines",
]

PIECE_GAP_S = 0.3
"""Silence between two pieces of one turn (a greeting and the hold music after it)."""
RINGS = 2
"""Rings of a line nobody answers (12 s of ringback)."""
BUSY_CYCLES = 4
"""Cycles of a busy tone (4 s)."""
HOLD_S = 4.0
"""Seconds of hold music per turn of it."""
SETTLE_S = 2.0
"""How long, on the turn's clock, a far-end turn waits after its audio has played out for the
agent to begin answering: a beep, a ring, hold music have no words, so no end of speech ends
their turn. It is longer than a turn's end-of-speech detection (the VAD's silence and the
endpointing delay, about 1 s), so an agent that answers the far end's words has begun by then;
one that begins nothing in it has stayed quiet, and the turn ends. At max speed it is virtual
time: it costs no wall time, and streaming speed never changes what the agent was given."""
CLIP_RATE = 16000
"""The rate a far-end turn's clip is written at (a phone line's band fits in it)."""


def far_end_fixture(transcript: Transcript, part: str) -> Path:
    """The fixture of the far end's spoken line ``part``, next to ``transcript``'s file, named
    by the id the transcript was written with (its ``base_id``: a variant's, a case's and an
    attribution rerun's fixtures are the transcript's own)."""
    relative = Path(far_end_wav(transcript.base_id or transcript.id, part))
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
    return _assemble(transcript, pieces, sample_rate)[0]


def _assemble(
    transcript: Transcript, pieces: Sequence[FarEndPiece], sample_rate: int
) -> tuple[AudioClip, list[tuple[FarEndPiece, float]]]:
    """The clip of ``pieces``, and where each piece starts in it (seconds)."""
    np = _numpy()
    if not pieces:
        raise ValueError("a far-end turn has at least one piece")
    parts: list[numpy.ndarray] = []
    starts: list[tuple[FarEndPiece, float]] = []
    gap = np.zeros(round(sample_rate * PIECE_GAP_S), dtype=np.float32)
    at = 0
    for index, piece in enumerate(pieces):
        if index:
            parts.append(gap)
            at += len(gap)
        starts.append((piece, at / sample_rate))
        samples = _piece(transcript, piece, sample_rate).samples
        parts.append(samples)
        at += len(samples)
    return AudioClip(np.concatenate(parts).astype(np.float32), sample_rate), starts


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


def far_end_pcm(
    transcript: Transcript,
    pieces: Sequence[FarEndPiece],
    sample_rate: int,
    conditions: Sequence[AudioCondition] = (),
    seed: int = 0,
) -> tuple[FixturePCM, tuple[TimedWord, ...]]:
    """One far-end turn as a voice adapter streams it, and its words (`far_end_words`): its clip (`far_end_clip`, made at
    `CLIP_RATE`) through the turn's audio ``conditions`` (drawn with ``seed``), as 16-bit
    mono PCM at ``sample_rate``. Its ``path`` names the turn's first piece (a fixture, or the
    sound) for messages; its ``text`` is the words it says.

    Raises:
        AudioFixtureError: As `far_end_clip`.
    """
    from ._clip import to_pcm16_bytes
    from ._fixture_pcm import conditions_transform

    clip, starts = _assemble(transcript, pieces, CLIP_RATE)
    first = pieces[0]
    path = far_end_fixture(transcript, first.part if first.sound == "line" else first.sound)
    if conditions:
        clip = conditions_transform(path, conditions, seed)(clip)
    words = _words_at(transcript, starts)
    pcm = FixturePCM(
        path=path,
        pcm=to_pcm16_bytes(resample(clip, sample_rate)),
        sample_rate=sample_rate,
        text=" ".join(w.text for w in words) or None,
        source_rate=CLIP_RATE,
        source_channels=1,
    )
    return pcm, words


def far_end_words(transcript: Transcript, pieces: Sequence[FarEndPiece]) -> tuple[TimedWord, ...]:
    """The words far-end turn ``pieces`` speaks, each where it sits in the turn's clip: each
    spoken line's words as its fixture's provenance proves them (`prove_fixture_text`), moved
    to where the line starts; a line whose fixture proves nothing (a recording) gives none (an
    STT that transcribes, `WhisperSTT`, hears it instead). A stand-in STT answers with them."""
    return _words_at(transcript, _assemble(transcript, pieces, CLIP_RATE)[1])


def prove_far_end_lines(transcript: Transcript) -> None:
    """For an STT that hears by fixture provenance (`FixtureTextSTT`,
    `FixtureTextSTTService`): every spoken line of ``transcript``'s far end heard as audio
    must prove its words before the run starts. A line nothing proves (a recording, a WAV made
    from other words, a missing one) would reach the agent as silence, and a verdict on it
    would say nothing; it is an error of the run instead.

    Raises:
        AudioFixtureError: Naming the file and line, the transcript, the field
            (``far_end.greeting``), why, and the fix.
    """
    from ._status import prove_fixture_text

    far = transcript.far_end
    if far is None or far.played_as != "audio":
        return
    where = transcript.locations.get("far_end")
    named = f"{where}: transcript {transcript.id!r}" if where else f"transcript {transcript.id!r}"
    for part, text in spoken_lines(far):
        try:
            prove_fixture_text(far_end_fixture(transcript, part), text)
        except AudioFixtureError as exc:
            source = str(transcript.path) if transcript.path is not None else "the transcript"
            raise AudioFixtureError(
                f"{named}, far_end.{part}: the agent hears by the fixtures' provenance, and "
                f"{exc}; make it with python -m pytest_agent_eval.synthesize_audio {source}, "
                "or hear it with WhisperSTT"
            ) from None


def _words_at(
    transcript: Transcript, starts: Sequence[tuple[FarEndPiece, float]]
) -> tuple[TimedWord, ...]:
    from ._status import prove_fixture_text

    far = transcript.far_end
    lines = dict(spoken_lines(far)) if far is not None else {}
    found: list[TimedWord] = []
    for piece, at in starts:
        if piece.sound != "line" or piece.part not in lines:
            continue
        try:
            said = prove_fixture_text(far_end_fixture(transcript, piece.part), lines[piece.part])
        except AudioFixtureError:
            continue
        found += [TimedWord(w.text, w.start_s + at, w.end_s + at) for w in said]
    return tuple(found)
