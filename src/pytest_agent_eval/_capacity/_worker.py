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
"""

from __future__ import annotations

import contextlib
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
from pathlib import Path

from ..errors import ConfigError

__all__ = ["SERVER_BIN_ENV", "WorkerLab", "server_binary"]

SERVER_BIN_ENV = "LIVEKIT_SERVER_BIN"
SERVER_VERSION = "v1.11.0"
DEFAULT_SERVER_BIN = (
    Path.home() / ".cache" / "pytest-agent-eval" / f"livekit-server-{SERVER_VERSION}" / "server"
)
"""Where the project's CI installs livekit-server (GOBIN), unless $LIVEKIT_SERVER_BIN says."""

REGISTERED = "registered worker"
"""The line a LiveKit worker logs once the server has registered it."""

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

    def __init__(self, name: str, argv: list[str], *, env: dict[str, str], cwd: Path) -> None:
        self.name = name
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
            with self._seen:
                self.lines.append(raw.decode("utf-8", "replace").rstrip())
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
        )
        self.worker.wait_for_line(REGISTERED, self.register_timeout_s)

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
        if self.worker is not None:
            self.worker.stop(grace_s=15.0)
        if self.server is not None:
            self.server.stop(grace_s=5.0)
