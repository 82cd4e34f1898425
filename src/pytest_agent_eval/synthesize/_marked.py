"""Fixtures whose text holds turn-taking markers (``[filler ...]``, ``[noise ...]``,
``[backchannel ... at T]``): rendered by `pytest_agent_eval._turn_taking._render`, written like
every fixture (pending sidecar, WAV carrying its key, final sidecar), with the timed ``events``
in the sidecar."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable

from .._atomic import write_atomic
from .._turn_taking._render import render_marked, speaker
from .._turn_taking._sounds import sound_seed
from ..errors import AudioFixtureError
from ..voice._fixtures import (
    AudioClip,
    PostProcess,
    Sidecar,
    align_words,
    embedded_comment,
    encode_wav,
    max_fixture_s,
    pcm16_clip,
    to_pcm16_bytes,
    voiced_frames,
    write_sidecar,
)
from ._plan import FixtureSpec, sidecar_for

__all__ = ["write_marked_fixture"]


def write_marked_fixture(spec: FixtureSpec, synthesize: Callable[[str], AudioClip]) -> float:
    """Render ``spec``'s marked text with ``synthesize`` (one text at the engine's rate) and
    write its WAV and sidecar; returns the seconds of audio.

    Raises:
        AudioFixtureError: Nothing audible, or longer than the fixture duration cap.
        PauseMarkupError: A bad marker (the planner reports those before synthesis).
    """
    params = PostProcess(**spec.inputs["postprocess"])
    rate = int(spec.inputs["sample_rate"])
    rendered = render_marked(
        spec.text,
        speaker(synthesize, rate),
        sample_rate=rate,
        params=params,
        seed=sound_seed(spec.settings.seed or 0, "fixture"),
    )
    out = rendered.clip
    if voiced_frames(out)[0].size == 0:
        raise AudioFixtureError(
            f"the {spec.inputs['backend']} backend produced no audible audio for {spec.text!r}"
        )
    if out.duration_s > max_fixture_s():
        raise AudioFixtureError(
            f"the audio is {out.duration_s:.1f} s long, over the {max_fixture_s():g} s limit for "
            "a fixture; shorten the turn's text, pauses or marker times, or raise "
            "max_fixture_s in [tool.agent_eval]"
        )
    events = tuple(e.to_dict() for e in rendered.events)
    words = align_words(pcm16_clip(out), rendered.phrases) if rendered.phrases else ()
    record = sidecar_for(
        spec, wav_bytes=None, wav_sha256=None, duration_s=out.duration_s, phrases=rendered.phrases
    )
    comment = embedded_comment(record, hashlib.sha256(to_pcm16_bytes(out)).hexdigest())
    spec.wav.parent.mkdir(parents=True, exist_ok=True)
    write_sidecar(spec.wav, Sidecar(text=spec.text, inputs=dict(spec.inputs), pending=True))
    wav = write_atomic(spec.wav, encode_wav(out, comment=comment))
    final = sidecar_for(
        spec, wav_bytes=wav.size_bytes, wav_sha256=wav.sha256, duration_s=out.duration_s,
        phrases=rendered.phrases, words=words,
    )  # fmt: skip
    write_sidecar(spec.wav, dataclasses.replace(final, events=events))
    return out.duration_s
