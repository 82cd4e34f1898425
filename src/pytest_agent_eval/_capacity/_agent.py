"""The user's own agent and transcripts, loaded as their eval suite loads them.

The agent is the project's ``llm_eval_agent`` fixture (the conftest.py nearest the transcripts,
as pytest would pick it), called once with no other fixtures; or ``--agent module:attr``, an
adapter (or agent callable) or a no-argument factory returning one. Transcripts are the given
files and folders, else ``[tool.agent_eval] yaml_dirs``, loaded by the same loader.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Generator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from .._config import Settings
from .._fixture import AGENT_FIXTURE
from .._loader import find_transcript_files, is_ignored_file, load_transcripts
from ..adapters.base import AgentAdapter, as_adapter
from ..errors import AgentEvalError, ConfigError
from ..models import Transcript

__all__ = ["LoadedAgent", "check_capacity_transcripts", "load_agent", "load_plan_transcripts"]


def check_capacity_transcripts(transcripts: Sequence[Transcript]) -> None:
    """What the capacity run can play, the command's and ``--agent-eval-capacity``'s check:
    no far end (an outbound call) and some turns to send.

    Raises:
        ConfigError: Naming the transcript and what to do.
    """
    for transcript in transcripts:
        if transcript.far_end is not None:
            raise ConfigError(
                f"capacity: {transcript.path or transcript.id}: transcript {transcript.id!r} "
                "has a far end (far_end:), an outbound call the capacity run cannot play: it "
                "sends the transcript's turns, never the far end's; leave this file out of the "
                "capacity paths"
            )
    if not any(turn for t in transcripts for turn in t.turns):
        raise ConfigError("capacity: the transcripts have no turns to run")


def load_plan_transcripts(paths: Sequence[Path], settings: Settings) -> list[Transcript]:
    """The transcripts of ``paths`` (files or folders; default ``yaml_dirs``)."""
    targets = list(paths) or settings.yaml_paths
    for target in targets:
        if not target.exists():
            raise ConfigError(f"capacity: no such transcript file or folder: {target}")
    files = [f for f in find_transcript_files(targets) if not is_ignored_file(f)]
    if not files:
        shown = ", ".join(str(t) for t in targets)
        raise ConfigError(f"capacity: no transcripts (*.yaml) found in {shown}")
    transcripts = load_transcripts(
        files,
        default_threshold=settings.threshold,
        default_runs=settings.runs,
        audio_roots=settings.audio_root_paths,
    )
    check_capacity_transcripts(transcripts)
    return transcripts


class LoadedAgent:
    """An adapter and what to call when the run is over (a generator fixture's teardown)."""

    def __init__(self, adapter: AgentAdapter, source: str, teardown: Callable[[], None]) -> None:
        self.adapter = adapter
        self.source = source
        self._teardown = teardown

    def close(self) -> None:
        self._teardown()


def _nothing() -> None:
    return None


def _on_path(folder: Path) -> None:
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def _import(what: str, run: Callable[[], Any]) -> Any:
    """``run()``, with an import's failure (or a pytest skip at import) as a `ConfigError`."""
    try:
        return run()
    except AgentEvalError:
        raise
    except (Exception, SystemExit) as exc:
        raise ConfigError(f"capacity: loading {what} failed: {type(exc).__name__}: {exc}") from exc
    except BaseException as exc:  # pytest.skip / importorskip raise outcomes, not Exceptions
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise ConfigError(f"capacity: loading {what} failed: {exc}") from exc


def _conftests(rootdir: Path, transcripts: Sequence[Transcript]) -> list[Path]:
    """conftest.py files from the rootdir down to the transcripts' folders, nearest last."""
    found: list[Path] = []
    for transcript in transcripts:
        if transcript.path is None:
            continue
        folder = Path(transcript.path).resolve().parent
        chain = [folder, *folder.parents]
        for parent in reversed(chain):
            if parent != rootdir and rootdir not in parent.parents:
                continue
            candidate = parent / "conftest.py"
            if candidate.is_file() and candidate not in found:
                found.append(candidate)
    if not found and (rootdir / "conftest.py").is_file():
        found.append(rootdir / "conftest.py")
    return found


def _fixture_function(obj: Any) -> Callable[..., Any]:
    """The plain function under a ``@pytest.fixture``, on pytest 8.0 to 9."""
    unwrap = getattr(obj, "_get_wrapped_function", None)
    if callable(unwrap):  # pytest >= 8.4: a FixtureFunctionDefinition
        return unwrap()  # type: ignore[no-any-return]
    wrapped = getattr(obj, "__pytest_wrapped__", None)
    if wrapped is not None:  # earlier pytest: the function, marked
        return wrapped.obj  # type: ignore[no-any-return]
    return obj  # type: ignore[no-any-return]


def _call_fixture(conftest: Path, function: Callable[..., Any]) -> tuple[Any, Callable[[], None]]:
    params = [p for p in inspect.signature(function).parameters.values() if p.name != "self"]
    if params:
        names = ", ".join(p.name for p in params)
        raise ConfigError(
            f"capacity: the {AGENT_FIXTURE} fixture in {conftest} takes other fixtures "
            f"({names}), which agent-eval capacity cannot provide; point it at a factory "
            "instead: agent-eval capacity --agent MODULE:FUNCTION (or [tool.agent_eval.capacity] "
            "agent = 'MODULE:FUNCTION'), a function with no arguments returning the adapter"
        )
    if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
        raise ConfigError(
            f"capacity: the {AGENT_FIXTURE} fixture in {conftest} is async; use --agent "
            "MODULE:FUNCTION with a synchronous factory"
        )
    value = _import(f"the {AGENT_FIXTURE} fixture in {conftest}", function)
    if isinstance(value, Generator):
        generator = value
        value = _import(f"the {AGENT_FIXTURE} fixture in {conftest}", lambda: next(generator))

        def teardown() -> None:
            try:
                next(generator)
            except StopIteration:
                return

        return value, teardown
    return value, _nothing


def _adapter(value: Any, source: str) -> AgentAdapter:
    try:
        return as_adapter(value)
    except TypeError as exc:
        raise ConfigError(f"capacity: {source}: {exc}") from None


def load_agent(
    rootdir: Path,
    transcripts: Sequence[Transcript],
    agent: str | None = None,
    imported: Mapping[Path, ModuleType] | None = None,
) -> LoadedAgent:
    """The agent under test (see the module docstring). ``imported``: conftest modules the
    caller already imported, by resolved path (pytest's own, in ``pytest
    --agent-eval-capacity``), used as they are rather than executed a second time.

    Raises:
        ConfigError: When no agent can be found or loading it fails, saying what to do.
    """
    # As the plugin does: Pipecat's clock shim goes in before the user's code imports pipecat.
    if importlib.util.find_spec("pipecat") is not None:
        from ..voice._timeshim import install_time_shim

        install_time_shim()
    if agent is not None:
        module_name, _, attr = agent.partition(":")
        if not module_name or not attr:
            raise ConfigError(
                f"capacity: --agent must be MODULE:ATTR (e.g. my_agent:make_adapter), got {agent!r}"
            )
        _on_path(rootdir)
        module = _import(f"module {module_name!r}", lambda: importlib.import_module(module_name))
        try:
            value = getattr(module, attr)
        except AttributeError:
            raise ConfigError(f"capacity: module {module_name!r} has no {attr!r}") from None
        # A factory (or an adapter class) is called; an adapter or agent callable is used as is.
        if inspect.isclass(value) or (callable(value) and not hasattr(value, "start_conversation")):
            params = inspect.signature(value).parameters
            if not params or all(p.default is not p.empty for p in params.values()):
                value = _import(agent, value)
        return LoadedAgent(_adapter(value, agent), agent, _nothing)
    fixture: tuple[Path, Any] | None = None
    for index, conftest in enumerate(_conftests(rootdir, transcripts)):
        _on_path(conftest.parent)
        known = (imported or {}).get(conftest.resolve())
        if known is not None:
            if hasattr(known, AGENT_FIXTURE):
                fixture = (conftest, getattr(known, AGENT_FIXTURE))
            continue
        name = f"_agent_eval_capacity_conftest_{index}"
        spec = importlib.util.spec_from_file_location(name, conftest)
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        loader = spec.loader
        _import(str(conftest), lambda m=module, ld=loader: ld.exec_module(m))  # type: ignore[misc]
        if hasattr(module, AGENT_FIXTURE):
            fixture = (conftest, getattr(module, AGENT_FIXTURE))
    if fixture is None:
        raise ConfigError(
            f"capacity: no {AGENT_FIXTURE} fixture in a conftest.py under {rootdir} next to "
            "the transcripts; give the agent with --agent MODULE:ATTR"
        )
    conftest, obj = fixture
    value, teardown = _call_fixture(conftest, _fixture_function(obj))
    source = f"{AGENT_FIXTURE} ({conftest})"
    return LoadedAgent(_adapter(value, source), source, teardown)
