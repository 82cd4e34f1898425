"""The clock a Pipecat pipeline runs on: real time, or a virtual one that jumps when idle.

Pipecat times a conversation with the wall clock in many places: the user-turn stop timeouts
(``asyncio.sleep``/``wait_for``), the smart-turn analyzer's audio buffer (``time.monotonic``),
the bot-speaking state of the output transport and the VAD frames' ``timestamp``
(``time.time``). Pushing audio faster than real time on the real clock changes what those
timers decide (turns merge, the analyzer hears other audio, watchdogs end turns). So a
pipeline at max speed runs on a clock of its own, in a thread of its own:

- **Its event loop** (`PipelineLoop`) reads the loop time from `PipelineClock`. When nothing is
  runnable (no callback ready, no socket event, no executor job running), the virtual clock jumps
  to the next timer instead of sleeping: every ``sleep``, ``wait_for`` and ``call_later`` takes
  its full length in the pipeline's time and none of the wall's. Work in an executor counts as
  taking no time: the clock stands still until it finishes. Work known to be pure computation
  (the ``inline`` predicate: Silero and smart-turn inference, the offline STT and TTS) runs on
  the loop's own thread instead, which costs no thread hand-off.
- **``time.time`` and ``time.monotonic``** (and their ``_ns`` forms) answer from the clock of
  the thread that calls them (`pytest_agent_eval.voice._timeshim`), so Pipecat's direct reads agree
  with its loop; threads without a clock read the real one. ``time.perf_counter`` stays real
  (it measures compute, which is what it is for), unless the clock is made with ``perf=True``:
  then it follows the clock too on the loop's thread (not in the executor's workers, which
  compute), for a framework and an adapter that time turns with it (LiveKit's virtual clock).
- **Between turns the clock is held**: nothing is due in the pipeline while the test decides
  what to say next, however long that takes on the wall.
- **Idle hooks** run whenever the loop has nothing runnable: the moment at which nothing more can
  happen until a timer fires. The adapter decides there whether the bot is done with a turn, so
  the decision never waits a fixed time and never comes while a frame is still on its way.

At a real-time speed (``rate=1.0``) the loop uses the real clock; other rates scale it. The
idle hooks work the same way at every rate.

Nothing here imports Pipecat: the clock is framework-neutral.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import math
import selectors
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

from ..errors import AdapterError, AgentEvalError
from ._timeshim import bind, real_monotonic, real_time, unbind

__all__ = [
    "NetworkRefusedError",
    "PipelineClock",
    "PipelineLoop",
    "PipelineThread",
]

T = TypeVar("T")

_REAL_MONOTONIC = real_monotonic


class NetworkRefusedError(AgentEvalError, ConnectionRefusedError):
    """A pipeline running offline tried to open a network connection: our refusal (an
    `AgentEvalError`), and a ``ConnectionRefusedError`` to the client code that made it."""


class PipelineClock:
    """The time of one pipeline: virtual (jumping when idle) or real, possibly scaled.

    Args:
        rate: None for the virtual clock that jumps to the next timer whenever the loop is idle
            (max speed); otherwise how many pipeline seconds pass per wall second (1.0 is real
            time).
        perf: ``time.perf_counter()`` on the clock's threads answers `perf_counter` (it stays
            real without), and neither it nor ``time.time()`` gives the same value twice.
    """

    def __init__(self, *, rate: float | None, perf: bool = False) -> None:
        if rate is not None and rate <= 0:
            raise ValueError(f"PipelineClock: rate must be > 0 or None, got {rate}")
        self.rate = rate
        self.perf = perf
        self._perf_last = 0.0
        self._wall_last = 0.0
        self._mono0 = real_monotonic()
        self._wall0 = real_time()
        self._jumped = 0.0
        self._held = False
        self.jobs = 0
        """Executor jobs running: the virtual clock stands still while any is."""
        self._idle_hooks: list[Callable[[], bool]] = []
        self._threads: set[int] = set()
        self._base_fds = 1
        self.network_attempts: list[str] = []
        """``host:port`` of each connection the pipeline tried to open while offline."""

    # -- reading ------------------------------------------------------------------------

    def elapsed(self) -> float:
        """Pipeline seconds since the clock was made."""
        if self.rate is None:
            return self._jumped
        return (_REAL_MONOTONIC() - self._mono0) * self.rate

    def monotonic(self) -> float:
        """The pipeline's ``time.monotonic()`` (and its event loop's time)."""
        if self.rate is None:  # read for every frame: the common case inline
            return self._mono0 + self._jumped
        return self._mono0 + self.elapsed()

    def perf_counter(self) -> float:
        """The pipeline's ``time.perf_counter()`` (with ``perf``): `monotonic`, except that two
        reads never give the same value (a read at the same instant as the one before gives the
        next float after it), so code that divides by a duration it timed (tokens per second)
        never divides by zero."""
        now = self.monotonic()
        if now <= self._perf_last:
            now = math.nextafter(self._perf_last, math.inf)
        self._perf_last = now
        return now

    def wall(self) -> float:
        """The pipeline's ``time.time()``; with ``perf``, never the same value twice (as
        `perf_counter`): a framework that orders what it records by its ``time.time()`` stamp
        (LiveKit's chat history) keeps the order it recorded things in."""
        if self.rate is None and not self.perf:  # read for every frame: the common case inline
            return self._wall0 + self._jumped
        now = self._wall0 + self.elapsed()
        if self.perf:
            if now <= self._wall_last:
                now = math.nextafter(self._wall_last, math.inf)
            self._wall_last = now
        return now

    @property
    def virtual(self) -> bool:
        """True for the clock that jumps when idle (max speed)."""
        return self.rate is None

    # -- control ------------------------------------------------------------------------

    def hold(self) -> None:
        """Stop the virtual clock from jumping (between turns); no effect on a real clock."""
        self._held = True

    def release(self) -> None:
        """Let the virtual clock jump again."""
        self._held = False

    def add_idle_hook(self, hook: Callable[[], bool]) -> None:
        """Call ``hook()`` each time the loop has nothing runnable; it returns True when it
        scheduled something (the loop then runs it before deciding anything else)."""
        self._idle_hooks.append(hook)

    def remove_idle_hook(self, hook: Callable[[], bool]) -> None:
        """Stop calling ``hook``."""
        with contextlib.suppress(ValueError):
            self._idle_hooks.remove(hook)

    def bind_thread(self, *, perf: bool = True) -> None:
        """Make the calling thread read this clock (its ``perf_counter`` too, with ``perf`` on
        both sides)."""
        self._threads.add(bind(self, perf=perf))

    def unbind_threads(self) -> None:
        """Every thread bound to this clock reads the real clock again."""
        for ident in self._threads:
            unbind(ident, self)
        self._threads.clear()

    # -- the loop's select ------------------------------------------------------------------

    def _idle(self) -> bool:
        acted = False
        for hook in list(self._idle_hooks):
            acted = hook() or acted
        return acted

    def select(
        self,
        real_select: Callable[[float | None], list[Any]],
        timeout: float | None,
        registered: int,
    ) -> list[Any]:
        """What the loop's selector does: ``timeout`` is pipeline seconds to the next timer
        (None: no timer), ``registered`` the number of file objects the selector watches."""
        if timeout is not None and timeout <= 0:
            return real_select(0)
        events = real_select(0)
        if events:
            return events
        if not self.jobs and self._idle():
            return []
        if self.rate is not None:
            return real_select(None if timeout is None else timeout / self.rate)
        if self.jobs or self._held or timeout is None:
            # Waiting for an executor job, a message from outside or a turn to start: the
            # self-pipe wakes the loop; the pipeline's time does not move meanwhile.
            return real_select(None)
        if registered > self._base_fds:
            # A socket is open (network allowed): time runs as on the wall while it is.
            started = _REAL_MONOTONIC()
            events = real_select(timeout)
            self._jumped += min(timeout, _REAL_MONOTONIC() - started)
            return events
        self._jumped += timeout
        return []

    def _job_done(self, _: Any) -> None:
        self.jobs -= 1


class _ClockSelector(selectors.DefaultSelector):
    clock: PipelineClock

    def select(self, timeout: float | None = None) -> list[Any]:
        return self.clock.select(super().select, timeout, len(self.get_map()))


class PipelineLoop(asyncio.SelectorEventLoop):
    """An event loop on a `PipelineClock`, refusing network connections unless allowed."""

    def __init__(
        self,
        clock: PipelineClock,
        *,
        allow_network: bool = False,
        inline: Callable[[Callable[..., Any], tuple[Any, ...]], bool] | None = None,
    ) -> None:
        selector = _ClockSelector()
        selector.clock = clock
        super().__init__(selector)
        self.clock = clock
        self.allow_network = allow_network
        self._inline = inline
        clock._base_fds = len(selector.get_map())

    def time(self) -> float:
        # What time.monotonic() answers on the loop's thread, without the per-thread lookup.
        return self.clock.monotonic()

    def run_in_executor(  # type: ignore[override]
        self, executor: Any, func: Callable[..., T], *args: Any
    ) -> asyncio.Future[T]:
        if self.clock.virtual and self._inline is not None and self._inline(func, args):
            # Pure computation on a virtual clock: it takes no pipeline time wherever it runs,
            # and here it costs no thread hand-off and races nothing.
            done = self.create_future()
            try:
                done.set_result(func(*args))
            except BaseException as exc:  # handed to whoever awaits it, as the executor would
                done.set_exception(exc)
            return done
        future = super().run_in_executor(executor, func, *args)
        self.clock.jobs += 1
        future.add_done_callback(self.clock._job_done)
        return future

    def _refuse(self, host: Any, port: Any) -> NetworkRefusedError:
        if isinstance(host, bytes | bytearray):
            host = host.decode(errors="replace")
        where = f"{host}:{port}" if port is not None else str(host)
        if where not in self.clock.network_attempts:
            self.clock.network_attempts.append(where)
        return NetworkRefusedError(
            f"pytest-agent-eval runs the pipeline offline: the connection to {where} was "
            "refused (PipecatAdapter(allow_network=True) permits it)"
        )

    async def getaddrinfo(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if not self.allow_network:
            raise self._refuse(host, port)
        return await super().getaddrinfo(host, port, *args, **kwargs)

    async def create_connection(
        self, protocol_factory: Any, host: Any = None, port: Any = None, *args: Any, **kwargs: Any
    ) -> Any:
        if not self.allow_network:
            sock = kwargs.get("sock")
            raise self._refuse(host if sock is None else _peer(sock), port)
        return await super().create_connection(protocol_factory, host, port, *args, **kwargs)

    async def sock_connect(self, sock: Any, address: Any) -> None:
        if not self.allow_network:
            raise self._refuse(*(address if isinstance(address, tuple) else (address, None))[:2])
        await super().sock_connect(sock, address)

    async def create_datagram_endpoint(
        self, protocol_factory: Any, local_addr: Any = None, remote_addr: Any = None, **kw: Any
    ) -> Any:
        if not self.allow_network and remote_addr is not None:
            raise self._refuse(*remote_addr[:2])
        return await super().create_datagram_endpoint(
            protocol_factory, local_addr=local_addr, remote_addr=remote_addr, **kw
        )

    async def create_unix_connection(
        self, protocol_factory: Any, path: Any = None, **kwargs: Any
    ) -> Any:
        if not self.allow_network:
            raise self._refuse(path, None)
        return await super().create_unix_connection(protocol_factory, path, **kwargs)


def _peer(sock: Any) -> str:
    try:
        return str(sock.getpeername())
    except OSError:
        return "a socket"


class PipelineThread:
    """A thread running a `PipelineLoop` on ``clock``; coroutines are handed to it from other
    loops with `run`. Its executor's workers read the same clock.

    Args:
        clock: The pipeline's clock.
        name: The thread's name (shows in tracebacks and ``threading.enumerate()``).
        allow_network: Let the pipeline open network connections.
    """

    def __init__(
        self,
        clock: PipelineClock,
        *,
        name: str,
        allow_network: bool = False,
        inline: Callable[[Callable[..., Any], tuple[Any, ...]], bool] | None = None,
    ) -> None:
        self.clock = clock
        self._allow_network = allow_network
        self._inline = inline
        self._started = threading.Event()
        self._loop: PipelineLoop | None = None
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()
        self._started.wait()

    @property
    def loop(self) -> PipelineLoop:
        """The pipeline's event loop."""
        assert self._loop is not None
        return self._loop

    def _main(self) -> None:
        clock = self.clock
        clock.bind_thread()
        loop = PipelineLoop(clock, allow_network=self._allow_network, inline=self._inline)
        loop.set_default_executor(
            concurrent.futures.ThreadPoolExecutor(
                max_workers=4,
                thread_name_prefix=self._thread.name,
                # Workers compute: their perf_counter stays real (Whisper times its decode).
                initializer=functools.partial(clock.bind_thread, perf=False),
            )
        )
        asyncio.set_event_loop(loop)
        self._loop = loop
        self._started.set()
        try:
            loop.run_forever()
        finally:
            try:
                _cancel_remaining(loop)
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                asyncio.set_event_loop(None)
                loop.close()
                clock.unbind_threads()

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the pipeline's loop and return its result; cancelling the caller
        cancels it there."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return await asyncio.wrap_future(future)

    def call(self, fn: Callable[[], Any]) -> None:
        """Call ``fn()`` on the pipeline's loop, soon."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(fn)

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Stop the loop (cancelling what still runs on it) and wait for the thread; False
        when it did not finish within ``timeout_s`` (something blocks the loop)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    @contextlib.asynccontextmanager
    async def stopped_after(self, timeout_s: float = 10.0) -> AsyncIterator[None]:
        """Stop the thread (from another loop) when the block ends.

        Raises:
            AdapterError: The block ended normally but the thread did not finish within
                ``timeout_s``: something blocks its loop and the agent's code may still run
                there, so the run cannot count. When the block raised, its exception is what
                the run reports, and a thread that does not stop adds nothing to it.
        """
        try:
            yield
        except BaseException:
            await asyncio.to_thread(self.stop, timeout_s)
            raise
        if not await asyncio.to_thread(self.stop, timeout_s):
            raise AdapterError(
                f"the thread {self._thread.name!r} did not finish within {timeout_s:g} s of being "
                "stopped: something blocks its event loop (code computing without yielding, a "
                "blocking call such as time.sleep or a lock), and the agent's code may still run "
                "there, so this run could not be evaluated cleanly; make that code await (or "
                "run it in asyncio.to_thread)"
            )


def _cancel_remaining(loop: asyncio.AbstractEventLoop) -> None:
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    if not tasks:
        return
    for task in tasks:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
