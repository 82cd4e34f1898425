"""A phone line on loopback: the room lab plus Redis and LiveKit's SIP service.

`SipLab` is a `RoomLab` (tests/room/room_lab.py: a network namespace of loopback addresses,
a livekit-server, agent workers) whose namespace also runs ``redis-server`` (the livekit-server
and the SIP service meet through it) and ``livekit-sip`` (LiveKit's SIP service, built from
source by ``build_sip_service.sh``), with an inbound trunk for `TRUNK_NUMBER` and a dispatch
rule that puts each call in a room of its own with `AGENT_NAME`. Calls are placed by
``sip_calls.py`` (a PJSIP user agent) in a process of its own in the namespace.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOM_TESTS = HERE.parent / "room"
if str(ROOM_TESTS) not in sys.path:
    sys.path.append(str(ROOM_TESTS))

from room_lab import (  # noqa: E402
    API_KEY,
    API_SECRET,
    SERVER_CONFIG,
    Process,
    RoomLab,
    why_labs_cannot_run,
)

from ci_builds import failed_build_note, wait_for_build  # noqa: E402

SIP_VERSION = "v1.8.0"
"""The livekit/sip release `build_sip_service.sh` builds (the newest the Go module proxy here
serves)."""

SIP_BIN_ENV = "LIVEKIT_SIP_BIN"
DEFAULT_SIP_BIN = (
    Path.home() / ".cache" / "pytest-agent-eval" / f"livekit-sip-{SIP_VERSION}" / "livekit-sip"
)
BUILD_SCRIPT = HERE / "build_sip_service.sh"

REQUIRE_ENV = "AGENT_EVAL_REQUIRE_SIP_TESTS"
"""Set (to 1) by `.ci/run`: a SIP test that cannot run then fails instead of skipping."""

AGENT_NAME = "sip-agent"
"""The agent the dispatch rule sends every call to (``sip_worker.py``)."""
SIP_WORKER = HERE / "sip_worker.py"
EVAL_AGENT_NAME = "sip-eval-agent"
"""The agent `LiveKitRoomAdapter(sip=...)` dispatches into each call's room (sip_eval_worker.py)."""
TRUNK_NUMBER = "+15550199"
"""The number the caller dials: the inbound trunk's number."""
CALLER_NUMBER = "+15550123"
CALLER_SAYS = "Do you have vegan dishes?"
"""What the caller says (its fixture, synthesized offline); the agent answers with its menu."""

SELF_IP = "198.18.0.1"
"""The namespace's one address that is not a loopback one (RFC 2544's benchmarking range)."""
REDIS_PORT = 6379
SIP_PORT = 5060
SIP_HEALTH_PORT = 8089
PHONE_PORT = 5070
"""Where the lab's phone answers the agent's outbound calls (its outbound trunk's address)."""
RTP_PORTS = "10000-10099"

SIP_CONFIG = f"""\
api_key: {API_KEY}
api_secret: {API_SECRET}
ws_url: ws://127.0.0.1:7880
redis:
  address: 127.0.0.1:{REDIS_PORT}
sip_port: {SIP_PORT}
nat_1_to_1_ip: 127.0.0.1
rtp_port: {RTP_PORTS}
health_port: {SIP_HEALTH_PORT}
# The service refuses calls ("cpu exhausted") when the machine's CPU, not its own, is over
# this share; tests share their machine, so it never refuses one.
max_cpu_utilization: 1.0
# Keys the agent sends reach the phone as RFC 4733 events and also as tones in band.
audio_dtmf: true
logging:
  level: debug
"""


def sip_binary() -> Path | None:
    """The SIP service to use: $LIVEKIT_SIP_BIN, or the build script's install path."""
    if named := os.environ.get(SIP_BIN_ENV):
        return Path(named)
    return DEFAULT_SIP_BIN if DEFAULT_SIP_BIN.is_file() else None


def why_sip_labs_cannot_run() -> str | None:
    """Why this machine cannot host a SIP lab, or None when it can."""
    if why := why_labs_cannot_run():
        return why
    if shutil.which("redis-server") is None:
        return "SIP tests need redis-server: apt-get install -y redis-server"
    wait_for_build("sip")
    binary = sip_binary()
    if binary is None or not binary.is_file():
        advice = (
            f"SIP tests need LiveKit's SIP service {SIP_VERSION}: run {BUILD_SCRIPT} "
            f"(after apt-get install -y libopus-dev libopusfile-dev libsoxr-dev pkg-config), "
            f"or set {SIP_BIN_ENV}"
        )
        return advice + failed_build_note("sip", DEFAULT_SIP_BIN)
    if importlib.util.find_spec("pjsua2") is None:
        return "SIP tests need PJSIP's Python binding (pjsua2-python, in the dev extra): pip install -e '.[dev]'"
    return None


def require_sip_labs() -> None:
    """Skip (or, with AGENT_EVAL_REQUIRE_SIP_TESTS set, fail) when no SIP lab can run here."""
    import pytest

    why = why_sip_labs_cannot_run()
    if why is None:
        return
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{why}; {REQUIRE_ENV} is set, so the SIP tests must run", pytrace=False)
    pytest.skip(why)


class SipLab(RoomLab):
    """See the module docstring. Use as a context manager, or call `start` and `stop`."""

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        self.server_config = SERVER_CONFIG + f"redis:\n  address: 127.0.0.1:{REDIS_PORT}\n"
        self.calls_script = HERE / "sip_calls.py"
        self.redis: Process | None = None
        self.sip: Process | None = None
        self.routing: dict[str, Any] = {}
        """The trunk's and the dispatch rule's ids."""

    def start(self) -> None:
        started = time.perf_counter()
        self.box.start()
        self.timings["namespace_s"] = time.perf_counter() - started
        # The SIP stack (sipgo) refuses to start on a host whose only addresses are loopback
        # ones: give the namespace's bridge one more. It is local, so whatever is sent to it
        # stays in the namespace (the service itself announces 127.0.0.1).
        subprocess.run(
            self.command(["ip", "addr", "add", f"{SELF_IP}/32", "dev", "lkbr0"]),
            check=True,
            capture_output=True,
            text=True,
        )
        step = time.perf_counter()
        self.redis = self.spawn(
            "redis",
            [
                "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(REDIS_PORT),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
        )
        self.wait_for_port(REDIS_PORT, timeout_s=20.0, process=self.redis)
        self.timings["redis_start_s"] = time.perf_counter() - step
        self.start_server()
        step = time.perf_counter()
        binary = sip_binary()
        assert binary is not None
        config = self.workdir / "sip.yaml"
        config.write_text(SIP_CONFIG)
        self.sip = self.spawn("livekit-sip", [str(binary), "--config", str(config)])
        self.wait_for_port(SIP_HEALTH_PORT, timeout_s=30.0, process=self.sip)
        self.timings["sip_start_s"] = time.perf_counter() - step
        step = time.perf_counter()
        self.routing = self.call(
            "route_calls", agent_name=AGENT_NAME, trunk_number=TRUNK_NUMBER, call_timeout_s=60.0
        )
        self.timings["routing_s"] = time.perf_counter() - step
        self.timings["lab_start_s"] = time.perf_counter() - started

    def stop(self) -> None:
        if self.sip is not None:
            self.timings["sip_stop_s"] = self.sip.stop(grace_s=5.0)
        super().stop()
        if self.redis is not None:
            self.timings["redis_stop_s"] = self.redis.stop(grace_s=5.0)
