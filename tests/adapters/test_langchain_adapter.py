"""LangChainAdapter on real langchain-core runnables and a real LangGraph agent graph, driven by
scripted chat models (a `BaseChatModel` subclass and langchain-core's own fake models); no
network."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from pytest_agent_eval._runner import RunSettings, run_transcript
from pytest_agent_eval.adapters.langchain import LangChainAdapter, tool_calls_from_messages
from pytest_agent_eval.errors import MissingExtraError, install_command
from pytest_agent_eval.models import Expect, ToolCallArgsConfig, Transcript, Turn


class ScriptedChatModel(BaseChatModel):
    """A chat model whose answer comes from ``script(messages)``; records every request and the
    tools bound to it, as a provider's model would receive them."""

    script: Callable[[list[BaseMessage]], AIMessage]
    requests: list[list[BaseMessage]] = Field(default_factory=list)
    bound: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.requests.append(list(messages))
        if "tools" in kwargs:
            self.bound[:] = [t["function"]["name"] for t in kwargs["tools"]]
        return ChatResult(generations=[ChatGeneration(message=self.script(messages))])

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


USAGE = {"input_tokens": 10, "output_tokens": 4, "total_tokens": 14}


def booking_script(messages: list[BaseMessage]) -> AIMessage:
    """Books in two tool steps; on "cancel", finds the reference in the earlier tool results."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        if last.status == "error":
            return AIMessage(f"Sorry, that failed: {last.content}", usage_metadata=USAGE)
        if last.tool_call_id == "c3":
            return AIMessage(f"Done: {last.content}.", usage_metadata=USAGE)
        if last.tool_call_id == "c1":
            call = {
                "name": "create_booking",
                "args": {"day": "friday", "party_size": 2},
                "id": "c2",
            }
            return AIMessage("", tool_calls=[call], usage_metadata=USAGE)
        return AIMessage(f"Booked for Friday, reference {last.content}.", usage_metadata=USAGE)
    text = str(last.content).lower()
    if "cancel" in text:
        refs = [
            m.content for m in messages if isinstance(m, ToolMessage) and "BK-" in str(m.content)
        ]
        reference = refs[-1] if refs else "none"
        if "wrong" in text:
            reference = "BK-0"
        call = {"name": "cancel_booking", "args": {"reference": reference}, "id": "c3"}
        return AIMessage("", tool_calls=[call], usage_metadata=USAGE)
    call = {"name": "check_availability", "args": {"day": "friday"}, "id": "c1"}
    return AIMessage("", tool_calls=[call], usage_metadata=USAGE)


@tool
def check_availability(day: str) -> str:
    """Free slots on a day."""
    return f"{day}: 19:00 free"


@tool
def create_booking(day: str, party_size: int) -> str:
    """Book a table."""
    return "BK-42"


@tool
def cancel_booking(reference: str) -> str:
    """Cancel a booking by its reference."""
    if reference != "BK-42":
        raise ValueError(f"no booking {reference}")
    return "cancelled"


TOOLS = [check_availability, create_booking, cancel_booking]

BOOK_THEN_CANCEL = Transcript(
    id="book_then_cancel",
    turns=[
        Turn(
            "Book a table for 2 on Friday",
            expect=Expect(
                tool_calls_include=["check_availability", "create_booking"],
                tool_calls_ordered=True,
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


def _run(transcript: Transcript, adapter: Any, concurrency: int = 3) -> Any:
    return asyncio.run(
        run_transcript(transcript, adapter, settings=RunSettings(concurrency=concurrency))
    )


def test_chat_model_with_tools_runs_them_and_keeps_the_tool_history() -> None:
    model = ScriptedChatModel(script=booking_script)
    result = _run(BOOK_THEN_CANCEL, LangChainAdapter(model, tools=TOOLS, system_prompt="Be brief."))

    assert result.passed, [e.reasoning for r in result.runs for t in r.turns for e in t.evaluations]
    first, second = result.runs[0].turns
    assert [(c.name, c.args, c.output) for c in first.tool_calls] == [
        ("check_availability", {"day": "friday"}, "friday: 19:00 free"),
        ("create_booking", {"day": "friday", "party_size": 2}, "BK-42"),
    ]
    assert first.reply == "Booked for Friday, reference BK-42."
    assert (first.usage.input_tokens, first.usage.output_tokens, first.usage.requests) == (
        30,
        12,
        3,
    )
    assert [(c.name, c.output, c.is_error) for c in second.tool_calls] == [
        ("cancel_booking", "cancelled", False)
    ]
    assert model.bound == ["check_availability", "create_booking", "cancel_booking"]


def test_each_run_is_its_own_conversation() -> None:
    model = ScriptedChatModel(script=booking_script)
    _run(
        BOOK_THEN_CANCEL,
        LangChainAdapter(model, tools=TOOLS, system_prompt="Be brief."),
        concurrency=3,
    )

    assert len(model.requests) == 3 * 5  # three runs: 3 model calls on turn 1, 2 on turn 2
    for request in model.requests:
        assert isinstance(request[0], SystemMessage) and request[0].content == "Be brief."
        humans = [m.content for m in request if isinstance(m, HumanMessage)]
        assert humans in (
            ["Book a table for 2 on Friday"],
            ["Book a table for 2 on Friday", "Please cancel it"],
        )
    cancel_requests = [r for r in model.requests if r[-1].content == "Please cancel it"]
    assert len(cancel_requests) == 3
    for request in cancel_requests:
        # the earlier turn's tool calls and results reach the model, once
        assert [m.content for m in request if isinstance(m, ToolMessage)] == [
            "friday: 19:00 free",
            "BK-42",
        ]


def test_a_tool_that_raises_is_an_errored_call_and_the_run_goes_on() -> None:
    model = ScriptedChatModel(script=booking_script)
    transcript = Transcript(
        id="wrong_cancel",
        turns=[
            Turn("Book for 2"),
            Turn("Cancel the wrong one", expect=Expect(reply_contains_any=["failed"])),
        ],
    )
    result = _run(transcript, LangChainAdapter(model, tools=TOOLS))

    assert result.passed
    (call,) = result.runs[0].turns[1].tool_calls
    assert call.name == "cancel_booking" and call.is_error
    assert (call.outcome, call.error) == ("error", "Error: ValueError: no booking BK-0")
    assert call.output == "Error: ValueError: no booking BK-0"
    assert result.runs[0].turns[1].reply == "Sorry, that failed: Error: ValueError: no booking BK-0"


def test_an_unknown_tool_goes_back_to_the_model_as_an_error_and_reads_refused() -> None:
    """Issue 32: the call ran nothing, so it reads ``refused`` (tool_calls_args does not count
    it), whether this adapter's loop or LangGraph's ToolNode answered it."""

    def script(messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage(f"noted: {messages[-1].content}")
        return AIMessage("", tool_calls=[{"name": "teleport", "args": {}, "id": "x"}])

    reply = asyncio.run(
        _one_turn(LangChainAdapter(ScriptedChatModel(script=script), tools=TOOLS), "go")
    )
    (call,) = reply.tool_calls
    assert (
        call.is_error and "unknown tool 'teleport'; available tools: cancel_booking" in call.output
    )
    assert reply.reply.startswith("noted: Error: unknown tool 'teleport'")
    assert call.outcome == "refused"
    (graph_call,) = tool_calls_from_messages(
        [
            AIMessage("", tool_calls=[{"name": "teleport", "args": {}, "id": "y"}]),
            ToolMessage(
                "Error: teleport is not a valid tool, try one of [cancel_booking].",
                tool_call_id="y",
                status="error",
            ),
        ]
    )
    assert graph_call.outcome == "refused"


def test_a_model_that_keeps_calling_tools_fails_the_turn_after_max_steps() -> None:
    def script(messages: list[BaseMessage]) -> AIMessage:
        return AIMessage(
            "",
            tool_calls=[
                {"name": "check_availability", "args": {"day": "x"}, "id": f"c{len(messages)}"}
            ],
        )

    transcript = Transcript(id="loop", turns=[Turn("hi")])
    result = _run(
        transcript, LangChainAdapter(ScriptedChatModel(script=script), tools=TOOLS, max_steps=3)
    )
    error = result.runs[0].turns[0].error or ""
    assert (
        "was still calling tools (check_availability, check_availability, check_availability)"
        in error
    )
    assert "max_steps=3" in error


async def _one_turn(adapter: LangChainAdapter, text: str) -> Any:
    from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput

    transcript = Transcript(id="t", turns=[Turn(text)])
    conversation = await adapter.start_conversation(
        ConversationInfo(transcript=transcript, run_index=0)
    )
    try:
        return await conversation.respond(TurnInput(turn=transcript.turns[0], index=0))
    finally:
        await conversation.aclose()


def test_generic_fake_chat_model_without_tools_records_calls_without_running_them() -> None:
    call = {"name": "create_booking", "args": {"party_size": 2}, "id": "c9"}
    model = GenericFakeChatModel(messages=iter([AIMessage("Booking now.", tool_calls=[call])]))
    reply = asyncio.run(_one_turn(LangChainAdapter(model), "Book"))
    assert reply.reply == "Booking now."
    assert [(c.name, c.args, c.output) for c in reply.tool_calls] == [
        ("create_booking", {"party_size": 2}, None)
    ]


def test_a_chain_ending_in_a_string_parser() -> None:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Be brief."), MessagesPlaceholder("messages")]
    )
    chain = (
        prompt | GenericFakeChatModel(messages=iter(["Hello!", "Still here."])) | StrOutputParser()
    )
    transcript = Transcript(
        id="chain",
        turns=[
            Turn("hi", expect=Expect(reply_contains_any=["hello"])),
            Turn("and?", expect=Expect(reply_contains_any=["still"])),
        ],
    )
    result = _run(transcript, LangChainAdapter(chain), concurrency=1)
    assert result.passed
    assert [t.reply for t in result.runs[0].turns] == ["Hello!", "Still here."]


def _booking_graph(model: ScriptedChatModel) -> Any:
    """A real LangGraph agent: model node, ToolNode, and the usual tools condition."""
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    bound = model.bind_tools(TOOLS)

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    # handle_tool_errors: a tool's exception goes back to the model as a status="error" message
    graph.add_node("tools", ToolNode(TOOLS, handle_tool_errors=True))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()


def test_langgraph_agent_graph_runs_its_own_tools() -> None:
    model = ScriptedChatModel(script=booking_script)
    result = _run(BOOK_THEN_CANCEL, LangChainAdapter(_booking_graph(model)))

    assert result.passed, [e.reasoning for r in result.runs for t in r.turns for e in t.evaluations]
    first, second = result.runs[0].turns
    assert [(c.name, c.output) for c in first.tool_calls] == [
        ("check_availability", "friday: 19:00 free"),
        ("create_booking", "BK-42"),
    ]
    assert first.reply == "Booked for Friday, reference BK-42." and first.usage.requests == 3
    assert [c.name for c in second.tool_calls] == ["cancel_booking"]
    # every run's graph input starts from that run's own first message
    for request in model.requests:
        assert request[0].content == "Book a table for 2 on Friday"


def test_langgraph_tool_error_is_marked_from_the_tool_message_status() -> None:
    model = ScriptedChatModel(script=booking_script)
    transcript = Transcript(id="wrong", turns=[Turn("Book"), Turn("Cancel the wrong one")])
    result = _run(transcript, LangChainAdapter(_booking_graph(model)))
    (call,) = result.runs[0].turns[1].tool_calls
    assert call.is_error and "no booking BK-0" in (call.output or "")
    assert "no booking BK-0" in (call.error or "")


def test_a_failing_runnable_crashes_the_run_naming_the_turn() -> None:
    class Broken(ScriptedChatModel):
        def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
            raise ConnectionError("provider unreachable")

    result = _run(
        Transcript(id="t", turns=[Turn("Book")]), LangChainAdapter(Broken(script=booking_script))
    )
    turn = result.runs[0].turns[0]
    error = turn.error or ""
    assert "LangChain runnable 'Broken' failed on turn 1 ('Book'), step 1" in error
    assert "provider unreachable" in error
    # The user's runnable raised: a crash of the agent (a FAIL no gate absorbs), not an ERROR.
    assert turn.verdict == "crashed" and result.errored_run_count == 0
    assert turn.crash is not None
    assert (turn.crash.type, turn.crash.message) == ("ConnectionError", "provider unreachable")
    assert turn.crash.where is not None and turn.crash.where.endswith(" in _generate")


def test_runnable_factory_gives_each_run_a_fresh_runnable() -> None:
    made: list[GenericFakeChatModel] = []

    def factory() -> GenericFakeChatModel:
        made.append(GenericFakeChatModel(messages=iter(["one reply per model"])))
        return made[-1]

    transcript = Transcript(
        id="t", turns=[Turn("hi", expect=Expect(reply_contains_any=["one reply"]))], runs=3
    )
    assert _run(transcript, LangChainAdapter(runnable_factory=factory)).passed
    assert len(made) == 3


def test_bad_construction_says_what_is_needed() -> None:
    with pytest.raises(TypeError, match=r"needs a LangChain runnable .* got str"):
        LangChainAdapter("not a runnable")
    chain = ChatPromptTemplate.from_messages([MessagesPlaceholder("messages")]) | StrOutputParser()
    with pytest.raises(TypeError, match="tools= needs a chat model with bind_tools"):
        LangChainAdapter(chain, tools=TOOLS)
    with pytest.raises(TypeError, match="a runnable or runnable_factory, not both"):
        LangChainAdapter()


def test_without_langchain_core_the_message_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core", None)
    with pytest.raises(MissingExtraError, match=re.escape(install_command("langchain"))):
        LangChainAdapter(object())
