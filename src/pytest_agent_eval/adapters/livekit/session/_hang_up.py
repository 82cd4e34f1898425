"""A LiveKit agent on an in-process phone call closing its session to hang up.

LiveKit's docs have an agent end a call by closing its session: ``session.shutdown()``, which
LiveKit's ``EndCallTool`` calls once its goodbye is said (and whose close then shuts the job
down and deletes the room). On an in-process phone call (a transcript with `phone_line`) that
is a hang-up like ``ctx.shutdown()``: `record_session_shutdown` notes it on the call's room
(``session.shutdown()``) instead of closing the session under the turn, so the turn ends
normally with what the agent said and reports ``call_ended``. The session is closed when the
conversation ends, as every session of the adapter is. After a hang-up the caller is gone:
`refuse_after_hang_up` makes a later turn an error saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ....errors import AdapterError

if TYPE_CHECKING:
    from livekit.agents import AgentSession

__all__ = ["SESSION_SHUTDOWN", "record_session_shutdown", "refuse_after_hang_up"]

SESSION_SHUTDOWN = "session.shutdown()"
"""How a hang-up by ``session.shutdown()`` is named in a turn's ``hang_up`` metadata."""


class PhoneLine(Protocol):
    """What of the call's room (`_keypad.PhoneRoom`) the hang-ups need."""

    hang_ups: list[str]
    hung_up_in: tuple[int, str] | None


def record_session_shutdown(session: AgentSession[Any], room: PhoneLine) -> Callable[[], None]:
    """Make ``session.shutdown()`` a hang-up noted on ``room``; returns what undoes it."""

    def shutdown(*, drain: bool = True) -> None:
        room.hang_ups.append(SESSION_SHUTDOWN)

    setattr(session, "shutdown", shutdown)  # noqa: B010 (mypy: cannot assign to a method)

    def undo() -> None:
        vars(session).pop("shutdown", None)

    return undo


def refuse_after_hang_up(room: PhoneLine, label: str) -> None:
    """Raise if the agent already hung up on ``room``'s call: a turn after it cannot run.

    Raises:
        AdapterError: Naming the turn in which the agent hung up, and how.
    """
    if room.hung_up_in is None:
        return
    index, how = room.hung_up_in
    raise AdapterError(
        f"{label}: the agent hung up in turn {index + 1} ({how}), so it can take no further "
        "turn; end the transcript where the agent hangs up"
    )
