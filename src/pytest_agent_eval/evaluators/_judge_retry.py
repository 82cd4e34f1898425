"""When a judge model refused the request because of its ``temperature`` setting.

The rule is shared with the simulated caller and lives in `pytest_agent_eval._retry` (with the
transient-error classification, the backoff and the attempt loop); this name stays for code that
imports it from here.
"""

from __future__ import annotations

from .._retry import rejects_temperature

__all__ = ["rejects_temperature"]
