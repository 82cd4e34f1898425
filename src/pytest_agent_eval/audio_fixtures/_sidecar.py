"""Moved to `pytest_agent_eval.voice._sidecar`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ..voice import _sidecar
from ..voice._sidecar import (
    FORMAT_VERSION,
    SIDECAR_SUFFIX,
    Sidecar,
    TimedPhrase,
    describe_changes,
    fixture_key,
    legacy_text_matches,
    read_legacy_hash,
    read_sidecar,
    sidecar_path,
    write_sidecar,
)

__all__ = [
    "FORMAT_VERSION",
    "SIDECAR_SUFFIX",
    "Sidecar",
    "TimedPhrase",
    "describe_changes",
    "fixture_key",
    "legacy_text_matches",
    "read_legacy_hash",
    "read_sidecar",
    "sidecar_path",
    "write_sidecar",
]

sys.modules[__name__] = _sidecar
