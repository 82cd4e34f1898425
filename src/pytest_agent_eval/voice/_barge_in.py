"""Barge-in planning, framework-neutral: where in a reply's audio an interruption falls.

A turn with ``interrupt:`` speaks over the agent's reply to the turn before; the runner hands
it to the adapter on the earlier turn's `TurnInput.interrupted_by` (`TurnInput.interrupting`
derives it once, for every adapter). What is left to plan is where in the reply's audio the
interruption is due: `word_offset_s` places ``at_word``. Both adapters (LiveKit, Pipecat) place
it the same way, so the same transcript interrupts at the same place in each.
"""

from __future__ import annotations

from ..errors import AdapterError

__all__ = ["word_offset_s"]


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
