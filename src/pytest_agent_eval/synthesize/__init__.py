"""Voice fixtures from transcript text: backends, planning, synthesis and the command line.

Importing this package loads no TTS engine; engines load when a fixture is actually made.
"""

from __future__ import annotations

from ..voice._tts._registry import ENTRY_POINT_GROUP, TTSBackend, available_backends, get_backend
from ._plan import (
    DEFAULT_SAMPLE_RATE,
    FixtureProblem,
    FixtureSpec,
    FixtureState,
    FixtureStatus,
    Planner,
    check_fixture,
    fixture_problems,
)
from ._run import FixtureResult, SynthesisSummary, ensure_fixtures, synthesize_specs
from ._verify import VerifyResult, verify_fixtures

__all__ = [
    "DEFAULT_SAMPLE_RATE",
    "ENTRY_POINT_GROUP",
    "FixtureProblem",
    "FixtureResult",
    "FixtureSpec",
    "FixtureState",
    "FixtureStatus",
    "Planner",
    "SynthesisSummary",
    "TTSBackend",
    "VerifyResult",
    "available_backends",
    "check_fixture",
    "ensure_fixtures",
    "fixture_problems",
    "get_backend",
    "synthesize_specs",
    "verify_fixtures",
]
