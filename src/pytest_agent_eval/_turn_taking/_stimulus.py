"""Typed records of turn-taking stimuli: what the caller does, and what the agent should do.

A `Stimulus` is one caller audio clip, written with the speech markers of
`pytest_agent_eval.voice._speech` (``[pause 1.2s]``, ``[filler um]``, ``[noise cough]``,
``[backchannel "uh-huh" at 2s]``), the voice that speaks it, the seed its sounds come from, and
the behaviour expected of the agent. `StimulusEvent` is where a marked element landed in the
rendered audio; the sidecar of each stimulus WAV lists them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Background",
    "Category",
    "Expected",
    "Stimulus",
    "StimulusEvent",
    "VoiceRef",
]


class Category(enum.StrEnum):
    """What a stimulus tests."""

    PAUSE = "pause"
    """The caller pauses mid-sentence (0.3-2.0 s), then finishes."""
    FILLER = "filler"
    """The caller hesitates with a filler ("um", "let me see") inside a pause, then finishes."""
    SHORT_ANSWER = "short_answer"
    """A one-word answer ("yes", "Tuesday") to the agent's question."""
    BACKCHANNEL = "backchannel"
    """"uh-huh", "yeah" while the agent speaks."""
    BARGE_IN = "barge_in"
    """"wait, stop" while the agent speaks."""
    NOISE = "noise"
    """A cough, a click, a door or a laugh: after the caller finished, or while the agent
    speaks."""
    SIDE_SPEECH = "side_speech"
    """Another voice, lower, behind the caller or while the agent speaks."""


class Expected(enum.StrEnum):
    """The behaviour a stimulus asks of the agent."""

    RESPOND = "respond"
    """Wait until the caller's speech is over (through every pause and filler), then answer."""
    KEEP_SPEAKING = "keep_speaking"
    """The agent is speaking: it goes on (does not stop, does not take a new turn)."""
    YIELD = "yield"
    """The agent is speaking: it stops (the caller is taking the turn)."""


@dataclass(frozen=True, slots=True)
class VoiceRef:
    """An offline voice: a TTS backend and its voice."""

    backend: str
    voice: str

    @property
    def label(self) -> str:
        return f"{self.backend}/{self.voice}"


@dataclass(frozen=True, slots=True)
class Background:
    """Side speech: another voice saying ``text``, ``level_db`` under the caller, from ``at_s``
    seconds into the audio."""

    text: str
    voice: VoiceRef
    level_db: float = -12.0
    at_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Stimulus:
    """One caller clip of the pack, and what the agent should do with it."""

    id: str
    """Unique in its pack; also the WAV's file name (``<id>.wav``)."""
    category: Category
    text: str
    """The caller's speech, with markers."""
    voice: VoiceRef
    expect: Expected
    agent_speaking: bool = False
    """True when the clip plays while the agent speaks (a backchannel, a barge-in, noise over
    the agent): a runner starts the agent's reply before the clip."""
    agent_line: str | None = None
    """What the agent says first: the question before a short answer, or the speech the clip
    plays over. A runner scripts the agent's LLM with it."""
    seed: int = 0
    """Where the clip's sounds come from (`_sounds.sound_seed`)."""
    gain_db: float = 0.0
    """The caller's level against the usual -20 dBFS (a quiet caller is -10)."""
    background: Background | None = None

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "id": self.id,
            "category": self.category.value,
            "text": self.text,
            "voice": {"backend": self.voice.backend, "voice": self.voice.voice},
            "expect": self.expect.value,
            "agent_speaking": self.agent_speaking,
            "agent_line": self.agent_line,
            "seed": self.seed,
            "gain_db": self.gain_db,
        }
        if self.background is not None:
            bg = self.background
            doc["background"] = {
                "text": bg.text,
                "voice": {"backend": bg.voice.backend, "voice": bg.voice.voice},
                "level_db": bg.level_db,
                "at_s": bg.at_s,
            }
        return doc

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Stimulus:
        """Inverse of `to_dict`.

        Raises:
            ValueError: A field is missing or has the wrong value.
        """
        try:
            background = None
            if doc.get("background") is not None:
                bg = doc["background"]
                background = Background(
                    text=str(bg["text"]),
                    voice=VoiceRef(str(bg["voice"]["backend"]), str(bg["voice"]["voice"])),
                    level_db=float(bg["level_db"]),
                    at_s=float(bg["at_s"]),
                )
            return cls(
                id=str(doc["id"]),
                category=Category(doc["category"]),
                text=str(doc["text"]),
                voice=VoiceRef(str(doc["voice"]["backend"]), str(doc["voice"]["voice"])),
                expect=Expected(doc["expect"]),
                agent_speaking=bool(doc.get("agent_speaking", False)),
                agent_line=doc.get("agent_line"),
                seed=int(doc.get("seed", 0)),
                gain_db=float(doc.get("gain_db", 0.0)),
                background=background,
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"stimulus record is missing or mistypes {exc}") from exc


@dataclass(frozen=True, slots=True, kw_only=True)
class StimulusEvent:
    """Where one element of a stimulus sits in its rendered audio."""

    kind: str
    """``speech``, ``filler``, ``pause``, ``noise``, ``backchannel`` or ``side_speech``."""
    start_s: float
    end_s: float
    text: str | None = None
    """The words (speech, filler, backchannel, side speech)."""
    sound: str | None = None
    """The sound (noise)."""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"kind": self.kind, "start_s": self.start_s, "end_s": self.end_s}
        if self.text is not None:
            doc["text"] = self.text
        if self.sound is not None:
            doc["sound"] = self.sound
        doc.update(self.extra)
        return doc
