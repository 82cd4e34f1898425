"""The bridges between synchronous and async code: one event loop for a pytest session's evals,
blocking agent calls in threads, and a fresh loop for a sync helper called from async code.

Why one loop per session (per xdist worker): an async client made once for the suite (a
session-scoped ``AsyncOpenAI``) binds its connections to the loop it first ran on; if each
eval ran on a loop of its own, every later test would fail with "Event loop is closed". The
session's `SessionLoop` runs every eval, and at the end closes what was opened on it (see
`on_loop_close`) before closing the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import signal
import socket
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["SessionLoop", "call_in_thread", "on_loop_close", "run_sync"]

T = TypeVar("T")

_CLOSERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[Callable[[], Awaitable[Any]]]]
_CLOSERS = weakref.WeakKeyDictionary()


def on_loop_close(closer: Callable[[], Awaitable[Any]]) -> None:
    """Run ``closer()`` on the running loop when its `SessionLoop` closes (a client opened on
    the loop, say). Outside a session loop it is never called; nothing else closes that loop's
    resources either way."""
    loop = asyncio.get_running_loop()
    _CLOSERS.setdefault(loop, []).append(closer)


class SessionLoop:
    """One long-lived event loop for the evals of a session, made on first use.

    Ctrl-C while it runs cancels the eval (adapters close their sessions) and then raises
    `KeyboardInterrupt`; a second Ctrl-C raises at once (`asyncio.Runner`'s behaviour).
    """

    def __init__(self) -> None:
        self._runner: asyncio.Runner | None = None
        self._found: asyncio.AbstractEventLoop | None = None

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` to completion on the session's loop and return its result.

        Called from inside a running loop (a sync helper in async code), it runs on a fresh
        loop in a worker thread instead (`run_sync`), because a loop cannot be re-entered.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            return run_sync(coro)
        if self._runner is None:
            self._found = _current_loop()
            self._runner = asyncio.Runner()
        with _signals_wake(self._runner.get_loop()):
            return self._runner.run(coro)

    def close(self) -> None:
        """Close what was opened on the loop (`on_loop_close`), then the loop itself."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        try:
            gc.collect()  # clients dropped by tests close their connections on this loop
            runner.run(_close_resources(runner.get_loop()))
        finally:
            runner.close()
            found, self._found = self._found, None
            _give_back(found)


@contextlib.contextmanager
def _signals_wake(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """While the main thread runs ``loop``, a signal wakes it.

    The kernel may deliver Ctrl-C's SIGINT to any thread: to a sync agent's thread, say, while
    the main thread waits in the loop's selector for that agent and nothing else. Python runs
    the handler (the runner's: cancel the eval) only in the main thread, when it next runs;
    woken by nothing, it never would, and the first Ctrl-C was lost (a session that hung).
    Python's wakeup fd, read by the loop, wakes it. Left alone when one is set already (an
    ``add_signal_handler`` of the user's), or off the main thread (no handler runs there).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    reader, writer = socket.socketpair()
    with reader, writer:
        reader.setblocking(False)
        writer.setblocking(False)
        previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        if previous != -1:  # one set already wakes the loop it was set for: left as it was
            signal.set_wakeup_fd(previous)
            yield
            return
        loop.add_reader(reader.fileno(), _drain, reader)
        try:
            yield
        finally:
            signal.set_wakeup_fd(previous)
            loop.remove_reader(reader.fileno())


def _drain(reader: socket.socket) -> None:
    """Empty the wakeup socket (what woke the loop is the signal, not the bytes)."""
    with contextlib.suppress(OSError):
        while reader.recv(4096):
            pass


def _current_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop set as this thread's current one and not running, if any, read without
    making one (``asyncio.get_event_loop()`` would make one on the main thread).

    Such a loop is often made implicitly: LiveKit's ``AgentSession()`` built outside a running
    loop takes ``asyncio.get_event_loop()``, which makes a loop and sets it as current. A
    ``Runner`` (ours, or ``asyncio.run``) sets its own loop in its place and, on closing,
    none: the loop it replaced is dropped, never closed, and the garbage collector reports it
    as "unclosed event loop" (an error under ``-W error``). `_give_back` puts it back.
    """
    # The policy as asyncio keeps it: asking for it would make one (and warn from 3.14 on).
    policy = getattr(asyncio.events, "_event_loop_policy", None)
    local = getattr(policy, "_local", None)
    loop = getattr(local, "_loop", None)
    if not isinstance(loop, asyncio.AbstractEventLoop) or loop.is_running():
        return None
    return loop


def _give_back(found: asyncio.AbstractEventLoop | None) -> None:
    """Make ``found`` the current loop again, as it was before a runner took its place (see
    `_current_loop`); its maker closes it, or not, as before."""
    if found is not None and not found.is_closed() and _current_loop() is None:
        asyncio.set_event_loop(found)


async def _close_resources(loop: asyncio.AbstractEventLoop) -> None:
    for closer in _CLOSERS.pop(loop, []):
        try:
            await closer()
        except Exception:  # closing is best effort: a failure must not fail the session
            continue
    await asyncio.sleep(0)  # let transports closed above run their callbacks


async def call_in_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a new daemon thread, awaited without blocking the loop.

    Not the loop's default executor: a call that never returns is abandoned when the awaiting
    task is cancelled (a turn timeout, Ctrl-C), and a daemon thread keeps neither the loop's
    shutdown nor the interpreter's exit waiting for it. Any exception, `SystemExit` included,
    is raised in the awaiting task.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[tuple[bool, Any]] = loop.create_future()
    context = contextvars.copy_context()

    def deliver(outcome: tuple[bool, Any]) -> None:
        if not future.done():
            future.set_result(outcome)

    def target() -> None:
        try:
            outcome: tuple[bool, Any] = (True, context.run(fn, *args))
        except BaseException as exc:  # re-raised in the awaiting task
            outcome = (False, exc)
        # A closed loop raises RuntimeError: nobody waits for this call any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(deliver, outcome)

    threading.Thread(target=target, name="agent-eval-sync-call", daemon=True).start()
    ok, value = await future
    if ok:
        return value  # type: ignore[no-any-return]
    raise value


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from synchronous code and return its result.

    With no event loop running in this thread, a fresh loop runs it (and is closed after, so
    nothing leaks from one call into the next). Inside a running loop (a sync helper called
    from async code), it runs on a fresh loop in a worker thread instead, because a loop
    cannot be re-entered. Ctrl-C cancels the coroutine, so adapters close their sessions.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    if not running:
        # Outside the except block, so a failure is not chained to "no running event loop".
        found = _current_loop()
        try:
            with asyncio.Runner() as runner, _signals_wake(runner.get_loop()):
                return runner.run(coro)
        finally:
            _give_back(found)

    outcome: dict[str, Any] = {}

    async def main() -> T:
        outcome["loop"] = asyncio.get_running_loop()
        outcome["task"] = asyncio.current_task()
        return await coro

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(main())
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="agent-eval-run", daemon=True)
    thread.start()
    try:
        thread.join()
    except BaseException:
        # Ctrl-C lands here, in the caller's thread: cancel the coroutine on its own loop so
        # adapters close their sessions, wait for that, then let the interrupt through.
        loop, task = outcome.get("loop"), outcome.get("task")
        if loop is not None and task is not None:
            loop.call_soon_threadsafe(task.cancel)
        thread.join()
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]
