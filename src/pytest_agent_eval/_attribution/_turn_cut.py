"""The turn-taking evidence of failure attribution (issue 35): whether the agent's VAD and
turn detection ended the caller's turn while the caller still had speech to come.

The turn's timeline holds what the agent's VAD found (``vad_speech``) and when it decided the
caller was done (``end_of_turn``), in order, on whatever clock the turn ran. An end of turn
with more of the caller's speech found after it, in a turn the next one does not barge into, is a cut: the
agent answered part of what the caller said (a pause mid-sentence taken for the end). The
order is what counts, not the times, so the evidence is the same at max speed and in real
time. Nothing is rerun here; the attribution pairs the cut with the same audio rerun with the
turn committed at the fixture's end (manual turn detection), to name ``turn_taking``.
"""

from __future__ import annotations

from ..models import TurnResult
from ..models._attribution import Evidence
from ..voice._speech import spoken_text

__all__ = ["turn_cut_evidence"]


def turn_cut_evidence(failing: TurnResult, *, barged_into: bool) -> Evidence | None:
    """``found`` when the agent ended the failing audio turn before the caller's speech was
    over, with what its STT had heard by then when it reported its segments; None when it did
    not, or when it cannot be told (a text turn, no timeline, or ``barged_into``: the next
    turn speaks over this one's reply, so speech after its end of turn is that turn's). The
    caller's own rest of the sentence may interrupt the reply to its first half: that is
    still this turn's speech."""
    timeline = failing.timeline
    if timeline is None or failing.audio is None or barged_into:
        return None
    events = timeline.events
    speech = [e.t_start for e in events if e.kind == "vad_speech"]
    ends = [e.t_start for e in events if e.kind == "end_of_turn"]
    cut = next((end for end in ends if any(start > end for start in speech)), None)
    if cut is None:
        return None
    later = sum(1 for start in speech if start > cut)
    segments = [s for s in failing.heard_segments if s.strip()]
    heard = segments[0] if len(segments) > 1 else None
    said = f" after hearing {heard!r}" if heard else ""
    return Evidence(
        "turn_cut",
        "found",
        turn=failing.index,
        heard=heard,
        intended=spoken_text(failing.user) if heard else None,
        detail=f"turn {failing.index + 1}: the agent ended the caller's turn at {cut:.2f} s"
        f"{said}, with {later} more stretch{'es' if later > 1 else ''} of the caller's "
        f"speech after it ({timeline.clock} clock), so it answered part of the turn",
    )
