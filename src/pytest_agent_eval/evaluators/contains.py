"""``pytest_agent_eval.evaluators.contains``: where the earlier package kept `ContainsEvaluator`.

Kept so ``from pytest_agent_eval.evaluators.contains import ContainsEvaluator`` goes on working;
the class lives in `pytest_agent_eval.evaluators._reply`.
"""

from __future__ import annotations

from ..models import EvalResult, TurnContext
from ._reply import ContainsEvaluator

__all__ = ["ContainsEvaluator", "EvalResult", "TurnContext"]
