"""A deterministic offline LLM for LiveKit sessions: regex rules -> tool call and/or reply."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Sequence
from typing import Any

from livekit.agents import APIStatusError, APITimeoutError, llm
from livekit.agents.types import (
    DEFAULT_API_CONNECT_OPTIONS,
    NOT_GIVEN,
    APIConnectOptions,
    NotGivenOr,
)

from ....voice._script import (
    Rule,
    ScriptContext,
    check_offered,
    decoded_output,
    parse_number,
    render,
    render_args,
)
from ..._crash import script_failure
from ..._latency import InjectedFault, LatencySpec, as_latency, provider_wait

__all__ = ["Rule", "ScriptContext", "ScriptedLLM", "parse_number"]


def declared_arg_types(tools: Sequence[Any], name: str) -> dict[str, Any]:
    """The JSON-schema ``type`` of each argument of the tool called ``name`` among ``tools``
    (empty when the tool is unknown or its schema cannot be read)."""
    from livekit.agents.llm import utils

    for tool in tools:
        try:
            schema = utils.build_legacy_openai_schema(tool, internally_tagged=True)
        except Exception:  # a raw or foreign tool: its arguments stay as the rule wrote them
            raw = getattr(tool, "info", None)
            schema = getattr(raw, "raw_schema", None) or {}
        if schema.get("name") != name:
            continue
        properties = (schema.get("parameters") or {}).get("properties") or {}
        return {arg: spec.get("type") for arg, spec in properties.items() if isinstance(spec, dict)}
    return {}


def offered_tool_names(tools: Sequence[Any]) -> list[str]:
    """The names of the tools a request offers the model (a toolset's tools included)."""
    names: list[str] = []
    for tool in tools:
        if isinstance(tool, llm.Toolset):
            names += offered_tool_names(tool.tools)
        elif isinstance(getattr(tool, "id", None), str):
            names.append(tool.id)
    return names


def _count_words(text: str) -> int:
    return len(text.split())


class ScriptedLLM(llm.LLM):  # type: ignore[type-arg]  # bare: no run-time subscript of a livekit base
    """A LiveKit LLM that answers from rules instead of a model: offline, free and repeatable.

    On each request it takes the last user message, finds the first matching `Rule`, and
    streams a response word by word:

    - a rule with ``tool`` first answers with that tool call (plus its ``preamble``); once the
      session has run the tool, the next request (whose last item is the tool's output) gets
      the rule's ``reply``. The tool must be one the request offers (the tools of the agent
      active then): a rule calling another fails the turn with an error naming the rule, the
      tool and the tools offered, since no real model could make that call;
    - a rule without ``tool`` answers with its ``reply`` directly;
    - no matching rule answers ``default_reply``.

    A reply the agent asks for with instructions (``session.generate_reply(instructions=...)``,
    typically in ``on_enter`` to greet or introduce itself, even when the agent inherited the
    conversation so far) is answered from ``instructions`` rules, matched against those
    instructions; failing that, with ``greeting`` when given. ``greeting`` also answers a
    request made before the user has said anything. A system message that came with the
    user's turn (one an agent's ``on_user_turn_completed`` adds, with nothing but system
    messages between it and the user's message) is context, not a request: unless an
    ``instructions`` rule matches it, the rules answer the user's words as usual.

    It also reports token usage (words counted as tokens), so usage capture can be tested.

    Args:
        rules: The rules, tried in order against the last user message.
        default_reply: Said when no rule matches; may use ``{user}``.
        greeting: Said for an instructed reply no ``instructions`` rule matches, and before
            the user has spoken (the agent's opening line); None falls back to the rules and
            ``default_reply``.
        instructions: Rules tried in order against the instructions of an instructed reply;
            they may call tools and use ``{user}`` like the others.
        latency: A provider's time to first token, waited (the loop free) before each answer:
            seconds, ``(p50, p95)`` seconds (log-normal), LiveKit session reports (a path or a
            list: their ``llm_node_ttft`` replayed) or a ``ProviderLatency``; None: none.
            For capacity runs (docs/capacity.md), where sessions wait on providers.

    Example:
        ```python
        ScriptedLLM([
            Rule(r"table for (?P<party>\\w+)", tool="book_table", args={"party_size": "{party}"},
                 reply="Booked: {output}."),
            Rule(r"\\bhello\\b", reply="Hello! How can I help?"),
        ])
        ```
    """

    def __init__(
        self,
        rules: Sequence[Rule],
        *,
        default_reply: str = "Sorry, I can't help with that.",
        greeting: str | None = None,
        instructions: Sequence[Rule] = (),
        latency: LatencySpec = None,
    ) -> None:
        super().__init__()
        self.latency = as_latency(latency, "ScriptedLLM(latency=...)")
        self.rules = list(rules)
        self.default_reply = default_reply
        self.greeting = greeting
        self.instructions = list(instructions)
        self.requests: list[llm.ChatContext] = []
        """A copy of the context of every request, oldest first (for assertions)."""
        self._call_ids = itertools.count(1)
        self.speaks_for = type(self).__name__
        """The model the user wrote, as errors name it (`ScriptedRealtimeModel` answers with a
        `ScriptedLLM` of its own)."""

    @property
    def model(self) -> str:
        return "scripted"

    @property
    def provider(self) -> str:
        return "pytest-agent-eval"

    def chat(
        self,
        *,
        chat_ctx: llm.ChatContext,
        tools: list[llm.Tool] | None = None,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
        parallel_tool_calls: NotGivenOr[bool] = NOT_GIVEN,
        tool_choice: NotGivenOr[llm.ToolChoice] = NOT_GIVEN,
        extra_kwargs: NotGivenOr[dict[str, Any]] = NOT_GIVEN,
    ) -> llm.LLMStream:
        self.requests.append(chat_ctx.copy())
        return _ScriptedStream(
            self, chat_ctx=chat_ctx, tools=tools or [], conn_options=conn_options
        )

    def next_call_id(self) -> str:
        """A fresh tool-call id."""
        return f"scripted_call_{next(self._call_ids)}"

    def _respond(
        self, chat_ctx: llm.ChatContext, tools: Sequence[Any] | None
    ) -> tuple[str, list[llm.FunctionToolCall]]:
        """`respond_to`, where an exception through a rule's callback (the user's code) is
        raised as it is, the agent's crash, and one of our own code as an `AdapterError`."""
        try:
            return self.respond_to(chat_ctx, tools)
        except Exception as exc:
            rules = [*self.rules, *self.instructions]
            callbacks = [f for r in rules for f in (r.args, r.reply, r.preamble) if callable(f)]
            failure = script_failure(exc, callbacks, self.speaks_for)
            if failure is exc:
                raise
            raise failure from exc

    def respond_to(
        self, chat_ctx: llm.ChatContext, tools: Sequence[Any] | None = None
    ) -> tuple[str, list[llm.FunctionToolCall]]:
        """The text and tool calls the script gives for ``chat_ctx`` (no streaming).

        ``tools`` are the tools the request offers: they give the declared argument types, and
        a rule may call only one of them; None skips that check.

        Raises:
            AdapterError: The rule that answers calls a tool ``tools`` does not offer.
        """
        items = chat_ctx.items
        user_index = max(
            (i for i, it in enumerate(items) if it.type == "message" and it.role == "user"),
            default=-1,
        )
        user = (getattr(items[user_index], "text_content", None) or "") if user_index >= 0 else ""
        outputs = [it for it in items[user_index + 1 :] if it.type == "function_call_output"]
        instructed = _reply_instructions(items, after=user_index)
        if instructed is not None:
            index, instructions = instructed
            instructed_outputs = [
                it for it in items[index + 1 :] if it.type == "function_call_output"
            ]
            for rule in self.instructions:
                if (match := rule.search(instructions)) is not None:
                    return self._answer(
                        rule, match, user, chat_ctx, instructed_outputs, instructions, tools
                    )
            if _comes_with_the_user_turn(items, user_index, index):
                # A system message that arrived with the user's turn (an agent's
                # on_user_turn_completed adding context) does not ask for a reply of its own:
                # the user's words are what is being answered.
                answered = self._answer_user(user, chat_ctx, outputs, tools)
                if answered is not None:
                    return answered
            if self.greeting is not None:
                return self.greeting, []
        elif user_index < 0 and self.greeting is not None:
            return self.greeting, []
        answered = self._answer_user(user, chat_ctx, outputs, tools)
        if answered is not None:
            return answered
        return self.default_reply.format(user=user), []

    def _answer_user(
        self,
        user: str,
        chat_ctx: llm.ChatContext,
        outputs: list[Any],
        tools: Sequence[Any] | None,
    ) -> tuple[str, list[llm.FunctionToolCall]] | None:
        """The first rule matching the user's words, answered; None when none matches."""
        for rule in self.rules:
            if (match := rule.search(user)) is not None:
                return self._answer(rule, match, user, chat_ctx, outputs, None, tools)
        return None

    def _answer(
        self,
        rule: Rule,
        match: re.Match[str],
        user: str,
        chat_ctx: llm.ChatContext,
        outputs: list[Any],
        instructions: str | None,
        tools: Sequence[Any] | None = None,
    ) -> tuple[str, list[llm.FunctionToolCall]]:
        last = outputs[-1] if outputs else None
        output = last.output if last else None
        ctx = ScriptContext(
            match=match,
            user=user,
            earlier_user_messages=_earlier_user_messages(chat_ctx),
            tool_output=output,
            tool_result=decoded_output(output),
            tool_error=bool(last and last.is_error),
            instructions=instructions,
            context=chat_ctx,
        )
        if rule.tool is not None and last is None:
            if tools is not None:
                check_offered(
                    rule,
                    offered_tool_names(tools),
                    model=self.speaks_for,
                    how_to_offer="give the agent active then that tool (Agent(tools=[...]) or a "
                    "@function_tool method).",
                )
            call = llm.FunctionToolCall(
                name=rule.tool,
                arguments=json.dumps(
                    render_args(rule.args, ctx, declared_arg_types(tools or (), rule.tool))
                ),
                call_id=self.next_call_id(),
            )
            preamble = render(rule.preamble, ctx) if rule.preamble is not None else ""
            return preamble, [call]
        return (render(rule.reply, ctx) if rule.reply is not None else ""), []


def _reply_instructions(items: Sequence[Any], *, after: int) -> tuple[int, str] | None:
    """The instructions of an instructed reply: the last system message after the last user
    message that is not one of LiveKit's own (the agent's instructions have ``lk.`` ids)."""
    for index in range(len(items) - 1, after, -1):
        item = items[index]
        if (
            item.type == "message"
            and item.role in ("system", "developer")
            and not str(item.id).startswith("lk.")
        ):
            return index, item.text_content or ""
    return None


def _comes_with_the_user_turn(items: Sequence[Any], user_index: int, index: int) -> bool:
    """True when nothing but system messages lies between the last user message and the
    system message at ``index``: it was added with the user's turn (in
    ``on_user_turn_completed``), not for a reply of the agent's own asking, which comes after
    what answered the user (a tool call, a reply) or with no user message at all."""
    if user_index < 0:
        return False
    return all(
        item.type == "message" and item.role in ("system", "developer")
        for item in items[user_index + 1 : index]
    )


class _ScriptedStream(llm.LLMStream):
    """Streams one scripted response: text word by word, then tool calls, then usage."""

    def __init__(
        self,
        scripted: ScriptedLLM,
        *,
        chat_ctx: llm.ChatContext,
        tools: list[llm.Tool],
        conn_options: APIConnectOptions,
    ) -> None:
        super().__init__(scripted, chat_ctx=chat_ctx, tools=tools, conn_options=conn_options)
        self._scripted = scripted

    async def _run(self) -> None:
        try:
            await provider_wait(self._scripted.latency)
        except InjectedFault as fault:  # as a provider's client raises it: LiveKit retries it
            if fault.kind == "timeout":
                raise APITimeoutError(str(fault)) from None
            raise APIStatusError(str(fault), status_code=429, retryable=True) from None
        text, calls = self._scripted._respond(self.chat_ctx, self.tools)
        chunk_id = self._scripted.next_call_id().replace("call", "chunk")
        for word in re.findall(r"\S+\s*", text):
            self._event_ch.send_nowait(
                llm.ChatChunk(id=chunk_id, delta=llm.ChoiceDelta(role="assistant", content=word))
            )
            # Yield so consumers really see a stream, as with a network model.
            await asyncio.sleep(0)
        if calls:
            self._event_ch.send_nowait(
                llm.ChatChunk(
                    id=chunk_id, delta=llm.ChoiceDelta(role="assistant", tool_calls=calls)
                )
            )
        prompt_tokens = sum(
            _count_words(it.text_content or "")
            for it in self.chat_ctx.items
            if it.type == "message"
        )
        completion_tokens = _count_words(text) + sum(_count_words(c.arguments) for c in calls)
        self._event_ch.send_nowait(
            llm.ChatChunk(
                id=chunk_id,
                usage=llm.CompletionUsage(
                    completion_tokens=completion_tokens,
                    prompt_tokens=prompt_tokens,
                    total_tokens=prompt_tokens + completion_tokens,
                ),
            )
        )


def _earlier_user_messages(chat_ctx: llm.ChatContext) -> tuple[str, ...]:
    """The text of the user messages before the current one, oldest first: what a rule's
    `ScriptContext.recall` searches, so a scripted agent remembers only what the session kept."""
    texts = [
        item.text_content or ""
        for item in chat_ctx.items
        if item.type == "message" and item.role == "user"
    ]
    return tuple(texts[:-1])
