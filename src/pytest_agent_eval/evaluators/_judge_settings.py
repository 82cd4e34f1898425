"""What every judge needs that is not in its rubric: the default model, retries, timeout, cache
folder and the longest text sent whole.

With the judges, not with the pytest-side settings: evaluators and expectations read it without
importing `pytest_agent_eval._config` (which builds it from ``[tool.agent_eval]`` through
`Settings.judge <pytest_agent_eval._config.Settings.judge>`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_JUDGE_MAX_CHARS", "DEFAULT_JUDGE_MODEL", "JudgeSettings"]

DEFAULT_JUDGE_MODEL = "openai:gpt-4o"
"""The judge model when neither the evaluator, ``judge_model`` nor ``model`` names one (the
seed's default). The one definition: `pytest_agent_eval._config` and `evaluators.judge` re-export
it."""

DEFAULT_JUDGE_MAX_CHARS = 20_000
"""The most characters of a reply, of what was heard, of each earlier message and of a tool
call's arguments a judge is sent (``judge_max_chars``); past it the text is cut and the verdict
says so. A 1 MB reply would otherwise cost a fortune or overflow the judge's context."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeSettings:
    """What every judge needs that is not in its rubric."""

    model: Any = DEFAULT_JUDGE_MODEL
    """Default judge model: a pydantic-ai model id (``judge_model`` wins over ``model``), or a
    pydantic-ai ``Model`` instance supplied by the ``llm_eval_judge_model`` fixture."""
    retries: int = 2
    """Retries after a transient judge failure (timeouts, 429, 5xx)."""
    timeout_s: float = 30.0
    """Seconds allowed per judge call."""
    cache_dir: Path | None = None
    """Verdict cache folder; None turns the cache off."""
    max_chars: int = DEFAULT_JUDGE_MAX_CHARS
    """Longest reply (and heard text, earlier message, tool arguments) sent to the judge whole."""
