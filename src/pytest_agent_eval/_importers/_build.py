"""One import, planned in full before anything is written: the conversation read, each user
turn's audio cut and heard, the expectations drafted, the YAML rendered and validated by the
transcript loader. `write_import` then writes the result (fixtures first, the YAML last)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .._loader import load_transcript_text
from ..errors import TranscriptError
from ..voice._fixtures import encode_wav, max_fixture_s
from ..voice._speech import marker_keyword
from ._call import CallImportError, ImportedCall, Notice, UserTurn
from ._draft import ReplyDraft, draft_greeting, draft_turn
from ._heard import HeardCut, hear_cuts
from ._recording import Cut, Recording, UserChannel, cut_turns, open_recording
from ._render import TurnText, render_transcript

__all__ = ["ImportRequest", "Imported", "PlannedFixture", "plan_import"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportRequest:
    """What the command line asked for."""

    out: Path
    """The transcript to write; fixtures go beside it."""
    command: str
    """How the import was run, for the header (``agent-eval import livekit``)."""
    transcript_id: str | None = None
    expect: bool = True
    reply: ReplyDraft = "terms"
    recording: Path | None = None
    user_channel: UserChannel = "left"
    measure_wer: bool = True
    stt_model: str | os.PathLike[str] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedFixture:
    """A recording fixture to write: one user turn's audio."""

    turn: int
    path: Path
    data: bytes
    cut: Cut
    heard: HeardCut | None


@dataclass(slots=True, kw_only=True)
class Imported:
    """Everything one import writes, and what it has to say."""

    transcript_path: Path
    transcript_id: str
    yaml_text: str
    conversation: ImportedCall
    fixtures: list[PlannedFixture] = field(default_factory=list)
    synthesized_turns: list[int] = field(default_factory=list)
    """Audio turns whose fixture the synthesizer has to make."""
    notices: list[Notice] = field(default_factory=list)
    drafted: bool = False
    """Whether any expectation was drafted (then there is something to review)."""


def _user_text(text: str, number: int, notices: list[Notice]) -> str:
    """The words as the call transcribed them, safe from reading as a pause marker."""
    words = " ".join(text.split())
    keyword = marker_keyword(words)
    if keyword is not None:
        notices.append(
            Notice(
                text=f"its text holds '[{keyword}', which transcripts read as a {keyword} "
                f"marker; written with '({keyword}' instead",
                turn=number,
            )
        )
        words = words.replace("[", "(").replace("]", ")")
    return words


def plan_import(conversation: ImportedCall, request: ImportRequest) -> Imported:
    """Plan the import of ``conversation``: nothing is written.

    Raises:
        CallImportError: The recording cannot be used, or the rendered transcript does not
            load (a bug: the message says so).
    """
    notices = list(conversation.notices)
    out = request.out
    transcript_id = request.transcript_id or out.stem
    cuts: dict[int, Cut] = {}
    recording: Recording | None = None
    if request.recording is not None:
        recording, opened = open_recording(request.recording, user_channel=request.user_channel)
        notices.extend(opened)
        cuts, cut_notices = cut_turns(conversation, recording)
        notices.extend(cut_notices)
        limit = max_fixture_s()
        for number, cut in sorted(cuts.items()):
            if cut.clip.duration_s > limit:
                notices.append(
                    Notice(
                        text=f"its audio is {cut.clip.duration_s:.1f} s long, over the "
                        f"{limit:g} s limit for a fixture (max_fixture_s): pytest will refuse "
                        "it until you raise max_fixture_s in [tool.agent_eval]",
                        turn=number,
                    )
                )
    users = [
        _user_text(turn.text, number, notices) for number, turn in enumerate(conversation.turns, 1)
    ]
    heard: dict[int, HeardCut] = {}
    if cuts and request.measure_wer:
        heard, heard_notices = hear_cuts(cuts, {n: users[n - 1] for n in cuts}, request.stt_model)
        notices.extend(heard_notices)

    voice = conversation.kind == "livekit"
    fixtures: list[PlannedFixture] = []
    synthesized: list[int] = []
    turns: list[TurnText] = []
    for number, turn in enumerate(conversation.turns, 1):
        notes: list[str] = []
        audio: str | None = None
        if voice and turn.spoken:
            audio = f"{out.stem}_t{number}.wav"
            if number in cuts:
                assert recording is not None
                fixture = PlannedFixture(
                    turn=number,
                    path=out.parent / audio,
                    data=encode_wav(cuts[number].clip),
                    cut=cuts[number],
                    heard=heard.get(number),
                )
                fixtures.append(fixture)
                notes += _cut_notes(turn, fixture, recording, measured=request.measure_wer)
            else:
                notes.append(f"{_spoken(number, turn)}; {audio} is synthesized from the text")
                synthesized.append(number)
        elif voice:
            notes.append(f"turn {number}: typed in the call, not spoken: a text turn")
        notes += [f"warning: {n.text}" for n in notices if n.turn == number]
        drafts = draft_turn(turn, conversation, request.reply) if request.expect else []
        quiet = None
        if request.expect and not drafts:
            quiet = "the agent said nothing and called no tool after this message in the call"
        turns.append(
            TurnText(
                user=users[number - 1], audio=audio, notes=notes, drafts=drafts, quiet_note=quiet
            )
        )

    greeting = draft_greeting(conversation) if request.expect else None
    greeting_notes: list[str] = []
    if conversation.greeting_tools:
        names = ", ".join(dict.fromkeys(t.name for t in conversation.greeting_tools))
        greeting_notes.append(
            f"before the first user message the agent also called {names}; greeting: checks "
            "words only, so these calls are not checked"
        )
    if conversation.greeting and not voice:
        greeting_notes.append(
            "the agent spoke before the first user message; text adapters do not report a "
            "greeting, so it is not checked"
        )
    header = _header(conversation, request, recording, synthesized, cuts)
    text = render_transcript(
        transcript_id=transcript_id,
        description=f"A real conversation, imported from {conversation.source}.",
        header=header,
        greeting=greeting,
        greeting_notes=greeting_notes,
        turns=turns,
    )
    _validate(text, out, turns)
    return Imported(
        transcript_path=out,
        transcript_id=transcript_id,
        yaml_text=text,
        conversation=conversation,
        fixtures=fixtures,
        synthesized_turns=synthesized,
        notices=notices,
        drafted=greeting is not None or any(t.drafts for t in turns),
    )


def _spoken(number: int, turn: UserTurn) -> str:
    if turn.span is None:
        return f"turn {number}: the user spoke (the report has no speaking times)"
    return f"turn {number}: the user spoke at {turn.span} of the call"


def _cut_notes(
    turn: UserTurn, fixture: PlannedFixture, recording: Recording, *, measured: bool
) -> list[str]:
    """Where a fixture was cut from, and what Whisper heard in it."""
    notes = [
        f"{_spoken(fixture.turn, turn)}; {fixture.path.name} is their own voice, cut from the "
        f"user channel of {recording.path.name} at {fixture.cut.window}"
    ]
    if fixture.heard is not None:
        notes.append(
            f"Whisper {fixture.heard.model} hears {fixture.heard.text!r} in it: WER "
            f"{fixture.heard.wer:.2f} against the report's transcription"
        )
    elif measured:
        notes.append("its WER against the report's transcription was not measured")
    return notes


def _header(
    conversation: ImportedCall,
    request: ImportRequest,
    recording: Recording | None,
    synthesized: list[int],
    cuts: dict[int, Cut],
) -> list[str]:
    source = conversation.source
    if recording is not None:
        source += f" and the user channel of its recording {recording.path.name}"
    header = [f"Imported by `{request.command}` from {source}."]
    if request.expect:
        header.append(
            'Review it before you trust it: each key under a "draft" comment is a guess from '
            "what the agent did in that call. Keep what must hold, loosen or delete the rest, "
            "then delete the draft comments."
        )
    if cuts:
        header.append(
            "The fixtures cut from the recording are the caller's own voice (recordings): run "
            "them with a speech recognizer such as WhisperSTT, not FixtureTextSTT, which "
            "answers only for synthesized fixtures."
        )
    if synthesized:
        header.append(
            "Fixtures not cut from a recording are synthesized from their text: "
            f"python -m pytest_agent_eval.synthesize_audio {request.out.name}"
        )
    return header


def _validate(text: str, out: Path, turns: list[TurnText]) -> None:
    """Load the rendered text as the plugin will; a transcript that does not load, or reads
    back with other words or tool arguments than drafted, is a bug of the importer and is
    never written."""
    try:
        loaded = load_transcript_text(text, path=out.resolve(), audio_roots=[out.parent.resolve()])
    except TranscriptError as exc:
        raise CallImportError(
            f"the imported transcript does not load ({exc}); nothing was written. This is a "
            "bug of the importer: please report it with the input"
        ) from None
    read_back = [
        (turn.user, [(a.tool, a.args) for a in turn.expect.tool_calls_args])
        for turn in loaded.turns
    ]
    meant = [
        (
            turn.user,
            [
                (call["tool"], call["args"])
                for draft in turn.drafts
                if draft.key == "tool_calls_args" and draft.active
                for call in draft.value
            ],
        )
        for turn in turns
    ]
    if read_back != meant:
        raise CallImportError(
            "the imported transcript reads back with other user texts or tool arguments than "
            "were drafted; nothing was written. This is a bug of the importer: please report "
            "it with the input"
        )
