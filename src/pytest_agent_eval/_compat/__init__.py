"""Every private or version-dependent upstream API the package uses, one module per library.

`pytest` holds what collection needs of pytest's internals (parametrizing YAML items by a
parametrized ``llm_eval_agent``), `pydantic_ai` what the judges and the pydantic-ai adapter need
across pydantic-ai releases. Each module has a ``drift_problems()`` function, run by a test
(tests/unit/test_compat.py), that names the installed version and what changed, so an upstream
release that breaks an assumption fails loudly in CI instead of silently changing behaviour.
LiveKit's counterpart lives with its adapter.
"""

from __future__ import annotations

__all__: list[str] = []
