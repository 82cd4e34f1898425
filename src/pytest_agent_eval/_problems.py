"""What is wrong with a transcript, found once, for the loader and the runner alike.

`transcript_problems` lists every problem a built `Transcript` has beyond its types: a regex
that does not compile (the checks the expectation registry declares), a malformed pause marker,
audio conditions with no audio to change, an interruption that cannot work. The loader raises
the first one with the file, the line and the field path (`TranscriptProblem.at` is the path of
the field as YAML writes it); the runner raises it, for a transcript built in Python, naming
the transcript and the turn. Neither keeps checks of its own, so a YAML file and the same
transcript written in Python are refused for the same reasons.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ._conditions import condition_problems
from ._expectations import expect_keys, transcript_keys, turn_keys
from ._expectations._barge_in import interrupt_problems
from ._expectations._base import ExpectKey
from ._expectations._keypad import dtmf_problems
from ._serialize import to_json
from .errors import TranscriptError
from .models import Transcript
from .voice._speech import PauseMarkupError, spoken_text

__all__ = ["TranscriptProblem", "transcript_problems"]

FieldPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class TranscriptProblem:
    """One problem of a transcript: where, what, and the exception that reports it."""

    at: FieldPath
    """The field as YAML writes it: ``("turns", 1, "expect", "reply_matches_any", 0)``."""
    problem: str
    """What is wrong (and, when it does not depend on how the transcript was written, the fix)."""
    yaml_fix: str = ""
    """How to fix it in a YAML file, which the loader adds (``In YAML, double-quote ...``)."""
    error: type[TranscriptError] = TranscriptError
    """What to raise: `PauseMarkupError` for pause markers, else `TranscriptError`."""

    @property
    def turn(self) -> int | None:
        """The zero-based index of the turn the problem is in, or None for the transcript."""
        if len(self.at) > 1 and self.at[0] == "turns" and isinstance(self.at[1], int):
            return self.at[1]
        return None

    def in_yaml(self, where: str, field: str) -> TranscriptError:
        """The loader's error: ``where`` (file, line, transcript, turn) and ``field`` (the
        path as written: ``turns[0].expect.reply_matches_any[1]``) before the problem."""
        fix = f". {self.yaml_fix}" if self.yaml_fix else ""
        return self.error(f"{where}, {field}: {self.problem}{fix}")

    def in_python(self, transcript_id: str) -> TranscriptError:
        """The runner's error for a transcript built in Python: the transcript, the turn, and
        the field when the turn alone does not say it (``user``, ``greeting``)."""
        where = f"transcript {transcript_id!r}"
        turn = self.turn
        if turn is not None:
            where += f", turn {turn + 1}"
            if self.at[2:] == ("user",):
                where += ": user"
        elif self.at and self.at[0] != "turns":
            where += f", {self.at[0]}"
        return self.error(f"{where}: {self.problem}")


def transcript_problems(
    transcript: Transcript, *, audio_to_come: bool = False
) -> list[TranscriptProblem]:
    """Every problem of ``transcript``, in the order a reader meets them: the transcript's
    own keys (``greeting``), then each turn (its keys, its ``expect``, its pause markers), then
    the audio conditions and the interruptions.

    Args:
        transcript: A transcript as the loader built it or as Python code wrote it.
        audio_to_come: Audio turns are added as it runs (a simulated caller speaks), so
            conditions need no written audio turn.
    """
    found: list[TranscriptProblem] = []
    for key in transcript_keys():
        found += _key_problems(key, getattr(transcript, key.name, None), (key.name,))
    for index, turn in enumerate(transcript.turns):
        at: FieldPath = ("turns", index)
        for key in turn_keys():
            found += _key_problems(key, getattr(turn, key.name, None), (*at, key.name))
        for key in expect_keys():
            found += _key_problems(
                key, getattr(turn.expect, key.name, None), (*at, "expect", key.name)
            )
        try:
            spoken_text(turn.user)
        except PauseMarkupError as exc:
            found.append(TranscriptProblem((*at, "user"), str(exc), error=PauseMarkupError))
    for turn_index, problem in condition_problems(transcript):
        if turn_index is None:
            if not audio_to_come:
                found.append(TranscriptProblem(("turns",), problem))
        else:
            found.append(TranscriptProblem(("turns", turn_index, "conditions"), problem))
    for turn_index, problem in interrupt_problems(transcript):
        found.append(TranscriptProblem(("turns", turn_index, "interrupt"), problem))
    for turn_index, problem in dtmf_problems(transcript):
        found.append(TranscriptProblem(("turns", turn_index, "dtmf"), problem))
    far_end = transcript.far_end
    if far_end is not None and far_end.drives_alone and transcript.turns:
        found.append(
            TranscriptProblem(
                ("far_end",),
                f"the far end ({far_end.kind}) says everything on the call, so the transcript's "
                "turns would never run; remove turns, or use kind human",
            )
        )
    return found


def _key_problems(key: ExpectKey, value: Any, at: FieldPath) -> Iterator[TranscriptProblem]:
    """What the registry's check of ``key`` finds in ``value`` (the model's value, read in its
    YAML shape; unset values are not checked)."""
    if key.check is None or value is None or value == [] or value is False:
        return
    for inner, problem in key.check(_yaml_shape(to_json(value))):
        yield TranscriptProblem((*at, *inner), problem, yaml_fix=key.yaml_fix)


def _yaml_shape(value: Any) -> Any:
    """A model's JSON as YAML would write it: unset (None) fields left out, as an author
    leaves them out, so a check sees the same mapping for both."""
    if isinstance(value, Mapping):
        return {k: _yaml_shape(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_yaml_shape(v) for v in value]
    return value
