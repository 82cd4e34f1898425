"""The shard section of a results file: what a shard session keeps for ``agent-eval merge``,
and what a merged session says about itself.

A shard session (``--agent-eval-shard K/N``) keeps every test report it saw, serialized by
pytest's own hook as xdist ships reports, and the plan its collection made (`_shard` computes
it, on every xdist worker alike; a worker's plan reaches the controller in its output). Its
results file carries both under ``shard``. The merge (`_merge`) replays them and tells the
reporter, through `ReplayedSession`, the facts its own options cannot: the shards' selection
and time, and which files it merged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pytest

from .._config import GateConfig

__all__ = [
    "WORKER_KEY",
    "ReplayedSession",
    "ShardRecorder",
    "groups_document",
    "note_plan",
    "register_shard_recorder",
    "replayed_key",
    "shard_deselected",
    "shard_document",
]

WORKER_KEY = "agent_eval_shard_plan"
"""Where an xdist worker puts its plan in ``config.workeroutput``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayedSession:
    """What a session whose test reports were replayed from elsewhere (``agent-eval merge``
    replays its shards') says about itself, which its own options cannot tell."""

    selection: tuple[str, ...]
    """How the replayed tests were chosen (the shards' common selection)."""
    duration_s: float | None
    """The time the replayed tests took (the slowest shard's session)."""
    merged_from: tuple[Mapping[str, Any], ...] = ()
    """One entry per replayed source (each shard's file), for the results file."""


replayed_key = pytest.StashKey[ReplayedSession]()
"""Set by ``agent-eval merge`` when its session starts; absent in a session that ran tests."""


def _plain(value: Any) -> Any:
    """What JSON cannot hold (an object a test gave ``record_property``), as text."""
    return str(value)


class ShardRecorder:
    """Keeps every test report of a shard session, and its plan. Registered on the process
    that sees every report (a single process, or the xdist controller)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.reports: list[dict[str, Any]] = []
        self.plan: dict[str, Any] | None = None
        """The plan this process made (a single process), or None."""
        self.worker_plans: list[dict[str, Any]] = []
        """The plans of the xdist workers, one per worker that finished."""

    def _keep(self, report: pytest.TestReport | pytest.CollectReport) -> None:
        data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
        if data is not None:
            # Under xdist the controller's copy names its worker (an object of this process).
            data.pop("node", None)
            if isinstance(data.get("agent_eval_all"), list):
                data.pop("agent_eval", None)  # its first record again; the merge restores it
            # Through JSON now: what the file will hold is what is kept.
            self.reports.append(json.loads(json.dumps(data, default=_plain)))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._keep(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self._keep(report)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        plan, _ = self.current_plan()
        if (
            plan is not None
            and not plan.get("evals")
            and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
            and plan.get("planned")
        ):
            # More shards than eval tests: this one was given none, which is no failure.
            session.exitstatus = pytest.ExitCode.OK

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        plan, problem = self.current_plan()
        if plan is None:
            terminalreporter.write_line(f"agent eval shard: {problem}", red=True, bold=True)
            return
        how = plan.get("balanced_by")
        if how == "durations":
            how = f"durations from {plan.get('durations_file')}"
        terminalreporter.write_line(
            f"agent eval shard {plan.get('index')}/{plan.get('count')}: "
            f"{len(plan.get('evals') or ())} of {plan.get('planned')} eval test(s), "
            f"balanced by {how} (plan {plan.get('plan')})"
        )
        if plan.get("durations_note"):
            terminalreporter.write_line(f"  {plan['durations_note']}", yellow=True)
        reporter = self.config.pluginmanager.get_plugin("agent-eval-reporter")
        written = getattr(reporter, "written", None)
        if written is not None and getattr(written, "results", None) is None:
            terminalreporter.write_line(
                "  no results file was written, so agent-eval merge cannot use this shard: "
                "pass --agent-eval-results PATH (or set results_path)",
                yellow=True,
            )
        if problem:
            terminalreporter.write_line(f"  {problem}", red=True, bold=True)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        plan = output.get(WORKER_KEY)
        if isinstance(plan, Mapping):
            self.worker_plans.append(dict(plan))

    def current_plan(self) -> tuple[dict[str, Any] | None, str]:
        """The session's plan (its own, or its workers'), and what is wrong with it ("")."""
        if self.plan is not None:
            return self.plan, ""
        if not self.worker_plans:
            return None, "no shard plan was made (its collection did not finish)"
        first = self.worker_plans[0]
        keys = ("plan", "evals")
        if any(any(p.get(k) != first.get(k) for k in keys) for p in self.worker_plans[1:]):
            return first, "its xdist workers planned different shards"
        return first, ""


_recorder_key = pytest.StashKey[ShardRecorder]()


def register_shard_recorder(config: pytest.Config) -> None:
    """In a shard session, on the process that sees every report (not on an xdist worker)."""
    if not config.getoption("agent_eval_shard", None) or hasattr(config, "workerinput"):
        return
    recorder = ShardRecorder(config)
    config.stash[_recorder_key] = recorder
    config.pluginmanager.register(recorder, "agent-eval-shard-recorder")


def note_plan(config: pytest.Config, plan: Mapping[str, Any]) -> None:
    """Keep the plan this process made: for its own recorder, or, on an xdist worker, in the
    output xdist sends to the controller."""
    workeroutput = getattr(config, "workeroutput", None)
    if isinstance(workeroutput, dict):
        workeroutput[WORKER_KEY] = dict(plan)
    recorder = config.stash.get(_recorder_key, None)
    if recorder is not None:
        recorder.plan = dict(plan)


def shard_deselected(config: pytest.Config) -> int:
    """Tests this process deselected for belonging to other shards (0 on an xdist controller,
    which deselects nothing itself)."""
    recorder = config.stash.get(_recorder_key, None)
    plan = recorder.plan if recorder is not None else None
    deselected = plan.get("deselected") if plan is not None else 0
    return deselected if isinstance(deselected, int) else 0


def groups_document(groups: Sequence[GateConfig]) -> list[dict[str, Any]]:
    """The configured groups as plain JSON: the merge applies its own folder's groups, so it
    checks they are the ones the shards ran under."""
    return json.loads(json.dumps([asdict(g) for g in groups]))  # type: ignore[no-any-return]


def shard_document(
    config: pytest.Config,
    *,
    index: int,
    count: int,
    selection: Sequence[str],
    groups: Sequence[GateConfig],
) -> dict[str, Any] | None:
    """What a shard's results file carries for the merge; None outside a shard session.

    Args:
        config: The session's config.
        index: This shard, 1-based.
        count: How many shards.
        selection: How the session chose its tests besides the shard (``-k booking``): every
            shard of one merge must have chosen the same.
        groups: The groups the session ran under.
    """
    recorder = config.stash.get(_recorder_key, None)
    if recorder is None:
        return None
    plan, problem = recorder.current_plan()
    document: dict[str, Any] = {"index": index, "count": count, "plan": None}
    document.update(plan or {})
    document.update(
        index=index,
        count=count,
        problem=problem or None,
        selection=list(selection),
        groups=groups_document(groups),
        rootdir=str(config.rootpath),
        reports=recorder.reports,
    )
    return document
