"""LiveKit's answering-machine classifier, reached through ``_compat``, as
bench/amd_far_ends.py runs it: a far end reading an IVR menu is classified ``machine-ivr`` by
the classifier's own timing and its scripted LLM, and the confusion matrix counts it."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("livekit.agents", reason="needs the livekit extra")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "amd_far_ends.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("amd_far_ends", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["amd_far_ends"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_an_ivr_menu_is_classified_as_an_ivr_and_counted() -> None:
    bench = _bench()
    case = bench.FarEndCase(
        "IVR prompt",
        "machine-ivr",
        (("speech", "For billing, press 1. For appointments, press 2.", 3.0), ("silence", "", 4.0)),
    )
    said, reason, _ = asyncio.run(bench.classify(case, 0.2))
    assert (said, reason) == ("machine-ivr", "llm")
    table = bench.matrix_markdown([(case, said, reason, 0.0)])
    assert "| machine-ivr |  |  | 1 |  |  |" in table
