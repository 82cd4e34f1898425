"""SmolagentsAdapter on real smolagents agents (``ToolCallingAgent``, ``CodeAgent``) driven by a
scripted ``Model`` subclass; no network."""

from __future__ import annotations

import asyncio
import re
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest
from smolagents import CodeAgent, Model, ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)
from smolagents.monitoring import LogLevel, TokenUsage

from pytest_agent_eval._runner import RunSettings, run_transcript
from pytest_agent_eval.adapters.smolagents import SmolagentsAdapter
from pytest_agent_eval.errors import MissingExtraError, install_command
from pytest_agent_eval.models import Expect, ToolCallArgsConfig, Transcript, Turn


def text_of(message: Any) -> str:
    content = message.content if not isinstance(message, dict) else message["content"]
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return str(content or "")


def call(name: str, arguments: dict[str, Any], call_id: str) -> ChatMessage:
    tool_call = ChatMessageToolCall(
        function=ChatMessageToolCallFunction(name=name, arguments=arguments),
        id=call_id,
        type="function",
    )
    return ChatMessage(
        role=MessageRole.ASSISTANT,
        content="",
        tool_calls=[tool_call],
        token_usage=TokenUsage(input_tokens=10, output_tokens=4),
    )


class ScriptedModel(Model):
    """A smolagents model whose answer comes from ``script(messages)``; records each request."""

    def __init__(self, script: Callable[[list[Any]], ChatMessage]) -> None:
        super().__init__(model_id="scripted")
        self.script = script
        self.requests: list[list[Any]] = []
        self._guard = threading.Lock()

    def generate(
        self,
        messages: list[Any],
        stop_sequences: Any = None,
        response_format: Any = None,
        tools_to_call_from: Any = None,
        **kwargs: Any,
    ) -> ChatMessage:
        with self._guard:
            self.requests.append(list(messages))
        return self.script(messages)


def booking_script(messages: list[Any]) -> ChatMessage:
    """Check, book, answer; on "cancel", cancel the reference found in the agent's memory."""
    last = text_of(messages[-1])
    everything = "\n".join(text_of(m) for m in messages)
    if last.startswith("Error:") or "\nError:\n" in last:
        return call("final_answer", {"answer": "Sorry, that failed."}, "f-err")
    if "Observation:\nfriday: 19:00 free" in last:
        return call("create_booking", {"day": "friday", "party_size": 2}, "c2")
    if "Observation:\nBK-42" in last:
        return call("final_answer", {"answer": "Booked for Friday, reference BK-42."}, "f1")
    if "Observation:\ncancelled" in last:
        return call("final_answer", {"answer": "Cancelled."}, "f2")
    if "cancel" in last.lower():
        reference = (
            "BK-0" if "wrong" in last.lower() else ("BK-42" if "BK-42" in everything else "none")
        )
        return call("cancel_booking", {"reference": reference}, "c3")
    return call("check_availability", {"day": "friday"}, "c1")


@tool
def check_availability(day: str) -> str:
    """Free slots on a day.

    Args:
        day: The day.
    """
    return f"{day}: 19:00 free"


@tool
def create_booking(day: str, party_size: int) -> str:
    """Book a table.

    Args:
        day: The day.
        party_size: How many people.
    """
    return "BK-42"


@tool
def cancel_booking(reference: str) -> str:
    """Cancel a booking.

    Args:
        reference: The booking reference.
    """
    if reference != "BK-42":
        raise ValueError(f"no booking {reference}")
    return "cancelled"


TOOLS = [check_availability, create_booking, cancel_booking]


def make_agent(model: ScriptedModel) -> ToolCallingAgent:
    return ToolCallingAgent(tools=TOOLS, model=model, max_steps=6, verbosity_level=LogLevel.OFF)


BOOK_THEN_CANCEL = Transcript(
    id="book_then_cancel",
    turns=[
        Turn(
            "Book a table for 2 on Friday",
            expect=Expect(
                tool_calls_include=["check_availability", "create_booking"],
                tool_calls_ordered=True,
                tool_calls_exclude=["final_answer"],
                tool_calls_args=[ToolCallArgsConfig("create_booking", {"party_size": 2})],
                reply_contains_all=["BK-42"],
            ),
        ),
        Turn(
            "Please cancel it",
            expect=Expect(
                tool_calls_args=[ToolCallArgsConfig("cancel_booking", {"reference": "BK-42"})]
            ),
        ),
    ],
    runs=3,
)


def _run(transcript: Transcript, adapter: SmolagentsAdapter, concurrency: int = 3) -> Any:
    return asyncio.run(
        run_transcript(transcript, adapter, settings=RunSettings(concurrency=concurrency))
    )


def test_tool_calling_agent_with_tool_results_usage_and_memory_across_turns() -> None:
    model = ScriptedModel(booking_script)
    result = _run(BOOK_THEN_CANCEL, SmolagentsAdapter(lambda: make_agent(model)))

    assert result.passed, [e.reasoning for r in result.runs for t in r.turns for e in t.evaluations]
    first, second = result.runs[0].turns
    assert first.reply == "Booked for Friday, reference BK-42."
    assert [(c.name, c.args, c.output) for c in first.tool_calls] == [
        ("check_availability", {"day": "friday"}, "friday: 19:00 free"),
        ("create_booking", {"day": "friday", "party_size": 2}, "BK-42"),
    ]
    assert (first.usage.input_tokens, first.usage.output_tokens, first.usage.requests) == (
        30,
        12,
        3,
    )
    assert [(c.name, c.output) for c in second.tool_calls] == [("cancel_booking", "cancelled")]


def test_a_shared_agent_serves_one_conversation_at_a_time_and_forgets_between_runs() -> None:
    model = ScriptedModel(booking_script)
    agent = make_agent(model)
    result = _run(BOOK_THEN_CANCEL, SmolagentsAdapter(agent), concurrency=3)

    assert result.passed
    # every run starts from a reset memory: its first request holds one task only
    first_requests = [r for r in model.requests if "New task:\nBook" in text_of(r[-1])]
    assert len(first_requests) == 3
    for request in first_requests:
        assert sum("New task:" in text_of(m) for m in request) == 1


def test_a_tool_that_raises_is_an_errored_call_and_the_agent_goes_on() -> None:
    model = ScriptedModel(booking_script)
    transcript = Transcript(
        id="wrong",
        turns=[
            Turn("Book for 2"),
            Turn("Cancel the wrong one", expect=Expect(reply_contains_any=["failed"])),
        ],
    )
    result = _run(transcript, SmolagentsAdapter(lambda: make_agent(model)))

    assert result.passed
    (cancel,) = result.runs[0].turns[1].tool_calls
    assert cancel.name == "cancel_booking" and cancel.is_error and cancel.outcome == "error"
    assert "no booking BK-0" in (cancel.error or "") and (cancel.output or "").startswith("Error: ")


def test_an_unknown_tool_is_a_refused_call() -> None:
    """Issue 32: smolagents refuses a tool it does not have ("Unknown tool ..."): nothing ran,
    so the call reads ``refused`` and tool_calls_args does not count it."""

    def script(messages: list[Any]) -> ChatMessage:
        if "Error:" in text_of(messages[-1]):
            return call("final_answer", {"answer": "I cannot do that."}, "f-x")
        return call("teleport", {"to": "Paris"}, "t1")

    transcript = Transcript(
        id="unknown",
        turns=[Turn("Go", expect=Expect(tool_calls_args=[ToolCallArgsConfig("teleport", {})]))],
    )
    result = _run(transcript, SmolagentsAdapter(lambda: make_agent(ScriptedModel(script))))
    (teleport,) = result.runs[0].turns[0].tool_calls
    assert (teleport.name, teleport.args, teleport.outcome) == (
        "teleport",
        {"to": "Paris"},
        "refused",
    )
    assert (teleport.error or "").startswith("Unknown tool teleport, should be one of")
    assert not result.passed
    (check,) = result.runs[0].turns[0].evaluations
    assert "the framework refused the call to teleport" in check.reasoning


def test_internal_tools_are_kept_when_asked() -> None:
    model = ScriptedModel(booking_script)
    transcript = Transcript(id="t", turns=[Turn("Book")])
    result = _run(
        transcript, SmolagentsAdapter(lambda: make_agent(model), include_internal_tools=True)
    )
    names = [c.name for c in result.runs[0].turns[0].tool_calls]
    assert names == ["check_availability", "create_booking", "final_answer"]


def test_code_agent_answer_is_the_reply() -> None:
    def script(messages: list[Any]) -> ChatMessage:
        code = 'result = check_availability(day="friday")\nfinal_answer(f"Free: {result}")'
        return ChatMessage(
            role=MessageRole.ASSISTANT, content=f"Thought: check.\n<code>\n{code}\n</code>"
        )

    def agent() -> CodeAgent:
        return CodeAgent(
            tools=TOOLS, model=ScriptedModel(script), max_steps=2, verbosity_level=LogLevel.OFF
        )

    transcript = Transcript(
        id="code", turns=[Turn("Is Friday free?", expect=Expect(reply_contains_all=["19:00 free"]))]
    )
    result = _run(transcript, SmolagentsAdapter(agent))
    assert result.passed, result.runs[0].turns[0].error
    assert result.runs[0].turns[0].reply == "Free: friday: 19:00 free"
    assert result.runs[0].turns[0].tool_calls == []  # python_interpreter is internal


def test_a_failing_model_crashes_the_run_naming_the_turn() -> None:
    def script(messages: list[Any]) -> ChatMessage:
        raise ConnectionError("provider unreachable")

    result = _run(
        Transcript(id="t", turns=[Turn("Book")]),
        SmolagentsAdapter(lambda: make_agent(ScriptedModel(script))),
    )
    turn = result.runs[0].turns[0]
    error = turn.error or ""
    assert "smolagents agent 'ToolCallingAgent' failed on turn 1 ('Book')" in error
    assert "provider unreachable" in error
    assert turn.verdict == "crashed" and result.errored_run_count == 0
    assert turn.crash is not None and turn.crash.type in ("ConnectionError", "AgentGenerationError")


def test_bad_construction_says_what_is_needed() -> None:
    with pytest.raises(TypeError, match="needs a smolagents agent .* got int"):
        SmolagentsAdapter(3)


def test_without_smolagents_the_message_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "smolagents", None)
    with pytest.raises(MissingExtraError, match=re.escape(install_command("smolagents"))):
        SmolagentsAdapter(lambda: None)
