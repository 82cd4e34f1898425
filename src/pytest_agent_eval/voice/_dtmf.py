"""Keypad tones in the audio: DTMF digits made and heard the way a phone line carries them.

A caller pressing keys on a phone line sends each key as two tones at once, one of four low
("row") and one of four high ("column") frequencies (ITU-T Q.23). An agent that listens in band
hears them in its audio; a far end an outbound agent dials into (a phone tree, voicemail)
hears the agent's tones the same way. `keypad_tones` makes them, at the levels and durations a
phone sends (Q.24: at least 40 ms of tone and 40 ms of pause per key), and `detect_keys` hears
them back from any audio, after a phone line and noise too.

Detection follows the usual receiver design: the audio at 8 kHz in blocks of 205 samples
(about 25.6 ms, bins 39 Hz apart), the power at each of the eight frequencies by the Goertzel
recurrence, and a block counts as a key when one row and one column stand out: each well above
the other frequencies of its group, together most of the block's power, within the twist a
line allows between them (Q.24: the high tone up to 4 dB above the low one, 8 dB below), and
without a strong second harmonic (speech has harmonics, keypad tones do not). A key is a run
of at least two such blocks; a gap of two blocks ends it, so one block lost to noise does not
split a key in two. Nothing here needs a framework: the voice adapters and the far ends share
it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._clip import AudioClip, _numpy, resample

if TYPE_CHECKING:
    import numpy as np

    from ..models import DtmfInput

__all__ = [
    "KEYS",
    "HeardKey",
    "check_keys",
    "detect_keys",
    "in_band",
    "keypad_tones",
    "keys_in_pcm",
    "merge_keys",
    "with_keypad",
]

_ROWS = (697.0, 770.0, 852.0, 941.0)
_COLUMNS = (1209.0, 1336.0, 1477.0, 1633.0)
_LAYOUT = ("123A", "456B", "789C", "*0#D")

KEYS: dict[str, tuple[float, float]] = {
    key: (_ROWS[r], _COLUMNS[c]) for r, row in enumerate(_LAYOUT) for c, key in enumerate(row)
}
"""Each key of the 16-key pad and its (low, high) tone pair in Hz, per ITU-T Q.23."""

_RATE = 8000
_BLOCK = 205  # samples per analysis block at 8 kHz: bins about 39 Hz apart
_HOP = 51  # a block every quarter block (6.4 ms), so a 40 ms tone fills two whole blocks
_MIN_BLOCKS = 2  # a key fills at least two blocks (Q.24's 40 ms does)
_GAP_BLOCKS = 3  # three blocks in a row without the key end it (Q.24's 40 ms pause has them)
_TWIST_DB = (-8.0, 4.0)  # high tone relative to the low one
_GROUP_MARGIN_DB = 6.0  # the chosen tone over the next strongest of its group
_SHARE = 0.6  # the two tones' share of the block's power (after the voice band)
_HARMONIC_DB = -20.0  # a tone's second harmonic must stay this far below it
_FLOOR_DBFS = -50.0  # blocks quieter than this hold no key


@dataclass(frozen=True)
class HeardKey:
    """A key heard in audio, and when (seconds from the start of the audio)."""

    key: str
    start_s: float
    end_s: float


def check_keys(keys: str) -> str:
    """``keys`` upper-cased, or a ValueError naming the first character that is not a key."""
    normal = keys.upper()
    for index, char in enumerate(normal):
        if char not in KEYS:
            raise ValueError(
                f"{keys!r}: {keys[index]!r} (position {index + 1}) is not a key; keys are "
                "0-9, *, # and A-D"
            )
    return normal


def keypad_tones(
    keys: str,
    *,
    sample_rate: int = 16000,
    tone_ms: float = 100.0,
    gap_ms: float = 100.0,
    level_dbfs: float = -10.0,
) -> AudioClip:
    """The tones of ``keys``, one after the other: each ``tone_ms`` of its two frequencies at
    ``level_dbfs`` each, then ``gap_ms`` of silence (the last key's gap too, so clips join).

    Raises:
        ValueError: A character that is not a key, or a duration below Q.24's 40 ms.
    """
    np = _numpy()
    normal = check_keys(keys)
    if tone_ms < 40 or gap_ms < 40:
        raise ValueError(
            f"keypad tones need at least 40 ms of tone and of pause (ITU-T Q.24); got "
            f"tone_ms={tone_ms}, gap_ms={gap_ms}"
        )
    tone_n = round(sample_rate * tone_ms / 1000)
    gap_n = round(sample_rate * gap_ms / 1000)
    amplitude = 10 ** (level_dbfs / 20)
    t = np.arange(tone_n) / sample_rate
    # A 5 ms raised-cosine edge: a hard start splatters energy over every bin.
    edge_n = min(tone_n // 2, round(sample_rate * 0.005))
    envelope = np.ones(tone_n)
    if edge_n:
        ramp = 0.5 - 0.5 * np.cos(np.linspace(0.0, math.pi, edge_n))
        envelope[:edge_n] = ramp
        envelope[-edge_n:] = ramp[::-1]
    parts = []
    for key in normal:
        low, high = KEYS[key]
        tone = amplitude * (np.sin(2 * math.pi * low * t) + np.sin(2 * math.pi * high * t))
        parts += [tone * envelope, np.zeros(gap_n)]
    samples = np.concatenate(parts) if parts else np.zeros(0)
    return AudioClip(samples.astype(np.float32), sample_rate)


def in_band(keys: Any) -> DtmfInput | None:
    """A turn's ``dtmf`` when its keys are also to sound in its audio (``in_audio``)."""
    from ..models import DtmfInput

    return keys if isinstance(keys, DtmfInput) and keys.in_audio else None


def with_keypad(clip: AudioClip, keys: DtmfInput) -> AudioClip:
    """``clip`` with the tones of ``keys`` before or after it (``keys.at``): each key's tone
    ``interval_ms`` after the last one's start (at least Q.24's 40 ms of tone and of pause),
    at -10 dBFS per frequency, at the clip's own rate."""
    np = _numpy()
    tone_ms = max(40.0, min(100.0, keys.interval_ms / 2))
    gap_ms = max(40.0, keys.interval_ms - tone_ms)
    tones = keypad_tones(keys.keys, sample_rate=clip.sample_rate, tone_ms=tone_ms, gap_ms=gap_ms)
    speech = clip.samples.astype(np.float32)
    parts = [tones.samples, speech] if keys.at == "before" else [speech, tones.samples]
    return AudioClip(np.concatenate(parts).astype(np.float32), clip.sample_rate)


def _goertzel_power(blocks: np.ndarray, freq: float) -> np.ndarray:
    """Power of every block (rows of ``blocks``) at ``freq``, by the Goertzel recurrence."""
    np = _numpy()
    coeff = 2.0 * math.cos(2.0 * math.pi * freq / _RATE)
    s1 = np.zeros(blocks.shape[0])
    s2 = np.zeros(blocks.shape[0])
    for column in blocks.T:
        s0 = column + coeff * s1 - s2
        s2, s1 = s1, s0
    return s1 * s1 + s2 * s2 - coeff * s1 * s2  # type: ignore[no-any-return]


def _harmonic_too_strong(block: np.ndarray, freq: float, power: float, column: float) -> bool:
    """Whether the second harmonic of ``freq`` is too strong for a keypad tone (speech has
    harmonics). Not judged where the harmonic falls next to the column tone itself (697 Hz
    doubled is 1394 Hz, 58 Hz from key 2's 1336 Hz), whose own power would spill into it."""
    if abs(2 * freq - column) < 2.5 * _RATE / _BLOCK:  # within the window's main lobe
        return False
    second = float(_goertzel_power(block, 2 * freq)[0])
    return second > 10 ** (_HARMONIC_DB / 10) * power


def _block_keys(clip: AudioClip) -> list[tuple[str | None, str | None]]:
    """For each 205-sample block at 8 kHz (one every 51 samples): the key it holds by every
    test, or None; and the key its strongest row and column make, or None below the floor
    (enough to go on hearing a key already heard: hysteresis, as receivers do)."""
    np = _numpy()
    audio = resample(clip, _RATE).samples.astype(np.float64)
    if len(audio) < _BLOCK:
        return []
    count = (len(audio) - _BLOCK) // _HOP + 1
    blocks = np.lib.stride_tricks.sliding_window_view(audio, _BLOCK)[::_HOP][:count]
    window = np.hamming(_BLOCK)
    weighted = blocks * window
    rows = np.stack([_goertzel_power(weighted, f) for f in _ROWS], axis=1)
    columns = np.stack([_goertzel_power(weighted, f) for f in _COLUMNS], axis=1)
    # On the Goertzel scale (Parseval), a block's power is N/2 times its windowed energy; a
    # pure tone puts about 73% of it at its own frequency through a Hamming window.
    total = np.sum(weighted**2, axis=1) * _BLOCK / 2.0
    floor = (10 ** (_FLOOR_DBFS / 20) * np.sum(window) / 2) ** 2
    keys: list[tuple[str | None, str | None]] = []
    for i in range(count):
        r, c = int(np.argmax(rows[i])), int(np.argmax(columns[i]))
        low, high = rows[i, r], columns[i, c]
        if low < floor or high < floor:
            keys.append((None, None))
            continue
        strongest = _LAYOUT[r][c]
        twist = 10 * math.log10(high / low)
        if not _TWIST_DB[0] <= twist <= _TWIST_DB[1]:
            keys.append((None, strongest))
            continue
        others_low = np.delete(rows[i], r).max()
        others_high = np.delete(columns[i], c).max()
        margin = 10 ** (_GROUP_MARGIN_DB / 10)
        if low < margin * others_low or high < margin * others_high:
            keys.append((None, strongest))
            continue
        if (low + high) < _SHARE * total[i]:
            keys.append((None, strongest))
            continue
        if _harmonic_too_strong(weighted[i : i + 1], _ROWS[r], low, _COLUMNS[c]) or (
            _harmonic_too_strong(weighted[i : i + 1], _COLUMNS[c], high, _COLUMNS[c])
        ):
            keys.append((None, strongest))
            continue
        keys.append((strongest, strongest))
    return keys


def detect_keys(clip: AudioClip) -> list[HeardKey]:
    """The keys pressed in ``clip``, in order, each with when it sounded.

    A key must fill at least two analysis blocks (a 40 ms tone does); two blocks in a row
    without it, or another key, end it, so a key held long is one key and a key pressed twice
    with Q.24's 40 ms pause between is two.
    """
    hop_s = _HOP / _RATE
    heard: list[HeardKey] = []
    current: str | None = None
    start = last = 0
    run = 0
    misses = 0

    def close() -> None:
        if current is not None and run >= _MIN_BLOCKS:
            # A block partly over the tone still counts: end one hop after the last block's
            # start rather than at its end (within about 6 ms of the tone's end).
            heard.append(HeardKey(current, start * hop_s, (last + 1) * hop_s))

    for index, (strict, loose) in enumerate(_block_keys(clip)):
        key = current if current is not None and loose == current else strict
        if key is not None and key == current:
            run += 1
            last = index
            misses = 0
        elif key is not None:
            close()
            current, start, last, run, misses = key, index, index, 1, 0
        elif current is not None:
            misses += 1
            if misses >= _GAP_BLOCKS:
                close()
                current, run, misses = None, 0, 0
    close()
    return heard


def keys_in_pcm(pcm: bytes, sample_rate: int) -> str:
    """The keys heard in 16-bit mono PCM (an agent's reply audio), in order."""
    np = _numpy()
    if not pcm or sample_rate <= 0:
        return ""
    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype=np.int16).astype(np.float32)
    return "".join(k.key for k in detect_keys(AudioClip(samples / 32768.0, sample_rate)))


def merge_keys(events: str, heard: str) -> str:
    """The keys an agent put on the line: those it sent as events (``events``) and those heard
    in its audio (``heard``), as the shortest sequence holding both in order.

    A key sent as an event that the transport also plays as a tone (Pipecat's output without
    native DTMF does) is one key, not two; a key only played in band (tones in the agent's
    own audio) is added where the audio has it.
    """
    n, m = len(events), len(heard)
    # Longest common subsequence table, then walk it back to the shortest supersequence.
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            table[i][j] = (
                table[i + 1][j + 1] + 1
                if events[i] == heard[j]
                else max(table[i + 1][j], table[i][j + 1])
            )
    out: list[str] = []
    i = j = 0
    while i < n and j < m:
        if events[i] == heard[j]:
            out.append(events[i])
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            out.append(events[i])
            i += 1
        else:
            out.append(heard[j])
            j += 1
    return "".join(out) + events[i:] + heard[j:]
