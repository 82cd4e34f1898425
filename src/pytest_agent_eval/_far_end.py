"""The far end of an outbound call (a transcript's ``far_end:``), as the runner's script of a
run: what it says next depends on what the agent did.

A ``human`` says hello, then the transcript's turns follow; a ``voicemail`` box plays its
greeting (the agent should stay quiet), then its beep (the agent leaves its message); an
``ivr`` reads the current menu and moves on the keys the agent sent in its reply (a wrong key
or no key: it says the menu again, up to ``retries`` times, then hangs up); ``no_answer`` and
``busy`` are one turn of the line's sound; ``hold_music`` plays its announcement and music,
then a person picks up. Every adapter runs the same turns, so the records and verdicts are the
same wherever the agent runs; what an adapter cannot observe (keys sent) makes the run an
ERROR, never a FAIL.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import AdapterError, TranscriptError
from .evaluators._call import evaluate_call
from .models import EvalResult, Message, RunResult, Transcript, Turn
from .models._far_end import BEEP_WORDS, FarEnd, IvrWalk, ivr_prompt, scripted_turn

__all__ = [
    "BUSY_WORDS",
    "HOLD_WORDS",
    "RING_WORDS",
    "FarEndScript",
    "refuse_unplayable",
]

RING_WORDS = "(the line rings, and nobody answers)"
"""A line that rings out, as words."""
BUSY_WORDS = "(busy tone)"
"""A busy line, as words."""
HOLD_WORDS = "(hold music)"
"""A hold queue's music, as words."""


def _opening_words(far: FarEnd) -> list[str]:
    """What the far end says before the transcript's own turns (none for an IVR, whose menus
    follow the keys the agent sends and are made as the call goes)."""
    if far.kind == "human":
        return [far.hello]
    if far.kind == "voicemail":
        return [far.greeting, BEEP_WORDS]
    if far.kind == "no_answer":
        return [RING_WORDS]
    if far.kind == "busy":
        return [BUSY_WORDS]
    if far.kind == "hold_music":
        first = f"{far.greeting} {HOLD_WORDS}".strip()
        return [first, *[HOLD_WORDS] * (far.holds - 1), far.hello]
    return []


def refuse_unplayable(transcript: Transcript, adapter: Any) -> None:
    """Refuse, before anything runs, a far end ``adapter`` cannot play: one heard as audio
    (``as: audio``) needs an adapter that streams audio to the agent's VAD and STT; a text
    adapter would get words, and its verdict would say nothing about hearing the beep.

    Raises:
        TranscriptError: The far end is audio and the adapter is a text adapter, or a voice
            adapter that does not stream it (``plays_far_end_audio``: LiveKit in a room, on a
            realtime model; an ERROR: the agent was not evaluated as asked).
    """
    far = transcript.far_end
    if far is None or far.played_as != "audio":
        return
    where = transcript.locations.get("far_end")
    named = f"{where}, transcript {transcript.id!r}" if where else f"transcript {transcript.id!r}"
    if not getattr(adapter, "consumes_audio", False):
        raise TranscriptError(
            f"{named}, far_end.as: the far end is heard as audio, and {type(adapter).__name__} "
            "is a text agent, which hears no audio; run it with a voice adapter (LiveKitAdapter "
            "in process, PipecatAdapter), or drop 'as: audio' to play the far end as text"
        )
    if getattr(adapter, "plays_far_end_audio", False):
        return
    raise TranscriptError(
        f"{named}, far_end.as: a far end heard as audio is not played by "
        f"{type(adapter).__name__} yet (it streams into LiveKitAdapter in process and "
        "PipecatAdapter); drop 'as: audio' to play the far end as text"
    )


@dataclass
class FarEndScript:
    """The runner's script (`pytest_agent_eval._runner.RunScript`) of one run against a far
    end: the far end's turns, in between (``human``, ``hold_music``) the transcript's own
    turns with their evaluators, and at the end the call's checks.

    Args:
        transcript: This run's transcript (its own copy: its turns grow as the call goes).
        far_end: Who answers.
        scripted: The transcript's own turns, each with its evaluators.
        call_checks: Checks of the whole call (``far_end: expect:``, ``call_expect``).
    """

    transcript: Transcript
    far_end: FarEnd
    scripted: Sequence[tuple[Turn, Sequence[Any]]] = ()
    call_checks: Sequence[Any] = ()
    _opening: list[str] = field(default_factory=list)
    _walk: IvrWalk | None = None

    @classmethod
    def of(
        cls,
        transcript: Transcript,
        far_end: FarEnd,
        scripted: Sequence[tuple[Turn, Sequence[Any]]],
        call_checks: Sequence[Any],
    ) -> FarEndScript:
        """The script of one run: a copy of ``transcript`` with no turns yet."""
        own = dataclasses.replace(transcript, turns=[], locations=dict(transcript.locations))
        script = cls(own, far_end, scripted, call_checks)
        script._opening = _opening_words(far_end)
        return script

    async def next_turn(self, run: RunResult, history: Sequence[Message]) -> Sequence[Any] | None:
        """The next far-end turn (or scripted turn) and its evaluators; None once the call is
        over: the agent hung up, the far end has nothing more to say, the IVR hung up."""
        if run.turns and run.turns[-1].call_ended:
            return None
        done = len(run.turns)
        if self.far_end.kind == "ivr":
            words = self._ivr_words(run)
            if words is None:
                return None
            return self._add(Turn(words), [])
        scripted = scripted_turn(self.far_end, done)
        if scripted is None and done < len(self._opening):
            return self._add(Turn(self._opening[done]), [])
        if scripted is None or scripted >= len(self.scripted):
            return None
        turn, evaluators = self.scripted[scripted]
        return self._add(turn, evaluators)

    def _ivr_words(self, run: RunResult) -> str | None:
        far = self.far_end
        if self._walk is None:
            self._walk = IvrWalk(node=far.first_node)
            self._walk.nodes.append(self._walk.node)
            return far.menu[self._walk.node].prompt
        walk = self._walk
        if walk.at_end(far):
            return None  # put through: the department's prompt was the last turn
        sent = run.turns[-1].dtmf_sent
        if sent is None:
            raise AdapterError(
                f"turn {len(run.turns)}: the IVR far end moves on the keys the agent sends, "
                "and this adapter does not report them; run it with LiveKitAdapter in process "
                "or PipecatAdapter"
            )
        walk.step(far, sent)
        if walk.gave_up(far):
            return None
        walk.nodes.append(walk.node)
        return ivr_prompt(far.menu[walk.node], walk)

    def _add(self, turn: Turn, evaluators: Sequence[Any]) -> Sequence[Any]:
        self.transcript.turns.append(turn)
        return evaluators

    async def finish(self, run: RunResult) -> None:
        """Judge the whole call (``far_end: expect:``, ``call_expect``), and fail each of
        the transcript's turns that never ran because the agent hung up before it."""
        run.evaluations += self._never_ran(run)
        run.evaluations += await evaluate_call(self.call_checks, run)

    def _never_ran(self, run: RunResult) -> list[EvalResult]:
        """One failed result per transcript turn the agent's hang-up cut off: its checks
        could never pass, and dropping them would let the test pass for the wrong reason."""
        if self.far_end.drives_alone or not run.turns or not run.turns[-1].call_ended:
            return []
        ran = scripted_turn(self.far_end, len(run.turns)) or 0
        file_name = self.transcript.path.name if self.transcript.path is not None else None
        found: list[EvalResult] = []
        for index in range(ran, len(self.scripted)):
            turn, _ = self.scripted[index]
            where = f"{file_name}:{turn.line}" if file_name and turn.line is not None else None
            found.append(
                EvalResult(
                    False,
                    f"the agent hung up in turn {len(run.turns)}, so this turn "
                    f"({turn.user!r}) never ran",
                    name="far_end.hung_up_early",
                    key=f"turns[{index}]",
                    location=where,
                )
            )
        return found
