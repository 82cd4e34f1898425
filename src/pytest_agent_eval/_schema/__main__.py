"""``python -m pytest_agent_eval._schema [--check] [--root DIR]``: regenerate the transcript and
simulation schemas (packaged and published copies) and their reference pages
docs/yaml-reference.md and docs/simulation-reference.md.

Run it from the repository root after adding or changing an expectation. ``--check`` writes
nothing and exits 1 naming every file that is out of date.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .._atomic import write_atomic
from . import PACKAGED_SCHEMA, reference_page, render_schema
from ._simulation import render_simulation_schema, simulation_reference_page

__all__ = ["main"]


def _targets(root: Path) -> dict[Path, str]:
    schema = render_schema()
    docs = root / "docs"
    if not docs.is_dir():
        raise SystemExit(f"{docs} not found: run from the repository root or pass --root")
    simulation = render_simulation_schema()
    return {
        PACKAGED_SCHEMA: schema,
        docs / "schema" / "transcript.json": schema,
        docs / "yaml-reference.md": reference_page(),
        PACKAGED_SCHEMA.with_name("simulation.json"): simulation,
        docs / "schema" / "simulation.json": simulation,
        docs / "simulation-reference.md": simulation_reference_page(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Regenerate (or with ``--check``, compare) the generated files; return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m pytest_agent_eval._schema")
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 if stale")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="repository root")
    args = parser.parse_args(argv)
    stale = []
    for path, text in _targets(args.root).items():
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        stale.append(path)
        if not args.check:
            write_atomic(path, text)
    verb = "out of date" if args.check else "rewritten"
    for path in stale:
        print(f"{verb}: {path}")
    if args.check and stale:
        print("run: python -m pytest_agent_eval._schema", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
