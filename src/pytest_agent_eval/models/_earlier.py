"""The earlier package's names on result records: ``TurnResult(turn_index=...,
eval_results=...)``, ``RunResult(run_index=..., turn_results=...)`` and an explicit
``passed=``, patched onto the generated ``__init__`` once, when the package is imported."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping
from typing import Any

from ._results import RunResult, TurnResult

__all__: list[str] = []

_CALLER_FAILED = "marked failed by the code that built this result (passed=False)"


def _accept_earlier_names(cls: type[Any], renames: Mapping[str, str]) -> None:
    """Let ``cls`` take the earlier package's keyword names and its explicit ``passed=``.

    Each ``renames`` key is an earlier keyword (``turn_index``) standing for one of our fields
    (``index``); giving both is a `TypeError`. The earlier results stored ``passed`` as given;
    ours compute it, so an explicit value is combined with the computed one by *and*, so a
    result never passes for the wrong reason:

    - ``passed=False`` makes the result fail even when everything in it passed; the reason is
      recorded in its ``error`` (so it survives serialization and shows in reports).
    - ``passed=True`` cannot overrule what failed (an evaluation, an error, a run without
      turns); the result stays failed and a `UserWarning` says why.
    """
    generated = cls.__init__

    @functools.wraps(generated)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        given_passed = kwargs.pop("passed", None)
        for earlier, ours in renames.items():
            if earlier in kwargs:
                if ours in kwargs:
                    raise TypeError(
                        f"{cls.__name__} got both {earlier}= and {ours}=; they are one field "
                        f"({earlier} is the earlier package's name for {ours})"
                    )
                kwargs[ours] = kwargs.pop(earlier)
        generated(self, *args, **kwargs)
        if given_passed is None:
            return
        if not isinstance(given_passed, bool):
            raise TypeError(f"{cls.__name__}(passed=...) takes True or False, got {given_passed!r}")
        if not given_passed and self.passed:
            self._fail_by_caller(_CALLER_FAILED)
        elif given_passed and not self.passed:
            warnings.warn(
                f"{cls.__name__}(passed=True) was given but the result is failed "
                f"({_why_failed(self)}); a result passes only when its contents pass",
                UserWarning,
                stacklevel=2,
            )

    cls.__init__ = __init__


def _why_failed(result: Any) -> str:
    if result.error:
        return f"error: {result.error}"
    if isinstance(result, RunResult):
        if not result.turns:
            return "a run without turns never passes"
        failed = [t.index + 1 for t in result.turns if not t.passed]
        return f"turn(s) {failed} failed"
    failed_checks = [e.name or "evaluation" for e in result.evaluations if not e.passed]
    return f"failed: {', '.join(failed_checks)}"


_accept_earlier_names(TurnResult, {"turn_index": "index", "eval_results": "evaluations"})
_accept_earlier_names(RunResult, {"run_index": "index", "turn_results": "turns"})
