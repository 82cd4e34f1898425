"""Worker mode: the user's LiveKit worker run as in production, behind our own livekit-server on
loopback, called by K callers in K rooms.

`WorkerLab` starts a ``livekit-server`` bound to 127.0.0.1 on free ports with a throwaway key,
then the user's worker file (``python agent.py start``: its `AgentServer` or ``WorkerOptions``,
its job processes and its ``load_threshold``, unchanged) against it, and waits until the server
has registered the worker. Callers are the public `LiveKitRoomAdapter`: one room per
conversation, the fixtures published as a microphone in real time. Both processes get a session
of their own, so Ctrl-C in the terminal reaches only the command, which then stops them (the
worker first, SIGTERM then SIGKILL to its whole process group, job processes included); the
server's rooms go with it.

Calls taken past ``load_threshold``: `LoadMeter` measures, independently of
the worker's ``load_fnc``, a load as LiveKit's default ``load_fnc`` computes it: CPU divided
by LiveKit's own CPU count (`livekit_cores`: ``$NUM_CPUS``, the cgroup's quota, else
``psutil.cpu_count()``), a moving average of five 0.5 s samples; the CPU, unlike LiveKit's
(the whole machine's or cgroup's), is the worker's own process tree (the worker and its job
processes, not the rest of the machine). The worker logs each job request it offers to its
``request_fnc`` ("received job request", read by its JSON message), before that function may
reject it: a request counts as taken only when the agent then joined its room. Every call is
judged once the run is over, by the threshold known then (``--load-threshold``, else the one
the worker logged; neither, and the calls go unjudged). A call taken while the measured load
was at or over the threshold is one its ``load_fnc`` under-reported.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError

__all__ = [
    "SERVER_BIN_ENV",
    "LoadMeter",
    "TakenCall",
    "WorkerLab",
    "server_binary",
]

SERVER_BIN_ENV = "LIVEKIT_SERVER_BIN"
SERVER_VERSION = "v1.11.0"
DEFAULT_SERVER_BIN = (
    Path.home() / ".cache" / "pytest-agent-eval" / f"livekit-server-{SERVER_VERSION}" / "server"
)
"""Where the project's CI installs livekit-server (GOBIN), unless $LIVEKIT_SERVER_BIN says."""

REGISTERED = "registered worker"
"""The line a LiveKit worker logs once the server has registered it."""

TAKEN = "received job request"
"""The message a LiveKit worker logs for each job request it offers to its ``request_fnc``
(one it refuses for load is answered without a line); the request_fnc may still reject it, so
a request counts as taken only when the agent then joined its room."""

FULL = "worker is at full capacity"
"""The message a LiveKit worker logs when it marks itself full; it names its threshold."""

AVAILABLE = "worker is below capacity"
"""The message it logs when it marks itself available again; it names its threshold too."""

LOAD_SAMPLE_S = 0.5
LOAD_SAMPLES = 5
"""LiveKit's default load: CPU sampled every 0.5 s, averaged over the last five samples."""

_SERVER_CONFIG = """\
port: {port}
bind_addresses: [127.0.0.1]
rtc:
  tcp_port: {tcp_port}
  udp_port: {udp_port}
  use_external_ip: false
  node_ip: 127.0.0.1
  enable_loopback_candidate: true
  stun_servers: [127.0.0.1:3478]
keys:
  {key}: {secret}
room:
  empty_timeout: 10
  departure_timeout: 5
logging:
  level: info
"""


def server_binary() -> Path:
    """The livekit-server to run.

    Raises:
        ConfigError: When there is none, naming how to get one.
    """
    given = os.environ.get(SERVER_BIN_ENV)
    if given:
        path = Path(given)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ConfigError(f"capacity: ${SERVER_BIN_ENV}={given} is not an executable file")
        return path
    if DEFAULT_SERVER_BIN.is_file():
        return DEFAULT_SERVER_BIN
    found = shutil.which("livekit-server")
    if found:
        return Path(found)
    raise ConfigError(
        "capacity: worker mode runs a livekit-server on loopback and none was found: install "
        f"livekit-server {SERVER_VERSION} (LiveKit's open-source server, a single binary) and "
        f"set ${SERVER_BIN_ENV} to it, or put it on PATH as livekit-server"
    )


def _free_port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Process:
    """A child in a session of its own, its output kept (the last lines) by a reader thread."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: Path,
        on_line: Callable[[str], None] | None = None,
    ) -> None:
        self.name = name
        self._on_line = on_line
        self.lines: deque[str] = deque(maxlen=200)
        self._seen = threading.Condition()
        self.popen = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, name=f"capacity-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for raw in self.popen.stdout:
            line = raw.decode("utf-8", "replace").rstrip()
            if self._on_line is not None:
                self._on_line(line)
            with self._seen:
                self.lines.append(line)
                self._seen.notify_all()
        with self._seen:
            self._seen.notify_all()

    def tail(self, count: int = 25) -> str:
        return "\n".join(list(self.lines)[-count:])

    def wait_for_line(self, needle: str, timeout_s: float) -> None:
        """Block until a line holding ``needle`` is printed (woken by each line)."""
        deadline = time.monotonic() + timeout_s
        with self._seen:
            while not any(needle in line for line in self.lines):
                left = deadline - time.monotonic()
                if self.popen.poll() is not None and not self._reader.is_alive():
                    raise ConfigError(
                        f"capacity: the {self.name} exited ({self.popen.returncode}) before it "
                        f"was ready:\n{self.tail()}"
                    )
                if left <= 0:
                    raise ConfigError(
                        f"capacity: the {self.name} was not ready after {timeout_s:g} s:\n"
                        f"{self.tail()}"
                    )
                self._seen.wait(min(left, 0.5))

    def stop(self, grace_s: float) -> None:
        """SIGTERM to the whole process group, SIGKILL after ``grace_s``; reaped."""
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=grace_s)
        # The group may outlive its leader (job processes): kill what is left of it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5.0)
        self._reader.join(timeout=5.0)


@dataclass(frozen=True, slots=True)
class TakenCall:
    """A job request the worker took, with its load as `LoadMeter` measured it then."""

    at: float
    """``time.monotonic()`` when its log line was read."""
    room: str
    load: float | None
    """None: not measured yet (fewer than one sample)."""


def livekit_cores() -> float:
    """The CPU count LiveKit's default load divides by: its own CPU monitor's
    (``livekit.agents.utils.hw.get_cpu_monitor().cpu_count()``: ``$NUM_CPUS``, else the cgroup's
    quota, ``cpu.max`` or ``cpu.cfs_quota_us``, else ``psutil.cpu_count()``), the worker's
    environment being this process's; ``psutil.cpu_count()`` without livekit-agents."""
    try:
        from livekit.agents.utils.hw import get_cpu_monitor
    except ImportError:
        import psutil

        return float(psutil.cpu_count() or 1)
    return max(float(get_cpu_monitor().cpu_count()), 1e-3)


class LoadMeter:
    """The CPU load of a process tree as LiveKit's default ``load_fnc`` computes it (see the
    module docstring), sampled by a thread of its own until `stop`."""

    def __init__(self, pid: int) -> None:
        from ._measure import ProcessTree

        self._tree = ProcessTree(pid)
        self._cores = livekit_cores()
        self._samples: deque[float] = deque(maxlen=LOAD_SAMPLES)
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="capacity-load", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self._tree.sample()
        cpu, at = self._tree.cpu_s, time.monotonic()
        while not self._stopped.wait(LOAD_SAMPLE_S):
            self._tree.sample()
            now_cpu, now = self._tree.cpu_s, time.monotonic()
            if now > at:
                with self._lock:
                    self._samples.append((now_cpu - cpu) / (now - at) / self._cores)
            cpu, at = now_cpu, now

    def load(self) -> float | None:
        with self._lock:
            return sum(self._samples) / len(self._samples) if self._samples else None

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5.0)


def _fields(line: str) -> dict[str, object]:
    try:
        data = json.loads(line)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


class WorkerLab:
    """A livekit-server on loopback and the user's worker registered with it (see the module
    docstring). Use as a context manager; `stop` is safe to call twice."""

    def __init__(
        self, worker_file: Path, *, workdir: Path, register_timeout_s: float = 180.0
    ) -> None:
        if not worker_file.is_file():
            raise ConfigError(f"capacity: --worker {worker_file}: no such file")
        self.worker_file = worker_file.resolve()
        self.workdir = workdir
        self.register_timeout_s = register_timeout_s
        self.api_key = "capacity-key"
        self.api_secret = secrets.token_hex(24)
        self.port = _free_port(socket.SOCK_STREAM)
        self.url = f"ws://127.0.0.1:{self.port}"
        self.server: _Process | None = None
        self.worker: _Process | None = None
        self.load_threshold: float | None = None
        """The worker's threshold as it logged it (None until it marks itself full)."""
        self.taken: list[TakenCall] = []
        self._meter: LoadMeter | None = None

    def __enter__(self) -> WorkerLab:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def env(self) -> dict[str, str]:
        """The worker's environment: our server, none of the caller's LiveKit settings."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("LIVEKIT_")}
        env.update(
            LIVEKIT_URL=self.url,
            LIVEKIT_API_KEY=self.api_key,
            LIVEKIT_API_SECRET=self.api_secret,
            PYTHONUNBUFFERED="1",
        )
        return env

    def start(self) -> None:
        binary = server_binary()
        config = self.workdir / "livekit-server.yaml"
        config.write_text(
            _SERVER_CONFIG.format(
                port=self.port,
                tcp_port=_free_port(socket.SOCK_STREAM),
                udp_port=_free_port(socket.SOCK_DGRAM),
                key=self.api_key,
                secret=self.api_secret,
            ),
            encoding="utf-8",
        )
        self.server = _Process(
            "livekit-server",
            [str(binary), "--config", str(config)],
            env=self.env(),
            cwd=self.workdir,
        )
        self._wait_for_port(timeout_s=30.0)
        self.worker = _Process(
            "worker",
            [sys.executable, str(self.worker_file), "start", "--log-level", "INFO"],
            env=self.env(),
            cwd=self.worker_file.parent,
            on_line=self._worker_line,
        )
        self._meter = LoadMeter(self.worker.popen.pid)
        self.worker.wait_for_line(REGISTERED, self.register_timeout_s)

    def _worker_line(self, line: str) -> None:
        """Read on the worker's reader thread: the job requests it offers (each with the load
        measured then), the threshold it logs. Only the worker's JSON log lines count, by their
        message, never a substring of another line."""
        fields = _fields(line)
        message = fields.get("message")
        if message == TAKEN:
            room = fields.get("room")
            load = self._meter.load() if self._meter is not None else None
            self.taken.append(TakenCall(time.monotonic(), str(room or "?"), load))
        elif isinstance(message, str) and message.startswith((FULL, AVAILABLE)):
            threshold = fields.get("threshold")
            if isinstance(threshold, int | float) and not isinstance(threshold, bool):
                self.load_threshold = float(threshold)

    def threshold(self, given: float | None) -> tuple[float, str] | None:
        """The threshold to judge taken calls by, and where it came from; None when neither
        ``--load-threshold`` gave it nor the worker logged it (the calls go unjudged)."""
        if given is not None:
            return given, "--load-threshold"
        if self.load_threshold is not None:
            return self.load_threshold, "the worker's log"
        return None

    def taken_past_threshold(
        self, span: tuple[float, float], given: float | None, joined: Collection[str]
    ) -> tuple[str, ...]:
        """The calls taken within ``span`` (monotonic; a repeat's) whose room the agent
        joined, while the measured load was at or over the threshold, one line each. Judged
        once the run is over, by the threshold known then; none when it is unknown."""
        judged = self.threshold(given)
        if judged is None:
            return ()
        threshold, source = judged
        began, ended = span
        return tuple(
            f"room {call.room}: taken at a CPU load of {call.load:.2f} (the worker's processes, "
            f"over the last 2.5 s) >= load_threshold {threshold:g} ({source})"
            for call in list(self.taken)
            if began <= call.at <= ended
            and call.room in joined
            and call.load is not None
            and call.load >= threshold
        )

    def _wait_for_port(self, timeout_s: float) -> None:
        """Poll a connect to the server's port (the server announces nothing we can await)."""
        assert self.server is not None
        deadline = time.monotonic() + timeout_s
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if self.server.popen.poll() is not None or time.monotonic() > deadline:
                raise ConfigError(
                    f"capacity: livekit-server did not start on 127.0.0.1:{self.port}:\n"
                    f"{self.server.tail()}"
                )
            time.sleep(0.05)

    @property
    def worker_pid(self) -> int | None:
        return self.worker.popen.pid if self.worker is not None else None

    def stop(self) -> None:
        """The worker (and its job processes), then the server; nothing is left running."""
        if self._meter is not None:
            self._meter.stop()
        if self.worker is not None:
            self.worker.stop(grace_s=15.0)
        if self.server is not None:
            self.server.stop(grace_s=5.0)
