"""Which worker files a project has, and the agent names they register: for the message a run
gets when no worker took its dispatch.

A room run only knows the agent's name. When no worker is registered under it, the useful
answer names the file the user runs and the name that file registers ("did you mean ...?").
The project's Python files are read once, only on that failure: a worker file is one that
declares an ``rtc_session`` entrypoint (or the older ``WorkerOptions``), and the names come from
``agent_name=`` written in it, as a string or as a module-level string constant.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["WorkerFile", "find_worker_files", "no_worker_advice"]

_SKIP_DIRS = {
    ".git",
    ".hg",
    ".venv",
    "venv",
    "env",
    ".tox",
    ".nox",
    "node_modules",
    "site-packages",
    "__pycache__",
    "build",
    "dist",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".agent_eval_cache",
}
_MAX_FILES = 5000
_MAX_BYTES = 300_000
_WORKER = re.compile(r"\brtc_session\s*\(|\bWorkerOptions\s*\(")
_NAME_ARG = re.compile(
    r"""\bagent_name\s*=\s*(?:(["'])(?P<literal>[^"'\n]+)\1|(?P<const>[A-Za-z_]\w*))"""
)
_CONSTANT = r"""^\s*{name}\s*(?::\s*\w+\s*)?=\s*(["'])(?P<value>[^"'\n]+)\1"""


@dataclass(frozen=True, slots=True)
class WorkerFile:
    """A Python file that runs a LiveKit worker, and the agent names it registers."""

    path: Path
    names: tuple[str, ...]


def find_worker_files(root: Path) -> list[WorkerFile]:
    """The worker files under ``root`` (skipping virtualenvs, caches and build output)."""
    found: list[WorkerFile] = []
    seen = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            seen += 1
            if seen > _MAX_FILES:
                return found
            path = Path(folder) / name
            try:
                if path.stat().st_size > _MAX_BYTES:
                    continue
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if _WORKER.search(text):
                found.append(WorkerFile(path, _registered_names(text)))
    return found


def _registered_names(text: str) -> tuple[str, ...]:
    names: list[str] = []
    for match in _NAME_ARG.finditer(text):
        value = match.group("literal")
        if value is None and (const := match.group("const")):
            defined = re.search(_CONSTANT.format(name=re.escape(const)), text, re.MULTILINE)
            value = defined.group("value") if defined else None
        if value and value not in names:
            names.append(value)
    return tuple(names)


def no_worker_advice(agent_name: str, root: Path) -> str:
    """What to start (or which name to use) when no worker took a dispatch for ``agent_name``."""
    workers = find_worker_files(root)
    if not workers:
        return (
            f"Start your worker (`python <your worker file> start`), with "
            f"@server.rtc_session(agent_name={agent_name!r}), against the same server"
        )

    def shown(path: Path) -> str:
        try:
            return str(path.relative_to(root))
        except ValueError:
            return str(path)

    serving = [w for w in workers if agent_name in w.names]
    if serving:
        files = ", ".join(shown(w.path) for w in serving)
        return (
            f"{files} registers {agent_name!r}: start it (`python {shown(serving[0].path)} "
            "start`) against the same server"
        )
    listed = "; ".join(
        f"{shown(w.path)} registers {', '.join(repr(n) for n in w.names) or 'no explicit name'}"
        for w in workers[:5]
    )
    names = [n for w in workers for n in w.names]
    close = difflib.get_close_matches(agent_name, names, n=1)
    guess = f" Did you mean {close[0]!r}?" if close else ""
    return (
        f"No worker file here registers {agent_name!r} ({listed}).{guess} Start the worker "
        f"that does (`python <worker file> start`), or pass the name it registers"
    )
