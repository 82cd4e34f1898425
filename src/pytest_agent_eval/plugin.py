"""The pytest plugin: hooks only, each a few lines that call one named function.

Where the work is: options and which setting wins in `config`; YAML collection in `collection`;
the ``agent_eval`` fixture and running an eval in a test in `fixture`; which items are evals,
their selection, skipping and report records in `eval_items`; reports in `report`. State lives
in ``config.stash`` and ``item.stash`` (keys in `fixture` and `collection`). Results reach the
controller, also under xdist, as serialized records on each test report.
"""

from __future__ import annotations

import importlib.util
import itertools
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from ._collection import collect_transcript_file
from ._eval_items import (
    assert_unasserted_results,
    attach_records,
    deselect_by_tags,
    is_eval_item,
    is_python_eval,
    make_error,
    mark_eval_item,
    plan_evals,
    redact_report,
    register_group_markers,
    start_records,
)
from ._file_kind import file_kind
from ._fixture import AgentEval, call_async_test, close_session_loop, session_key
from ._loader import TRANSCRIPT_SUFFIXES
from ._options import (
    add_options,
    session_settings,
    warn_about_config,
    warn_about_unread_pyprojects,
)
from ._report._not_live import NotLiveSummary
from ._report._shards import register_shard_recorder
from ._shard import select_shard
from .errors import ConfigError

# -- The voice frameworks' clock -----------------------------------------------------------------
# Pipecat keeps a reference to time.time when it is imported (to stamp VAD frames), and a
# conftest may import pipecat before the Pipecat adapter: the adapters' clock dispatchers go in
# first, when the plugin loads, and only where pipecat or livekit (LiveKitAdapter's virtual
# clock) is installed (nothing is imported). Where pipecat is installed, so does the finder that
# imports Pipecat without its own deprecation warnings, which -W error would make errors
# (_compat.pipecat_imports).
_PIPECAT_INSTALLED = importlib.util.find_spec("pipecat") is not None
if _PIPECAT_INSTALLED or importlib.util.find_spec("livekit") is not None:
    from .voice._timeshim import install_time_shim

    install_time_shim()
    if _PIPECAT_INSTALLED:
        from ._compat.pipecat_imports import quiet_pipecat_imports

        quiet_pipecat_imports()

__all__ = ["agent_eval", "check_space_form_paths"]

_MARKER_HELP = (
    "agent_eval(threshold=None, runs=None, tags=(), turn_timeout_s=None, "
    "assert_threshold=True): an agent evaluation; threshold, runs and turn_timeout_s apply to "
    "agent_eval.run() in the test, tags feed quality gates and --agent-eval-tags; "
    "assert_threshold=False lets the test judge its results itself."
)


_outer_stt_cache_dir = pytest.StashKey["Path | None"]()
_unread_checked = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


_PATH_OPTIONS = (
    "--agent-eval-report",
    "--agent-eval-html",
    "--agent-eval-results",
    "--agent-eval-baseline",
    "--agent-eval-shard-durations",
)


def check_space_form_paths(args: list[str], invocation_dir: Path) -> None:
    """Refuse ``--agent-eval-html ../reports/x.html`` (space form) when the path exists outside
    the folder pytest was started in.

    pytest picks its rootdir before it loads plugins, so it reads such a value as a test path:
    the rootdir moves to a parent project, nothing is collected and the parent's report is
    overwritten. Written with ``=``, the value is never taken for a test path.
    """
    for option, value in itertools.pairwise(args):
        if option not in _PATH_OPTIONS:
            continue
        path = (invocation_dir / value).resolve()
        if path.exists() and not path.is_relative_to(invocation_dir.resolve()):
            raise pytest.UsageError(
                f"{option} {value}: write {option}={value} (with '='). Given with a space, "
                "pytest reads an existing path outside this folder as a test path before this "
                "plugin loads, and moves its rootdir to a parent folder"
            )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER_HELP)
    check_space_form_paths(list(config.invocation_params.args), config.invocation_params.dir)
    try:
        session, warnings = session_settings(config)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[session_key] = session
    register_group_markers(config)
    from .voice._fixtures import (
        default_transcript_cache_dir,
        set_default_transcript_cache_dir,
        set_max_fixture_s,
    )

    set_max_fixture_s(session.settings.max_fixture_s)  # every fixture check uses the one cap
    config.stash[_outer_stt_cache_dir] = default_transcript_cache_dir()
    set_default_transcript_cache_dir(session.settings.stt_cache_path)  # WhisperSTT's default
    for warning in warnings:
        warn_about_config(config, warning)  # at the pyproject line it is about
    # Prevent reporting on worker nodes (xdist): the controller sees every report.
    if not hasattr(config, "workerinput"):
        from ._report._session import AgentEvalReporter

        config.pluginmanager.register(NotLiveSummary(), "agent-eval-not-live")
        register_shard_recorder(config)
        config.pluginmanager.register(
            AgentEvalReporter(config, session.settings), "agent-eval-reporter"
        )
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(_XdistController(), "agent-eval-xdist")
        if config.getoption("agent_eval_capacity"):
            from ._capacity._pytest import CapacityRun

            config.pluginmanager.register(
                CapacityRun(config, session.settings.rootdir), "agent-eval-capacity"
            )


def pytest_unconfigure(config: pytest.Config) -> None:
    close_session_loop(config)
    # A pytest run inside a process (pytester, an IDE) leaves the process's default as it was.
    if _outer_stt_cache_dir in config.stash:
        from .voice._fixtures import set_default_transcript_cache_dir

        set_default_transcript_cache_dir(config.stash[_outer_stt_cache_dir])


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    return collect_transcript_file(
        file_path, parent, other_kinds=(_simulation_file, _turn_taking_file)
    )


def _simulation_file(file_path: Path, parent: pytest.Collector) -> pytest.File | None:
    """A simulation file's collector, the simulation package imported only once a simulation
    file is found: told apart by its text, a transcript does not import it (about a second of
    imports where bytecode is not cached)."""
    if file_kind(file_path) is None:
        return None
    from .simulation import collect_simulation_file

    return collect_simulation_file(file_path, parent)


def _turn_taking_file(file_path: Path, parent: pytest.Collector) -> pytest.File | None:
    """A ``turn_taking:`` file's collector (docs/turn-taking.md), imported only once a YAML
    file under ``yaml_dirs`` is collected."""
    from ._turn_gate._collect import collect_turn_taking_file

    return collect_turn_taking_file(file_path, parent)


def pytest_itemcollected(item: pytest.Item) -> None:
    mark_eval_item(item)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselect_by_tags(config, items)


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_shard(config: pytest.Config, items: list[pytest.Item]) -> None:
    """After every other selection (``-k``, ``-m``, tags): keep this shard's evals."""
    select_shard(config, items)


def pytest_collection_finish(session: pytest.Session) -> None:
    plan_evals(session.config, [item.nodeid for item in session.items if is_eval_item(item)])
    if not hasattr(session.config, "workerinput"):  # under xdist, the controller warns
        _warn_about_unread_pyprojects(session.config, [item.nodeid for item in session.items])


def _warn_about_unread_pyprojects(config: pytest.Config, nodeids: list[str]) -> None:
    """Once per session (xdist workers each report their collection to the controller)."""
    if not config.stash.get(_unread_checked, False):
        config.stash[_unread_checked] = True
        warn_about_unread_pyprojects(config, nodeids)


class _XdistController:
    """Under xdist the controller collects nothing itself: the workers' collected ids tell it
    which transcripts are planned (an interrupted session names those that never ran)."""

    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        config = getattr(node, "config", None)
        if config is not None:
            plan_evals(
                config, [n for n in ids if n.split("::", 1)[0].endswith(TRANSCRIPT_SUFFIXES)]
            )
            _warn_about_unread_pyprojects(config, ids)


def pytest_runtest_setup(item: pytest.Item) -> None:
    start_records(item)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    return call_async_test(pyfuncitem) if is_python_eval(pyfuncitem) else None


@pytest.hookimpl(wrapper=True, specname="pytest_pyfunc_call")
def pytest_pyfunc_call_assert_results(pyfuncitem: pytest.Function) -> Generator[None, Any, Any]:
    """After a Python eval test returns, assert each result it did not assert itself."""
    outcome = yield
    if is_python_eval(pyfuncitem):
        assert_unasserted_results(pyfuncitem)
    return outcome


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    attach_records(item, report)
    make_error(item, report)
    redact_report(item, report)
    return report


@pytest.fixture
def agent_eval(request: pytest.FixtureRequest) -> AgentEval:
    """Run agent conversations from Python tests; see `AgentEval`."""
    return AgentEval(request, request.config.stash[session_key])
