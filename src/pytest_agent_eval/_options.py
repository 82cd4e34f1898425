"""The pytest side of the settings: the ``--agent-eval-*`` options, which layer wins, and
config-time warnings shown the way pytest shows its own.

The settings themselves (``[tool.agent_eval]`` parsed, typed and checked) are in
`pytest_agent_eval._config`, which imports no pytest: the runner, the gates and the reports read
them without the plugin. This module is the one that knows pytest's ``Config`` and ``Parser``.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ._config import (
    SUBSET_GATES_CHOICES,
    ConfigWarning,
    Settings,
    check_limit,
    find_pyproject,
    load_settings,
    parse_bool_env,
    parse_shard,
    parse_speed,
)
from .errors import ConfigError

if TYPE_CHECKING:
    import pytest

__all__ = [
    "PytestConfigLike",
    "SessionSettings",
    "add_options",
    "session_settings",
    "unread_pyprojects",
    "warn_about_config",
    "warn_about_unread_pyprojects",
]


def warn_about_config(config: Any, warning: str) -> None:
    """Issue ``warning`` as pytest's config-time `pytest.PytestConfigWarning`: filtered by
    ``-W`` and ``filterwarnings`` as pytest's own are, and shown at the file and line it is
    about (``pyproject.toml:7``, with that line quoted) when it knows them."""
    import pytest

    issued = pytest.PytestConfigWarning(str(warning))
    path, line = getattr(warning, "path", None), getattr(warning, "line", None)
    try:
        if path is None or not line:
            config.issue_config_time_warning(issued, stacklevel=2)
            return
        # pytest places a config-time warning at the frame `stacklevel` up from its own call:
        # make that frame one whose code reports the pyproject line, so the summary points the
        # user at the key to fix instead of at this package.
        code = compile("\n" * (line - 1) + "issue(issued, stacklevel=2)", str(path), "exec")
        exec(
            code,
            {"__name__": path.name, "issue": config.issue_config_time_warning, "issued": issued},
        )
    except pytest.PytestConfigWarning as exc:  # -W error or filterwarnings made it an error
        where = f"{path}:{line}: " if path is not None and line else ""
        said = str(exc).removesuffix("; it is ignored")
        raise pytest.UsageError(
            f"{where}{said}; fix or remove it (this warning is an error here: -W or "
            "filterwarnings turns PytestConfigWarning into errors)"
        ) from None


# --------------------------------------------------------------------------------------------
# The command line, and which layer wins
# --------------------------------------------------------------------------------------------


def add_options(parser: pytest.Parser) -> None:
    """Declare the ``--agent-eval-*`` command-line options."""
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
        "--agent-eval-results",
        metavar="PATH",
        default=None,
        help="Write the session's results as JSON to PATH (a stable, versioned schema; "
        "see docs/reports.md).",
    )
    group.addoption(
        "--agent-eval-baseline",
        metavar="PATH",
        default=None,
        help="Compare this session with an earlier results file (--agent-eval-results): per "
        "transcript, regressed / improved / unchanged within noise.",
    )
    group.addoption(
        "--agent-eval-subset-gates",
        choices=SUBSET_GATES_CHOICES,
        default=None,
        help="What gates do in a subset run (-k, -m, --agent-eval-tags): strict (default), "
        "report-only (shown, exit status left alone) or skip.",
    )
    group.addoption(
        "--agent-eval-shard",
        metavar="K/N",
        default=None,
        help="Run shard K of N: a deterministic share of the eval tests, the same on every "
        "machine (plain tests are left to pytest's own selection). Merge the shards' results "
        "files with `agent-eval merge` (docs/ci.md).",
    )
    group.addoption(
        "--agent-eval-shard-durations",
        metavar="FILE",
        default=None,
        help="Balance the shards by the durations in this results file (an earlier "
        "--agent-eval-results or merged file); without it, by planned turns.",
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
        "--agent-eval-attribute",
        action="store_true",
        default=None,
        help="Explain each failed voice run: name the cause (tool, judge, speech_output, "
        "hearing, turn_taking, agent_logic) with its evidence; verdicts never change "
        "(default: attribute in config, true).",
    )
    group.addoption(
        "--agent-eval-stale-audio",
        choices=("fail", "skip", "synthesize"),
        default=None,
        help="What to do when a voice transcript's WAV fixture is missing or stale "
        "(default: stale_audio in config, 'fail').",
    )
    group.addoption(
        "--agent-eval-save-audio",
        metavar="DIR",
        default=None,
        help="Save the exact audio each voice turn streamed (after its audio conditions) in "
        "DIR; the HTML report plays it beside the clean fixture (default: save_audio_dir in "
        "config).",
    )
    group.addoption(
        "--agent-eval-speed",
        metavar="SPEED",
        default=None,
        help="How fast voice adapters stream audio: max (0, as fast as the agent takes it), "
        "realtime (1) or a number scaling real time (default: speed in config, else each "
        "adapter's speed argument). Streaming speed never changes a verdict.",
    )
    group.addoption(
        "--agent-eval-no-judge-cache",
        action="store_true",
        default=False,
        help="Ignore the judge verdict cache even when judge_cache = true.",
    )
    group.addoption(
        "--agent-eval-no-caller-cache",
        action="store_true",
        default=False,
        help="Neither read nor write the simulated caller's cache (its turns and the "
        "criteria verdicts): every turn and verdict is asked of the models, and the cache is "
        "left as it was (caller_cache = true is the default).",
    )
    group.addoption(
        "--agent-eval-refresh-caller-cache",
        action="store_true",
        default=False,
        help="Ask the simulated caller's and the criteria judge's models for every turn and "
        "verdict, and rewrite the caller cache with their answers (when the model behind a "
        "name changed).",
    )
    group.addoption(
        "--agent-eval-capacity",
        action="store_true",
        default=False,
        help="Instead of running the selected transcripts, measure how many of them one core "
        "holds at once (agent-eval capacity over them, [tool.agent_eval.capacity] settings); "
        "the session fails when its gate does (min_sessions_per_core).",
    )
    group.addoption(
        "--agent-eval-save-simulations",
        metavar="DIR",
        default=None,
        help="Write each simulated conversation to DIR as a plain transcript YAML, with its "
        "audio fixtures, to keep as a regression test (default: save_simulations_dir).",
    )


_Runs = TypeVar("_Runs")


class PytestConfigLike(Protocol):
    """What `session_settings` reads of a ``pytest.Config`` (kept structural, so this module
    needs no pytest import)."""

    @property
    def rootpath(self) -> Path: ...

    @property
    def inipath(self) -> Path | None: ...

    def getoption(self, name: str) -> Any: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSettings:
    """What one pytest session runs with: the settings after every layer, plus the choices
    that exist only on the command line."""

    settings: Settings
    """``[tool.agent_eval]`` with the command-line overrides applied."""
    live: bool
    """Whether eval tests run (``live``, then ``EVAL_LIVE``, then ``--agent-eval-live``)."""
    tags: tuple[str, ...] = ()
    """``--agent-eval-tags``: only evals with one of these tags are selected."""
    runs_override: int | None = None
    """``--agent-eval-runs``: every transcript runs this many times. Read it through
    `planned_runs`, its one reader."""
    shard: tuple[int, int] | None = None
    """``--agent-eval-shard K/N``: run shard K (1-based) of N."""
    shard_durations: Path | None = None
    """``--agent-eval-shard-durations``: the results file whose durations balance the shards
    (as given: read from the folder pytest was started in)."""

    def planned_runs(self, runs: _Runs) -> int | _Runs:
        """The runs an eval gets: ``--agent-eval-runs`` when given, else ``runs`` (what its
        transcript, its ``agent_eval`` marker or ``[tool.agent_eval]`` asks for).

        The one place the override is applied: the ``agent_eval`` fixture, a simulation, the
        record of an eval that never ran and the shard planner all ask here.
        """
        return self.runs_override if self.runs_override is not None else runs


def _pyproject_for(config: PytestConfigLike) -> Path | None:
    inipath = config.inipath
    if inipath is not None and inipath.name == "pyproject.toml":
        return inipath
    candidate = config.rootpath / "pyproject.toml"
    return candidate if candidate.is_file() else find_pyproject(config.rootpath)


def session_settings(
    config: PytestConfigLike, environ: Mapping[str, str] | None = None
) -> tuple[SessionSettings, list[str]]:
    """Settings from pyproject, then environment, then command line (each wins over the last).

    Returns:
        The session's settings and the warnings (unknown keys) to show.

    Raises:
        ConfigError: For a bad value anywhere.
    """
    pyproject = _pyproject_for(config)
    rootdir = pyproject.parent if pyproject is not None else config.rootpath
    settings, warnings = load_settings(rootdir, pyproject)

    runs = config.getoption("agent_eval_runs")
    concurrency = config.getoption("agent_eval_concurrency")
    if runs is not None:
        check_limit("runs", runs, "--agent-eval-runs")
    if concurrency is not None:
        check_limit("concurrency", concurrency, "--agent-eval-concurrency")
    settings = settings.with_overrides(
        report_path=config.getoption("agent_eval_report"),
        html_report_path=config.getoption("agent_eval_html"),
        concurrency=concurrency,
        early_stop=config.getoption("agent_eval_early_stop"),
        attribute=config.getoption("agent_eval_attribute"),
        stale_audio=config.getoption("agent_eval_stale_audio"),
        results_path=config.getoption("agent_eval_results"),
        subset_gates=config.getoption("agent_eval_subset_gates"),
    )
    save_audio = config.getoption("agent_eval_save_audio")
    if save_audio is not None:
        # A command-line folder is relative to where pytest was started, as other paths are.
        settings = replace(settings, save_audio_dir=str(Path(save_audio).resolve()))
    speed = config.getoption("agent_eval_speed")
    if speed is not None:
        settings = replace(settings, speed=parse_speed(speed, "--agent-eval-speed"))
    if config.getoption("agent_eval_no_judge_cache"):
        settings = replace(settings, judge_cache=False)
    if config.getoption("agent_eval_no_caller_cache"):
        if config.getoption("agent_eval_refresh_caller_cache"):
            raise ConfigError(
                "--agent-eval-no-caller-cache and --agent-eval-refresh-caller-cache contradict "
                "each other: the first leaves the caller cache alone, the second rewrites it. "
                "Pass one"
            )
        settings = replace(settings, caller_cache=False)
    if config.getoption("agent_eval_refresh_caller_cache"):
        settings = replace(settings, caller_cache=True, caller_cache_refresh=True)
    save_simulations = config.getoption("agent_eval_save_simulations")
    if save_simulations is not None:
        settings = replace(settings, save_simulations_dir=str(Path(save_simulations).resolve()))

    live = settings.live
    env_live = parse_bool_env("EVAL_LIVE", environ)
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
    shard = parse_shard(config.getoption("agent_eval_shard"))
    durations = config.getoption("agent_eval_shard_durations")
    if durations is not None and shard is None:
        raise ConfigError(
            "--agent-eval-shard-durations balances shards: give --agent-eval-shard K/N too"
        )
    session = SessionSettings(
        settings=settings,
        live=live,
        tags=tags,
        runs_override=runs,
        shard=shard,
        shard_durations=Path(durations).expanduser() if durations else None,
    )
    if settings.yaml_dirs != Settings.__dataclass_fields__["yaml_dirs"].default:
        warnings.extend(_missing_yaml_dirs(settings))
    return session, warnings


def _missing_yaml_dirs(settings: Settings) -> list[str]:
    """A warning per configured ``yaml_dirs`` folder that does not exist (nothing is collected
    from it, which would otherwise pass silently as "no tests ran")."""
    return [
        f"yaml_dirs: {name!r} does not exist ({path}); no transcripts are collected from it. "
        "Fix the path in [tool.agent_eval] yaml_dirs (it is relative to the folder of "
        "pyproject.toml)"
        for name, path in zip(settings.yaml_dirs, settings.yaml_paths, strict=True)
        if not path.exists()
    ]


# --------------------------------------------------------------------------------------------
# A pyproject.toml nearer the tests than the one read
# --------------------------------------------------------------------------------------------


def unread_pyprojects(
    used: Path | None, rootpath: Path, test_files: Iterable[Path]
) -> list[ConfigWarning]:
    """A warning for each pyproject.toml with a ``[tool.agent_eval]`` table that sits between
    a collected test and the folder of the file the settings came from (``used``, else
    ``rootpath``): nearer the tests, so a user expects it to apply, but never read. pytest
    reads one configuration file per session, found from where it starts, and counts a
    pyproject.toml only when it has a ``[tool.pytest.ini_options]`` table; the settings are
    read from pytest's file alone.
    """
    top = (used.parent if used is not None else rootpath).resolve()
    found: dict[Path, ConfigWarning] = {}
    visited: set[Path] = set()
    for test_file in test_files:
        folder = test_file.resolve().parent
        while folder != top and top in folder.parents and folder not in visited:
            visited.add(folder)
            candidate = folder / "pyproject.toml"
            if candidate.is_file():
                warning = _unread_warning(candidate, used, top)
                if warning is not None:
                    found[candidate] = warning
            folder = folder.parent
    return [found[path] for path in sorted(found)]


def _unread_warning(candidate: Path, used: Path | None, top: Path) -> ConfigWarning | None:
    try:
        text = candidate.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None  # not ours to judge: pytest never reads it either
    tool = data.get("tool")
    if not isinstance(tool, dict) or "agent_eval" not in tool:
        return None
    pytest_table = isinstance(tool.get("pytest"), dict)
    here = candidate.relative_to(top)
    read = used.name if used is not None else "no pyproject.toml (every setting at its default)"
    why = (
        "pytest reads one configuration file per session, found from the folder it starts in"
        if pytest_table
        else "pytest counts a pyproject.toml only when it has a [tool.pytest.ini_options] "
        "table, and this one has none"
    )
    run_there = (
        f"run pytest in {here.parent}"
        if pytest_table
        else f"add [tool.pytest.ini_options] to it and run pytest in {here.parent}"
    )
    line = next(
        (n for n, raw in enumerate(text.splitlines(), 1) if raw.strip() == "[tool.agent_eval]"),
        None,
    )
    return ConfigWarning(
        f"{here} [tool.agent_eval] is not read: the tests below {here.parent} run with the "
        f"settings of {read} ({why}). Move its settings into {read}, or {run_there}",
        candidate,
        line,
    )


def warn_about_unread_pyprojects(config: Any, nodeids: Iterable[str]) -> None:
    """Warn about each pyproject.toml the collected tests (``nodeids``) sit under whose
    ``[tool.agent_eval]`` is not read (`unread_pyprojects`)."""
    files = {config.rootpath / nodeid.split("::", 1)[0] for nodeid in nodeids}
    for warning in unread_pyprojects(_pyproject_for(config), config.rootpath, files):
        warn_about_config(config, warning)
