"""Realistic voice suites, each as one whole pytest process (issue 38).

Generates, into a temporary folder, one project per voice adapter from the shipped examples'
agents (LiveKit in process: examples/voice-livekit; LiveKit on a realtime model:
examples/voice-livekit-realtime; Pipecat: examples/voice-pipecat), each with the example's own
transcripts (audio and text turns, tools, a handoff, a barge-in where the example has one)
plus what a real project adds:

- a barge-in over a spoken reply (LiveKit in process, whose example has none; its agent gets
  the offline voice as TTS so every reply plays for its length, as a real agent's would);
- a phone-line variant (``variants: [clean, phone]``) of a spoken question, heard by offline
  Whisper (tiny.en) instead of the fixture's text: ``WhisperSTT`` on the LiveKit session,
  ``ScriptedRealtimeModel(hearing=WhisperSTT())`` on the realtime model, ``WhisperSTTService``
  in the Pipecat bot.

The fixtures are synthesized before the clock starts (a project synthesizes them once). Then
each project's suite runs as one ``python -m pytest`` process, with ``--agent-eval-runs N``
(default 2), and again under ``-n 2`` (pytest-xdist), printing the wall time, the seconds of
user audio the suite streams (each audio turn's fixture, every run and variant; no tails), and
"x real time": audio seconds per wall second, what a live call could reach at best (a call
also waits for replies to play). With ``--py-spy`` each serial run is sampled and
``bench/suite_phases.py``'s phase table printed.

    .venv/bin/python bench/realistic_suite.py [--runs 2] [--only livekit] [--no-xdist]
        [--py-spy PATH] [--keep DIR]

Everything is deterministic: the same transcripts, the same seeded voices; only the times
vary with the machine's load, printed before and after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path

__all__ = ["PROJECTS", "audio_seconds", "generate", "main"]

REPO = Path(__file__).resolve().parent.parent

# A project: the example it starts from, its conftest and the transcripts added to its evals.
LIVEKIT_CONFTEST = '''\
"""The example's restaurant agent with the offline voice as TTS; Whisper hears the phone line."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def llm_eval_agent(request: pytest.FixtureRequest) -> Any:
    from booking_agent import RULES, VAD, RestaurantAgent
    from livekit.agents import AgentSession

    from pytest_agent_eval.adapters.livekit import (
        FixtureTextSTT,
        LiveKitAdapter,
        ScriptedLLM,
        SynthesizerTTS,
        WhisperSTT,
        eval_session_kwargs,
    )

    whisper = "[phone" in request.node.name

    def make_session() -> tuple[AgentSession[Any], RestaurantAgent]:
        session: AgentSession[Any] = AgentSession(
            stt=WhisperSTT() if whisper else FixtureTextSTT(),
            vad=VAD,
            llm=ScriptedLLM(RULES),
            tts=SynthesizerTTS(),
            **eval_session_kwargs(),
        )
        return session, RestaurantAgent()

    return LiveKitAdapter(make_session, timeout_s=60.0)
'''

REALTIME_CONFTEST = '''\
"""The example's front desk on the scripted realtime model; Whisper hears the phone line."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def llm_eval_agent(request: pytest.FixtureRequest) -> Any:
    from front_desk_agent import make_session, scripted_model

    from pytest_agent_eval.adapters.livekit import LiveKitAdapter, WhisperSTT

    if "[phone" in request.node.name:
        return LiveKitAdapter(
            lambda: make_session(scripted_model(hearing=WhisperSTT())), timeout_s=60.0
        )
    return LiveKitAdapter(make_session, timeout_s=60.0)
'''

PIPECAT_CONFTEST = '''\
"""The example's bot; its STT is offline Whisper on the phone line."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def llm_eval_agent(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    import bot

    from pytest_agent_eval.adapters.pipecat import PipecatAdapter, WhisperSTTService

    if "[phone" in request.node.name:
        make = bot.create_services

        def with_whisper() -> Any:
            _, llm, tts = make()
            return WhisperSTTService(), llm, tts

        monkeypatch.setattr(bot, "create_services", with_whisper)
    return PipecatAdapter(run_bot=bot.run_bot, timeout_s=60.0)
'''

LIVEKIT_BARGE_IN = """\
id: barge_in_menu
tags: [voice, barge-in]
turns:
  - user: "Hi, I am Alice and I would like a table for two at seven pm."
    audio: audio/barge_in_t1.wav
    expect: {tool_calls_include: [book_table]}
  - user: "Do you have vegan dishes?"
    audio: audio/barge_in_t2.wav
    interrupt: {after_ms: 1200, stop_within_ms: 2000}
    expect: {tool_calls_include: [check_menu], reply_contains_all: [risotto]}
"""

PHONE_VEGAN = """\
id: phone_vegan
tags: [voice, phone]
seed: 3
variants: [clean, phone]
turns:
  - user: "Do you have vegan dishes?"
    audio: audio/phone_vegan.wav
    expect:
      heard_contains_any: [vegan]
      tool_calls_include: [check_menu]
      reply_contains_all: [risotto]
"""

PHONE_ROOM = """\
id: phone_room
tags: [voice, phone]
seed: 3
variants: [clean, phone]
turns:
  - user: "How much is a double room?"
    audio: audio/phone_room.wav
    expect:
      heard_contains_any: [double]
      reply_contains_all: ["129 euros"]
"""

PROJECTS: dict[str, tuple[str, str, dict[str, str]]] = {
    "livekit": (
        "voice-livekit",
        LIVEKIT_CONFTEST,
        {"barge_in.yaml": LIVEKIT_BARGE_IN, "phone.yaml": PHONE_VEGAN},
    ),
    "livekit-realtime": ("voice-livekit-realtime", REALTIME_CONFTEST, {"phone.yaml": PHONE_ROOM}),
    "pipecat": ("voice-pipecat", PIPECAT_CONFTEST, {"phone.yaml": PHONE_VEGAN}),
}


def generate(name: str, into: Path) -> Path:
    """Copy the example, put in the project's conftest and transcripts, synthesize its audio."""
    example, conftest, extra = PROJECTS[name]
    project = into / name
    shutil.copytree(
        REPO / "examples" / example,
        project,
        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "agent-eval-report*"),
    )
    (project / "conftest.py").write_text(conftest, encoding="utf-8")
    for file, text in extra.items():
        (project / "evals" / file).write_text(text, encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "pytest_agent_eval.synthesize_audio", "evals"],
        cwd=project,
        check=True,
        capture_output=True,
    )
    return project


def audio_seconds(project: Path, runs: int) -> float:
    """The user audio a suite streams: each audio turn's fixture, every run and variant."""
    import yaml

    total = 0.0
    for path in sorted((project / "evals").glob("*.yaml")):
        script = yaml.safe_load(path.read_text(encoding="utf-8"))
        copies = runs * max(1, len(script.get("variants") or []))
        for turn in script.get("turns", []):
            if "audio" in turn:
                with wave.open(str(path.parent / turn["audio"]), "rb") as clip:
                    total += copies * clip.getnframes() / clip.getframerate()
    return total


def _pytest(project: Path, runs: int, extra: list[str], py_spy: str | None) -> tuple[float, str]:
    """One whole pytest process on the project: its wall time and pytest's last line."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-rfE",
        "-p",
        "no:cacheprovider",
        "--agent-eval-live",
        "--agent-eval-runs",
        str(runs),
        *extra,
    ]
    if py_spy is not None:
        command = [
            str(Path(py_spy).resolve()) if Path(py_spy).exists() else py_spy,
            *("record", "--format", "raw", "--threads", "--idle", "--subprocesses"),
            *("--rate", "200", "--output", str(project / "py-spy.txt"), "--"),
            *command,
        ]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=project, capture_output=True, text=True)
    wall = time.perf_counter() - started
    lines = [line for line in done.stdout.splitlines() if line and not line.startswith("py-spy>")]
    failed = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
    return wall, "; ".join([*failed, lines[-1]] if lines else [done.stderr.strip()[-300:]])


def _load() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--only", action="append", choices=sorted(PROJECTS), default=[])
    parser.add_argument("--no-xdist", action="store_true", help="skip the -n 2 runs")
    parser.add_argument("--py-spy", help="sample each serial run with py-spy at this path")
    parser.add_argument("--keep", type=Path, help="keep the generated projects here")
    args = parser.parse_args()
    names = args.only or list(PROJECTS)
    print(f"load average before: {_load()}; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="realistic-suite-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        for name in names:
            project = generate(name, root)
            audio_s = audio_seconds(project, args.runs)
            ways = [("-n 0", [])] + ([] if args.no_xdist else [("-n 2", ["-n", "2"])])
            for way, extra in ways:
                spy = args.py_spy if way == "-n 0" else None
                wall, said = _pytest(project, args.runs, extra, spy)
                print(
                    f"{name:<17} {way}  wall {wall:6.2f} s  audio {audio_s:6.1f} s  "
                    f"x real time {audio_s / wall:5.1f}  | {said}",
                    flush=True,
                )
                if spy is not None:
                    sys.path.insert(0, str(REPO / "bench"))
                    from suite_phases import parse_raw, table

                    raw = (project / "py-spy.txt").read_text(encoding="utf-8")
                    print(table(name, parse_raw(raw, 200, wall, 0)), end="\n\n")
    print(f"load average after: {_load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
