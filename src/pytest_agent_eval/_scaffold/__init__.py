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
import ast
import importlib.util
import os
import sys
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path
from typing import TextIO

from .._atomic import write_atomic
from ..errors import (
    AgentEvalError,
    ConfigError,
    MissingExtraError,
    TranscriptError,
    install_command,
)

__all__ = [
    "ADAPTERS",
    "AdapterChoice",
    "ScaffoldError",
    "ScaffoldResult",
    "Step",
    "build_parser",
    "main",
    "missing_requirement",
    "resolve_adapter",
    "scaffold",
    "template_imports",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

EVALS_DIR = "tests/evals"
VOICE_TRANSCRIPT = f"{EVALS_DIR}/voice_opening_hours.yaml"
AGENT_MODULE = "opening_hours_agent"
"""The module the LiveKit scaffold's agent lives in, next to tests/conftest.py."""


class ScaffoldError(AgentEvalError):
    """The project cannot be scaffolded as asked; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class AdapterChoice:
    """One adapter ``init`` can set up: its templates and the extra that brings what they
    import."""

    name: str
    label: str
    conftest: str
    """Template file name in ``_scaffold/templates``, written as ``tests/conftest.py``."""
    extra: str = ""
    """The pytest-agent-eval extra that installs every module the templates import."""
    voice: bool = False
    """Also add the spoken transcript and synthesize its fixture."""
    voice_transcript: str = "voice_opening_hours.yaml"
    """Template of the spoken transcript."""
    agent_module: str = ""
    """Template of the agent module the conftest imports in its fixture, written as
    ``tests/opening_hours_agent.py`` (empty: the conftest holds the agent)."""
    init_needs: tuple[str, ...] = ()
    """Modules ``init`` itself needs for this choice (the offline voice that synthesizes the
    sample's fixture), besides those the templates import."""

    @property
    def templates(self) -> tuple[str, ...]:
        """The Python files this choice writes, as template names."""
        return tuple(t for t in (self.conftest, self.agent_module) if t)

    @property
    def needs(self) -> tuple[str, ...]:
        """Every module that must import for the scaffold to run: those its templates import
        (read from the templates, so a template and this check never disagree), then the ones
        ``init`` itself uses."""
        found = [m for name in self.templates for m in template_imports(_template(name))]
        written = {AGENT_MODULE} if self.agent_module else set()
        return tuple(
            dict.fromkeys([*(m for m in found if m.split(".")[0] not in written), *self.init_needs])
        )


ADAPTERS: dict[str, AdapterChoice] = {
    choice.name: choice
    for choice in (
        AdapterChoice("callable", "a plain Python callable", "conftest_callable.py.txt"),
        AdapterChoice(
            "pydantic-ai", "a pydantic-ai Agent", "conftest_pydantic_ai.py.txt", extra="openai"
        ),
        AdapterChoice(
            "openai",
            "the OpenAI SDK (Chat Completions with tools)",
            "conftest_openai.py.txt",
            extra="openai",
        ),
        AdapterChoice(
            "livekit",
            "a LiveKit AgentSession (voice)",
            "conftest_livekit.py.txt",
            extra="livekit",
            voice=True,
            agent_module="agent_livekit.py.txt",
            # The offline voice that synthesizes the sample's fixture.
            init_needs=("soundfile", "soxr", "hibari"),
        ),
        AdapterChoice(
            "pipecat",
            "a Pipecat pipeline (voice)",
            "conftest_pipecat.py.txt",
            # The pipeline's services, and the offline voice that makes the sample's fixture.
            init_needs=("soundfile", "soxr", "hibari"),
            extra="pipecat",
            voice=True,
            voice_transcript="voice_opening_hours_pipecat.yaml",
        ),
        AdapterChoice(
            "livekit-realtime",
            "a LiveKit AgentSession on a realtime, speech-to-speech model (voice)",
            "conftest_livekit.py.txt",
            extra="livekit",
            voice=True,
            agent_module="agent_livekit_realtime.py.txt",
            init_needs=("soundfile", "soxr", "hibari"),
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


_ALWAYS_THERE = frozenset({"__future__", "pytest", "_pytest", "pytest_agent_eval"})
"""Top-level modules every install has: pytest and this package (and what comes with it)."""


def template_imports(source: str) -> list[str]:
    """The modules a template's Python imports, anywhere in it (a fixture's own imports too),
    in order, without the standard library, pytest and this package.

    ``from livekit.plugins import silero`` needs ``livekit.plugins.silero``: a name imported
    from a namespace package is a module of its own, installed separately.
    """
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
            if _is_namespace_package(node.module):
                names += [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        top = names[0].split(".")[0]
        if top in sys.stdlib_module_names or top in _ALWAYS_THERE:
            continue
        found.extend(names)
    return list(dict.fromkeys(found))


def _is_namespace_package(module: str) -> bool:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return module.count(".") > 0  # unknown: treat ``a.b`` as possibly a namespace
    return spec is not None and spec.origin is None and spec.submodule_search_locations is not None


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package is missing, or blocked
        return False


def _extra_installed(extra: str) -> bool:
    """Whether every requirement of ``pytest-agent-eval[extra]`` is installed at a version it
    accepts, read from this package's own distribution metadata."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        declared = metadata.requires("pytest-agent-eval") or []
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return False
    wanted = []
    for text in declared:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        marker = requirement.marker
        if (
            marker is not None
            and marker.evaluate({"extra": extra})
            and not marker.evaluate({"extra": ""})
        ):
            wanted.append(requirement)
    for requirement in wanted:
        if requirement.name == "pytest-agent-eval":
            if not all(_extra_installed(e) for e in requirement.extras if e != extra):
                return False
            continue
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            return False
        if version not in requirement.specifier:
            return False
    return bool(wanted)


def missing_requirement(choice: AdapterChoice) -> str | None:
    """Why ``init --adapter NAME`` cannot write a scaffold that runs here, with the fix, or
    None when every module its files import is installed.

    When the adapter's extra is not (fully) installed, installing it is the fix. When it is and
    a module is still missing, the extra does not bring that module, and saying "install the
    extra" again would send the user round in a loop: the message says so and names the module.
    """
    for module in choice.needs:
        if _importable(module):
            continue
        feature = f"init --adapter {choice.name}"
        if not choice.extra or not _extra_installed(choice.extra):
            fix = install_command(choice.extra) if choice.extra else ""
            return f"{feature} needs {module}, which is not installed: {fix}".rstrip(": ")
        top = module.split(".")[0]
        return (
            f"{feature} needs {module}, which is not installed, and pytest-agent-eval"
            f"[{choice.extra}] (installed here) does not bring it: install the package that "
            f"provides {top} (e.g. pip install {top})"
        )
    return None


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
    from .._config import load_settings
    from .._loader import load_transcript_file
    from ..synthesize import Planner, synthesize_specs
    from ..voice._fixtures import sidecar_path

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
    problem = missing_requirement(choice)
    if problem is not None:
        raise MissingExtraError(problem)
    target = _prepare_target(target)
    result = ScaffoldResult(target=target, adapter=choice)
    pyproject_text, pyproject_step = _pyproject_plan(target / "pyproject.toml")

    _write_new(
        target, f"{EVALS_DIR}/opening_hours.yaml", _template("opening_hours.yaml"), result.steps
    )
    if choice.voice:
        _write_new(target, VOICE_TRANSCRIPT, _template(choice.voice_transcript), result.steps)
    conftest = _template(choice.conftest)
    if choice.agent_module:
        if (target / "tests" / "__init__.py").exists():
            # tests/ is a package: its conftest is tests.conftest, and the agent module is
            # imported from it, not from a folder on sys.path.
            conftest = conftest.replace(
                f"from {AGENT_MODULE} import", f"from .{AGENT_MODULE} import"
            )
        _write_new(target, f"tests/{AGENT_MODULE}.py", _template(choice.agent_module), result.steps)
    _write_new(target, "tests/conftest.py", conftest, result.steps)
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
        key = answer.lower().replace("_", "-")
        if key in ADAPTERS:
            return ADAPTERS[key]
        out.write(
            f"{answer!r} is not one of the choices: answer a number from 1 to {len(choices)} "
            f"or one of {', '.join(ADAPTERS)}\n"
        )
    raise ScaffoldError(
        f"no adapter chosen: run init again and answer 1-{len(choices)} or a name, or pass "
        f"--adapter with one of {', '.join(ADAPTERS)}"
    )


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
