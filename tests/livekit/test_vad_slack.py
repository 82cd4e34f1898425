"""The stand-in STT's slack past a VAD's end of speech stops where the VAD declared that end.

`FixtureTextSTT` hands a segment the words whose timed end is within 0.2 s of the VAD's end of
speech (Silero ends speech a little before a word's last faint sound). A VAD set to end
segments after a short silence (``min_silence_duration`` under 0.2 s) declares the end before
those 0.2 s are over: the audio streamed by then is all the STT was given, and a word whose
end comes later is not said yet. Real AgentSession, real Silero, a fixture from the offline
synthesizer; the sidecar's word timing for the short word after the pause is set inside that
window (word timings are an estimate from the audio: this is where one lands when the short
word is clipped, the case the cap is for).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from livekit.agents import AgentSession
from livekit.plugins import silero
from livekit_support import booking, converse, run, transcript

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    LiveKitAdapter,
    Rule,
    ScriptedLLM,
    eval_session_kwargs,
)
from pytest_agent_eval.adapters.livekit._audio import load_fixture_audio
from pytest_agent_eval.adapters.livekit._segments import scan_fixture
from pytest_agent_eval.models import Turn
from pytest_agent_eval.synthesize import ensure_fixtures
from pytest_agent_eval.voice._heard import VAD_END_SLACK_S

TEXT = "Sure [pause 0.12s] a cab."
SAID = "Sure a cab."


class ListeningSTT(FixtureTextSTT):
    """FixtureTextSTT that keeps what it answered for each speech segment."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[str] = []

    async def _transcribe(self, frame: Any) -> str:
        text = await super()._transcribe(frame)
        self.answers.append(text)
        return text


@pytest.fixture(scope="module")
def quick_vad() -> Any:
    """Silero ending speech after 50 ms of silence: a VAD a user tunes for snappy turns."""
    return silero.VAD.load(min_silence_duration=0.05)


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory, quick_vad: Any) -> Path:
    """The fixture, its word "a" timed to end after the VAD declared the first segment's end
    but within the slack of that end."""
    folder = tmp_path_factory.mktemp("slack")
    (folder / "t.yaml").write_text(f'id: t\nturns:\n  - user: "{TEXT}"\n    audio: cab.wav\n')
    ensure_fixtures([load_transcript_file(folder / "t.yaml")], jobs=1).raise_for_failures()
    wav = folder / "cab.wav"
    audio = load_fixture_audio(wav, sample_rate=24000, frame_ms=20, tail_s=1.0)
    first, *rest = run(scan_fixture(quick_vad, audio, 0)).segments
    assert rest, "the VAD must cut the fixture at the pause"
    assert first.detected_s < first.end_s + VAD_END_SLACK_S  # the window the cap closes
    ends_at = round((first.detected_s + first.end_s + VAD_END_SLACK_S) / 2, 3)
    sidecar_path = wav.with_name(wav.name + ".hash")
    sidecar = json.loads(sidecar_path.read_text())
    words = sidecar["words"]
    assert [w["text"] for w in words] == ["Sure", "a", "cab."]
    assert words[1]["start_s"] < ends_at < words[2]["end_s"]
    words[1]["end_s"] = words[2]["start_s"] = ends_at
    sidecar_path.write_text(json.dumps(sidecar, indent=2, sort_keys=True) + "\n")
    return wav


def test_no_word_is_heard_past_where_the_vad_declared_the_end(
    fixture: Path, quick_vad: Any
) -> None:
    asked: list[str] = []

    def note(ctx: Any) -> str:
        asked.append(ctx.user)
        return "Noted."

    stt = ListeningSTT()

    def factory() -> tuple[AgentSession[Any], Any]:
        session: AgentSession[Any] = AgentSession(
            stt=stt,
            vad=quick_vad,
            llm=ScriptedLLM([Rule(r".", reply=note)]),
            **eval_session_kwargs(),
        )
        return session, booking.RestaurantAgent()

    (reply,) = run(converse(LiveKitAdapter(factory), transcript(Turn(user=TEXT, audio=fixture))))
    assert reply.metadata["livekit"]["speech_segments"] == 2
    # Before the cap: ["Sure a", "cab."], "a" heard before its audio had streamed.
    assert stt.answers == ["Sure", "a cab."]
    assert asked[0] == "Sure"
    assert reply.heard == SAID
