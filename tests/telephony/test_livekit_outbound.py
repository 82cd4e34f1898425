"""An outbound call in process (``phone: {direction: outbound}``) on a real LiveKit
AgentSession: an agent written from LiveKit's docs places its call with
``ctx.api.sip.create_sip_participant(..., wait_until_answered=True)``; a person answering
joins the room as LiveKit's SIP service puts a callee there, and a busy line or one nobody
answers raises what LiveKit raises over real SIP (tests/sip measures it), so the agent's own
error handling runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("livekit.agents", reason="needs the livekit extra")

from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.models import RunResult

PHONE_NUMBER = "+15550177"
"""The number livekit_dialer_agent.py dials (imported in the tests: the agent's module loads
Silero, which collecting this folder must not)."""

HUMAN = """
id: reminder
phone: {direction: outbound}
far_end: human
turns:
  - user: "Yes, Tuesday works for me."
    expect:
      reply_contains_all: ["Tuesday at 3"]
"""

REFUSED = """
id: refused
phone: {direction: outbound}
far_end:
  kind: KIND
  expect:
    call_ended: true
"""


@pytest.fixture
def buggy(monkeypatch: pytest.MonkeyPatch) -> None:
    import livekit_dialer_agent

    monkeypatch.setattr(livekit_dialer_agent, "BUGGY", True)


def _run(text: str, agents: list[Any] | None = None) -> RunResult:
    # Imported here: the adapter loads Silero, which collecting this folder must not.
    import livekit_dialer_agent

    from pytest_agent_eval.adapters.livekit import LiveKitAdapter

    def make_session() -> Any:
        session, agent = livekit_dialer_agent.make_session()
        if agents is not None:
            agents.append(agent)
        return session, agent

    transcript = load_transcript_text(text, path=Path("call.yaml"))
    result = asyncio.run(run_transcript(transcript, LiveKitAdapter(make_session, timeout_s=30.0)))
    return result.runs[0]


def test_a_person_answers_the_agent_s_call_and_the_call_goes_on() -> None:
    import livekit_dialer_agent

    agents: list[Any] = []
    run = _run(HUMAN, agents)
    assert run.passed, (run.error, [t.evaluations for t in run.turns], run.evaluations)
    hello, _ = run.turns
    assert hello.user == "Hello?" and "Tuesday at 3" in hello.reply
    assert hello.metadata["sip_dials"] == [{"number": PHONE_NUMBER, "outcome": "answered"}]
    (phone,) = run.evaluations
    assert phone.reasoning == f"the agent dialled {PHONE_NUMBER} (answered)"
    # The callee joined as LiveKit's SIP service puts one in the room.
    callee = agents[0].callee
    assert callee is not None and callee.identity == "phone_user"
    assert callee.attributes["sip.phoneNumber"] == PHONE_NUMBER
    assert callee.attributes["sip.callStatus"] == "active"
    assert callee.attributes["sip.trunkID"] == livekit_dialer_agent.OUTBOUND_TRUNK_ID


@pytest.mark.parametrize(
    ("kind", "dial", "reason"),
    [
        (
            "busy",
            {"number": PHONE_NUMBER, "outcome": "busy", "sip_status_code": 486},
            "INVITE failed: sip status: 486: Busy Here",
        ),
        ("no_answer", {"number": PHONE_NUMBER, "outcome": "no_answer"}, "sip request timed out"),
    ],
)
def test_a_call_that_is_not_answered_fails_as_over_sip_and_the_agent_hangs_up(
    kind: str, dial: dict[str, Any], reason: str
) -> None:
    run = _run(REFUSED.replace("KIND", kind))
    assert run.passed, (run.error, run.crash, run.evaluations)
    (turn,) = run.turns
    assert turn.reply == ""  # the line never connected: nobody heard anything
    assert turn.metadata["sip_dials"] == [dial]
    # The agent's except-branch ran, with LiveKit's message.
    assert turn.metadata["hang_up"] == f"ctx.shutdown('call failed: twirp error unknown: {reason}')"


def test_an_agent_that_stays_on_a_busy_line_fails(buggy: None) -> None:
    run = _run(REFUSED.replace("KIND", "busy"))
    assert not run.passed
    (turn,) = run.turns
    assert turn.error is None and not turn.call_ended
    (ended,) = [e for e in run.evaluations if not e.passed]
    assert (ended.name, ended.reasoning) == ("far_end.expect.call_ended", "the agent never hung up")


def test_an_agent_that_never_dials_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    from livekit_dialer_agent import DialerAgent

    async def on_enter(self: DialerAgent) -> None:
        return None

    monkeypatch.setattr(DialerAgent, "on_enter", on_enter)
    run = _run(HUMAN)
    assert not run.passed
    errors = [run.error, *(t.error for t in run.turns)]
    assert any("the agent placed no call" in (e or "") for e in errors), errors


def test_a_direction_that_is_not_one_is_refused_naming_file_line_and_field() -> None:
    from pytest_agent_eval.errors import TranscriptError

    with pytest.raises(TranscriptError) as refused:
        load_transcript_text(HUMAN.replace("outbound", "sideways"), path=Path("call.yaml"))
    assert str(refused.value) == (
        "call.yaml:3, transcript 'reminder', phone.direction: 'sideways' is not one of inbound, "
        "outbound"
    )


def test_a_dial_that_does_not_wait_until_answered_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over real SIP such a dial returns once dialing starts and a busy line raises nothing:
    the in-process dial does not model that, so the run is an ERROR naming the fix, never a
    verdict on the agent (here: its except-branch never runs, and it is not a pass)."""
    from livekit import api
    from livekit.agents import get_job_context
    from livekit_dialer_agent import OUTBOUND_TRUNK_ID, DialerAgent

    async def on_enter(self: DialerAgent) -> None:
        ctx = get_job_context()
        try:
            await ctx.api.sip.create_sip_participant(
                api.CreateSIPParticipantRequest(
                    room_name=ctx.room.name,
                    sip_trunk_id=OUTBOUND_TRUNK_ID,
                    sip_call_to=PHONE_NUMBER,
                    participant_identity="phone_user",
                )
            )
        except api.TwirpError as e:
            ctx.shutdown(reason=f"call failed: {e.message}")

    monkeypatch.setattr(DialerAgent, "on_enter", on_enter)
    run = _run(REFUSED.replace("KIND", "busy"))
    assert run.verdict == "error" and not run.crashes, (run.error, run.crashes)
    (turn,) = run.turns
    assert (turn.error or "").startswith(
        f"AdapterError: turn 1: the agent dialled {PHONE_NUMBER} without wait_until_answered=True: over real "
        "SIP create_sip_participant then returns once dialing starts and the call's outcome "
        "reaches the agent later, which the in-process dial does not model; in-process dialing "
        "supports CreateSIPParticipantRequest(..., wait_until_answered=True) (as LiveKit's "
        "outbound-call docs dial)"
    )
