"""Before a voice eval runs: are its WAV fixtures present and fresh? Synthesize them, or say why not.

Runs before the conversation starts, so no agent cost is spent on stale audio. The check is the
replay one (`fixture_problems` with ``strict=False``): the recorded text and the requested voice
must match, engine versions need not, so CI can run on committed or cached fixtures without the
TTS engine installed. Pure: the caller (the pytest side) turns the answer into a fail or a skip.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..models import Transcript, VoiceSettings
from ._plan import FixtureProblem, Planner, display_path, fixture_statuses
from ._run import ensure_fixtures

__all__ = [
    "FixtureReadiness",
    "StaleAudioMode",
    "UnreadyFixtures",
    "check_fixtures",
    "unready_fixtures",
]

StaleAudioMode = Literal["fail", "skip", "synthesize"]
"""``stale_audio`` in ``[tool.agent_eval]``: what a missing or stale fixture does to the eval."""


@dataclass(frozen=True, slots=True)
class UnreadyFixtures:
    """The fixtures of a transcript that are not ready, and what that means for the eval."""

    problems: tuple[FixtureProblem, ...]

    @property
    def message(self) -> str:
        """A first line saying what is wrong (``audio fixtures not ready: 1 missing
        (tests/evals/audio/booking_t1.wav)``: pytest's short summary shows it, cut to the
        terminal's width), then every problem, one per line, each with its fix."""
        counts: dict[str, int] = {}
        for problem in self.problems:
            counts[problem.state.value] = counts.get(problem.state.value, 0) + 1
        first = display_path(self.problems[0].wav) if self.problems else ""
        more = ", ..." if len(self.problems) > 1 else ""
        said = ", ".join(f"{n} {state}" for state, n in counts.items())
        head = f"audio fixtures not ready: {said} ({first}{more})"
        return head + "\n" + "\n".join(p.message for p in self.problems)

    @property
    def synthesis_fixes_some(self) -> bool:
        """True when synthesizing would fix at least one of them (a missing or stale
        synthesized fixture); never for a broken recording or a bad pause marker."""
        return any(p.fix_command for p in self.problems)


@dataclass(frozen=True, slots=True)
class FixtureReadiness:
    """What a voice transcript's fixtures mean for its eval: what is not ready (None: all
    are), and notes on usable ones worth a remark (a fixture made by pytest-agent-eval 0.3),
    which the reports show; a note is never a warning, so ``filterwarnings = ["error"]``
    projects run."""

    unready: UnreadyFixtures | None
    notes: tuple[str, ...] = ()


def check_fixtures(
    transcript: Transcript, voice: VoiceSettings | None, mode: StaleAudioMode | str
) -> FixtureReadiness:
    """`unready_fixtures`, with the notes on the fixtures that are ready."""

    def statuses() -> tuple[list[FixtureProblem], list[str]]:
        problems, notes = fixture_statuses(transcript, Planner(voice), strict=False)
        return problems, list(notes)

    problems, notes = statuses()
    if problems and mode == "synthesize":
        ensure_fixtures([transcript], voice).raise_for_failures()
        problems, notes = statuses()
    unready = UnreadyFixtures(tuple(problems)) if problems else None
    return FixtureReadiness(unready, tuple(dict.fromkeys(notes)))


def unready_fixtures(
    transcript: Transcript, voice: VoiceSettings | None, mode: StaleAudioMode | str
) -> UnreadyFixtures | None:
    """None when every audio fixture of ``transcript`` is ready, else what is wrong with them.

    With ``mode="synthesize"``, missing and stale fixtures are made first and only what is still
    wrong afterwards is returned.

    Args:
        transcript: A voice transcript.
        voice: ``[tool.agent_eval.voice]``, the layer under the transcript's own settings.
        mode: ``"fail"``, ``"skip"`` or ``"synthesize"``.

    Raises:
        AgentEvalError: A synthesis failed, or a backend's extra is missing.
    """
    return check_fixtures(transcript, voice, mode).unready
