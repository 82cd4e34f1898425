"""Keys as tones in a turn's audio (``dtmf: {in_audio: true}``): mixed in before the audio
conditions, so they survive a phone line, and streamed by a real Pipecat pipeline; heard back
by the Goertzel detector (`voice._dtmf.detect_keys`)."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest

from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
from pytest_agent_eval.models import AudioCondition, DtmfInput, Transcript, Turn
from pytest_agent_eval.voice._clip import AudioClip
from pytest_agent_eval.voice._dtmf import detect_keys
from pytest_agent_eval.voice._fixture_pcm import decode_fixture, load_fixture_pcm

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "voice-pipecat"


@pytest.fixture(scope="module")
def fixture_wav(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pytest_agent_eval._loader import load_transcript_text
    from pytest_agent_eval.synthesize import ensure_fixtures

    folder = tmp_path_factory.mktemp("keys-in-audio")
    yaml_path = folder / "phrases.yaml"
    yaml_path.write_text(
        'id: phrases\nturns:\n  - user: "Tell me about the menu."\n    audio: menu.wav\n'
    )
    transcript = load_transcript_text(yaml_path.read_text(), path=yaml_path)
    ensure_fixtures([transcript], jobs=1).raise_for_failures()
    return folder / "menu.wav"


def _keys(pcm: bytes, rate: int) -> str:
    import numpy as np

    samples = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768
    return "".join(k.key for k in detect_keys(AudioClip(samples, rate)))


@pytest.mark.parametrize("at", ["before", "after"])
def test_the_tones_survive_a_phone_line(fixture_wav: Path, at: str) -> None:
    keys = DtmfInput("4521#", at=at, in_audio=True)  # type: ignore[arg-type]
    phone = [AudioCondition("telephone", {}), AudioCondition("noise", {"snr_db": 15})]
    plain = decode_fixture(fixture_wav, sample_rate=16000)
    keyed = load_fixture_pcm(fixture_wav, sample_rate=16000, conditions=phone, keys=keys)
    assert _keys(plain.pcm, 16000) == ""
    assert _keys(keyed.pcm, 16000) == "4521#"
    # The speech is all there, before or after the tones: 5 keys at 100 ms each.
    assert keyed.duration_s == pytest.approx(plain.duration_s + 0.5, abs=0.02)


def _example_bot():  # type: ignore[no-untyped-def]
    name = "keys_in_audio_example_bot"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLE / "bot.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _converse_with_keys(fixture_wav: Path, tmp_path: Path, at: str):  # type: ignore[no-untyped-def]
    from pytest_agent_eval.adapters.pipecat import PipecatAdapter

    turn = Turn(
        "Tell me about the menu.",
        audio=fixture_wav,
        dtmf=DtmfInput("3*", at=at, in_audio=True),  # type: ignore[arg-type]
    )
    script = Transcript(id="keys_in_audio", turns=[turn])
    adapter = PipecatAdapter(run_bot=_example_bot().run_bot, timeout_s=30.0, audio_in_dir=tmp_path)

    async def converse():  # type: ignore[no-untyped-def]
        await adapter.prepare(script)
        conversation = await adapter.start_conversation(
            ConversationInfo(transcript=script, run_index=0)
        )
        try:
            return await conversation.respond(TurnInput.of(script, 0, 0))
        finally:
            await conversation.aclose()

    return asyncio.run(converse())


def test_a_pipeline_streams_the_tones_with_the_speech(fixture_wav: Path, tmp_path: Path) -> None:
    pytest.importorskip("pipecat.frames.frames", reason="needs the pipecat extra")
    reply = _converse_with_keys(fixture_wav, tmp_path, "after")
    assert "mushroom risotto" in reply.reply
    assert reply.metadata["dtmf_pressed"] == "3*"  # as keypad events too
    assert reply.audio_in is not None
    streamed = decode_fixture(reply.audio_in, sample_rate=16000)
    assert _keys(streamed.pcm, 16000) == "3*"


def test_tones_before_the_speech_are_refused_with_a_stt_that_does_not_listen(
    fixture_wav: Path, tmp_path: Path
) -> None:
    # The example bot hears through FixtureTextSTTService, whose word timings count from the
    # fixture's start: tones before the speech would have it hear words before they are said.
    pytest.importorskip("pipecat.frames.frames", reason="needs the pipecat extra")
    from pytest_agent_eval.errors import AdapterError

    with pytest.raises(
        AdapterError, match=r"turn 1: its keys sound in its audio before the speech"
    ):
        _converse_with_keys(fixture_wav, tmp_path, "before")
