"""Which test items are evals, how they are selected and skipped, and what their reports carry.

An eval item is a YAML transcript, or a Python test that uses the ``agent_eval`` marker or
fixture. Its test report carries one serialized `EvalRecord` per eval it ran (also through
xdist), which the reporter and the gates read back.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from ._collection import TranscriptItem
from ._eval_plan import marker_plan
from ._fixture import kept_results, records_key, refusal_key, session_key
from ._records import EvalRecord, put_records
from ._report._account import format_account
from ._sanitize import redact_secrets, secret_values
from ._text import did_you_mean
from .models import TranscriptResult
from .models._turn_taking import TurnTakingRecord

__all__ = [
    "FAILURE_TEXT_MAX_CHARS",
    "NOT_LIVE_REASON",
    "UNASSERTED_NOTE",
    "assert_unasserted_results",
    "attach_records",
    "deselect_by_tags",
    "error_reason",
    "eval_record",
    "failure_text",
    "is_eval_item",
    "is_group_member",
    "is_python_eval",
    "item_param",
    "item_tags",
    "make_error",
    "mark_eval_item",
    "plan_evals",
    "redact_report",
    "register_group_markers",
    "start_records",
]

NOT_LIVE_REASON = (
    "agent_eval: live mode disabled (use --agent-eval-live or EVAL_LIVE=1, "
    "or live = true in [tool.agent_eval])"
)
"""The skip reason of eval tests when evals are not live (the summary line counts these); it
starts with the earlier package's words."""


def register_group_markers(config: pytest.Config) -> None:
    """Register every group's ``pytest_markers`` as markers, as the earlier package did, so a
    gate's marker raises no unknown-mark warning and works under ``--strict-markers``.

    A marker the project already registers (in its ini ``markers``) is left as the project
    wrote it.
    """
    known = {line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")}
    for group in config.stash[session_key].settings.groups:
        for marker in group.pytest_markers:
            if marker not in known:
                known.add(marker)
                config.addinivalue_line(
                    "markers", f"{marker}: selects evals for the quality gate '{group.name}'"
                )


def is_python_eval(item: pytest.Item) -> bool:
    """A Python test that uses the ``agent_eval`` marker or fixture."""
    return not isinstance(item, TranscriptItem) and (
        item.get_closest_marker("agent_eval") is not None
        or "agent_eval" in getattr(item, "fixturenames", ())
    )


def is_eval_item(item: pytest.Item) -> bool:
    """YAML transcripts and Python tests that use the marker or the fixture."""
    return isinstance(item, TranscriptItem) or is_python_eval(item)


def item_tags(item: pytest.Item) -> list[str]:
    """The transcript's tags, or the ``agent_eval`` marker's."""
    if isinstance(item, TranscriptItem):
        return list(item.transcript.tags)
    marker = item.get_closest_marker("agent_eval")
    return list(marker.kwargs.get("tags", [])) if marker is not None else []


def mark_eval_item(item: pytest.Item) -> None:
    """Mark an eval test: tags as ``-k`` keywords, and a skip marker when evals are not live.

    A skip *marker* (rather than a skip call) makes ``-rs`` point at the transcript or test.
    A transcript without an agent fixture is left unmarked, so its setup error shows even
    when not live.
    """
    if not is_eval_item(item):
        return
    item.extra_keyword_matches.update(item_tags(item))
    live = item.config.stash[session_key].live
    if not live and not (isinstance(item, TranscriptItem) and not item.has_agent_fixture):
        item.add_marker(pytest.mark.skip(reason=NOT_LIVE_REASON))


def deselect_by_tags(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--agent-eval-tags``, deselect eval tests carrying none of the tags."""
    tags = config.stash[session_key].tags
    if not tags:
        return
    keep, drop = [], []
    known: set[str] = set()
    for item in items:
        if is_eval_item(item):
            known.update(item_tags(item))
        if is_eval_item(item) and not set(item_tags(item)) & set(tags):
            drop.append(item)
        else:
            keep.append(item)
    unknown = [t for t in tags if t not in known]
    if unknown and drop:
        # A typo must not look like "no eval matched": name the tags that do exist.
        hints = "".join(did_you_mean(t, sorted(known)) for t in unknown)
        have = ", ".join(sorted(known)) or "none"
        warnings.warn(
            pytest.PytestWarning(
                f"--agent-eval-tags: no eval carries {', '.join(map(repr, unknown))}{hints}; "
                f"tags of the collected evals: {have}"
            ),
            stacklevel=1,
        )
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def plan_evals(config: pytest.Config, nodeids: list[str]) -> None:
    """Tell the reporter which evals are about to run (absent on xdist workers)."""
    from ._report._session import reporter_key

    reporter = config.stash.get(reporter_key, None)
    if reporter is not None:
        reporter.plan(nodeids)


def redact_report(item: pytest.Item, report: pytest.TestReport) -> None:
    """Hide secrets in what an eval test's report shows: its failure text and its sections.

    A provider that echoes the key it was sent (``Bearer sk-...``) in an error would otherwise
    put it on the terminal, in JUnit and in CI logs. The failure is replaced by its text only
    when a secret was found in it (the text keeps pytest's layout, without colour).
    """
    if not is_eval_item(item):
        return
    secrets = secret_values()
    if report.longrepr is not None and not isinstance(report.longrepr, tuple):
        text = str(report.longrepr)
        redacted = redact_secrets(text, secrets)
        if redacted != text:
            report.longrepr = redacted
    if report.sections:
        report.sections = [
            (title, redact_secrets(body, secrets)) for title, body in report.sections
        ]


def start_records(item: pytest.Item) -> None:
    """A fresh record list for an eval test (a rerun by pytest-rerunfailures reuses the item)."""
    if is_eval_item(item):
        item.stash[records_key] = []


def item_param(item: pytest.Item) -> str | None:
    """The parametrization id of a test (``fast`` of ``booking[fast]``), or None."""
    name = item.name
    start = name.find("[")
    if start < 0 or not name.endswith("]"):
        return None
    return name[start + 1 : -1] or None


def _planned(item: pytest.Item) -> tuple[float | None, int | None]:
    """The threshold and runs an eval of ``item`` was to have, for a record without result."""
    session = item.config.stash[session_key]
    if isinstance(item, TranscriptItem):
        return item.transcript.threshold, session.planned_runs(item.transcript.runs)
    marker = item.get_closest_marker("agent_eval")
    planned = marker_plan(marker.kwargs if marker is not None else {}, session.settings)
    threshold, runs = planned.threshold, planned.runs
    ok_threshold = isinstance(threshold, int | float) and not isinstance(threshold, bool)
    ok_runs = isinstance(runs, int) and not isinstance(runs, bool)
    return (
        float(threshold) if ok_threshold else None,
        session.planned_runs(runs if ok_runs else None),
    )


def eval_record(
    item: pytest.Item,
    result: TranscriptResult | None = None,
    path: str | Path | None = None,
    *,
    not_live: bool = False,
    error: str | None = None,
    description: str = "",
    notes: tuple[str, ...] = (),
    turn_taking: TurnTakingRecord | None = None,
) -> EvalRecord:
    """The record of one eval of ``item`` (``result`` None: it did not run; ``error`` says
    why, when it failed before a result)."""
    is_yaml = isinstance(item, TranscriptItem)
    if isinstance(item, TranscriptItem):
        path = item.path
        description = item.transcript.description
    threshold: float | None
    planned: int | None
    if result is not None:
        transcript_id = result.transcript_id
        threshold, planned = result.threshold, result.planned_runs or len(result.runs)
    else:
        transcript_id = item.transcript.id if isinstance(item, TranscriptItem) else item.name
        threshold, planned = _planned(item)
    return EvalRecord(
        nodeid=item.nodeid,
        transcript_id=transcript_id,
        kind="yaml" if is_yaml else "python",
        markers=tuple(sorted({m.name for m in item.iter_markers()})),
        tags=tuple((list(result.tags) if result is not None else []) or item_tags(item)),
        path=str(path) if path is not None else None,
        result=result,
        not_live=not_live,
        param=item_param(item),
        description=str(description or ""),
        error=error,
        threshold=threshold,
        planned_runs=planned,
        notes=tuple(notes),
        turn_taking=turn_taking,
    )


FAILURE_TEXT_MAX_CHARS = 4000
"""The failure text kept on a record (reports show it whole; a long traceback is cut)."""


def failure_text(report: pytest.TestReport) -> str:
    """What a failed phase says, as plain text: the message of a ``pytest.fail`` (a missing or
    stale fixture with its fix), else pytest's own failure text, secrets redacted."""
    longrepr = report.longrepr
    if isinstance(longrepr, str):
        text = longrepr
    elif isinstance(longrepr, tuple) and len(longrepr) == 3:
        text = str(longrepr[2])
    else:
        crash = getattr(longrepr, "reprcrash", None)
        message = getattr(crash, "message", None)
        if message and message.startswith("Failed: "):
            # pytest.fail(...): our own message (a missing fixture and its fix), whole; where
            # pytest raised it says nothing.
            text = message.removeprefix("Failed: ")
        elif message:
            where = (
                f" ({getattr(crash, 'path', None)}:{getattr(crash, 'lineno', None)})"
                if getattr(crash, "path", None)
                else ""
            )
            text = f"{message}{where}"
        else:
            text = report.longreprtext
    text = redact_secrets(text.strip(), secret_values())
    if len(text) > FAILURE_TEXT_MAX_CHARS:
        text = text[: FAILURE_TEXT_MAX_CHARS - 1] + "…"
    return text


def is_group_member(item: pytest.Item) -> bool:
    """A plain test (not an eval) that a group takes in: it carries one of the group's
    ``pytest_markers`` or a ``must_pass`` entry names it (test name, with or without its
    parametrization, or node id), as the earlier package took plain tests into groups."""
    if is_eval_item(item):
        return False
    groups = item.config.stash[session_key].settings.groups
    if not groups:
        return False
    markers = {m.name for m in item.iter_markers()}
    names = {item.name, item.name.split("[", 1)[0], item.nodeid}
    return any(markers & set(g.pytest_markers) or names & set(g.must_pass) for g in groups)


def _plain_record(item: pytest.Item, report: pytest.TestReport) -> EvalRecord:
    """The record of a plain group member: no result, its test's outcome is its verdict."""
    path, _, _ = item.reportinfo()
    return EvalRecord(
        nodeid=item.nodeid,
        transcript_id=item.name,
        kind="plain",
        markers=tuple(sorted({m.name for m in item.iter_markers()})),
        path=str(path),
        param=item_param(item),
        error=failure_text(report) if report.failed else None,
    )


def attach_records(item: pytest.Item, report: pytest.TestReport) -> None:
    """Put the item's eval records on its report, serialized (`put_records`); for a failed
    Python test, add each eval's account as a section. A test that ran no eval gets one record
    without a result, saying whether it was skipped for not being live. A plain test that is
    a group member gets a record of kind ``plain``."""
    if is_group_member(item):
        put_records(report, [_plain_record(item, report)])
        return
    if not is_eval_item(item):
        return
    records = item.stash.get(records_key, []) if report.when == "call" else []
    if records:
        put_records(
            report,
            [
                eval_record(
                    item,
                    r.result,
                    r.path,
                    description=r.description,
                    notes=r.notes,
                    turn_taking=r.turn_taking,
                )
                for r in records
            ],
        )
        if report.failed and not isinstance(item, TranscriptItem):
            for result in kept_results(item):
                report.sections.append(
                    (f"agent eval: {result.transcript_id}", format_account(result))
                )
    else:
        not_live = (
            report.skipped
            and report.when == "setup"
            and not item.config.stash[session_key].live
            and NOT_LIVE_REASON in str(report.longrepr)
        )
        error = failure_text(report) if report.failed else None
        put_records(report, [eval_record(item, not_live=bool(not_live), error=error)])
    if report.skipped and isinstance(report.longrepr, tuple) and report.when == "call":
        # A skip raised while the eval ran (``stale_audio = "skip"``) points at the transcript
        # or test, not at the line of pytest's that raised it.
        path, line, _ = item.reportinfo()
        report.longrepr = (str(path), (line or 0) + 1, report.longrepr[2])


def error_reason(item: pytest.Item) -> str | None:
    """Why ``item``'s eval is an ERROR (our code refused to run it, or a result could not
    evaluate the agent), or None when it is not one."""
    refused = item.stash.get(refusal_key, None)
    if refused is not None:
        return refused
    for result in kept_results(item):
        if result.errored:
            return result.error_reason
    return None


def make_error(item: pytest.Item, report: pytest.TestReport) -> None:
    """Make a failed call of an eval that could not evaluate the agent a pytest *error*.

    pytest calls a failed call phase a failure and only a failed setup or teardown an error
    (in its summary, its exit counts and JUnit's ``<error>``); so the call's report is
    reported as a failed setup, the phase in which what we could not do belongs (start the
    conversation, a fixture, the judge). ``report.agent_eval_error`` keeps the reason, and
    travels with the report through xdist.
    """
    if report.when != "call" or not report.failed or not is_eval_item(item):
        return
    reason = error_reason(item)
    if reason is None:
        return
    report.when = "setup"
    report.agent_eval_error = reason  # type: ignore[attr-defined]


UNASSERTED_NOTE = (
    "(asserted by pytest-agent-eval when the test ended, because the test did not call "
    "assert_threshold() on this result; mark the test "
    "@pytest.mark.agent_eval(assert_threshold=False) to judge results yourself)"
)
"""Said after the threshold message of a result the plugin asserted for the test."""


def assert_unasserted_results(item: pytest.Item) -> None:
    """Fail a Python eval test that returned normally with a result below its threshold that
    it never asserted, so the test cannot pass while the reports say FAIL; and one with a
    result that could not evaluate the agent, always (it becomes a pytest error).

    The ``agent_eval(assert_threshold=False)`` marker turns this off for a test that judges
    its results itself (one that checks a bad agent fails, say).
    """
    __tracebackhide__ = True
    results = kept_results(item)
    for result in results:
        # Whatever the test does with a result that could not evaluate the agent (judge it
        # itself, catch the assertion), it must not pass on it.
        if result.errored:
            pytest.fail(result.threshold_message(), pytrace=False)
    marker = item.get_closest_marker("agent_eval")
    if marker is not None and marker.kwargs.get("assert_threshold", True) is False:
        return
    for result in results:
        if not result.passed and not result.threshold_asserted:
            pytest.fail(f"{result.threshold_message()}\n{UNASSERTED_NOTE}", pytrace=False)
