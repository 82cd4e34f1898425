"""Offline stand-ins for the LLMs, so this example runs without an API key.

Both are real pydantic-ai `FunctionModel`s: pydantic-ai runs the agent, its tools and its
message history exactly as with a hosted model; only the text generation is scripted. To
evaluate the real agent, drop `model=` from the adapter and the `llm_eval_judge_model`
fixture in conftest.py, and set OPENAI_API_KEY.
"""

from __future__ import annotations

import re

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

_BOOKING = re.compile(r"for (\d+) on (\w+) at (\d{1,2}:\d{2})", re.IGNORECASE)


def _tool_returns(messages: list[ModelMessage], tool: str) -> list[str]:
    return [
        str(part.content)
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == tool
    ]


def _booking_agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1].parts[-1]
    if isinstance(last, ToolReturnPart) and last.tool_name == "book_table":
        call = next(
            p
            for m in reversed(messages)
            for p in getattr(m, "parts", [])
            if isinstance(p, ToolCallPart) and p.tool_name == "book_table"
        )
        args = call.args_as_dict()
        return ModelResponse(
            parts=[
                TextPart(
                    f"Booked! A table for {args['guests']} on {args['day'].title()} at "
                    f"{args['time']}. Your reference is {last.content}."
                )
            ]
        )
    if isinstance(last, ToolReturnPart):
        return ModelResponse(parts=[TextPart(f"Done: {last.content} by email.")])
    text = str(last.content) if isinstance(last, UserPromptPart) else ""
    if match := _BOOKING.search(text):
        guests, day, time = match.groups()
        args = {"day": day.lower(), "time": time, "guests": int(guests)}
        return ModelResponse(parts=[ToolCallPart("book_table", args)])
    if "email" in text.lower():
        references = _tool_returns(messages, "book_table")
        if references:
            return ModelResponse(
                parts=[ToolCallPart("send_confirmation", {"reference": references[-1]})]
            )
        return ModelResponse(parts=[TextPart("I have no booking to confirm yet.")])
    return ModelResponse(parts=[TextPart("Happy to help you book a table.")])


def booking_model() -> FunctionModel:
    """Plays the booking agent's LLM for the transcripts in tests/evals."""
    return FunctionModel(_booking_agent, model_name="offline-booking")


def _judge(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    # The judge prompt puts the reply in a data block whose tag suffix the instructions name.
    suffix = re.search(r"tags end in _(\w+)", info.instructions or "")
    prompt = "\n".join(
        str(p.content) for m in messages for p in m.parts if isinstance(p, UserPromptPart)
    )
    reply = ""
    if suffix:
        tag = f"agent_reply_{suffix.group(1)}"
        found = re.search(rf"<{tag}>(.*?)</{tag}>", prompt, re.DOTALL)
        reply = found.group(1) if found else ""
    passed = bool(re.search(r"BK-\d+", reply)) and "booked" in reply.lower()
    reasoning = "confirms the booking with a reference" if passed else "no confirmed reference"
    verdict = {"passed": passed, "reasoning": reasoning}
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, verdict)])


def judge_model() -> FunctionModel:
    """A stand-in judge: passes replies that confirm a booking with a BK- reference."""
    return FunctionModel(_judge, model_name="offline-judge")
