"""Where a session's CPU goes, by component: VAD, turn detection, STT, LLM, TTS, the agent's own
code, the framework's own work, and ours.

Two hooks time the code that runs on a thread's behalf with ``time.thread_time`` (that thread's
CPU, exact): every event-loop callback (``asyncio.Handle._run``: a task's step, a transport's
callback), on whichever thread its loop runs (LiveKit's sessions on the command's loop, each
Pipecat pipeline on its own thread), and every thread-pool work item
(``concurrent.futures.thread._WorkItem.run``: ``run_in_executor``, ``asyncio.to_thread``, where
both frameworks run their Silero VAD and Pipecat its smart-turn model). Nested ones (a loop run
inside a work item) count once, in the innermost.

Who a callback's CPU belongs to:

- while it runs, a sampler thread looks at the thread's Python stack every ``interval_s``
  (``sys._current_frames``); a callback seen at least once splits its CPU over what the samples
  saw (a busy tool, a slow ``process_frame``);
- a shorter one goes to its task's coroutine chain as its first short step left it (read once
  per task), from the innermost coroutine outwards: the first frame whose ``self`` (or whose
  code's class) is a component names it; else the first frame of framework, agent or our code.
  Locals are never read (``f_locals`` would keep them alive): ``self`` is found among what the
  coroutine refers to, and the sampler keeps no frame past its look.

A frame is the VAD's, STT's, LLM's, TTS's or turn detection's when its class derives from that
component's base class in LiveKit or Pipecat (our stand-ins too: ``ScriptedLLM`` counts as the
LLM) or its module is the framework's plugin for it (``livekit.plugins.silero``); the agent's
when its module is neither the framework's, ours, the standard library's nor an installed
package's (the user's tools and processors); the framework's for the rest of LiveKit and
Pipecat; ours for this package's own code (the adapters, the fixtures streamed in, the probe).

What it cannot see goes to ``unattributed``: the process's CPU (``time.process_time``) minus
what the hooks timed. That is native threads with no Python stack (onnxruntime's own pools, LiveKit's Rust
media threads), the loops' own polling between callbacks, and threads that run neither a loop
nor a thread pool. A short callback that does two components' work is all its chain's first.
"""

from __future__ import annotations

import asyncio
import concurrent.futures.thread as _futures_thread
import functools
import gc
import sys
import sysconfig
import threading
import time
import types
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["COMPONENTS", "ComponentMeter", "classify_type"]

COMPONENTS = (
    "vad",
    "turn",
    "stt",
    "llm",
    "tts",
    "agent",
    "framework",
    "ours",
    "other",
    "unattributed",
)
"""The components CPU is attributed to, in report order."""

_BASES: dict[str, tuple[tuple[str, str], ...]] = {
    "vad": (
        ("livekit.agents.vad", "VAD"),
        ("livekit.agents.vad", "VADStream"),
        ("pipecat.audio.vad.vad_analyzer", "VADAnalyzer"),
    ),
    "turn": (("pipecat.audio.turn.base_turn_analyzer", "BaseTurnAnalyzer"),),
    "stt": (
        ("livekit.agents.stt", "STT"),
        ("livekit.agents.stt", "SpeechStream"),
        ("pipecat.services.stt_service", "STTService"),
    ),
    "llm": (
        ("livekit.agents.llm", "LLM"),
        ("livekit.agents.llm", "LLMStream"),
        ("livekit.agents.llm", "RealtimeSession"),
        ("pipecat.services.llm_service", "LLMService"),
    ),
    "tts": (
        ("livekit.agents.tts", "TTS"),
        ("livekit.agents.tts", "SynthesizeStream"),
        ("livekit.agents.tts", "ChunkedStream"),
        ("pipecat.services.tts_service", "TTSService"),
    ),
}
"""Each component's base classes, by module and name (looked up only once imported)."""

_PLUGINS = (
    ("livekit.plugins.silero", "vad"),
    ("livekit.plugins.turn_detector", "turn"),
    ("pipecat.audio.vad", "vad"),
    ("pipecat.audio.turn", "turn"),
    ("livekit", "framework"),
    ("pipecat", "framework"),
    ("pytest_agent_eval", "ours"),
)
"""Module prefixes and their component, the first match wins."""

_INSTALLED = tuple(
    {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
)


def _bases() -> dict[str, tuple[type, ...]]:
    found: dict[str, tuple[type, ...]] = {}
    for component, names in _BASES.items():
        classes = []
        for module, name in names:
            cls = getattr(sys.modules.get(module), name, None)
            if isinstance(cls, type):
                classes.append(cls)
        found[component] = tuple(classes)
    return found


def _module_component(module: str | None, filename: str) -> str | None:
    """The component a module's code is, None for the standard library and installed packages
    (they work for whoever called them)."""
    for prefix, component in _PLUGINS:
        if module is not None and (module == prefix or module.startswith(prefix + ".")):
            return component
    if module is None:
        for part, component in (
            ("/livekit/", "framework"),
            ("/pipecat/", "framework"),
            ("/pytest_agent_eval/", "ours"),
        ):
            if part in filename:
                return component
    if filename.startswith("<") or filename.startswith(_INSTALLED):
        return None
    return "agent"


class _Classifier:
    """Classifies types and code objects, caching both (the bases are read once per meter)."""

    def __init__(self) -> None:
        self.bases = _bases()
        self.types: dict[type, str | None] = {}
        self.codes: dict[types.CodeType, str | None] = {}
        self.tasks: weakref.WeakKeyDictionary[asyncio.Task[Any], str | None] = (
            weakref.WeakKeyDictionary()
        )

    def of_type(self, cls: type) -> str | None:
        try:
            return self.types[cls]
        except KeyError:
            pass
        found: str | None = None
        for component, bases in self.bases.items():
            if bases and issubclass(cls, bases):
                found = component
                break
        if found is None:
            module = sys.modules.get(cls.__module__)
            found = _module_component(cls.__module__, getattr(module, "__file__", None) or "<>")
        self.types[cls] = found
        return found

    def of_code(self, code: types.CodeType, module: str | None) -> str | None:
        try:
            return self.codes[code]
        except KeyError:
            pass
        found: str | None = None
        owner = getattr(sys.modules.get(module or ""), code.co_qualname.split(".")[0], None)
        if isinstance(owner, type):
            found = self.of_type(owner)
        if found is None:
            found = _module_component(module, code.co_filename)
        self.codes[code] = found
        return found

    def of_stack(self, codes: list[tuple[types.CodeType, str | None]]) -> str:
        """A running thread's stack as (code, module), innermost first."""
        for code, module in codes:
            found = self.of_code(code, module)
            if found is not None:
                return found
        return "other"

    def of_callable(self, fn: Any) -> str | None:
        while isinstance(fn, functools.partial):
            fn = fn.args[0] if fn.func.__name__ == "run" and fn.args else fn.func
        owner = getattr(fn, "__self__", None)
        if owner is not None and not isinstance(owner, types.ModuleType):
            if isinstance(owner, asyncio.Task):
                try:  # a task keeps its component: read once, not at each of its steps
                    return self.tasks[owner]
                except KeyError:
                    found = self.tasks[owner] = self.of_task(owner)
                    return found
            found = self.of_type(type(owner))
            if found is not None:
                return found
        code = getattr(getattr(fn, "__func__", fn), "__code__", None)
        if isinstance(code, types.CodeType):
            return self.of_code(code, getattr(fn, "__module__", None))
        return self.of_type(type(fn)) if not isinstance(fn, types.BuiltinFunctionType) else None

    def of_task(self, task: asyncio.Task[Any]) -> str | None:
        chain = list(_chain(task.get_coro()))
        for coro in reversed(chain):  # innermost first
            frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
            if frame is not None:
                module = frame.f_globals.get("__name__")
                owner = _instance_of(coro, frame, module)
                if owner is not None:
                    found = self.of_type(type(owner))
                    if found is not None and found != "framework":
                        return found
                found = self.of_code(frame.f_code, module)
            else:
                code = getattr(coro, "cr_code", None) or getattr(coro, "gi_code", None)
                found = self.of_code(code, None) if isinstance(code, types.CodeType) else None
            if found is not None:
                return found
        return None


def _instance_of(coro: Any, frame: types.FrameType, module: str | None) -> Any:
    """The instance a method's suspended coroutine runs for (its ``self``), read from what the
    coroutine refers to: ``frame.f_locals`` would copy every local into a dict that outlives the step and
    keeps, say, a memoryview alive (Pipecat then cannot resize its buffer)."""
    owner = getattr(sys.modules.get(module or ""), frame.f_code.co_qualname.split(".")[0], None)
    if not isinstance(owner, type):
        return None
    for referent in gc.get_referents(coro):  # its code, name, frame, function, then locals
        if isinstance(referent, owner):
            return referent
    return None


def _chain(coro: Any) -> Iterator[Any]:
    """A coroutine and what it awaits, outermost first."""
    for _ in range(64):
        if coro is None or (not hasattr(coro, "cr_code") and not hasattr(coro, "gi_code")):
            return
        yield coro
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)


def classify_type(cls: type) -> str | None:
    """The component instances of ``cls`` are (None: the standard library's or a package's)."""
    return _Classifier().of_type(cls)


class _Timed:
    __slots__ = ("child", "hint", "samples", "start")

    def __init__(self, hint: Callable[[], str | None]) -> None:
        self.start = time.thread_time()
        self.child = 0.0
        self.hint = hint
        self.samples: Counter[str] = Counter()


class ComponentMeter:
    """CPU seconds by component while it runs (`start` .. `stop`), in this process."""

    _active: ComponentMeter | None = None

    def __init__(self, interval_s: float = 0.02) -> None:
        self.interval_s = interval_s
        self._local = threading.local()
        self._open: dict[int, _Timed] = {}
        self._totals: list[dict[str, float]] = []
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        self._classify = _Classifier()
        self._cpu_start = 0.0
        self._originals: tuple[Any, Any] | None = None

    def _counter(self) -> dict[str, float]:
        counter: dict[str, float] | None = getattr(self._local, "counter", None)
        if counter is None:
            counter = self._local.counter = {}
            self._local.stack = []
            self._totals.append(counter)
        return counter

    def _enter(self, hint: Callable[[], str | None]) -> _Timed:
        self._counter()
        span = _Timed(hint)
        self._local.stack.append(span)
        self._open[threading.get_ident()] = span
        return span

    def _exit(self, span: _Timed) -> None:
        elapsed = time.thread_time() - span.start
        stack: list[_Timed] = self._local.stack
        stack.pop()
        ident = threading.get_ident()
        if stack:
            stack[-1].child += elapsed
            self._open[ident] = stack[-1]
        else:
            self._open.pop(ident, None)
        own = elapsed - span.child
        counter = self._counter()
        seen = sum(span.samples.values())
        if seen:
            for component, count in span.samples.items():
                counter[component] = counter.get(component, 0.0) + own * count / seen
        else:
            try:
                found = span.hint()
            except Exception:  # a hint that cannot be read is no reason to break the agent
                found = None
            counter[found or "framework"] = counter.get(found or "framework", 0.0) + own

    def _stacks(self) -> list[tuple[_Timed, list[tuple[types.CodeType, str | None]]]]:
        """The code on each open span's thread, innermost first. No frame outlives this call:
        a frame object held while its function returns keeps that function's locals alive (a
        memoryview then stops Pipecat resizing its audio buffer)."""
        frames = sys._current_frames()
        found = []
        for ident, span in list(self._open.items()):
            frame = frames.get(ident)
            codes: list[tuple[types.CodeType, str | None]] = []
            while frame is not None and len(codes) < 32:
                codes.append((frame.f_code, frame.f_globals.get("__name__")))
                frame = frame.f_back
            found.append((span, codes))
        frame = None
        frames.clear()
        return found

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            for span, codes in self._stacks():
                if codes:
                    span.samples[self._classify.of_stack(codes)] += 1
        sampler = self._counter()
        sampler["ours"] = sampler.get("ours", 0.0) + time.thread_time()

    def start(self) -> None:
        """Install the hooks and start the sampler; one meter at a time."""
        if ComponentMeter._active is not None:
            raise RuntimeError("a ComponentMeter is already running")
        ComponentMeter._active = self
        self._classify = _Classifier()
        meter = self
        handle_run = asyncio.events.Handle._run
        work_run = _futures_thread._WorkItem.run

        def timed_handle(handle: asyncio.events.Handle) -> None:
            callback = handle._callback  # type: ignore[attr-defined]
            span = meter._enter(lambda: meter._classify.of_callable(callback))
            try:
                handle_run(handle)
            finally:
                meter._exit(span)

        def timed_work(item: Any) -> None:
            fn = item.fn
            span = meter._enter(lambda: meter._classify.of_callable(fn))
            try:
                work_run(item)
            finally:
                meter._exit(span)

        self._originals = (handle_run, work_run)
        setattr(asyncio.events.Handle, "_run", timed_handle)  # noqa: B010
        setattr(_futures_thread._WorkItem, "run", timed_work)  # noqa: B010
        self._cpu_start = time.process_time()
        self._stop.clear()
        self._sampler = threading.Thread(
            target=self._sample, name="agent-eval-capacity-components", daemon=True
        )
        self._sampler.start()

    def stop(self) -> dict[str, float]:
        """Remove the hooks; CPU seconds by component since `start`, ``unattributed`` the
        process's CPU the hooks did not time."""
        cpu = time.process_time() - self._cpu_start
        if self._originals is not None:
            setattr(asyncio.events.Handle, "_run", self._originals[0])  # noqa: B010
            setattr(_futures_thread._WorkItem, "run", self._originals[1])  # noqa: B010
            self._originals = None
        self._stop.set()
        if self._sampler is not None:
            self._sampler.join()
            self._sampler = None
        ComponentMeter._active = None
        total: dict[str, float] = {}
        for counter in list(self._totals):
            for name, seconds in list(counter.items()):
                total[name] = total.get(name, 0.0) + seconds
        total["unattributed"] = max(0.0, cpu - sum(total.values()))
        return {name: round(total[name], 4) for name in COMPONENTS if total.get(name, 0.0) > 0}
