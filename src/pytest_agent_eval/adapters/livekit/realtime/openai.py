"""Record an OpenAI realtime agent's provider session once, live; replay it offline ever after.

`OpenAIRealtimeReplay` wraps a `LiveKitAdapter` whose agent runs on
``livekit.plugins.openai.realtime.RealtimeModel``. By default every run replays the
transcript's cassette from a loopback websocket server: no key, no network. With
``AGENT_EVAL_REALTIME_RECORD=1`` (or ``record=True``) the runs talk to OpenAI as the agent is
configured to, and the events they exchange are recorded, through the plugin's own hooks, into
the cassette beside the transcript.

The agent is not edited for either: while a run is open, each ``RealtimeModel.session()`` it
makes (at the session start, and at a handoff to an agent with its own model) is recorded, or
made with the loopback server's address in place of the model's ``base_url``. See
docs/livekit-realtime.md, "Record and replay".
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import threading
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ...._compat import livekit_openai as compat
from ....errors import AdapterError, ConfigError, require_extra
from ....models import AgentReply, Transcript
from ._cassette import (
    RECORD_ENV,
    Cassette,
    CassetteError,
    Connection,
    cassette_path,
    load_cassette,
    rerecord_command,
    save_cassette,
    shown_path,
)
from ._record import ConnectionRecorder, reconnect_problem
from ._replay import ReplayServer

__all__ = ["RECORD_ENV", "CassetteError", "OpenAIRealtimeReplay"]

_T = TypeVar("_T")


@dataclass(slots=True)
class _Tape:
    """One run's recording or replay, found by the sessions the run's agent makes."""

    record: bool
    server: ReplayServer | None = None
    recorders: list[ConnectionRecorder] = field(default_factory=list)
    sessions: list[Any] = field(default_factory=list)
    refusal: str | None = None
    """Why a session the run made cannot be recorded or replayed (checked before any
    divergence its requests would show)."""

    def open_session(self, model: Any, make: Any) -> Any:
        if self.record:
            made = make()
            self.recorders.append(ConnectionRecorder(made, str(getattr(model, "model", ""))))
        else:
            assert self.server is not None
            with compat.pointed_at(model, self.server.base_url):
                made = make()
        self.sessions.append(made)
        if self.refusal is None:
            self.refusal = _refusal(made)
        return made


def _refusal(made: Any) -> str | None:
    options = compat.session_options(made)
    version = getattr(options, "api_version", None)
    if getattr(options, "is_azure", False) and version:
        return (
            f"the agent's RealtimeModel is on Azure OpenAI's legacy realtime API "
            f"(api_version={version!r}), which speaks the beta protocol (other event names, a "
            "flat session): its record and replay are not covered. Azure's current realtime "
            "API (with_azure without api_version, and no OPENAI_API_VERSION) speaks OpenAI's "
            "protocol and is recorded and replayed"
        )
    return None


_TAPE: contextvars.ContextVar[_Tape | None] = contextvars.ContextVar(
    "pytest_agent_eval_realtime_tape", default=None
)
"""The run's tape, set in the run's task: the tasks LiveKit starts from it inherit it, so a
session made at a handoff, deep inside a tool call, still finds its run."""


_OPEN_TAPES: list[_Tape] = []
"""The tapes of the runs open in this process (several when runs go concurrently)."""


def _models_of(tape: _Tape) -> list[Any]:
    return [compat.session_model(made) for made in tape.sessions]


def _route_session(model: Any, make: Any) -> Any:
    tape = _TAPE.get()
    return make() if tape is None else tape.open_session(model, make)


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


_PLACEHOLDERS = {
    "OPENAI_API_KEY": "replay-needs-no-key",
    # RealtimeModel.with_azure(...) reads these when not given them, and refuses to be built
    # without; the session it makes is pointed at the loopback server all the same.
    "AZURE_OPENAI_API_KEY": "replay-needs-no-key",
    "AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:9",
}
_placeholder_users = 0
_placed: list[str] = []


@contextlib.contextmanager
def _placeholder_key() -> Iterator[None]:
    """Replay needs no key, but the plugin's model refuses to be built without one: while a
    replaying run is open, a missing ``OPENAI_API_KEY`` (and, for an Azure model, a missing
    ``AZURE_OPENAI_API_KEY`` or ``AZURE_OPENAI_ENDPOINT``) is a placeholder, never sent beyond
    127.0.0.1."""
    global _placeholder_users
    if _placeholder_users == 0:
        _placed[:] = [name for name in _PLACEHOLDERS if name not in os.environ]
        for name in _placed:
            os.environ[name] = _PLACEHOLDERS[name]
    _placeholder_users += 1
    try:
        yield
    finally:
        _placeholder_users -= 1
        if _placeholder_users == 0:
            for name in _placed:
                os.environ.pop(name, None)
            _placed.clear()


class OpenAIRealtimeReplay:
    """Runs an OpenAI realtime agent against its recorded provider session, or records one.

    Args:
        adapter: The `LiveKitAdapter` that runs the agent (its session factory is the user's,
            unchanged).
        cassette_dir: Where cassettes are kept; default: a ``cassettes/`` folder beside each
            transcript's YAML file (``<id>.openai-realtime.json``).
        record: True records live (needs ``OPENAI_API_KEY``; without it the test is skipped,
            never passed), False replays; None (the default) reads ``AGENT_EVAL_REALTIME_RECORD``.

    A recording keeps every run of the transcript; replay run ``i`` answers from recorded run
    ``i % len(runs)``. A run that no longer fits its cassette (another request, a tool the
    recording never saw, more or fewer turns) is an ERROR naming the first divergence; a
    missing, damaged or other-version cassette is an ERROR printing the command that records
    it again.

    Example:
        ```python
        @pytest.fixture
        def llm_eval_agent():
            return OpenAIRealtimeReplay(LiveKitAdapter(make_session))
        ```
    """

    def __init__(
        self,
        adapter: Any,
        *,
        cassette_dir: str | os.PathLike[str] | None = None,
        record: bool | None = None,
    ) -> None:
        if not callable(getattr(adapter, "start_conversation", None)):
            raise TypeError(
                "OpenAIRealtimeReplay wraps an adapter such as LiveKitAdapter(make_session); "
                f"got {type(adapter).__name__}"
            )
        _refuse_room(adapter)
        require_extra("livekit.plugins.openai", extra="realtime", feature="OpenAIRealtimeReplay")
        compat.wrap_session_factory(_route_session)
        self.adapter = adapter
        if getattr(adapter, "clock", "real") is None:  # recorded against the wall's clock
            adapter.clock = "real"  # (no virtual clock for its barge-ins: docs/livekit.md §7)
        self.cassette_dir = Path(cassette_dir) if cassette_dir is not None else None
        self.record = _truthy(os.environ.get(RECORD_ENV)) if record is None else record
        self._cassettes: dict[str, Cassette] = {}
        self._recorded: dict[str, dict[int, list[Connection]]] = {}
        self._writing = threading.Lock()

    with_fixture_hearing = None
    """Not the wrapped adapter's: a twin of it would run without the recording (and, with a
    key set, reach the provider); attribution then says it cannot swap the hearing."""

    def __getattr__(self, name: str) -> Any:
        # consumes_audio, turn_audio, fixture_audio...: what the runner asks of the adapter.
        adapter = self.__dict__.get("adapter")
        if adapter is None:
            raise AttributeError(name)
        return getattr(adapter, name)

    async def prepare(self, transcript: Transcript) -> None:
        """The wrapped adapter's checks, then the cassette's (replay) or the key's (record).

        Raises:
            CassetteError: Replaying, and the cassette is missing, damaged or of other versions.
            pytest.skip.Exception: Recording without ``OPENAI_API_KEY``.
        """
        prepare = getattr(self.adapter, "prepare", None)
        if callable(prepare):
            await prepare(transcript)
        path = cassette_path(transcript, self.cassette_dir)
        if self.record:
            if not os.environ.get("OPENAI_API_KEY"):
                import pytest

                pytest.skip(
                    f"recording the realtime cassette of {transcript.id!r} is a live run against "
                    f"OpenAI and needs OPENAI_API_KEY, which is not set; set it, or unset "
                    f"{RECORD_ENV} to replay {shown_path(path)}"
                )
            self._recorded[transcript.id] = {}
            return
        self._cassettes[transcript.id] = await asyncio.to_thread(load_cassette, transcript, path)

    async def start_conversation(self, info: Any) -> _ReplayConversation:
        """Start the wrapped adapter's conversation with this run's tape in place."""
        transcript: Transcript = info.transcript
        path = cassette_path(transcript, self.cassette_dir)
        tape = _Tape(record=self.record)
        if not self.record:
            cassette = self._cassettes.get(transcript.id)
            if cassette is None:
                cassette = await asyncio.to_thread(load_cassette, transcript, path)
                self._cassettes[transcript.id] = cassette
            recorded_index = info.run_index % len(cassette.runs)
            recorded = cassette.runs[recorded_index]
            problem = reconnect_problem(recorded, recorded_index)
            if problem is not None:
                raise CassetteError(
                    f"transcript {transcript.id!r}: realtime cassette {shown_path(path)}: "
                    f"{problem}: "
                    f"{rerecord_command(transcript)}"
                )
            tape.server = ReplayServer(recorded, sessions_made=lambda: len(tape.sessions))
            await tape.server.start()
        keys = contextlib.ExitStack()
        if not self.record:
            keys.enter_context(_placeholder_key())
        _TAPE.set(tape)
        _OPEN_TAPES.append(tape)
        conversation = _ReplayConversation(self, tape, info, path, keys)
        try:
            conversation.inner = await conversation.guard(
                self.adapter.start_conversation(info), "while the session started"
            )
            conversation.check_model()
        except BaseException:
            # A refused run closes what it opened: the agent's session (its plugin sessions
            # and their websockets) as well as the models' HTTP sessions and the server.
            try:
                if conversation.inner is not None:
                    with contextlib.suppress(Exception):
                        await conversation.inner.aclose()
            finally:
                await conversation.release()
            raise
        return conversation

    def _keep_run(self, transcript: Transcript, run_index: int, tape: _Tape, path: Path) -> None:
        """Add a recorded run that completed to the transcript's cassette and write it (in a
        thread: runs finishing together take turns, so the last write holds every run). The
        write is atomic, and only completed runs get here, so a recording that failed never
        replaces a cassette that worked."""
        with self._writing:
            runs = self._recorded.setdefault(transcript.id, {})
            runs[run_index] = [r.connection for r in tape.recorders]
            cassette = Cassette(
                transcript_id=transcript.id,
                runs=[runs[i] for i in sorted(runs)],
                versions=compat.installed_versions(),
            )
            save_cassette(path, cassette)


def _refuse_room(adapter: Any) -> None:
    """A deployed worker's model runs in the worker's process, beyond this one's reach: its
    sessions cannot be pointed at this process's loopback replay server."""
    if getattr(adapter, "agent_runs_in_worker", False):  # LiveKitRoomAdapter
        raise ConfigError(
            "OpenAIRealtimeReplay cannot replay a cassette into LiveKitRoomAdapter: the "
            "worker's RealtimeModel runs in the worker's own process, which the replay server "
            "of this test process cannot reach into. Replay the agent in process "
            "(OpenAIRealtimeReplay(LiveKitAdapter(make_session))); in room mode, run the "
            "worker on ScriptedRealtimeModel or against the live provider"
        )


class _ReplayConversation:
    """The wrapped conversation, with each step raced against a divergence of the replay."""

    def __init__(
        self,
        owner: OpenAIRealtimeReplay,
        tape: _Tape,
        info: Any,
        path: Path,
        keys: contextlib.ExitStack,
    ) -> None:
        self.owner = owner
        self.tape = tape
        self.info = info
        self.path = path
        self.inner: Any = None
        self._keys = keys
        self._released = False
        self._raised = False
        self._answered = 0
        """Turns answered without an error; a recording is kept only when every turn was."""
        self._failed = False

    def __getattr__(self, name: str) -> Any:
        # greeting(), expect, session...: the wrapped conversation's own.
        inner = self.__dict__.get("inner")
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)

    def _misfit(self, where: str, problem: str) -> CassetteError:
        self._raised = True
        transcript = self.info.transcript
        return CassetteError(
            f"transcript {transcript.id!r}, {where}: the agent no longer fits its realtime "
            f"cassette {shown_path(self.path)}: {problem}; if the change is intended, record "
            "it again (a "
            f"live run, with a key): {rerecord_command(transcript)}"
        )

    async def guard(self, step: Awaitable[_T], where: str) -> _T:
        """``step``, unless the replay diverges first (then a `CassetteError` naming it)."""
        server = self.tape.server
        if server is None:
            return await step
        task = asyncio.ensure_future(step)
        waiter = asyncio.ensure_future(server.diverged.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            waiter.cancel()
            raise
        waiter.cancel()
        if server.divergence is not None:
            task.cancel()
            if self.tape.refusal is not None:  # what made the requests differ
                with contextlib.suppress(BaseException):
                    await task
                self._raised = True
                raise AdapterError(f"transcript {self.info.transcript.id!r}: {self.tape.refusal}")
            with contextlib.suppress(BaseException):
                await task
            raise self._misfit(where, server.divergence)
        return task.result()

    def check_model(self) -> None:
        """A run whose agent made no OpenAI realtime session cannot be recorded or replayed;
        one on semantic turn detection with audio turns is not covered."""
        transcript: Transcript = self.info.transcript
        if not self.tape.sessions:
            model = getattr(getattr(self.inner, "session", None), "llm", None)
            name = f"{type(model).__module__}.{type(model).__qualname__}" if model else "none"
            if "google" in name:
                why = (
                    "Gemini Live goes through the google-genai SDK, not a websocket a loopback "
                    "server can answer; its record and replay are not covered"
                )
            else:
                why = "only livekit.plugins.openai.realtime.RealtimeModel is recorded and replayed"
            raise AdapterError(
                f"transcript {transcript.id!r}: OpenAIRealtimeReplay found no OpenAI realtime "
                f"session in the run (the session's LLM is {name}): {why}; run this agent with "
                "LiveKitAdapter alone"
            )
        if self.tape.refusal is not None:
            raise AdapterError(f"transcript {transcript.id!r}: {self.tape.refusal}")
        if transcript.has_audio:
            for made in self.tape.sessions:
                detection = getattr(compat.session_options(made), "turn_detection", None)
                if getattr(detection, "type", None) == "semantic_vad":
                    raise AdapterError(
                        f"transcript {transcript.id!r} has audio turns and the agent's "
                        "RealtimeModel uses semantic_vad (the default turn detection): the "
                        "server's semantic decision point is in no event, so its replay is "
                        "not covered; give the model turn_detection=TurnDetection("
                        "type='server_vad', ...) or let the session's own VAD take turns"
                    )

    async def respond(self, turn: Any) -> AgentReply:
        try:
            reply: AgentReply = await self.guard(self.inner.respond(turn), f"turn {turn.index + 1}")
        except BaseException:
            self._failed = True
            raise
        server = self.tape.server
        if server is not None and server.divergence is not None:
            self._failed = True
            raise self._misfit(f"turn {turn.index + 1}", server.divergence)
        self._answered += 1
        return reply

    @property
    def completed(self) -> bool:
        """Every turn of the transcript was answered, none with an error."""
        return not self._failed and self._answered == len(self.info.transcript.turns)

    async def release(self) -> None:
        if self._released:
            return
        self._released = True
        for recorder in self.tape.recorders:
            recorder.detach()
        try:
            _OPEN_TAPES[:] = [tape for tape in _OPEN_TAPES if tape is not self.tape]
            in_use = [id(m) for tape in _OPEN_TAPES for m in _models_of(tape)]
            for made in self.tape.sessions:
                # The run's models' own HTTP sessions, unless a run still open shares a model.
                if id(compat.session_model(made)) not in in_use:
                    await compat.close_owned_http_session(made)
            if self.tape.server is not None:
                await self.tape.server.aclose()
        finally:
            self._keys.close()

    async def aclose(self) -> None:
        try:
            if self.inner is not None:
                await self.inner.aclose()
        finally:
            await self.release()
        transcript: Transcript = self.info.transcript
        server = self.tape.server
        if self.tape.record:
            # A run that failed (a turn's error, the provider gone) or stopped early is not a
            # recording: the cassette on disk, if any, stays as it was.
            if self.tape.recorders and self.completed:
                await asyncio.to_thread(
                    self.owner._keep_run, transcript, self.info.run_index, self.tape, self.path
                )
            return
        if server is None or self._raised:
            return
        problem = server.divergence or server.leftover()
        if problem is not None:
            raise self._misfit("at the end of the run", problem)
