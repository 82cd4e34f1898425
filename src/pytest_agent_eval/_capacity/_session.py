"""One session's conversations, as the runner would run them, each ending filed under its cause.

Shared by the in-process ramp (`_ramp`) and a session's own process (`_children`). A
conversation that ends early is filed under one of four causes: an injected provider fault
(``--fault-rate``; the fault hit that conversation, or its error is the fault's), a call no
worker took (worker mode), no answer within ``answer_timeout_s`` (it stopped answering), or
anything else (the agent failed).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from dataclasses import dataclass, field
from pathlib import Path

from .._runner import assistant_messages, describe_exception
from ..adapters._latency import FAULT_LOG, INJECTED
from ..adapters.base import AgentAdapter, ConversationInfo, TurnInput, coerce_reply
from ..errors import AgentTimeoutError
from ..models import AgentReply, Message, Transcript
from ..voice._speech import spoken_text
from ._plan import CapacityPlan

__all__ = ["REFUSED", "START_SPREAD_S", "Session", "run_conversation"]

REFUSED = "no worker took"
"""How the room adapter says the server placed a dispatch with no worker: the worker refused
the job (its load at or past ``load_threshold``) or had none free."""

START_SPREAD_S = 1.0
"""The K sessions of a step start spread over this many seconds."""


@dataclass(slots=True)
class Session:
    """What one session's conversations measured, each ending filed under its cause."""

    latencies_s: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    fault_failures: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    joined: list[str] = field(default_factory=list)
    """Worker mode: the rooms the agent joined (its conversation started)."""

    def failed(self, line: str, faults: list[str], exc: BaseException) -> None:
        """File a conversation's end under its cause (see the module docstring)."""
        if faults or INJECTED in line:
            hit = f" (injected: {', '.join(faults)})" if faults else ""
            self.fault_failures.append(line + hit)
        elif REFUSED in line:
            self.refused.append(line)
        elif isinstance(exc, TimeoutError | AgentTimeoutError):
            self.unanswered.append(line)
        else:
            self.failures.append(line)


def _latency(reply: AgentReply, wall_s: float) -> float:
    if reply.first_audio_latency_s is not None:
        return reply.first_audio_latency_s
    if reply.latency_s is not None:
        return reply.latency_s
    return wall_s


async def _greet(conversation: object) -> None:
    method = getattr(conversation, "greeting", None)
    if callable(method):
        value = method()
        if inspect.isawaitable(value):
            await value


async def run_conversation(
    adapter: AgentAdapter,
    transcript: Transcript,
    index: int,
    plan: CapacityPlan,
    out: Session,
) -> None:
    where = f"session {index + 1}, {transcript.id}"
    faults: list[str] = []
    FAULT_LOG.set(faults)  # this task's context; the agent's tasks started here inherit it
    try:
        conversation = await adapter.start_conversation(
            ConversationInfo(transcript=transcript, run_index=index, speed=plan.speed)
        )
    except Exception as exc:  # the agent never answered: a failure of this conversation
        out.failed(f"{where}: starting failed: {describe_exception(exc, 1)}", faults, exc)
        return
    room = getattr(conversation, "room_name", None)
    if isinstance(room, str):  # room mode: started means the agent joined the room
        out.joined.append(room)
    history: list[Message] = []
    turn_index = 0
    try:
        await _greet(conversation)
        for turn_index, turn in enumerate(transcript.turns):
            audio = Path(turn.audio) if turn.audio is not None else None
            history.append(Message("user", spoken_text(turn.user), audio=audio))
            sent = TurnInput.of(
                transcript,
                turn_index,
                index,
                history=history,
                interrupted_by=TurnInput.interrupting(transcript, turn_index, index),
            )
            started = time.perf_counter()
            try:
                async with asyncio.timeout(plan.answer_timeout_s):
                    reply = await conversation.respond(sent)
            except TimeoutError as exc:
                raise TimeoutError(f"no answer within {plan.answer_timeout_s:g} s") from exc
            wall = time.perf_counter() - started
            if not isinstance(reply, AgentReply):
                reply = coerce_reply(reply)
            out.latencies_s.append(_latency(reply, wall))
            history.extend(assistant_messages(reply.reply, reply.calls, turn_index))
    except Exception as exc:  # the run boundary: this conversation stopped answering
        line = f"{where} turn {turn_index + 1}: {describe_exception(exc, 1)}"
        out.failed(line, faults, exc)
    finally:
        try:
            await conversation.aclose()
        except Exception as exc:
            out.failures.append(f"{where}: closing failed: {describe_exception(exc, 1)}")
