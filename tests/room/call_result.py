"""How a lab's calls script (tests/room/room_calls.py, tests/sip/sip_calls.py) runs one function
in its own process and hands back what it returned or raised: ``script FUNCTION KWARGS_JSON OUT``
writes ``{"value", "error"}`` pickled to OUT, which `RoomLab.call` reads. Standard library only,
so a calls script pays no import for it."""

from __future__ import annotations

import asyncio
import inspect
import json
import pickle
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def run_from_argv(functions: Mapping[str, Callable[..., Any]]) -> None:
    """Call ``functions[argv[1]]`` (awaited when it is a coroutine function) with the JSON
    keyword arguments of argv[2], and pickle its outcome to argv[3]; an outcome that cannot be
    pickled is sent as a RuntimeError carrying its text."""
    function, kwargs, out = sys.argv[1], json.loads(sys.argv[2]), Path(sys.argv[3])
    value: Any = None
    error: BaseException | None = None
    try:
        target = functions[function]
        value = (
            asyncio.run(target(**kwargs))
            if inspect.iscoroutinefunction(target)
            else target(**kwargs)
        )
    except BaseException as exc:
        error = exc
    try:
        payload = pickle.dumps({"value": value, "error": error})
    except Exception:
        text = "".join(traceback.format_exception(error)) if error else repr(value)
        payload = pickle.dumps({"value": None, "error": RuntimeError(text)})
    out.write_bytes(payload)
