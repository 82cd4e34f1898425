"""Barge-in planning, framework-neutral: which turn interrupts which, and where a word falls.

A turn with ``interrupt:`` speaks over the agent's reply to the turn before, so the adapter
must know, while it runs turn k-1, that turn k will interrupt it (`interrupting_turn`), and
where in the reply's audio the interruption is due (`word_offset_s` for ``at_word``). Both
adapters (LiveKit, Pipecat) plan the same way, so the same transcript interrupts at the same
place in each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import AdapterError
from ..models import Transcript

if TYPE_CHECKING:
    from ..adapters.base import TurnInput

__all__ = ["interrupting_turn", "word_offset_s"]


def interrupting_turn(transcript: Transcript, index: int, run_index: int) -> TurnInput | None:
    """Turn ``index + 1`` as the runner sends it, when it interrupts turn ``index``.

    The runner hands it to adapters on `TurnInput.interrupted_by`; this stays for adapters
    that read it from the transcript (`TurnInput.interrupting` derives it, for both)."""
    from ..adapters.base import TurnInput

    return TurnInput.interrupting(transcript, index, run_index)


def word_offset_s(text: str, word: int, voiced_start_s: float, voiced_end_s: float) -> float:
    """Where word ``word`` (1-based) of ``text`` starts in a reply whose speech runs from
    ``voiced_start_s`` to ``voiced_end_s``: the words spread over the speech by their length
    in characters (with the space after each), as a caption follows speech.

    Raises:
        AdapterError: The reply has fewer words.
    """
    words = text.split()
    if word > len(words):
        raise AdapterError(f"interrupt at_word {word}: the reply has {len(words)} word(s)")
    before = sum(len(w) + 1 for w in words[: word - 1])
    total = sum(len(w) + 1 for w in words)
    return voiced_start_s + (voiced_end_s - voiced_start_s) * before / total
