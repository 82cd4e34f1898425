"""What a user's factory wants: the run's information, or nothing.

Both voice adapters take a factory the user writes (LiveKit: the session factory; Pipecat: the
bot factory) and call it with the run's information only when it asks for it, so
``def make_session()`` and ``def make_session(info)`` both work.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["takes_info"]


def takes_info(factory: Callable[..., Any], position: int = 0, *, star_args: bool = True) -> bool:
    """True when ``factory``'s positional parameter number ``position`` (0-based) is required:
    it wants the run's information there.

    ``def make_session(stt=None)`` keeps being called without it. A factory with fewer
    positional parameters takes it through ``*args`` when ``star_args`` says so.
    """
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return False
    parameters = list(signature.parameters.values())
    positional = [
        p
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    if len(positional) <= position:
        return star_args and any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)
    return positional[position].default is inspect.Parameter.empty
