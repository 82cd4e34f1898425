"""A LiveKit server, agent workers and callers inside a network namespace of loopback addresses.

`RoomLab` starts `netns_box.py` under ``unshare --net`` (root), then runs everything else in
that namespace with ``nsenter --net``: a ``livekit-server`` bound to 127.0.0.1 with the config
below, agent workers (``python worker.py start``), and callers (the room adapter, run by
``room_calls.py`` or by pytest in a subprocess). Nothing in the namespace can reach another
host, and whatever tries to is recorded by the box (`RoomLab.leaks`).

One lab per test process (per xdist worker): namespaces keep the labs apart, so every lab uses
the same ports.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
if str(HERE.parent) not in sys.path:  # tests/: this file is also imported by lab processes
    sys.path.append(str(HERE.parent))

from ci_builds import failed_build_note, wait_for_build  # noqa: E402

EXAMPLE_DIR = REPO / "examples" / "voice-livekit-room"
EXAMPLE_WORKER = EXAMPLE_DIR / "agent.py"
"""The room example's worker file, run unchanged (registers as ``booking-agent``)."""
LAB_WORKER = HERE / "lab_worker.py"
"""The misbehaving test worker (registers as ``lab-agent``)."""

SERVER_VERSION = "v1.11.0"
"""The livekit-server release `.ci/run` builds (``go install ...@v1.11.0``)."""

SERVER_BIN_ENV = "LIVEKIT_SERVER_BIN"
DEFAULT_SERVER_BIN = (
    Path.home() / ".cache" / "pytest-agent-eval" / f"livekit-server-{SERVER_VERSION}" / "server"
)
"""Where `.ci/run` installs the server (GOBIN), unless LIVEKIT_SERVER_BIN says otherwise."""

REQUIRE_ENV = "AGENT_EVAL_REQUIRE_ROOM_TESTS"
"""Set (to 1) by `.ci/run`: a room test that cannot run then fails instead of skipping."""

API_KEY = "lab-key"
API_SECRET = "lab-secret-at-least-thirty-two-characters-long"
URL = "ws://127.0.0.1:7880"

SERVER_CONFIG = f"""\
port: 7880
bind_addresses: [127.0.0.1]
rtc:
  tcp_port: 7881
  udp_port: 7882
  use_external_ip: false
  node_ip: 127.0.0.1
  enable_loopback_candidate: true
  # Without this the server hands clients public STUN servers.
  stun_servers: [127.0.0.1:3478]
keys:
  {API_KEY}: {API_SECRET}
room:
  empty_timeout: 30
  departure_timeout: 5
logging:
  level: info
"""


def server_binary() -> Path | None:
    """The livekit-server to use: $LIVEKIT_SERVER_BIN, the CI install path, or one on PATH."""
    if named := os.environ.get(SERVER_BIN_ENV):
        return Path(named)
    if DEFAULT_SERVER_BIN.is_file():
        return DEFAULT_SERVER_BIN
    found = shutil.which("livekit-server")
    return Path(found) if found else None


def why_labs_cannot_run() -> str | None:
    """Why this machine cannot host a lab, or None when it can."""
    if not sys.platform.startswith("linux"):
        return "room tests need Linux network namespaces"
    if os.geteuid() != 0:
        return "room tests need root, to create a network namespace (unshare --net)"
    for tool in ("unshare", "nsenter", "ip", "sysctl"):
        if shutil.which(tool) is None:
            return f"room tests need the {tool!r} command"
    if not Path("/dev/net/tun").exists():
        return "room tests need /dev/net/tun (the leak recorder is a TUN device)"
    wait_for_build("server")
    binary = server_binary()
    if binary is None or not binary.is_file():
        advice = (
            f"room tests need livekit-server {SERVER_VERSION}: `GOBIN={DEFAULT_SERVER_BIN.parent} "
            f"go install github.com/livekit/livekit-server/cmd/server@{SERVER_VERSION}` "
            f"(or set {SERVER_BIN_ENV})"
        )
        return advice + failed_build_note("server", DEFAULT_SERVER_BIN)
    return None


def require_labs() -> None:
    """Skip (or, with AGENT_EVAL_REQUIRE_ROOM_TESTS set, fail) when no lab can run here."""
    import pytest

    why = why_labs_cannot_run()
    if why is None:
        return
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{why}; {REQUIRE_ENV} is set, so the room tests must run", pytrace=False)
    pytest.skip(why)


class LabError(RuntimeError):
    """The lab could not start something; the message includes its log."""


@dataclass
class Process:
    """A process in the lab, its output teed to a log file and matched line by line."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    _lines: list[str] = field(default_factory=list)
    _seen: threading.Condition = field(default_factory=threading.Condition)

    def start_reader(self) -> None:
        threading.Thread(target=self._read, name=f"lab-{self.name}", daemon=True).start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        with self.log.open("ab") as out:
            for raw in self.popen.stdout:
                out.write(raw)
                out.flush()
                with self._seen:
                    self._lines.append(raw.decode(errors="replace"))
                    self._seen.notify_all()
        with self._seen:
            self._seen.notify_all()

    def wait_for_line(self, needle: str, timeout_s: float) -> float:
        """Block until a line containing ``needle`` is printed; seconds waited."""
        started = time.perf_counter()
        deadline = started + timeout_s
        with self._seen:
            while not any(needle in line for line in self._lines):
                if self.popen.poll() is not None:
                    # Let the reader finish the last lines before giving up.
                    self._seen.wait(0.2)
                    if any(needle in line for line in self._lines):
                        break
                    raise LabError(
                        f"{self.name} exited ({self.popen.returncode}) before printing "
                        f"{needle!r}:\n{self.tail()}"
                    )
                left = deadline - time.perf_counter()
                if left <= 0:
                    raise LabError(
                        f"{self.name} did not print {needle!r} in {timeout_s:g} s:\n{self.tail()}"
                    )
                self._seen.wait(left)
        return time.perf_counter() - started

    def text(self) -> str:
        with self._seen:
            return "".join(self._lines)

    def tail(self, lines: int = 40) -> str:
        with self._seen:
            return "".join(self._lines[-lines:])

    def stop(self, grace_s: float = 10.0) -> float:
        """SIGTERM, then after ``grace_s`` SIGKILL to its process group (job processes
        included); seconds it took."""
        started = time.perf_counter()
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(grace_s)
        # The group is this process's own (start_new_session): whatever it left behind.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait()
        return time.perf_counter() - started


class NetnsBox:
    """`netns_box.py` under ``unshare --net``: the namespace, and what tried to leave it."""

    def __init__(self) -> None:
        self._box: subprocess.Popen[str] | None = None
        self.pid: int | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        self._box = subprocess.Popen(
            [
                "unshare",
                "--net",
                "--fork",
                "--kill-child",
                sys.executable,
                str(HERE / "netns_box.py"),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        first = self._line(10.0)
        if not first.startswith("ready "):
            raise LabError(f"the namespace box did not start: {first}")
        self.pid = int(first.split()[1])

    def stop(self) -> None:
        if self._box is None:
            return
        with contextlib.suppress(Exception):
            assert self._box.stdin is not None
            self._box.stdin.close()
        try:
            self._box.wait(10)
        except subprocess.TimeoutExpired:
            self._box.kill()
            self._box.wait()

    def _line(self, timeout_s: float) -> str:
        assert self._box is not None and self._box.stdout is not None
        ready, _, _ = select.select([self._box.stdout], [], [], timeout_s)
        if not ready:
            raise LabError(f"the namespace box did not answer within {timeout_s:g} s")
        line = self._box.stdout.readline()
        if not line:
            raise LabError(f"the namespace box exited ({self._box.poll()})")
        return line.strip()

    def ask(self, command: str, timeout_s: float = 10.0) -> str:
        with self._lock:
            assert self._box is not None and self._box.stdin is not None
            self._box.stdin.write(command + "\n")
            self._box.stdin.flush()
            return self._line(timeout_s)

    def leaks(self) -> list[dict[str, Any]]:
        """Every packet a process in the namespace sent towards a non-loopback address."""
        return list(json.loads(self.ask("leaks")))

    def send_canary(self) -> None:
        """Send one UDP datagram to 192.0.2.1 from inside the namespace (a deliberate leak)."""
        assert self.ask("canary") == "sent"

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the namespace."""
        assert self.pid is not None
        return ["nsenter", f"--target={self.pid}", "--net", "--", *argv]

    def addresses(self) -> list[dict[str, Any]]:
        """``ip -json addr`` inside the namespace."""
        done = subprocess.run(
            self.command(["ip", "-json", "addr"]), capture_output=True, text=True, check=True
        )
        return list(json.loads(done.stdout))


class RoomLab:
    """See the module docstring. Use as a context manager, or call `start` and `stop`."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.url = URL
        self.api_key = API_KEY
        self.api_secret = API_SECRET
        self.box = NetnsBox()
        self.server: Process | None = None
        self.workers: dict[str, Process] = {}
        self.stop_grace_s: dict[str, float] = {}
        """Per worker: how long a SIGTERM may take before the lab kills its process group."""
        self.timings: dict[str, float] = {}
        self.server_config = SERVER_CONFIG
        """The livekit-server's YAML config (the SIP lab adds its Redis)."""
        self.calls_script = HERE / "room_calls.py"
        """The script `call` runs in the namespace (the SIP lab has its own)."""

    def __enter__(self) -> RoomLab:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        started = time.perf_counter()
        self.box.start()
        self.timings["namespace_s"] = time.perf_counter() - started
        self.start_server()

    def start_server(self) -> None:
        """Start the livekit-server in the namespace and wait until it listens."""
        binary = server_binary()
        assert binary is not None
        config = self.workdir / "livekit.yaml"
        config.write_text(self.server_config)
        server_started = time.perf_counter()
        self.server = self.spawn("livekit-server", [str(binary), "--config", str(config)])
        self.wait_for_port(7880, timeout_s=20.0, process=self.server)
        self.timings["server_start_s"] = time.perf_counter() - server_started

    def stop(self) -> None:
        for name, worker in self.workers.items():
            self.timings[f"{name}_stop_s"] = worker.stop(grace_s=self.stop_grace_s.get(name, 10.0))
        if self.server is not None:
            self.timings["server_stop_s"] = self.server.stop(grace_s=5.0)
        self.box.stop()

    def leaks(self) -> list[dict[str, Any]]:
        return self.box.leaks()

    def wait_for_port(self, port: int, *, timeout_s: float, process: Process) -> None:
        """Poll a TCP connect to 127.0.0.1:port inside the namespace (no event to await)."""
        deadline = time.perf_counter() + timeout_s
        while (answer := self.box.ask(f"probe 127.0.0.1 {port}")) != "ok":
            if process.popen.poll() is not None:
                raise LabError(
                    f"{process.name} exited ({process.popen.returncode}):\n{process.tail()}"
                )
            if time.perf_counter() > deadline:
                raise LabError(
                    f"port {port} not open after {timeout_s:g} s ({answer}):\n{process.tail()}"
                )
            time.sleep(0.02)

    # -- processes in the namespace ---------------------------------------------------------

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the lab's network namespace."""
        return self.box.command(argv)

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of lab processes: the server's URL and keys, nothing from the cloud."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("LIVEKIT_")}
        env.update(
            LIVEKIT_URL=self.url,
            LIVEKIT_API_KEY=self.api_key,
            LIVEKIT_API_SECRET=self.api_secret,
            PYTHONUNBUFFERED="1",
        )
        env.update(extra)
        return env

    def spawn(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> Process:
        log = self.workdir / f"{name}.log"
        popen = subprocess.Popen(
            self.command(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env or self.env(),
            cwd=cwd,
            start_new_session=True,
        )
        process = Process(name, popen, log)
        process.start_reader()
        return process

    def start_worker(
        self,
        name: str,
        script: Path,
        *,
        timeout_s: float = 90.0,
        stop_grace_s: float = 10.0,
        **env: str,
    ) -> Process:
        """Start ``python script start`` and wait until the server has registered it."""
        if name in self.workers:
            return self.workers[name]
        worker = self.spawn(
            name,
            [sys.executable, str(script), "start", "--log-level", "INFO"],
            env=self.env(**env),
            cwd=script.parent,
        )
        self.workers[name] = worker
        self.stop_grace_s[name] = stop_grace_s
        self.timings[f"{name}_registered_s"] = worker.wait_for_line("registered worker", timeout_s)
        return worker

    def call(self, function: str, /, call_timeout_s: float = 240.0, **kwargs: Any) -> Any:
        """Run ``<calls_script>.<function>(**kwargs)`` in a fresh process in the namespace.

        Returns what it returned; re-raises what it raised (pickled across).
        """
        result = self.workdir / f"call-{function}-{time.monotonic_ns()}.pickle"
        argv = [
            sys.executable,
            str(self.calls_script),
            function,
            json.dumps(kwargs),
            str(result),
        ]
        done = subprocess.run(
            self.command(argv),
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=call_timeout_s,
            cwd=self.calls_script.parent,
        )
        if not result.exists():
            raise LabError(
                f"{self.calls_script.stem}.{function} produced no result (exit {done.returncode}):\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
            )
        outcome = pickle.loads(result.read_bytes())
        if outcome["error"] is not None:
            raise outcome["error"]
        return outcome["value"]
