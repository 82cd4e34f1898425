"""Shared test configuration (pytester itself is enabled in pyproject with ``-p pytester``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from child_pytest import CHILD_PYTEST_ARGS
from ci_builds import builds_started

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


class ExampleProjects:
    """Copies a project from ``examples/`` into pytester's folder and edits it there."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        self._pytester = pytester

    def copy(self, name: str) -> Path:
        """Copy ``examples/name`` into pytester's folder (which becomes the rootdir)."""
        shutil.copytree(
            EXAMPLES / name,
            self._pytester.path,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".agent_eval_cache"),
        )
        return self._pytester.path

    @staticmethod
    def edit(path: Path, old: str, new: str, count: int = -1) -> None:
        """Replace ``old`` (which must be there) with ``new`` in ``path``."""
        text = path.read_text()
        assert old in text, f"{old!r} not in {path}"
        path.write_text(text.replace(old, new, count))


# ---- the suite's tiers (markers registered in pyproject.toml; docs/contributing.md) ----------
# A test's tier follows from where it lives and what it asks for, so a new test lands in the
# right one without anyone remembering to mark it:
#   voice    a voice framework runs (AgentSession, Pipecat pipeline, Silero) or Whisper loads
#   room     a real livekit-server runs (and the voice stack with it)
#   browser  headless Chromium (the `browser` fixture)
#   slow     over about 5 s here, measured, outside the three above (the list below)
# The fast loop deselects all four: `-m "not voice and not room and not browser and not slow"`.

_FOLDER_TIERS: dict[str, tuple[str, ...]] = {
    "livekit": ("voice",),
    "pipecat": ("voice",),
    "attribution": ("voice",),
    "realtime": ("voice",),
    "room": ("room", "voice"),
    "sip": ("room", "voice"),  # a real livekit-server and LiveKit's SIP service
    "contract": ("voice",),  # the voice adapter contract: every in-process voice adapter
}
"""Every test in ``tests/<folder>/`` has these tiers."""

_FILE_TIERS: dict[str, tuple[str, ...]] = {
    # Whisper models (faster-whisper) load in these.
    "audio_fixtures/test_whisper.py": ("voice",),
    "audio_fixtures/test_whisper_cache.py": ("voice",),
    # Real calls imported: a LiveKit session records them, or a worker in a room.
    "importers/test_livekit_handoffs.py": ("voice",),
    "importers/test_livekit_import.py": ("voice",),
    "importers/test_livekit_round_trip.py": ("voice",),
    "importers/test_room_round_trip.py": ("room", "voice"),
    # Simulated callers heard by a real AgentSession or Pipecat pipeline (the LiveKit example
    # agent, with its Silero VAD, is imported at collection, on the main thread).
    "simulation/test_voice.py": ("voice",),
    "simulation/test_pipecat.py": ("voice",),
    # The keypad on real LiveKit sessions and Pipecat pipelines.
    "telephony/test_livekit_keypad.py": ("voice",),
    "telephony/test_pipecat_keypad.py": ("voice",),
    "telephony/test_keys_alone.py": ("voice",),
    "telephony/test_keys_in_audio.py": ("voice",),
    "telephony/test_pipecat_hang_up.py": ("voice",),
    "telephony/test_far_end_voice.py": ("voice",),
    "telephony/test_amd_bench.py": ("voice",),
    "telephony/test_livekit_transfer.py": ("voice",),
    "telephony/test_livekit_outbound.py": ("voice",),
    "telephony/test_inbound_example.py": ("voice",),
    # Turn-taking stimuli played to real LiveKit sessions and Pipecat pipelines.
    "turn_taking/test_turn_taking_gate.py": ("voice",),
    "turn_taking/test_turn_taking_livekit.py": ("voice",),
    "turn_taking/test_turn_taking_pipecat.py": ("voice",),
    "turn_taking/test_turn_taking_example.py": ("voice",),
    # agent-eval capacity on the example agents, in real time.
    "capacity/test_capacity_livekit.py": ("voice",),
    "capacity/test_capacity_pipecat.py": ("voice", "slow"),
    # A LiveKit worker behind a real livekit-server; and LiveKit's LLM stream under faults.
    "capacity/test_capacity_worker.py": ("room", "voice"),
    "capacity/test_capacity_faults.py": ("slow",),
}
"""Tiers of single files, by path under ``tests/``."""

_NODE_TIERS: dict[str, tuple[str, ...]] = {
    # Scaffolded LiveKit and Pipecat projects, run live as made or as their CI workflow would.
    "scaffold_init/test_ci_recipe.py::test_the_workflow_commands_pass_in_a_scaffolded_livekit": (
        "voice",
    ),
    "scaffold_init/test_ci_shards_recipe.py::test_the_sharded_workflow_runs": ("voice",),
    "scaffold_init/test_init_scaffold.py::test_livekit_scaffold_passes_live_as_made": ("voice",),
    "scaffold_init/test_init_scaffold.py::test_a_livekit_scaffold_in_a_tests_package": ("voice",),
    "scaffold_init/test_init_scaffold.py::test_pipecat_scaffold_passes_live_as_made": ("voice",),
    # Doc pages whose snippets stream audio into a LiveKit session or a room.
    "docs/test_snippets.py::test_page_snippets_run[README.md]": ("voice",),
    "docs/test_snippets.py::test_page_snippets_run[docs/getting-started.md]": ("voice",),
    "docs/test_snippets.py::test_page_snippets_run[docs/index.md]": ("voice",),
    "docs/test_snippets.py::test_page_snippets_run[docs/livekit.md]": ("voice",),
    "docs/test_snippets.py::test_page_snippets_run[docs/livekit-room.md]": ("room", "voice"),
    "docs/test_snippets.py::test_page_snippets_run[docs/pipecat.md]": ("voice",),
    "docs/test_snippets.py::test_page_snippets_run[docs/voice-fixtures.md]": ("voice",),
    "docs/test_snippets.py::test_page_snippets_run[docs/voice-robustness.md]": ("voice",),
    "docs/test_snippets.py::test_livekit_rules_that_do_not_satisfy_the_transcript_fail_the_page": (
        "voice",
    ),
}
"""Tiers of single tests (or every test whose node id starts so), by node id under ``tests/``."""

_SLOW: tuple[str, ...] = (
    # Measured with --durations on 2 shared cores (load ~7): each of these took 9 s or more.
    # Most start pytest in a subprocess, some a virtualenv; a test whose node id names xdist
    # starts xdist workers and is slow as well (below).
    "adapters/test_examples.py",
    "audio_fixtures/test_validate.py::test_a_fixture_over_the_cap_is_refused_from_its_header",
    "docs/test_site.py",  # its module fixture builds the whole site
    "docs/test_snippets.py::test_page_snippets_run[docs/adapters.md]",
    "docs/test_snippets.py::test_page_snippets_run[docs/python-api.md]",
    "importers/test_messages_import.py::test_a_logged_conversation_round_trips_through_the_app",
    "plugin/test_earlier_package.py::test_k_selects_by_the_real_id_or_the_test_name",
    "plugin/test_junit_and_imports.py::test_loading_the_plugin_and_running_evals_imports_nothing",
    "plugin/test_junit_and_imports.py::test_plugin_works_when_no_optional_extra_is_installed",
    "plugin/test_live_progress.py::test_on_a_terminal_a_long_transcript_shows_runs_done",
    "docs/test_troubleshooting.py",  # its module fixture runs every message's trigger
    "gates/test_members_and_selection.py::test_plain_tests_marked_into_a_group_are_members",
    "plugin/test_agent_contract.py::test_tool_call_args_with_python_values_survive_xdist",
    "plugin/test_event_loop_and_python_api.py::test_a_shared_async_client_works_in_every_eval",
    "plugin/test_load_errors.py::test_a_run_that_goes_on_past_a_load_error_still_names_it",
    "plugin/test_run_outcomes.py::test_a_suite_whose_only_failure_is_a_setup_error_never_exits_0",
    "plugin/test_runner.py::test_agent_calling_pytest_skip_skips_cleanly",
    "plugin/test_team_reports.py::test_a_stop_after_the_first_failure_is_not_called_ctrl_c",
    "plugin/test_verdicts_stay_true.py",
    "report/test_browser_tests_skip.py",
    "scaffold_init/test_ci_recipe.py",
    "scaffold_init/test_ci_shards_recipe.py",
    "scaffold_init/test_fresh_install.py",
    "shards/test_merge_matches_one_session.py",
    "shards/test_merge_refusals.py",
    "shards/test_shard_selection.py",
    "synthesize/test_turn_taking_pack.py::test_same_seed_same_bytes_other_seed_other_bytes",
    "unit/test_ci_builds.py::test_while_builds_are_pending_the_room_tier_runs_last",
)
"""Node ids (or their starts) under ``tests/`` of the measured slow tests."""


_FIRST: tuple[str, ...] = (
    # The longest single tests (each one file), run first so that no worker is left with one
    # of them at the end while the other has nothing to do. Measured with --durations on the
    # whole suite (bench/suite_durations.txt): each took 2 to 9 minutes on the loaded machine.
    # Whole files move, in their own order, so a module fixture is still set up once.
    "scaffold_init/test_ci_shards_recipe.py",
    "scaffold_init/test_ci_recipe.py",
    "shards/test_merge_matches_one_session.py",
    "scaffold_init/test_fresh_install.py",
    "unit/test_suite_tiers.py",
    "report/test_xdist.py",
    "docs/test_troubleshooting.py",
    # Files with single tests of 1.5 to 3 minutes on the loaded machine (session 37's
    # --durations of the capacity, turn-taking, telephony, attribution and contract folders).
    "turn_taking/test_turn_taking_gate.py",
    "attribution/test_attribution_livekit.py",
    "capacity/test_capacity_worker.py",
    "capacity/test_capacity_pipecat.py",
    "turn_taking/test_turn_taking_pipecat.py",
)
"""Files under ``tests/`` whose tests run before all others (in this order)."""


_WORKERS_PER_CORE = 1
_MOST_WORKERS = 8


@pytest.hookimpl(optionalhook=True)  # runs without xdist (-p no:xdist) know no such hook
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: one worker per core the process may run on, at most eight.

    Measured on a fresh clone of 2 cores (docs/contributing.md): two workers per core took
    the suite from 36 to 33 minutes, but at a load of 5 a room call recorded in real time lost
    words and its test failed, so a core keeps one worker. The cores counted are the ones
    this process may use (a container's share), not the machine's. A worker count given in
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` wins, as in xdist's own hook."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(_MOST_WORKERS, _WORKERS_PER_CORE * (cores or 1))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests = Path(__file__).resolve().parent
    first: dict[pytest.Item, int] = {}
    for item in items:
        try:
            rel = item.path.resolve().relative_to(tests)
        except ValueError:  # a pytester project's own test, run in-process
            continue
        if rel.as_posix() in _FIRST:
            first[item] = _FIRST.index(rel.as_posix())
        node = rel.as_posix() + item.nodeid.partition("::")[1] + item.nodeid.partition("::")[2]
        tiers = set(_FOLDER_TIERS.get(rel.parts[0], ()))
        tiers.update(_FILE_TIERS.get(rel.as_posix(), ()))
        tiers.update(t for prefix, ts in _NODE_TIERS.items() if node.startswith(prefix) for t in ts)
        if "browser" in getattr(item, "fixturenames", ()):
            tiers.add("browser")
        if any(node.startswith(prefix) for prefix in _SLOW) or "xdist" in node:
            tiers.add("slow")
        for tier in sorted(tiers):
            item.add_marker(tier)
    # When `.ci/run` builds the servers for this run (tests/ci_builds.py), the tests that need
    # one go last, so that no worker waits for a build while others could run. A stable sort:
    # everything else keeps its order.
    last = builds_started()
    items.sort(
        key=lambda item: (
            last and item.get_closest_marker("room") is not None,
            first.get(item, len(_FIRST)),
        )
    )


# ---- pytest in a subprocess: without the plugins no test needs (child_pytest.py) ------------


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's own ``pytester``, whose subprocess runs get `CHILD_PYTEST_ARGS` first."""
    subprocess_run = pytester.runpytest_subprocess

    def runpytest_subprocess(
        *args: str | os.PathLike[str], timeout: float | None = None
    ) -> pytest.RunResult:
        return subprocess_run(*CHILD_PYTEST_ARGS, *args, timeout=timeout)

    monkeypatch.setattr(pytester, "runpytest_subprocess", runpytest_subprocess)
    return pytester


@pytest.fixture
def examples(pytester: pytest.Pytester) -> ExampleProjects:
    """The example projects, ready to copy into a pytester run."""
    return ExampleProjects(pytester)


@pytest.fixture(autouse=True)
def _eighty_column_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every pytest run a test starts (in-process or as a subprocess) sees 80 columns, the width
    pytest assumes without a terminal. Tests read what a user's terminal shows; pytest cuts its
    short summary to the width (or prints it whole on a wide one), so without this a narrow or
    wide ``COLUMNS`` in the environment running the suite would change what they read."""
    monkeypatch.setenv("COLUMNS", "80")
