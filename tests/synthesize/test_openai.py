"""The OpenAI backend with the real openai SDK against a loopback server speaking its wire
format: ``POST /v1/audio/speech`` answered with raw 16-bit PCM at 24 kHz."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from pytest_agent_eval.models import VoiceSettings
from pytest_agent_eval.synthesize._cli import main
from pytest_agent_eval.voice._fixtures import read_sidecar, validate_fixture
from pytest_agent_eval.voice._tts._openai import OpenAIBackend, SpeechAPIError


def pcm_tone(seconds: float = 0.5) -> bytes:
    t = np.arange(int(24000 * seconds)) / 24000
    return (0.3 * np.sin(2 * np.pi * 300 * t) * 32767).astype("<i2").tobytes()


class SpeechServer:
    """Answers each request with the next scripted status (200 = PCM); records the bodies."""

    def __init__(self) -> None:
        self.script: list[int] = []
        self.requests: list[dict[str, object]] = []
        self.auth: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                server.requests.append({"path": self.path, **json.loads(body)})
                server.auth.append(self.headers.get("Authorization", ""))
                status = server.script.pop(0) if server.script else 200
                if status == 200:
                    payload, kind = pcm_tone(), "application/octet-stream"
                else:
                    error = {"message": f"scripted {status}", "type": "test", "code": None}
                    payload, kind = json.dumps({"error": error}).encode(), "application/json"
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def speech_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[SpeechServer]:
    server = SpeechServer()
    thread = threading.Thread(
        target=server.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()
    thread.join(timeout=5)


def backend(**kwargs: float) -> tuple[OpenAIBackend, VoiceSettings]:
    b = OpenAIBackend(backoff_s=0.01, **kwargs)  # type: ignore[arg-type]
    return b, b.resolve(VoiceSettings(voice="nova", speed=1.25))


def test_speech_comes_back_as_24khz_pcm(speech_server: SpeechServer) -> None:
    b, settings = backend()
    clip = b.synthesize("Book me a table.", settings)
    assert clip.sample_rate == 24000
    assert clip.duration_s == pytest.approx(0.5)
    assert clip.samples.max() == pytest.approx(0.3, abs=1e-3)
    (request,) = speech_server.requests
    assert request == {
        "path": "/v1/audio/speech",
        "model": "gpt-4o-mini-tts",
        "voice": "nova",
        "input": "Book me a table.",
        "response_format": "pcm",
        "speed": 1.25,
    }
    assert speech_server.auth == ["Bearer sk-test-loopback"]


def test_rate_limit_then_success_is_retried(speech_server: SpeechServer) -> None:
    speech_server.script = [429, 503]
    b, settings = backend()
    assert b.synthesize("Hello.", settings).duration_s == pytest.approx(0.5)
    assert len(speech_server.requests) == 3


def test_a_permanent_error_fails_at_once(speech_server: SpeechServer) -> None:
    speech_server.script = [400]
    b, settings = backend()
    with pytest.raises(SpeechAPIError, match=r"refused the request: HTTP 400: scripted 400"):
        b.synthesize("Hello.", settings)
    assert len(speech_server.requests) == 1


def test_retries_run_out(speech_server: SpeechServer) -> None:
    speech_server.script = [500, 500, 500]
    b, settings = backend(retries=2)
    with pytest.raises(SpeechAPIError, match=r"failed after 3 attempts: HTTP 500"):
        b.synthesize("Hello.", settings)
    assert len(speech_server.requests) == 3


def test_the_command_line_makes_fixtures_through_openai(
    speech_server: SpeechServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    speech_server.script = [429, 200, 401]
    (tmp_path / "cloud.yaml").write_text(
        "id: cloud\nvoice: {backend: openai, voice: coral}\nturns:\n"
        "  - user: One.\n    audio: one.wav\n"
        "  - user: Two.\n    audio: two.wav\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["-j", "1", "cloud.yaml"]) == 1  # one of the two hits the scripted 401
    out = capsys.readouterr().out
    assert "HTTP 401" in out
    assert "│           1 │          0 │      1 │" in out
    made = [p for p in (tmp_path / "one.wav", tmp_path / "two.wav") if p.exists()]
    (wav,) = made
    assert validate_fixture(wav).sample_rate == 16000
    sidecar = read_sidecar(wav)
    assert sidecar is not None
    assert sidecar.inputs["backend_version"] == "speech-v1"
    assert sidecar.inputs["model"] == "gpt-4o-mini-tts"
    assert main(["-j", "1", "cloud.yaml"]) == 0  # the failed one is retried on the next run


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--voice", "alloy"], "--voice alloy is an OpenAI voice"),
        (["--model", "tts-1"], "--model tts-1 is an OpenAI model"),
        (
            ["--voice", "alloy", "--model", "gpt-4o-realtime-preview"],
            "--voice alloy is an OpenAI voice",
        ),
    ],
)
def test_openai_names_from_the_earlier_package_say_to_add_the_backend(
    speech_server: SpeechServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    named: str,
) -> None:
    """pytest-agent-eval 0.3 synthesized with OpenAI and took ``--voice alloy``: say, in one
    line, to add ``--backend openai``; never switch to a paid network backend unasked."""
    (tmp_path / "a.yaml").write_text("id: a\nturns:\n  - user: Hello.\n    audio: hi.wav\n")
    monkeypatch.chdir(tmp_path)
    assert main([*flags, "a.yaml"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {named}, but the backend here is 'hibari' (")
    assert "add --backend openai" in err
    assert "\n" not in err
    assert not (tmp_path / "hi.wav").exists()
    assert speech_server.requests == []  # nothing was sent

    assert main([*flags, "--backend", "openai", "a.yaml"]) == 0
    assert len(speech_server.requests) == 1
    assert speech_server.requests[0]["voice" if "--voice" in flags else "model"] == flags[1]
