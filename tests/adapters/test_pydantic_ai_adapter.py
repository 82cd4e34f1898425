"""PydanticAIAdapter with real pydantic-ai Agents on FunctionModel / TestModel."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from dataclasses import dataclass, field

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from pytest_agent_eval._runner import RunSettings, run_transcript
from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
from pytest_agent_eval.adapters.pydantic_ai import PydanticAIAdapter
from pytest_agent_eval.errors import AgentCrashError
from pytest_agent_eval.models import AgentReply, Expect, Transcript, Turn


@dataclass
class Calendar:
    bookings: list[str] = field(default_factory=list)

    def book(self, day: str, time: str) -> str:
        self.bookings.append(f"{day} {time}")
        return f"BK-{len(self.bookings)}"


@dataclass
class BookingModel:
    """A scripted model: books when asked, recalls the reference from history when asked."""

    requests: list[list[ModelMessage]] = field(default_factory=list)

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(list(messages))
        last = messages[-1].parts[-1]
        failed = getattr(last, "outcome", "success") != "success"
        if isinstance(last, RetryPromptPart) or (isinstance(last, ToolReturnPart) and failed):
            return ModelResponse(parts=[TextPart("That slot is not possible.")])
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(f"Booked, reference {last.content}.")])
        text = last.content if isinstance(last, UserPromptPart) else ""
        if "book" in str(text).lower():
            day = "sunday" if "sunday" in str(text).lower() else "friday"
            return ModelResponse(
                parts=[ToolCallPart("book_slot", {"day": day, "time": "10am"}, tool_call_id="c-1")]
            )
        if "reference" in str(text).lower():
            earlier = [
                p.content
                for m in messages
                if isinstance(m, ModelRequest)
                for p in m.parts
                if isinstance(p, ToolReturnPart) and p.tool_name == "book_slot"
            ]
            return ModelResponse(
                parts=[TextPart(f"Your reference is {earlier[-1]}." if earlier else "No booking.")]
            )
        return ModelResponse(parts=[TextPart("How can I help?")])


def booking_agent(model: BookingModel) -> Agent[Calendar, str]:
    agent = Agent(FunctionModel(model), deps_type=Calendar, system_prompt="You book tables.")

    @agent.system_prompt(dynamic=True)
    def bookings_so_far(ctx: RunContext[Calendar]) -> str:
        return f"Bookings so far: {len(ctx.deps.bookings)}"

    @agent.tool
    def book_slot(ctx: RunContext[Calendar], day: str, time: str) -> str:
        """Book a table."""
        if day == "sunday":
            raise ModelRetry("closed on sundays")
        return ctx.deps.book(day, time)

    return agent


def turn(text: str, index: int) -> TurnInput:
    return TurnInput(turn=Turn(user=text), index=index)


def info(runs: int = 1) -> ConversationInfo:
    return ConversationInfo(
        transcript=Transcript(id="t", turns=[Turn(user="x")], runs=runs), run_index=0
    )


async def converse(adapter: PydanticAIAdapter, *texts: str) -> list[AgentReply]:
    conversation = await adapter.start_conversation(info())
    try:
        return [await conversation.respond(turn(t, i)) for i, t in enumerate(texts)]
    finally:
        await conversation.aclose()


def test_turn_two_sees_turn_one_tool_call_and_result() -> None:
    model = BookingModel()
    adapter = PydanticAIAdapter(booking_agent(model), deps_factory=Calendar)
    first, second = asyncio.run(converse(adapter, "Book Friday please", "What is my reference?"))

    assert first.reply == "Booked, reference BK-1."
    (call,) = first.tool_calls
    assert (call.name, call.args, call.output, call.is_error, call.call_id) == (
        "book_slot",
        {"day": "friday", "time": "10am"},
        "BK-1",
        False,
        "c-1",
    )
    assert call.outcome == "ok" and call.done is True  # tool_calls_outcome can check it
    assert second.reply == "Your reference is BK-1."
    assert second.tool_calls == []

    turn2_request = model.requests[-1]
    parts = [p for m in turn2_request for p in m.parts]
    calls = [p for p in parts if isinstance(p, ToolCallPart)]
    returns = [p for p in parts if isinstance(p, ToolReturnPart)]
    assert [(c.tool_name, c.args) for c in calls] == [
        ("book_slot", {"day": "friday", "time": "10am"})
    ]
    assert [(r.tool_name, r.content) for r in returns] == [("book_slot", "BK-1")]
    users = [p.content for p in parts if isinstance(p, UserPromptPart)]
    assert users == ["Book Friday please", "What is my reference?"]
    systems = [p.content for p in parts if isinstance(p, SystemPromptPart)]
    assert systems[0] == "You book tables."
    # The dynamic system prompt is kept, and re-evaluated with the new state.
    assert "Bookings so far: 1" in systems


def test_usage_is_reported_per_turn() -> None:
    adapter = PydanticAIAdapter(booking_agent(BookingModel()), deps_factory=Calendar)
    first, second = asyncio.run(converse(adapter, "Book Friday", "What is my reference?"))
    assert first.usage is not None
    assert second.usage is not None
    assert (first.usage.requests, second.usage.requests) == (2, 1)
    assert first.usage.input_tokens > 0


def test_tool_that_asks_for_a_retry_is_an_errored_call() -> None:
    adapter = PydanticAIAdapter(booking_agent(BookingModel()), deps_factory=Calendar)
    (reply,) = asyncio.run(converse(adapter, "Book Sunday"))
    (call,) = reply.tool_calls
    assert call.is_error is True
    assert "closed on sundays" in str(call.output)
    assert reply.reply == "That slot is not possible."


def test_a_retry_has_its_error_text_and_an_unknown_tool_is_a_refused_call() -> None:
    """Issue 32: a call pydantic-ai refused (no tool of that name) ran nothing: it reads
    ``refused``, so tool_calls_args does not count it; a ModelRetry reads ``error`` with its
    text."""
    from pytest_agent_eval.evaluators import ToolCallArgsEvaluator
    from pytest_agent_eval.models import TurnContext

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        if isinstance(last, UserPromptPart):
            return ModelResponse(
                parts=[ToolCallPart("cancel_booking", {"ref": "BK-1"}, tool_call_id="c-9")]
            )
        return ModelResponse(parts=[TextPart("I cannot cancel.")])

    agent = Agent(FunctionModel(model), deps_type=Calendar)
    (reply,) = asyncio.run(converse(PydanticAIAdapter(agent, deps_factory=Calendar), "Cancel"))
    (call,) = reply.tool_calls
    assert (call.name, call.args, call.outcome) == ("cancel_booking", {"ref": "BK-1"}, "refused")
    assert "Unknown tool name: 'cancel_booking'" in (call.error or "")
    ctx = TurnContext(user="Cancel", reply=reply.reply, tool_calls=reply.tool_calls, history=[])
    result = ToolCallArgsEvaluator("cancel_booking", {"ref": "BK-1"})._check(ctx)
    assert not result.passed and "refused" in result.reasoning

    (retried,) = asyncio.run(
        converse(
            PydanticAIAdapter(booking_agent(BookingModel()), deps_factory=Calendar), "Book Sunday"
        )
    )[0].tool_calls
    assert (retried.outcome, retried.refused) == ("error", False)
    assert "closed on sundays" in (retried.error or "")


def test_structured_output_is_rendered_and_output_tool_is_not_a_tool_call() -> None:
    class Booking(BaseModel):
        day: str
        confirmed: bool

    agent = Agent(TestModel(call_tools=["lookup"]), output_type=Booking)

    @agent.tool_plain
    def lookup(day: str) -> str:
        """Look a day up."""
        return f"{day}: free"

    (reply,) = asyncio.run(converse(PydanticAIAdapter(agent), "Friday?"))
    assert [c.name for c in reply.tool_calls] == ["lookup"]
    assert reply.tool_calls[0].output == "a: free"
    assert '"confirmed"' in reply.reply
    assert '"day"' in reply.reply
    assert isinstance(reply.metadata["output"], Booking)


def test_model_override_and_agent_errors_are_crashes_of_the_agent() -> None:
    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ModelHTTPError(503, "m", body="down")

    agent = Agent(TestModel(), name="concierge")
    adapter = PydanticAIAdapter(agent, model=FunctionModel(broken))
    with pytest.raises(
        AgentCrashError, match=r"pydantic-ai agent 'concierge' failed on turn 1 \('Hi'\): .*503"
    ) as info:
        asyncio.run(converse(adapter, "Hi"))
    assert info.value.kind == "ModelHTTPError"
    assert info.value.where is not None and info.value.where.endswith(" in broken")


def test_rejects_something_that_is_not_an_agent() -> None:
    with pytest.raises(TypeError, match=r"needs a pydantic_ai\.Agent; got str"):
        PydanticAIAdapter("agent")  # type: ignore[arg-type]


def test_runs_through_the_runner_with_fresh_deps_per_run() -> None:
    adapter = PydanticAIAdapter(booking_agent(BookingModel()), deps_factory=Calendar)
    transcript = Transcript(
        id="booking",
        runs=3,
        threshold=1.0,
        turns=[
            Turn(user="Book Friday", expect=Expect(tool_calls_include=["book_slot"])),
            # With shared deps, runs 2 and 3 would get BK-2 and BK-3.
            Turn(user="What is my reference?", expect=Expect(reply_contains_all=["BK-1"])),
        ],
    )
    result = asyncio.run(run_transcript(transcript, adapter, settings=RunSettings(concurrency=3)))
    assert result.passed, [t.evaluations for r in result.runs for t in r.turns]
    assert [r.turns[1].reply for r in result.runs] == ["Your reference is BK-1."] * 3
    assert result.runs[0].turns[0].tool_calls[0].args == {"day": "friday", "time": "10am"}


def test_missing_pydantic_ai_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_agent_eval.errors import MissingExtraError

    agent = Agent(TestModel())
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)
    with pytest.raises(MissingExtraError, match="PydanticAIAdapter needs pydantic_ai"):
        PydanticAIAdapter(agent)


def test_importing_the_adapter_modules_does_not_import_their_sdks() -> None:
    code = (
        "import sys, pytest_agent_eval.adapters.openai, pytest_agent_eval.adapters.pydantic_ai\n"
        "print(sorted(m for m in ('pydantic_ai', 'openai') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_pydantic_ai_1_retry_prompt_for_an_unknown_tool_reads_refused() -> None:
    """pydantic-ai 1.x (still supported) answers an unknown tool name with a retry prompt
    rather than a tool return with an outcome: the call is refused all the same."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, RetryPromptPart, ToolCallPart

    from pytest_agent_eval.adapters.pydantic_ai import tool_calls_from_messages

    messages = [
        ModelResponse(parts=[ToolCallPart("book", {"party": 2}, tool_call_id="a")]),
        ModelRequest(
            parts=[
                RetryPromptPart(
                    "Unknown tool name: 'book'. Available tools: 'menu'",
                    tool_name="book",
                    tool_call_id="a",
                )
            ]
        ),
        ModelResponse(parts=[ToolCallPart("menu", {"diet": "vegan"}, tool_call_id="b")]),
        ModelRequest(
            parts=[RetryPromptPart("diet must be one of ...", tool_name="menu", tool_call_id="b")]
        ),
    ]
    book, menu = tool_calls_from_messages(messages)
    assert (book.outcome, book.refused) == ("refused", True)
    assert (menu.outcome, menu.refused) == ("error", False)  # a bad argument: a call made
