"""A transcript run over a real phone line: `LiveKitRoomAdapter(sip=...)` dials LiveKit's SIP
service from a PJSIP phone, and its records are the in-process records of the same agent.

The lab's dispatch rule for `EVAL_NUMBER` dispatches no agent: the adapter finds the call's
room, listens there, and dispatches ``sip-eval-agent`` (sip_eval_worker.py) itself.
"""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest
from sip_lab import EVAL_AGENT_NAME, HERE, SIP_PORT, SipLab

from pytest_agent_eval.errors import AdapterError, ConfigError, MissingExtraError
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
    audio: vegan.wav
    expect:
      tool_calls_include: [check_menu]
      reply_contains_any: ["risotto"]
  - user: "My booking code follows."
    audio: code.wav
    dtmf: {{digits: "4521#", at: after}}
    expect:
      dtmf_sent: "4521#"
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


def test_a_transcript_over_a_phone_line_has_the_in_process_records(
    phone_lab: SipLab, fixtures: dict[str, Path]
) -> None:
    # Next to its fixtures: a transcript's audio lives inside its project.
    source = fixtures["vegan"].parent / "phone.yaml"
    source.write_text(TRANSCRIPT.format(caller=CALLER, number=EVAL_NUMBER))
    over_sip = phone_lab.call(
        "run_records",
        agent_name=EVAL_AGENT_NAME,
        path=str(source),
        sip=f"sip:{EVAL_NUMBER}@127.0.0.1:{SIP_PORT}",
    )
    assert isinstance(over_sip, TranscriptResult)
    (remote,) = over_sip.runs
    for turn in remote.turns:
        print(f"\nover SIP, turn {turn.index + 1}: heard {turn.heard!r}, replied {turn.reply!r}")
    assert remote.error is None, remote.error
    vegan, code = remote.turns
    assert vegan.error is None and code.error is None, (vegan.error, code.error)
    # What went over the line: the caller's words (G.711, then Opus in the room), its number,
    # and its keys as the agent received them; the agent's echo of the keys came back.
    assert "vegan" in (vegan.heard or "").lower()
    assert "risotto" in vegan.reply
    assert [c.name for c in vegan.tool_calls] == ["check_menu"]
    assert vegan.metadata["sip_caller"] == code.metadata["sip_caller"] == CALLER
    assert code.metadata["dtmf_pressed"] == "4521#"
    assert code.dtmf_sent == "4521#"
    assert any("Your code is 4 5 2 1" in s.text for s in code.agent_speech), code.agent_speech
    assert over_sip.passed, remote

    # The same transcript in process, the same agent (sip_agents.py) on LiveKit's fake phone
    # line: the same records, but for what the line changes (what the STT heard through
    # G.711) and measurements.
    from sip_agents import make_phone_session
    from test_room_records import _run, _turn

    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval._runner import run_transcript
    from pytest_agent_eval.adapters.livekit import LiveKitAdapter

    in_process = asyncio.run(
        run_transcript(load_transcript_file(source), LiveKitAdapter(make_phone_session))
    )
    (local,) = in_process.runs
    assert in_process.passed, local
    assert _run(remote) == _run(local)
    for here, there in zip(local.turns, remote.turns, strict=True):
        mine, theirs = _turn(here), _turn(there)
        for key in ("heard", "heard_segments"):
            print(
                f"turn {here.index + 1} {key}: in process {mine.pop(key)!r}, SIP {theirs.pop(key)!r}"
            )
        if here.heard != there.heard:  # the LLM's input tokens count what it heard
            mine.pop("usage"), theirs.pop("usage")
        assert theirs == mine, f"turn {here.index + 1}"
        assert there.dtmf_sent == here.dtmf_sent
        for key in ("dtmf_pressed", "sip_caller"):
            assert there.metadata.get(key) == here.metadata.get(key), key


def test_bad_sip_settings_and_text_turns_are_refused_before_any_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Here, not at the top: the livekit package loads Silero, which collection must not.
    from pytest_agent_eval.adapters.livekit import LiveKitRoomAdapter

    settings = {"url": "ws://127.0.0.1:7880", "api_key": "key", "api_secret": "secret"}
    with pytest.raises(ConfigError, match=r'expected the SIP URI to dial.*sip="sip:\+15550199@'):
        LiveKitRoomAdapter("agent", sip="127.0.0.1:5060", **settings)
    with pytest.raises(ConfigError, match="G.711 only; use one of PCMU, PCMA"):
        LiveKitRoomAdapter("agent", sip="sip:+1555@127.0.0.1", sip_codec="opus", **settings)
    adapter = LiveKitRoomAdapter("agent", sip="sip:+1555@127.0.0.1:5060", **settings)
    typed = Transcript(id="typed", turns=[Turn(user="Hello")])
    with pytest.raises(AdapterError, match=r"'typed', turn 1 has no audio fixture.*no text"):
        asyncio.run(adapter.prepare(typed))
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "pjsua2" else real_find_spec(name, *a),
    )
    with pytest.raises(MissingExtraError, match=r"pjsua2.*not installed: pip install .*\[sip\]"):
        LiveKitRoomAdapter("agent", sip="sip:+1555@127.0.0.1:5060", **settings)
