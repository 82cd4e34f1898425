"""Scripted judge models for the judge tests: real pydantic-ai `FunctionModel`s, no network."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

__all__ = ["JudgeCall", "ScriptedJudge", "user_text"]


def user_text(messages: list[ModelMessage]) -> str:
    """The text of every user-prompt part sent to the model."""
    texts = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    texts.append(part.content)
    return "\n".join(texts)


@dataclass
class JudgeCall:
    """What one call to the judge model received."""

    instructions: str
    user_prompt: str
    model_settings: dict[str, Any]


Decide = Callable[[JudgeCall], "tuple[bool, str] | Awaitable[tuple[bool, str]]"]


@dataclass
class ScriptedJudge:
    """A FunctionModel judge whose verdict comes from ``decide(call)``; records every call.

    ``decide`` may raise (e.g. a pydantic-ai `ModelHTTPError`) to simulate provider failures.
    """

    decide: Decide
    calls: list[JudgeCall] = field(default_factory=list)

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self._respond, model_name="scripted-judge")

    async def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        call = JudgeCall(
            instructions=info.instructions or "",
            user_prompt=user_text(messages),
            model_settings=dict(info.model_settings or {}),
        )
        self.calls.append(call)
        outcome = self.decide(call)
        if hasattr(outcome, "__await__"):
            outcome = await outcome  # type: ignore[misc]
        passed, reasoning = outcome  # type: ignore[misc]
        tool = info.output_tools[0].name
        return ModelResponse(parts=[ToolCallPart(tool, {"passed": passed, "reasoning": reasoning})])
