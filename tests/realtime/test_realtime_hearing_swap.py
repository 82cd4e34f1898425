"""Attribution's hearing counterfactual and realtime agents: a realtime model hears the
caller's audio itself whatever the session's STT, so its hearing is never swapped for the
fixture's words (the swap would claim a perfect hearing the model never had), and a recorded
provider session's wrapper offers no swap at all (a twin would run without its cassette)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("livekit.plugins.openai", reason="needs livekit-plugins-openai (dev extra)")

from livekit.agents import AgentSession
from realtime_agents import FrontDesk, front_desk_model

from pytest_agent_eval.adapters.livekit import FixtureTextSTT, LiveKitAdapter
from pytest_agent_eval.adapters.livekit.realtime import OpenAIRealtimeReplay
from pytest_agent_eval.errors import AdapterError


def _with_stt() -> tuple[AgentSession, FrontDesk]:
    # A realtime model with an STT configured, as LiveKit's turn detector asks for.
    return AgentSession(llm=front_desk_model("server"), stt=FixtureTextSTT()), FrontDesk()


def test_a_realtime_models_hearing_is_not_swapped() -> None:
    twin = LiveKitAdapter(_with_stt).with_fixture_hearing()
    with pytest.raises(AdapterError, match="runs on a realtime model, which hears the caller"):
        asyncio.run(twin.session_factory())


def test_a_recorded_provider_session_offers_no_hearing_swap(tmp_path: Path) -> None:
    replay = OpenAIRealtimeReplay(LiveKitAdapter(_with_stt), cassette_dir=tmp_path)
    assert replay.with_fixture_hearing is None
