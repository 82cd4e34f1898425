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

The swap is made while the transport's input is set up: every processor of the pipeline is
built and linked by then, and none has the StartFrame yet (the input holds it until its own
setup is done), so the stand-in is set up and in place before any frame reaches it.
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from ...errors import AdapterError
from ._compat import processors_of, replace_processor
from ._services import FixtureTextSTTService

__all__ = ["PerfectHearingSTTService", "fixture_hearing_twin", "refuses_conditions"]


class _BuildsPipelines(Protocol):
    """An adapter that builds each pipeline with the bot's function (`PipecatAdapter`)."""

    bot: Callable[..., Any] | None
    run_bot: Callable[..., Any] | None


_Adapter = TypeVar("_Adapter", bound=_BuildsPipelines)


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
    twin = copy.copy(adapter)
    refused: dict[int, str] = {}
    """Why the swap could not be made, by the id of the transport of the pipeline."""
    made_by: Callable[..., Any] | None = adapter.run_bot or adapter.bot
    assert made_by is not None

    @functools.wraps(made_by)  # the bot's module still names the code that is the user's
    def build(transport: Any, *rest: Any) -> Any:
        _swap_at_setup(transport, refused)
        return made_by(transport, *rest)

    if adapter.run_bot is not None:
        twin.run_bot = build
    else:
        twin.bot = build

    own_start = type(adapter).start_conversation  # type: ignore[attr-defined]

    async def start_conversation(info: Any) -> Any:
        conversation = await own_start(twin, info)
        why = refused.pop(id(conversation.session.transport), None)
        if why is not None:
            await conversation.aclose()
            raise AdapterError(why)
        return conversation

    twin.start_conversation = start_conversation  # type: ignore[attr-defined]
    return twin


def _swap_at_setup(transport: Any, refused: dict[int, str]) -> None:
    """Have ``transport``'s input replace the bot's STT when its pipeline sets it up, or note
    in ``refused`` why it could not."""
    mic = transport.input()
    own_setup = mic.setup

    async def setup(setup_: Any) -> None:
        try:
            stand_in = _replace_stt(setup_.pipeline_worker.pipeline)
        except AdapterError as exc:
            refused[id(transport)] = str(exc)
        else:
            await stand_in.setup(setup_)  # before the StartFrame: the input holds it till now
        await own_setup(setup_)

    mic.setup = setup


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
