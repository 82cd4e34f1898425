"""``agent-eval compare BASE.json NEW.json``: two results files side by side, eval by eval.

Two configurations, two framework versions, two commits: each wrote a results file
(``--agent-eval-results``), and this says what changed between them the way a session's
``--agent-eval-baseline`` section does (`report._baseline`: Fisher's exact test on passed and
failed runs, the change in p95 latency and in agent tokens per run), in the terminal and, with
``--markdown PATH``, as a markdown page. ``--fail-on-regression`` makes a significant
regression exit 1, for CI; a file that cannot be read exits 2 naming it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .._atomic import write_atomic
from ._baseline import BaselineComparison, BaselineError, compare_results_files
from ._causes import cause_changes
from ._markdown import comparison_section
from ._results_file import load_baseline
from ._terminal import comparison_lines

__all__ = ["main"]

REGRESSED_EXIT = 1
"""Exit status with ``--fail-on-regression`` when an eval regressed."""
REFUSED_EXIT = 2
"""Exit status when an input cannot be used."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-eval compare",
        description="Compare two results files (--agent-eval-results), eval by eval: pass "
        "rates with Fisher's exact test, p95 latency and agent tokens per run.",
    )
    parser.add_argument("base", type=Path, help="the results file to compare against (then)")
    parser.add_argument("new", type=Path, help="the results file to compare (now)")
    parser.add_argument("--markdown", type=Path, help="also write the comparison there")
    parser.add_argument(
        "--fail-on-regression",
        action="store_true",
        help=f"exit {REGRESSED_EXIT} when any eval regressed significantly",
    )
    return parser


def _markdown(comparison: BaselineComparison, new: Path, causes: list[str]) -> str:
    lines = [f"# {new.name} against {Path(comparison.path).name}", ""]
    lines += comparison_section(comparison, "## Evals")
    if causes:  # attribution ran in either file (docs/attribution.md)
        lines += ["## Failure causes", "", *(f"- {line.strip()}" for line in causes), ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: Sequence[str]) -> int:
    """Run the command; returns its exit status."""
    args = _parser().parse_args(list(argv))
    documents = []
    for role, path in (("base", args.base), ("new", args.new)):
        try:
            documents.append(load_baseline(path))
        except BaselineError as exc:
            # load_baseline words it for a session's baseline; here the file has a role.
            message = str(exc).removeprefix(f"baseline {path}: ")
            print(f"agent-eval compare: {role} {path}: {message}", file=sys.stderr)
            return REFUSED_EXIT
    comparison = compare_results_files(documents[0], documents[1], str(args.base))
    print(f"{args.new} against {args.base}")
    for line in comparison_lines(comparison):
        print(line.text)
    causes = cause_changes(documents[0], documents[1])
    for text in causes:
        print(text)
    if args.markdown is not None:
        write_atomic(args.markdown, _markdown(comparison, args.new, causes))
        print(f"markdown: {args.markdown}")
    if args.fail_on_regression and comparison.count("regressed"):
        return REGRESSED_EXIT
    return 0
