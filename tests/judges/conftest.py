"""Fixtures for the judge tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest


def _load_loopback() -> ModuleType:
    # The loopback server lives with the adapter tests; load it by path so the two test
    # folders need no package structure.
    name = "loopback_chat"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).parent.parent / "adapters" / "loopback_chat.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def loopback() -> ModuleType:
    """The loopback Chat Completions server module (`ChatServer`, body builders)."""
    return _load_loopback()


class SleepRecorder:
    """An injectable `sleep` that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def no_sleep() -> SleepRecorder:
    return SleepRecorder()
