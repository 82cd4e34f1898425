"""Word timings of a synthesized fixture: measured once from its audio, kept in its sidecar.

A stand-in STT (one that answers with the fixture's own text) must hand the agent a word only
once the audio it was given holds the end of that word (`pytest_agent_eval.voice._heard`). For
that it needs to know where each word ends. hibari gives audio only, piper gives phoneme
timings only for voices exported with them (the packaged ``joe`` is not), and fixtures made
before word timings existed need a measurement anyway; so every fixture is measured the same
way, from the finished WAV, once: when it is made, or later by the synthesize command (the WAV
is read, never rewritten). It needs no model and no download.

The measurement is an energy alignment inside each phrase (whose bounds the synthesizer knows
exactly):

1. the phrase's audio is cut into *stretches* of speech at every quiet run of at least
   `PAUSE_MIN_S` (frames more than `QUIET_BELOW_PEAK_DB` under the phrase's loudest frame);
2. the words are shared among the stretches in order, each stretch at least one word, by
   matching the share of the phrase's letters said so far against the share of its speech
   time, preferring cuts after punctuation (where engines pause);
3. the last word of a stretch ends where the stretch ends; the words before it are spread
   over the stretch by letter count.

A VAD can only end a segment at a pause, and every pause of `PAUSE_MIN_S` or more is a
stretch boundary, so the timings are measured exactly where they are used; word ends inside a
stretch are estimates (they matter for display only). ``docs/voice-fixtures.md`` gives the measured
error.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ._sidecar import Sidecar, TimedPhrase, TimedWord

if TYPE_CHECKING:
    from ._clip import AudioClip

__all__ = [
    "ALIGNMENT",
    "PAUSE_MIN_S",
    "QUIET_BELOW_PEAK_DB",
    "add_word_timings",
    "align_words",
    "pcm16_clip",
]

ALIGNMENT = "energy-1"
"""Names this measurement in the sidecar (``word_alignment``); a better one gets a new name."""
PAUSE_MIN_S = 0.15
"""The shortest quiet run taken for a pause between words: shorter than any VAD's silence
threshold we know of (Pipecat's Silero stops after 0.2 s, LiveKit's after 0.55 s), longer than
the closure of a stop consonant (a few tens of ms)."""
QUIET_BELOW_PEAK_DB = 40.0
"""A frame this far under the phrase's loudest frame is quiet."""
_FRAME_S = 0.01
_PUNCTUATION = re.compile(r"[,;:.!?\u2026\u2014-]['\")\]]*$")
_EARLY_COST = 1.3
"""How much worse a cut that puts more of the phrase before a pause than its speech time
suggests is than one that puts less (see `_cuts`)."""
_PUNCTUATION_BONUS = 0.08
"""How much closer to the speech-time share a cut after punctuation counts as (a fraction of
the phrase): engines pause there, rarely elsewhere."""


def _weight(word: str) -> float:
    """A word's length as spoken, roughly: its letters and a little for the word's edges; a
    token read letter by letter or digit by digit (``SW1A``, ``42``) counts each character as
    a short word."""
    chars = [c for c in word if c.isalnum()]
    if not chars:
        return 1.0
    spelled = any(c.isdigit() for c in chars) or (len(chars) > 1 and word.isupper())
    return (3.0 if spelled else 1.0) * len(chars) + 1.5


def _stretches(clip: AudioClip, start_s: float, end_s: float) -> list[tuple[float, float]]:
    """The speech stretches of ``clip`` between ``start_s`` and ``end_s``, split at pauses."""
    import numpy as np

    n = max(1, round(clip.sample_rate * _FRAME_S))
    a = max(0, int(start_s * clip.sample_rate))
    b = min(len(clip.samples), int(np.ceil(end_s * clip.sample_rate)))
    frames = (b - a) // n
    if frames < 1:
        return [(start_s, end_s)]
    chunk = clip.samples[a : a + frames * n].reshape(frames, n).astype(np.float64)
    level = 20.0 * np.log10(np.sqrt((chunk**2).mean(axis=1)) + 1e-12)
    quiet = level < level.max() - QUIET_BELOW_PEAK_DB
    min_run = round(PAUSE_MIN_S / _FRAME_S)
    out: list[tuple[float, float]] = []
    at = start_s
    i = 0
    while i < frames:
        if not quiet[i]:
            i += 1
            continue
        j = i
        while j < frames and quiet[j]:
            j += 1
        # A pause inside the phrase (not the phrase's own edges) ends a stretch.
        if j - i >= min_run and i > 0 and j < frames:
            gap_start = (a + i * n) / clip.sample_rate
            gap_end = (a + j * n) / clip.sample_rate
            out.append((at, gap_start))
            at = gap_end
        i = j
    out.append((at, end_s))
    return out


def _cuts(words: Sequence[str], stretches: Sequence[tuple[float, float]]) -> list[int]:
    """Where the words are cut between stretches: k-1 increasing word indices for k stretches
    (index i: words[:i] come before the cut), best matching letters to speech time."""
    k, n = len(stretches), len(words)
    weights = [_weight(w) for w in words]
    total_w = float(sum(weights))
    said = [0.0]
    for w in weights:
        said.append(said[-1] + w / total_w)
    speech = [e - s for s, e in stretches]
    total_s = sum(speech) or 1.0
    spoken, acc = [], 0.0
    for d in speech[:-1]:
        acc += d / total_s
        spoken.append(acc)

    def cost(j: int, i: int) -> float:
        bonus = _PUNCTUATION_BONUS if _PUNCTUATION.search(words[i - 1]) else 0.0
        off = said[i] - spoken[j]
        # Too many words before a pause would hand one out before it is said; too few only
        # late: when in doubt, cut early.
        return (_EARLY_COST * off if off > 0 else -off) - bonus

    # best[j][i]: least cost with cut j after word i (i in j+1 .. n-(k-1-j)).
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(k - 1)]
    back = [[0] * (n + 1) for _ in range(k - 1)]
    for j in range(k - 1):
        for i in range(j + 1, n - (k - 2 - j)):
            here = cost(j, i)
            if j == 0:
                best[j][i] = here
                continue
            prev = min(range(j, i), key=lambda p: best[j - 1][p])
            best[j][i] = best[j - 1][prev] + here
            back[j][i] = prev
    i = min(range(k - 1, n), key=lambda p: best[k - 2][p])
    cuts = [i]
    for j in range(k - 2, 0, -1):
        i = back[j][i]
        cuts.append(i)
    return cuts[::-1]


def _merge_shortest(stretches: list[tuple[float, float]], keep: int) -> list[tuple[float, float]]:
    """Join stretches across their shortest pauses until ``keep`` are left (a phrase of n
    words has at most n stretches)."""
    out = list(stretches)
    while len(out) > keep:
        j = min(range(len(out) - 1), key=lambda q: out[q + 1][0] - out[q][1])
        out[j : j + 2] = [(out[j][0], out[j + 1][1])]
    return out


def _align_phrase(clip: AudioClip, phrase: TimedPhrase) -> list[TimedWord]:
    words = phrase.text.split()
    if not words:
        return []
    stretches = _merge_shortest(_stretches(clip, phrase.start_s, phrase.end_s), len(words))
    cuts = [0, *(_cuts(words, stretches) if len(stretches) > 1 else []), len(words)]
    out: list[TimedWord] = []
    for (s, e), lo, hi in zip(stretches, cuts[:-1], cuts[1:], strict=True):
        group = words[lo:hi]
        weights = [_weight(w) for w in group]
        total = float(sum(weights))
        at = s
        for word, weight in zip(group, weights, strict=True):
            end = at + (e - s) * weight / total
            out.append(TimedWord(word, round(at, 3), round(end, 3)))
            at = end
        last = out[-1]
        out[-1] = TimedWord(last.text, last.start_s, round(e, 3))
    return out


def align_words(clip: AudioClip, phrases: Sequence[TimedPhrase]) -> tuple[TimedWord, ...]:
    """Where each word of ``phrases`` sits in ``clip`` (the fixture's WAV), in order.

    Args:
        clip: The whole fixture, as written.
        phrases: The phrases and their bounds, as the synthesizer recorded them.

    Returns:
        One `TimedWord` per whitespace-separated word of the phrases' text.
    """
    return tuple(w for phrase in phrases for w in _align_phrase(clip, phrase))


def pcm16_clip(clip: AudioClip) -> AudioClip:
    """``clip`` as its WAV will hold it (16-bit samples): words are measured on what is on
    disk, so a fixture timed when it is made and one timed later get the same timings."""
    from ._clip import clip_from_pcm16, to_pcm16_bytes

    return clip_from_pcm16(to_pcm16_bytes(clip), clip.sample_rate)


def add_word_timings(wav: str | os.PathLike[str]) -> Sidecar:
    """Measure the words of a synthesized fixture that has none in its sidecar, and write them
    into its sidecar. The WAV is only read: its bytes stay as they are.

    For fixtures made before word timings were recorded. Sidecars of format 1 have no phrase
    timings either; their speech is taken to lie between the padding the synthesizer added.

    Returns:
        The sidecar as written.

    Raises:
        AudioFixtureError: The fixture has no sidecar, or its WAV is not the one the sidecar
            describes (it is then stale, and the synthesizer makes it again instead).
    """
    from ..errors import AudioFixtureError
    from ._clip import read_wav
    from ._sidecar import read_sidecar, write_sidecar
    from ._speech import spoken_text

    path = Path(wav)
    sidecar = read_sidecar(path)
    if sidecar is None or sidecar.pending:
        raise AudioFixtureError(f"{path}: no sidecar to add word timings to")
    data = path.read_bytes()
    if sidecar.wav_sha256 is not None and hashlib.sha256(data).hexdigest() != sidecar.wav_sha256:
        raise AudioFixtureError(
            f"{path}: the WAV changed since it was synthesized; it must be made again, not timed"
        )
    clip = read_wav(path)
    phrases = sidecar.phrases
    if not phrases:
        pad = float((sidecar.inputs.get("postprocess") or {}).get("pad_s", 0.25))
        end = max(pad, clip.duration_s - pad)
        phrases = (TimedPhrase(spoken_text(sidecar.text), pad, end),)
    timed = replace(sidecar, words=align_words(clip, phrases), word_alignment=ALIGNMENT)
    write_sidecar(path, timed)
    return timed
