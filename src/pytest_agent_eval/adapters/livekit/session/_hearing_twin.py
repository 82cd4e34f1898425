"""The hearing counterfactual of failure attribution (issue 35, docs/attribution.md): the same
agent, with its speech recognizer replaced by the stand-in that hears a fixture's known words.

`fixture_hearing_twin` gives a copy of a `LiveKitAdapter` whose sessions are built by the
user's own factory, then have their STT swapped for a `PerfectHearingSTT` (a `FixtureTextSTT`).
Everything else stays the agent's: its VAD cuts the audio, its turn detection ends the turn,
the audio keeps its conditions (noise, phone line) so the VAD hears what the caller's line
carried; only the words the agent gets are made right. Where the STT cannot be swapped, the
twin's session start fails with one line saying why (an `AdapterError`), which attribution
writes as its evidence before falling back to the text rerun.
"""

from __future__ import annotations

from typing import Any, TypeVar

from livekit.agents import Agent, AgentSession, llm

from ....errors import AdapterError
from .._compat import replace_session_stt
from ..offline._stt import FixtureTextSTT
from ._twin import BuildsSessions, given, session_twin

__all__ = ["PerfectHearingSTT", "fixture_hearing_twin", "refuses_conditions"]


class PerfectHearingSTT(FixtureTextSTT):
    """`FixtureTextSTT` put in place of an agent's own STT by attribution's hearing
    counterfactual. Unlike a `FixtureTextSTT` the user chose, it runs under audio conditions:
    hearing every word whatever the noise is the point of the counterfactual."""


def refuses_conditions(stt_: object) -> bool:
    """True when ``stt_`` would hear a fixture's words whatever its audio conditions, and so
    must refuse a turn that has some (a `FixtureTextSTT` the user chose)."""
    return isinstance(stt_, FixtureTextSTT) and not isinstance(stt_, PerfectHearingSTT)


_Adapter = TypeVar("_Adapter", bound=BuildsSessions)


def fixture_hearing_twin(adapter: _Adapter) -> _Adapter:
    """A copy of ``adapter`` whose every session hears with a `PerfectHearingSTT` in place of
    the STT its factory gave it; the copy's session start raises `AdapterError` where that
    swap cannot be made (a realtime model hearing the caller itself, an agent bringing its own
    STT, an agent already hearing with `FixtureTextSTT`)."""
    return session_twin(adapter, _swap_stt)


def _swap_stt(session: AgentSession[Any], agent: object) -> None:
    own = session.stt
    if isinstance(session.llm, llm.RealtimeModel):
        raise AdapterError(
            "the agent runs on a realtime model, which hears the caller's audio itself whatever "
            "the session's STT, so its hearing cannot be replaced by the fixture's words"
        )
    if own is None:
        raise AdapterError(
            "the agent has no STT: its realtime model hears the caller itself, so its hearing "
            "cannot be replaced by the fixture's words"
        )
    if type(own) is FixtureTextSTT:
        raise AdapterError(
            "the agent already hears with FixtureTextSTT (the fixture's own words), so there "
            "is no other hearing to replace"
        )
    if isinstance(agent, Agent) and agent.stt not in (None, session.stt) and given(agent.stt):
        raise AdapterError(
            f"the agent ({type(agent).__name__}) brings an STT of its own, which the session's "
            "cannot replace"
        )
    # The session is not started yet, so every stream it opens is the stand-in's.
    replace_session_stt(session, PerfectHearingSTT())
