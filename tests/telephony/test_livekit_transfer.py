"""``transferred_to`` on a real in-process LiveKit session: an agent that cold-transfers the
caller the way LiveKit's docs do (``ctx.transfer_sip_participant``) passes; the planted bug
(the wrong number) fails naming where the call went; a warm transfer, not observed yet,
errors instead of passing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("livekit.agents", reason="needs the livekit extra")

from livekit.agents import Agent, AgentSession, RunContext, function_tool, get_job_context

from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.models import TranscriptResult


class PharmacyAgent(Agent):
    def __init__(self, number: str) -> None:
        super().__init__(instructions="You answer a pharmacy's phone line.")
        self.number = number

    @function_tool()
    async def transfer_to_pharmacist(self, context: RunContext) -> str:
        """Transfer the caller to the pharmacist."""
        ctx = get_job_context()
        caller = next(iter(ctx.room.remote_participants.values()))
        await ctx.transfer_sip_participant(caller, self.number)
        return "transferred"


def _run(expect: str, number: str) -> TranscriptResult:
    # Imported here: the adapter loads Silero, which collecting this folder must not.
    from pytest_agent_eval.adapters.livekit import (
        LiveKitAdapter,
        Rule,
        ScriptedLLM,
        eval_session_kwargs,
    )

    def make_session() -> tuple[AgentSession, Agent]:
        llm = ScriptedLLM(
            [Rule(r"pharmacist", tool="transfer_to_pharmacist", reply="Transferring you.")],
            default_reply="Pharmacy, how can I help?",
        )
        return AgentSession(llm=llm, **eval_session_kwargs()), PharmacyAgent(number)

    text = (
        "id: to_the_pharmacist\nturns:\n  - user: The pharmacist, please.\n"
        f"    expect:\n      transferred_to: {expect}\n"
    )
    transcript = load_transcript_text(text, path=Path("transfer.yaml"))
    return asyncio.run(run_transcript(transcript, LiveKitAdapter(make_session, timeout_s=30.0)))


def _check(result: TranscriptResult):  # type: ignore[no-untyped-def]
    (turn,) = result.runs[0].turns
    return next(e for e in turn.evaluations if e.name == "transferred_to")


def test_a_cold_transfer_to_the_number_passes() -> None:
    result = _run('"+15550111"', "tel:+15550111")
    assert result.passed, _check(result).reasoning
    assert _check(result).location == "transfer.yaml:5"


def test_a_transfer_elsewhere_fails_naming_where_it_went() -> None:
    result = _run('"tel:+15550111"', "tel:+15550999")
    check = _check(result)
    assert not result.passed and not check.errored
    assert "transferred the call to tel:+15550999, expected tel:+15550111" in check.reasoning


def test_a_warm_transfer_errors_and_never_passes() -> None:
    result = _run('{to: "tel:+15550111", kind: warm}', "tel:+15550111")
    check = _check(result)
    assert check.errored and "warm transfers" in check.reasoning
    assert result.runs[0].verdict == "error"
