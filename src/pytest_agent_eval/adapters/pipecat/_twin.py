"""The plumbing of failure attribution's counterfactual twins on Pipecat (issue 35,
docs/attribution.md): a copy of a `PipecatAdapter` whose every pipeline is the bot's own, built
by its own ``run_bot`` or ``make_bot``, altered while the transport's input is set up. Every
processor of the pipeline is built and linked by then, and none has the StartFrame yet (the
input holds it until its own setup is done), so what the alteration puts in place is set up
before any frame reaches it. An alteration that cannot be made raises `AdapterError`; the
copy's conversation start then fails with that one line, which attribution writes as its
evidence before falling back to the text rerun.
"""

from __future__ import annotations

import copy
import functools
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from ...errors import AdapterError
from .._closing import close_after_failure

__all__ = ["BuildsPipelines", "pipeline_twin"]


class BuildsPipelines(Protocol):
    """An adapter that builds each pipeline with the bot's function (`PipecatAdapter`)."""

    bot: Callable[..., Any] | None
    run_bot: Callable[..., Any] | None


_Adapter = TypeVar("_Adapter", bound=BuildsPipelines)

OnSetup = Callable[[Any, Any, Any], Awaitable[None]]
"""``on_setup(pipeline, setup, transport)``: alter the pipeline as its input is set up, or
raise `AdapterError` saying why it cannot be."""


def pipeline_twin(adapter: _Adapter, on_setup: OnSetup) -> _Adapter:
    """A copy of ``adapter`` whose every pipeline ``on_setup`` alters as the transport's input
    is set up; the copy's conversation start raises the `AdapterError` it raised."""
    twin = copy.copy(adapter)
    refused: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
    """Why the alteration could not be made, by the pipeline's transport (weakly: a transport
    whose conversation never started leaves nothing behind)."""
    made_by: Callable[..., Any] | None = adapter.run_bot or adapter.bot
    assert made_by is not None

    @functools.wraps(made_by)  # the bot's module still names the code that is the user's
    def build(transport: Any, *rest: Any) -> Any:
        _alter_at_setup(transport, on_setup, refused)
        return made_by(transport, *rest)

    if adapter.run_bot is not None:
        twin.run_bot = build
    else:
        twin.bot = build

    own_start = type(adapter).start_conversation  # type: ignore[attr-defined]

    async def start_conversation(info: Any) -> Any:
        conversation = await own_start(twin, info)
        why = refused.pop(conversation.session.transport, None)
        if why is not None:
            refusal = AdapterError(why)
            await close_after_failure(conversation.aclose(), refusal)
            raise refusal
        return conversation

    twin.start_conversation = start_conversation  # type: ignore[attr-defined]
    return twin


def _alter_at_setup(
    transport: Any, on_setup: OnSetup, refused: weakref.WeakKeyDictionary[Any, str]
) -> None:
    mic = transport.input()
    own_setup = mic.setup

    async def setup(setup_: Any) -> None:
        try:
            await on_setup(setup_.pipeline_worker.pipeline, setup_, transport)
        except AdapterError as exc:
            refused[transport] = str(exc)
        await own_setup(setup_)

    mic.setup = setup
