"""A fixture as PCM ready to stream: read, validated, its conditions applied, resampled.

Every voice adapter streams a turn's WAV into its framework at the framework's rate. Reading it
is the same for all: validate it (a missing, empty or silent fixture fails naming the fix),
apply the turn's audio conditions at the WAV's own rate, down-mix and resample, and take the
text its sidecar says it holds. `decode_fixture` does that once; each adapter then frames the
PCM its own way (LiveKit: ``rtc.AudioFrame``s; Pipecat: ``InputAudioRawFrame``s).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import AudioFixtureError
from ..models import AudioCondition, DtmfInput, Transcript

if TYPE_CHECKING:
    from ._clip import AudioClip

__all__ = [
    "FixturePCM",
    "check_fixtures",
    "conditions_transform",
    "content_key",
    "decode_fixture",
    "load_fixture_pcm",
    "resolve_audio",
    "save_reply_audio",
    "save_streamed_audio",
    "turn_audio_path",
]


@dataclass(frozen=True, slots=True)
class FixturePCM:
    """A fixture ready to stream: mono 16-bit PCM at one sample rate."""

    path: Path
    pcm: bytes
    """The audio (after its conditions), without trailing silence."""
    sample_rate: int
    text: str | None
    """What it says, from its sidecar (None without one)."""
    source_rate: int
    """Sample rate of the WAV on disk."""
    source_channels: int
    """Channel count of the WAV on disk."""

    @property
    def duration_s(self) -> float:
        """Length of the audio."""
        return len(self.pcm) / 2 / self.sample_rate


def decode_fixture(
    path: Path,
    *,
    sample_rate: int,
    transform: Callable[[AudioClip], AudioClip] | None = None,
) -> FixturePCM:
    """Read, validate, down-mix and resample ``path`` to ``sample_rate`` (16-bit mono PCM).

    ``transform`` (audio conditions) gets the validated clip at its own rate first.

    Raises:
        AudioFixtureError: Missing, unreadable, empty or silent fixture (see `validate_fixture`).
    """
    import soundfile

    from ._fixtures import read_sidecar, resample, to_pcm16_bytes, validate_fixture

    clip = validate_fixture(path)
    channels = int(soundfile.info(str(path)).channels)
    source_rate = clip.sample_rate
    if transform is not None:
        clip = transform(clip)
    pcm = to_pcm16_bytes(resample(clip, sample_rate))
    sidecar = read_sidecar(path)
    return FixturePCM(
        path=path,
        pcm=pcm,
        sample_rate=sample_rate,
        text=sidecar.text if sidecar is not None else None,
        source_rate=source_rate,
        source_channels=channels,
    )


def conditions_transform(
    path: Path, conditions: Sequence[AudioCondition], seed: int
) -> Callable[[AudioClip], AudioClip]:
    """The audio conditions of a turn as a transform of the fixture's clip (drawn with
    ``seed``; babble noise mixed from the fixtures beside ``path``)."""
    from ._degrade import apply, babble_sources

    babble = (
        babble_sources(path)
        if any(c.kind == "noise" and c.params.get("color") == "babble" for c in conditions)
        else []
    )
    return lambda clip: apply(clip, conditions, seed, babble=babble)


def turn_transform(
    path: Path, conditions: Sequence[AudioCondition], seed: int, keys: DtmfInput | None
) -> Callable[[AudioClip], AudioClip] | None:
    """What a turn's audio goes through: the tones of ``keys`` (``in_audio``) mixed in first,
    so the audio conditions after them change the tones as a phone line would; None for
    neither."""
    degrade = conditions_transform(path, conditions, seed) if conditions else None
    if keys is None:
        return degrade
    from ._dtmf import with_keypad

    pressed = keys

    def transform(clip: AudioClip) -> AudioClip:
        keyed = with_keypad(clip, pressed)
        return degrade(keyed) if degrade is not None else keyed

    return transform


_KEPT = 256
"""Fixtures kept decoded per process (a few hundred kB each at 24 kHz)."""
_loaded: OrderedDict[tuple[Any, ...], FixturePCM] = OrderedDict()
_loaded_lock = threading.Lock()


def content_key(path: Path) -> tuple[str, int, int] | None:
    """Identity of a fixture's current content (path, size, mtime); None when unreadable."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (str(path), st.st_size, st.st_mtime_ns)


def load_fixture_pcm(
    path: Path,
    *,
    sample_rate: int,
    conditions: Sequence[AudioCondition] = (),
    seed: int = 0,
    keys: DtmfInput | None = None,
) -> FixturePCM:
    """`decode_fixture` with ``conditions`` (drawn with ``seed``) applied, after the tones of
    ``keys`` (a turn's ``dtmf`` with ``in_audio``), if any. Without either the result is kept
    for the process while the file is unchanged.

    Raises:
        AudioFixtureError: Missing, unreadable, empty or silent fixture.
    """
    key: tuple[Any, ...] | None = None
    if keys is not None:
        transform = turn_transform(path, conditions, seed, keys)
        return decode_fixture(path, sample_rate=sample_rate, transform=transform)
    if not conditions:
        identity = content_key(path)
        key = (*identity, sample_rate) if identity is not None else None
        if key is not None:
            with _loaded_lock:
                if key in _loaded:
                    _loaded.move_to_end(key)
                    return _loaded[key]
    transform = conditions_transform(path, conditions, seed) if conditions else None
    loaded = decode_fixture(path, sample_rate=sample_rate, transform=transform)
    if key is not None:
        with _loaded_lock:
            _loaded[key] = loaded
            while len(_loaded) > _KEPT:
                _loaded.popitem(last=False)
    return loaded


def resolve_audio(audio: Any, transcript: Transcript) -> Path:
    """A turn's ``audio`` as a path, relative ones against the transcript's folder."""
    path = Path(audio)
    if not path.is_absolute() and transcript.path is not None:
        path = transcript.path.parent / path
    return path


async def check_fixtures(transcript: Transcript, load: Callable[[Path], Any]) -> None:
    """Load every audio fixture of ``transcript`` with ``load`` (in a thread), so a bad one
    fails before any session, room or pipeline exists, naming the transcript and the turn."""
    for index, turn in enumerate(transcript.turns):
        if turn.audio is None:
            continue
        try:
            await asyncio.to_thread(load, resolve_audio(turn.audio, transcript))
        except AudioFixtureError as exc:
            # from None: the cause would only repeat the message (issue 9).
            raise AudioFixtureError(
                f"transcript {transcript.id!r}, turn {index + 1}: {exc}"
            ) from None


def turn_audio_path(
    folder: str | os.PathLike[str],
    *,
    transcript_id: str,
    run_index: int,
    turn_index: int,
    reply: bool = False,
) -> Path:
    """Where every voice adapter saves a turn's audio: ``<folder>/<transcript>/run<N>-turn<M>.wav``
    for what the caller streamed, ``...-reply.wav`` for what the agent said, so the two never
    overwrite each other when they share a folder. The transcript id is made safe for a file
    name (an id may hold spaces, colons or slashes)."""
    from .._text import safe_name

    name = f"run{run_index + 1}-turn{turn_index + 1}{'-reply' if reply else ''}.wav"
    return Path(folder) / safe_name(transcript_id) / name


def save_reply_audio(
    folder: str | os.PathLike[str],
    *,
    transcript_id: str,
    run_index: int,
    turn_index: int,
    clip: AudioClip,
) -> Path:
    """Write the agent's audio of a turn at `turn_audio_path` (``reply=True``), atomically.
    Returns the resolved path."""
    from ._fixtures import write_wav_atomic

    path = turn_audio_path(
        folder, transcript_id=transcript_id, run_index=run_index, turn_index=turn_index, reply=True
    )
    write_wav_atomic(path, clip)
    return path.resolve()


def save_streamed_audio(
    folder: str | os.PathLike[str],
    *,
    transcript_id: str,
    run_index: int,
    turn_index: int,
    pcm: bytes,
    sample_rate: int,
) -> Path:
    """Write the exact audio a turn streamed (16-bit mono PCM, after its conditions) at
    `turn_audio_path`, atomically; the HTML report plays it beside the clean fixture. Returns
    the resolved path."""
    from ._fixtures import clip_from_pcm16, write_wav_atomic

    path = turn_audio_path(
        folder, transcript_id=transcript_id, run_index=run_index, turn_index=turn_index
    )
    write_wav_atomic(path, clip_from_pcm16(pcm, sample_rate))
    return path.resolve()
