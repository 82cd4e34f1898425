"""Room mode reports the records in-process reports, for the same agent.

The lab's agents are built by one function (`lab_agents.make_session`): the test runs each
transcript with `LiveKitAdapter` in this process and with `LiveKitRoomAdapter` against the lab
worker running the same agent, and compares the results field by field: the greeting, every
turn's reply, tool calls, the agent's own speech and its cause, handoffs, the active agent,
tokens, check verdicts, what its timeline shows, and ``metadata["livekit"]`` key by key. Only
measurements differ (latencies, wall time, reply audio length, the timeline's times), and the
room adds keys of its own (the room, the agent's identity and states).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lab_agents import make_session
from room_lab import RoomLab

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.adapters.livekit import LiveKitAdapter
from pytest_agent_eval.models import (
    AgentSpeech,
    RunResult,
    Timeline,
    TranscriptResult,
    TurnResult,
)

TRANSCRIPTS = {
    "greeter": """\
id: greeter_records
runs: 1
greeting:
  contains_any: ["Welcome"]
turns:
  - user: "Do you have vegan dishes?"
    expect:
      tool_calls_include: [check_menu]
      reply_contains_any: ["risotto"]
  - user: "Hello there"
""",
    "handoff": """\
id: handoff_records
runs: 1
turns:
  - user: "I have a question about my bill."
    expect:
      tool_calls_include: [transfer_to_billing]
      handoff_to: BillingDesk
      agent_is: BillingDesk
  - user: "Can you help me?"
    expect:
      agent_is: BillingDesk
""",
}

MEASURED = {"turn_wall_s", "reply_audio_s"}
"""``metadata["livekit"]`` keys that are measurements of the run, not records of the agent."""


def _speech(speech: AgentSpeech) -> tuple[Any, ...]:
    # Timings are measurements; that the agent's speech has them is a record.
    return (
        speech.text,
        speech.cause,
        speech.agent,
        speech.turn_index,
        speech.started_at_s is not None,
        speech.latency_s is not None,
    )


def _timeline(timeline: Timeline | None) -> tuple[Any, ...] | None:
    # What it shows, not when: times are measurements.
    if timeline is None:
        return None
    return (
        timeline.clock,
        sorted(timeline.kinds),
        sorted(timeline.unobserved),
        [e.detail.get("name") for e in timeline.of("tool_call")],
        [(e.detail.get("from"), e.detail.get("to")) for e in timeline.of("handoff")],
    )


def _turn(turn: TurnResult) -> dict[str, Any]:
    return {
        "reply": turn.reply,
        "tool_calls": [c.to_dict() for c in turn.tool_calls],
        "heard": turn.heard,
        "heard_segments": turn.heard_segments,
        "agent_speech": [_speech(s) for s in turn.agent_speech],
        "active_agent": turn.active_agent,
        "handoffs": turn.handoffs,
        "tool_calls_unobserved": turn.tool_calls_unobserved,
        "usage": (turn.usage.input_tokens, turn.usage.output_tokens) if turn.usage else None,
        "error": turn.error,
        "evaluations": [(e.name, e.passed, e.errored) for e in turn.evaluations],
        "latencies": (turn.latency_s is not None, turn.first_audio_latency_s is not None),
        "timeline": _timeline(turn.timeline),
    }


def _run(run: RunResult) -> dict[str, Any]:
    greeting = run.greeting
    return {
        "error": run.error,
        "greeting": None
        if greeting is None
        else ([_speech(s) for s in greeting.speech], [c.to_dict() for c in greeting.tool_calls]),
        "greeting_evaluations": [(e.name, e.passed) for e in run.greeting_evaluations],
        "passed": run.passed,
    }


@pytest.mark.parametrize("behaviour", sorted(TRANSCRIPTS))
def test_room_records_are_the_in_process_records(
    lab: RoomLab, lab_worker: str, tmp_path: Path, behaviour: str
) -> None:
    source = tmp_path / f"{behaviour}.yaml"
    source.write_text(TRANSCRIPTS[behaviour])
    adapter = LiveKitAdapter(lambda: make_session(behaviour))
    in_process = asyncio.run(run_transcript(load_transcript_file(source), adapter))
    in_room = lab.call(
        "run_records", agent_name=lab_worker, dispatch_metadata=behaviour, path=str(source)
    )
    assert isinstance(in_process, TranscriptResult) and isinstance(in_room, TranscriptResult)
    assert in_process.passed, in_process.runs
    (local,), (remote,) = in_process.runs, in_room.runs
    assert _run(remote) == _run(local)
    assert len(remote.turns) == len(local.turns) == 2
    for here, there in zip(local.turns, remote.turns, strict=True):
        assert _turn(there) == _turn(here), f"turn {here.index + 1}"
        mine, theirs = here.metadata["livekit"], there.metadata["livekit"]
        assert set(mine) <= set(theirs), f"missing in room mode: {set(mine) - set(theirs)}"
        for key in set(mine) - MEASURED:
            assert theirs[key] == mine[key], f"turn {here.index + 1}: metadata['livekit'][{key!r}]"
        assert set(here.metadata) <= set(there.metadata)
    assert in_room.passed
