"""What a Pipecat barge-in run shows: the interrupting turn's `BargeIn` record (did the bot
stop, how fast, what it had said), and how far a real-time run fell behind the audio while the
cut fell, which decides whether the words said within that lag are the audio's doing or the
CPU's. `PipecatConversation` (`_adapter`) runs the barge-in and reads both.
"""

from __future__ import annotations

from ...models import BargeIn
from ._record import TurnLog, join_text
from ._session import BargeInRun

__all__: list[str] = []


def _stops(run: BargeInRun, second: TurnLog) -> list[float]:
    """When the bot's audio stopped once the interruption came: from the first
    ``InterruptionFrame`` at or after the interrupting speech was due. A stop before it (a reply
    of two TTS contexts pauses between them) is no answer to the interruption."""
    due = run.due_at
    assert due is not None
    cut = next((at for at in second.interruptions if at >= due - 1e-9), None)
    return [] if cut is None else [at for at in second.bot_stopped if at >= cut - 1e-9]


def _barge_record(run: BargeInRun, second: TurnLog) -> BargeIn:
    due = run.due_at
    assert due is not None
    stops = _stops(run, second)
    # The interrupted reply's audio after its first stop: it went quiet, then went on; it
    # stopped for good at the first stop after its last audio (as LiveKit's resumed reply).
    last_audio = run.first.last_audio_at
    resumed = bool(stops) and last_audio is not None and last_audio > stops[0] + 1e-9
    final = [at for at in stops if not resumed or last_audio is None or at >= last_audio]
    stopped = bool(final)
    stop_latency = round(final[0] - due, 3) if stopped else None
    speech_s = round(second.speech_ends[0] - due, 3) if second.speech_ends else None
    minimum = second.vad_start_secs
    precondition = None
    if speech_s is not None and minimum is not None and speech_s < minimum:
        precondition = (
            f"the interrupting speech lasts {speech_s:.2f} s, shorter than the VAD's start_secs "
            f"({minimum:g} s), so the pipeline cannot take it as the user speaking; use a "
            "longer utterance"
        )
    reply_start = run.first.first_audio_at
    ended = final[0] if final else last_audio
    played = (
        round(ended - reply_start, 3) if ended is not None and reply_start is not None else None
    )
    said = join_text(run.first.reply_pieces())
    return BargeIn(
        precondition=precondition,
        reply_position_s=round(run.reply_position_s or 0.0, 3),
        speech_s=speech_s,
        min_interruption_s=minimum,
        stopped=stopped,
        stop_latency_s=stop_latency,
        resumed=resumed,
        played_s=played,
        interrupted_text=said or None,
        quiet_after_s=round(stops[0] - due, 3) if stops else None,
    )


def _barge_lag(run: BargeInRun, second: TurnLog) -> tuple[float, list[str]]:
    """How far the pipeline ran behind the audio while the interruption cut the reply, and
    the words of the reply that left the speaker within that lag before the cut.

    The lag is the microphone's lateness (its pushes ran after they were due, so the VAD
    heard the speech late) plus the compute from the VAD hearing the user start to the bot's
    audio stopping (no time on the virtual clock). A word said within it was said because the
    run was behind: with no lag the cut would have come before it."""
    due = run.due_at
    stops = _stops(run, second)
    heard = [
        at
        for at, name in second.events
        if name == "VADUserStartedSpeakingFrame" and due is not None and at >= due - 1e-9
    ]
    if not stops:
        return run.behind_s, []
    lag = run.behind_s + (max(0.0, stops[0] - heard[0]) if heard else 0.0)
    cut = stops[0]
    decided = [text for at, text, _ in run.first.reply_pieces() if cut - lag < at <= cut]
    return lag, decided
