"""The call's recording, and each user turn's audio cut from it.

LiveKit's recorder writes one stereo OGG/Opus file per session (48 kHz, the user's input on the
left channel, the agent's output on the right, one timeline from ``audio_recording_started_at``).
It is read with soundfile, whose libsndfile decodes Ogg/Opus (and WAV, FLAC), seeking to each
window rather than decoding the whole call. Each cut is resampled to 16 kHz mono and written
as a plain WAV with no provenance of ours: a recording, which the synthesizer never writes
over and `FixtureTextSTT` never claims to understand.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import require_extra
from ..voice._fixtures import AudioClip, resample, voiced_frames
from ._call import CallImportError, ImportedCall, Notice, Span

__all__ = [
    "FIXTURE_RATE",
    "LEAD_S",
    "NEXT_TURN_GUARD_S",
    "TAIL_S",
    "Cut",
    "Recording",
    "cut_turns",
    "open_recording",
]

LEAD_S = 0.5
"""Audio kept before the reported start of speech: LiveKit stamps it when the VAD has heard a
little speech, and Silero keeps 0.5 s before that as its prefix too."""
TAIL_S = 0.5
"""Audio kept after the reported end of speech (the last syllable's decay)."""
NEXT_TURN_GUARD_S = 0.15
"""A cut stops this far before the next user turn's reported start, which can be a little
late; never into that turn."""
FIXTURE_RATE = 16000
"""Rate of the written fixtures, the synthesizer's default (speech recognizers' own rate)."""
MIN_VOICED_S = 0.1
"""A window with less voiced audio than this (20 ms frames above -50 dBFS) holds no speech."""

UserChannel = Literal["left", "right"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Recording:
    """A readable recording: its layout, and which channel is the user's."""

    path: Path
    sample_rate: int
    channels: int
    frames: int
    channel: int
    """Index of the user's channel."""

    @property
    def duration_s(self) -> float:
        return self.frames / self.sample_rate

    def read(self, span: Span) -> AudioClip:
        """The user's channel over ``span`` (clamped to the file)."""
        import soundfile

        start = max(0, round(span.start_s * self.sample_rate))
        stop = min(self.frames, round(span.end_s * self.sample_rate))
        with soundfile.SoundFile(str(self.path)) as handle:
            handle.seek(start)
            data = handle.read(max(0, stop - start), dtype="float32", always_2d=True)
        return AudioClip(data[:, self.channel].copy(), self.sample_rate)


@dataclass(frozen=True, slots=True, kw_only=True)
class Cut:
    """One user turn's audio, cut and ready to write."""

    turn: int
    """1-based."""
    window: Span
    """Where it was cut from, in seconds of the recording."""
    clip: AudioClip
    """At `FIXTURE_RATE`."""


def open_recording(
    path: Path, *, user_channel: UserChannel = "left"
) -> tuple[Recording, list[Notice]]:
    """Open ``path`` and check its layout (header only).

    Raises:
        CallImportError: Missing, not audio soundfile reads, or not mono/stereo.
    """
    require_extra("soundfile", extra="voice", feature="Importing a call's recording")
    import soundfile

    if not path.is_file():
        raise CallImportError(f"{path}: recording not found")
    try:
        info = soundfile.info(str(path))
    except (soundfile.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        raise CallImportError(
            f"{path}: not an audio file soundfile can read ({exc}); give the OGG/Opus file "
            "LiveKit's recorder wrote (audio.ogg) or a WAV of the same stereo layout"
        ) from None
    notices: list[Notice] = []
    if info.channels == 2:
        channel = 0 if user_channel == "left" else 1
    elif info.channels == 1:
        channel = 0
        notices.append(
            Notice(
                text=f"{path.name} is mono: its one channel is taken as the user's. If it is a "
                "mix of both sides, the fixtures hold the agent's voice too; LiveKit's "
                "recorder writes stereo (user left, agent right)"
            )
        )
    else:
        raise CallImportError(
            f"{path}: {info.channels} channels; the importer reads LiveKit's stereo layout (user "
            "left, agent right) or a mono recording of the user"
        )
    if info.frames <= 0:
        raise CallImportError(f"{path}: the recording holds no audio")
    recording = Recording(
        path=path,
        sample_rate=int(info.samplerate),
        channels=int(info.channels),
        frames=int(info.frames),
        channel=channel,
    )
    return recording, notices


def _windows(conversation: ImportedCall) -> dict[int, tuple[Span, Span]]:
    """Per 1-based turn that was spoken and timed: (speech, window to cut), the window
    widened by the margins but kept clear of the neighbouring user turns."""
    timed = [
        (number, turn.span)
        for number, turn in enumerate(conversation.turns, 1)
        if turn.spoken and turn.span is not None
    ]
    out: dict[int, tuple[Span, Span]] = {}
    for position, (number, span) in enumerate(timed):
        start = max(0.0, span.start_s - LEAD_S)
        end = span.end_s + TAIL_S
        if position > 0:
            start = max(start, min(timed[position - 1][1].end_s, span.start_s))
        if position + 1 < len(timed):
            following = timed[position + 1][1].start_s
            guarded = following - NEXT_TURN_GUARD_S
            end = min(end, guarded if guarded > span.end_s else max(span.end_s, following))
        out[number] = (span, Span(start, max(start, end)))
    return out


def cut_turns(
    conversation: ImportedCall, recording: Recording
) -> tuple[dict[int, Cut], list[Notice]]:
    """Cut every spoken, timed user turn out of ``recording``.

    Returns the cuts by 1-based turn, and a notice for each spoken turn that could not be cut
    (no speaking times, past the end of the recording, nothing audible in its window): those
    turns are left to the synthesizer.
    """
    notices: list[Notice] = []
    if not conversation.timeline_is_recording:
        raise CallImportError(
            "the session report has no audio_recording_started_at, so its speaking times "
            "cannot be placed on the recording: the session did not record (start it with "
            "record={'audio': True, ...}), or the report is of another session. Import "
            "without --recording to synthesize the turns instead"
        )
    windows = _windows(conversation)
    duration = recording.duration_s
    spans = [t.span for t in conversation.turns if t.span is not None]
    spans += [u.span for u in conversation.greeting if u.span is not None]
    spans += [u.span for t in conversation.turns for u in t.replies if u.span is not None]
    timeline_end = max((s.end_s for s in spans), default=0.0)
    if timeline_end > duration + 0.05:
        notices.append(
            Notice(
                text=f"the recording {recording.path.name} is {duration:.2f} s long, shorter "
                f"than the report's timeline (speech until {timeline_end:.2f} s): it was cut "
                "short, or it is another session's; turns past its end are synthesized instead"
            )
        )
    cuts: dict[int, Cut] = {}
    for number, turn in enumerate(conversation.turns, 1):
        if not turn.spoken:
            continue
        if number not in windows:
            notices.append(
                Notice(
                    text="the report has no speaking times for this spoken message "
                    "(metrics.started_speaking_at), so its audio cannot be found in the "
                    "recording; the turn's text is synthesized instead",
                    turn=number,
                )
            )
            continue
        speech, window = windows[number]
        if speech.end_s > duration:
            notices.append(
                Notice(
                    text=f"the user spoke at {speech}, past the end of the recording "
                    f"({duration:.2f} s); the turn's text is synthesized instead",
                    turn=number,
                )
            )
            continue
        clip = recording.read(window)
        voiced, frame = voiced_frames(clip)
        if len(voiced) * frame / clip.sample_rate < MIN_VOICED_S:
            notices.append(
                Notice(
                    text=f"no audio in its window: the user channel of {recording.path.name} "
                    f"is silent over {window} where the report says the user spoke ({speech}); "
                    "the turn's text is synthesized instead (check that the recording is this "
                    "session's)",
                    turn=number,
                )
            )
            continue
        cuts[number] = Cut(turn=number, window=window, clip=resample(clip, FIXTURE_RATE))
    return cuts, notices
