"""Writing reports to disk: atomically, creating folders, and appending to CI step summaries."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from .._atomic import write_atomic

__all__ = [
    "GITHUB_STEP_SUMMARY_LIMIT_BYTES",
    "append_step_summary",
    "resolve_report_path",
    "write_atomic",
]

GITHUB_STEP_SUMMARY_LIMIT_BYTES = 1024 * 1024
"""GitHub rejects a job summary bigger than 1 MiB; past this we append only the summary part."""


def resolve_report_path(path: str | os.PathLike[str], rootdir: Path) -> Path:
    """An absolute path; a relative one is taken from ``rootdir`` (where pyproject.toml is)."""
    candidate = Path(path).expanduser()
    return candidate if candidate.is_absolute() else rootdir / candidate


def append_step_summary(
    full: str | Callable[[], str],
    short: str | Callable[[], str],
    environ: Mapping[str, str] | None = None,
    *,
    reports: Sequence[Path] = (),
) -> Path | None:
    """Append the report to ``$GITHUB_STEP_SUMMARY`` when that variable is set.

    Args:
        full: The whole markdown report (or what renders it, only when the variable is set).
        short: The summary-only version (or what renders it), used when ``full`` is over the
            size limit.
        environ: The environment to read (``os.environ`` by default).
        reports: The report files this session wrote, named when the details are cut.

    Returns:
        The file appended to, or None when the variable is not set.
    """
    env = os.environ if environ is None else environ
    target = env.get("GITHUB_STEP_SUMMARY", "").strip()
    if not target:
        return None
    full = full() if callable(full) else full
    text = full
    if len(full.encode("utf-8")) > GITHUB_STEP_SUMMARY_LIMIT_BYTES:
        if reports:
            where = "see " + ", ".join(str(p) for p in reports)
        else:
            where = (
                "no report file was written; pass --agent-eval-report PATH or "
                "--agent-eval-html PATH to keep them"
            )
        short = short() if callable(short) else short
        text = short + f"\n_The per-turn details are too large for a job summary; {where}._\n"
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8", newline="\n") as handle:
        handle.write(text if text.endswith("\n") else text + "\n")
    return path
