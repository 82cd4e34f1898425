"""The framework-neutral voice core: what every voice adapter (LiveKit, Pipecat) shares.

Fixture loading and provenance, audio conditions, the speech-segment record, barge-in
planning, what the agent heard (fixture text, word timings and the words each segment holds,
the turn-covers-all-its-audio rule), latency, the scripted LLM's rules, the offline TTS engines and the speech markup of a
turn's ``user`` text. Nothing here imports LiveKit or Pipecat: each adapter binds these pieces
to its framework (``adapters/livekit``, ``adapters/pipecat``).

Map (all private modules; the public names are the ten below):

- fixtures on disk: ``_clip`` (WAV I/O), ``_sidecar``, ``_provenance``, ``_status`` (is a
  fixture's text proved?), ``_words`` (word timings measured on a fixture), ``_validate``,
  ``_stats``, ``_effects``, ``_transcripts`` (the recognition cache), ``_fixtures`` (all of
  them in one namespace);
- streaming: ``_fixture_pcm`` (a fixture as PCM at a rate, with its conditions applied),
  ``_degrade`` (the conditions' DSP), ``_segments`` (speech segments in fixture time);
- hearing: ``_whisper``, ``_wer``, ``_heard`` (fixture text, words to segments),
  ``_hearing`` (when a turn has had all its audio), ``_speech`` (pause markup);
- turns: ``_barge_in`` (where an interruption falls in a reply), ``_latency``, ``_timeline``
  (the builder of a turn's timeline record),
  ``_script`` (the scripted LLM's rules), ``_factory`` (what a user's factory wants);
- ``_tts/``: the offline TTS engines and their registry, shared by the synthesizer and the
  adapters' TTS services; ``_timeshim``: per-thread clocks for the Pipecat adapter.

Light to import: the names below load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._fixtures import (
        AudioClip,
        EmbeddedRecord,
        FixtureCheck,
        judge_fixture,
        read_embedded,
        transcript_cache,
    )
    from ._speech import Pause, Phrase, split_speech, spoken_text

__all__ = [
    "AudioClip",
    "EmbeddedRecord",
    "FixtureCheck",
    "Pause",
    "Phrase",
    "judge_fixture",
    "read_embedded",
    "split_speech",
    "spoken_text",
    "transcript_cache",
]

_HOMES = {
    "AudioClip": "_fixtures",
    "EmbeddedRecord": "_fixtures",
    "FixtureCheck": "_fixtures",
    "judge_fixture": "_fixtures",
    "read_embedded": "_fixtures",
    "transcript_cache": "_fixtures",
    "Pause": "_speech",
    "Phrase": "_speech",
    "split_speech": "_speech",
    "spoken_text": "_speech",
}


def __getattr__(name: str) -> Any:
    import importlib

    home = _HOMES.get(name)
    if home is None:
        # An old name (``Verdict``, now `FixtureCheck`) is the legacy table's: found by name,
        # never imported here, it warns and hands back the new object.
        legacy = importlib.import_module("pytest_agent_eval.legacy")
        if name in legacy.MOVED.get(__name__, {}):
            return legacy.moved_attr(__name__, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
