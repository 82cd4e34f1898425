"""Scripted models for the simulation tests: real pydantic-ai `FunctionModel`s, no network.

`ScriptedCaller` plays the simulated caller: ``script(call)`` gets what the caller model was
sent (its turn number, whether it may end the call, the call so far) and returns the words to
say, `End(...)` to call ``end_conversation``, or raises (a provider failure). `ScriptedJudge`
judges the criteria: ``decide(criterion, conversation)`` returns ``(verdict, reasoning)``.
Both count the requests they receive.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

__all__ = ["CallerCall", "End", "ScriptedCaller", "ScriptedJudge", "instructions_of", "user_text"]


def user_text(messages: list[ModelMessage]) -> str:
    """The text of every user-prompt part sent to the model."""
    return "\n".join(
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    )


def instructions_of(messages: list[ModelMessage], info: AgentInfo) -> str:
    """The instructions the model was sent (on `AgentInfo` in pydantic-ai 1.x later releases,
    on the last request in 1.0)."""
    found = getattr(info, "instructions", None)
    if found:
        return str(found)
    for message in reversed(messages):
        if isinstance(message, ModelRequest) and getattr(message, "instructions", None):
            return str(message.instructions)
    return ""


@dataclass(frozen=True)
class End:
    """The caller ends the call through its tool."""

    outcome: str = "goal_reached"
    reason: str = "I have what I called for."


@dataclass
class CallerCall:
    """What one request to the caller model received."""

    turn: int
    may_end: bool
    prompt: str
    instructions: str
    model_settings: dict[str, Any]

    @property
    def agent_lines(self) -> list[str]:
        """What the agent said so far, as the caller heard it."""
        return re.findall(r"^AGENT: (.*)$", self.prompt, flags=re.MULTILINE)


@dataclass
class ScriptedCaller:
    """A FunctionModel caller whose answers come from ``script(call)``; records every call."""

    script: Callable[[CallerCall], str | End]
    calls: list[CallerCall] = field(default_factory=list)
    name: str = "scripted-caller"

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self._respond, model_name=self.name)

    async def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = user_text(messages)
        found = re.search(r"This is your turn (\d+) of at most", prompt)
        call = CallerCall(
            turn=int(found.group(1)) if found else 0,
            may_end=any(t.name == "end_conversation" for t in info.output_tools),
            prompt=prompt,
            instructions=instructions_of(messages, info),
            model_settings=dict(info.model_settings or {}),
        )
        self.calls.append(call)
        answer = self.script(call)
        if isinstance(answer, End):
            args = {"outcome": answer.outcome, "reason": answer.reason}
            return ModelResponse(parts=[ToolCallPart("end_conversation", args)])
        return ModelResponse(parts=[TextPart(answer)])


@dataclass
class ScriptedJudge:
    """A FunctionModel criteria judge: ``decide(criterion, conversation)`` gives
    ``(verdict, reasoning)``, verdict one of met, not_met, cannot_tell. As a transcript's
    rubric judge (a saved conversation's), it is asked with criterion ``(rubric)`` and passes
    on ``met``."""

    decide: Callable[[str, str], tuple[str, str]]
    calls: list[tuple[str, str]] = field(default_factory=list)

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self._respond, model_name="scripted-judge")

    async def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        instructions = instructions_of(messages, info)
        conversation = user_text(messages)
        if "<criterion>" not in instructions:  # a transcript's rubric judge (a saved one)
            self.calls.append(("(rubric)", conversation))
            verdict, reasoning = self.decide("(rubric)", conversation)
            args: dict[str, Any] = {"passed": verdict == "met", "reasoning": reasoning}
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)])
        criterion = instructions.split("<criterion>\n", 1)[1].split("\n</criterion>", 1)[0]
        self.calls.append((criterion, conversation))
        verdict, reasoning = self.decide(criterion, conversation)
        args = {"reasoning": reasoning, "verdict": verdict}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)])
