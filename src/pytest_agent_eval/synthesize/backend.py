"""Moved to `pytest_agent_eval.voice._tts._registry`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ..voice._tts import _registry
from ..voice._tts._registry import (
    BUILTIN_BACKENDS,
    DEFAULT_BACKEND,
    ENTRY_POINT_GROUP,
    Execution,
    TTSBackend,
    available_backends,
    get_backend,
    package_version,
)

__all__ = [
    "BUILTIN_BACKENDS",
    "DEFAULT_BACKEND",
    "ENTRY_POINT_GROUP",
    "Execution",
    "TTSBackend",
    "available_backends",
    "get_backend",
    "package_version",
]

sys.modules[__name__] = _registry
