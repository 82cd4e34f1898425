"""What one turn-taking item measured and how each budget fared: the record reports and the
results file show (under ``turn_taking``), carried on the item's `EvalRecord` (so it travels
with the report, through xdist too). Plain data, in models: `_records` imports nothing above
them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ._results import EvalResult
from ._timeline import Timeline, TimelineClock, TimelineEvent, TimelineKind

__all__ = ["BudgetVerdict", "CallerSpan", "Metric", "StimulusMiss", "TurnTakingRecord"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Metric:
    """One turn-taking figure."""

    name: str
    value: float | None
    """None when no stimulus could measure it."""
    count: int
    """How many observations it is computed over (the denominator, or the latencies)."""
    hits: int | None = None
    """The numerator, for a rate."""
    interval: tuple[float, float] | None = None
    """95% interval, when there is one."""
    unit: str = ""

    @property
    def measured(self) -> bool:
        return self.value is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "count": self.count,
            "hits": self.hits,
            "interval": list(self.interval) if self.interval is not None else None,
            "unit": self.unit,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetVerdict:
    """One budget, checked."""

    key: str
    """As written: ``pause_takeover_rate_max``."""
    metric: str
    bound: Literal["max", "min"]
    limit: float
    value: float | None
    verdict: Literal["passed", "failed", "error"]
    reason: str
    location: str = ""

    @property
    def text(self) -> str:
        """``<= 0.1``: how reports show the budget."""
        return f"{'<=' if self.bound == 'max' else '>='} {self.limit:g}"

    def check(self) -> EvalResult:
        """As a check of the item's result (what its verdict, gates and reports read)."""
        return EvalResult(
            passed=self.verdict == "passed",
            errored=self.verdict == "error",
            reasoning=self.reason,
            name=f"turn_taking.{self.key}",
            key=f"turn_taking.budgets.{self.key}",
            location=self.location or None,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CallerSpan:
    """One sound of a stimulus clip, on the clip's clock (seconds from its start)."""

    kind: str
    """``speech``, ``filler``, ``pause``, ``backchannel``, ``noise`` or ``side_speech``."""
    start_s: float
    end_s: float
    text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class StimulusMiss:
    """A stimulus the agent got wrong (a takeover, a barge-in not yielded to, a turn never
    answered, as the metrics count it), with what the reports draw its timeline from: the
    caller's sounds, what the agent did and when, and the clip to play."""

    stimulus_id: str
    seed: int
    """The seed of the pack it came from (two seeds' packs share stimulus ids)."""
    text: str
    """The stimulus as written, markers included: ``Uh-huh. [pause 1.2s] ...``."""
    expect: str
    """``respond``, ``keep_speaking`` or ``yield``."""
    what: str
    """What went wrong, in words: ``took the turn at 1.43 s, 0.82 s before the caller was
    done``."""
    audio: str
    """The clip as rendered (under the rootdir's cache), for the reports' player."""
    clip_s: float
    tail_s: float
    """Seconds of silence played after the clip."""
    caller: tuple[CallerSpan, ...] = ()
    agent_speaking: bool = False
    """The agent was speaking its line when the clip began."""
    caller_end_s: float = 0.0
    agent_turn_start_s: float | None = None
    agent_stopped_s: float | None = None
    agent_resumed: bool = False

    def timeline(self, clock: TimelineClock) -> Timeline:
        """The stimulus as a turn's `Timeline` (what the reports draw): the clip streamed and
        the caller's sounds in the user's lanes, the agent's line and answer in its lane, its
        stop as an interruption (``false``, or ``resumed``, over a sound it should have talked
        through). When the agent's line or answer ended is not kept: such a span is open.
        Neither are its VAD and end-of-turn marks: they are named unobserved, not drawn as
        absent."""
        end = self.clip_s + self.tail_s
        stop = None if self.agent_stopped_s is None else max(0.0, self.agent_stopped_s)

        def event(
            kind: TimelineKind, start: float, until: float | None, /, **detail: Any
        ) -> TimelineEvent:
            return TimelineEvent(kind=kind, t_start=start, t_end=until, detail=detail)

        events = [event("stream", 0.0, end, clip=self.audio)]
        events += [
            event("user_speech", span.start_s, span.end_s, sound=span.kind, text=span.text)
            for span in self.caller
            if span.kind != "pause"
        ]
        answer = self.agent_turn_start_s
        if self.agent_speaking:
            line_end = stop if stop is not None and (answer is None or stop <= answer) else None
            events.append(event("agent_speech", 0.0, line_end, text="its line"))
        if stop is not None:
            if self.expect == "keep_speaking":
                kind = "resumed" if self.agent_resumed else "false"
            else:
                kind = "real"
            events.append(event("interruption", stop, None, kind=kind))
        if answer is not None:
            answer = max(0.0, answer)
            cut = stop if stop is not None and stop >= answer else None
            events.append(event("agent_speech", answer, cut, text="its answer"))
        events.sort(key=lambda e: e.t_start)
        return Timeline(events=events, clock=clock, unobserved=["vad_speech", "end_of_turn"])


MISSES_KEPT = 20
"""At most this many misses of one item are kept in its record (`TurnTakingRecord.missed`
counts them all): the first ones, in the order they were played."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnTakingRecord:
    """One category of a ``turn_taking:`` file played to the agent."""

    spec_id: str
    category: str
    framework: str
    """``livekit`` or ``pipecat``."""
    clock: str
    """``virtual``: the framework's timers ran in audio time."""
    stimuli: int
    seeds: tuple[int, ...] = ()
    voices: tuple[str, ...] = ()
    lines: tuple[str, ...] = ("clean",)
    """The line conditions each stimulus was heard over (``lines:``)."""
    levels_db: tuple[float, ...] = (0.0,)
    """The caller levels each stimulus was heard at (``levels_db:``)."""
    audio_s: float = 0.0
    """Seconds of stimulus audio played (clips and their tails)."""
    wall_s: float = 0.0
    """Wall seconds the category took."""
    metrics: tuple[Metric, ...] = ()
    """The metrics this category feeds, in report order."""
    budgets: tuple[BudgetVerdict, ...] = ()
    observed: int | None = None
    """How many stimuli were observed when an error ended the item before the last (the rest
    were never judged); None when every one of ``stimuli`` was."""
    missed: int = 0
    """How many of the observed stimuli the agent got wrong."""
    misses: tuple[StimulusMiss, ...] = ()
    """The first `MISSES_KEPT` of them, each with its timeline."""
