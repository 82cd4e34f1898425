"""The documented script sets up the loopback-only lab and runs a room call in it.

``examples/voice-livekit-room/loopback_lab.sh`` is what docs/livekit-room.md section 8 gives
users: a namespace with loopback addresses only, livekit-server with a config that stays there,
the worker, then their command. Here it runs the lab worker and one room call.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

from room_lab import EXAMPLE_DIR, HERE, LAB_WORKER, require_labs, server_binary

SCRIPT = EXAMPLE_DIR / "loopback_lab.sh"


def _lab(
    tmp_path: Path, *command: str, worker: Path | None = None
) -> subprocess.CompletedProcess[str]:
    require_labs()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVEKIT_")}
    env.update(PYTHON=sys.executable, LAB_DIR=str(tmp_path / "lab"))
    argv = ["bash", str(SCRIPT), "--server", str(server_binary())]
    if worker is not None:
        argv += ["--worker", str(worker)]
    return subprocess.run(
        [*argv, "--", *command],
        env=env,
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_command_runs_against_the_lab_server_and_its_status_is_kept(tmp_path: Path) -> None:
    check = (
        'test "$LIVEKIT_URL" = ws://127.0.0.1:7880 && test ${#LIVEKIT_API_SECRET} -ge 32 '
        "&& ip -4 -o addr | grep -v ' 127\\.' ; exit 3"
    )
    done = _lab(tmp_path, "bash", "-c", check)
    assert done.returncode == 3, done.stderr
    assert done.stdout == ""  # no address outside 127.0.0.0/8
    assert "logs in" in done.stderr


def test_a_room_call_through_the_script(tmp_path: Path) -> None:
    out = tmp_path / "call.pickle"
    kwargs = {
        "agent_name": "lab-agent",
        "dispatch_metadata": "plain",
        "turns": [{"user": "Do you have vegan dishes?"}],
    }
    done = _lab(
        tmp_path,
        sys.executable,
        str(HERE / "room_calls.py"),
        "converse",
        json.dumps(kwargs),
        str(out),
        worker=LAB_WORKER,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = pickle.loads(out.read_bytes())
    assert outcome["error"] is None, outcome["error"]
    (reply,) = outcome["value"]["replies"]
    assert reply.reply == "Yes, we have mushroom risotto and lentil curry."
    assert [c.name for c in reply.calls] == ["check_menu"]
