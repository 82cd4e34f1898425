"""The hearing counterfactual of failure attribution on Pipecat (issue 35, docs/attribution.md):
the same bot, with its STT service replaced by the stand-in that hears a fixture's known words.

`fixture_hearing_twin` gives a copy of a `PipecatAdapter` whose every pipeline is the bot's
own, built by its own ``run_bot`` or ``make_bot``, with its STT service replaced by a
`PerfectHearingSTTService` (a `FixtureTextSTTService`) before the pipeline starts. Everything
else stays the bot's: its VAD and turn analyzer cut and end the turn, the audio keeps its
conditions (noise, phone line) so the VAD hears what the caller's line carried; only the words
the bot gets are made right. Where the STT cannot be replaced, the twin's conversation start
fails with one line saying why (an `AdapterError`), which attribution writes as its evidence
before falling back to the text rerun.

The swap is made as the pipeline is set up (`pipeline_twin`).
"""

from __future__ import annotations

import contextlib
from typing import Any, TypeVar

from ...errors import AdapterError
from ._compat import processors_of, replace_processor
from ._services import FixtureTextSTTService
from ._twin import BuildsPipelines, pipeline_twin

__all__ = ["PerfectHearingSTTService", "fixture_hearing_twin", "refuses_conditions"]


_Adapter = TypeVar("_Adapter", bound=BuildsPipelines)


class PerfectHearingSTTService(FixtureTextSTTService):
    """`FixtureTextSTTService` put in place of a bot's own STT by attribution's hearing
    counterfactual. Unlike a `FixtureTextSTTService` the user chose, it runs under audio
    conditions: hearing every word whatever the noise is the point of the counterfactual.
    It cleans up the service it replaced (set up by its pipeline, then taken out of it)."""

    def __init__(self, replaced: Any) -> None:
        super().__init__()
        self._replaced = replaced

    async def cleanup(self) -> None:
        await super().cleanup()  # type: ignore[no-untyped-call]
        with contextlib.suppress(Exception):  # never started: its teardown is best effort
            await self._replaced.cleanup()


def refuses_conditions(stt: object) -> bool:
    """True when ``stt`` would hear a fixture's words whatever its audio conditions, and so
    must refuse a turn that has some (a `FixtureTextSTTService` the user chose)."""
    return isinstance(stt, FixtureTextSTTService) and not isinstance(stt, PerfectHearingSTTService)


def fixture_hearing_twin(adapter: _Adapter) -> _Adapter:
    """A copy of ``adapter`` whose every pipeline hears with a `PerfectHearingSTTService` in
    place of the bot's STT service; the copy's conversation start raises `AdapterError` where
    that swap cannot be made (a speech-to-speech model hearing the caller itself, no STT or
    more than one, an STT inside a parallel pipeline, a bot already hearing with
    `FixtureTextSTTService`)."""
    return pipeline_twin(adapter, _swap_at_setup)


async def _swap_at_setup(pipeline: Any, setup: Any, transport: Any) -> None:
    """Replace the bot's STT, and set the stand-in up before the StartFrame (the input holds
    it till its setup is done)."""
    await _replace_stt(pipeline).setup(setup)


def _replace_stt(pipeline: Any) -> PerfectHearingSTTService:
    from pipecat.services.stt_service import STTService

    stts = [p for p in processors_of(pipeline) if isinstance(p, STTService)]
    if not stts:
        raise AdapterError(
            "the bot's pipeline has no STT service (a speech-to-speech model hears the caller "
            "itself), so its hearing cannot be replaced by the fixture's words"
        )
    if len(stts) > 1:
        names = ", ".join(type(s).__name__ for s in stts)
        raise AdapterError(
            f"the bot's pipeline has {len(stts)} STT services ({names}); the fixture's words "
            "replace one only"
        )
    (own,) = stts
    if type(own) is FixtureTextSTTService:
        raise AdapterError(
            "the bot already hears with FixtureTextSTTService (the fixture's own words), so "
            "there is no other hearing to replace"
        )
    stand_in = PerfectHearingSTTService(own)
    replace_processor(pipeline, own, stand_in)
    return stand_in
