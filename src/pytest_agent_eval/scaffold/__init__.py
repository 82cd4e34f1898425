"""``python -m pytest_agent_eval init`` (or ``agent-eval init``): a first green eval suite.

It adds a sample transcript in ``tests/evals/``, a ``tests/conftest.py`` whose
``llm_eval_agent`` fixture fits the adapter the user picks, and the ``[tool.agent_eval]``
section of ``pyproject.toml``; the LiveKit and Pipecat choices also get a spoken transcript and
its WAV fixture, synthesized offline. It never overwrites a file: whatever exists is kept and reported,
so running it twice is harmless. The samples run offline, with clearly marked placeholders
standing in for the model, so ``pytest --agent-eval-live`` passes straight away.
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TextIO

from .._atomic import write_atomic
from ..errors import AgentEvalError, ConfigError, TranscriptError, require_extra

__all__ = [
    "ADAPTERS",
    "AdapterChoice",
    "ScaffoldError",
    "ScaffoldResult",
    "Step",
    "build_parser",
    "main",
    "resolve_adapter",
    "scaffold",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

EVALS_DIR = "tests/evals"
VOICE_TRANSCRIPT = f"{EVALS_DIR}/voice_opening_hours.yaml"


class ScaffoldError(AgentEvalError):
    """The project cannot be scaffolded as asked; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class AdapterChoice:
    """One adapter ``init`` can set up: its conftest template and what it needs installed."""

    name: str
    label: str
    conftest: str
    """Template file name in ``scaffold/templates``."""
    needs: tuple[str, ...] = ()
    """Modules that must import; all come with ``extra``."""
    extra: str = ""
    voice: bool = False
    """Also add the spoken transcript and synthesize its fixture."""
    voice_transcript: str = "voice_opening_hours.yaml"
    """Template of the spoken transcript."""


ADAPTERS: dict[str, AdapterChoice] = {
    choice.name: choice
    for choice in (
        AdapterChoice("callable", "a plain Python callable", "conftest_callable.py.txt"),
        AdapterChoice(
            "pydantic-ai",
            "a pydantic-ai Agent",
            "conftest_pydantic_ai.py.txt",
            needs=("pydantic_ai",),
            extra="openai",
        ),
        AdapterChoice(
            "openai",
            "the OpenAI SDK (Chat Completions with tools)",
            "conftest_openai.py.txt",
            needs=("openai", "httpx"),
            extra="openai",
        ),
        AdapterChoice(
            "livekit",
            "a LiveKit AgentSession (voice)",
            "conftest_livekit.py.txt",
            # The session, its VAD, and the offline voice that makes the sample's fixture.
            needs=("livekit.agents", "livekit.plugins.silero", "soundfile", "soxr", "hibari"),
            extra="livekit",
            voice=True,
        ),
        AdapterChoice(
            "pipecat",
            "a Pipecat pipeline (voice)",
            "conftest_pipecat.py.txt",
            # The pipeline's services, and the offline voice that makes the sample's fixture.
            needs=("pipecat.frames.frames", "soundfile", "soxr", "hibari"),
            extra="pipecat",
            voice=True,
            voice_transcript="voice_opening_hours_pipecat.yaml",
        ),
    )
}
"""The choices, in the order the prompt lists them."""


@dataclass(frozen=True, slots=True)
class Step:
    """One thing ``init`` did or left alone, for the report it prints."""

    action: str
    """``created``, ``appended``, ``kept`` or ``failed``."""
    path: str
    """Relative to the target folder, with ``/``."""
    note: str = ""

    def line(self) -> str:
        return f"  {self.action:<9} {self.path}" + (f": {self.note}" if self.note else "")


@dataclass(slots=True)
class ScaffoldResult:
    """Everything ``init`` did, in order."""

    target: Path
    adapter: AdapterChoice
    steps: list[Step] = field(default_factory=list)

    @property
    def created(self) -> list[str]:
        """Paths written or appended to; empty when a re-run found everything in place."""
        return [s.path for s in self.steps if s.action in ("created", "appended")]

    @property
    def ok(self) -> bool:
        return not any(s.action == "failed" for s in self.steps)


def _template(name: str) -> str:
    return resources.files(__package__).joinpath("templates", name).read_text(encoding="utf-8")


def resolve_adapter(name: str) -> AdapterChoice:
    """The choice called ``name`` (``pydantic_ai`` and any case accepted)."""
    key = name.strip().lower().replace("_", "-")
    if key not in ADAPTERS:
        raise ScaffoldError(
            f"unknown adapter {name!r}: pass --adapter with one of {', '.join(ADAPTERS)}"
        )
    return ADAPTERS[key]


def _prepare_target(target: Path) -> Path:
    target = target.expanduser().resolve()
    if target.exists() and not target.is_dir():
        raise ScaffoldError(
            f"{target} is a file, not a folder: pass the project folder (it is created if missing)"
        )
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ScaffoldError(
            f"cannot create the folder {target}: {exc.strerror or exc}; "
            "pass a folder you can write to"
        ) from exc
    if not os.access(target, os.W_OK | os.X_OK):
        raise ScaffoldError(f"{target} is not writable: pass a folder you can write to")
    return target


def _pyproject_plan(pyproject: Path) -> tuple[str | None, Step]:
    """The new pyproject.toml text (None: leave it) and the step that says so.

    Read and checked before anything is written, so a broken file stops ``init`` early.
    """
    section = _template("pyproject_section.toml")
    if not pyproject.exists():
        return section, Step("created", "pyproject.toml", "with [tool.agent_eval]")
    try:
        text = pyproject.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ScaffoldError(f"cannot read {pyproject}: {exc}; fix it, then run init again") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ScaffoldError(
            f"{pyproject} is not valid TOML ({exc}); fix it, then run init again"
        ) from exc
    existing = (
        data.get("tool", {}).get("agent_eval") if isinstance(data.get("tool"), dict) else None
    )
    if existing is not None:
        note = "[tool.agent_eval] is already there; left as it is"
        dirs = existing.get("yaml_dirs") if isinstance(existing, dict) else None
        if isinstance(dirs, list) and not any(
            str(d).rstrip("/").replace("\\", "/") in (EVALS_DIR, "tests") for d in dirs
        ):
            note += f'; its yaml_dirs {dirs} miss "{EVALS_DIR}": add it to run the samples'
        return None, Step("kept", "pyproject.toml", note)
    gap = "" if text.endswith("\n\n") or not text else ("\n" if text.endswith("\n") else "\n\n")
    updated = text + gap + section
    try:
        appended = tomllib.loads(updated).get("tool", {}).get("agent_eval")
    except tomllib.TOMLDecodeError:
        appended = None
    if not isinstance(appended, dict):
        raise ScaffoldError(
            f"{pyproject}: the [tool.agent_eval] section cannot be appended safely to this "
            f"file; add it by hand:\n{section}"
        )
    return updated, Step("appended", "pyproject.toml", "[tool.agent_eval] added at the end")


def _write_new(target: Path, rel: str, content: str, steps: list[Step]) -> bool:
    path = target / rel
    if path.exists():
        note = "exists; left as it is"
        if rel.endswith("conftest.py"):
            note += "; it must provide the llm_eval_agent fixture (docs/getting-started.md)"
        steps.append(Step("kept", rel, note))
        return False
    write_atomic(path, content)
    steps.append(Step("created", rel))
    return True


def _voice_fixtures(target: Path, steps: list[Step]) -> None:
    """Synthesize the spoken transcript's missing fixtures offline; never replace a file."""
    from ..audio_fixtures import sidecar_path
    from ..config import load_settings
    from ..loader import load_transcript_file
    from ..synthesize import Planner, synthesize_specs

    settings, _warnings = load_settings(target)
    transcript_path = target / VOICE_TRANSCRIPT
    transcript = load_transcript_file(
        transcript_path, default_threshold=settings.threshold, default_runs=settings.runs
    )
    planner = Planner(settings.voice)
    plan = planner.plan([transcript])
    for problem in plan.problems:
        steps.append(Step("failed", VOICE_TRANSCRIPT, problem.message))
    todo = []
    for spec in plan.specs:
        rel = spec.wav.relative_to(target).as_posix()
        if spec.wav.exists() or sidecar_path(spec.wav).exists():
            steps.append(
                Step(
                    "kept",
                    rel,
                    "exists; left as it is (python -m pytest_agent_eval.synthesize_audio "
                    "re-makes fixtures that went stale)",
                )
            )
        else:
            todo.append(spec)
    for result in synthesize_specs(todo, jobs=1, planner=planner):
        rel = result.spec.wav.relative_to(target).as_posix()
        if result.ok:
            steps.append(Step("created", rel, f"{result.audio_s:.1f} s, with its .hash sidecar"))
        else:
            steps.append(
                Step(
                    "failed",
                    rel,
                    f"{result.error}; fix it, then run python -m "
                    "pytest_agent_eval.synthesize_audio",
                )
            )


def scaffold(target: Path, adapter: str) -> ScaffoldResult:
    """Add the sample eval suite for ``adapter`` to the project in ``target``.

    Raises:
        ScaffoldError: Unknown adapter, a target that cannot be written, a broken pyproject.toml.
        MissingExtraError: The adapter's extra is not installed (nothing is written then).
    """
    choice = resolve_adapter(adapter)
    for module in choice.needs:
        require_extra(module, extra=choice.extra, feature=f"init --adapter {choice.name}")
    target = _prepare_target(target)
    result = ScaffoldResult(target=target, adapter=choice)
    pyproject_text, pyproject_step = _pyproject_plan(target / "pyproject.toml")

    _write_new(
        target, f"{EVALS_DIR}/opening_hours.yaml", _template("opening_hours.yaml"), result.steps
    )
    if choice.voice:
        _write_new(target, VOICE_TRANSCRIPT, _template(choice.voice_transcript), result.steps)
    _write_new(target, "tests/conftest.py", _template(choice.conftest), result.steps)
    if pyproject_text is not None:
        write_atomic(target / "pyproject.toml", pyproject_text)
    result.steps.append(pyproject_step)
    if choice.voice:
        try:
            _voice_fixtures(target, result.steps)
        except (ConfigError, TranscriptError) as exc:
            result.steps.append(Step("failed", VOICE_TRANSCRIPT, str(exc)))
    return result


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_agent_eval init",
        description=(
            "Add a sample eval suite to a project: tests/evals/ with a transcript, a "
            "tests/conftest.py for your adapter, and [tool.agent_eval] in pyproject.toml. "
            "Existing files are never overwritten."
        ),
    )
    parser.add_argument(
        "--adapter",
        metavar="NAME",
        help=f"one of {', '.join(ADAPTERS)} (asked interactively when omitted in a terminal)",
    )
    parser.add_argument(
        "target",
        nargs="?",
        type=Path,
        default=None,
        help="the project folder (default: the current folder; created if missing)",
    )
    return parser


def _ask_adapter(stdin: TextIO, out: TextIO) -> AdapterChoice:
    choices = list(ADAPTERS.values())
    out.write("Which agent do you want to test?\n")
    for number, choice in enumerate(choices, 1):
        out.write(f"  {number}. {choice.name:<12} {choice.label}\n")
    for _attempt in range(3):
        out.write(f"Adapter [1-{len(choices)} or a name]: ")
        out.flush()
        answer = stdin.readline()
        if not answer:
            break
        answer = answer.strip()
        if answer.isdigit() and 1 <= int(answer) <= len(choices):
            return choices[int(answer) - 1]
        try:
            return resolve_adapter(answer)
        except ScaffoldError as exc:
            out.write(f"{exc}\n")
    raise ScaffoldError(f"no adapter chosen: pass --adapter with one of {', '.join(ADAPTERS)}")


def main(
    argv: Sequence[str] | None = None,
    *,
    stdin: TextIO | None = None,
    out: TextIO | None = None,
    isatty: Callable[[], bool] | None = None,
) -> int:
    """Run ``init``; returns the exit code (0 done, 1 a fixture failed, 2 bad input)."""
    stdin = stdin or sys.stdin
    out = out or sys.stdout
    args = build_parser().parse_args(argv)
    target = args.target if args.target is not None else Path.cwd()
    try:
        if args.adapter is not None:
            choice = resolve_adapter(args.adapter)
        elif (isatty or stdin.isatty)():
            choice = _ask_adapter(stdin, out)
        else:
            raise ScaffoldError(
                "no adapter chosen and no terminal to ask in: pass --adapter with one of "
                + ", ".join(ADAPTERS)
            )
        result = scaffold(target, choice.name)
    except (AgentEvalError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    out.write(f"pytest-agent-eval init: {result.adapter.name} adapter in {result.target}\n")
    for step in result.steps:
        out.write(step.line() + "\n")
    if not result.created:
        out.write("Nothing to do: every file was already there.\n")
    if not result.ok:
        out.write("Some steps failed (see above).\n")
        return EXIT_FAILED
    where = "" if result.target == Path.cwd().resolve() else f"cd {result.target} && "
    out.write(f"Next: {where}pytest --agent-eval-live\n")
    return EXIT_OK
