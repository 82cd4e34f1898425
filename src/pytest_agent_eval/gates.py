"""Quality gates: judge groups of evals against a pass rate, and decide the exit status.

A group (``[tool.agent_eval.groups.NAME]``) selects evals by tag, pytest marker or name. Rules:

1. **Members.** An eval belongs to a group when one of its tags is in ``tags``, one of its markers
   is in ``pytest_markers``, or it is named in ``must_pass`` (transcript id, node id, or test name
   with or without parametrization). Skipped evals are listed but do not count.
2. **Verdict.** A group passes when at least one member ran, the fraction of members that passed
   is at least ``threshold``, and every ``must_pass`` entry names at least one eval that ran and
   all evals it names passed. An eval whose verdict could not be reached (ERROR: a setup error,
   a missing fixture, a judge that was down) says nothing about the agent, so it is left out of
   the pass rate and listed apart; it still fails a ``must_pass`` entry, and its test's error is
   never absorbed (rule 3), so the run fails for it, as an error, not as an agent failure.
3. **Absorbing.** A failing test is forgiven (exit status 0) only when *every* failure of the
   session is forgivable. A failure is forgivable when it is an eval test that failed in its call
   phase, at least one of its evals missed its threshold, and each eval that missed belongs to at
   least one group and all of its groups passed. Errors in setup/teardown, collection errors,
   failures of non-eval tests, and failures of a test whose evals all passed (something else
   failed) are never forgiven; nor is anything when ``-x`` / ``--maxfail`` stopped the session.
4. **Enforcing.** A group with ``enforce = true`` that did not pass (below threshold, a
   ``must_pass`` entry failed or did not run, or nothing matched) makes the exit status non-zero.
5. **Not live.** When no eval ran at all (every one skipped, or none selected), gates are not
   evaluated and the exit status is left alone, so a plain ``pytest`` without live mode stays green.

Only exit statuses 0 (OK) and 1 (tests failed) are ever changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pytest

from ._records import EvalRecord, SessionRecords
from .config import GateConfig

__all__ = [
    "ExitDecision",
    "GateResult",
    "decide_exit",
    "evaluate_gate",
    "evaluate_gates",
    "is_member",
]

# Pass rates are fractions of small integers; compare with a little slack so 4/5 meets 0.8.
_RATE_EPSILON = 1e-9


@dataclass(frozen=True, slots=True, kw_only=True)
class GateResult:
    """The verdict of one group."""

    config: GateConfig
    """The group as configured."""
    members: tuple[EvalRecord, ...] = ()
    """Member evals that ran and reached a verdict."""
    errored: tuple[EvalRecord, ...] = ()
    """Member evals whose verdict could not be reached (not counted in the rate)."""
    skipped: tuple[EvalRecord, ...] = ()
    """Member evals that were skipped (not counted)."""
    must_pass_missing: tuple[str, ...] = ()
    """``must_pass`` entries that named no eval that ran."""
    must_pass_failed: tuple[str, ...] = ()
    """``must_pass`` entries naming an eval that did not pass."""

    @property
    def name(self) -> str:
        """The group's name."""
        return self.config.name

    @property
    def total(self) -> int:
        """Member evals that ran."""
        return len(self.members)

    @property
    def passed_count(self) -> int:
        """Member evals that passed."""
        return sum(r.verdict == "passed" for r in self.members)

    @property
    def rate(self) -> float | None:
        """Fraction of members that passed; None when none ran."""
        return self.passed_count / self.total if self.total else None

    @property
    def matched_nothing(self) -> bool:
        """True when no member ran."""
        return self.total == 0

    @property
    def rate_met(self) -> bool:
        """True when the pass rate reaches the threshold."""
        rate = self.rate
        return rate is not None and rate + _RATE_EPSILON >= self.config.threshold

    @property
    def must_pass_ok(self) -> bool:
        """True when every ``must_pass`` entry ran and passed."""
        return not (self.must_pass_missing or self.must_pass_failed)

    @property
    def passed(self) -> bool:
        """The group's verdict."""
        return self.rate_met and self.must_pass_ok

    @property
    def problems(self) -> list[str]:
        """Why the group did not pass, in words; empty when it passed."""
        out: list[str] = []
        if self.matched_nothing:
            out.append("matched no eval that ran")
        elif not self.rate_met:
            out.append(
                f"pass rate {self.passed_count}/{self.total} is below "
                f"threshold {self.config.threshold:.0%}"
            )
        if self.must_pass_failed:
            out.append("must_pass failed: " + ", ".join(self.must_pass_failed))
        if self.must_pass_missing:
            out.append("must_pass did not run: " + ", ".join(self.must_pass_missing))
        if self.errored:
            out.append(
                f"{len(self.errored)} eval(s) errored, verdict not reached (not counted): "
                + ", ".join(dict.fromkeys(r.label for r in self.errored))
            )
        return out


def is_member(record: EvalRecord, gate: GateConfig) -> bool:
    """True when the group selects the eval (by tag, marker or ``must_pass`` name)."""
    if set(record.tags) & set(gate.tags):
        return True
    if set(record.markers) & set(gate.pytest_markers):
        return True
    return any(record.matches_name(name) for name in gate.must_pass)


def evaluate_gate(gate: GateConfig, records: Iterable[EvalRecord]) -> GateResult:
    """Judge one group over every eval of the session."""
    records = list(records)
    selected = [r for r in records if is_member(r, gate)]
    missing: list[str] = []
    failed: list[str] = []
    for name in gate.must_pass:
        named = [r for r in records if r.ran and r.matches_name(name)]
        if not named:
            missing.append(name)
        elif any(r.verdict != "passed" for r in named):
            failed.append(name)
    return GateResult(
        config=gate,
        members=tuple(r for r in selected if r.ran and r.verdict != "error"),
        errored=tuple(r for r in selected if r.ran and r.verdict == "error"),
        skipped=tuple(r for r in selected if not r.ran),
        must_pass_missing=tuple(missing),
        must_pass_failed=tuple(failed),
    )


def evaluate_gates(gates: Sequence[GateConfig], session: SessionRecords) -> tuple[GateResult, ...]:
    """Judge every group; empty when no eval ran (rule 5)."""
    if not session.ran:
        return ()
    return tuple(evaluate_gate(g, session.records) for g in gates)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExitDecision:
    """What the gates did to the exit status, and why."""

    original: int
    """pytest's exit status before the gates."""
    exitstatus: int
    """The exit status after the gates."""
    evaluated: bool = True
    """False when no eval ran, so gates were not evaluated."""
    absorbed: tuple[str, ...] = ()
    """Failed tests covered by passing groups (forgiven only if ``unabsorbed`` is empty)."""
    unabsorbed: tuple[str, ...] = ()
    """Failed tests no passing group covers."""
    enforced_failures: tuple[str, ...] = ()
    """Names of enforced groups that did not pass."""
    stopped_early: bool = False
    """True when ``-x`` / ``--maxfail`` stopped the session, so nothing was absorbed."""

    @property
    def changed(self) -> bool:
        """True when the gates changed the exit status."""
        return self.exitstatus != self.original

    @property
    def forgiven(self) -> bool:
        """True when the gates turned a failed session into a passing one."""
        return self.original == pytest.ExitCode.TESTS_FAILED and self.exitstatus == 0

    def summary(self) -> str:
        """One sentence for the terminal and the reports."""
        if not self.evaluated:
            return "gates not evaluated: no eval test ran"
        parts: list[str] = []
        if self.enforced_failures:
            parts.append("enforced group(s) failed: " + ", ".join(self.enforced_failures))
        if self.forgiven:
            # The earlier package's words, which CI logs are searched for.
            return (
                f"exit code overridden to 0: {len(self.absorbed)} eval failure(s) absorbed by "
                "passing groups: " + ", ".join(self.absorbed)
            )
        elif self.absorbed and self.stopped_early:
            parts.append(
                "failures are not absorbed because the session stopped early (-x / --maxfail)"
            )
        elif self.absorbed and self.unabsorbed:
            parts.append(
                f"{len(self.absorbed)} eval failure(s) covered by passing groups, but "
                f"{len(self.unabsorbed)} other failure(s) are not: " + ", ".join(self.unabsorbed)
            )
        if not parts:
            parts.append("gates did not change the outcome")
        return "; ".join(parts) + f" (exit status {self.exitstatus})"


def _forgivable(nodeid: str, session: SessionRecords, gates: Sequence[GateResult]) -> bool:
    if nodeid not in session.eval_nodeids or nodeid not in session.failed_in_call:
        return False
    evals = [r for r in session.records if r.nodeid == nodeid]
    missed = [r for r in evals if r.verdict == "failed"]
    if not missed or any(r.verdict == "error" for r in evals):
        return False
    for record in missed:
        groups = [g for g in gates if is_member(record, g.config)]
        if not groups or not all(g.passed for g in groups):
            return False
    return True


def decide_exit(
    exitstatus: int,
    session: SessionRecords,
    gates: Sequence[GateResult],
    *,
    stopped_early: bool = False,
) -> ExitDecision:
    """Apply rules 3-5 to pytest's exit status.

    Args:
        exitstatus: pytest's exit status.
        session: The records of the session.
        gates: The groups' verdicts.
        stopped_early: ``-x`` / ``--maxfail`` ended the session: tests that never ran could
            have failed too, so no failure is absorbed.
    """
    original = int(exitstatus)
    if not session.ran:
        return ExitDecision(original=original, exitstatus=original, evaluated=False)
    failed = list(dict.fromkeys(session.failed_nodeids))
    absorbed = tuple(n for n in failed if _forgivable(n, session, gates))
    unabsorbed = tuple(n for n in failed if n not in absorbed)
    enforced = tuple(g.name for g in gates if g.config.enforce and not g.passed)
    status = original
    if original in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        forgivable = failed and not unabsorbed and not stopped_early
        if original == pytest.ExitCode.TESTS_FAILED and forgivable:
            status = int(pytest.ExitCode.OK)
        if enforced:
            status = int(pytest.ExitCode.TESTS_FAILED)
    return ExitDecision(
        original=original,
        exitstatus=status,
        absorbed=absorbed,
        unabsorbed=unabsorbed,
        enforced_failures=enforced,
        stopped_early=stopped_early,
    )
