"""A support agent, and the scripted caller and judge models that call and grade it offline."""

from __future__ import annotations

import re

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel

from pytest_agent_eval import AgentReply, ToolCall


async def support_agent(history):
    """Asks which order, then looks it up and refunds or cancels it as asked."""
    said = " ".join(m.content for m in history if m.role == "user").lower()
    order = re.search(r"\b(\d{4})\b", history[-1].content)
    if order is None:
        return AgentReply("I am sorry to hear that. Which order number is it?")
    number = order.group(1)
    lookup = ToolCall("lookup_order", {"order": number})
    if "cancel" in said:
        return AgentReply(
            f"Order {number} is cancelled; you will get a confirmation email.",
            [lookup, ToolCall("cancel_order", {"order": number})],
        )
    return AgentReply(
        f"I have refunded order {number}, reference RF-{number}.",
        [lookup, ToolCall("refund_order", {"order": number})],
    )


@pytest.fixture
def llm_eval_agent():
    return support_agent


def _instructions(messages, info):
    found = getattr(info, "instructions", None)
    return found or next(
        (m.instructions for m in reversed(messages) if isinstance(m, ModelRequest)), ""
    )


def caller(messages, info):
    """Plays the persona in its instructions: says what it wants, gives its order number when
    asked, hangs up once the agent has done it."""
    persona = _instructions(messages, info)
    prompt = str(messages[-1].parts[-1].content)
    agent = re.findall(r"^AGENT: (.*)$", prompt, flags=re.MULTILINE)
    order = re.search(r"order (\d{4})", persona).group(1)
    may_hang_up = any(tool.name == "end_conversation" for tool in info.output_tools)
    if may_hang_up and any(order in line for line in agent):
        done = {"outcome": "goal_reached", "reason": "The agent did it."}
        return ModelResponse(parts=[ToolCallPart("end_conversation", done)])
    if agent and "Which order" in agent[-1]:
        return ModelResponse(parts=[TextPart(f"It is order {order}.")])
    want = "cancel my order" if "cancel" in persona else "get my money back for a broken blender"
    return ModelResponse(parts=[TextPart(f"Hi, I would like to {want}.")])


def judge(messages, info):
    """Grades a criterion by the tools the agent called and what it said."""
    criterion = _instructions(messages, info).split("<criterion>", 1)[1].lower()
    conversation = str(messages[-1].parts[-1].content)
    if "looks the order up" in criterion:
        met = "[agent called tool lookup_order]" in conversation
    elif "refund reference" in criterion:
        met = "RF-" in conversation
    else:
        met = "[agent called tool cancel_order]" in conversation and "cancelled" in conversation
    reasoning = "The conversation shows it." if met else "Nothing in the conversation shows it."
    verdict = {"reasoning": reasoning, "verdict": "met" if met else "not_met"}
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, verdict)])


@pytest.fixture
def llm_eval_caller_model():
    return FunctionModel(caller, model_name="scripted-caller")


@pytest.fixture
def llm_eval_judge_model():
    return FunctionModel(judge, model_name="scripted-judge")
