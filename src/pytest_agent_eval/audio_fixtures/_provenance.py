"""Moved to `pytest_agent_eval.voice._provenance`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ..voice import _provenance
from ..voice._provenance import (
    PROVENANCE_MARKER,
    EmbeddedRecord,
    Origin,
    Provenance,
    embedded_comment,
    parse_embedded,
    pcm_sha256,
    read_embedded,
    read_provenance,
)

__all__ = [
    "PROVENANCE_MARKER",
    "EmbeddedRecord",
    "Origin",
    "Provenance",
    "embedded_comment",
    "parse_embedded",
    "pcm_sha256",
    "read_embedded",
    "read_provenance",
]

sys.modules[__name__] = _provenance
