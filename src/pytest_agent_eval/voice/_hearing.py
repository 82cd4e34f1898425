"""When the agent has had the whole of a fixture: the one rule every LiveKit turn ends by.

A voice turn is not done when the audio has been sent, nor when the agent has answered
something. It is done when the agent has had **all** of the fixture and answered what it
heard:

1. every speech segment of the fixture reached the agent: its VAD ended the segment, or its
   STT finished a transcript of it (a segment may come back empty: it was still heard);
2. every transcript the agent's STT made of the fixture was taken in by its turn handling
   (LiveKit's ``user_input_transcribed``, in a room the agent's transcription of the caller),
   so the end of the user's turn that holds it has been decided on;
3. the agent's answer to that turn is over (reply, tools, handoffs; or its decision not to
   answer), which the adapter observes with the session's own idle state.

The segments a fixture holds are known before it is streamed (its speech segmentation, from
the same VAD over the same frames; see `_segments`), so a turn can count what is still
missing instead of guessing from silence. A VAD that splits one sentence in two (a busy
machine delaying the audio, a pause inside the fixture) only adds an answer to wait for: the
turn still ends after the last part was heard and answered. When part of this cannot be
observed, the turn errors saying which part (`Hearing.missing`), rather than end early and
let the checks grade an answer to half a question.

`Hearing` is the rule as data, kept free of any session so that both adapters (in-process
and room mode) can apply it to what they observe.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Hearing"]


@dataclass
class Hearing:
    """What the agent has had of one fixture so far, against what the fixture holds.

    Update it as the agent's VAD, STT and turn handling report; `missing` says what is left
    before the turn may end. Counts are of segments in order: segment k is ended, recognized
    or taken in once the first k are.
    """

    fixture: str
    """The fixture, as messages name it (its path)."""
    segments: int
    """Speech segments in the fixture (its speech segmentation)."""
    ended: int = 0
    """Segments the agent's VAD ended."""
    transcripts: list[str | None] = field(default_factory=list)
    """What the agent's STT made of each segment it finished, in order ("" for a segment it
    heard nothing in; None when the STT does not say which segment a transcript is of)."""
    taken: int = 0
    """Non-empty transcripts the agent's turn handling took in (``user_input_transcribed``)."""

    @property
    def recognized(self) -> int:
        """Segments the STT finished."""
        return len(self.transcripts)

    def spoken(self, upto: int | None = None) -> int:
        """Non-empty transcripts among the first ``upto`` recognized segments (all: None)."""
        texts = self.transcripts if upto is None else self.transcripts[:upto]
        return sum(1 for t in texts if t is None or t.strip())

    def has_had(self, k: int) -> bool:
        """True once segment ``k`` (one-based) was ended, recognized and, if it held words,
        taken in."""
        return self.ended >= k and self.recognized >= k and self.taken >= self.spoken(k)

    def missing(self) -> str | None:
        """What the agent has not had yet, in words for an error message; None when it has
        had the whole fixture (the turn may end once its answer is over)."""
        n = self.segments
        if self.ended < n:
            return (
                f"the agent's VAD ended {self.ended} of the {n} speech segment(s) of "
                f"{self.fixture}, so it has not heard the rest"
            )
        if self.recognized < n:
            return (
                f"the agent's STT finished {self.recognized} of the {n} speech segment(s) of "
                f"{self.fixture}"
            )
        if self.taken < self.spoken():
            last = next((t for t in reversed(self.transcripts) if t and t.strip()), None)
            said = f" (the last: {last!r})" if last else ""
            return (
                f"the agent's turn handling took in {self.taken} of the {self.spoken()} "
                f"transcript(s) its STT made of {self.fixture}{said}, so it has not answered "
                "all of it"
            )
        return None
