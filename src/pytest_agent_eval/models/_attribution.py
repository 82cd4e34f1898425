"""Why a failed voice run failed: the record the attribution writes on the run (issue 35).

The record lives with the results (a `RunResult` holds it, and it travels with it through xdist
and into the results file); the counterfactuals that fill it are `pytest_agent_eval._attribution`.
An attribution never changes a verdict: it only explains one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

__all__ = ["Attribution", "Cause", "Counterfactual", "Evidence", "EvidenceVerdict"]

Cause: TypeAlias = Literal[
    "hearing", "turn_taking", "agent_logic", "tool", "speech_output", "judge", "undetermined"
]
"""The component a failed run is put down to (docs/attribution.md has what each means)."""

Counterfactual: TypeAlias = Literal[
    "tool_record",
    "heard_words",
    "fixture_hearing",
    "text_rerun",
    "judge_rerun",
    "reply_audio",
    "turn_cut",
    "committed_turn",
]
"""What one piece of evidence rests on: the run's record of its tool calls (nothing rerun),
what the agent's speech recognizer heard against the fixture's known words (nothing rerun), the
conversation rerun as audio with the agent's STT replaced by the stand-in that hears the
fixture's known words (everything else the agent's own), the conversation rerun with its
turns given as text to the same agent, a failed judged check asked again on the same reply,
the agent's reply audio transcribed offline against its reply text, where the agent's turn
detection ended the caller's turn against where the fixture's speech ends, or the same audio
rerun with each caller's turn committed at its fixture's end (manual turn detection)."""

EvidenceVerdict: TypeAlias = Literal["passed", "failed", "crashed", "error", "found", "none"]
"""A rerun's verdict (``passed``, ``failed``, ``crashed``, ``error``), or for a look at the
record, whether it found what it looked for (``found``, ``none``)."""


@dataclass
class Evidence:
    """One fact an attribution rests on.

    Args:
        counterfactual: What was tried (`Counterfactual`).
        verdict: How it came out (`EvidenceVerdict`).
        turn: The zero-based index of the turn it is about (the failing turn, the turn whose
            tool failed, the turn that was misheard), or None for the whole run.
        heard: What the agent's speech recognizer heard, where words differ: only the words
            that differ (``fifty``).
        intended: The fixture's own words at the same place (``fifteen``).
        tool: The tool whose call failed.
        error: The tool's error, or why a rerun could not say anything.
        detail: The fact in one sentence, for reports.
        audio_in: For an audio rerun, the audio it streamed on the turn (the fixture, or the
            copy saved with ``--agent-eval-save-audio``), to hear beside the run's own.
        audio_out: For an audio rerun, its reply audio on the turn, when the adapter saves
            reply audio (``audio_out_dir``).
    """

    counterfactual: Counterfactual
    verdict: EvidenceVerdict
    turn: int | None = None
    heard: str | None = None
    intended: str | None = None
    tool: str | None = None
    error: str | None = None
    detail: str = ""
    audio_in: str | None = None
    audio_out: str | None = None


@dataclass
class Attribution:
    """The cause of a failed run, with the evidence it rests on.

    Args:
        cause: The component the failure is put down to (`Cause`).
        evidence: What was looked at or rerun, in the order it was tried.
        turn: The zero-based index of the run's first failing turn, or None when no turn
            failed (a greeting or a whole-call check did).
    """

    cause: Cause
    evidence: list[Evidence] = field(default_factory=list)
    turn: int | None = None

    def describe(self) -> str:
        """One line for reports: ``hearing — heard "fifty", intended "fifteen"``."""
        return f"{self.cause} — {self._reason()}"

    def _reason(self) -> str:
        if self.cause == "tool":
            found = next((e for e in self.evidence if e.tool is not None), None)
            if found is not None:
                return f"tool {found.tool!r} failed: {found.error or 'no error text'}"
        if self.cause == "speech_output":
            said = [e for e in self.evidence if e.counterfactual == "reply_audio" and e.heard]
            if said:
                return "; ".join(
                    f'the reply audio says "{e.heard}", its text "{e.intended or ""}"' for e in said
                )
        if self.cause == "turn_taking":
            cut = next((e for e in self.evidence if e.counterfactual == "turn_cut"), None)
            if cut is not None:
                return cut.detail
        if self.cause == "hearing":
            misheard = [
                e
                for e in self.evidence
                if e.counterfactual == "heard_words" and (e.heard or e.intended) is not None
            ]
            if misheard:
                return "; ".join(
                    f'heard "{e.heard or ""}", intended "{e.intended or ""}"' for e in misheard
                )
        decisive = next((e for e in reversed(self.evidence) if e.detail), None)
        return decisive.detail if decisive is not None else "nothing was tried"
