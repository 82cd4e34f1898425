"""Run transcripts against a model through the OpenAI SDK's Chat Completions, with real tools.

Flow of one turn:

1. Append ``{"role": "user", "content": <turn text>}`` to the conversation's messages (the
   system prompt, if any, opens them).
2. Call ``chat.completions.create(model=..., messages=..., tools=...)``. A sync ``OpenAI``
   client runs in a worker thread; an ``AsyncOpenAI`` client is awaited.
3. If the assistant asks for tools, run each implementation (sync or async) with its parsed
   arguments, append the assistant message and one ``tool`` message per call, and go to 2;
   at most ``max_steps`` model calls per turn.
4. The assistant's text is the reply; every tool call of the turn, with its arguments and
   result, goes in ``AgentReply.tool_calls``; token usage of all steps in ``usage``.

The messages, tool calls and tool results persist across the turns of one run, and only
standard Chat Completions keys are ever sent (no ``audio`` or other extras). API failures
become an `AdapterError` naming the model, the turn and the HTTP status. A tool that raises
does not end the run: the error goes back to the model as the tool result, and the call is
recorded with ``is_error=True`` and the error's text; a call to a tool the agent does not have
is recorded as refused (``refused=True``: nothing ran).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from .._retry import describe_error
from ..errors import AdapterError, require_extra
from ..models import AgentReply, ToolCall, Usage
from ._crash import agent_crashed
from .base import Conversation, ConversationInfo, TurnInput

__all__ = ["DEFAULT_MAX_STEPS", "OpenAIAdapter", "Tool", "ToolSpec"]

DEFAULT_MAX_STEPS = 8
"""Model calls allowed per turn: room for a few rounds of tools, small enough that a model
looping on a tool fails fast instead of spending tokens."""


@dataclass
class Tool:
    """A tool the model may call: a Python function and the JSON schema the model sees.

    Without ``parameters``, the schema is derived from the function's signature and type
    hints (via pydantic), and arguments are validated and converted before the call; with an
    explicit ``parameters`` schema, the parsed JSON arguments are passed as keyword arguments
    unchanged.

    Args:
        function: The implementation, sync or async, called with keyword arguments.
        name: Tool name; default: the function's name.
        description: Shown to the model; default: the first paragraph of the docstring.
        parameters: JSON schema of the arguments object; default: derived.
    """

    function: Callable[..., Any]
    name: str | None = None
    description: str | None = None
    parameters: dict[str, Any] | None = None
    _validator: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not callable(self.function):
            raise TypeError(f"Tool needs a callable; got {type(self.function).__name__}")
        self.name = self.name or getattr(self.function, "__name__", None)
        if not self.name or self.name == "<lambda>":
            raise TypeError("Tool needs a name for a lambda or a callable without __name__")
        if self.description is None:
            doc = inspect.getdoc(self.function) or ""
            self.description = doc.split("\n\n")[0].strip()
        if self.parameters is None:
            self._validator = _arguments_model(self.function, self.name)
            schema = self._validator.model_json_schema()
            schema.pop("title", None)
            self.parameters = schema

    def schema(self) -> dict[str, Any]:
        """The entry for the ``tools`` list of a Chat Completions request."""
        function: dict[str, Any] = {"name": self.name, "parameters": self.parameters}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}

    async def call(self, args: dict[str, Any]) -> Any:
        """Validate ``args`` (derived schemas only) and run the function."""
        kwargs = args
        if self._validator is not None:
            validated = self._validator.model_validate(args)
            kwargs = {name: getattr(validated, name) for name in type(validated).model_fields}
        result = self.function(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result


ToolSpec: TypeAlias = "Tool | Callable[..., Any] | tuple[Mapping[str, Any], Callable[..., Any]]"
"""A `Tool`, a plain function (schema derived), or ``(schema, function)`` where the schema is
an OpenAI tool entry (``{"type": "function", "function": {...}}``) or its ``function`` part."""


def _arguments_model(function: Callable[..., Any], name: str) -> Any:
    """A pydantic model of the function's keyword arguments."""
    from pydantic import ConfigDict, create_model

    try:
        hints = typing.get_type_hints(function)
    except Exception:  # unresolvable annotations: fall back to Any rather than refuse the tool
        hints = {}
    fields: dict[str, Any] = {}
    for param in inspect.signature(function).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, default)
    return create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)


def _as_tool(spec: Any) -> Tool:
    if isinstance(spec, Tool):
        return spec
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], Mapping):
        schema, function = spec
        body = schema.get("function", schema)
        if "name" not in body:
            raise TypeError(f"tool schema needs a 'name'; got keys {sorted(body)}")
        return Tool(
            function,
            name=str(body["name"]),
            description=body.get("description", ""),
            parameters=dict(body.get("parameters") or {"type": "object", "properties": {}}),
        )
    if callable(spec):
        return Tool(spec)
    raise TypeError(
        "each tool must be a function, a Tool(function, ...), or a (schema, function) pair; "
        f"got {type(spec).__name__}"
    )


def _as_tools(specs: Iterable[Any]) -> list[Tool]:
    tools = [_as_tool(spec) for spec in specs]
    names = [t.name for t in tools]
    duplicates = sorted({n for n in names if n is not None and names.count(n) > 1})
    if duplicates:
        raise ValueError(f"tool names must be unique; repeated: {', '.join(duplicates)}")
    return tools


def _tool_content(result: Any) -> str:
    if isinstance(result, str):
        return result
    try:
        from pydantic_core import to_json

        return to_json(result).decode()
    except Exception:  # not serialisable: the model still gets something readable
        return repr(result)


def _parse_args(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Arguments as a dict, or None and an error when the model sent malformed JSON."""
    if isinstance(raw, dict):
        return raw, None
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError) as exc:
        return None, f"arguments are not valid JSON ({exc})"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


class OpenAIAdapter:
    """An `AgentAdapter` for a model behind the OpenAI SDK (Chat Completions), with tools.

    Args:
        client: An ``openai.OpenAI`` or ``openai.AsyncOpenAI`` client (any base URL: OpenAI,
            Azure, or a local OpenAI-compatible server).
        model: The model name sent with each request.
        system_prompt: Opens every conversation as a ``system`` message.
        tools: Functions, `Tool` objects or ``(schema, function)`` pairs the model may call.
        tools_factory: Alternatively, a zero-argument callable returning the tools, called
            once per conversation: for tools bound to per-run state (a fresh fake database
            for every run).
        max_steps: Most model calls per turn before the turn fails.
        options: Extra keyword arguments for ``chat.completions.create`` (``temperature``,
            ``tool_choice``, ``seed``, ...).

    Example:
        ```python
        from openai import AsyncOpenAI
        from pytest_agent_eval.adapters.openai import OpenAIAdapter

        def book_slot(day: str, time: str) -> str:
            \"\"\"Book a table.\"\"\"
            return "BK-1"

        @pytest.fixture
        def llm_eval_agent():
            return OpenAIAdapter(AsyncOpenAI(), "gpt-4o-mini", "You book tables.", tools=[book_slot])
        ```
    """

    consumes_audio = False

    def __init__(
        self,
        client: Any,
        model: str,
        system_prompt: str | None = None,
        *,
        tools: Iterable[ToolSpec] = (),
        tools_factory: Callable[[], Iterable[ToolSpec]] | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        require_extra("openai", extra="openai", feature="OpenAIAdapter")
        create = getattr(
            getattr(getattr(client, "chat", None), "completions", None), "create", None
        )
        if not callable(create):
            raise TypeError(
                "OpenAIAdapter needs an openai.OpenAI or openai.AsyncOpenAI client "
                f"(with chat.completions.create); got {type(client).__name__}"
            )
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.client = client
        self.model = model
        self.system_prompt = system_prompt
        self.tools: list[Tool] = _as_tools(tools)
        if tools_factory is not None and self.tools:
            raise TypeError("OpenAIAdapter takes tools or tools_factory, not both")
        self.tools_factory = tools_factory
        if tools_factory is not None:
            _as_tools(tools_factory())  # fail at construction, not in the middle of a run
        self.max_steps = max_steps
        self.options = dict(options or {})
        for reserved in ("model", "messages", "tools", "stream"):
            if reserved in self.options:
                raise ValueError(f"options may not set {reserved!r}; the adapter sets it")

    async def start_conversation(self, info: ConversationInfo) -> Conversation:
        """A fresh conversation: only the system prompt, if any."""
        tools = self.tools
        if self.tools_factory is not None:
            tools = _as_tools(self.tools_factory())
        return _OpenAIConversation(self, tools)

    async def _create(self, **kwargs: Any) -> Any:
        create = self.client.chat.completions.create
        # The SDK wraps `create` in a sync decorator; the async client's is a coroutine
        # function underneath.
        if inspect.iscoroutinefunction(inspect.unwrap(create)):
            return await create(**kwargs)
        # A sync client blocks: keep it off the event loop so runs stay concurrent.
        result = await asyncio.to_thread(create, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result


class _OpenAIConversation:
    """One run: the Chat Completions message list grows turn by turn."""

    def __init__(self, adapter: OpenAIAdapter, tools: list[Tool]) -> None:
        self._adapter = adapter
        self._tools = {str(t.name): t for t in tools}
        self._schemas = [t.schema() for t in tools]
        self.messages: list[dict[str, Any]] = []
        if adapter.system_prompt:
            self.messages.append({"role": "system", "content": adapter.system_prompt})

    async def respond(self, turn: TurnInput) -> AgentReply:
        adapter = self._adapter
        self.messages.append({"role": "user", "content": turn.text})
        calls: list[ToolCall] = []
        usage = Usage(requests=0)
        for step in range(1, adapter.max_steps + 1):
            kwargs: dict[str, Any] = {"model": adapter.model, "messages": list(self.messages)}
            if self._schemas:
                kwargs["tools"] = self._schemas
            kwargs.update(adapter.options)
            try:
                response = await adapter._create(**kwargs)
            except Exception as exc:  # the agent's provider failed it: a crash of the agent
                raise agent_crashed(
                    f"OpenAI chat completion failed for model {adapter.model!r} on turn "
                    f"{turn.index + 1}, step {step}: {describe_error(exc)}",
                    exc,
                ) from exc
            usage = usage + _usage_of(response)
            answered_by = str(getattr(response, "model", None) or adapter.model)
            choices = getattr(response, "choices", None) or []
            if not choices:
                raise AdapterError(
                    f"OpenAI chat completion for model {adapter.model!r} on turn "
                    f"{turn.index + 1} returned no choices"
                )
            message = choices[0].message
            requested = list(getattr(message, "tool_calls", None) or [])
            content = getattr(message, "content", None)
            assistant: dict[str, Any] = {"role": "assistant", "content": content}
            if not requested:
                self.messages.append(assistant)
                return AgentReply(content or "", list(calls), usage=usage, model=answered_by)
            assistant["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.function.name,
                        "arguments": call.function.arguments,
                    },
                }
                for call in requested
            ]
            self.messages.append(assistant)
            for call in requested:
                record = await self._run_tool(call)
                calls.append(record)
                self.messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "content": _tool_content(record.output),
                    }
                )
        names = ", ".join(c.name for c in calls[-3:])
        raise AdapterError(
            f"model {adapter.model!r} was still calling tools ({names}) after max_steps="
            f"{adapter.max_steps} model calls on turn {turn.index + 1}; raise max_steps or "
            "check the tool results it gets"
        )

    async def _run_tool(self, call: Any) -> ToolCall:
        name = call.function.name
        args, problem = _parse_args(call.function.arguments)
        recorded_args = args if args is not None else {"_raw": call.function.arguments}
        tool = self._tools.get(name)
        if tool is None:
            # Not one of the agent's tools: refused, nothing ran (not a call with these args).
            known = ", ".join(sorted(self._tools)) or "none"
            problem = f"unknown tool {name!r}; available tools: {known}"
        if problem is not None or tool is None:
            return ToolCall(
                name,
                recorded_args,
                output=f"Error: {problem}",
                is_error=True,
                call_id=call.id,
                error=problem,
                done=True,
                refused=tool is None,
            )
        try:
            output = await tool.call(args or {})
        except Exception as exc:  # the model sees the error and may recover, as with real APIs
            text = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
            return ToolCall(
                name,
                recorded_args,
                output=f"Error: {text}",
                is_error=True,
                call_id=call.id,
                error=text,
                done=True,
            )
        # done: a tool returning None still returned (tool_calls_outcome can tell).
        return ToolCall(name, recorded_args, output=output, call_id=call.id, done=True)

    async def aclose(self) -> None:
        self.messages = []


def _usage_of(response: Any) -> Usage:
    usage = getattr(response, "usage", None)
    return Usage(
        input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        requests=1,
    )
