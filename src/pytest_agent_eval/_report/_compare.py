"""``agent-eval compare BASE.json NEW.json``: two results files side by side, eval by eval.

Two configurations, two framework versions, two commits: each wrote a results file
(``--agent-eval-results``), and this says what changed between them: first the agent
frameworks whose versions differ (`report._frameworks`), then each eval the way a session's
``--agent-eval-baseline`` section does (`report._baseline`: McNemar's exact test on runs paired
by number, Fisher's on passed and failed runs where they do not pair, the change in p95 latency
and in agent tokens per run), in the terminal and, with
``--markdown PATH``, as a markdown page. Turn-taking items (docs/turn-taking.md) are compared
metric by metric as well: base and new value, their 95% intervals, and whether those separate
(`report._turn_taking.MetricChange`); attributed failures cause by cause (`report._causes`).
``--fail-on-regression`` makes a significant regression of an eval, or a separated one of a
turn-taking metric, exit 1, naming each on standard error, for CI; a file that cannot be read
exits 2 naming it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .._atomic import write_atomic
from .._sanitize import strip_controls
from ._baseline import BaselineComparison, BaselineError, compare_results_files
from ._causes import CAUSE_CHANGE_HEADER, cause_change_rows, cause_changes
from ._frameworks import framework_changes
from ._markdown import comparison_section, md_escape, md_table
from ._results_file import load_baseline
from ._terminal import comparison_lines, format_table
from ._turn_taking import (
    METRIC_CHANGE_HEADER,
    MetricChange,
    metric_change_rows,
    metric_changes,
    metric_changes_headline,
    turn_taking_metrics,
)

__all__ = ["main"]

REGRESSED_EXIT = 1
"""Exit status with ``--fail-on-regression`` when an eval regressed."""
REFUSED_EXIT = 2
"""Exit status when an input cannot be used."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-eval compare",
        description="Compare two results files (--agent-eval-results), eval by eval: pass "
        "rates with McNemar's exact test on runs paired by number (Fisher's where they do not "
        "pair), p95 latency and agent tokens per run; turn-taking "
        "metrics by whether their 95% intervals separate; failure causes.",
    )
    parser.add_argument("base", type=Path, help="the results file to compare against (then)")
    parser.add_argument("new", type=Path, help="the results file to compare (now)")
    parser.add_argument("--markdown", type=Path, help="also write the comparison there")
    parser.add_argument(
        "--fail-on-regression",
        action="store_true",
        help=f"exit {REGRESSED_EXIT} when any eval regressed significantly, or a turn-taking "
        "metric's 95%% interval moved wholly to its worse side",
    )
    return parser


def _markdown(
    comparison: BaselineComparison,
    new: Path,
    upgrades: list[str],
    causes: list[str],
    cause_table: list[list[str]],
    taken: list[MetricChange],
) -> str:
    lines = [f"# {new.name} against {Path(comparison.path).name}", ""]
    if upgrades:
        lines += ["Frameworks changed: " + md_escape(", ".join(upgrades)), ""]
    lines += comparison_section(comparison, "## Evals")
    if taken:  # turn-taking items in both files (docs/turn-taking.md)
        rows = [[md_escape(c) for c in row] for row in metric_change_rows(taken)]
        lines += ["## Turn-taking", "", f"**{metric_changes_headline(taken)}**", ""]
        lines += [*md_table(METRIC_CHANGE_HEADER, rows), ""]
    if causes:  # attribution ran in either file (docs/attribution.md)
        lines += ["## Failure causes", "", *(f"- {md_escape(line.strip())}" for line in causes)]
        rows = [[md_escape(c) for c in row] for row in cause_table]
        lines += ["", *md_table(CAUSE_CHANGE_HEADER, rows), ""]
    return "\n".join(lines).rstrip() + "\n"


def _table(header: tuple[str, ...], rows: list[list[str]]) -> list[str]:
    return format_table(header, [[strip_controls(c) for c in row] for row in rows])


def main(argv: Sequence[str]) -> int:
    """Run the command; returns its exit status."""
    args = _parser().parse_args(list(argv))
    documents, metrics = [], []
    for role, path in (("base", args.base), ("new", args.new)):
        try:
            documents.append(load_baseline(path))
            metrics.append(turn_taking_metrics(documents[-1]))
        except BaselineError as exc:
            # load_baseline words it for a session's baseline; here the file has a role.
            message = str(exc).removeprefix(f"baseline {path}: ")
            print(f"agent-eval compare: {role} {path}: {message}", file=sys.stderr)
            return REFUSED_EXIT
    comparison = compare_results_files(documents[0], documents[1], str(args.base))
    print(f"{args.new} against {args.base}")
    upgrades = framework_changes(documents[0], documents[1])
    if upgrades:
        print("frameworks changed: " + strip_controls(", ".join(upgrades)))
    for line in comparison_lines(comparison):
        print(line.text)
    taken = metric_changes(metrics[0], metrics[1])
    if taken:
        print(metric_changes_headline(taken))
        print("\n".join(_table(METRIC_CHANGE_HEADER, metric_change_rows(taken))))
    causes = cause_changes(documents[0], documents[1])
    cause_table = cause_change_rows(documents[0], documents[1])
    for text in causes:
        print(text)
    if cause_table:
        print("\n".join(_table(CAUSE_CHANGE_HEADER, cause_table)))
    if args.markdown is not None:
        write_atomic(
            args.markdown, _markdown(comparison, args.new, upgrades, causes, cause_table, taken)
        )
        print(f"markdown: {args.markdown}")
    regressed = [c.label for c in comparison.changes if c.change == "regressed"]
    metrics_regressed = [c.text for c in taken if c.verdict == "regressed"]
    if args.fail_on_regression and (regressed or metrics_regressed):
        for label in regressed:
            print(f"agent-eval compare: regressed: {strip_controls(label)}", file=sys.stderr)
        for text in metrics_regressed:
            print(
                f"agent-eval compare: turn-taking regressed: {strip_controls(text)}",
                file=sys.stderr,
            )
        return REGRESSED_EXIT
    return 0
