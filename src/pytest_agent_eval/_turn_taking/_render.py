"""Rendering a marked ``user`` text into one clip, and saying where each element landed.

The flow of the text (phrases, fillers, pauses, noises without ``at``) is laid end to end: each
spoken piece trimmed of its own silence, a sentence pause between two phrases, a short gap
before and after a filler, the fixed pad at both ends, and one level normalization of the
speech (as `pytest_agent_eval.voice.render_phrases` does for plain text). Noises keep their own
level. Then the timed overlays (``[noise KIND at T]``, ``[backchannel "..." at T]``) and side
speech are mixed in at their times from the start of the audio; the clip grows when one ends
after it, and keeps the pad after the last sound.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..voice._clip import AudioClip, _numpy
from ..voice._effects import PostProcess, normalize_level, trim_silence
from ..voice._sidecar import TimedPhrase
from ..voice._speech import Backchannel, Filler, Noise, Pause, Phrase, parse_speech
from ._sounds import make_sound, sound_seed
from ._stimulus import StimulusEvent

__all__ = ["FILLER_GAP_S", "Rendered", "marked_texts", "render_marked", "speaker"]

FILLER_GAP_S = 0.15
"""Silence between a filler and the words next to it (a sentence pause is 0.75 s)."""

BACKCHANNEL_LEVEL_DB = -3.0
"""A backchannel's level against the caller's speech: said a little softer."""


@dataclass(frozen=True, slots=True)
class Rendered:
    """A rendered text: the clip, its phrases (speech and fillers, as `split_speech` lists
    them) and every element's place."""

    clip: AudioClip
    phrases: tuple[TimedPhrase, ...]
    events: tuple[StimulusEvent, ...]

    @property
    def caller_end_s(self) -> float:
        """End of the caller's last words (speech or filler; not overlays)."""
        ends = [e.end_s for e in self.events if e.kind in ("speech", "filler")]
        return max(ends) if ends else 0.0


def marked_texts(text: str) -> list[str]:
    """Every text ``text`` needs spoken (phrases, fillers, backchannels), once each, in order.

    Raises:
        PauseMarkupError: A bad marker.
    """
    out: list[str] = []
    for part in parse_speech(text):
        if isinstance(part, Phrase | Filler | Backchannel) and part.text not in out:
            out.append(part.text)
    return out


def _seconds(samples: int, rate: int) -> float:
    return round(samples / rate, 4)


def render_marked(
    text: str,
    speak: Callable[[str], AudioClip],
    *,
    sample_rate: int,
    params: PostProcess | None = None,
    seed: int = 0,
    gain_db: float = 0.0,
    side: tuple[AudioClip, float, float, str] | None = None,
) -> Rendered:
    """Render ``text`` (with markers) into one clip at ``sample_rate``.

    Args:
        text: The caller's text.
        speak: Speech for one text (a phrase, filler or backchannel) at ``sample_rate``.
        sample_rate: Hz.
        params: Pad, level and sentence pause.
        seed: Where noises come from (`sound_seed` of it, the sound and its place).
        gain_db: The caller's level against ``params.target_rms_dbfs``.
        side: Side speech: its clip (at ``sample_rate``), start in seconds, level in dB under
            the caller, and its words.

    Raises:
        PauseMarkupError: A bad marker.
    """
    np = _numpy()
    p = params or PostProcess()
    rate = sample_rate
    parts = parse_speech(text)

    def trimmed(clip: AudioClip) -> Any:
        if clip.sample_rate != rate:
            raise ValueError(f"speech at {clip.sample_rate} Hz, the render is at {rate} Hz")
        return trim_silence(
            clip, pad_s=0.0, floor_db_below_peak=p.trim_below_peak_db, fade_ms=p.fade_ms
        ).samples

    pad = round(p.pad_s * rate)
    speech: list[Any] = [np.zeros(pad, dtype=np.float32)]
    noises: list[tuple[int, AudioClip]] = []
    events: list[StimulusEvent] = []
    phrases: list[TimedPhrase] = []
    at = pad
    previous: Phrase | Filler | None = None
    for index, part in enumerate(parts):
        if isinstance(part, Phrase | Filler):
            if previous is not None:
                both_phrases = isinstance(previous, Phrase) and isinstance(part, Phrase)
                gap = round((p.sentence_pause_s if both_phrases else FILLER_GAP_S) * rate)
                speech.append(np.zeros(gap, dtype=np.float32))
                at += gap
            samples = trimmed(speak(part.text))
            n = len(samples)
            speech.append(samples)
            start, end = _seconds(at, rate), _seconds(at + n, rate)
            phrases.append(TimedPhrase(part.text, start, end))
            kind = "filler" if isinstance(part, Filler) else "speech"
            events.append(StimulusEvent(kind=kind, start_s=start, end_s=end, text=part.text))
            at += n
            previous = part
            continue
        previous = None
        if isinstance(part, Pause):
            n = round(part.seconds * rate)
            speech.append(np.zeros(n, dtype=np.float32))
            events.append(
                StimulusEvent(
                    kind="pause", start_s=_seconds(at, rate), end_s=_seconds(at + n, rate)
                )
            )
            at += n
        elif isinstance(part, Noise) and part.at_s is None:
            sound = make_sound(part.kind, seed=sound_seed(seed, part.kind, index), sample_rate=rate)
            n = len(sound.samples)
            speech.append(np.zeros(n, dtype=np.float32))
            noises.append((at, sound))
            events.append(
                StimulusEvent(
                    kind="noise",
                    start_s=_seconds(at, rate),
                    end_s=_seconds(at + n, rate),
                    sound=part.kind,
                )
            )
            at += n
    speech.append(np.zeros(pad, dtype=np.float32))
    joined = AudioClip(np.concatenate(speech), rate)
    level = p.target_rms_dbfs + gain_db
    out = normalize_level(joined, target_rms_dbfs=level, peak_ceiling_dbfs=p.peak_ceiling_dbfs)
    mix = out.samples.astype(np.float64)

    def lay(start: int, samples: Any) -> None:
        nonlocal mix
        data = np.asarray(samples, dtype=np.float64)
        end = start + len(data)
        if end + pad > len(mix):
            mix = np.concatenate([mix, np.zeros(end + pad - len(mix))])
        mix[start:end] += data

    for start, sound in noises:
        lay(start, sound.samples)
    for index, part in enumerate(parts):
        start = round((part.at_s or 0.0) * rate) if isinstance(part, Noise | Backchannel) else 0
        if isinstance(part, Noise) and part.at_s is not None:
            sound = make_sound(part.kind, seed=sound_seed(seed, part.kind, index), sample_rate=rate)
            lay(start, sound.samples)
            n = len(sound.samples)
            events.append(
                StimulusEvent(
                    kind="noise",
                    start_s=_seconds(start, rate),
                    end_s=_seconds(start + n, rate),
                    sound=part.kind,
                    extra={"at_s": part.at_s},
                )
            )
        elif isinstance(part, Backchannel):
            said = AudioClip(trimmed(speak(part.text)), rate)
            said = normalize_level(
                said,
                target_rms_dbfs=level + BACKCHANNEL_LEVEL_DB,
                peak_ceiling_dbfs=p.peak_ceiling_dbfs,
            )
            lay(start, said.samples)
            n = len(said.samples)
            events.append(
                StimulusEvent(
                    kind="backchannel",
                    start_s=_seconds(start, rate),
                    end_s=_seconds(start + n, rate),
                    text=part.text,
                    extra={"at_s": part.at_s},
                )
            )
    if side is not None:
        clip, side_at, level_db, words = side
        voice = AudioClip(trimmed(clip), rate)
        voice = normalize_level(
            voice, target_rms_dbfs=level + level_db, peak_ceiling_dbfs=p.peak_ceiling_dbfs
        )
        start = round(side_at * rate)
        lay(start, voice.samples)
        events.append(
            StimulusEvent(
                kind="side_speech",
                start_s=_seconds(start, rate),
                end_s=_seconds(start + len(voice.samples), rate),
                text=words,
                extra={"level_db": level_db},
            )
        )
    final = AudioClip(np.clip(mix, -1.0, 1.0).astype(np.float32), rate)
    ordered = tuple(sorted(events, key=lambda e: (e.start_s, e.kind)))
    return Rendered(final, tuple(phrases), ordered)


def speaker(synthesize: Callable[[str], AudioClip], sample_rate: int) -> Callable[[str], AudioClip]:
    """``synthesize`` resampled to ``sample_rate`` and remembered per text (a stimulus says
    the same filler or backchannel more than once)."""
    from ..voice._clip import resample

    said: dict[str, AudioClip] = {}

    def speak(text: str) -> AudioClip:
        if text not in said:
            said[text] = resample(synthesize(text), sample_rate)
        return said[text]

    return speak
