"""Running ``python -m pytest_agent_eval init`` and pytest as a user would: in subprocesses.

(No ``__init__.py`` in this folder; the helpers are imported by name from the tests' folder.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from child_pytest import child_pytest_env

__all__ = ["clean_env", "run_init", "snapshot"]


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without what the outer pytest run set (xdist, live mode, CI summary),
    with this interpreter's folder first on PATH so ``python`` is the test venv's."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "EVAL_LIVE", "GITHUB_")) and k != "COV_CORE_SOURCE"
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return child_pytest_env(env)


def run_init(
    *args: str | Path, cwd: Path | None = None, **kwargs: object
) -> subprocess.CompletedProcess[str]:
    """``python -m pytest_agent_eval init ARGS`` in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "pytest_agent_eval", "init", *map(str, args)],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        **kwargs,  # type: ignore[arg-type]
    )


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (bytecode caches aside) and its content."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }
