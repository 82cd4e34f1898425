"""Run transcripts against a pydantic-ai ``Agent``, keeping its own message history per run.

Each run gets a conversation holding the agent's full message history
(``result.all_messages()``): system prompts (static and dynamic), user prompts, tool calls and
tool returns of earlier turns all reach the model on later turns, exactly as in a real
multi-turn use of the agent. The ``Agent`` object itself is shared between runs; it keeps no
per-conversation state, and a per-run ``deps`` can come from ``deps_factory``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from .._compat.pydantic_ai import usage_of
from ..errors import require_extra
from ..models import AgentReply, ToolCall
from ._crash import agent_crashed
from .base import Conversation, ConversationInfo, TurnInput

if TYPE_CHECKING:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, RetryPromptPart, ToolCallPart, ToolReturnPart

__all__ = ["PydanticAIAdapter", "render_output", "tool_calls_from_messages"]

# What pydantic-ai writes as the return of an output tool (the structured final answer), as
# opposed to a function tool the agent really called.
_OUTPUT_TOOL_RETURNS = ("Final result processed.", "Output tool not used")


def render_output(output: Any) -> str:
    """The reply text for an agent output: a string as is, structured output as indented JSON."""
    if isinstance(output, str):
        return output
    try:
        from pydantic_core import to_json

        return to_json(output, indent=2).decode()
    except Exception:  # pydantic_core cannot serialise everything; repr always works
        return repr(output)


def _args_of(part: Any) -> dict[str, Any] | None:
    try:
        args = part.args_as_dict()
    except Exception:  # malformed JSON arguments from the model: keep them visible
        raw = part.args if isinstance(part.args, str) else json.dumps(part.args, default=repr)
        return {"_raw": raw}
    return dict(args) if isinstance(args, dict) else None


_REFUSALS = ("unknown_tool", "unavailable_tool")
_UNKNOWN_TOOL_WORDS = "Unknown tool name:"
"""How pydantic-ai 1.x's retry prompt begins for a tool name the agent does not have."""
"""The retry causes (pydantic-ai 2.x ``RetryInfo.cause``) of a call refused before it ran."""


def _text_of(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, default=repr)


def tool_calls_from_messages(
    messages: Sequence[ModelMessage], *, output_tool_names: Sequence[str] = ()
) -> list[ToolCall]:
    """Every function-tool call in ``messages``, with its arguments and result.

    A call answered by a tool return gets ``output``; one answered by a retry prompt (the
    tool raised ``ModelRetry`` or got bad arguments) gets ``is_error=True`` and the error
    text as ``error``; one pydantic-ai refused (an unknown tool name, a tool not available
    yet) also gets ``refused=True``. Output-tool calls (the agent's structured final answer) are left out.

    Args:
        messages: pydantic-ai messages, typically ``result.new_messages()``.
        output_tool_names: Names of output tools to leave out, besides those recognised by
            their "Final result processed." return.
    """
    calls: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    outputs: set[str] = set()
    for message in messages:
        for any_part in message.parts:
            # Dispatch on part_kind, as pydantic-ai names its parts; the casts only tell the
            # type checker which part each kind is.
            kind = getattr(any_part, "part_kind", "")
            if kind == "tool-call":
                call = cast("ToolCallPart", any_part)
                call_id = call.tool_call_id or f"call_{len(order)}"
                calls[call_id] = {"name": call.tool_name, "args": _args_of(call), "id": call_id}
                order.append(call_id)
                if call.tool_name in output_tool_names:
                    outputs.add(call_id)
            elif kind == "tool-return":
                back = cast("ToolReturnPart", any_part)
                if back.tool_call_id not in calls:
                    continue
                content = back.content
                if isinstance(content, str) and content.startswith(_OUTPUT_TOOL_RETURNS):
                    outputs.add(back.tool_call_id)
                entry = calls[back.tool_call_id]
                entry["output"] = content
                # pydantic-ai 2.x reports a tool's ModelRetry or failure as a tool return
                # with an outcome other than "success" (1.x used a retry prompt, below).
                if getattr(back, "outcome", "success") != "success":
                    entry["is_error"] = True
                    entry["error"] = _text_of(content)
                    # A name the agent has no tool for, or one not available yet: refused
                    # before anything ran.
                    cause = getattr(getattr(back, "retry", None), "cause", None)
                    entry["refused"] = cause in _REFUSALS
            elif kind == "retry-prompt":
                retry = cast("RetryPromptPart", any_part)
                retry_id = getattr(retry, "tool_call_id", None)
                if retry_id not in calls:
                    continue
                entry = calls[retry_id]
                entry["is_error"] = True
                retried = retry.content
                entry["output"] = entry["error"] = _text_of(retried)
                # 1.x names a tool the agent has no tool for in the retry prompt's words.
                entry["refused"] = isinstance(retried, str) and retried.startswith(
                    _UNKNOWN_TOOL_WORDS
                )
    return [
        ToolCall(
            calls[i]["name"],
            calls[i]["args"],
            output=calls[i].get("output"),
            is_error=calls[i].get("is_error", False),
            call_id=calls[i]["id"],
            error=calls[i].get("error"),
            # A return or retry part was seen: the call ended (its output may be None).
            done=True if "output" in calls[i] else None,
            refused=calls[i].get("refused", False),
        )
        for i in order
        if i not in outputs
    ]


class PydanticAIAdapter:
    """An `AgentAdapter` over a pydantic-ai ``Agent``.

    Args:
        agent: The agent under test.
        deps: The ``deps`` passed to every run of the agent.
        deps_factory: Alternatively, a zero-argument callable (sync or async) building fresh
            ``deps`` for each conversation, for deps that hold state (a fake database, say).
        model: Override the agent's model (a model id or ``Model``), e.g. a ``TestModel``.
        model_settings: pydantic-ai model settings for every request.
        usage_limits: pydantic-ai ``UsageLimits`` for each turn.
        render: Turns the agent's output into the reply text; default: strings as they
            are, structured output as indented JSON.

    Example:
        ```python
        from pytest_agent_eval.adapters.pydantic_ai import PydanticAIAdapter

        @pytest.fixture
        def llm_eval_agent():
            return PydanticAIAdapter(booking_agent, deps_factory=FakeCalendar)
        ```
    """

    consumes_audio = False

    def __init__(
        self,
        agent: Agent[Any, Any],
        *,
        deps: Any = None,
        deps_factory: Callable[[], Any] | None = None,
        model: Any = None,
        model_settings: Any = None,
        usage_limits: Any = None,
        render: Callable[[Any], str] = render_output,
    ) -> None:
        # pydantic-ai-slim is a core dependency: reaching this means it was uninstalled.
        require_extra("pydantic_ai", extra="openai", feature="PydanticAIAdapter")
        if not callable(getattr(agent, "run", None)):
            raise TypeError(
                f"PydanticAIAdapter needs a pydantic_ai.Agent; got {type(agent).__name__}"
            )
        if deps is not None and deps_factory is not None:
            raise TypeError("PydanticAIAdapter takes deps or deps_factory, not both")
        self.agent = agent
        self.deps = deps
        self.deps_factory = deps_factory
        self.model = model
        self.model_settings = model_settings
        self.usage_limits = usage_limits
        self.render = render

    async def start_conversation(self, info: ConversationInfo) -> Conversation:
        """A fresh conversation with an empty history (and fresh deps, with a factory)."""
        deps = self.deps
        if self.deps_factory is not None:
            deps = self.deps_factory()
            if inspect.isawaitable(deps):
                deps = await deps
        return _PydanticAIConversation(self, deps)


class _PydanticAIConversation:
    """One run: the agent's message history grows turn by turn."""

    def __init__(self, adapter: PydanticAIAdapter, deps: Any) -> None:
        self._adapter = adapter
        self._deps = deps
        self.messages: list[ModelMessage] = []

    async def respond(self, turn: TurnInput) -> AgentReply:
        adapter = self._adapter
        agent = adapter.agent
        kwargs: dict[str, Any] = {"message_history": list(self.messages) or None}
        if self._deps is not None:
            kwargs["deps"] = self._deps
        if adapter.model is not None:
            kwargs["model"] = adapter.model
        if adapter.model_settings is not None:
            kwargs["model_settings"] = adapter.model_settings
        if adapter.usage_limits is not None:
            kwargs["usage_limits"] = adapter.usage_limits
        try:
            result = await agent.run(turn.text, **kwargs)
        except Exception as exc:  # the agent (its tools, its model) raised: a crash
            name = getattr(agent, "name", None) or type(agent).__name__
            raise agent_crashed(
                f"pydantic-ai agent {name!r} failed on turn {turn.index + 1} "
                f"({turn.text[:60]!r}): {type(exc).__name__}: {exc}",
                exc,
            ) from exc
        self.messages = list(result.all_messages())
        output_tool = getattr(result, "_output_tool_name", None)
        calls = tool_calls_from_messages(
            result.new_messages(), output_tool_names=(output_tool,) if output_tool else ()
        )
        metadata: dict[str, Any] = {}
        if not isinstance(result.output, str):
            metadata["output"] = result.output
        return AgentReply(
            adapter.render(result.output),
            list(calls),
            usage=usage_of(result),
            metadata=metadata,
            model=_answering_model(result.new_messages()),
        )

    async def aclose(self) -> None:
        self.messages = []


def _answering_model(messages: Any) -> str | None:
    """The name of the model that gave the last response of the turn, as pydantic-ai recorded
    it on each ``ModelResponse``; None when no response names one."""
    for message in reversed(list(messages)):
        name = getattr(message, "model_name", None)
        if name:
            return str(name)
    return None
