"""A fixture whose speech the agent's VAD cannot find: whose fault it is, in one rule.

Clean, the fixture is bad (silent, too quiet, cut): no run could evaluate the agent, an ERROR
that asks for a new fixture. Under audio conditions the user asked for (a variant's noise,
its telephone line), the same fixture is fine (its clean self is heard) and the agent is what
failed: it never hears the caller in that condition, a FAIL naming the condition. Both voice
adapters (in process and room mode) ask this module, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import AdapterError, AgentFailedError
from ..models import AudioCondition, describe_conditions

__all__ = ["no_speech_error"]


def no_speech_error(
    which: str,
    path: Path,
    duration_s: float,
    conditions: Sequence[AudioCondition],
    *,
    consequence: str = "the agent would never get a turn",
) -> AdapterError:
    """The error for ``which`` (``the session's VAD``) hearing no speech in ``path`` after
    ``conditions``: an `AgentFailedError` naming the conditions when there are any, else an
    `AdapterError` that blames the fixture."""
    heard = f"{which} hears no speech in audio fixture {path} ({duration_s:.2f} s)"
    if conditions:
        # Say what was observed (a scan of the conditioned audio, nothing streamed to the
        # agent) and what was not (the clean fixture, other VADs), not more.
        return AgentFailedError(
            f"under the audio conditions {describe_conditions(conditions)}, {heard}: the "
            "agent would never get a turn, so it fails this condition. Observed: that VAD's "
            "scan of the audio after the conditions, before any of it was streamed (the agent "
            "did not run on it). Not observed: whether the clean fixture is heard (its own "
            "run says; if that fails too, the fixture is at fault), nor whether another VAD or "
            "a milder condition would hear the caller"
        )
    return AdapterError(
        f"{heard}; {consequence}. Re-create the fixture, or check the VAD's activation threshold"
    )
