"""Run transcripts against a LangChain runnable: a chat model (with tools the adapter runs), a
chain, or an agent graph that runs its own tools (LangGraph, ``create_agent``).

Flow of one turn, in a conversation that keeps LangChain's own message list per run:

1. Append a ``HumanMessage`` with the turn's text (a ``SystemMessage`` opens the conversation
   when ``system_prompt`` is given).
2. ``await runnable.ainvoke(input, config)``: a chat model gets the message list; anything else
   gets ``{input_key: messages}`` (the state of a LangGraph agent), or the list when
   ``input_key=None``.
3. The answer decides what happened:

   - a message (a chat model): its tool calls are run with ``tools`` (bound to the model with
     ``bind_tools``), the ``ToolMessage`` results appended, and the model called again, at most
     ``max_steps`` times per turn. Without ``tools`` the calls are recorded, not run.
   - a mapping with ``input_key`` (an agent graph): the messages after the ones sent are this
     turn's; the graph ran the tools, so their ``ToolMessage`` results are read from there
     (``status="error"`` marks a failed call).
   - a string (a chain ending in a string parser): the reply.

4. The reply is the text of the last AI message; every tool call of the turn goes in
   ``AgentReply.tool_calls`` with its arguments and output; ``usage_metadata`` of the AI
   messages adds up to the turn's usage.

The messages, tool calls and tool results persist across the turns of one run, never across
runs. A failing ``ainvoke`` becomes an `AdapterError` naming the runnable and the turn; a tool
that raises does not end the run: the error goes back to the model as the tool's result.

langchain-core is imported when an adapter is built, never with this module.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._retry import describe_error
from ..errors import AdapterError, require_extra
from ..models import AgentReply, ToolCall, Usage
from ._args import coerce_args, reply_text
from ._crash import agent_crashed
from .base import Conversation, ConversationInfo, TurnInput

__all__ = ["DEFAULT_MAX_STEPS", "LangChainAdapter", "text_of", "tool_calls_from_messages"]

DEFAULT_MAX_STEPS = 8
"""Model calls allowed per turn when the adapter runs the tools (as for `OpenAIAdapter`)."""

_EXTRA = {"extra": "langchain", "feature": "LangChainAdapter"}


def _takes_messages(runnable: Any) -> bool:
    """True for a chat model, also one wrapped by ``bind_tools`` / ``bind`` (a binding)."""
    from langchain_core.language_models import BaseChatModel

    seen = 0
    while runnable is not None and seen < 8:
        if isinstance(runnable, BaseChatModel):
            return True
        runnable, seen = getattr(runnable, "bound", None), seen + 1
    return False


def _name_of(runnable: Any) -> str:
    get_name = getattr(runnable, "get_name", None)
    if callable(get_name):
        try:
            return str(get_name())
        except Exception:  # a name is only for messages; never fail on it
            pass
    return type(runnable).__name__


def text_of(message: Any) -> str:
    """The text of a LangChain message: string content, or the text blocks of a list."""
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return "" if content is None else str(content)


def _usage(messages: Iterable[Any]) -> Usage | None:
    total: Usage | None = None
    for message in messages:
        if getattr(message, "type", None) != "ai":
            continue
        meta = getattr(message, "usage_metadata", None) or {}
        step = Usage(
            input_tokens=int(meta.get("input_tokens", 0) or 0),
            output_tokens=int(meta.get("output_tokens", 0) or 0),
            requests=1,
        )
        if meta:
            total = step if total is None else total + step
        elif total is not None:
            total = total + Usage(requests=1)
    return total


def tool_calls_from_messages(messages: Iterable[Any]) -> list[ToolCall]:
    """Every tool call the AI messages in ``messages`` made, with the result its
    ``ToolMessage`` carried (``status="error"`` marks a failure; one naming a tool the agent
    does not have, a refusal) and the malformed calls a model produced (``invalid_tool_calls``),
    in order."""
    calls: list[ToolCall] = []
    by_id: dict[str, ToolCall] = {}
    for message in messages:
        kind = getattr(message, "type", None)
        if kind == "ai":
            for call in getattr(message, "tool_calls", None) or []:
                record = ToolCall(
                    str(call.get("name")), coerce_args(call.get("args")), call_id=call.get("id")
                )
                calls.append(record)
                if record.call_id:
                    by_id[record.call_id] = record
            for bad in getattr(message, "invalid_tool_calls", None) or []:
                error = str(bad.get("error") or "the model sent arguments that do not parse")
                calls.append(
                    ToolCall(
                        str(bad.get("name") or "?"),
                        coerce_args(bad.get("args")),
                        is_error=True,
                        call_id=bad.get("id"),
                        error=error,
                        output=f"Error: {error}",
                    )
                )
        elif kind == "tool":
            returned = by_id.get(str(getattr(message, "tool_call_id", "")))
            if returned is None:
                continue
            returned.output = text_of(message)
            if getattr(message, "status", "success") == "error":
                returned.is_error = True
                returned.error = returned.error or text_of(message)
                returned.refused = _REFUSED.match(returned.output) is not None
    return calls


_REFUSED = re.compile(r"Error: (unknown tool '|\S+ is not a valid tool, try one of )")
"""The error result of a call to a tool the agent does not have, as this adapter's tool loop
and LangGraph's ``ToolNode`` write it: refused, nothing ran."""


class LangChainAdapter:
    """An `AgentAdapter` over a LangChain runnable.

    Args:
        runnable: A chat model, a chain, or an agent graph (anything with ``ainvoke``).
        tools: LangChain tools (``@tool`` functions, ``BaseTool``s, or plain functions) for a
            chat model: bound with ``bind_tools`` and run by the adapter. A graph runs its
            own tools; give them to the graph instead.
        runnable_factory: Alternatively, a zero-argument callable (sync or async) returning a
            fresh runnable per conversation, for runnables that keep state.
        system_prompt: Opens every conversation as a ``SystemMessage``.
        input_key: The key of the message list in the input and output of a non-model
            runnable (``"messages"`` for LangGraph agents); None sends the list itself.
        config: A ``RunnableConfig`` for every ``ainvoke`` (tags, callbacks, recursion limit).
        max_steps: Most model calls per turn when the adapter runs the tools.

    Raises:
        MissingExtraError: Without langchain-core (``pip install 'pytest-agent-eval[langchain]'``).
        TypeError: For something that is not a runnable, or ``tools`` with a runnable that is
            not a chat model.

    Example:
        ```python
        from langchain.agents import create_agent
        from pytest_agent_eval.adapters.langchain import LangChainAdapter

        @pytest.fixture
        def llm_eval_agent():
            return LangChainAdapter(create_agent("openai:gpt-4o-mini", tools=[book_slot]))
        ```
    """

    consumes_audio = False

    def __init__(
        self,
        runnable: Any = None,
        *,
        tools: Iterable[Any] = (),
        runnable_factory: Callable[[], Any] | None = None,
        system_prompt: str | None = None,
        input_key: str | None = "messages",
        config: Mapping[str, Any] | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
    ) -> None:
        require_extra("langchain_core", **_EXTRA)
        if (runnable is None) == (runnable_factory is None):
            raise TypeError("LangChainAdapter takes a runnable or runnable_factory, not both")
        if runnable is not None:
            self._check(runnable)
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.runnable = runnable
        self.runnable_factory = runnable_factory
        self.tools = [self._as_tool(t) for t in tools]
        names = [t.name for t in self.tools]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"tool names must be unique; repeated: {', '.join(repeated)}")
        self.system_prompt = system_prompt
        self.input_key = input_key
        self.config = dict(config) if config is not None else None
        self.max_steps = max_steps
        if runnable is not None and self.tools:
            self._bind(runnable)  # fail at construction, not in the middle of a run

    @staticmethod
    def _check(runnable: Any) -> None:
        if not callable(getattr(runnable, "ainvoke", None)):
            raise TypeError(
                "LangChainAdapter needs a LangChain runnable (a chat model, a chain or a "
                f"compiled graph, with .ainvoke()); got {type(runnable).__name__}"
            )

    @staticmethod
    def _as_tool(spec: Any) -> Any:
        from langchain_core.tools import BaseTool, StructuredTool

        if isinstance(spec, BaseTool):
            return spec
        if inspect.iscoroutinefunction(spec):
            return StructuredTool.from_function(coroutine=spec)
        if callable(spec):
            return StructuredTool.from_function(spec)
        raise TypeError(
            f"each tool must be a LangChain tool or a function; got {type(spec).__name__}"
        )

    def _bind(self, runnable: Any) -> Any:
        if not self.tools:
            return runnable
        bind_tools = getattr(runnable, "bind_tools", None)
        if not _takes_messages(runnable) or not callable(bind_tools):
            raise TypeError(
                f"tools= needs a chat model with bind_tools(); {_name_of(runnable)} is not one. "
                "An agent graph runs its own tools: give them to the graph instead"
            )
        return bind_tools(self.tools)

    async def start_conversation(self, info: ConversationInfo) -> Conversation:
        """A fresh conversation: an empty message list (and a fresh runnable, with a factory)."""
        runnable = self.runnable
        if self.runnable_factory is not None:
            made = self.runnable_factory()
            runnable = await made if inspect.isawaitable(made) else made
            self._check(runnable)
        return _LangChainConversation(self, runnable, self._bind(runnable))


class _LangChainConversation:
    """One run: LangChain's message list grows turn by turn."""

    def __init__(self, adapter: LangChainAdapter, runnable: Any, bound: Any) -> None:
        from langchain_core.messages import SystemMessage

        self._adapter = adapter
        self._runnable = bound
        self._name = _name_of(runnable)
        self._takes_messages = _takes_messages(runnable)
        self._tools = {t.name: t for t in adapter.tools}
        self.messages: list[Any] = []
        if adapter.system_prompt:
            self.messages.append(SystemMessage(adapter.system_prompt))

    def _input(self) -> Any:
        key = self._adapter.input_key
        if self._takes_messages or key is None:
            return list(self.messages)
        return {key: list(self.messages)}

    async def _invoke(self, turn: TurnInput, step: int) -> Any:
        try:
            return await self._runnable.ainvoke(self._input(), self._adapter.config)
        except Exception as exc:  # the runnable (the user's chain, its model) raised: a crash
            raise agent_crashed(
                f"LangChain runnable {self._name!r} failed on turn {turn.index + 1} "
                f"({turn.text[:60]!r}), step {step}: {describe_error(exc)}",
                exc,
            ) from exc

    async def respond(self, turn: TurnInput) -> AgentReply:
        from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

        self.messages.append(HumanMessage(turn.text))
        start = len(self.messages)
        for step in range(1, self._adapter.max_steps + 1):
            result = await self._invoke(turn, step)
            if isinstance(result, BaseMessage):
                self.messages.append(result)
                pending = list(getattr(result, "tool_calls", None) or [])
                if pending and self._tools:
                    for call in pending:
                        self.messages.append(await self._run_tool(call))
                    continue
                reply = text_of(result)
            elif isinstance(result, Mapping) and self._adapter.input_key in result:
                returned = list(result[self._adapter.input_key])
                sent = len(self.messages)
                self.messages = returned
                new = returned[sent:] if len(returned) >= sent else returned
                start = min(start, len(returned) - len(new))
                last_ai = [m for m in new if getattr(m, "type", None) == "ai"]
                reply = text_of(last_ai[-1]) if last_ai else ""
            else:
                reply = reply_text(result)
                self.messages.append(AIMessage(reply))
            turn_messages = self.messages[start:]
            return AgentReply(
                reply,
                list[ToolCall | str](tool_calls_from_messages(turn_messages)),
                usage=_usage(turn_messages),
            )
        names = ", ".join(str(c.name) for c in tool_calls_from_messages(self.messages[start:])[-3:])
        raise AdapterError(
            f"LangChain runnable {self._name!r} was still calling tools ({names}) after "
            f"max_steps={self._adapter.max_steps} model calls on turn {turn.index + 1}; raise "
            "max_steps or check the tool results it gets"
        )

    async def _run_tool(self, call: Mapping[str, Any]) -> Any:
        from langchain_core.messages import ToolMessage

        name, call_id = str(call.get("name")), str(call.get("id") or "")
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return ToolMessage(
                f"Error: unknown tool {name!r}; available tools: {known}",
                tool_call_id=call_id,
                status="error",
            )
        try:
            result = await tool.ainvoke({**call, "type": "tool_call"})
        except Exception as exc:  # the model sees the error and may recover, as with real APIs
            text = " ".join(str(exc).split())
            return ToolMessage(
                f"Error: {type(exc).__name__}: {text}", tool_call_id=call_id, status="error"
            )
        if isinstance(result, ToolMessage):
            return result
        return ToolMessage(reply_text(result), tool_call_id=call_id)

    async def aclose(self) -> None:
        self.messages = []
