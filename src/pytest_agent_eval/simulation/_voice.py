"""The caller's voice: each utterance synthesized on the fly into an ordinary fixture.

An utterance becomes a WAV exactly as ``python -m pytest_agent_eval.synthesize_audio`` makes a
turn's fixture (the same planner, backend, post-processing, key, embedded provenance and
sidecar), so a voice adapter streams it like any audio turn: `FixtureTextSTT` can prove what it
says and hears the caller's words, a recognizer that listens (Whisper) hears the audio, and the
transcript's audio conditions and variants apply to it at run time as to every fixture. The
voice settings are the simulation's ``voice:`` over ``[tool.agent_eval.voice]``.

Fixtures are named by their key (text and every voice input), in one folder
(``<caller_cache_dir>/audio``): the same words in the same voice are synthesized once and
reused by every run and every later session, which is what makes a cached rerun cheap. Reports
play them as the caller's audio.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from ..errors import AudioFixtureError
from ..models import Transcript, Turn, VoiceSettings

__all__ = ["CallerVoice"]


class CallerVoice:
    """Synthesizes the caller's utterances for one session's simulations.

    Args:
        folder: Where the WAVs (and their sidecars) go.
        defaults: ``[tool.agent_eval.voice]``.
    """

    def __init__(self, folder: Path, defaults: VoiceSettings | None = None) -> None:
        from ..synthesize._plan import Planner

        self.folder = Path(folder)
        self.planner = Planner(defaults)
        self._lock = asyncio.Lock()
        self.synthesized = 0
        """Utterances synthesized (not found ready) by this voice."""

    async def speak(self, text: str, transcript: Transcript) -> Path:
        """The WAV of ``text`` in ``transcript``'s voice, synthesized unless a fresh one with
        the same key exists.

        Raises:
            AudioFixtureError: The utterance cannot be synthesized (the backend is missing or
                failed), naming why.
        """
        from ..synthesize._plan import check_fixture
        from ..synthesize._run import synthesize_specs

        probe = Transcript(
            id=transcript.id,
            turns=[Turn(user=text, audio=self.folder / "caller.wav")],
            voice=transcript.voice,
            path=transcript.path,
        )
        plan = self.planner.plan([probe])
        if plan.problems:
            raise AudioFixtureError(
                f"the caller's words {text!r} cannot be synthesized: {plan.problems[0].reason}"
            )
        spec = plan.specs[0]
        spec = replace(spec, wav=(self.folder / f"{spec.key[:32]}.wav").absolute())
        async with self._lock:
            if check_fixture(spec).is_fresh:
                return spec.wav
            results = await asyncio.to_thread(
                synthesize_specs, [spec], jobs=1, planner=self.planner
            )
        failed = [r for r in results if not r.ok]
        if failed or not results:
            why = failed[0].error if failed else "nothing was made"
            raise AudioFixtureError(f"the caller's words {text!r} could not be synthesized: {why}")
        self.synthesized += 1
        return spec.wav
