"""The pytest plugin: options, settings, YAML collection, live gating, and result plumbing.

Hooks stay thin; the work is in `loader`, `runner` and the functions below. State lives in
``config.stash`` and ``item.stash``. Results travel to the controller (also under xdist) as a
JSON-friendly ``agent_eval`` attribute on each test report, which report writers read.
"""

from __future__ import annotations

import inspect
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from ._async import run_sync
from .account import format_account
from .adapters.base import AgentAdapter, as_adapter
from .config import ConfigError, Settings, find_pyproject, load_settings, parse_bool_env
from .errors import AgentEvalError, TranscriptError
from .loader import TRANSCRIPT_SUFFIXES, duplicate_id_error, is_ignored_file, load_transcript_file
from .models import Transcript, TranscriptResult, Turn
from .runner import RunSettings, run_transcript

__all__ = [
    "AGENT_FIXTURE",
    "NOT_LIVE_REASON",
    "AgentEval",
    "PluginState",
    "TranscriptFile",
    "TranscriptItem",
    "records_key",
    "settings_key",
    "state_key",
]

AGENT_FIXTURE = "llm_eval_agent"
JUDGE_MODEL_FIXTURE = "llm_eval_judge_model"
NOT_LIVE_REASON = (
    "agent evals are not live: pass --agent-eval-live or set EVAL_LIVE=1 "
    "(or live = true in [tool.agent_eval]) to run them"
)
MISSING_AGENT_MESSAGE = f"""\
no '{AGENT_FIXTURE}' fixture: YAML transcripts need it to know which agent to talk to.
Define it in a conftest.py next to (or above) your transcripts, for example:

    # tests/conftest.py
    import pytest
    from pytest_agent_eval import AgentReply

    @pytest.fixture
    def {AGENT_FIXTURE}():
        async def my_agent(history):
            # history[-1].content is this turn's user text
            return AgentReply("Booking confirmed!", ["create_booking"])
        return my_agent
"""


@dataclass
class PluginState:
    """Everything the plugin keeps for one pytest session."""

    settings: Settings
    live: bool
    tags: tuple[str, ...] = ()
    runs_override: int | None = None
    seen_ids: dict[str, Path] = field(default_factory=dict)
    not_live_skips: int = 0

    def run_settings(self, judge_model: Any = None) -> RunSettings:
        """Runner settings, with the judge model from the fixture when one is defined."""
        judge = self.settings.judge
        if judge_model is not None:
            judge = replace(judge, model=judge_model)
        return RunSettings(
            concurrency=self.settings.concurrency,
            early_stop=self.settings.early_stop,
            judge=judge,
        )


state_key = pytest.StashKey[PluginState]()
settings_key = pytest.StashKey[Settings]()
records_key = pytest.StashKey[list[tuple[TranscriptResult, Path | None]]]()
"""Per item: every eval the test ran (one for a YAML transcript), with its YAML file if any."""


# --------------------------------------------------------------------------------------------
# Options and configuration
# --------------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agent-eval", "agent evaluation (pytest-agent-eval)")
    group.addoption(
        "--agent-eval-live",
        action="store_true",
        default=False,
        help="Run agent eval tests (otherwise they are collected, validated and skipped).",
    )
    group.addoption(
        "--agent-eval-report",
        metavar="PATH",
        default=None,
        help="Write a markdown report of every eval to PATH.",
    )
    group.addoption(
        "--agent-eval-html",
        metavar="PATH",
        default=None,
        help="Write a self-contained HTML report of every eval to PATH.",
    )
    group.addoption(
        "--agent-eval-tags",
        metavar="TAGS",
        action="append",
        default=[],
        help="Only run evals carrying one of these tags (comma-separated, repeatable).",
    )
    group.addoption(
        "--agent-eval-runs",
        metavar="N",
        type=int,
        default=None,
        help="Run every transcript N times, whatever its `runs` says (quick local checks).",
    )
    group.addoption(
        "--agent-eval-concurrency",
        metavar="N",
        type=int,
        default=None,
        help="Most runs of one transcript in flight at once (default: concurrency in config, 4).",
    )
    group.addoption(
        "--agent-eval-early-stop",
        action="store_true",
        default=None,
        help="Stop starting runs once a transcript's verdict cannot change.",
    )
    group.addoption(
        "--agent-eval-stale-audio",
        choices=("fail", "skip", "synthesize"),
        default=None,
        help="What to do when a voice transcript's WAV fixture is missing or stale "
        "(default: stale_audio in config, 'fail').",
    )
    group.addoption(
        "--agent-eval-no-judge-cache",
        action="store_true",
        default=False,
        help="Ignore the judge verdict cache even when judge_cache = true.",
    )


def _pyproject_for(config: pytest.Config) -> Path | None:
    inipath = config.inipath
    if inipath is not None and inipath.name == "pyproject.toml":
        return inipath
    candidate = config.rootpath / "pyproject.toml"
    return candidate if candidate.is_file() else find_pyproject(config.rootpath)


def build_state(config: pytest.Config) -> tuple[PluginState, list[str]]:
    """Settings from pyproject, then environment, then command line (each wins over the last).

    Raises:
        ConfigError: For a bad value anywhere.
    """
    pyproject = _pyproject_for(config)
    rootdir = pyproject.parent if pyproject is not None else config.rootpath
    settings, warnings = load_settings(rootdir, pyproject)

    runs = config.getoption("agent_eval_runs")
    concurrency = config.getoption("agent_eval_concurrency")
    if runs is not None and runs < 1:
        raise ConfigError(f"--agent-eval-runs must be >= 1, got {runs}")
    if concurrency is not None and concurrency < 1:
        raise ConfigError(f"--agent-eval-concurrency must be >= 1, got {concurrency}")
    settings = settings.with_overrides(
        report_path=config.getoption("agent_eval_report"),
        html_report_path=config.getoption("agent_eval_html"),
        concurrency=concurrency,
        early_stop=config.getoption("agent_eval_early_stop"),
        stale_audio=config.getoption("agent_eval_stale_audio"),
    )
    if config.getoption("agent_eval_no_judge_cache"):
        settings = replace(settings, judge_cache=False)

    live = settings.live
    env_live = parse_bool_env("EVAL_LIVE")
    if env_live is not None:
        live = env_live
    if config.getoption("agent_eval_live"):
        live = True
    tags = tuple(
        tag.strip()
        for chunk in config.getoption("agent_eval_tags")
        for tag in chunk.split(",")
        if tag.strip()
    )
    state = PluginState(settings=settings, live=live, tags=tags, runs_override=runs)
    return state, warnings


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "agent_eval(threshold=None, runs=None, tags=()): an agent evaluation; threshold and "
        "runs apply to agent_eval.run() in the test, tags feed quality gates and "
        "--agent-eval-tags.",
    )
    try:
        state, warnings = build_state(config)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[state_key] = state
    config.stash[settings_key] = state.settings
    from .audio_fixtures import set_max_fixture_s  # every fixture check uses the one cap

    set_max_fixture_s(state.settings.max_fixture_s)
    for warning in warnings:
        config.issue_config_time_warning(pytest.PytestConfigWarning(warning), stacklevel=2)
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(NotLiveSummary(), "agent-eval-not-live")
        _register_reporter(config, state.settings)


def _register_reporter(config: pytest.Config, settings: Settings) -> None:
    from .report.session import AgentEvalReporter

    config.pluginmanager.register(AgentEvalReporter(config, settings), "agent-eval-reporter")


# --------------------------------------------------------------------------------------------
# YAML collection
# --------------------------------------------------------------------------------------------


def _is_under(path: Path, folders: Iterable[Path]) -> bool:
    resolved = path.resolve()
    return any(resolved == f or f in resolved.parents for f in folders)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = parent.config.stash.get(state_key, None)
    if state is None or file_path.suffix not in TRANSCRIPT_SUFFIXES or is_ignored_file(file_path):
        return None
    if not _is_under(file_path, state.settings.yaml_paths):
        return None
    return TranscriptFile.from_parent(parent, path=file_path)


class TranscriptFile(pytest.File):
    """A YAML transcript file; collects into one `TranscriptItem`."""

    def collect(self) -> Iterable[pytest.Item]:
        state = self.config.stash[state_key]
        try:
            transcript = load_transcript_file(
                self.path,
                default_threshold=state.settings.threshold,
                default_runs=state.settings.runs,
            )
        except TranscriptError as exc:
            raise self.CollectError(str(exc)) from None
        first = state.seen_ids.get(transcript.id)
        if first is not None and first != self.path:
            raise self.CollectError(str(duplicate_id_error(transcript, first)))
        state.seen_ids[transcript.id] = self.path
        item = TranscriptItem.from_parent(
            self, name=transcript.id, callobj=_run_yaml_transcript, transcript=transcript
        )
        yield from _per_agent_param(self, item) or [item]


def _per_agent_param(parent: TranscriptFile, item: TranscriptItem) -> list[TranscriptItem] | None:
    """One item per param of a parametrized ``llm_eval_agent`` fixture, as the seed promises.

    pytest parametrizes fixtures only for Python test functions, through a private ``CallSpec``.
    YAML items need the same, so this builds those call specs from the fixture's definition.
    It leans on pytest internals (``_fixtureinfo``, ``CallSpec``, a fixture's ``_scope``);
    when they change shape, transcripts fall back to one item and pytest's own
    "no parameter defined" setup error, never a crash.
    """
    try:
        from _pytest.python import CallSpec  # type: ignore[attr-defined]
    except ImportError:
        return None
    fixtureinfo = getattr(item, "_fixtureinfo", None)
    defs = fixtureinfo.name2fixturedefs.get(AGENT_FIXTURE) if fixtureinfo is not None else None
    if not defs or getattr(defs[-1], "params", None) is None:
        return None
    fixturedef = defs[-1]
    scope = getattr(fixturedef, "_scope", None)
    if scope is None:
        return None
    items = []
    for index, param in enumerate(fixturedef.params):
        value, marks, explicit_id = param, [], None
        if isinstance(param, tuple) and hasattr(param, "marks") and hasattr(param, "values"):
            value, marks, explicit_id = param.values[0], list(param.marks), param.id
        param_id = explicit_id or _param_id(fixturedef.ids, index, value)
        callspec = CallSpec(
            params={AGENT_FIXTURE: value},
            indices={AGENT_FIXTURE: index},
            _arg2scope={AGENT_FIXTURE: scope},
            _idlist=[param_id],
            marks=[getattr(m, "mark", m) for m in marks],
        )
        items.append(
            TranscriptItem.from_parent(
                parent,
                name=f"{item.transcript.id}[{param_id}]",
                callobj=_run_yaml_transcript,
                transcript=item.transcript,
                callspec=callspec,
                fixtureinfo=fixtureinfo,
                keywords={param_id: True},
                originalname=item.transcript.id,
            )
        )
    return items


def _param_id(ids: Any, index: int, value: Any) -> str:
    if callable(ids):
        made = ids(value)
        if made is not None:
            return str(made)
    elif ids is not None and index < len(ids) and ids[index] is not None:
        return str(ids[index])
    if isinstance(value, str | int | float | bool) and str(value):
        return str(value)
    return f"{AGENT_FIXTURE}{index}"


def _run_yaml_transcript(llm_eval_agent: Any, request: pytest.FixtureRequest) -> None:
    """The test function behind every YAML transcript (resolves the user's agent fixture)."""
    __tracebackhide__ = True
    item = request.node
    assert isinstance(item, TranscriptItem)
    item.execute(llm_eval_agent, request)


class TranscriptItem(pytest.Function):
    """One transcript as a test. A `pytest.Function`, so it gets fixtures like any test."""

    def __init__(self, *, transcript: Transcript, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.transcript = transcript
        self.add_marker(pytest.mark.agent_eval(tags=list(transcript.tags)))

    @property
    def has_agent_fixture(self) -> bool:
        """Whether some conftest visible from this transcript defines ``llm_eval_agent``."""
        # pytest has no public way to ask "is fixture X visible from this item" without
        # instantiating it; the item's fixture info answers it, so read that when present.
        fixtureinfo = getattr(self, "_fixtureinfo", None)
        return fixtureinfo is None or AGENT_FIXTURE in fixtureinfo.name2fixturedefs

    def setup(self) -> None:
        if not self.has_agent_fixture:
            pytest.fail(MISSING_AGENT_MESSAGE, pytrace=False)
        super().setup()

    def execute(self, agent: Any, request: pytest.FixtureRequest) -> None:
        """Run the transcript against ``agent`` and assert its threshold."""
        __tracebackhide__ = True
        state = self.config.stash[state_key]
        transcript = self.transcript
        if state.runs_override is not None:
            transcript = replace(transcript, runs=state.runs_override)
        adapter = _adapter_or_fail(agent)
        if getattr(adapter, "consumes_audio", False) and transcript.has_audio:
            _check_audio_fixtures(transcript, state)
        result = _run_or_fail(transcript, adapter, state.run_settings(_judge_model(request)))
        record_result(self, result, path=self.path)
        result.assert_threshold()

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = (self.transcript.line or 1) - 1
        return self.path, line, f"transcript: {self.transcript.id}"

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        records = self.stash.get(records_key, [])
        if excinfo.errisinstance(AssertionError) and records:
            result = records[-1][0]
            return f"{excinfo.value}\n{format_account(result)}"
        if excinfo.errisinstance(pytest.FixtureLookupError) and AGENT_FIXTURE in str(excinfo.value):
            return MISSING_AGENT_MESSAGE
        return super().repr_failure(excinfo)


def _adapter_or_fail(agent: Any) -> AgentAdapter:
    __tracebackhide__ = True
    try:
        return as_adapter(agent)
    except TypeError as exc:
        pytest.fail(f"'{AGENT_FIXTURE}' returned an unusable agent: {exc}", pytrace=False)


def _judge_model(request: pytest.FixtureRequest) -> Any:
    """The ``llm_eval_judge_model`` fixture's value, when the project defines one."""
    try:
        return request.getfixturevalue(JUDGE_MODEL_FIXTURE)
    except pytest.FixtureLookupError:
        return None


def _run_or_fail(transcript: Transcript, adapter: Any, settings: RunSettings) -> TranscriptResult:
    __tracebackhide__ = True
    try:
        return run_sync(run_transcript(transcript, adapter, settings=settings))
    except AgentEvalError as exc:  # raised by adapter.prepare: bad input, nothing was run
        pytest.fail(f"transcript {transcript.id!r}: {exc}", pytrace=False)


def _check_audio_fixtures(transcript: Transcript, state: PluginState) -> None:
    """Fail, skip or synthesize when a voice transcript's fixtures are missing or stale.

    Runs before the conversation starts, so no agent cost is spent on stale audio. Text
    adapters never get here: they ignore ``audio:``.
    """
    __tracebackhide__ = True
    from .synthesize import ensure_fixtures, fixture_problems

    voice = state.settings.voice
    mode = state.settings.stale_audio
    try:
        # Replay check: text and requested voice must match; engine versions need not, so CI
        # can run on committed or cached fixtures without the TTS engine installed.
        problems = fixture_problems(transcript, voice, strict=False)
        if problems and mode == "synthesize":
            ensure_fixtures([transcript], voice).raise_for_failures()
            problems = fixture_problems(transcript, voice, strict=False)
    except AgentEvalError as exc:  # a failed synthesis, or a missing extra
        pytest.fail(str(exc), pytrace=False)
    if not problems:
        return
    message = "audio fixtures not ready:\n" + "\n".join(p.message for p in problems)
    if mode == "skip":
        pytest.skip(message)
    pytest.fail(
        message + "\n(or run pytest with --agent-eval-stale-audio=synthesize to make them first)",
        pytrace=False,
    )


# --------------------------------------------------------------------------------------------
# Python API: the agent_eval fixture and marker
# --------------------------------------------------------------------------------------------


class AgentEval:
    """The ``agent_eval`` fixture: run a conversation from a Python test.

    Example:
        ```python
        @pytest.mark.agent_eval(threshold=0.8, runs=5, tags=["smoke"])
        async def test_booking(agent_eval):
            result = await agent_eval.run(agent=my_agent, turns=[Turn("Book a table")])
            result.assert_threshold()
        ```
    """

    def __init__(self, request: pytest.FixtureRequest, state: PluginState) -> None:
        self._request = request
        self._state = state

    def _transcript(
        self,
        turns: Sequence[Turn] | None,
        transcript: Transcript | None,
        transcript_id: str | None,
        threshold: float | None,
        runs: int | None,
        tags: Sequence[str] | None,
    ) -> Transcript:
        marker = self._request.node.get_closest_marker("agent_eval")
        marked = dict(marker.kwargs) if marker is not None else {}
        settings = self._state.settings
        if transcript is None:
            if not turns:
                raise TranscriptError(
                    "agent_eval.run() needs turns=[Turn(...), ...] or transcript="
                )
            transcript = Transcript(
                id=transcript_id or self._request.node.name,
                turns=[t if isinstance(t, Turn) else Turn(str(t)) for t in turns],
                threshold=threshold
                if threshold is not None
                else marked.get("threshold", settings.threshold),
                runs=runs if runs is not None else marked.get("runs", settings.runs),
                tags=list(tags if tags is not None else marked.get("tags", [])),
            )
        elif threshold is not None or runs is not None:
            transcript = replace(
                transcript,
                threshold=transcript.threshold if threshold is None else threshold,
                runs=transcript.runs if runs is None else runs,
            )
        if self._state.runs_override is not None:
            transcript = replace(transcript, runs=self._state.runs_override)
        return transcript

    async def run(
        self,
        agent: Any = None,
        turns: Sequence[Turn] | None = None,
        *,
        transcript: Transcript | None = None,
        id: str | None = None,
        threshold: float | None = None,
        runs: int | None = None,
        tags: Sequence[str] | None = None,
        judge_model: Any = None,
    ) -> TranscriptResult:
        """Run ``turns`` (or a whole ``transcript``) against ``agent`` and return the result.

        Args:
            agent: Agent callable or adapter; default: the ``llm_eval_agent`` fixture.
            turns: The conversation.
            transcript: Alternatively, a ready `Transcript` (e.g. from the loader).
            id: Name in reports; default: the test name.
            threshold: Pass fraction; default: the marker's, then config.
            runs: Number of runs; default: the marker's, then config.
            tags: Quality-gate tags; default: the marker's.
            judge_model: Judge model for this call (id or pydantic-ai Model).

        Returns:
            The aggregated result; call ``assert_threshold()`` on it to fail the test.
        """
        __tracebackhide__ = True
        try:
            resolved = self._transcript(turns, transcript, id, threshold, runs, tags)
        except TranscriptError as exc:
            pytest.fail(str(exc), pytrace=False)
        if agent is None:
            try:
                agent = self._request.getfixturevalue(AGENT_FIXTURE)
            except pytest.FixtureLookupError:
                pytest.fail(
                    "agent_eval.run() got no agent= and there is no "
                    f"'{AGENT_FIXTURE}' fixture to fall back on; pass agent=... or define the "
                    "fixture:\n\n" + MISSING_AGENT_MESSAGE.split("\n", 2)[2],
                    pytrace=False,
                )
        adapter = _adapter_or_fail(agent)
        if getattr(adapter, "consumes_audio", False) and resolved.has_audio:
            _check_audio_fixtures(resolved, self._state)
        if judge_model is None:
            judge_model = _judge_model(self._request)
        try:
            result = await run_transcript(
                resolved, adapter, settings=self._state.run_settings(judge_model)
            )
        except AgentEvalError as exc:  # bad input found before any run: say it short
            pytest.fail(f"transcript {resolved.id!r}: {exc}", pytrace=False)
        record_result(self._request.node, result, path=resolved.path)
        return result

    def run_sync(self, *args: Any, **kwargs: Any) -> TranscriptResult:
        """`run` for synchronous tests."""
        return run_sync(self.run(*args, **kwargs))


@pytest.fixture
def agent_eval(request: pytest.FixtureRequest) -> AgentEval:
    """Run agent conversations from Python tests; see `AgentEval`."""
    return AgentEval(request, request.config.stash[state_key])


def _is_python_eval(item: pytest.Item) -> bool:
    return not isinstance(item, TranscriptItem) and (
        item.get_closest_marker("agent_eval") is not None
        or "agent_eval" in getattr(item, "fixturenames", ())
    )


def is_eval_item(item: pytest.Item) -> bool:
    """YAML transcripts and Python tests that use the marker or the fixture."""
    return isinstance(item, TranscriptItem) or _is_python_eval(item)


def pytest_runtest_setup(item: pytest.Item) -> None:
    # A rerun (pytest-rerunfailures) reuses the item: start its records afresh.
    if is_eval_item(item):
        item.stash[records_key] = []


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark eval tests: tags as ``-k`` keywords, and a skip marker when evals are not live.

    A skip *marker* (rather than a skip call) makes ``-rs`` point at the transcript or test.
    A transcript without an agent fixture is left unmarked, so its setup error shows even
    when not live.
    """
    if not is_eval_item(item):
        return
    item.extra_keyword_matches.update(_tags(item))
    live = item.config.stash[state_key].live
    if not live and not (isinstance(item, TranscriptItem) and not item.has_agent_fixture):
        item.add_marker(pytest.mark.skip(reason=NOT_LIVE_REASON))


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run ``async def`` eval tests when no async plugin (pytest-asyncio, anyio) claims them."""
    func = pyfuncitem.obj
    if not inspect.iscoroutinefunction(func) or not _is_python_eval(pyfuncitem):
        return None
    if any(pyfuncitem.get_closest_marker(m) for m in ("asyncio", "anyio", "trio")):
        return None
    params = inspect.signature(func).parameters
    kwargs = {name: pyfuncitem.funcargs[name] for name in params if name in pyfuncitem.funcargs}
    run_sync(func(**kwargs))
    return True


# --------------------------------------------------------------------------------------------
# Results into reports
# --------------------------------------------------------------------------------------------


def _marker_names(item: pytest.Item) -> list[str]:
    return sorted({m.name for m in item.iter_markers()})


def _tags(item: pytest.Item) -> list[str]:
    if isinstance(item, TranscriptItem):
        return list(item.transcript.tags)
    marker = item.get_closest_marker("agent_eval")
    return list(marker.kwargs.get("tags", [])) if marker is not None else []


def record_result(item: pytest.Item, result: TranscriptResult, *, path: Path | None) -> None:
    """Keep ``result`` on the item for its report, and add JUnit properties."""
    item.stash.setdefault(records_key, []).append((result, path))
    low, high = result.interval
    properties: list[tuple[str, object]] = [
        ("agent_eval_score", round(result.score, 4)),
        ("agent_eval_ci_low", round(low, 4)),
        ("agent_eval_ci_high", round(high, 4)),
        ("agent_eval_runs", len(result.runs)),
        ("agent_eval_passed_runs", result.passed_run_count),
        ("agent_eval_threshold", result.threshold),
    ]
    if result.p95_latency_s is not None:
        properties.append(("agent_eval_p95_latency_s", round(result.p95_latency_s, 4)))
    item.user_properties.extend(properties)


def _payload(
    item: pytest.Item,
    result: TranscriptResult | None = None,
    path: Path | None = None,
    *,
    not_live: bool = False,
) -> dict[str, Any]:
    """The JSON-friendly record of one eval that travels on the test report (also via xdist)."""
    is_yaml = isinstance(item, TranscriptItem)
    if is_yaml:
        path = item.path
    if result is not None:
        transcript_id = result.transcript_id
    else:
        transcript_id = item.transcript.id if is_yaml else item.name
    return {
        "nodeid": item.nodeid,
        "transcript_id": transcript_id,
        "kind": "yaml" if is_yaml else "python",
        "markers": _marker_names(item),
        "tags": (list(result.tags) if result is not None else []) or _tags(item),
        "path": str(path) if path is not None else None,
        "not_live": not_live,
        "result": result.to_dict() if result is not None else None,
    }


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if not is_eval_item(item):
        return report
    records = item.stash.get(records_key, []) if report.when == "call" else []
    if records:
        payloads = [_payload(item, result, path) for result, path in records]
        if report.failed and not isinstance(item, TranscriptItem):
            for result, _ in records:
                report.sections.append(
                    (f"agent eval: {result.transcript_id}", format_account(result))
                )
    else:
        not_live = (
            report.skipped
            and report.when == "setup"
            and not item.config.stash[state_key].live
            and NOT_LIVE_REASON in str(report.longrepr)
        )
        payloads = [_payload(item, not_live=bool(not_live))]
    report.agent_eval_all = payloads  # type: ignore[attr-defined]
    report.agent_eval = payloads[0]  # type: ignore[attr-defined]
    return report


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tags = config.stash[state_key].tags
    if not tags:
        return
    keep, drop = [], []
    for item in items:
        if is_eval_item(item) and not set(_tags(item)) & set(tags):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


class NotLiveSummary:
    """Counts eval tests skipped for not being live and prints the one line saying how to
    enable them. Registered on the controller only, which sees every report (also xdist's)."""

    def __init__(self) -> None:
        self.count = 0

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, "agent_eval", None)
        if isinstance(payload, dict) and payload.get("not_live") and report.skipped:
            self.count += 1

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.count:
            noun = "test" if self.count == 1 else "tests"
            terminalreporter.write_line(
                f"agent-eval: {self.count} eval {noun} skipped because evals are not live; "
                "run with --agent-eval-live or EVAL_LIVE=1 (or live = true in [tool.agent_eval])",
                yellow=True,
            )
