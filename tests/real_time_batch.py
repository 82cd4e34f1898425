"""The real-time halves of a parametrized test's cases, run together in one event loop.

A speed-invariance test runs each case at max speed (compute) and in real time (mostly
waiting on the wall clock), then compares the two. The waits overlap: the first case whose
test asks for its real-time result (`real_time_result`, or `batch_result` for a batch the
test shapes itself) runs the real-time halves of every collected case of the same test
function, in one event loop, at most ``at_once`` at a time (`gather_bounded`), and keeps each
case's result for that case's own test. Each test still runs its own max-speed half, and
makes the same checks on both halves as when it ran them one after the other.

- A case's run is given the case's parameters (``item.callspec.params``, by argument name).
  Anything else it needs must be the same for every case (a session fixture's value, taken
  from the asking test's arguments or ``request.getfixturevalue``).
- What a case's run raised is raised again in that case's test, with its own traceback and a
  note saying it ran in a batch; the other cases are unaffected.
- Results are kept per session (an xdist worker is a session of its own) and handed over once:
  a case asked again (a rerun) runs again, with the collected cases not run yet. Under
  pytest-xdist the cases of one test may be split between workers; each worker then runs the
  batch for all the cases collected, including those another worker tests. That costs the
  duplicate runs' CPU (little, the halves are mostly idle) but no wall time.
- The batch runs inside the call of the first asking test: its duration, captured output and
  logs are the batch's, and it sees that test's warning filters (the same for every case of
  one test function).

``at_once`` bounds the event loop's load: every session of a batch runs on its one thread,
and a loop lagging behind the wall clock would change what real time decides (endpointing,
interruptions). Each test says the bound it measured.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar, cast

import pytest

T = TypeVar("T")

Case = Mapping[str, Any]
"""One case's parameters, by argument name (its ``callspec.params``)."""


@dataclass
class _Batch:
    """One test function's results not yet handed over, and the cases already given theirs."""

    results: dict[str, object] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)


_BATCHES = pytest.StashKey[dict[tuple[str, str], _Batch]]()


async def gather_bounded(
    runs: Sequence[Callable[[], Awaitable[T]]], at_once: int
) -> list[T | BaseException]:
    """Every run's result or exception, in order, at most ``at_once`` running at a time."""
    if at_once < 1:
        raise ValueError(f"at_once must be at least 1, not {at_once}")
    gate = asyncio.Semaphore(at_once)

    async def bounded(run: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await run()

    return list(await asyncio.gather(*(bounded(run) for run in runs), return_exceptions=True))


def cases_of(request: pytest.FixtureRequest) -> list[pytest.Function]:
    """The collected cases of the asking test's function (same module or class, same name)."""
    node = request.node
    if not isinstance(node, pytest.Function) or not hasattr(node, "callspec"):
        raise TypeError(f"{node.nodeid} is not a case of a parametrized test")
    return [
        item
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and item.parent is node.parent
        and item.originalname == node.originalname
        and hasattr(item, "callspec")
    ]


def batch_result(
    request: pytest.FixtureRequest,
    run_all: Callable[[list[Case]], Awaitable[Sequence[T | BaseException]]],
) -> T:
    """The asking case's result from ``run_all``, which is given the cases to run (the asking
    one among them) and returns, in their order, each one's result or exception. It runs in a
    fresh event loop the first time a case of this test function asks, for every collected
    case not already run; its results are kept for their cases' tests."""
    node = request.node
    batches = request.session.stash.setdefault(_BATCHES, {})
    batch = batches.setdefault((node.parent.nodeid, node.originalname), _Batch())
    if node.nodeid not in batch.results:
        items = [
            item
            for item in cases_of(request)
            if item.nodeid == node.nodeid
            or (item.nodeid not in batch.taken and item.nodeid not in batch.results)
        ]
        outcomes = asyncio.run(_run_all(run_all, [dict(item.callspec.params) for item in items]))
        if len(outcomes) != len(items):
            raise RuntimeError(f"{len(items)} cases ran, but {len(outcomes)} results came back")
        for item, outcome in zip(items, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                outcome.add_note(
                    f"(raised in a batch of {len(items)} cases of {node.originalname}, "
                    "run concurrently in one event loop)"
                )
            batch.results[item.nodeid] = outcome
    kept = batch.results.pop(node.nodeid)
    batch.taken.add(node.nodeid)
    if isinstance(kept, BaseException):
        raise kept
    return cast(T, kept)


async def _run_all(
    run_all: Callable[[list[Case]], Awaitable[Sequence[T | BaseException]]], cases: list[Case]
) -> Sequence[T | BaseException]:
    return await run_all(cases)


def real_time_result(
    request: pytest.FixtureRequest, run: Callable[[Case], Awaitable[T]], *, at_once: int
) -> T:
    """The asking case's ``run(case)``: `batch_result` over every case's ``run``, at most
    ``at_once`` at a time."""

    async def run_all(cases: list[Case]) -> list[T | BaseException]:
        return await gather_bounded([partial(run, case) for case in cases], at_once)

    return batch_result(request, run_all)
