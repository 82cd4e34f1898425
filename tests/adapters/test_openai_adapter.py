"""OpenAIAdapter: the real openai SDK against a loopback Chat Completions server."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from loopback_chat import ChatServer, error_body, text_completion, tool_call_completion
from openai import AsyncOpenAI, OpenAI

from pytest_agent_eval._runner import RunSettings, run_transcript
from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
from pytest_agent_eval.adapters.openai import OpenAIAdapter, Tool
from pytest_agent_eval.errors import AdapterError
from pytest_agent_eval.models import AgentReply, Expect, Message, Transcript, Turn


def booking_llm(body: dict[str, Any]) -> Any:
    """A scripted model: books via the tool, then recalls the reference from the history."""
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "tool":
        return text_completion(f"Booked, reference {last['content']}.")
    text = last["content"].lower()
    if "book" in text:
        day = "sunday" if "sunday" in text else "friday"
        return tool_call_completion(
            [("book_slot", {"day": day, "time": "10am"}, f"call_{len(messages)}")]
        )
    if "reference" in text:
        results = [m["content"] for m in messages if m["role"] == "tool"]
        return text_completion(f"Your reference is {results[-1]}." if results else "No booking.")
    return text_completion("How can I help?")


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer(booking_llm) as running:
        yield running


def make_client(kind: Literal["sync", "async"], base_url: str) -> OpenAI | AsyncOpenAI:
    cls = OpenAI if kind == "sync" else AsyncOpenAI
    return cls(base_url=base_url, api_key="loopback", max_retries=0)


class Calendar:
    def __init__(self) -> None:
        self.bookings: list[tuple[str, str]] = []

    def book_slot(self, day: str, time: str = "noon") -> str:
        """Book a table.

        Returns the booking reference.
        """
        if day == "sunday":
            raise ValueError("closed on sundays")
        self.bookings.append((day, time))
        return f"BK-{len(self.bookings)}"


def info() -> ConversationInfo:
    return ConversationInfo(transcript=Transcript(id="t", turns=[Turn(user="x")]), run_index=0)


async def converse(adapter: OpenAIAdapter, *turns: TurnInput | str) -> list[AgentReply]:
    conversation = await adapter.start_conversation(info())
    replies = []
    try:
        for i, item in enumerate(turns):
            turn = item if isinstance(item, TurnInput) else TurnInput(turn=Turn(user=item), index=i)
            replies.append(await conversation.respond(turn))
    finally:
        await conversation.aclose()
    return replies


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_tool_loop_and_history_across_turns(
    server: ChatServer, kind: Literal["sync", "async"]
) -> None:
    calendar = Calendar()
    adapter = OpenAIAdapter(
        make_client(kind, server.base_url),
        "loopback-model",
        "You book tables.",
        tools=[calendar.book_slot],
    )
    first, second = asyncio.run(converse(adapter, "Book Friday please", "What is my reference?"))

    assert first.reply == "Booked, reference BK-1."
    (call,) = first.tool_calls
    assert (call.name, call.args, call.output, call.is_error) == (
        "book_slot",
        {"day": "friday", "time": "10am"},
        "BK-1",
        False,
    )
    assert call.call_id == "call_2"
    assert calendar.bookings == [("friday", "10am")]
    assert second.reply == "Your reference is BK-1."
    assert second.tool_calls == []

    assert len(server.requests) == 3
    turn2 = server.requests[2]["messages"]
    assert [m["role"] for m in turn2] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert turn2[2]["tool_calls"] == [
        {
            "id": "call_2",
            "type": "function",
            "function": {"name": "book_slot", "arguments": '{"day": "friday", "time": "10am"}'},
        }
    ]
    assert turn2[3] == {"role": "tool", "tool_call_id": "call_2", "content": "BK-1"}
    assert turn2[4] == {"role": "assistant", "content": "Booked, reference BK-1."}


def test_usage_is_summed_over_the_steps_of_a_turn(server: ChatServer) -> None:
    adapter = OpenAIAdapter(
        make_client("async", server.base_url), "m", tools=[Calendar().book_slot]
    )
    (reply,) = asyncio.run(converse(adapter, "Book Friday"))
    assert reply.usage is not None
    # One tool-call step (13 in, 5 out) and one text step (11 in, 7 out).
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.requests) == (
        24,
        12,
        2,
    )


def test_schema_is_derived_from_the_function(server: ChatServer) -> None:
    adapter = OpenAIAdapter(
        make_client("async", server.base_url), "m", tools=[Calendar().book_slot]
    )
    asyncio.run(converse(adapter, "Hello"))
    (tool,) = server.requests[0]["tools"]
    assert tool["type"] == "function"
    function = tool["function"]
    assert function["name"] == "book_slot"
    assert function["description"] == "Book a table."
    params = function["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["day"]
    assert params["properties"]["day"]["type"] == "string"
    assert params["properties"]["time"]["default"] == "noon"
    assert params["additionalProperties"] is False


def test_explicit_schema_pairs_and_async_tools(server: ChatServer) -> None:
    seen: list[dict[str, Any]] = []

    async def book(**kwargs: Any) -> dict[str, Any]:
        seen.append(kwargs)
        return {"reference": "BK-77", "ok": True}

    schema = {
        "type": "function",
        "function": {
            "name": "book_slot",
            "description": "Book.",
            "parameters": {"type": "object", "properties": {"day": {"type": "string"}}},
        },
    }
    adapter = OpenAIAdapter(make_client("sync", server.base_url), "m", tools=[(schema, book)])
    (reply,) = asyncio.run(converse(adapter, "Book Friday"))
    assert seen == [{"day": "friday", "time": "10am"}]  # passed through unchanged
    assert reply.tool_calls[0].output == {"reference": "BK-77", "ok": True}
    assert reply.tool_calls[0].outcome == "ok" and reply.tool_calls[0].done is True
    assert server.requests[0]["tools"] == [schema]
    # Structured results reach the model as JSON.
    assert server.requests[1]["messages"][-1]["content"] == '{"reference":"BK-77","ok":true}'


def test_a_failing_tool_is_reported_to_the_model_and_recorded(server: ChatServer) -> None:
    adapter = OpenAIAdapter(
        make_client("async", server.base_url), "m", tools=[Calendar().book_slot]
    )
    (reply,) = asyncio.run(converse(adapter, "Book Sunday"))
    (call,) = reply.tool_calls
    assert call.is_error is True and call.done is True and call.outcome == "error"
    assert call.output == "Error: ValueError: closed on sundays"
    assert call.error == "ValueError: closed on sundays"
    assert reply.reply == "Booked, reference Error: ValueError: closed on sundays."


def test_bad_arguments_are_errored_and_unknown_tools_refused_calls() -> None:
    """Issue 32: a call to a tool the agent does not have ran nothing: it reads ``refused``
    (tool_calls_args does not count it); bad arguments are the call failing (``error``)."""
    script = [
        tool_call_completion([("book_slot", {"day": 5, "extra": 1}, "c1"), ("cancel", {}, "c2")]),
        text_completion("Sorry."),
    ]
    with ChatServer(lambda body: script.pop(0)) as srv:
        adapter = OpenAIAdapter(
            make_client("async", srv.base_url), "m", tools=[Calendar().book_slot]
        )
        (reply,) = asyncio.run(converse(adapter, "Book"))
        tool_messages = [m for m in srv.requests[1]["messages"] if m["role"] == "tool"]
    bad, unknown = reply.tool_calls
    assert bad.is_error and "ValidationError" in bad.output
    assert bad.args == {"day": 5, "extra": 1}
    assert bad.outcome == "error" and not bad.refused
    assert (
        unknown.is_error
        and unknown.output == "Error: unknown tool 'cancel'; available tools: book_slot"
    )
    assert unknown.outcome == "refused"
    assert unknown.error == "unknown tool 'cancel'; available tools: book_slot"
    assert [m["tool_call_id"] for m in tool_messages] == ["c1", "c2"]


def test_never_sends_non_standard_keys(server: ChatServer, tmp_path: Path) -> None:
    wav = tmp_path / "t1.wav"
    history = [Message("user", "Book Friday please", audio=wav)]
    turn = TurnInput(
        turn=Turn(user="Book Friday please", audio=wav), index=0, history=history, audio=wav
    )
    adapter = OpenAIAdapter(
        make_client("async", server.base_url), "m", tools=[Calendar().book_slot]
    )
    asyncio.run(converse(adapter, turn, "What is my reference?"))

    allowed = {
        "system": {"role", "content"},
        "user": {"role", "content"},
        "assistant": {"role", "content", "tool_calls"},
        "tool": {"role", "content", "tool_call_id"},
    }
    for request in server.requests:
        assert set(request) <= {"model", "messages", "tools"}
        for message in request["messages"]:
            assert set(message) <= allowed[message["role"]], message
        assert "audio" not in json.dumps(request)


def test_max_steps_guard() -> None:
    with ChatServer(
        lambda body: tool_call_completion([("book_slot", {"day": "friday"}, "c")])
    ) as srv:
        adapter = OpenAIAdapter(
            make_client("async", srv.base_url),
            "loop-model",
            tools=[Calendar().book_slot],
            max_steps=3,
        )
        with pytest.raises(
            AdapterError, match=r"'loop-model' was still calling tools .* max_steps=3"
        ):
            asyncio.run(converse(adapter, "Book"))
        assert len(srv.requests) == 3


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_api_errors_become_adapter_errors(kind: Literal["sync", "async"]) -> None:
    def reject(body: dict[str, Any]) -> Any:
        return 400, error_body("Invalid value for 'messages'.", code="invalid_value")

    with ChatServer(reject) as srv:
        adapter = OpenAIAdapter(make_client(kind, srv.base_url), "gpt-x")
        with pytest.raises(AdapterError) as info_:
            asyncio.run(converse(adapter, "Hi"))
    message = str(info_.value)
    assert "OpenAI chat completion failed for model 'gpt-x' on turn 1, step 1" in message
    assert "HTTP 400 BadRequestError" in message
    assert "Invalid value for 'messages'." in message


def test_constructor_checks() -> None:
    with pytest.raises(TypeError, match="needs an openai.OpenAI or openai.AsyncOpenAI client"):
        OpenAIAdapter(object(), "m")
    client = AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="x")
    with pytest.raises(TypeError, match="each tool must be"):
        OpenAIAdapter(client, "m", tools=[42])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="repeated: book_slot"):
        OpenAIAdapter(client, "m", tools=[Calendar().book_slot, Tool(Calendar().book_slot)])
    with pytest.raises(ValueError, match="may not set 'messages'"):
        OpenAIAdapter(client, "m", options={"messages": []})


def test_runs_through_the_runner_with_separate_histories(server: ChatServer) -> None:
    adapter = OpenAIAdapter(
        make_client("async", server.base_url),
        "m",
        tools=[Calendar().book_slot],
        options={"temperature": 0},
    )
    transcript = Transcript(
        id="booking",
        runs=2,
        threshold=1.0,
        turns=[
            Turn(user="Book Friday", expect=Expect(tool_calls_include=["book_slot"])),
            Turn(user="What is my reference?", expect=Expect(reply_contains_any=["BK-"])),
        ],
    )
    result = asyncio.run(run_transcript(transcript, adapter, settings=RunSettings(concurrency=2)))
    assert result.passed
    for request in server.requests:
        assert request["temperature"] == 0
        # Every request belongs to one run: it holds at most one booking exchange.
        assert sum(m["role"] == "tool" for m in request["messages"]) <= 1


def test_tools_factory_gives_each_conversation_its_own_tools(server: ChatServer) -> None:
    calendars: list[Calendar] = []

    def tools() -> list[Any]:
        calendars.append(Calendar())
        return [calendars[-1].book_slot]

    adapter = OpenAIAdapter(make_client("async", server.base_url), "m", tools_factory=tools)
    first = asyncio.run(converse(adapter, "Book Friday"))
    second = asyncio.run(converse(adapter, "Book Friday"))
    # One call at construction (to check the tools), then one per conversation.
    assert len(calendars) == 3
    assert first[0].tool_calls[0].output == second[0].tool_calls[0].output == "BK-1"
    with pytest.raises(TypeError, match="tools or tools_factory, not both"):
        OpenAIAdapter(
            make_client("async", server.base_url),
            "m",
            tools=[Calendar().book_slot],
            tools_factory=tools,
        )


def test_missing_openai_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_agent_eval.errors import MissingExtraError, install_command

    client = AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="x")
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(MissingExtraError, match=re.escape(install_command("openai"))):
        OpenAIAdapter(client, "m")


def test_async_client_runs_on_the_loop_and_sync_client_in_a_worker(server: ChatServer) -> None:
    import threading

    import openai

    threads: dict[str, str] = {}

    def hook(kind: str) -> Any:
        def record(request: Any) -> None:
            threads[kind] = threading.current_thread().name

        async def arecord(request: Any) -> None:
            record(request)

        return arecord if kind == "async" else record

    sync_client = OpenAI(
        base_url=server.base_url,
        api_key="x",
        http_client=openai.DefaultHttpxClient(event_hooks={"request": [hook("sync")]}),
    )
    async_client = AsyncOpenAI(
        base_url=server.base_url,
        api_key="x",
        http_client=openai.DefaultAsyncHttpxClient(event_hooks={"request": [hook("async")]}),
    )
    asyncio.run(converse(OpenAIAdapter(sync_client, "m"), "Hi"))
    asyncio.run(converse(OpenAIAdapter(async_client, "m"), "Hi"))
    main = threading.main_thread().name
    assert threads["async"] == main
    assert threads["sync"] != main


def test_refused_credentials_are_an_error_not_a_crash_of_the_agent() -> None:
    """A 401 means the agent was never evaluated as configured: an ERROR (AdapterError) that
    says to set the key, not a CRASHED run no gate absorbs; a 400 is the agent's own doing."""
    from pytest_agent_eval.errors import AgentCrashError

    def refuse(body: dict[str, Any]) -> Any:
        return 401, error_body("Incorrect API key provided.", code="invalid_api_key")

    with ChatServer(refuse) as srv:
        adapter = OpenAIAdapter(make_client("async", srv.base_url), "gpt-x")
        with pytest.raises(AdapterError) as info_:
            asyncio.run(converse(adapter, "Hi"))
    assert not isinstance(info_.value, AgentCrashError)
    assert "HTTP 401" in str(info_.value) and "set the key the provider needs" in str(info_.value)

    def reject(body: dict[str, Any]) -> Any:
        return 400, error_body("Invalid value for 'messages'.", code="invalid_value")

    with ChatServer(reject) as srv:
        adapter = OpenAIAdapter(make_client("async", srv.base_url), "gpt-x")
        with pytest.raises(AgentCrashError):
            asyncio.run(converse(adapter, "Hi"))
