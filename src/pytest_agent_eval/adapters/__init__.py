"""Adapters connect the runner to an agent: one conversation per run, fed turn by turn.

- `base`: the protocol (`AgentAdapter`, `Conversation`) and `CallableAdapter` for plain callables.
- `pydantic_ai`: `PydanticAIAdapter` for pydantic-ai agents.
- `openai`: `OpenAIAdapter` for the OpenAI SDK (Chat Completions with a real tool loop).
- `livekit`: `LiveKitAdapter`, a real LiveKit `AgentSession` fed WAV fixtures and text.
- `langchain`: `LangChainAdapter` for chat models (with a tool loop), chains and agent graphs.
- `smolagents`: `SmolagentsAdapter` for smolagents agents.

Framework adapters import their framework on first use; this package imports none of them.
"""

from __future__ import annotations

from .base import AgentAdapter, CallableAdapter, Conversation, ConversationInfo, TurnInput

__all__ = ["AgentAdapter", "CallableAdapter", "Conversation", "ConversationInfo", "TurnInput"]
