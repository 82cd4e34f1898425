"""Fixtures for the simulation tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest


def _load(name: str, path: Path) -> ModuleType:
    # Helpers of other test folders are loaded by path: the folders need no package structure.
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def loopback() -> ModuleType:
    """The loopback Chat Completions server module (`ChatServer`, body builders)."""
    return _load("loopback_chat", Path(__file__).parent.parent / "adapters" / "loopback_chat.py")


@pytest.fixture
def openai_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("OPENAI_API_KEY", "loopback-key")
    return monkeypatch


class SleepRecorder:
    """An injectable `sleep` that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def no_sleep() -> SleepRecorder:
    return SleepRecorder()
