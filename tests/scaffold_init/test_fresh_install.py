"""``init --adapter openai`` on a fresh virtualenv, as a newcomer meets it: without the extra it
names the extra to install; once that is installed (and nothing else), the scaffold it writes
passes. The OpenAI scaffold used to import httpx, which current openai releases do not bring,
so the fix it gave never fixed it; and the fix named the package, which would have fetched the
earlier release from the index: it names the folder the package was installed from.

The virtualenv gets this package from this checkout, as the README installs it; its other
packages come from the index (pip's cache makes a second run quick).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from init_support import clean_env

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str | Path, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=clean_env(PIP_DISABLE_PIP_VERSION_CHECK="1"),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_init_openai_in_a_fresh_virtualenv_says_what_to_install_and_then_passes(
    tmp_path: Path,
) -> None:
    venv = tmp_path / "venv"
    made = _run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    python, pip = venv / "bin/python", venv / "bin/pip"
    installed = _run(pip, "install", "-q", ROOT, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr[-3000:]
    project = tmp_path / "project"

    refused = _run(
        python, "-m", "pytest_agent_eval", "init", "--adapter", "openai", project, cwd=tmp_path
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    # Installed from a folder, the fix names that folder: by name, pip would fetch the earlier
    # release from the package index instead of adding the extra to this one.
    assert (
        "error: init --adapter openai needs openai, which is not installed: "
        f"pip install '{ROOT}[openai]'"
    ) in refused.stderr
    assert not project.exists()
    voice = _run(
        python, "-m", "pytest_agent_eval", "init", "--adapter", "livekit", project, cwd=tmp_path
    )
    assert voice.returncode == 2, voice.stdout + voice.stderr
    assert (
        "error: init --adapter livekit needs livekit.agents, which is not installed: "
        f"pip install '{ROOT}[livekit]'"
    ) in voice.stderr

    # Exactly the fix the message gives, and nothing else.
    extra = _run(pip, "install", "-q", f"{ROOT}[openai]", cwd=tmp_path)
    assert extra.returncode == 0, extra.stderr[-3000:]
    scaffolded = _run(
        python, "-m", "pytest_agent_eval", "init", "--adapter", "openai", project, cwd=tmp_path
    )
    assert scaffolded.returncode == 0, scaffolded.stdout + scaffolded.stderr
    result = _run(
        python, "-m", "pytest", "--agent-eval-live", "-p", "no:cacheprovider", cwd=project
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1/1 evals passed" in result.stdout.splitlines()
