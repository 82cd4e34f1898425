"""pytest internals that collection needs, checked on pytest 8.0 to 9.2.

YAML transcripts become `pytest.Function` items. pytest parametrizes a fixture only for Python
test functions, so one item per param of a parametrized ``llm_eval_agent`` needs pytest's
private call-spec class (``CallSpec2`` up to 9.1, ``CallSpec`` from 9.2 on), the item's
``_fixtureinfo`` and a fixture definition's ``_scope``. Everything of that kind is here; when a
pytest release changes it, `drift_problems` (run by a test) names the version and the change, and
collection fails with the same words instead of silently collapsing the params into one item.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from ..errors import AgentEvalError

__all__ = [
    "NO_PARAM_WORDS",
    "PYTEST_VERSION",
    "PytestDriftError",
    "drift_problems",
    "failure_repr",
    "fixture_defs",
    "fixture_scope",
    "make_callspec",
]

PYTEST_VERSION = pytest.__version__
"""The installed pytest, named in every drift message."""

NO_PARAM_WORDS = "no parameter defined"
"""Words of pytest's failure when a test asks for a parametrized fixture it is not
parametrized by (``request.getfixturevalue`` outside the test's arguments)."""

_CALLSPEC_FIELDS = ("params", "indices", "_arg2scope", "_idlist", "marks")


class PytestDriftError(AgentEvalError, RuntimeError):
    """A private pytest API changed shape; the message names the pytest version."""


def _callspec_class() -> type:
    from _pytest import python

    for name in ("CallSpec", "CallSpec2"):  # 9.2 renamed CallSpec2 to CallSpec
        cls = getattr(python, name, None)
        if cls is not None:
            return cls  # type: ignore[no-any-return]
    raise PytestDriftError(
        f"pytest {PYTEST_VERSION}: _pytest.python has neither CallSpec nor CallSpec2; "
        "pytest-agent-eval cannot run YAML transcripts once per param of a parametrized "
        "llm_eval_agent on this version"
    )


def make_callspec(
    *, argname: str, value: Any, index: int, scope: Any, param_id: str, marks: Sequence[Any]
) -> Any:
    """A call spec giving one param of one fixture, as pytest builds for a parametrized test.

    Raises:
        PytestDriftError: When the private class is gone or takes other fields.
    """
    cls = _callspec_class()
    try:
        return cls(
            params={argname: value},
            indices={argname: index},
            _arg2scope={argname: scope},
            _idlist=[param_id],
            marks=list(marks),
        )
    except TypeError as exc:
        raise PytestDriftError(
            f"pytest {PYTEST_VERSION}: {cls.__name__} no longer takes {_CALLSPEC_FIELDS} ({exc})"
        ) from exc


def fixture_defs(item: Any, name: str) -> Sequence[Any] | None:
    """The definitions of fixture ``name`` visible from ``item``, or None when pytest keeps no
    fixture info on it (``item._fixtureinfo.name2fixturedefs``)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    return info.name2fixturedefs.get(name, ())  # type: ignore[no-any-return]


def fixture_scope(fixturedef: Any) -> Any:
    """A fixture definition's scope object (``fixturedef._scope``).

    Raises:
        PytestDriftError: When the attribute is gone.
    """
    scope = getattr(fixturedef, "_scope", None)
    if scope is None:
        raise PytestDriftError(f"pytest {PYTEST_VERSION}: FixtureDef has no _scope attribute")
    return scope


def drift_problems() -> list[str]:
    """What no longer holds of the assumptions above, each naming the pytest version."""
    problems: list[str] = []
    try:
        cls = _callspec_class()
    except PytestDriftError as exc:
        return [str(exc)]
    names = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    missing = [f for f in _CALLSPEC_FIELDS if f not in names]
    if missing:
        problems.append(f"pytest {PYTEST_VERSION}: {cls.__name__} lacks fields {missing}")
    from _pytest.fixtures import FuncFixtureInfo

    if "name2fixturedefs" not in {f.name for f in dataclasses.fields(FuncFixtureInfo)}:
        problems.append(f"pytest {PYTEST_VERSION}: FuncFixtureInfo has no name2fixturedefs")
    return problems


def failure_repr(text: str, *, headline: str, path: str, lineno: int) -> Any:
    """A failure report's ``longrepr`` that prints ``text`` as it is and gives ``headline`` as
    the crash message: the line pytest's short summary and JUnit's ``message`` show.

    A plain string would do on pytest 9, which puts a string's first line in the summary;
    pytest 8 shows only a ``reprcrash.message``. Built from pytest's own exception records
    (``ReprExceptionInfo`` of one native entry), it survives pytest-xdist's report round trip.
    """
    from _pytest._code.code import (
        ReprEntryNative,
        ReprExceptionInfo,
        ReprFileLocation,
        ReprTraceback,
    )

    body = text if text.endswith("\n") else text + "\n"
    return ReprExceptionInfo(
        reprtraceback=ReprTraceback(
            reprentries=[ReprEntryNative([body])], extraline=None, style="native"
        ),
        reprcrash=ReprFileLocation(path=path, lineno=lineno, message=headline),
    )
