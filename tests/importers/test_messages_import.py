"""`agent-eval import messages`: an OpenAI-format message list becomes a text transcript, and
the round trip through a real OpenAI SDK app holds."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from call_support import HERE

from pytest_agent_eval.__main__ import main
from pytest_agent_eval._loader import load_transcript_file

REPLAY_CONFTEST = """
import sys

import pytest

sys.path.insert(0, {here!r})
from text_agent import ChatServer, make_adapter, scripted_model


@pytest.fixture(scope="session")
def chat_server():
    with ChatServer(scripted_model) as server:
        yield server


@pytest.fixture
def llm_eval_agent(request, chat_server):
    first = 7 if request.path.parent.name == "changed" else 1
    return make_adapter(chat_server.base_url, first_reference=first)
"""


def _logged_conversation() -> list[dict[str, Any]]:
    """What the app's conversation holds after two turns: its OpenAI message list."""
    pytest.importorskip("openai", reason="needs the openai extra")
    from text_agent import ChatServer, make_adapter, scripted_model

    from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
    from pytest_agent_eval.models import Transcript, Turn

    async def converse(base_url: str) -> list[dict[str, Any]]:
        turns = [
            Turn(user="Book a table for two on Friday at 8pm."),
            Turn(user="What is my reference?"),
        ]
        adapter = make_adapter(base_url)
        conversation = await adapter.start_conversation(
            ConversationInfo(transcript=Transcript(id="app", turns=turns), run_index=0)
        )
        try:
            for index, turn in enumerate(turns):
                await conversation.respond(TurnInput(turn=turn, index=index))
            return list(conversation.messages)
        finally:
            await conversation.aclose()

    with ChatServer(scripted_model) as server:
        return asyncio.run(converse(server.base_url))


def test_a_logged_conversation_round_trips_through_the_app(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    messages = _logged_conversation()
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    log = pytester.path / "conversation.json"
    log.write_text(json.dumps(messages, indent=2))
    out = pytester.path / "tests" / "evals" / "same" / "booking.yaml"
    assert main(["import", "messages", str(log), "--out", str(out)]) == 0
    assert (
        "read   conversation.json (OpenAI-format messages): 2 user turn(s), 1 tool call(s)"
        in capsys.readouterr().out
    )
    transcript = load_transcript_file(out)
    first, second = transcript.turns
    assert first.user == "Book a table for two on Friday at 8pm." and first.audio is None
    assert [(a.tool, a.args) for a in first.expect.tool_calls_args] == [
        ("book_table", {"day": "friday", "time": "20:00", "guests": 2})
    ]
    assert first.expect.tool_calls_outcome == []  # OpenAI messages do not say whether a tool failed
    assert "BK-1" in first.expect.reply_contains_all
    assert second.expect.reply_contains_all == ["BK-1"]

    changed = out.parent.parent / "changed" / "booking.yaml"
    changed.parent.mkdir()
    changed.write_text(out.read_text().replace("id: booking\n", "id: booking_changed\n"))
    pytester.makepyfile(conftest=REPLAY_CONFTEST.format(here=str(HERE)))
    result = pytester.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*transcript: booking_changed*",
            "*turn 1 ?FAIL? user: 'Book a table for two on Friday at 8pm.'",
            "*reply_contains_all (booking.yaml:*) fail: reply is missing [[]'BK-1'[]]*",
            "*turn 2 ?FAIL? user: 'What is my reference?'",
            "booking *1*1*1.00*PASS*",
        ]
    )


def test_parts_legacy_function_calls_and_bad_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "log.json"
    log.write_text(
        json.dumps(
            {
                "messages": [
                    {"role": "system", "content": "You are a bank."},
                    {"role": "assistant", "content": "Welcome to the bank."},
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "Freeze card 4242."},
                            {"type": "image_url", "image_url": {"url": "x"}},
                        ],
                    },
                    {
                        "role": "assistant",
                        "content": None,
                        "function_call": {"name": "freeze", "arguments": '{"card": "4242"}'},
                    },
                    {"role": "function", "name": "freeze", "content": "frozen"},
                    {"role": "assistant", "content": "Card 4242 is frozen."},
                    {"role": "user", "content": "And the other one?"},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "freeze", "arguments": "card=1111"},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": "c1", "content": "frozen"},
                    {"role": "assistant", "content": "Done."},
                ]
            }
        )
    )
    out = tmp_path / "bank.yaml"
    assert main(["import", "messages", str(log), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "parts of type image_url are not imported" in err
    assert (
        "warning: turn 2: the call to freeze had arguments that are not a JSON object ('card=1111')"
        in err
    )
    transcript = load_transcript_file(out)
    assert transcript.greeting is None  # text adapters report no greeting: not drafted
    assert "text adapters do not report a greeting" in out.read_text()
    first, second = transcript.turns
    assert first.user == "Freeze card 4242."
    assert [(a.tool, a.args) for a in first.expect.tool_calls_args] == [
        ("freeze", {"card": "4242"})
    ]
    assert second.expect.tool_calls_include == ["freeze"]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("[{", "not JSON"),
        ('{"model": "x"}', "an object with a 'messages' list; this is a dict without 'messages'"),
        (
            '[{"role": "system", "content": "hi"}, {"role": "assistant", "content": "yo"}]',
            "no user message among 2 message(s)",
        ),
        ('[{"role": "robot", "content": "hi"}]', "messages[0]: unknown role 'robot'"),
    ],
)
def test_bad_message_lists_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, says: str
) -> None:
    log = tmp_path / "log.json"
    log.write_text(content)
    assert main(["import", "messages", str(log), "--out", str(tmp_path / "out" / "x.yaml")]) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
