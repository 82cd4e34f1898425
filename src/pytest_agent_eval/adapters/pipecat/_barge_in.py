"""What a Pipecat barge-in run shows: the interrupting turn's `BargeIn` record (did the bot
stop, how fast, what it had said), and how far a real-time run fell behind the audio while the
cut fell, which decides whether the words said within that lag are the audio's doing or the
CPU's. `PipecatConversation` (`_adapter`) runs the barge-in and reads both.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...models import BargeIn
from ._record import TurnLog, join_text
from ._session import BargeInRun

__all__: list[str] = []


_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class _Yield:
    """How the interrupted reply answered the interruption, on the pipeline's clock."""

    quiet_at: float | None
    """When the reply first went quiet from the cut on (the first ``InterruptionFrame`` at or
    after the interrupting speech was due; at the cut itself when it was already quiet then: a
    pause between two parts of it). None: no interruption reached the pipeline, or the reply
    never went quiet."""
    resumed: bool
    """It spoke again after it went quiet."""
    stop_at: float | None
    """When it went quiet for good because it was interrupted: its first quiet moment when it
    never spoke again, else the halt after its last words (None: it did not stop so)."""


def _yield_of(run: BargeInRun, second: TurnLog) -> _Yield:
    """Read from the interrupted reply's starts, stops and cuts after its turn was split
    (`TurnLog.carried`). A stop before the cut (a reply of two TTS contexts pauses between
    them) is no answer to the interruption; a stop that was no halt (the reply's own end, an
    interruption a processor swallowed) is not the bot stopping for it."""
    due = run.due_at
    assert due is not None
    carried = run.first.carried
    cut = next((at for at, kind in carried if kind == "cut" and at >= due - _EPS), None)
    if cut is None:
        return _Yield(quiet_at=None, resumed=False, stop_at=None)
    before = [kind for at, kind in carried if kind != "cut" and at < cut - _EPS]
    speaking = not before or before[-1] == "start"  # it was speaking at the split
    quiet_at = (
        next((at for at, kind in carried if kind == "stop" and at >= cut - _EPS), None)
        if speaking
        else cut
    )
    if quiet_at is None:
        return _Yield(quiet_at=None, resumed=False, stop_at=None)
    starts = [at for at, kind in carried if kind == "start" and at > quiet_at + _EPS]
    if not starts:
        halted = not speaking or quiet_at in second.halts
        return _Yield(quiet_at=quiet_at, resumed=False, stop_at=quiet_at if halted else None)
    end = next((at for at, kind in carried if kind == "stop" and at > starts[-1]), None)
    stop_at = end if end is not None and end in second.halts else None
    return _Yield(quiet_at=quiet_at, resumed=True, stop_at=stop_at)


def _played_s(first: TurnLog) -> float | None:
    """Seconds the interrupted reply played in all: its spans of speech before and after its
    turn was split, the pauses between them not counted."""
    toggles = sorted(
        [(at, "start") for at in first.bot_started]
        + [(at, "stop") for at in first.bot_stopped]
        + [(at, kind) for at, kind in first.carried if kind != "cut"]
    )
    played, since = 0.0, None
    for at, kind in toggles:
        if kind == "start" and since is None:
            since = at
        elif kind == "stop" and since is not None:
            played, since = played + at - since, None
    if since is not None and first.last_audio_at is not None:
        played += max(0.0, first.last_audio_at - since)
    return round(played, 3) if toggles else None


def _barge_record(run: BargeInRun, second: TurnLog) -> BargeIn:
    due = run.due_at
    assert due is not None
    answer = _yield_of(run, second)
    stopped = answer.stop_at is not None
    stop_latency = round(answer.stop_at - due, 3) if answer.stop_at is not None else None
    speech_s = round(second.speech_ends[0] - due, 3) if second.speech_ends else None
    minimum = second.vad_start_secs
    precondition = None
    if speech_s is not None and minimum is not None and speech_s < minimum:
        precondition = (
            f"the interrupting speech lasts {speech_s:.2f} s, shorter than the VAD's start_secs "
            f"({minimum:g} s), so the pipeline cannot take it as the user speaking; use a "
            "longer utterance"
        )
    said = join_text(run.first.reply_pieces())
    return BargeIn(
        precondition=precondition,
        reply_position_s=round(run.reply_position_s or 0.0, 3),
        speech_s=speech_s,
        min_interruption_s=minimum,
        stopped=stopped,
        stop_latency_s=stop_latency,
        resumed=answer.resumed,
        played_s=_played_s(run.first),
        interrupted_text=said or None,
        quiet_after_s=round(answer.quiet_at - due, 3) if answer.quiet_at is not None else None,
    )


def _barge_lag(run: BargeInRun, second: TurnLog) -> tuple[float, list[str]]:
    """How far the pipeline ran behind the audio while the interruption cut the reply, and
    the words of the reply that left the speaker within that lag before the cut.

    The lag is the microphone's lateness (its pushes ran after they were due, so the VAD
    heard the speech late) plus the compute from the VAD hearing the user start to the bot's
    audio stopping (no time on the virtual clock). A word said within it was said because the
    run was behind: with no lag the cut would have come before it."""
    due = run.due_at
    quiet = _yield_of(run, second).quiet_at
    heard = [
        at
        for at, name in second.events
        if name == "VADUserStartedSpeakingFrame" and due is not None and at >= due - _EPS
    ]
    if quiet is None:
        return run.behind_s, []
    lag = run.behind_s + (max(0.0, quiet - heard[0]) if heard else 0.0)
    decided = [text for at, text, _ in run.first.reply_pieces() if quiet - lag < at <= quiet]
    return lag, decided
