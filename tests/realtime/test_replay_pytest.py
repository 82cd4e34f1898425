"""Record and replay through pytest itself: a YAML transcript recorded live (against the
scripted provider) with ``AGENT_EVAL_REALTIME_RECORD=1``, replayed offline; a missing, damaged,
other-version or no-longer-fitting cassette is an ERROR printing the re-record command; a live
recording without a key is skipped with the reason."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("livekit.plugins.openai", reason="needs livekit-plugins-openai (dev extra)")

from replay_agents import provider

HERE = Path(__file__).resolve().parent

CONFTEST = f"""
import sys

import pytest

sys.path.insert(0, {str(HERE)!r})  # the realtime test agents live with these tests

from replay_agents import session_factory

from pytest_agent_eval.adapters.livekit import LiveKitAdapter
from pytest_agent_eval.adapters.livekit.realtime import OpenAIRealtimeReplay


@pytest.fixture
def llm_eval_agent():
    return OpenAIRealtimeReplay(LiveKitAdapter(session_factory(billing_model=False)))
"""

DESK = """\
id: {id}
greeting: {{contains_any: [welcome]}}
turns:
  - user: Hello there
    expect: {{reply_contains_any: [help]}}
  - user: {book}
    expect:
      tool_calls_include: [book_table]
      tool_calls_args: [{{tool: book_table, args: {{party_size: 2}}}}]
  - user: I need billing
    expect: {{agent_is: Billing, handoff_to: Billing}}
"""


@pytest.fixture
def scripted_provider() -> Iterator[str]:
    """The scripted provider on a loop of its own (the pytest run under test is another
    process); yields its base_url."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    scripted = provider()
    url = asyncio.run_coroutine_threadsafe(scripted.start(), loop).result(30)
    try:
        yield url
    finally:
        asyncio.run_coroutine_threadsafe(scripted.aclose(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    # Two runs at once: each has its own tape and loopback server, in one event loop.
    pytester.makepyprojecttoml(
        '[tool.agent_eval]\nyaml_dirs = ["evals"]\nruns = 2\nconcurrency = 2\n'
    )
    pytester.makeconftest(CONFTEST)
    evals = pytester.mkdir("evals")
    (evals / "desk.yaml").write_text(DESK.format(id="desk", book="Please book a table"))
    return pytester


def _run(project: pytest.Pytester) -> pytest.RunResult:
    return project.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider", "-rs")


def test_a_live_recording_then_offline_replays_and_its_errors(
    project: pytest.Pytester, scripted_provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    evals = project.path / "evals"
    monkeypatch.setenv("AGENT_EVAL_REALTIME_RECORD", "1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-recording")
    monkeypatch.setenv("OPENAI_BASE_URL", scripted_provider)
    _run(project).assert_outcomes(passed=1)
    cassette = evals / "cassettes" / "desk.openai-realtime.json"
    assert len(json.loads(cassette.read_text())["runs"]) == 2  # every run recorded

    # Offline from here: no key, the provider's address dead, recording off.
    monkeypatch.delenv("AGENT_EVAL_REALTIME_RECORD")
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    _run(project).assert_outcomes(passed=1)

    # Transcripts whose cassettes do not fit, beside the one that does.
    recorded = json.loads(cassette.read_text())
    (evals / "missing.yaml").write_text(DESK.format(id="missing", book="Please book a table"))
    (evals / "damaged.yaml").write_text(DESK.format(id="damaged", book="Please book a table"))
    (evals / "cassettes" / "damaged.openai-realtime.json").write_text(
        cassette.read_text()[: len(cassette.read_text()) // 2]
    )
    (evals / "other_version.yaml").write_text(
        DESK.format(id="other_version", book="Please book a table")
    )
    older = {
        **recorded,
        "recorded_with": {**recorded["recorded_with"], "livekit-plugins-openai": "1.7.0"},
    }
    (evals / "cassettes" / "other_version.openai-realtime.json").write_text(json.dumps(older))
    (evals / "changed.yaml").write_text(DESK.format(id="changed", book="Book a table for four"))
    (evals / "cassettes" / "changed.openai-realtime.json").write_text(
        json.dumps({**recorded, "transcript": "changed"})
    )

    result = _run(project)
    result.assert_outcomes(passed=1, errors=4)
    out = result.stdout.str()
    rerecord = "AGENT_EVAL_REALTIME_RECORD=1 OPENAI_API_KEY=... python -m pytest"
    for name, problem in (
        ("missing", "not found (nothing was recorded yet)"),
        ("damaged", "is not valid JSON"),
        ("other_version", "was recorded with livekit-plugins-openai 1.7.0"),
        ("changed", "turn 2: the agent no longer fits its realtime cassette"),
    ):
        assert problem in out, name
        # Relative to where pytest runs, as the user pastes it.
        assert f"{rerecord} evals/{name}.yaml -k {name}" in out, name
    assert "'Book a table for four'" in out


def test_a_live_recording_without_a_key_is_skipped_with_the_reason(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EVAL_REALTIME_RECORD", "1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = _run(project)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["*recording the realtime cassette of 'desk'*needs OPENAI_API_KEY*"]
    )
    assert not (project.path / "evals" / "cassettes").exists()
