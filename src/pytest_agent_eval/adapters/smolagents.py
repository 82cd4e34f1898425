"""Run transcripts against a smolagents agent (``ToolCallingAgent``, ``CodeAgent``, ...).

Flow of one conversation (one run):

1. The agent: a fresh one from ``agent_factory``, or the one agent given, which conversations
   then take turns to use (one at a time: a smolagents agent keeps its memory on itself).
2. Each turn is ``agent.run(text, stream=True, reset=...)`` in a worker thread (smolagents is
   synchronous): ``reset=True`` on the first turn, so nothing of another run is remembered,
   ``reset=False`` after, so the agent keeps its memory of earlier turns, tool calls and
   observations included.
3. From the streamed events: every tool call with its arguments (``ToolCall``) and result
   (``ToolOutput``); a call whose step ended in an error without a result is marked
   ``is_error`` with the agent's error text (and ``refused`` when it names a tool the agent
   does not have); token usage of every step; and the final answer,
   which is the reply. smolagents' own pseudo-tools (``final_answer``, and the
   ``python_interpreter`` of a ``CodeAgent``) are left out unless ``include_internal_tools``.

An exception out of ``run`` (the model failing, say) becomes an `AdapterError` naming the agent
and the turn; an error inside a step (a tool that raised) is the agent's to handle, as it is
in production: it sees the error and may retry.

smolagents is imported when an adapter is built, never with this module.
"""

from __future__ import annotations

import asyncio
import inspect
import weakref
from collections.abc import Callable
from typing import Any

from .._retry import describe_error
from ..errors import require_extra
from ..models import AgentReply, ToolCall, Usage
from ._args import coerce_args, reply_text
from ._crash import agent_crashed
from .base import Conversation, ConversationInfo, TurnInput

__all__ = ["INTERNAL_TOOLS", "SmolagentsAdapter"]

INTERNAL_TOOLS = frozenset({"final_answer", "python_interpreter"})
"""smolagents' pseudo-tools: how an agent answers, and how a ``CodeAgent`` runs its code."""

_SCALARS = (int, float, bool, type(None))


def _is_agent(obj: Any) -> bool:
    return callable(getattr(obj, "run", None)) and hasattr(obj, "memory")


class SmolagentsAdapter:
    """An `AgentAdapter` over a smolagents agent.

    Args:
        agent: The agent under test, or a zero-argument callable (sync or async) that builds a
            fresh one per conversation (recommended: runs then go concurrently and share
            nothing). One agent given as is serves one conversation at a time.
        include_internal_tools: Keep ``final_answer`` and ``python_interpreter`` calls in the
            tool calls.

    Raises:
        MissingExtraError: Without smolagents (``pip install 'pytest-agent-eval[smolagents]'``).
        TypeError: For something that is neither an agent nor a callable.

    Example:
        ```python
        from smolagents import InferenceClientModel, ToolCallingAgent
        from pytest_agent_eval.adapters.smolagents import SmolagentsAdapter

        @pytest.fixture
        def llm_eval_agent():
            model = InferenceClientModel(model_id="meta-llama/Llama-3.3-70B-Instruct")
            return SmolagentsAdapter(lambda: ToolCallingAgent(tools=[book_slot], model=model))
        ```
    """

    consumes_audio = False

    def __init__(self, agent: Any, *, include_internal_tools: bool = False) -> None:
        require_extra("smolagents", extra="smolagents", feature="SmolagentsAdapter")
        if _is_agent(agent):
            self.agent: Any = agent
            self.agent_factory: Callable[[], Any] | None = None
        elif callable(agent):
            self.agent = None
            self.agent_factory = agent
        else:
            raise TypeError(
                "SmolagentsAdapter needs a smolagents agent (with .run() and .memory) or a "
                f"function that builds one; got {type(agent).__name__}"
            )
        self.include_internal_tools = include_internal_tools
        # One lock per event loop: a shared agent serves one conversation at a time.
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock

    async def start_conversation(self, info: ConversationInfo) -> Conversation:
        """A conversation with a fresh agent, or with the shared one once it is free."""
        if self.agent_factory is None:
            lock = self._lock()
            await lock.acquire()
            return _SmolagentsConversation(self, self.agent, release=lock.release)
        made = self.agent_factory()
        agent = await made if inspect.isawaitable(made) else made
        if not _is_agent(agent):
            raise TypeError(
                "the SmolagentsAdapter agent factory must return a smolagents agent; got "
                f"{type(agent).__name__}"
            )
        return _SmolagentsConversation(self, agent, release=None)


class _SmolagentsConversation:
    """One run: the agent's memory grows turn by turn."""

    def __init__(
        self, adapter: SmolagentsAdapter, agent: Any, release: Callable[[], None] | None
    ) -> None:
        self._adapter = adapter
        self._agent = agent
        self._release = release
        self._turns = 0

    async def respond(self, turn: TurnInput) -> AgentReply:
        reset = self._turns == 0
        self._turns += 1
        agent = self._agent
        try:
            events = await asyncio.to_thread(
                lambda: list(agent.run(turn.text, stream=True, reset=reset))
            )
        except Exception as exc:  # the agent raised: a crash
            name = getattr(agent, "name", None) or type(agent).__name__
            raise agent_crashed(
                f"smolagents agent {name!r} failed on turn {turn.index + 1} "
                f"({turn.text[:60]!r}): {describe_error(exc)}",
                exc,
            ) from exc
        return self._reply(events)

    def _reply(self, events: list[Any]) -> AgentReply:
        from smolagents.agents import ToolOutput
        from smolagents.memory import ActionStep, FinalAnswerStep, PlanningStep
        from smolagents.memory import ToolCall as SmolToolCall

        calls: list[ToolCall] = []
        by_id: dict[str, ToolCall] = {}
        answered: set[str] = set()
        step_calls: list[ToolCall] = []
        usage: Usage | None = None
        answer: Any = None
        for event in events:
            if isinstance(event, SmolToolCall):
                record = ToolCall(event.name, coerce_args(event.arguments), call_id=event.id)
                calls.append(record)
                step_calls.append(record)
                by_id[event.id] = record
            elif isinstance(event, ToolOutput):
                returned = by_id.get(event.id)
                if returned is not None:
                    # A plain value as returned; anything else as the observation the model saw.
                    output = event.output
                    if isinstance(output, str):
                        returned.output = str(output)
                    elif isinstance(output, _SCALARS):
                        returned.output = output
                    else:
                        returned.output = event.observation
                    answered.add(event.id)
            elif isinstance(event, ActionStep | PlanningStep):
                tokens = getattr(event, "token_usage", None)
                if tokens is not None:
                    step = Usage(
                        input_tokens=int(getattr(tokens, "input_tokens", 0) or 0),
                        output_tokens=int(getattr(tokens, "output_tokens", 0) or 0),
                        requests=1,
                    )
                    usage = step if usage is None else usage + step
                error = getattr(event, "error", None)
                if error is not None:
                    text = " ".join(str(error).split())
                    for record in step_calls:
                        if record.call_id not in answered:
                            record.is_error = True
                            record.error = text
                            record.output = f"Error: {text}"
                            # smolagents' words for a tool it does not have: nothing ran.
                            record.refused = text.startswith(f"Unknown tool {record.name},")
                step_calls = []
            elif isinstance(event, FinalAnswerStep):
                answer = event.output
        if not self._adapter.include_internal_tools:
            calls = [c for c in calls if c.name not in INTERNAL_TOOLS]
        return AgentReply(reply_text(answer), list[ToolCall | str](calls), usage=usage)

    async def aclose(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()
