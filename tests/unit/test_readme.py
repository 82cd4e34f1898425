"""The README's two newcomer commands stay true: CI runs the second one verbatim."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def newcomer_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```bash\n(.+?)\n```", readme, flags=re.S)[:2]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _demo, tests = newcomer_commands()
    assert "pytest" in tests
    assert tests in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_demo_command_points_at_an_executable_script() -> None:
    demo, _ = newcomer_commands()
    script = re.search(r"(examples/\S+\.sh)", demo)
    assert script is not None
    path = ROOT / script.group(1)
    assert path.is_file()
    assert os.access(path, os.X_OK)
