"""Quality gates: judge groups of evals against a pass rate, and decide the exit status.

A group (``[tool.agent_eval.groups.NAME]``) selects evals by tag, pytest marker or name. Rules:

1. **Members.** An eval belongs to a group when one of its tags is in ``tags``, one of its markers
   is in ``pytest_markers``, or it is named in ``must_pass`` (transcript id, node id, or test name
   with or without parametrization). A plain test (not an eval) that carries one of the
   group's ``pytest_markers`` or is named in its ``must_pass`` is a member too, as in the
   earlier package: its pytest outcome is its verdict. Skipped members are listed but do not
   count.
2. **Verdict.** A group passes when at least one member ran, the fraction of members that passed
   is at least ``threshold``, and every ``must_pass`` entry that ran passed. An ERROR member
   (the agent could not be evaluated) is left out of the pass rate and listed apart; it still
   fails a ``must_pass`` entry, and its test's error is never absorbed (rule 3). A CRASHED
   member (the agent crashed in a run, `models.Verdict`) counts as not passed and fails the
   group whatever its pass rate (``crashes_fail_gates``; off, a crash is an ordinary FAIL and
   the member is ``failed``). A group whose members all were skipped is SKIPPED: it neither
   passes nor fails.
3. **Selection.** What the session's selection (``-k``, ``-m``, ``--agent-eval-tags``,
   deselection) left out does not count against a group: a ``must_pass`` entry that did not
   run warns (``WARNING: must_pass entry 'X' did not run``) and a group none of whose members
   was selected warns that it matched nothing; neither fails the group. In a full run nothing
   was left out, so an entry that did not run, or a group that matched nothing, fails.
4. **Absorbing.** A failing test is forgiven (exit status 0) only when *every* failure of the
   session is forgivable. A failure is forgivable when it is a member test that failed in its
   call phase, at least one of its evals missed its threshold (or, for a plain member, its
   test failed), and each eval that missed belongs to at least one group and all of its groups
   passed. CRASHED evals, ERRORs, errors in setup/teardown, collection errors, failures of
   tests in no group, and failures of a test whose evals all passed (something else failed)
   are never forgiven; nor is anything when ``-x`` / ``--maxfail`` stopped the session.
5. **Enforcing.** A group with ``enforce = true`` that FAILED makes the exit status non-zero.
6. **Not live.** When no eval ran at all (every one skipped, or none selected), gates are not
   evaluated and the exit status is left alone, so a plain ``pytest`` without live mode stays green.

Only exit statuses 0 (OK) and 1 (tests failed) are ever changed. Every line a group prints
(`gate_lines`) is worded here, once, for the terminal and every report.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import pytest

from ._config import GateConfig
from ._records import EvalRecord, SessionRecords

__all__ = [
    "ExitDecision",
    "GateLine",
    "GateResult",
    "decide_exit",
    "evaluate_gate",
    "evaluate_gates",
    "is_member",
]

# Pass rates are fractions of small integers; compare with a little slack so 4/5 meets 0.8.
_RATE_EPSILON = 1e-9


GateStatus = Literal["PASSED", "FAILED", "SKIPPED"]


@dataclass(frozen=True, slots=True)
class GateLine:
    """One line a group prints: its words, and how bad it is (``ok``, ``warning`` or
    ``failure``), which the terminal colours and the reports mark."""

    text: str
    level: Literal["ok", "warning", "failure"] = "ok"


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
    partial: bool = False
    """The session ran a selection (``-k``, ``-m``, tags, deselection): what did not run was
    left out by it and does not count against the group (rule 3)."""

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
    def crashed(self) -> tuple[EvalRecord, ...]:
        """Member evals in which the agent crashed: each fails the group (rule 2)."""
        return tuple(r for r in self.members if r.verdict == "crashed")

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
        """True when no ``must_pass`` entry failed, nor, in a full run, did not run."""
        return not (self.must_pass_failed or (self.must_pass_missing and not self.partial))

    @property
    def status(self) -> GateStatus:
        """``PASSED``, ``FAILED``, or ``SKIPPED`` when its members all were skipped (or, in a
        selection, none was selected) and nothing it names failed."""
        nothing_ran = self.matched_nothing and not self.errored
        if nothing_ran and self.must_pass_ok and (self.skipped or self.partial):
            return "SKIPPED"
        ok = self.rate_met and self.must_pass_ok and not self.crashed
        return "PASSED" if ok else "FAILED"

    @property
    def passed(self) -> bool:
        """The group did not fail (PASSED, or SKIPPED: nothing of it ran to judge)."""
        return self.status != "FAILED"

    def lines(self) -> list[GateLine]:
        """What the group says, in the earlier package's words where its users grep them:
        the headline, ``failures:``, one line per ``must_pass`` entry, then warnings."""
        cfg = self.config
        status = self.status
        if status == "SKIPPED" and self.skipped:
            head = GateLine(
                f"{self.name}: SKIPPED ({len(self.skipped)} matched, all skipped)", "warning"
            )
        elif status == "SKIPPED":
            head = GateLine(f"{self.name}: SKIPPED (no member selected)", "warning")
        else:
            rate = "–" if self.rate is None else f"{self.rate:.0%}"
            head = GateLine(
                f"{self.name}: {self.passed_count}/{self.total} passed ({rate}) >= "
                f"{cfg.threshold:.0%} required -- {status}",
                "ok" if status == "PASSED" else "failure",
            )
        out = [head]
        failing = [r.label for r in self.members if r.verdict != "passed"]
        if failing:
            out.append(GateLine("  failures: " + ", ".join(dict.fromkeys(failing))))
        if self.crashed:
            names = ", ".join(dict.fromkeys(r.label for r in self.crashed))
            out.append(
                GateLine(
                    f"  crashed (the agent crashed; fails the group whatever its pass rate): "
                    f"{names}",
                    "failure",
                )
            )
        if self.errored:
            names = ", ".join(dict.fromkeys(r.label for r in self.errored))
            out.append(
                GateLine(f"  errored (verdict not reached, not counted): {names}", "failure")
            )
        for entry in cfg.must_pass:
            if entry in self.must_pass_failed:
                out.append(GateLine(f"  must_pass: {entry} FAILED", "failure"))
            elif entry in self.must_pass_missing and self.partial:
                out.append(GateLine(f"  WARNING: must_pass entry '{entry}' did not run", "warning"))
            elif entry in self.must_pass_missing:
                out.append(
                    GateLine(f"  must_pass: {entry} did not run (counts as FAILED)", "failure")
                )
            else:
                out.append(GateLine(f"  must_pass: {entry} ok"))
        if self.matched_nothing and not self.skipped and not self.errored:
            why = " (left out by the selection)" if self.partial else ""
            out.append(
                GateLine(f"  WARNING: group '{self.name}' matched no eval that ran{why}", "warning")
            )
        if cfg.enforce:
            out.append(GateLine("  enforced: a FAILED here fails the run"))
        return out

    @property
    def problems(self) -> list[str]:
        """Why the group did not pass, or what it warns of, in the words of `lines` (for the
        reports' "why" column); empty when there is nothing to say."""
        return [line.text.strip() for line in self.lines()[1:] if line.level != "ok"]


def is_member(record: EvalRecord, gate: GateConfig) -> bool:
    """True when the group selects the eval (by tag, marker or ``must_pass`` name)."""
    if set(record.tags) & set(gate.tags):
        return True
    if set(record.markers) & set(gate.pytest_markers):
        return True
    return any(record.matches_name(name) for name in gate.must_pass)


def evaluate_gate(
    gate: GateConfig, records: Iterable[EvalRecord], *, partial: bool = False
) -> GateResult:
    """Judge one group over every eval (and plain member test) of the session; ``partial``
    when the session ran a selection (rule 3)."""
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
        partial=partial,
    )


def evaluate_gates(
    gates: Sequence[GateConfig], session: SessionRecords, *, partial: bool = False
) -> tuple[GateResult, ...]:
    """Judge every group; empty when no eval ran (rule 6)."""
    if not session.ran:
        return ()
    records = (*session.records, *session.plain)
    return tuple(evaluate_gate(g, records, partial=partial) for g in gates)


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
    reported_failures: tuple[str, ...] = ()
    """Names of groups that FAILED but are not enforced (reported, the exit status kept)."""
    errors: tuple[str, ...] = ()
    """Tests that errored (an ERROR eval, a setup error): never absorbed."""
    crashes: tuple[str, ...] = ()
    """Tests with an eval in which the agent crashed: never absorbed."""
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
        unchanged = not parts
        if self.crashes:
            parts.append(
                f"{len(self.crashes)} crash(es) of the agent (never absorbed): "
                + ", ".join(self.crashes)
            )
        if self.errors and not (self.absorbed and self.unabsorbed):
            parts.append(f"{len(self.errors)} error(s) (never absorbed): " + ", ".join(self.errors))
        if self.reported_failures:
            parts.append(
                "group(s) FAILED but not enforced (reported only): "
                + ", ".join(self.reported_failures)
            )
        if unchanged:
            parts.append("gates did not change the outcome")
        return "; ".join(parts) + f" (exit status {self.exitstatus})"


def _forgivable(
    nodeid: str,
    session: SessionRecords,
    gates: Sequence[GateResult],
    passed: Sequence[bool],
) -> bool:
    """``passed``: each of ``gates`` passed (judged once, not once per failed test)."""
    if nodeid not in session.eval_nodeids or nodeid not in session.failed_in_call:
        return False
    evals = [r for r in (*session.records, *session.plain) if r.nodeid == nodeid]
    missed = [r for r in evals if r.verdict == "failed"]
    if not missed or any(r.verdict in ("error", "crashed") for r in evals):
        return False
    for record in missed:
        groups = [ok for g, ok in zip(gates, passed, strict=True) if is_member(record, g.config)]
        if not groups or not all(groups):
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
    passed = [g.passed for g in gates]
    absorbed = tuple(n for n in failed if _forgivable(n, session, gates, passed))
    unabsorbed = tuple(n for n in failed if n not in absorbed)
    enforced = tuple(g.name for g in gates if g.config.enforce and g.status == "FAILED")
    reported = tuple(g.name for g in gates if not g.config.enforce and g.status == "FAILED")
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
        reported_failures=reported,
        errors=tuple(n for n in unabsorbed if n in session.errored_nodeids),
        crashes=tuple(
            dict.fromkeys(
                r.nodeid for r in session.records if r.verdict == "crashed" and r.nodeid in failed
            )
        ),
        stopped_early=stopped_early,
    )
