"""What a turn's ``user`` text says out loud: its phrases, and the markers written into it.

A ``user`` string may ask for silence inside a synthesized fixture with a pause marker::

    user: "Hi, this is Maria Lopez. [pause 2s] I need a refill."

A marker is ``[pause N s]`` or ``[pause N ms]`` (``[pause 1.5s]``, ``[pause 500ms]``, case and
spaces free). Square brackets around the word ``pause`` are not something a caller says, so the
marker cannot clash with speech. Everything that reads ``user`` as words goes through this
module: `spoken_text` for the words (what a text agent receives, what a fixture-text STT hears,
what ``--verify`` scores), `split_speech` for the phrases and pauses the synthesizer renders.

Turn-taking stimuli (docs/turn-taking.md) add three markers:

- ``[filler um]`` or ``[filler "let me see"]``: a hesitation, spoken as its own phrase; its
  words are part of the spoken text;
- ``[noise cough]``: a sound in the flow of the speech (it takes its own time), or
  ``[noise door at 1.5s]``: a sound laid over the audio at that time from its start;
- ``[backchannel "uh-huh" at 2s]``: the caller's short acknowledgement laid over the audio at
  that time (the agent is meant to be speaking then); not part of the spoken text.

`parse_speech` gives all of them in order, `overlays_of` the timed ones.

No dependencies: text adapters use it without the voice extras.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import TranscriptError

__all__ = [
    "MAX_AT_S",
    "MAX_PAUSE_S",
    "NOISE_KINDS",
    "Backchannel",
    "Filler",
    "Noise",
    "Pause",
    "PauseMarkupError",
    "Phrase",
    "has_pause_markup",
    "has_turn_taking_markup",
    "marker_keyword",
    "overlays_of",
    "parse_speech",
    "phrases_of",
    "split_speech",
    "spoken_text",
]

MAX_PAUSE_S = 30.0
"""Longest single pause: longer silences are a mistake (or a test of a timeout, which wants
``timeout_s`` instead)."""

MAX_AT_S = 60.0
"""Latest ``at`` time of a noise or backchannel marker, in seconds from the audio's start."""

NOISE_KINDS = (
    "babble",
    "cafe",
    "click",
    "cough",
    "door",
    "keyboard",
    "laugh",
    "traffic",
)
"""The sounds ``[noise KIND]`` can ask for, generated offline from a seed
(`pytest_agent_eval._turn_taking._sounds`)."""

TURN_TAKING_MARKUP_VERSION = 1
"""Part of the inputs (so of the key) of every fixture whose text holds a filler, noise or
backchannel marker: bumped when how they are rendered changes (gaps, levels, the sounds)."""

PAUSE_SYNTAX = "[pause 2s] or [pause 500ms]"
FILLER_SYNTAX = '[filler um] or [filler "let me see"]'
NOISE_SYNTAX = "[noise cough] or [noise door at 1.5s]"
BACKCHANNEL_SYNTAX = '[backchannel "uh-huh" at 2s]'

# Anything that looks like a marker, well formed or not: "[pause" (or "[filler ", "[noise ",
# "[backchannel " with something after the word), up to "]" or the end of the line. Only
# well-formed ones are accepted; the rest are errors. A bare "[noise]", "[filler]" or
# "[backchannel]" (the tags speech recognizers write into transcripts, kept by imported calls
# before these markers existed) is text, as it always was.
_PAUSE_LIKE = re.compile(
    r"\[\s*(pause\b|(?:filler|noise|backchannel)(?=\s+[^\s\]]))[^\]\n]*\]?", re.IGNORECASE
)
_PAUSE = re.compile(r"\[\s*pause\s+(\d+(?:\.\d+)?|\.\d+)\s*(ms|s)\s*\]", re.IGNORECASE)
_TIME = r"(\d+(?:\.\d+)?|\.\d+)\s*(ms|s)"
_WORDS = r"(?:\"([^\"]*)\"|([^\"\s\]][^\"\]]*?))"
_FILLER = re.compile(r"\[\s*filler\s+" + _WORDS + r"\s*\]", re.IGNORECASE)
_NOISE = re.compile(r"\[\s*noise\s+([a-z_-]+)(?:\s+at\s+" + _TIME + r")?\s*\]", re.IGNORECASE)
_BACKCHANNEL = re.compile(
    r"\[\s*backchannel\s+\"([^\"]*)\"\s+at\s+" + _TIME + r"\s*\]", re.IGNORECASE
)

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


@dataclass(frozen=True, slots=True)
class Filler:
    """A hesitation asked for with ``[filler ...]``: spoken, as a phrase of its own."""

    text: str


@dataclass(frozen=True, slots=True)
class Noise:
    """A sound asked for with ``[noise KIND]`` (in the flow of the speech: ``at_s`` is None)
    or ``[noise KIND at T]`` (laid over the audio ``at_s`` seconds from its start)."""

    kind: str
    at_s: float | None = None


@dataclass(frozen=True, slots=True)
class Backchannel:
    """The caller's acknowledgement asked for with ``[backchannel "uh-huh" at T]``: laid over
    the audio ``at_s`` seconds from its start."""

    text: str
    at_s: float


SpeechPart = Phrase | Pause | Filler | Noise | Backchannel
"""One element of `parse_speech`."""


def has_pause_markup(user: str) -> bool:
    """True when ``user`` holds something that looks like a marker (pause, filler, noise or
    backchannel; valid or not)."""
    return _PAUSE_LIKE.search(user) is not None


def marker_keyword(user: str) -> str | None:
    """The first marker's word (``pause``, ``filler``, ``noise``, ``backchannel``), or None."""
    match = _PAUSE_LIKE.search(user)
    return None if match is None else match.group(1).lower()


_TURN_TAKING_LIKE = re.compile(r"\[\s*(filler|noise|backchannel)\s+[^\s\]]", re.IGNORECASE)


def has_turn_taking_markup(user: str) -> bool:
    """True when ``user`` holds a filler, noise or backchannel marker (well formed or not)."""
    return _TURN_TAKING_LIKE.search(user) is not None


def _seconds(value: str, unit: str) -> float:
    return float(value) / 1000 if unit.lower() == "ms" else float(value)


def _parse_marker(match: re.Match[str]) -> Pause | Filler | Noise | Backchannel:
    """The marker ``match`` found, checked.

    Raises:
        PauseMarkupError: The marker is malformed or out of range; the message says the fix.
    """
    token = match.group(0)
    keyword = match.group(1).lower()
    if keyword == "pause":
        return Pause(_parse_pause(token))
    if keyword == "filler":
        filler = _FILLER.fullmatch(token)
        words = None if filler is None else (filler.group(1) or filler.group(2) or "").strip()
        if not words:
            raise PauseMarkupError(
                f"malformed filler marker {token!r}: write {FILLER_SYNTAX} (the words the "
                "caller hesitates with, quoted when they are several)"
            )
        return Filler(" ".join(words.split()))
    if keyword == "noise":
        noise = _NOISE.fullmatch(token)
        if noise is None:
            raise PauseMarkupError(
                f"malformed noise marker {token!r}: write {NOISE_SYNTAX} (a sound, then "
                "optionally 'at' and a time in s or ms from the start of the audio)"
            )
        kind = noise.group(1).lower()
        if kind not in NOISE_KINDS:
            from .._text import did_you_mean

            raise PauseMarkupError(
                f"noise marker {token!r} asks for {kind!r}{did_you_mean(kind, NOISE_KINDS)}; "
                f"write one of {', '.join(NOISE_KINDS)} (as in {NOISE_SYNTAX})"
            )
        at = None if noise.group(2) is None else _at(token, noise.group(2), noise.group(3))
        return Noise(kind, at)
    back = _BACKCHANNEL.fullmatch(token)
    if back is None or not back.group(1).strip():
        raise PauseMarkupError(
            f"malformed backchannel marker {token!r}: write {BACKCHANNEL_SYNTAX} (the quoted "
            "words, then 'at' and a time in s or ms from the start of the audio)"
        )
    return Backchannel(" ".join(back.group(1).split()), _at(token, back.group(2), back.group(3)))


def _at(token: str, value: str, unit: str) -> float:
    seconds = _seconds(value, unit)
    if not 0 <= seconds <= MAX_AT_S:
        raise PauseMarkupError(
            f"marker {token!r} is placed at {seconds:g} s; 'at' must be between 0 and "
            f"{MAX_AT_S:g} s from the start of the audio"
        )
    return seconds


def _parse_pause(token: str) -> float:
    good = _PAUSE.fullmatch(token)
    if good is None:
        raise PauseMarkupError(
            f"malformed pause marker {token!r}: write {PAUSE_SYNTAX} (a number, then s or ms)"
        )
    seconds = _seconds(good.group(1), good.group(2))
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


def parse_speech(user: str) -> list[SpeechPart]:
    """Every element of ``user`` in order: phrases (one per sentence, split again at markers),
    pauses (adjacent ones merged), fillers, noises and backchannels. A text of noises alone is
    allowed here (a stimulus may be only a cough); `split_speech` and `spoken_text` want words.

    Raises:
        PauseMarkupError: A malformed or out-of-range marker, or a text of pauses alone.
    """
    parts: list[SpeechPart] = []
    position = 0
    for match in _PAUSE_LIKE.finditer(user):
        parts += [Phrase(s) for s in _sentences(user[position : match.start()])]
        marker = _parse_marker(match)
        if isinstance(marker, Pause) and parts and isinstance(parts[-1], Pause):
            parts[-1] = Pause(round(parts[-1].seconds + marker.seconds, 6))
        else:
            parts.append(marker)
        position = match.end()
    parts += [Phrase(s) for s in _sentences(user[position:])]
    if parts and all(isinstance(p, Pause) for p in parts):
        raise PauseMarkupError("the text is only pause markers: there is nothing to say")
    return parts


def split_speech(user: str) -> list[Phrase | Pause]:
    """``user`` as the synthesizer renders its words: phrases (one per sentence, split again at
    markers; a filler is a phrase of its own) and the pauses between them, in order. Adjacent
    pauses are merged. Noises and backchannels are checked and left out (`parse_speech` has
    them).

    Raises:
        PauseMarkupError: A malformed or out-of-range marker, or a text that is only pauses.
    """
    parts: list[Phrase | Pause] = []
    parsed = parse_speech(user)
    for part in parsed:
        if isinstance(part, Filler):
            parts.append(Phrase(part.text))
        elif isinstance(part, Pause) and parts and isinstance(parts[-1], Pause):
            parts[-1] = Pause(round(parts[-1].seconds + part.seconds, 6))
        elif isinstance(part, Phrase | Pause):
            parts.append(part)
    if parsed and not any(isinstance(p, Phrase) for p in parts):
        raise PauseMarkupError(
            "the text is only pause markers: there is nothing to say (a filler counts as "
            "speech; a noise or a backchannel alone does not)"
        )
    return parts


def overlays_of(user: str) -> list[Noise | Backchannel]:
    """The markers of ``user`` laid over the audio at a time (``at``), in written order."""
    return [
        p
        for p in parse_speech(user)
        if isinstance(p, Backchannel) or (isinstance(p, Noise) and p.at_s is not None)
    ]


def phrases_of(user: str) -> list[str]:
    """The phrases of ``user`` (`split_speech` without the pauses)."""
    return [p.text for p in split_speech(user) if isinstance(p, Phrase)]


def spoken_text(user: str) -> str:
    """The words of ``user``: pause, noise and backchannel markers removed, a filler's words
    kept, the rest as written.

    A text without markers comes back unchanged, so agents see exactly what the YAML says.

    Raises:
        PauseMarkupError: A malformed or out-of-range marker.
    """
    if not has_pause_markup(user):
        return user
    pieces: list[str] = []
    position = 0
    for match in _PAUSE_LIKE.finditer(user):
        marker = _parse_marker(match)
        pieces.append(user[position : match.start()])
        if isinstance(marker, Filler):
            pieces.append(marker.text)
        position = match.end()
    pieces.append(user[position:])
    spoken = " ".join(" ".join(p.split()) for p in pieces if p.strip())
    if not spoken:
        raise PauseMarkupError(
            "the text is only pause markers: there is nothing to say (a filler counts as "
            "speech; noises and backchannels do not)"
        )
    return spoken
