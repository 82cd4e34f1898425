"""The judge counterfactual of failure attribution (issue 35): a failed judged check asked
again, on the same reply, with the verdict cache off.

A judge is a model: asked the same question twice it may answer differently. When every check
that failed on the failing turn is a judge's, and asked again they all pass, the failure is the
judge's own (``judge``); when a judge says no again, the reply is taken as judged and the other
counterfactuals decide. Nothing of the agent is rerun: the judge sees the reply, the tool calls
and the conversation the run recorded.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from .._runner import RunSettings, assistant_messages, check_again
from ..models import EvalResult, Message, RunResult, Transcript, TurnContext, TurnResult
from ..models._attribution import Evidence
from ..voice._speech import spoken_text

__all__ = ["judged_only", "rejudge"]


def _said_no(evaluation: EvalResult) -> bool:
    return not evaluation.passed and not evaluation.errored


def judged_only(failing: TurnResult, failed: list[EvalResult]) -> bool:
    """True when every check in ``failed`` (the failing turn's no's) is a judge's: a judge
    names the model that gave its verdict; a deterministic check names none."""
    return bool(failed) and failing.error is None and all(e.model is not None for e in failed)


def turn_context(run: RunResult, failing: TurnResult, transcript: Transcript) -> TurnContext:
    """The context the failing turn's checks saw, rebuilt from the run's record: the
    conversation so far (what each turn said, its tool calls and replies) and the turn's
    reply, calls and what the agent's STT heard."""
    history: list[Any] = []  # Messages: dicts with attributes
    for turn in run.turns:
        if turn.index > failing.index:
            break
        audio = Path(turn.audio) if turn.audio is not None else None
        history.append(Message("user", spoken_text(turn.user), audio=audio))
        if turn.index < failing.index:
            history.extend(assistant_messages(turn.reply, turn.tool_calls, turn.index))
    return TurnContext(
        user=spoken_text(failing.user),
        history=history,
        turn_index=failing.index,
        run_index=run.run_index,
        transcript_id=transcript.id,
        audio=Path(failing.audio) if failing.audio is not None else None,
        **failing.agent_turn_values(),
    )


async def rejudge(
    run: RunResult,
    failing: TurnResult,
    failed: list[EvalResult],
    transcript: Transcript,
    settings: RunSettings,
) -> Evidence:
    """Ask the judges of ``failed`` (every one a judge's no on ``failing``) once more, the
    verdict cache off: ``passed`` when every one now says yes (the verdict flipped),
    ``failed`` when one says no again, ``error`` when one could not answer."""
    ctx = turn_context(run, failing, transcript)
    fresh = replace(settings, judge=replace(settings.judge, cache_dir=None))
    wanted = {e.key or e.name for e in failed}
    again = await check_again(transcript, ctx, wanted, fresh)
    where = f"turn {failing.index + 1}"
    if len(again) != len(wanted):
        return Evidence(
            "judge_rerun",
            "error",
            turn=failing.index,
            error="a judged check could not be found again",
            detail=f"the judged checks of {where} could not all be asked again",
        )
    labels = ", ".join(sorted(wanted))
    if any(e.errored for e in again):
        why = "; ".join(e.reasoning for e in again if e.errored)
        return Evidence(
            "judge_rerun",
            "error",
            turn=failing.index,
            error=why,
            detail=f"asked again, the judge of {where} could not answer: {why}",
        )
    still = [e for e in again if not e.passed]
    if still:
        said = "; ".join(e.reasoning for e in still)
        return Evidence(
            "judge_rerun",
            "failed",
            turn=failing.index,
            detail=f"asked again, the judge of {where} says no again ({labels}): {said}",
        )
    said = "; ".join(e.reasoning for e in again)
    return Evidence(
        "judge_rerun",
        "passed",
        turn=failing.index,
        detail=f"asked again on the same reply, the judge of {where} says yes ({labels}): {said}",
    )
