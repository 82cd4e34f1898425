"""`agent_packages`: the installed packages a user's agent came from, never a framework's, and
`Crash.from_agent_code` taking a frame inside them for the agent's own."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_agent_eval.adapters._crash import agent_packages
from pytest_agent_eval.models import Crash

MODULE = """\
class Base:
    pass


class Desk(Base):
    def on_enter(self):
        raise RuntimeError("no billing database")
"""


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``acme_pkg`` in a site-packages folder, importable."""
    site = tmp_path / "lib" / "site-packages"
    (site / "acme_pkg").mkdir(parents=True)
    (site / "acme_pkg" / "__init__.py").write_text("")
    (site / "acme_pkg" / "desk.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(site))
    yield site / "acme_pkg"
    for name in [n for n in sys.modules if n == "acme_pkg" or n.startswith("acme_pkg.")]:
        del sys.modules[name]


def test_an_installed_agent_s_package_is_its_own_code(installed: Path) -> None:
    desk = importlib.import_module("acme_pkg.desk").Desk()
    assert agent_packages(desk) == (str(installed.resolve()),)
    try:
        desk.on_enter()
    except RuntimeError as exc:
        # Every frame is in site-packages (or this test): without own=, only this test's.
        alone = Crash.from_agent_code(exc)
        assert alone is not None and alone.where is not None
        assert alone.where.startswith("test_agent_packages.py:")
        crash = Crash.from_agent_code(exc, own=agent_packages(desk))
        assert crash is not None and crash.where == "desk.py:7 in on_enter"


def test_frameworks_ours_and_local_code_are_no_agent_package() -> None:
    class Local:
        pass

    assert agent_packages(None, Local(), Crash("x"), len, Path(".")) == ()
