"""A small eval project for the report tests: real YAML transcripts, a deterministic agent,
a real pydantic-ai FunctionModel judge, and real WAV files for the voice turns."""

from __future__ import annotations

import contextlib
import os
import shutil
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# Imported here, in the outer process: pytester's in-process runs drop the modules first
# imported inside them, and numpy (under soundfile) cannot be imported twice in one process,
# so a report test after such a run would find "soundfile not installed".
with contextlib.suppress(ImportError):  # the lowest-versions slice may run without it
    import numpy  # noqa: F401  (soundfile imports it only when it first decodes)
    import soundfile  # noqa: F401

AGENT_CONFTEST = """
import hashlib
import itertools
import math
import struct
import wave
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from pytest_agent_eval import AgentReply, ToolCall
from pytest_agent_eval.models import Usage

HERE = Path(__file__).parent


def write_wav(path, freq, seconds=0.25, rate=16000):
    path.parent.mkdir(parents=True, exist_ok=True)
    frames = b"".join(
        struct.pack("<h", int(8000 * math.sin(2 * math.pi * freq * i / rate)))
        for i in range(int(seconds * rate))
    )
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(frames)


@pytest.fixture
def llm_eval_agent():
    counter = itertools.count()

    async def agent(history):
        text = history[-1].content
        n = next(counter)
        if "FLAKY" in text and n % 3 == 0:
            return AgentReply("sorry, no slot", [], usage=Usage(40, 4, 1))
        reply = f"Booked: *{text}* | <b>ok</b>"
        calls = [ToolCall("book", {"x": 1, "note": "a|b"}, output={"ok": True})]
        audio = history[-1].get("audio")
        if audio is None:
            return AgentReply(reply, calls, usage=Usage(100, 20, 1))
        digest = hashlib.sha1(f"{text}-{n}".encode()).hexdigest()[:10]
        out = HERE / "reply_audio" / f"{digest}.wav"
        write_wav(out, 660.0)
        return AgentReply(
            reply, calls, usage=Usage(100, 20, 1), heard=text.lower(),
            latency_s=0.4 + 0.1 * (n % 3), first_audio_latency_s=0.6, audio_out=out,
        )

    return agent


async def _judge(messages, info: AgentInfo) -> ModelResponse:
    tool = info.output_tools[0].name
    return ModelResponse(
        parts=[ToolCallPart(tool, {"passed": True, "reasoning": "friendly_and_clear"})]
    )


@pytest.fixture
def llm_eval_judge_model():
    return FunctionModel(_judge, model_name="scripted-judge")
"""

TRANSCRIPTS = {
    "booking_ok": """
        id: booking_ok
        runs: 3
        tags: [gate:booking]
        turns:
          - user: "Book a table for 2"
            expect:
              reply_contains_any: ["booked"]
              tool_calls_include: [book]
              judge:
                rubric: "The reply confirms a booking."
          - user: "Thanks"
            expect:
              reply_contains_any: ["booked"]
        """,
    "booking_flaky": """
        id: booking_flaky
        runs: 3
        threshold: 1.0
        tags: [gate:booking]
        turns:
          - user: "FLAKY book a slot"
            expect:
              reply_contains_any: ["booked"]
        """,
    "smoke_ok": """
        id: smoke_ok
        runs: 2
        tags: [smoke]
        turns:
          - user: "Hello there"
            expect:
              tool_calls_include: [book]
        """,
}

VOICE_TRANSCRIPT = """
    id: voice_booking
    runs: 2
    tags: [voice]
    turns:
      - user: "Book by voice"
        audio: voice_t1.wav
        expect:
          reply_contains_any: ["booked"]
      - user: "And confirm"
        audio: voice_t2.wav
        expect:
          reply_contains_any: ["booked"]
    """


ProjectFactory = Callable[..., Path]


def _write_wav(path: Path, freq: float) -> None:
    import math
    import struct
    import wave

    rate = 16000
    frames = b"".join(
        struct.pack("<h", int(8000 * math.sin(2 * math.pi * freq * i / rate)))
        for i in range(rate // 4)
    )
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(frames)


@pytest.fixture
def eval_project(pytester: pytest.Pytester) -> ProjectFactory:
    """Write the project; ``groups`` is raw TOML appended to pyproject.toml."""

    def make(
        *,
        groups: str = "",
        transcripts: dict[str, str] | None = None,
        voice: bool = False,
        extra_files: dict[str, str] | None = None,
        settings: str = "",
    ) -> Path:
        root = pytester.path
        pyproject = textwrap.dedent(
            """
            [tool.agent_eval]
            yaml_dirs = ["tests/evals"]
            threshold = 0.5
            """
        )
        pyproject += textwrap.dedent(settings) + textwrap.dedent(groups)
        (root / "pyproject.toml").write_text(pyproject, encoding="utf-8")
        evals = root / "tests" / "evals"
        evals.mkdir(parents=True, exist_ok=True)
        (root / "conftest.py").write_text(AGENT_CONFTEST, encoding="utf-8")
        for name, body in (TRANSCRIPTS if transcripts is None else transcripts).items():
            (evals / f"{name}.yaml").write_text(textwrap.dedent(body), encoding="utf-8")
        if voice:
            (evals / "voice_booking.yaml").write_text(
                textwrap.dedent(VOICE_TRANSCRIPT), encoding="utf-8"
            )
            _write_wav(evals / "voice_t1.wav", 440.0)
            _write_wav(evals / "voice_t2.wav", 550.0)
        for rel, body in (extra_files or {}).items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(textwrap.dedent(body), encoding="utf-8")
        return root

    return make


CHROMIUM_ENV = "AGENT_EVAL_CHROMIUM"
"""A Chromium binary to use instead of the one found on PATH or at /usr/bin/chromium."""
REQUIRE_BROWSER_ENV = "AGENT_EVAL_REQUIRE_BROWSER_TESTS"
"""Set (`.ci/run` sets it): a missing browser fails the browser tests instead of skipping them."""
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> Path:
    """The Chromium the browser tests drive: $AGENT_EVAL_CHROMIUM when set (as it is), else the
    first of `CHROMIUM_NAMES` on PATH, else /usr/bin/chromium (which may not exist)."""
    given = os.environ.get(CHROMIUM_ENV)
    if given:
        return Path(given)
    found = next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)
    return Path(found or "/usr/bin/chromium")


def why_no_browser() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    chromium = chromium_path()
    if not chromium.is_file():
        where = f"{CHROMIUM_ENV}={chromium}" if os.environ.get(CHROMIUM_ENV) else str(chromium)
        return (
            f"headless Chromium not found ({where}): install it (apt-get install -y chromium) "
            f"or point {CHROMIUM_ENV} at a Chromium binary"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the browser tests drive Chromium with playwright: pip install -e '.[dev]'"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium. Without one the test skips with the reason, so the README's test
    command passes on a fresh machine; with AGENT_EVAL_REQUIRE_BROWSER_TESTS set (CI) it fails."""
    why = why_no_browser()
    if why is not None:
        if os.environ.get(REQUIRE_BROWSER_ENV):
            pytest.fail(
                f"{why}; {REQUIRE_BROWSER_ENV} is set, so the browser tests must run",
                pytrace=False,
            )
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(chromium_path()), args=CHROMIUM_ARGS, headless=True
        )
        yield browser
        browser.close()
