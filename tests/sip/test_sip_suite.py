"""A transcript run over a real phone line: `LiveKitRoomAdapter(sip=...)` dials LiveKit's SIP
service from a PJSIP phone, and its records are the in-process records of the same agent.

The lab's dispatch rule for `EVAL_NUMBER` dispatches no agent: the adapter finds the call's
room, listens there, and dispatches ``sip-eval-agent`` (sip_eval_worker.py) itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sip_lab import EVAL_AGENT_NAME, HERE, SIP_PORT, SipLab

from pytest_agent_eval.models import Transcript, TranscriptResult, Turn
from pytest_agent_eval.synthesize import ensure_fixtures

EVAL_NUMBER = "+15550188"
"""The number the adapter's phone dials: a trunk whose dispatch rule dispatches no agent."""
CALLER = "+15550123"

TRANSCRIPT = """\
id: phone_suite
runs: 1
phone:
  caller_number: "{caller}"
  trunk_number: "{number}"
greeting:
  contains_any: ["Welcome"]
turns:
  - user: "Do you have vegan dishes?"
    audio: {vegan}
    expect:
      tool_calls_include: [check_menu]
      reply_contains_any: ["risotto"]
"""


@pytest.fixture
def phone_lab(sip_lab: SipLab) -> SipLab:
    """The SIP lab with the eval worker and a route whose rule dispatches no agent."""
    sip_lab.call("route_calls", agent_name="", trunk_number=EVAL_NUMBER)
    sip_lab.start_worker("sip-eval-worker", HERE / "sip_eval_worker.py")
    return sip_lab


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("phone-fixtures")
    said = {"vegan": "Do you have vegan dishes?", "code": "My booking code follows."}
    wavs = {name: folder / f"{name}.wav" for name in said}
    transcript = Transcript(
        id="phone", turns=[Turn(user=text, audio=wavs[name]) for name, text in said.items()]
    )
    ensure_fixtures([transcript], jobs=1).raise_for_failures()
    return wavs


def test_a_transcript_runs_over_a_phone_line(phone_lab: SipLab, fixtures: dict[str, Path]) -> None:
    # Next to its fixtures: a transcript's audio lives inside its project.
    source = fixtures["vegan"].parent / "phone.yaml"
    source.write_text(TRANSCRIPT.format(caller=CALLER, number=EVAL_NUMBER, vegan="vegan.wav"))
    result = phone_lab.call(
        "run_records",
        agent_name=EVAL_AGENT_NAME,
        path=str(source),
        sip=f"sip:{EVAL_NUMBER}@127.0.0.1:{SIP_PORT}",
    )
    assert isinstance(result, TranscriptResult)
    (run,) = result.runs
    assert run.error is None, run.error
    (turn,) = run.turns
    print(f"\nheard over SIP: {turn.heard!r}; reply: {turn.reply!r}; error: {turn.error}")
    assert "vegan" in (turn.heard or "").lower()
    assert "risotto" in turn.reply
    assert [c.name for c in turn.tool_calls] == ["check_menu"]
    assert turn.metadata["sip_caller"] == CALLER
    assert result.passed, run
