"""A cassette: the OpenAI realtime events one transcript's runs exchanged, as recorded live.

One JSON file per transcript, beside it (``<folder>/cassettes/<transcript id>.openai-realtime.json``
unless a ``cassette_dir`` is given). It holds, per recorded run, each websocket connection the
run opened (one per realtime session: a handoff to an agent with its own model opens another),
and per connection every event in the order the client saw it: what it sent (input audio reduced
to its length: the position it reached) and what the server answered (reply audio kept, since a
replay plays it). Each entry carries ``audio_ms``, the input audio the client had sent by then.

A cassette records the plugin versions it was made with: the events the client sends are the
plugin's own, so a replay with other versions is refused rather than compared.
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...._atomic import write_atomic
from ...._compat.livekit_openai import installed_versions
from ...._text import safe_name
from ....errors import AdapterError
from ....models import Transcript

__all__ = [
    "CASSETTE_FORMAT",
    "RECORD_ENV",
    "Cassette",
    "CassetteError",
    "Connection",
    "Entry",
    "cassette_path",
    "load_cassette",
    "rerecord_command",
    "save_cassette",
    "shown_path",
]

CASSETTE_FORMAT = 1
"""Layout version of the file; another one is refused with the re-record command."""

_KIND = "pytest-agent-eval/openai-realtime-cassette"

RECORD_ENV = "AGENT_EVAL_REALTIME_RECORD"
"""Set to 1 to record live (needs ``OPENAI_API_KEY``) instead of replaying."""


class CassetteError(AdapterError):
    """A cassette is missing, unreadable, of another format or plugin version, or no longer
    fits the agent: the run could not evaluate the agent (an ERROR), and the message says how
    to record it again."""


@dataclass(slots=True)
class Entry:
    """One event of a connection: ``direction`` "client" (sent) or "server" (received)."""

    direction: str
    event: dict[str, Any]
    audio_ms: float
    """Input audio (ms) the client had sent on this connection when the event went or came."""

    def to_json(self) -> dict[str, Any]:
        return {"dir": self.direction, "audio_ms": round(self.audio_ms, 3), "event": self.event}


@dataclass(slots=True)
class Connection:
    """One websocket connection (one plugin ``RealtimeSession``) of a run."""

    model: str
    entries: list[Entry] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "events": [e.to_json() for e in self.entries]}


@dataclass(slots=True)
class Cassette:
    """Every recorded run of one transcript (replay run ``i`` plays run ``i % len(runs)``)."""

    transcript_id: str
    runs: list[list[Connection]]
    versions: dict[str, str]
    recorded_at: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": _KIND,
            "format": CASSETTE_FORMAT,
            "transcript": self.transcript_id,
            "recorded_at": self.recorded_at,
            "recorded_with": self.versions,
            "runs": [{"connections": [c.to_json() for c in run]} for run in self.runs],
        }


def cassette_path(transcript: Transcript, cassette_dir: Path | None) -> Path:
    """Where ``transcript``'s cassette lives.

    Raises:
        CassetteError: A transcript built in Python (no file) and no ``cassette_dir``.
    """
    name = f"{safe_name(transcript.id)}.openai-realtime.json"
    if cassette_dir is not None:
        return Path(cassette_dir) / name
    if transcript.path is None:
        raise CassetteError(
            f"transcript {transcript.id!r} has no file, so its realtime cassette has no place "
            "beside it; pass OpenAIRealtimeReplay(..., cassette_dir=...)"
        )
    return Path(transcript.path).parent / "cassettes" / name


def shown_path(path: str | os.PathLike[str]) -> str:
    """``path`` as a message shows it: relative to the working directory (where the user
    runs pytest, so a command with it can be pasted as it is) when it lies inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def rerecord_command(transcript: Transcript) -> str:
    """The command that records ``transcript``'s cassette again, live, to run from the
    working directory."""
    target = shown_path(transcript.path) if transcript.path is not None else "<your test file>"
    return (
        f"{RECORD_ENV}=1 OPENAI_API_KEY=... python -m pytest {shlex.quote(target)} "
        f"-k {shlex.quote(safe_name(transcript.id))}"
    )


def _refuse(transcript: Transcript, path: Path, problem: str) -> CassetteError:
    return CassetteError(
        f"transcript {transcript.id!r}: realtime cassette {shown_path(path)}: {problem}; "
        "record it again "
        f"(a live run, with a key): {rerecord_command(transcript)}"
    )


def load_cassette(transcript: Transcript, path: Path) -> Cassette:
    """Read and check ``path``.

    Raises:
        CassetteError: Missing, unreadable, not a cassette, of another format, recorded with
            other plugin versions, or holding no run; each with the re-record command.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _refuse(transcript, path, "not found (nothing was recorded yet)") from None
    except OSError as exc:
        raise _refuse(transcript, path, f"cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise _refuse(transcript, path, "is not UTF-8 text (damaged)") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # The whole of what the parser said, with where: "Unterminated string starting at
        # line 1, column 297", never a phrase cut before its position.
        where = f"line {exc.lineno}, column {exc.colno}"
        said = f"{exc.msg} {where}" if exc.msg.endswith(" at") else f"{exc.msg} at {where}"
        raise _refuse(
            transcript, path, f"is not valid JSON ({said}: the file is cut short or damaged)"
        ) from None
    except ValueError as exc:  # undecodable bytes
        raise _refuse(transcript, path, f"is not valid JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("kind") != _KIND:
        raise _refuse(transcript, path, "is not an OpenAI realtime cassette")
    if data.get("format") != CASSETTE_FORMAT:
        raise _refuse(
            transcript,
            path,
            f"has format {data.get('format')!r}, this pytest-agent-eval reads {CASSETTE_FORMAT}",
        )
    recorded = data.get("recorded_with")
    installed = installed_versions()
    if not isinstance(recorded, dict):
        raise _refuse(transcript, path, "does not say which plugin versions recorded it")
    differing = [
        f"{name} {recorded.get(name) or '(none)'} (installed: {version or 'none'})"
        for name, version in installed.items()
        if recorded.get(name) != version
    ]
    if differing:
        raise _refuse(
            transcript,
            path,
            "was recorded with " + ", ".join(differing) + "; the client's events are the "
            "plugin's own, so a recording of another version cannot be compared",
        )
    try:
        runs = [
            [
                Connection(
                    model=str(conn.get("model", "")),
                    entries=[
                        Entry(str(e["dir"]), dict(e["event"]), float(e["audio_ms"]))
                        for e in conn["events"]
                    ],
                )
                for conn in run["connections"]
            ]
            for run in data["runs"]
        ]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _refuse(transcript, path, f"is damaged ({type(exc).__name__}: {exc})") from None
    if not runs or not any(runs):
        raise _refuse(transcript, path, "holds no recorded run")
    return Cassette(
        transcript_id=str(data.get("transcript", transcript.id)),
        runs=runs,
        versions={str(k): str(v) for k, v in recorded.items()},
        recorded_at=str(data.get("recorded_at", "")),
    )


def save_cassette(path: Path, cassette: Cassette) -> None:
    """Write ``cassette`` to ``path`` atomically (a reader sees the old file or the new one)."""
    if not cassette.recorded_at:
        cassette.recorded_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    body = json.dumps(cassette.to_json(), ensure_ascii=False, separators=(",", ":"))
    write_atomic(path, body + os.linesep)
