"""Shards: a deterministic share of the eval tests per CI machine (``--agent-eval-shard K/N``).

Every machine collects the same tests, so every machine computes the same plan on its own: the
eval tests left after pytest's own selection (paths, ``-k``, ``-m``, ``--agent-eval-tags``),
each with a weight, split into N shares by longest-processing-time-first (the heaviest test
first, each to the lightest share so far; ties by node id, then by share number). A test's
weight is its measured call time from a results file (``--agent-eval-shard-durations``) and
otherwise its planned turns (runs x turns); a transcript the file does not know is estimated
from the file's seconds per planned turn, a Python eval test from the file's mean. Plain tests
are not sharded: pytest's own selection decides where they run (every shard, unless the shard
jobs leave them out).

A shard keeps its plan and every test report it saw; its results file carries both, and
``agent-eval merge`` replays the reports into one session (`report._merge`). Under xdist the
plan is made on every worker (the same on each, so xdist's collection check holds) and reaches
the controller in the worker's output.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from ._collection import TranscriptItem
from ._eval_items import is_eval_item
from ._fixture import session_key
from ._report._shards import note_plan

__all__ = [
    "ShardPlan",
    "plan_shards",
    "read_durations",
    "select_shard",
    "split_by_weight",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShardPlan:
    """What one machine computed: its share, and what every machine shares (``plan``)."""

    index: int
    """This shard, 1-based."""
    count: int
    """How many shards."""
    plan: str
    """A digest of the eval tests and weights split, and the count: equal on every shard of
    one suite run with the same options and durations."""
    planned: int
    """Eval tests in the plan (over every shard)."""
    evals: tuple[str, ...]
    """This shard's eval tests (node ids), in collection order."""
    loads: tuple[float, ...]
    """Each shard's summed weight: seconds with durations, planned turns without."""
    balanced_by: str
    """``"durations"`` or ``"planned turns"``."""
    durations_file: str | None = None
    """The durations file given, or None."""
    durations_note: str | None = None
    """Why the durations file was not used (not found, no durations in it), or None."""
    collected: tuple[str, ...] = ()
    """Every test left after pytest's selection, in collection order: the merge replays the
    shards' reports in this order."""
    deselected: int = 0
    """Tests this shard deselected (the other shards' evals)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON for the results file."""
        data = asdict(self)
        for key in ("evals", "loads", "collected"):
            data[key] = list(data[key])
        return data


def split_by_weight(
    weights: Sequence[tuple[str, float]], count: int
) -> tuple[list[list[str]], list[float]]:
    """Longest processing time first: the heaviest test first, each to the lightest share.

    Deterministic for the same input on any machine: ties between tests go by node id, ties
    between shares by their number. Within 4/3 of the best split, and far closer for many
    tests of mixed weights.

    Returns:
        Each share's node ids, and each share's summed weight.
    """
    shares: list[list[str]] = [[] for _ in range(count)]
    loads = [0.0] * count
    heap = [(0.0, i) for i in range(count)]
    for nodeid, weight in sorted(weights, key=lambda nw: (-nw[1], nw[0])):
        load, i = heapq.heappop(heap)
        shares[i].append(nodeid)
        loads[i] = load + weight
        heapq.heappush(heap, (loads[i], i))
    return shares, loads


def read_durations(path: Path) -> tuple[dict[str, float], str | None]:
    """The call-phase seconds of each eval test in a results file (the node id's longest, for
    a Python test running several evals), and why the file gives none (or None).

    A file that does not exist is not an error (a first CI run has none yet): the shards are
    then balanced by planned turns, and the note says so.

    Raises:
        pytest.UsageError: The file exists but is not a results file.
    """
    if not path.is_file():
        return {}, f"durations file {path} not found: balanced by planned turns"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise pytest.UsageError(
            f"--agent-eval-shard-durations {path}: cannot be read as JSON ({exc}); give a "
            "results file written with --agent-eval-results or by agent-eval merge"
        ) from None
    evals = document.get("evals") if isinstance(document, dict) else None
    if not isinstance(evals, list):
        raise pytest.UsageError(
            f"--agent-eval-shard-durations {path}: not a results file (no 'evals' list); give "
            "a results file written with --agent-eval-results or by agent-eval merge"
        )
    durations: dict[str, float] = {}
    for entry in evals:
        if not isinstance(entry, Mapping) or entry.get("verdict") == "skipped":
            continue
        nodeid, seconds = entry.get("nodeid"), entry.get("duration_s")
        if isinstance(nodeid, str) and isinstance(seconds, int | float) and seconds >= 0:
            durations[nodeid] = max(durations.get(nodeid, 0.0), float(seconds))
    if not durations:
        return {}, (
            f"durations file {path} holds no durations of evals that ran: balanced by planned turns"
        )
    return durations, None


def _planned_turns(item: pytest.Item) -> int | None:
    """Runs x turns of a YAML transcript; None for a Python eval (its turns are not known
    before it runs)."""
    if not isinstance(item, TranscriptItem):
        return None
    runs = item.config.stash[session_key].planned_runs(item.transcript.runs)
    return max(runs, 1) * max(len(item.transcript.turns), 1)


def _weights(
    items: Sequence[pytest.Item], durations: Mapping[str, float]
) -> tuple[list[tuple[str, float]], bool]:
    """Each eval test's weight, and whether they are seconds (durations) or planned turns."""
    turns = {item.nodeid: _planned_turns(item) for item in items}
    known = {n: durations[n] for n in turns if n in durations}
    if not known:
        turn_values = [t for t in turns.values() if t is not None]
        mean_turns = sum(turn_values) / len(turn_values) if turn_values else 1.0
        return [(n, float(t if t is not None else mean_turns)) for n, t in turns.items()], False
    mean_s = sum(known.values()) / len(known)
    timed_turns = sum(t for n, t in turns.items() if n in known and t is not None)
    timed_s = sum(s for n, s in known.items() if turns[n] is not None)
    per_turn = timed_s / timed_turns if timed_turns else None
    weights = []
    for nodeid, planned in turns.items():
        if nodeid in known:
            weights.append((nodeid, known[nodeid]))
        elif planned is not None and per_turn is not None:
            weights.append((nodeid, planned * per_turn))
        else:
            weights.append((nodeid, mean_s))
    return weights, True


def plan_shards(
    items: Sequence[pytest.Item],
    index: int,
    count: int,
    durations_file: Path | None = None,
) -> ShardPlan:
    """The plan for shard ``index`` of ``count`` over ``items`` (every test pytest selected)."""
    durations, note = read_durations(durations_file) if durations_file else ({}, None)
    evals = [item for item in items if is_eval_item(item)]
    weights, timed = _weights(evals, durations)
    if durations and not timed:
        note = (
            f"durations file {durations_file} knows none of these evals: balanced by planned turns"
        )
    shares, loads = split_by_weight(weights, count)
    digest = hashlib.sha256(
        json.dumps(
            {"count": count, "tests": sorted((n, round(w, 9)) for n, w in weights)},
            separators=(",", ":"),
        ).encode()
    ).hexdigest()[:16]
    mine = set(shares[index - 1])
    return ShardPlan(
        index=index,
        count=count,
        plan=digest,
        planned=len(evals),
        evals=tuple(item.nodeid for item in evals if item.nodeid in mine),
        loads=tuple(round(load, 6) for load in loads),
        balanced_by="durations" if timed else "planned turns",
        durations_file=str(durations_file) if durations_file else None,
        durations_note=note,
        collected=tuple(item.nodeid for item in items),
        deselected=len(evals) - len(mine),
    )


def select_shard(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--agent-eval-shard K/N``, deselect the eval tests of the other shards.

    Runs after every other selection (``-k``, ``-m``, tags), so the shards split what the
    session selected.
    """
    session = config.stash[session_key]
    if session.shard is None:
        return
    index, count = session.shard
    plan = plan_shards(items, index, count, session.shard_durations)
    note_plan(config, plan.to_dict())
    mine = set(plan.evals)
    drop = [item for item in items if is_eval_item(item) and item.nodeid not in mine]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [item for item in items if not is_eval_item(item) or item.nodeid in mine]
