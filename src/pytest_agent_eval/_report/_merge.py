"""``agent-eval merge RESULTS... --expect-shards N``: one session out of the shards' results.

A shard's results file carries every test report its session saw, serialized by pytest's own
hook (`_shards`), and its plan (`pytest_agent_eval._shard`). The merge first checks that the files make one whole suite
(every shard once, of one plan, complete, written by this version), then runs a pytest session
that collects nothing and replays those reports through pytest's hooks in the suite's
collection order, as the xdist controller replays its workers'. So the terminal summary,
JUnit (pytest's junitxml), the gates, the baseline comparison, the markdown and HTML reports,
the job summary and the results file all come from the code one session runs, over the union
of the shards; the exit status is that session's, with the same rules (an ERROR is never
absorbed).

The session loads pytest's own plugins and this one only (no conftest.py, no other installed
plugin, no ``addopts``), so a merge job needs neither the agent's dependencies nor its
plugins, and behaves the same on every machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ..errors import AgentEvalError
from ._results_file import RESULTS_SCHEMA_VERSION
from ._session import package_version, reporter_key
from ._shards import ReplayedSession, groups_document, replayed_key

__all__ = ["REFUSED_EXIT", "MergeRefused", "ShardResults", "load_shards", "main"]

REFUSED_EXIT = 2
"""The exit status of a merge that was refused (the shards do not make one whole suite)."""

_OUTCOME_RANK = {"skipped": 0, "passed": 1, "failed": 2, "error": 3}
"""Which copy of a plain test that ran in several shards counts: the worst."""


class MergeRefused(AgentEvalError):
    """The results given do not make one whole suite; the message says why and what to do."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShardResults:
    """One shard's results file, read."""

    path: Path
    document: Mapping[str, Any]

    @property
    def shard(self) -> Mapping[str, Any]:
        """The file's ``shard`` section."""
        return self.document["shard"]  # type: ignore[no-any-return]

    @property
    def index(self) -> int:
        """The shard's number, 1-based."""
        return int(self.shard["index"])

    @property
    def name(self) -> str:
        """``shard 2/4 (results/shard-2.json)``."""
        return f"shard {self.shard['index']}/{self.shard['count']} ({self.path})"

    @property
    def reports(self) -> list[Mapping[str, Any]]:
        """The serialized pytest reports of the shard's session, in the order it saw them."""
        return list(self.shard.get("reports") or ())


@dataclass(slots=True)
class _Test:
    """One test's reports, from the shard that counts for it."""

    nodeid: str
    shard: ShardResults
    reports: list[Mapping[str, Any]] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        outcome = "passed"
        for report in self.reports:
            if report.get("outcome") == "failed":
                return "failed" if report.get("when") == "call" else "error"
            if report.get("outcome") == "skipped":
                outcome = "skipped"
        return outcome

    @property
    def is_eval(self) -> bool:
        return any(
            isinstance(r, Mapping) and r.get("kind") != "plain"
            for report in self.reports
            for r in (report.get("agent_eval_all") or ())
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class MergePlan:
    """The checked shards, and the tests to replay, in order."""

    shards: tuple[ShardResults, ...]
    tests: tuple[_Test, ...]
    collect_failures: tuple[Mapping[str, Any], ...]
    shared_plain: int
    """Plain tests that ran in more than one shard (each counted once)."""

    def replayed(self) -> ReplayedSession:
        """The facts the merged session states about itself."""
        first = self.shards[0].shard
        durations = [
            d for s in self.shards if isinstance(d := s.document.get("duration_s"), int | float)
        ]
        return ReplayedSession(
            selection=tuple(first.get("selection") or ()),
            duration_s=max(durations) if durations else None,
            merged_from=tuple(
                {
                    "file": str(s.path),
                    "shard": f"{s.shard['index']}/{s.shard['count']}",
                    "generated_at": s.document.get("generated_at"),
                    "duration_s": s.document.get("duration_s"),
                    "exit_status": s.document.get("exit_status"),
                    "evals": len(s.shard.get("evals") or ()),
                    "balanced_by": s.shard.get("balanced_by"),
                }
                for s in self.shards
            ),
        )


def _read(path: Path) -> ShardResults:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MergeRefused(
            f"{path}: cannot be read ({exc.strerror or exc}); a shard job that failed or was "
            "cancelled uploads no results file"
        ) from None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise MergeRefused(f"{path}: not JSON ({exc}); was the file cut short?") from None
    if not isinstance(document, dict) or not isinstance(document.get("evals"), list):
        raise MergeRefused(f"{path}: not a results file (no 'evals' list)")
    version = document.get("schema_version")
    if version != RESULTS_SCHEMA_VERSION:
        raise MergeRefused(
            f"{path}: results schema_version {version!r}, this agent-eval merges "
            f"{RESULTS_SCHEMA_VERSION}; run the shards and the merge with the same "
            "pytest-agent-eval"
        )
    ours, theirs = package_version(), document.get("package_version")
    if theirs != ours:
        raise MergeRefused(
            f"{path}: written by pytest-agent-eval {theirs}, this is {ours}; install the same "
            "version in the shard jobs and the merge job"
        )
    shard = document.get("shard")
    if not isinstance(shard, dict) or not isinstance(shard.get("index"), int):
        raise MergeRefused(
            f"{path}: not a shard's results (written without --agent-eval-shard K/N); run "
            "each shard with --agent-eval-shard K/N --agent-eval-results PATH"
        )
    problem = _shape_problem(shard)
    if problem:
        raise MergeRefused(
            f"{path}: its shard section is not as a shard writes it ({problem}); was the file "
            "changed after the shard wrote it? Run the shard again"
        )
    return ShardResults(path=path, document=document)


_REPORT_KEYS: dict[str, dict[str, type]] = {
    "TestReport": {"nodeid": str, "outcome": str, "when": str, "location": list, "keywords": dict},
    "CollectReport": {"nodeid": str, "outcome": str},
}


def _shape_problem(shard: Mapping[str, Any]) -> str:
    """What in a shard section would break the replay, or ""."""
    if not isinstance(shard.get("count"), int):
        return "'count' is not a number"
    for key in ("evals", "collected", "selection", "reports"):
        if not isinstance(shard.get(key), list):
            return f"no {key!r} list"
    if not all(isinstance(n, str) for n in (*shard["evals"], *shard["collected"])):
        return "a node id that is not text"
    for number, report in enumerate(shard["reports"], 1):
        kind = report.get("$report_type") if isinstance(report, dict) else None
        if kind not in _REPORT_KEYS:
            return f"report {number} is not a pytest report"
        for key, kind_of in _REPORT_KEYS[kind].items():
            if not isinstance(report.get(key), kind_of):
                return f"report {number} has no {key!r}"
    return ""


def _check_whole(shards: Sequence[ShardResults], expect: int) -> None:
    """Every shard 1..expect exactly once."""
    for s in shards:
        if s.shard.get("count") != expect:
            raise MergeRefused(
                f"{s.name}: it is one of {s.shard.get('count')} shards, but --expect-shards is "
                f"{expect}; give the same N to --agent-eval-shard K/N and --expect-shards"
            )
    by_index: dict[int, ShardResults] = {}
    for s in shards:
        if s.index in by_index:
            raise MergeRefused(
                f"shard {s.index}/{expect} given twice: {by_index[s.index].path} and {s.path} "
                "(a re-run job's results next to the first run's?); give each shard once"
            )
        by_index[s.index] = s
    missing = [k for k in range(1, expect + 1) if k not in by_index]
    if missing:
        have = ", ".join(str(k) for k in sorted(by_index)) or "none"
        raise MergeRefused(
            f"shard(s) {', '.join(f'{k}/{expect}' for k in missing)} missing (given: {have}); "
            "a shard job that failed or was cancelled uploads no results file. Run it again "
            "rather than merge a part of the suite"
        )


def _check_complete(s: ShardResults) -> None:
    """The shard ran to its end and ran every eval its plan gave it."""
    doc, shard = s.document, s.shard
    if shard.get("problem"):
        raise MergeRefused(f"{s.name}: {shard['problem']}; run the shard again")
    if not doc.get("complete", False) or doc.get("exit_status") not in (0, 1, 5):
        how = (
            f"stopped {doc['stopped']}"
            if doc.get("stopped")
            else f"exit status {doc.get('exit_status')}"
        )
        raise MergeRefused(
            f"{s.name} was interrupted ({how}): its session did not run every test; run the "
            "shard again"
        )
    reported = {r.get("nodeid") for r in s.reports if r.get("$report_type") == "TestReport"}
    never = [n for n in shard.get("evals") or () if n not in reported]
    if never:
        names = ", ".join(never[:3]) + (f" and {len(never) - 3} more" if len(never) > 3 else "")
        raise MergeRefused(
            f"{s.name} was interrupted: {len(never)} of its eval(s) never reported ({names}); "
            "run the shard again"
        )


def _tests_of(s: ShardResults) -> dict[str, _Test]:
    tests: dict[str, _Test] = {}
    for report in s.reports:
        if report.get("$report_type") != "TestReport":
            continue
        nodeid = str(report.get("nodeid"))
        tests.setdefault(nodeid, _Test(nodeid, s)).reports.append(report)
    return tests


def _twice(
    shards: Sequence[ShardResults], per_shard: Sequence[Mapping[str, _Test]]
) -> tuple[str, ShardResults, ShardResults] | None:
    """The first eval test that two shards ran, and the two shards."""
    owner: dict[str, ShardResults] = {}
    for s, tests in zip(shards, per_shard, strict=True):
        for nodeid, test in tests.items():
            if not test.is_eval:
                continue
            if nodeid in owner:
                return nodeid, owner[nodeid], s
            owner[nodeid] = s
    return None


def _check_one_plan(
    shards: Sequence[ShardResults], per_shard: Sequence[Mapping[str, _Test]]
) -> None:
    """Every shard split the same suite the same way, under the same options and groups."""
    twice = _twice(shards, per_shard)
    both = ""
    if twice is not None:
        both = f"eval {twice[0]} ran in two shards: {twice[1].name} and {twice[2].name}"
    first = shards[0]
    for s in shards[1:]:
        if s.shard.get("plan") != first.shard.get("plan"):
            raise MergeRefused(
                (f"{both}; " if both else "")
                + f"the shards did not split the same suite: {first.name} planned "
                f"{_plan_words(first)}, {s.name} planned {_plan_words(s)}. Run every shard on "
                "the same commit with the same options and the same durations file"
            )
    if both:
        raise MergeRefused(f"{both}; each eval must run in exactly one shard")
    for s in shards[1:]:
        if list(s.shard.get("selection") or ()) != list(first.shard.get("selection") or ()):
            raise MergeRefused(
                f"the shards selected different tests: {first.name} ran "
                f"{_selection_words(first)}, {s.name} ran {_selection_words(s)}; give every "
                "shard the same -k, -m and --agent-eval-tags"
            )
        if s.shard.get("groups") != first.shard.get("groups"):
            raise MergeRefused(
                f"the shards ran under different groups ([tool.agent_eval.groups]): "
                f"{first.name} and {s.name}; run every shard on the same commit"
            )


def _plan_words(s: ShardResults) -> str:
    shard = s.shard
    how = shard.get("balanced_by") or "?"
    if shard.get("durations_file") and how == "durations":
        how += f" from {shard['durations_file']}"
    return f"{shard.get('planned')} eval test(s) balanced by {how} (plan {shard.get('plan')})"


def _selection_words(s: ShardResults) -> str:
    return " ".join(s.shard.get("selection") or ()) or "every collected test"


def load_shards(paths: Sequence[Path], expect: int) -> MergePlan:
    """Read and check the shards' results files, and order their tests for the replay.

    Raises:
        MergeRefused: They do not make one whole suite (a missing or repeated shard, an eval
            in two shards, another schema or package version, an interrupted shard, shards
            of different plans, nothing that ran).
    """
    if expect < 1:
        raise MergeRefused(f"--expect-shards {expect}: give the number of shards, 1 or more")
    if not paths:
        raise MergeRefused("nothing to merge: give the shards' results files")
    shards = sorted((_read(p) for p in paths), key=lambda s: s.index)  # stable: as given
    _check_whole(shards, expect)
    for s in shards:
        _check_complete(s)
    per_shard = [_tests_of(s) for s in shards]
    _check_one_plan(shards, per_shard)
    if not any(
        isinstance(e, Mapping) and e.get("verdict") not in (None, "skipped")
        for s in shards
        for e in s.document.get("evals", ())
    ):
        raise MergeRefused(
            "nothing to merge: no eval ran in any shard (every eval was skipped or none was "
            "collected); were the shard jobs live (--agent-eval-live)?"
        )
    chosen: dict[str, _Test] = {}
    shared: set[str] = set()
    for tests in per_shard:
        for nodeid, test in tests.items():
            kept = chosen.get(nodeid)
            if kept is None:
                chosen[nodeid] = test
                continue
            shared.add(nodeid)  # a plain test several shards ran: its worst outcome counts
            if _OUTCOME_RANK[test.outcome] > _OUTCOME_RANK[kept.outcome]:
                chosen[nodeid] = test
    order = {n: i for i, n in enumerate(shards[0].shard.get("collected") or ())}
    replayed = sorted(chosen.values(), key=lambda t: (order.get(t.nodeid, len(order)), t.nodeid))
    failures: dict[str, Mapping[str, Any]] = {}
    for s in shards:  # a file that fails to import on every machine is one failure
        for r in s.reports:
            if r.get("$report_type") == "CollectReport":
                failures.setdefault(str(r.get("nodeid")), r)
    return MergePlan(
        shards=tuple(shards),
        tests=tuple(replayed),
        collect_failures=tuple(failures.values()),
        shared_plain=len(shared),
    )


def _as_pytest_json(data: Mapping[str, Any], rename: tuple[str, str] | None) -> dict[str, Any]:
    """A report as pytest serialized it, with what JSON turned into lists made tuples again
    (pytest reads a skip's ``longrepr`` and a test's ``location`` as tuples), and paths under
    the shard's rootdir moved to the merge's when they differ."""
    fixed = dict(data)
    for key in ("longrepr", "location"):
        if isinstance(fixed.get(key), list):
            fixed[key] = tuple(fixed[key])
    for key in ("user_properties", "sections"):
        if isinstance(fixed.get(key), list):
            fixed[key] = [tuple(v) if isinstance(v, list) else v for v in fixed[key]]
    records = fixed.get("agent_eval_all")
    if isinstance(records, list):
        if rename is not None:
            records = fixed["agent_eval_all"] = _renamed(records, *rename)
        fixed["agent_eval"] = records[0] if records else None  # as `put_records` puts them
    return fixed


def _renamed(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return new + value[len(old) :] if value.startswith(old) else value
    if isinstance(value, list):
        return [_renamed(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _renamed(v, old, new) for k, v in value.items()}
    return value


class ReplayPlugin:
    """The merge's session: collects nothing, replays the shards' reports."""

    def __init__(self, plan: MergePlan) -> None:
        self.plan = plan

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        ours = groups_document(config.stash[reporter_key].settings.groups)
        theirs = self.plan.shards[0].shard.get("groups")
        if theirs != ours:
            pytest.exit(
                "agent-eval merge: refused: the groups in [tool.agent_eval.groups] here differ "
                "from the ones the shards ran under; run the merge in the same checkout as the "
                "shards (the gates are applied with this folder's pyproject.toml)",
                returncode=REFUSED_EXIT,
            )
        config.stash[replayed_key] = self.plan.replayed()

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        lines = [
            f"agent-eval merge: {len(self.plan.shards)} shard(s), "
            f"{len(self.plan.tests)} test(s), plan {self.plan.shards[0].shard.get('plan')}"
        ]
        for s in self.plan.shards:
            evals = len(s.shard.get("evals") or ())
            seconds = s.document.get("duration_s")
            took = f", {seconds:.1f} s" if isinstance(seconds, int | float) else ""
            lines.append(f"  {s.name}: {evals} eval test(s){took}")
        if self.plan.shared_plain:
            lines.append(
                f"  {self.plan.shared_plain} plain test(s) ran in several shards: each counts "
                "once, with its worst outcome"
            )
        return lines

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> bool:
        session.items = []
        session.testscollected = len(self.plan.tests)
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        config = session.config
        hook = config.hook
        here = str(config.rootpath)

        def rename(shard: ShardResults) -> tuple[str, str] | None:
            there = shard.shard.get("rootdir")
            if not isinstance(there, str) or there == here:
                return None
            return there.rstrip(os.sep) + os.sep, here.rstrip(os.sep) + os.sep

        for data in self.plan.collect_failures:
            report = hook.pytest_report_from_serializable(
                config=config, data=_as_pytest_json(data, None)
            )
            hook.pytest_collectreport(report=report)
        for test in self.plan.tests:
            moved = rename(test.shard)
            reports = [
                hook.pytest_report_from_serializable(config=config, data=_as_pytest_json(d, moved))
                for d in test.reports
            ]
            location = reports[0].location
            hook.pytest_runtest_logstart(nodeid=test.nodeid, location=location)
            for report in reports:
                hook.pytest_runtest_logreport(report=report)
            hook.pytest_runtest_logfinish(nodeid=test.nodeid, location=location)
        return True


_PASSED_ON = (
    ("--agent-eval-report", "PATH", "write the merged markdown report to PATH"),
    ("--agent-eval-html", "PATH", "write the merged HTML report to PATH"),
    ("--agent-eval-results", "PATH", "write the merged results file to PATH"),
    ("--agent-eval-baseline", "PATH", "compare the merged session with an earlier results file"),
    ("--junitxml", "PATH", "write JUnit XML of every test to PATH"),
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-eval merge",
        description="Merge the results files of N shards (--agent-eval-shard K/N) into one "
        "session: the terminal summary, the reports, JUnit, the job summary, the gates and "
        "the baseline comparison over every shard. Exit status: the merged verdict (0 or 1, "
        "as one pytest session), 2 when the files do not make one whole suite.",
    )
    parser.add_argument("results", nargs="+", type=Path, metavar="RESULTS", help="shard files")
    parser.add_argument(
        "--expect-shards", type=int, required=True, metavar="N", help="how many shards ran"
    )
    for option, metavar, text in _PASSED_ON:
        parser.add_argument(option, metavar=metavar, help=text)
    parser.add_argument(
        "--agent-eval-subset-gates",
        choices=("strict", "report-only", "skip"),
        help="what gates do when the shards ran a subset (-k, -m, tags)",
    )
    parser.add_argument("-q", "--quiet", action="count", default=0, help="less output")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more output")
    parser.add_argument("-r", dest="report_chars", metavar="CHARS", help="as pytest's -r")
    parser.add_argument("--tb", metavar="STYLE", help="as pytest's --tb")
    parser.add_argument("--color", choices=("yes", "no", "auto"), help="as pytest's --color")
    return parser


def _pytest_args(args: argparse.Namespace) -> list[str]:
    out = [
        "-p",
        "no:cacheprovider",
        # No test code runs here, so nothing can raise unseen; that plugin's collections at
        # exit cost a large merge a quarter of a second.
        "-p",
        "no:unraisableexception",
        "--noconftest",
        "-o",
        "addopts=",
        "-o",
        "required_plugins=",
        # Options of plugins the merge does not load are unknown to it; that is expected.
        "-W",
        "ignore:Unknown config option:pytest.PytestConfigWarning",
        "-p",
        "pytest_agent_eval.plugin",
    ]
    for option, _, _ in _PASSED_ON:
        value = getattr(args, option.lstrip("-").replace("-", "_"))
        if value is not None:
            out.append(f"{option}={value}")
    if args.agent_eval_subset_gates:
        out.append(f"--agent-eval-subset-gates={args.agent_eval_subset_gates}")
    out += ["-q"] * args.quiet + ["-v"] * args.verbose
    for option, value in (("-r", args.report_chars), ("--tb", args.tb), ("--color", args.color)):
        if value is not None:
            out.append(f"{option}={value}" if option.startswith("--") else f"{option}{value}")
    return out


@contextmanager
def _only_our_plugins() -> Iterator[None]:
    """No installed plugin but ours, and no ``PYTEST_ADDOPTS`` from the job's environment."""
    saved = {k: os.environ.get(k) for k in ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS")}
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    os.environ.pop("PYTEST_ADDOPTS", None)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def main(argv: Sequence[str]) -> int:
    """``agent-eval merge``; returns the merged session's exit status, or `REFUSED_EXIT`."""
    args = _parser().parse_args(list(argv))
    try:
        plan = load_shards(args.results, args.expect_shards)
    except MergeRefused as exc:
        print(f"agent-eval merge: refused: {exc}", file=sys.stderr)
        return REFUSED_EXIT
    with _only_our_plugins():
        return int(pytest.main(_pytest_args(args), plugins=[ReplayPlugin(plan)]))
