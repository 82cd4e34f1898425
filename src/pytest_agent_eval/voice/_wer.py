"""Word error rate with a number-aware English normalizer ("10am" == "ten a.m.").

Both sides go through whisper-normalizer's ``EnglishTextNormalizer`` (spelled-out numbers become
digits, "Dr" becomes "doctor", contractions are expanded), then a few fix-ups the audio lab found
necessary: "a m" -> "am", spelled letters are joined ("b k" -> "bk"), "9:30" and "9 30" become
"930", ordinals lose their suffix, e-mail addresses take their spoken form, and every number is
split into one token per digit so a wrong digit costs one word, not the whole number.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from ..errors import require_extra

__all__ = ["normalize_for_wer", "word_error_rate"]

_EMAIL = re.compile(r"\b([\w.+-]+)@([\w-]+(?:\.[\w-]+)+)\b")
_AM_PM = re.compile(r"\b([ap]) m\b")
_LETTER_RUN = re.compile(r"\b([a-z])(?: ([a-z])\b)+")
_DIGIT_SEPARATOR = re.compile(r"(?<=\d)[.:](?=\d)")
_DIGIT_GROUPS = re.compile(r"\b(\d+) (\d+)\b")
_ORDINAL = re.compile(r"\b(\d+)(st|nd|rd|th)\b")
_NUMBER = re.compile(r"\d+")


@cache
def _english() -> Any:
    require_extra("whisper_normalizer", extra="stt", feature="WER scoring")
    from whisper_normalizer.english import EnglishTextNormalizer

    return EnglishTextNormalizer()


def normalize_for_wer(text: str) -> str:
    """Lower-case words with numbers, times and spelled letters in one canonical form."""
    text = _EMAIL.sub(
        lambda m: m[1].replace(".", " dot ") + " at " + m[2].replace(".", " dot "), text
    )
    t = _english()(text)
    t = _AM_PM.sub(r"\1m", t)
    t = _LETTER_RUN.sub(lambda m: m[0].replace(" ", ""), t)
    t = _DIGIT_SEPARATOR.sub(" ", t)
    while (joined := _DIGIT_GROUPS.sub(r"\1\2", t)) != t:
        t = joined
    t = _ORDINAL.sub(r"\1", t)
    t = _NUMBER.sub(lambda m: " ".join(m[0]), t)
    return " ".join(t.split())


def _edit_distance(ref: list[str], hyp: list[str]) -> int:
    """Levenshtein distance over words (substitutions, insertions, deletions all cost 1)."""
    previous = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        current = [i]
        for j, h in enumerate(hyp, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (r != h)))
        previous = current
    return previous[-1]


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Edits needed to turn the normalized ``hypothesis`` into the normalized ``reference``,
    divided by the number of reference words.

    Returns:
        0.0 for a perfect match; can exceed 1.0 when the hypothesis adds many words. An empty
        reference scores 0.0 against an empty hypothesis and 1.0 against anything else.
    """
    ref = normalize_for_wer(reference).split()
    hyp = normalize_for_wer(hypothesis).split()
    if not ref:
        return 0.0 if not hyp else 1.0
    return _edit_distance(ref, hyp) / len(ref)
