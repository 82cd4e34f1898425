"""The built-in turn-taking pack: 65 stimuli over three offline voices, made from a seed.

`build_pack` lists the stimuli (the seed picks the sentences, pause lengths, fillers, sounds and
when a barge-in comes); `write_pack` renders them with the offline voices (hibari, piper's joe,
espeak-ng) and writes, per stimulus, ``<id>.wav`` and its ``<id>.wav.hash`` sidecar (the
stimulus record and every input in ``inputs``, the timed ``events``), then ``pack.json`` listing
them all with their hashes. Nothing is downloaded; the same seed on the same environment gives
the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._atomic import write_atomic
from ..errors import ConfigError
from ..models import VoiceSettings
from ..voice._clip import encode_wav, to_pcm16_bytes
from ..voice._effects import PostProcess
from ..voice._provenance import embedded_comment
from ..voice._sidecar import Sidecar, write_sidecar
from ..voice._tts._registry import TTSBackend, get_backend
from ._render import Rendered, render_marked, speaker
from ._sounds import SOUNDS_VERSION, sound_seed
from ._stimulus import Background, Category, Expected, Stimulus, VoiceRef

__all__ = [
    "DEFAULT_SEED",
    "PACK_FORMAT",
    "PACK_MANIFEST",
    "PACK_VOICES",
    "SIDE_VOICE",
    "PackSummary",
    "build_pack",
    "write_pack",
]

PACK_FORMAT = 1
"""Bumped when the pack's recipe changes in a way its inputs do not show."""
PACK_MANIFEST = "pack.json"
DEFAULT_SEED = 0
SAMPLE_RATE = 16000

PACK_VOICES = (
    VoiceRef("hibari", "heart"),
    VoiceRef("piper", "joe"),
    VoiceRef("espeak", "en-us"),
)
"""The callers: the three offline voices (female neural, male neural, formant synthesis)."""
SIDE_VOICE = VoiceRef("espeak", "en-gb")
"""The other voice of side speech."""

_AGENT_LINE = (
    "Your appointment is confirmed for Thursday at three in the afternoon with Doctor Patel. "
    "You will get a reminder by text the day before, and you can reply to it to cancel."
)
_PAUSED = (
    ("I'd like to book a table for", "four people on Friday evening."),
    ("My account number is", "four five seven two nine."),
    ("I need to change my", "delivery address, please."),
    ("Can you tell me", "when the pharmacy opens tomorrow?"),
    ("I'm calling about the", "invoice I got last week."),
    ("We would like to", "upgrade our plan to the family one."),
)
_PAUSES_S = (0.3, 0.5, 0.7, 0.9, 1.1, 1.3, 1.5, 1.7, 1.8, 1.9, 2.0, 1.0)
_FILLERS = ("um", "uh", "let me see", "hmm", "you know")
_ANSWERS = (
    ("Is that for this week?", "Yes."),
    ("Which day suits you?", "Tuesday."),
    ("How many tickets?", "Five."),
    ("Shall I send a copy by email?", "No."),
    ("Can I put you on hold for a moment?", "Sure."),
    ("What time works best?", "Noon."),
)
_BACKCHANNELS = ("Uh-huh.", "Yeah.", "Mm-hmm.", "Okay.", "Right.")
_BARGE_INS = (
    "Wait, stop.",
    "No, actually, I meant next week.",
    "Sorry, hold on a second.",
    "Stop, that's wrong.",
)
_BARGE_AT_S = (0.8, 1.5, 2.5)
_EVENT_NOISES = ("cough", "click", "door", "laugh")
_SIDE_LINES = (
    "Did you see the game last night?",
    "And now, the weather for the weekend.",
    "Can you pass me the salt?",
)


def build_pack(seed: int = DEFAULT_SEED) -> list[Stimulus]:
    """The pack's stimuli for ``seed``: 12 pauses, 9 fillers, 9 short answers, 10
    backchannels, 9 barge-ins, 10 noises and 6 side-speech clips, the voices taking turns."""
    rng = random.Random(seed)
    out: list[Stimulus] = []

    def add(category: Category, text: str, expect: Expected, **kw: Any) -> None:
        index = sum(1 for s in out if s.category is category) + 1
        sid = f"{category.value}-{index:02d}"
        voice = PACK_VOICES[(len(out)) % len(PACK_VOICES)]
        out.append(
            Stimulus(
                id=sid,
                category=category,
                text=text,
                voice=voice,
                expect=expect,
                seed=sound_seed(seed, sid),
                **kw,
            )
        )

    pauses = list(_PAUSES_S)
    rng.shuffle(pauses)
    for pause in pauses:
        head, tail = rng.choice(_PAUSED)
        add(Category.PAUSE, f"{head} [pause {pause:g}s] {tail}", Expected.RESPOND)
    for i in range(9):
        head, tail = rng.choice(_PAUSED)
        filler = _FILLERS[i % len(_FILLERS)]
        before, after = round(rng.uniform(0.2, 0.6), 1), round(rng.uniform(0.3, 1.2), 1)
        text = f"{head} [pause {before:g}s] [filler {filler}] [pause {after:g}s] {tail}"
        if " " in filler:
            text = f'{head} [pause {before:g}s] [filler "{filler}"] [pause {after:g}s] {tail}'
        add(Category.FILLER, text, Expected.RESPOND)
    answers = [rng.choice(_ANSWERS) for _ in range(9)]
    for question, answer in answers:
        add(Category.SHORT_ANSWER, answer, Expected.RESPOND, agent_line=question)
    for i in range(10):
        word = _BACKCHANNELS[i % len(_BACKCHANNELS)]
        at = round(rng.uniform(1.0, 4.0), 1)
        add(
            Category.BACKCHANNEL,
            f"[pause {at:g}s] {word}",
            Expected.KEEP_SPEAKING,
            agent_speaking=True,
            agent_line=_AGENT_LINE,
        )
    for i in range(9):
        words = rng.choice(_BARGE_INS)
        at = _BARGE_AT_S[i % len(_BARGE_AT_S)]
        add(
            Category.BARGE_IN,
            f"[pause {at:g}s] {words}",
            Expected.YIELD,
            agent_speaking=True,
            agent_line=_AGENT_LINE,
        )
    for i in range(10):
        kind = _EVENT_NOISES[i % len(_EVENT_NOISES)]
        if i % 2 == 0:  # after the caller finished, before the agent answers (livekit #1229)
            gap = round(rng.uniform(0.1, 0.4), 1)
            text = f"That's all I needed, thanks. [pause {gap:g}s] [noise {kind}]"
            add(Category.NOISE, text, Expected.RESPOND)
        else:  # over the agent's speech
            at = round(rng.uniform(1.0, 3.0), 1)
            add(
                Category.NOISE,
                f"[noise {kind} at {at:g}s]",
                Expected.KEEP_SPEAKING,
                agent_speaking=True,
                agent_line=_AGENT_LINE,
            )
    for i in range(6):
        line = rng.choice(_SIDE_LINES)
        level = -12.0 if i % 2 == 0 else -18.0
        if i < 3:  # behind the caller
            head, tail = rng.choice(_PAUSED)
            add(
                Category.SIDE_SPEECH,
                f"{head} {tail}",
                Expected.RESPOND,
                background=Background(text=line, voice=SIDE_VOICE, level_db=level, at_s=0.4),
            )
        else:  # while the agent speaks, nobody talking to it
            at = round(rng.uniform(1.0, 3.0), 1)
            add(
                Category.SIDE_SPEECH,
                "",
                Expected.KEEP_SPEAKING,
                agent_speaking=True,
                agent_line=_AGENT_LINE,
                background=Background(text=line, voice=SIDE_VOICE, level_db=level, at_s=at),
            )
    return out


@dataclass(slots=True)
class PackSummary:
    """What `write_pack` wrote."""

    folder: Path
    written: list[Path] = field(default_factory=list)
    """The WAVs."""
    audio_s: float = 0.0
    seconds: float = 0.0


class _Voices:
    """One backend instance and resolved settings per voice, built on first use."""

    def __init__(self, sample_rate: int) -> None:
        self.sample_rate = sample_rate
        self._backends: dict[str, TTSBackend] = {}
        self._settings: dict[VoiceRef, VoiceSettings] = {}
        self._speakers: dict[VoiceRef, Callable[[str], Any]] = {}

    def backend(self, ref: VoiceRef) -> TTSBackend:
        if ref.backend not in self._backends:
            self._backends[ref.backend] = get_backend(ref.backend)
        return self._backends[ref.backend]

    def settings(self, ref: VoiceRef) -> VoiceSettings:
        if ref not in self._settings:
            self._settings[ref] = self.backend(ref).resolve(
                VoiceSettings(voice=ref.voice, sample_rate=self.sample_rate)
            )
        return self._settings[ref]

    def speak(self, ref: VoiceRef) -> Callable[[str], Any]:
        if ref not in self._speakers:
            backend, settings = self.backend(ref), self.settings(ref)
            self._speakers[ref] = speaker(
                lambda text: backend.synthesize(text, settings), self.sample_rate
            )
        return self._speakers[ref]

    def identity(self, ref: VoiceRef) -> dict[str, Any]:
        settings = self.settings(ref)
        return {
            "backend": ref.backend,
            "backend_version": self.backend(ref).version(),
            "voice": ref.voice,
            "speed": settings.speed,
            "seed": settings.seed,
        }


def _render(stimulus: Stimulus, voices: _Voices, params: PostProcess) -> Rendered:
    side = None
    if stimulus.background is not None:
        bg = stimulus.background
        side = (voices.speak(bg.voice)(bg.text), bg.at_s, bg.level_db, bg.text)
    return render_marked(
        stimulus.text,
        voices.speak(stimulus.voice),
        sample_rate=voices.sample_rate,
        params=params,
        seed=stimulus.seed,
        gain_db=stimulus.gain_db,
        side=side,
    )


def _inputs(stimulus: Stimulus, voices: _Voices, params: PostProcess, seed: int) -> dict[str, Any]:
    import numpy

    inputs = voices.identity(stimulus.voice) | {
        "sample_rate": voices.sample_rate,
        "postprocess": params.to_dict(),
        "turn_taking": {
            "pack_format": PACK_FORMAT,
            "pack_seed": seed,
            "sounds_version": SOUNDS_VERSION,
            "numpy": numpy.__version__,
            "stimulus": stimulus.to_dict(),
        },
    }
    if stimulus.background is not None:
        inputs["turn_taking"]["side_voice"] = voices.identity(stimulus.background.voice)
    return inputs


def write_pack(
    folder: Path,
    *,
    seed: int = DEFAULT_SEED,
    only: Sequence[str] | None = None,
    sample_rate: int = SAMPLE_RATE,
    on_written: Callable[[Stimulus, Path, float], None] | None = None,
) -> PackSummary:
    """Render the pack for ``seed`` into ``folder`` (created), each file written atomically.

    Args:
        folder: Where ``<id>.wav``, ``<id>.wav.hash`` and ``pack.json`` go.
        seed: The pack's seed.
        only: Stimulus ids to write (default all); ``pack.json`` lists those written.
        sample_rate: Of the WAVs.
        on_written: Called with each stimulus, its WAV and its seconds of audio.

    Raises:
        ConfigError: ``only`` names a stimulus the pack does not have.
        MissingExtraError: A voice's engine is not installed (the message says what to install).
    """
    start = time.perf_counter()
    stimuli = build_pack(seed)
    if only is not None:
        known = {s.id for s in stimuli}
        unknown = [i for i in only if i not in known]
        if unknown:
            raise ConfigError(
                f"the turn-taking pack has no stimulus {', '.join(map(repr, unknown))}; its ids "
                f"are {stimuli[0].id} ... {stimuli[-1].id} (category-NN, see pack.json)"
            )
        stimuli = [s for s in stimuli if s.id in set(only)]
    params = PostProcess()
    voices = _Voices(sample_rate)
    summary = PackSummary(folder=folder)
    listed: list[dict[str, Any]] = []
    folder.mkdir(parents=True, exist_ok=True)
    for stimulus in stimuli:
        rendered = _render(stimulus, voices, params)
        wav = folder / f"{stimulus.id}.wav"
        events = tuple(e.to_dict() for e in rendered.events)
        record = Sidecar(
            text=stimulus.text,
            inputs=_inputs(stimulus, voices, params, seed),
            duration_s=round(rendered.clip.duration_s, 4),
            phrases=rendered.phrases,
            events=events,
        )
        pcm = hashlib.sha256(to_pcm16_bytes(rendered.clip)).hexdigest()
        written = write_atomic(
            wav, encode_wav(rendered.clip, comment=embedded_comment(record, pcm))
        )
        write_sidecar(
            wav,
            Sidecar(
                text=record.text,
                inputs=record.inputs,
                wav_bytes=written.size_bytes,
                wav_sha256=written.sha256,
                duration_s=record.duration_s,
                phrases=record.phrases,
                events=events,
            ),
        )
        summary.written.append(wav)
        summary.audio_s += rendered.clip.duration_s
        listed.append(
            stimulus.to_dict()
            | {
                "wav": wav.name,
                "wav_sha256": written.sha256,
                "duration_s": record.duration_s,
                "caller_end_s": rendered.caller_end_s,
                "events": list(events),
            }
        )
        if on_written is not None:
            on_written(stimulus, wav, rendered.clip.duration_s)
    manifest = {
        "format": PACK_FORMAT,
        "seed": seed,
        "sample_rate": sample_rate,
        "made_by": _made_by(),
        "voices": {v.label: voices.identity(v) for v in _used_voices(stimuli)},
        "sounds_version": SOUNDS_VERSION,
        "stimuli": listed,
    }
    write_atomic(folder / PACK_MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    summary.seconds = time.perf_counter() - start
    return summary


def _used_voices(stimuli: Sequence[Stimulus]) -> list[VoiceRef]:
    used: list[VoiceRef] = []
    for s in stimuli:
        for ref in (s.voice, s.background.voice if s.background else None):
            if ref is not None and ref not in used:
                used.append(ref)
    return used


def _made_by() -> str:
    import importlib.metadata

    return f"pytest-agent-eval {importlib.metadata.version('pytest-agent-eval')}"
