"""A deployed agent that records its calls, as docs/import.md tells users to set one up.

``python recording_worker.py start`` registers as ``recorded-agent``. Each call runs the
greeting restaurant agent of `call_agent` with LiveKit's recorder on; when the session ends,
``on_session_end`` saves ``ctx.make_session_report()`` and the recorder's ``audio.ogg`` into
``$AGENT_EVAL_CALLS_DIR/<room>/`` and prints ``saved call <folder>``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

# onnxruntime (Silero, the offline voice) would send usage telemetry otherwise.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import call_agent
from livekit.agents import AgentServer, JobContext, JobProcess, cli

from pytest_agent_eval.adapters.livekit import (
    SynthesizerTTS,
    WhisperSTT,
    publish_eval_events,
)

AGENT_NAME = "recorded-agent"

server = AgentServer(
    # Load by jobs, not by the CPU the tests keep busy (see examples/voice-livekit-room).
    load_fnc=lambda server: 0.7 * len(server.active_jobs) / 7,
    load_threshold=float("inf"),
    num_idle_processes=1,
    initialize_process_timeout=120.0,
    drain_timeout=5,
    port=0,
)


def prewarm(proc: JobProcess) -> None:
    WhisperSTT().load()
    SynthesizerTTS().warm_up()


server.setup_fnc = prewarm


async def save_call(ctx: JobContext) -> None:
    """The session has closed (and its recorder with it): keep the report and the recording.
    They live in the job's temporary session folder, which is removed after this returns."""
    report = ctx.make_session_report()
    folder = Path(os.environ["AGENT_EVAL_CALLS_DIR"]) / ctx.room.name
    folder.mkdir(parents=True, exist_ok=True)
    if report.audio_recording_path is not None:
        shutil.copyfile(report.audio_recording_path, folder / "audio.ogg")
    (folder / "session_report.json").write_text(json.dumps(report.to_dict(), indent=2))
    print(f"saved call {folder}", flush=True)


@server.rtc_session(agent_name=AGENT_NAME, on_session_end=save_call)
async def entrypoint(ctx: JobContext) -> None:
    session = call_agent.make_session(tts=SynthesizerTTS())
    publish_eval_events(session)
    await session.start(
        agent=call_agent.GreeterRestaurant(),
        room=ctx.room,
        # The recorder only; with traces, logs or transcripts on, LiveKit Cloud would get them.
        record={"audio": True, "traces": False, "logs": False, "transcript": False},
    )


if __name__ == "__main__":
    cli.run_app(server)
