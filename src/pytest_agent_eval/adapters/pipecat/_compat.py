"""Every fact about Pipecat the adapter relies on beyond its documented surface, in one place.

Each function is named for what it gives and fails loudly, naming the Pipecat version, when a
release moves what it reads: a turn then errors saying so instead of ending early or hanging.
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import functools
import importlib
import importlib.metadata
import importlib.util
import sys
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from ...errors import AdapterError
from ...voice._timeshim import is_time_shim

__all__ = [
    "SUPPORTED",
    "check_pipecat",
    "flows_packages",
    "pipecat_version",
    "processors_of",
    "pure_work",
    "replace_processor",
    "tap_observer",
    "user_turn_controller",
    "watch_flows",
]

SUPPORTED = ">=1.14,<2"
"""The pipecat-ai releases this adapter is written and tested against."""

_LOWEST = (1, 14)
_BELOW = (2, 0)


def pipecat_version() -> str:
    """The installed pipecat-ai version ("" when it cannot be read)."""
    try:
        return importlib.metadata.version("pipecat-ai")
    except importlib.metadata.PackageNotFoundError:
        return ""


def _release(version: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in version.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def check_pipecat(version: str | None = None) -> None:
    """Raise when the installed Pipecat cannot be driven: a release outside `SUPPORTED`, or
    one imported before pytest-agent-eval's clock was in place.

    Raises:
        AdapterError: Saying which, and the fix.
    """
    version = pipecat_version() if version is None else version
    if not version or not (_LOWEST <= _release(version) < _BELOW):
        raise AdapterError(
            f"pipecat-ai {version or '(not installed)'} is outside the range PipecatAdapter "
            f"supports ({SUPPORTED}): install a supported release with "
            f"pip install 'pipecat-ai{SUPPORTED}' (or pip install 'pytest-agent-eval[pipecat]')"
        )
    frames = importlib.import_module("pipecat.frames.frames")
    stamped = frames.VADUserStoppedSpeakingFrame
    factory = next(
        (f.default_factory for f in dataclasses.fields(stamped) if f.name == "timestamp"), None
    )
    if factory is None:
        raise AdapterError(
            f"pipecat-ai {version} has no VADUserStoppedSpeakingFrame.timestamp, which "
            "pytest-agent-eval reads to keep the VAD's clock; this release is not supported"
        )
    if not is_time_shim(factory):
        raise AdapterError(
            "pipecat was imported before pytest-agent-eval could give it its clock (Pipecat "
            "keeps time.time at import, to stamp VAD frames), so at max speed the VAD and the "
            "turn analyzer would disagree on the time. Under pytest this is done for you when "
            "the plugin loads; elsewhere import pytest_agent_eval.adapters.pipecat before "
            "anything from pipecat"
        )


def processors_of(root: Any) -> Iterator[Any]:
    """Every processor in ``root`` (a pipeline, processor or list), depth first, nested
    pipelines included."""
    seen: set[int] = set()
    stack = list(root) if isinstance(root, list | tuple) else [root]
    stack.reverse()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        children = getattr(node, "processors", None)
        if isinstance(children, list | tuple):
            stack.extend(reversed(children))


# -- observing a pipeline ---------------------------------------------------------------------


def tap_observer(
    observer: Any, on_push: Callable[[Any], None], on_process: Callable[[Any], None]
) -> None:
    """Have the pipeline's observer (the worker's ``WorkerObserver``, which every processor
    reports each push and each processed frame to) call ``on_push(FramePushed)`` and
    ``on_process(FrameProcessed)`` at once, in the processor's own call, before its proxies.

    An observer added with ``worker.add_observer`` sees frames later, from a queue of its own
    per observer; reading them in the pushing call costs nothing extra and keeps the time of
    each frame exact, in real time as at max speed.

    Raises:
        AdapterError: The observer has no ``on_push_frame``/``on_process_frame`` to wrap.
    """
    push = getattr(observer, "on_push_frame", None)
    process = getattr(observer, "on_process_frame", None)
    if push is None or process is None:
        raise AdapterError(
            f"the pipeline's observer ({type(observer).__name__}) has no on_push_frame/"
            f"on_process_frame, which pytest-agent-eval reads to follow the pipeline "
            f"(pipecat-ai {pipecat_version()}); this release is not supported"
        )
    if getattr(push, "_agent_eval_tap", False):
        return

    async def on_push_frame(data: Any) -> None:
        on_push(data)
        await push(data)

    async def on_process_frame(data: Any) -> None:
        on_process(data)
        await process(data)

    on_push_frame._agent_eval_tap = True  # type: ignore[attr-defined]
    observer.on_push_frame = on_push_frame
    observer.on_process_frame = on_process_frame


# -- work that can run inline -------------------------------------------------------------------

_PURE_WORK = frozenset(
    {
        ("pipecat.audio.vad.vad_analyzer", "VADAnalyzer._run_analyzer"),
        ("pipecat.audio.turn.smart_turn.base_smart_turn", "BaseSmartTurn._process_speech_segment"),
    }
)
"""Executor jobs of Pipecat that are pure computation (a model inference over a buffer)."""


def pure_work(func: Callable[..., Any], args: tuple[Any, ...]) -> bool:
    """True for an executor job known to compute without waiting on anything: Pipecat's VAD and
    smart-turn inference, and functions of this package marked ``_agent_eval_inline`` (also
    through ``asyncio.to_thread``, which hands the executor ``context.run``)."""
    target: Any = func
    if (
        isinstance(target, functools.partial)
        and target.args
        and isinstance(getattr(target.func, "__self__", None), contextvars.Context)
    ):
        target = target.args[0]
    target = getattr(target, "__func__", target)
    if getattr(target, "_agent_eval_inline", False):
        return True
    return (
        getattr(target, "__module__", None),
        getattr(target, "__qualname__", None),
    ) in _PURE_WORK


# -- Pipecat Flows ------------------------------------------------------------------------------

FlowListener = Callable[[str | None, str | None], None]
_flow_listeners: weakref.WeakKeyDictionary[Any, FlowListener] = weakref.WeakKeyDictionary()
_FLOWS_MODULES = ("pipecat.flows.manager", "pipecat_flows.manager")
"""Flows bundled with pipecat-ai (since 1.14), and the separate pipecat-ai-flows distribution
(1.x, frozen: the same ``FlowManager`` on the deprecated ``pipecat.adapters.schemas``)."""


def flows_packages() -> list[str]:
    """The Pipecat Flows packages installed (``pipecat.flows``, ``pipecat_flows``)."""
    found = []
    for name in _FLOWS_MODULES:
        package = name.rpartition(".")[0]
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            found.append(package)
    return found


def watch_flows(worker: Any, listener: FlowListener) -> None:
    """Call ``listener(previous_node, node)`` each time a Pipecat Flows ``FlowManager`` of
    ``worker`` enters a node (the first node too, with ``previous_node`` None).

    Flows has no event for a node change; the adapter wraps ``FlowManager._set_node``, once
    per process, and reads ``current_node`` before and after. Both Flows packages can be
    installed at once: they are two ``FlowManager`` classes, and a bot uses the one it
    imports, so both are watched (neither "wins"). The bundled ``pipecat.flows`` is imported
    here; the separate ``pipecat_flows`` only once the bot has imported it (importing it warns
    that it and the ``pipecat.adapters.schemas`` it uses are deprecated, which is the bot's
    business): call this again at each turn, for a bot that imports it late.

    Raises:
        AdapterError: An installed Flows has no ``_set_node``/``current_node`` to watch.
    """
    for name in _FLOWS_MODULES:
        if name not in sys.modules and name != _FLOWS_MODULES[0]:
            continue
        try:
            # Through the import system even when sys.modules has it: a module another run's
            # thread is still importing is there half made (no FlowManager yet), and
            # import_module waits for that import to finish.
            module = importlib.import_module(name)
        except ImportError:
            continue
        _wrap_set_node(module.FlowManager, name)
    _flow_listeners[worker] = listener


def forget_flows(worker: Any) -> None:
    """Stop reporting ``worker``'s node changes."""
    _flow_listeners.pop(worker, None)


def _wrap_set_node(cls: type, where: str) -> None:
    original = getattr(cls, "_set_node", None)
    if original is None or not isinstance(getattr(cls, "current_node", None), property):
        raise AdapterError(
            f"{where}.FlowManager has no _set_node/current_node, which pytest-agent-eval reads "
            f"to record node transitions (pipecat-ai {pipecat_version()}); this Flows release "
            "is not supported"
        )
    if getattr(original, "_agent_eval_watched", False):
        return

    async def _set_node(self: Any, node_id: str, node_config: Any) -> None:
        before = self.current_node
        await original(self, node_id, node_config)
        worker = getattr(self, "worker", None)
        listener = _flow_listeners.get(worker) if worker is not None else None
        if listener is not None:
            listener(before, self.current_node)

    _set_node._agent_eval_watched = True  # type: ignore[attr-defined]
    _set_node.__wrapped__ = original  # type: ignore[attr-defined]
    cls._set_node = _set_node  # type: ignore[attr-defined]


# -- replacing a processor --------------------------------------------------------------------


def replace_processor(root: Any, old: Any, new: Any) -> None:
    """Put ``new`` in ``old``'s place in the `Pipeline` under ``root`` that holds it, linked to
    the processors either side, before the StartFrame reaches it. Pipecat has no public way to
    swap a processor of a built pipeline: this writes the pipeline's own list and links.

    Raises:
        AdapterError: ``old`` sits in something else than a plain pipeline (a parallel
            pipeline, a service switcher), or this release keeps its processors elsewhere.
    """
    from pipecat.pipeline.pipeline import Pipeline

    for node in processors_of(root):
        children = getattr(node, "processors", None)
        if not isinstance(children, list) or not any(c is old for c in children):
            continue
        if not isinstance(node, Pipeline):
            raise AdapterError(
                f"the STT service sits in a {type(node).__name__}, whose branches cannot be "
                "rewired; only an STT of a plain Pipeline can be replaced"
            )
        held = getattr(node, "_processors", None)
        if held is not children:
            raise AdapterError(
                f"pipecat-ai {pipecat_version()} keeps a pipeline's processors elsewhere than "
                "Pipeline._processors; this release is not supported for the STT swap"
            )
        at = next(i for i, c in enumerate(held) if c is old)
        held[at] = new
        held[at - 1].link(new)  # a pipeline's own source and sink are always either side
        new.link(held[at + 1])
        return
    raise AdapterError("the STT service is not in the pipeline the worker runs")


def user_turn_controller(aggregator: Any) -> Any:
    """The `UserTurnController` of an ``LLMUserAggregator`` (its turn start and stop
    strategies), which Pipecat keeps on the aggregator without a public name.

    Raises:
        AdapterError: This release keeps it elsewhere.
    """
    controller = getattr(aggregator, "_user_turn_controller", None)
    if controller is None or not hasattr(controller, "user_turn_strategies"):
        raise AdapterError(
            f"pipecat-ai {pipecat_version()} keeps no UserTurnController on "
            f"{type(aggregator).__name__} (_user_turn_controller): the end of the caller's "
            f"turn cannot be committed (this adapter supports pipecat-ai {SUPPORTED})"
        )
    return controller


_STOP_EVENTS = (
    "on_push_frame",
    "on_broadcast_frame",
    "on_user_turn_inference_triggered",
    "on_user_turn_speculation_cancelled",
    "on_user_turn_stopped",
)
"""The events a `UserTurnController` listens to on each stop strategy (its handler for each is
named ``_`` + the event)."""


async def stop_turns_only_with(controller: Any, stop: Any) -> None:
    """Have ``controller`` (a `UserTurnController`) end the caller's turns with ``stop`` only,
    on a copy of its strategies: the user's own `UserTurnStrategies` and stop strategies are
    never changed nor cleaned up (a bot may share them, and their turn analyzer, with every
    pipeline it builds). Not set up yet, the controller sets up the copy it holds then; set up
    already, its handlers come off the user's stop strategies and only ``stop`` is set up.

    Raises:
        AdapterError: This release keeps the controller's strategies, setup or handlers
            elsewhere.
    """
    handlers = [getattr(controller, "_" + event, None) for event in _STOP_EVENTS]
    held = ("_user_turn_strategies", "_setup")
    if None in handlers or not all(hasattr(controller, name) for name in held):
        raise AdapterError(
            f"pipecat-ai {pipecat_version()} keeps the strategies, setup or stop handlers of "
            f"its UserTurnController elsewhere (_user_turn_strategies, _setup, _on_*): the end "
            f"of the caller's turn cannot be committed (this adapter supports pipecat-ai "
            f"{SUPPORTED})"
        )
    own = controller.user_turn_strategies
    strategies = copy.copy(own)
    strategies.stop = [stop]
    controller._user_turn_strategies = strategies
    set_up = controller._setup
    if set_up is None:
        return
    for strategy in own.stop or []:
        for event, handler in zip(_STOP_EVENTS, handlers, strict=True):
            strategy.remove_event_handler(event, handler)
    await stop.setup(set_up)
    for event, handler in zip(_STOP_EVENTS, handlers, strict=True):
        stop.add_event_handler(event, handler)
