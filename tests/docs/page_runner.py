"""Run one docs page's snippets in its scratch project: ``python page_runner.py PROJECT PLAN``.

Started by tests/docs/test_snippets.py in a process of its own, so the modules a page imports
(its ``my_app``, its conftest) never meet another page's. PLAN is a JSON list of blocks (see
`snippets.page_plan`). Every file block is written first; then every block runs in page order.
Prints one line per block (``ok`` or ``FAIL`` with the reason) and exits 1 if any failed.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import subprocess
import sys
import time
import tomllib
import traceback
from pathlib import Path
from typing import Any

SHELL_TIMEOUT_S = 600


def _write_files(project: Path, plan: list[dict[str, Any]]) -> None:
    for step in plan:
        if step["path"]:
            target = project / step["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step["text"], encoding="utf-8")


def _snippet_traceback(exc: BaseException, where: str) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(where)]
    lines = [f"  {f.filename} line {f.lineno}: {f.line}" for f in frames[-3:]]
    return "\n".join([f"{type(exc).__name__}: {exc}", *lines])


class PageRun:
    def __init__(self, project: Path) -> None:
        self.project = project
        self.namespace: dict[str, Any] = {"__name__": "__snippets__"}
        self.loop = asyncio.new_event_loop()
        sys.path[:0] = [str(project)]

    def python(self, step: dict[str, Any]) -> None:
        # Like notebook cells: every Python block of the page runs in one namespace, in order.
        # A file block is on disk too (written before anything ran) and its folder importable.
        where = f"{step['page']}:{step['line']}"
        code = compile(step["text"], where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        if step["path"]:
            folder = str((self.project / step["path"]).parent)
            if folder not in sys.path:
                sys.path.insert(1, folder)
        self._exec(code, self.namespace)

    def _exec(self, code: Any, namespace: dict[str, Any]) -> None:
        result = eval(code, namespace)  # top-level await makes a coroutine
        if asyncio.iscoroutine(result):
            self.loop.run_until_complete(result)

    def yaml(self, step: dict[str, Any]) -> None:
        from pytest_agent_eval._loader import load_transcript_file

        path = step["path"] or f"_snippet_{Path(step['page']).stem}_{step['line']}.yaml"
        target = self.project / path
        if not step["path"]:
            target.write_text(step["text"], encoding="utf-8")
        from pytest_agent_eval.simulation._model import file_kind

        if file_kind(target) is not None:  # a simulation, or LiveKit's scenarios.yaml
            from pytest_agent_eval.simulation import load_simulation_file

            load_simulation_file(target)
            return
        from pytest_agent_eval._turn_gate._spec import (
            is_turn_taking_file,
            load_turn_taking_file,
        )

        if is_turn_taking_file(target):  # a turn_taking: gate (docs/turn-taking.md)
            load_turn_taking_file(target)
            return
        load_transcript_file(target)

    def toml(self, step: dict[str, Any]) -> None:
        from pytest_agent_eval._config import parse_settings

        data = tomllib.loads(step["text"])
        table = data.get("tool", {}).get("agent_eval")
        if table is None:
            return
        _, warnings = parse_settings(table, rootdir=self.project)
        if warnings:
            raise ValueError("; ".join(warnings))

    def json(self, step: dict[str, Any]) -> None:
        json.loads(step["text"])

    def bash(self, step: dict[str, Any]) -> None:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", step["text"]],
            cwd=self.project,
            capture_output=True,
            text=True,
            timeout=SHELL_TIMEOUT_S,
        )
        if done.returncode != 0:
            output = (done.stdout + done.stderr).strip().split("\n")
            tail = "\n".join(output[-40:])
            raise RuntimeError(f"exit status {done.returncode}:\n{tail}")

    sh = bash


def main(project: Path, plan: list[dict[str, Any]]) -> int:
    os.chdir(project)
    _write_files(project, plan)
    run = PageRun(project)
    failed = 0
    for step in plan:
        where = f"{step['page']}:{step['line']}"
        started = time.monotonic()
        try:
            getattr(run, step["lang"])(step)
        except BaseException as exc:  # a snippet may raise anything, SystemExit included
            failed += 1
            print(f"FAIL {where} ({step['lang']}): {_snippet_traceback(exc, where)}", flush=True)
        else:
            took = time.monotonic() - started
            print(f"ok   {where} ({step['lang']}, {took:.1f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    project_arg, plan_arg = sys.argv[1:3]
    raise SystemExit(main(Path(project_arg), json.loads(Path(plan_arg).read_text())))
