"""``pytest_agent_eval.evaluators.tool_call``: where the earlier package kept the tool-call
evaluators.

Kept so ``from pytest_agent_eval.evaluators.tool_call import ToolCallEvaluator`` goes on
working; the classes live in `pytest_agent_eval.evaluators._tools`.
"""

from __future__ import annotations

from ..models import EvalResult, TurnContext
from ._tools import ToolCallArgsEvaluator, ToolCallEvaluator

__all__ = ["EvalResult", "ToolCallArgsEvaluator", "ToolCallEvaluator", "TurnContext"]
