"""``python -m pytest_agent_eval.synthesize_audio --turn-taking-pack DIR [--seed N]``: write the
built-in turn-taking pack (`._pack.write_pack`) and say what was written."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError, MissingExtraError

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["add_arguments", "run_pack_command"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The pack's options, in their own group."""
    group = parser.add_argument_group("turn-taking pack (docs/turn-taking.md)")
    group.add_argument(
        "--turn-taking-pack", metavar="DIR", type=Path,
        help="write the built-in turn-taking stimuli (65 WAVs with sidecars and pack.json) "
        "into DIR, offline; no transcripts are read",
    )  # fmt: skip
    group.add_argument(
        "--seed", metavar="N", type=int, default=None,
        help="seed of the pack's sentences, pauses and sounds (default 0); the same seed "
        "writes the same bytes",
    )  # fmt: skip
    group.add_argument(
        "--stimulus", metavar="ID", action="append", default=None,
        help="write only this stimulus (repeatable), e.g. pause-01",
    )  # fmt: skip


def run_pack_command(args: argparse.Namespace, *, out: Console, err: Console) -> int | None:
    """Run the pack command when ``args`` asks for it; None when it does not (the caller goes
    on with fixtures). Returns the exit code: 0 written, 2 a usage or install problem."""
    from rich.markup import escape

    from ._pack import DEFAULT_SEED, PACK_MANIFEST, write_pack

    folder: Path | None = args.turn_taking_pack
    if folder is None:
        if args.seed is not None or args.stimulus:
            flag = "--seed" if args.seed is not None else "--stimulus"
            err.print(
                f"[bold red]error:[/] {flag} applies to the turn-taking pack only; add "
                "--turn-taking-pack DIR",
                markup=True,
            )
            return 2
        return None
    if args.paths:
        err.print(
            "[bold red]error:[/] --turn-taking-pack writes the built-in stimuli and reads no "
            f"transcripts; drop {escape(' '.join(map(str, args.paths)))}",
            markup=True,
        )
        return 2
    if folder.exists() and not folder.is_dir():
        err.print(f"[bold red]error:[/] {escape(str(folder))} is a file, not a folder", markup=True)
        return 2
    seed = DEFAULT_SEED if args.seed is None else args.seed

    def report(stimulus: object, wav: Path, audio_s: float) -> None:
        out.print(f"wrote         {wav}  {audio_s:.1f} s")

    try:
        summary = write_pack(folder, seed=seed, only=args.stimulus, on_written=report)
    except (ConfigError, MissingExtraError) as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", markup=True)
        return 2
    out.print(
        f"{len(summary.written)} turn-taking stimuli ({summary.audio_s:.1f} s of audio, seed "
        f"{seed}) in {folder} in {summary.seconds:.1f} s; {folder / PACK_MANIFEST} lists them"
    )
    return 0
