"""What a turn's ``user`` text says out loud: its phrases, and the pauses written into it.

A ``user`` string may ask for silence inside a synthesized fixture with a pause marker::

    user: "Hi, this is Maria Lopez. [pause 2s] I need a refill."

A marker is ``[pause N s]`` or ``[pause N ms]`` (``[pause 1.5s]``, ``[pause 500ms]``, case and
spaces free). Square brackets around the word ``pause`` are not something a caller says, so the
marker cannot clash with speech. Everything that reads ``user`` as words goes through this
module: `spoken_text` for the words (what a text agent receives, what a fixture-text STT hears,
what ``--verify`` scores), `split_speech` for the phrases and pauses the synthesizer renders.

No dependencies: text adapters use it without the voice extras.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import TranscriptError

__all__ = [
    "MAX_PAUSE_S",
    "Pause",
    "PauseMarkupError",
    "Phrase",
    "has_pause_markup",
    "phrases_of",
    "split_speech",
    "spoken_text",
]

MAX_PAUSE_S = 30.0
"""Longest single pause: longer silences are a mistake (or a test of a timeout, which wants
``timeout_s`` instead)."""

PAUSE_SYNTAX = "[pause 2s] or [pause 500ms]"

# Anything that looks like a pause marker, well formed or not: "[pause", up to "]" or the end of
# the line. Only the well-formed ones (`_PAUSE`) are accepted; the rest are errors.
_PAUSE_LIKE = re.compile(r"\[\s*pause\b[^\]\n]*\]?", re.IGNORECASE)
_PAUSE = re.compile(r"\[\s*pause\s+(\d+(?:\.\d+)?|\.\d+)\s*(ms|s)\s*\]", re.IGNORECASE)

# A sentence ends at . ! ? (possibly several, possibly closed by a quote or bracket), followed by
# white space and then something that starts a sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9¿¡])")
_ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "jr",
        "sr",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "a.m",
        "p.m",
        "approx",
        "dept",
        "est",
        "inc",
        "ltd",
        "co",
        "mt",
        "ft",
    ]
)
"""Words whose final dot does not end a sentence when a capital or digit follows ("Dr. Smith").
A miss either way only moves a pause; it never changes a word."""


class PauseMarkupError(TranscriptError):
    """A ``user`` text holds a pause marker that is malformed or out of range."""


@dataclass(frozen=True, slots=True)
class Phrase:
    """Words spoken without a pause the synthesizer adds: one sentence, or the part of one
    between two pause markers."""

    text: str


@dataclass(frozen=True, slots=True)
class Pause:
    """Silence asked for with a pause marker."""

    seconds: float


def has_pause_markup(user: str) -> bool:
    """True when ``user`` holds something that looks like a pause marker (valid or not)."""
    return _PAUSE_LIKE.search(user) is not None


def _parse_pause(match: re.Match[str]) -> float:
    token = match.group(0)
    good = _PAUSE.fullmatch(token)
    if good is None:
        raise PauseMarkupError(
            f"malformed pause marker {token!r}: write {PAUSE_SYNTAX} (a number, then s or ms)"
        )
    value = float(good.group(1))
    seconds = value / 1000 if good.group(2).lower() == "ms" else value
    if not 0 < seconds <= MAX_PAUSE_S:
        raise PauseMarkupError(
            f"pause marker {token!r} asks for {seconds:g} s; a pause must be above 0 and at "
            f"most {MAX_PAUSE_S:g} s"
        )
    return seconds


def _sentences(run: str) -> list[str]:
    """``run`` cut at sentence ends (never inside an abbreviation)."""
    text = " ".join(run.split())
    if not text:
        return []
    out: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        head = text[start : match.start()]
        last_word = head.rsplit(" ", 1)[-1].rstrip(".!?\"'”’)]").lower()
        if head.endswith(".") and last_word in _ABBREVIATIONS:
            continue
        out.append(head.strip())
        start = match.end()
    out.append(text[start:].strip())
    return [s for s in out if s]


def split_speech(user: str) -> list[Phrase | Pause]:
    """``user`` as the synthesizer renders it: phrases (one per sentence, split again at pause
    markers) and the pauses between them, in order. Adjacent pauses are merged.

    Raises:
        PauseMarkupError: A malformed or out-of-range marker, or a text that is only pauses.
    """
    parts: list[Phrase | Pause] = []
    position = 0
    for match in _PAUSE_LIKE.finditer(user):
        parts += [Phrase(s) for s in _sentences(user[position : match.start()])]
        seconds = _parse_pause(match)
        if parts and isinstance(parts[-1], Pause):
            parts[-1] = Pause(round(parts[-1].seconds + seconds, 6))
        else:
            parts.append(Pause(seconds))
        position = match.end()
    parts += [Phrase(s) for s in _sentences(user[position:])]
    if parts and not any(isinstance(p, Phrase) for p in parts):
        raise PauseMarkupError("the text is only pause markers: there is nothing to say")
    return parts


def phrases_of(user: str) -> list[str]:
    """The phrases of ``user`` (`split_speech` without the pauses)."""
    return [p.text for p in split_speech(user) if isinstance(p, Phrase)]


def spoken_text(user: str) -> str:
    """The words of ``user``: pause markers removed, the rest as written.

    A text without markers comes back unchanged, so agents see exactly what the YAML says.

    Raises:
        PauseMarkupError: A malformed or out-of-range marker.
    """
    if not has_pause_markup(user):
        return user
    pieces: list[str] = []
    position = 0
    for match in _PAUSE_LIKE.finditer(user):
        _parse_pause(match)
        pieces.append(user[position : match.start()])
        position = match.end()
    pieces.append(user[position:])
    spoken = " ".join(" ".join(p.split()) for p in pieces if p.strip())
    if not spoken:
        raise PauseMarkupError("the text is only pause markers: there is nothing to say")
    return spoken
