"""``--verify``: does each fixture say its text? Offline Whisper, then word error rate."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import AgentEvalError
from ..voice._fixtures import (
    Origin,
    load_whisper,
    read_provenance,
    transcribe,
    validate_fixture,
    word_error_rate,
)
from ..voice._speech import spoken_text
from ._plan import FixtureSpec

__all__ = ["DEFAULT_MAX_WER", "VerifyResult", "verify_fixtures"]

DEFAULT_MAX_WER = 0.3
"""Per-fixture threshold. With Whisper, no hibari sentence of the lab's set scored above 0.30
(hard names and homophones such as "four"/"for" cost the most); tiny.en is a little noisier on
short clips, so expect to raise it for suites full of names and codes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifyResult:
    """What Whisper heard in one fixture, scored against the text the fixture should say."""

    spec: FixtureSpec
    expected: str
    """The words the WAV should say (pause markers removed)."""
    heard: str = ""
    wer: float | None = None
    error: str | None = None

    def passed(self, max_wer: float) -> bool:
        return self.error is None and self.wer is not None and self.wer <= max_wer


def verify_fixtures(
    specs: Sequence[FixtureSpec],
    *,
    model: str | os.PathLike[str] | None = None,
    on_result: Callable[[VerifyResult], None] | None = None,
) -> list[VerifyResult]:
    """Transcribe each fixture and score the words its provenance records (the text the audio
    was made from, from the sidecar or the WAV itself; the turn's text for a recording or a
    fixture of pytest-agent-eval 0.3) against what Whisper heard. Each file is checked against
    the duration cap from its header before it is decoded.

    Raises:
        MissingExtraError, AudioFixtureError: The STT model cannot be loaded.
    """
    whisper = load_whisper(model)
    results: list[VerifyResult] = []
    for spec in specs:
        expected = spec.text
        try:
            prov = read_provenance(spec.wav)
            if prov.origin is Origin.SYNTHESIZED and prov.sidecar is not None:
                expected = prov.sidecar.text
            elif prov.origin is Origin.EMBEDDED and prov.embedded and prov.embedded.text:
                expected = prov.embedded.text
            expected = spoken_text(expected)
            clip = validate_fixture(spec.wav, yaml_path=spec.yaml_path)
            heard = transcribe(clip, model=whisper)
            result = VerifyResult(
                spec=spec, expected=expected, heard=heard, wer=word_error_rate(expected, heard)
            )
        except AgentEvalError as exc:
            result = VerifyResult(spec=spec, expected=expected, error=str(exc))
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results
