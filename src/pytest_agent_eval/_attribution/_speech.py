"""The speech-output counterfactual of failure attribution (issue 35): what the agent's reply
audio says, heard by offline Whisper, against the reply's own text.

A reply can be right in text and wrong in the caller's ear: a TTS that says "fifty" for
"fifteen", or reads a booking code wrong. When the failing turn's reply audio was saved, it is
transcribed (the tiny.en model the project's Whisper extra ships; nothing is downloaded) and
set against the reply text, numbers and spellings compared in one canonical form, so "15"
and "fifteen" agree. A difference in a number, a name or a code that the failed check is
about is ``speech_output``: the text held the value, the voice said another. Without reply
audio this cause cannot be shown, and nothing is said about it.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from ..models import EvalResult, TurnResult
from ..models._attribution import Evidence
from ._words import misheard_spans

__all__ = ["speech_output_evidence"]

_CODE = re.compile(r"[A-Za-z]*\d[\w-]*")


def _spoken(path: Path) -> str:
    from ..voice._clip import read_wav
    from ..voice._whisper import transcribe

    return transcribe(read_wav(path))


def _canonical(text: str) -> str:
    from ..voice._wer import normalize_for_wer

    return normalize_for_wer(text)


def _is_value(heard: str, intended: str, reply: str) -> bool:
    """A number, a code or a name: a digit in either side's canonical form (``fifteen`` is
    ``1 5``), or a word of the intended side capitalized inside the reply's text (not the
    first of a sentence)."""
    if any(c.isdigit() for c in _canonical(heard) + _canonical(intended)):
        return True
    if _CODE.search(heard) or _CODE.search(intended):
        return True
    for word in intended.split():
        for found in re.finditer(rf"\b{re.escape(word)}\b", reply, re.IGNORECASE):
            before = reply[: found.start()].rstrip()
            if found.group()[0].isupper() and before and before[-1] not in ".!?":
                return True
    return False


def _about(evaluation: EvalResult, heard: str, intended: str) -> bool:
    """True when the check names the value: its verdict's text or key holds the intended
    or the heard words (canonical forms, whole words)."""
    said = f" {_canonical(f'{evaluation.reasoning} {evaluation.key or evaluation.name}')} "
    return any(side and f" {side} " in said for side in (_canonical(intended), _canonical(heard)))


async def speech_output_evidence(failing: TurnResult, failed: list[EvalResult]) -> list[Evidence]:
    """What the failing turn's reply audio says against its text, as evidence: ``found`` per
    value (number, name, code) that the audio says otherwise and a check of ``failed`` is
    about, ``none`` when there is none, ``error`` when the audio could not be transcribed;
    no evidence at all when the turn saved no reply audio."""
    # Only a check of the user's own can read the reply audio: every built-in check (its key
    # ``turns[i].expect...``) reads the reply text, the tools or what was heard, so its failure
    # is never the voice's, whatever the audio says.
    failed = [e for e in failed if not (e.key or e.name).startswith("turns[")]
    path = Path(failing.audio_out) if failing.audio_out is not None else None
    if not failed or path is None or not path.is_file() or not failing.reply.strip():
        return []
    where = f"turn {failing.index + 1}"
    try:
        spoken = await asyncio.to_thread(_spoken, path)
        spans = [
            (heard, intended)
            for heard, intended in misheard_spans(failing.reply, spoken)
            if _canonical(heard) != _canonical(intended)
            and _is_value(heard, intended, failing.reply)
        ]
        about = [s for s in spans if any(_about(e, *s) for e in failed)]
    except Exception as exc:  # Whisper or its normalizer missing: say so, never raise
        return [
            Evidence(
                "reply_audio",
                "error",
                turn=failing.index,
                error=f"{type(exc).__name__}: {exc}",
                detail=f"{where}'s reply audio could not be transcribed: {exc}",
            )
        ]
    if not about:
        return [
            Evidence(
                "reply_audio",
                "none",
                turn=failing.index,
                detail=f"{where}'s reply audio says what its text says where the failed "
                f"check looks (Whisper heard {spoken!r})",
            )
        ]
    return [
        Evidence(
            "reply_audio",
            "found",
            turn=failing.index,
            heard=heard,
            intended=intended,
            detail=f"{where}'s reply audio says {heard!r} where its text says {intended!r}",
        )
        for heard, intended in about
    ]
