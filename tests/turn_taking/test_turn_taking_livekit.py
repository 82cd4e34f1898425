"""Turn-taking on real in-process LiveKit sessions, on the virtual clock: the same stimuli give
the same metrics on every rerun, and the metrics follow LiveKit's own settings (a longer
endpointing delay takes over fewer pauses; interruptions off yield to no barge-in; a word-count
backchannel filter stops for fewer backchannels)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal

import pytest

from pytest_agent_eval._turn_taking._metrics import Observation, compute_metrics
from pytest_agent_eval._turn_taking._pack import build_pack, write_pack
from turn_decisions import decisions, rates

# The first voice's pauses (0.3, 0.9, 1.5 and 1.9 s mid-sentence) and two barge-ins.
PAUSES = ("pause-01", "pause-04", "pause-07", "pause-10")
BARGE_INS = ("barge_in-01", "barge_in-04")
# The first voice's backchannels over the agent's speech: "Uh-huh.", "Okay.", "Yeah.", "Right.".
BACKCHANNELS = ("backchannel-01", "backchannel-04", "backchannel-07", "backchannel-10")


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pack")
    write_pack(folder, seed=0, only=(*PAUSES, *BARGE_INS, *BACKCHANNELS))
    return folder


@pytest.fixture(scope="module")
def vad() -> object:
    from livekit.plugins import silero

    return silero.VAD.load()


def _observe(
    pack: Path,
    vad: object,
    ids: tuple[str, ...],
    clock: Literal["real", "virtual"] = "virtual",
    **session: object,
) -> list[Observation]:
    from pytest_agent_eval.adapters.livekit._turn_taking import observe_pack

    return asyncio.run(observe_pack(pack, list(ids), vad=vad, session_kwargs=session, clock=clock))


def test_the_stimuli_are_what_the_tests_say() -> None:
    by_id = {s.id: s for s in build_pack(0)}
    assert [by_id[i].category.value for i in PAUSES] == ["pause"] * 4
    assert all(by_id[i].expect.value == "yield" for i in BARGE_INS)


def test_three_runs_give_identical_metrics(pack: Path, vad: object) -> None:
    first, second, third = (_observe(pack, vad, (*PAUSES, *BARGE_INS)) for _ in range(3))
    assert first == second == third  # to the sample, every time: the virtual clock is audio time
    assert compute_metrics(first) == compute_metrics(second) == compute_metrics(third)


def test_real_time_makes_the_virtual_clocks_decisions(pack: Path, vad: object) -> None:
    # A pause LiveKit's default endpointing waits through, one it takes over, and a barge-in:
    # the same decisions, and so the same rates, at speed 1 on the wall clock.
    ids = (PAUSES[0], PAUSES[1], BARGE_INS[0])
    virtual = _observe(pack, vad, ids)
    real = _observe(pack, vad, ids, clock="real")
    assert [o.took_over_early for o in virtual] == [False, True, False]  # it measured something
    assert virtual[2].agent_stopped_s is not None

    assert rates(real) == rates(virtual)
    assert decisions(real) == decisions(virtual)


def test_a_longer_endpointing_delay_takes_over_fewer_pauses(pack: Path, vad: object) -> None:
    quick = compute_metrics(_observe(pack, vad, PAUSES))["pause_takeover_rate"]
    patient = compute_metrics(
        _observe(
            pack, vad, PAUSES, turn_handling={"endpointing": {"min_delay": 2.5, "max_delay": 3.0}}
        )
    )["pause_takeover_rate"]
    assert quick.count == patient.count == 4
    assert quick.hits is not None and patient.hits is not None
    assert patient.hits < quick.hits
    assert patient.hits == 0  # the longest pause is 1.9 s


def test_interruptions_off_yield_to_no_barge_in(pack: Path, vad: object) -> None:
    on = compute_metrics(_observe(pack, vad, BARGE_INS))["barge_in_yield_rate"]
    off = compute_metrics(
        _observe(
            pack, vad, BARGE_INS, turn_handling={"interruption": {"enabled": False, "mode": "vad"}}
        )
    )["barge_in_yield_rate"]
    assert (on.hits, on.count) == (2, 2)
    assert (off.hits, off.count) == (0, 2)


def test_a_word_count_filter_lets_backchannels_pass_and_still_yields_to_barge_ins(
    pack: Path, vad: object
) -> None:
    # LiveKit's own backchannel filter: an interruption needs `min_words` words heard first, so
    # a one-word "okay" over the agent does not stop it, and "wait, stop" still does.
    ids = (*BACKCHANNELS, *BARGE_INS)
    plain = compute_metrics(_observe(pack, vad, ids))
    filtered = compute_metrics(
        _observe(pack, vad, ids, turn_handling={"interruption": {"mode": "vad", "min_words": 2}})
    )
    before, after = plain["backchannel_takeover_rate"], filtered["backchannel_takeover_rate"]
    assert before.count == after.count == 4
    assert before.hits is not None and after.hits is not None
    assert after.hits < before.hits, (before, after)
    assert filtered["barge_in_yield_rate"].hits == plain["barge_in_yield_rate"].hits == 2


def test_a_session_on_the_cloud_vad_says_it_cannot_be_tested(pack: Path) -> None:
    from livekit.agents import Agent, AgentSession

    from pytest_agent_eval._turn_taking._stimulus import Stimulus
    from pytest_agent_eval.adapters.livekit._turn_taking import observe_made
    from pytest_agent_eval.errors import AdapterError
    from pytest_agent_eval.voice._clip import read_wav

    stimulus = next(s for s in build_pack(0) if s.id == PAUSES[0])

    async def make() -> tuple[AgentSession, Agent]:  # type: ignore[type-arg]
        return AgentSession(), Agent(instructions="x")

    async def run() -> None:
        await observe_made(stimulus, read_wav(pack / f"{PAUSES[0]}.wav"), [], make)

    # AgentSession's default VAD is LiveKit's inference VAD, which runs in LiveKit Cloud.
    with pytest.raises(AdapterError, match="the session's VAD is LiveKit's inference VAD"):
        asyncio.run(run())
    assert isinstance(stimulus, Stimulus)


@pytest.mark.parametrize("realtime", [False, True], ids=["pipeline", "realtime"])
def test_a_session_on_the_cloud_turn_detector_says_it_cannot_be_tested(
    pack: Path, vad: object, realtime: bool
) -> None:
    # A local VAD but no turn_detection: AgentSession's default turn detector asks LiveKit
    # Cloud when a turn ends. On a realtime model with its own detection off, the session's
    # turn detector is the one LiveKit uses (refused once the session started).
    from livekit.agents import Agent, AgentSession
    from livekit.plugins import openai

    from pytest_agent_eval.adapters.livekit._turn_taking import observe_made
    from pytest_agent_eval.errors import AdapterError
    from pytest_agent_eval.voice._clip import read_wav

    async def make() -> tuple[AgentSession, Agent]:  # type: ignore[type-arg]
        if not realtime:
            return AgentSession(vad=vad), Agent(instructions="x")  # type: ignore[arg-type]
        model = openai.realtime.RealtimeModel(api_key="not-used-offline", turn_detection=None)
        return AgentSession(vad=vad, llm=model), Agent(instructions="x")  # type: ignore[arg-type]

    stimulus = next(s for s in build_pack(0) if s.id == PAUSES[0])
    with pytest.raises(AdapterError) as caught:
        asyncio.run(observe_made(stimulus, read_wav(pack / f"{PAUSES[0]}.wav"), [], make))
    message = str(caught.value)
    assert "the session's turn detection (AgentSession's default" in message
    assert "LiveKit's inference turn detector (TurnDetector)" in message
    assert 'turn_handling={"turn_detection": "vad"}' in message
    assert "livekit-plugins-turn-detector" in message


def test_a_vad_that_hears_nothing_is_an_error_not_a_patient_agent(pack: Path) -> None:
    # A VAD that never hears speech would never take over a pause: a pause budget would pass
    # for the wrong reason.
    from livekit.plugins import silero

    from pytest_agent_eval.errors import AdapterError

    deaf = silero.VAD.load(min_speech_duration=60.0)
    with pytest.raises(AdapterError, match="never heard the caller speak"):
        _observe(pack, deaf, PAUSES[:1])


def _observe_realtime(
    pack: Path,
    vad: object,
    ids: tuple[str, ...],
    *,
    model_turns: bool = False,
    **session: object,
) -> list:  # type: ignore[type-arg]
    """The stimuli played to an agent on OpenAI's realtime model, replaced by the scripted one
    as a pipeline agent's LLM is (it never connects), in a session given ``vad``."""
    from livekit.agents import Agent, AgentSession
    from livekit.plugins import openai

    from pytest_agent_eval._turn_taking._observer import read_pack
    from pytest_agent_eval.adapters.livekit._turn_taking import observe_made, session_arguments

    kwargs = session_arguments(session)
    if model_turns:
        # No turn detection nor interruption settings: the session leaves the turns to the model.
        del kwargs["turn_handling"]

    async def make() -> tuple[AgentSession, Agent]:  # type: ignore[type-arg]
        model = openai.realtime.RealtimeModel(api_key="not-used-offline")
        made: AgentSession = AgentSession(vad=vad, llm=model, **kwargs)  # type: ignore[type-arg, arg-type]
        return made, Agent(instructions="You answer the caller.")

    async def run() -> list:  # type: ignore[type-arg]
        return [
            await observe_made(p.stimulus, p.clip, p.events, make)
            for p in read_pack(pack, list(ids))
        ]

    return asyncio.run(run())


@pytest.fixture(scope="module")
def realtime_observed(pack: Path, vad: object) -> list:  # type: ignore[type-arg]
    return _observe_realtime(pack, vad, (*PAUSES, BARGE_INS[0]))


def test_a_realtime_agent_whose_session_takes_turns_is_measured_the_same_on_a_rerun(
    pack: Path,
    vad: object,
    realtime_observed: list,  # type: ignore[type-arg]
) -> None:
    metrics = compute_metrics(realtime_observed)
    assert (metrics["pause_takeover_rate"].hits, metrics["pause_takeover_rate"].count) == (2, 4)
    assert (metrics["barge_in_yield_rate"].hits, metrics["barge_in_yield_rate"].count) == (1, 1)
    assert metrics["unanswered_rate"].count == 4
    assert metrics["unanswered_rate"].hits == 0  # the scripted model heard and answered
    assert _observe_realtime(pack, vad, (*PAUSES, BARGE_INS[0])) == realtime_observed


def test_a_realtime_agent_follows_its_sessions_endpointing_delay(
    pack: Path,
    vad: object,
    realtime_observed: list,  # type: ignore[type-arg]
) -> None:
    quick = compute_metrics(realtime_observed[: len(PAUSES)])["pause_takeover_rate"]
    patient = compute_metrics(
        _observe_realtime(
            pack, vad, PAUSES, turn_handling={"endpointing": {"min_delay": 2.5, "max_delay": 3.0}}
        )
    )["pause_takeover_rate"]
    assert quick.count == patient.count == 4
    assert (quick.hits, patient.hits) == (2, 0)


def test_a_realtime_model_taking_its_own_turns_says_which_setting_to_change(
    pack: Path, vad: object
) -> None:
    # A session given a VAD but no turn_detection leaves OpenAI's server VAD on.
    from pytest_agent_eval.errors import AdapterError

    with pytest.raises(AdapterError) as caught:
        _observe_realtime(pack, vad, PAUSES[:1], model_turns=True)
    message = str(caught.value)
    assert "realtime model (RealtimeModel) takes the turns itself" in message
    assert "cannot be measured offline" in message
    assert 'turn_handling={"turn_detection": "vad"}' in message

    # As the realtime example builds its session (no VAD given: LiveKit's cloud default).
    from livekit.agents import Agent, AgentSession
    from livekit.plugins import openai

    from pytest_agent_eval.adapters.livekit._turn_taking import observe_made
    from pytest_agent_eval.voice._clip import read_wav

    async def make() -> tuple[AgentSession, Agent]:  # type: ignore[type-arg]
        model = openai.realtime.RealtimeModel(api_key="not-used-offline")
        return AgentSession(llm=model), Agent(instructions="x")

    stimulus = next(s for s in build_pack(0) if s.id == PAUSES[0])
    with pytest.raises(AdapterError, match="takes the turns itself") as cloud:
        asyncio.run(observe_made(stimulus, read_wav(pack / f"{PAUSES[0]}.wav"), [], make))
    assert "inference VAD" in str(cloud.value) and "vad=silero.VAD.load()" in str(cloud.value)
