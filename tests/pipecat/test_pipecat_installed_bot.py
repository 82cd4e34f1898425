"""A bot installed as a package (in a site-packages folder, as ``pip install .`` of the user's
project puts it) is the user's code all the same: its processor that raises mid-conversation is
CRASHED at the package's frame, as a bot module beside the tests is
(test_pipecat_crash.py), not an ERROR of a service the pipeline goes on from."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from pipecat_support import run, transcript

from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.adapters.pipecat import PipecatAdapter
from pytest_agent_eval.models import Turn

BOT = '''\
"""The ACME order bot (installed as a package)."""

from pipecat.frames.frames import LLMContextFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor


def look_up_the_caller():
    raise RuntimeError("caller lookup failed")


class LooksUpTheCaller(FrameProcessor):
    async def process_frame(self, frame, direction):
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMContextFrame) and direction == FrameDirection.DOWNSTREAM:
            look_up_the_caller()
        await self.push_frame(frame, direction)


def make_bot(transport):
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair

    from pytest_agent_eval.adapters.pipecat import Rule, ScriptedLLMService

    pair = LLMContextAggregatorPair(LLMContext())
    pipeline = Pipeline(
        [
            transport.input(),
            pair.user(),
            LooksUpTheCaller(),
            ScriptedLLMService([Rule(r".", reply="Your order is on its way.")]),
            transport.output(),
            pair.assistant(),
        ]
    )
    return PipelineWorker(pipeline, params=PipelineParams(enable_metrics=True))
'''


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """``acme_order_bot.bot``, imported from a site-packages folder of its own."""
    site = tmp_path / "lib" / "python3" / "site-packages"
    (site / "acme_order_bot").mkdir(parents=True)
    (site / "acme_order_bot" / "__init__.py").write_text("")
    (site / "acme_order_bot" / "bot.py").write_text(BOT)
    monkeypatch.syspath_prepend(str(site))
    yield importlib.import_module("acme_order_bot.bot")
    for name in [n for n in sys.modules if n.split(".")[0] == "acme_order_bot"]:
        del sys.modules[name]


def test_a_processor_of_an_installed_bot_that_raises_is_a_crash_at_its_frame(
    installed: ModuleType,
) -> None:
    script = transcript(Turn(user="Where is my order?"))
    script.threshold = 0.0
    result = run(run_transcript(script, PipecatAdapter(installed.make_bot)))
    # Before: every frame was in site-packages, none the bot's; an ERROR left out of the score.
    assert result.errored_run_count == 0, result.runs[0].turns[0].error
    (turn,) = result.runs[0].turns
    assert turn.verdict == "crashed" and result.verdict == "crashed"
    assert turn.crash is not None
    assert (turn.crash.type, turn.crash.message) == ("RuntimeError", "caller lookup failed")
    assert turn.crash.where == "bot.py:8 in look_up_the_caller"
