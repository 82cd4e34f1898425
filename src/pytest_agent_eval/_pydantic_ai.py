"""What the judge and the pydantic-ai adapter both read from a pydantic-ai run result.

Duck-typed on purpose: nothing here imports pydantic-ai, so importing this module (and the
package) stays free of the optional dependency.
"""

from __future__ import annotations

import inspect
from typing import Any

from .models import Usage

__all__ = ["usage_of"]


def usage_of(result: Any) -> Usage | None:
    """The tokens and requests of a pydantic-ai run result as a `Usage`, or None when absent."""
    usage = getattr(result, "usage", None)
    if inspect.ismethod(usage):  # pydantic-ai 1.x exposes usage() as a method
        usage = usage()
    if usage is None:
        return None
    return Usage(
        input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
        output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
        requests=int(getattr(usage, "requests", 0) or 0),
    )
