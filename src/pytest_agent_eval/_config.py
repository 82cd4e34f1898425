"""Settings: ``[tool.agent_eval]`` in pyproject.toml and the environment, typed and checked.

Pure settings: no pytest here, so the runner, the gates and the reports read them without the
plugin. Each layer wins over the one before it: pyproject, then ``EVAL_LIVE``, then
``--agent-eval-*`` options (`pytest_agent_eval._options.session_settings`, the pytest side).
The judges' own record, `JudgeSettings`, lives with the judges (`Settings.judge` builds it). Values are type-checked at the edge: a wrong type is a
`ConfigError` (pytest shows it as a usage error); an unknown key is a warning with a
did-you-mean, so a typo never silently falls back to a default.

Field names of `Settings` are the ``[tool.agent_eval]`` keys as users write them (``timeout``,
``groups``); the records derived from them use the package's own words (`JudgeSettings.timeout_s`,
`GateConfig` for one ``[tool.agent_eval.groups.NAME]`` table).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ._conditions import BUILTIN_PRESETS, parse_presets
from ._text import did_you_mean
from .errors import ConfigError
from .evaluators._judge_settings import DEFAULT_JUDGE_MAX_CHARS, DEFAULT_JUDGE_MODEL, JudgeSettings
from .models import AudioCondition, VoiceSettings

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_JUDGE_MAX_CHARS",
    "DEFAULT_JUDGE_MODEL",
    "DEFAULT_TURN_TIMEOUT_S",
    "LIMITS",
    "SPEED_NAMES",
    "SUBSET_GATES_CHOICES",
    "ConfigWarning",
    "GateConfig",
    "JudgeSettings",
    "Settings",
    "check_limit",
    "find_pyproject",
    "load_settings",
    "parse_bool_env",
    "parse_settings",
    "parse_shard",
    "parse_speed",
]

DEFAULT_CONCURRENCY = 4
"""Runs of one transcript in flight at once: enough to hide model latency, few enough to stay
under typical provider rate limits."""

DEFAULT_TURN_TIMEOUT_S = 300.0
"""Seconds one agent turn may take before the run fails with a timeout: long enough for a slow
model with tools, short enough that a hung agent cannot hang CI."""


LIMITS: dict[str, tuple[float, float]] = {
    "runs": (1, 10_000),
    "concurrency": (1, 256),
    "retries": (0, 10),
    "timeout": (0, 600),
    "turn_timeout_s": (0, 3600),
    "max_fixture_s": (0, 3600),
    "judge_max_chars": (1000, 1_000_000),
}
"""The range of each numeric setting, as (low, high), inclusive except that 0 is excluded for
seconds. Beyond these a value is a typo or a runaway (``runs = 99999999999999999999999`` would
run forever), so it is an error naming the limit; the same maxima apply to the command line,
the ``agent_eval`` marker and a transcript's own ``runs`` and ``turn_timeout_s``."""

_SECONDS_KEYS = frozenset({"timeout", "turn_timeout_s", "max_fixture_s"})

_STALE_AUDIO_CHOICES = ("fail", "skip", "synthesize")
SUBSET_GATES_CHOICES = ("strict", "report-only", "skip")
"""What the gates do in a subset run (``-k``, ``-m``, ``--agent-eval-tags``, deselected
evals): ``strict`` (the default, as in CI) applies them as always; ``report-only`` shows their
verdicts but leaves the exit status alone; ``skip`` does not evaluate them."""


def check_limit(key: str, value: float, label: str) -> None:
    """Raise `ConfigError` when ``value`` is outside `LIMITS` for ``key`` (or not a number).

    Args:
        key: A key of `LIMITS`.
        value: The value to check.
        label: Who set it, as the message starts (``"pyproject.toml [tool.agent_eval]: 'runs'"``,
            ``"--agent-eval-runs"``).
    """
    low, high = LIMITS[key]
    seconds = key in _SECONDS_KEYS
    unit = " seconds" if seconds else ""
    if value != value:  # NaN
        problem = f"must be a number{unit}"
    elif seconds and not value > 0:
        problem = f"must be > 0{unit}"
    elif not seconds and value < low:
        problem = f"must be >= {low:g}"
    elif value > high:
        problem = f"must be <= {high:g}{unit} (the most pytest-agent-eval allows)"
    else:
        return
    raise ConfigError(f"{label} {problem}, got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class GateConfig:
    """One quality gate: an entry ``[tool.agent_eval.groups.NAME]`` (users say "group")."""

    name: str
    threshold: float = 1.0
    tags: tuple[str, ...] = ()
    pytest_markers: tuple[str, ...] = ()
    must_pass: tuple[str, ...] = ()
    enforce: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Every ``[tool.agent_eval]`` key, typed, with its default."""

    rootdir: Path = field(default_factory=Path.cwd)
    yaml_dirs: tuple[str, ...] = ("tests/evals",)
    threshold: float = 0.8
    runs: int = 1
    model: str = DEFAULT_JUDGE_MODEL
    judge_model: str | None = None
    retries: int = 2
    timeout: float = 30.0
    judge_cache: bool = False
    judge_cache_dir: str = ".agent_eval_cache/judge"
    live: bool = False
    report_path: str | None = None
    html_report_path: str | None = None
    results_path: str | None = None
    subset_gates: str = "strict"
    concurrency: int = DEFAULT_CONCURRENCY
    early_stop: bool = False
    stale_audio: str = "fail"
    max_fixture_s: float = 120.0
    stt_cache: bool = False
    stt_cache_dir: str = ".agent_eval_cache/stt"
    turn_timeout_s: float = DEFAULT_TURN_TIMEOUT_S
    audio_roots: tuple[str, ...] = ()
    judge_max_chars: int = DEFAULT_JUDGE_MAX_CHARS
    voice: VoiceSettings = field(default_factory=VoiceSettings)
    groups: tuple[GateConfig, ...] = ()
    conditions: Mapping[str, tuple[AudioCondition, ...]] = field(
        default_factory=lambda: dict(BUILTIN_PRESETS)
    )
    """Audio-condition presets by name: the built-in ones and ``[tool.agent_eval.conditions]``."""
    save_audio_dir: str | None = None
    """Where voice adapters save the exact audio each turn streamed (after its conditions)."""
    prices: tuple[tuple[str, float, float], ...] = ()
    """``[tool.agent_eval.prices]``: per model id, the price of a million input and of a
    million output tokens, in ``currency``; reports then show the cost."""
    currency: str = "USD"
    caller_model: str | None = None
    """The simulated caller's default model (a pydantic-ai id); None: ``model``."""
    caller_cache: bool = True
    """Replay the simulated caller's turns from disk when the conversation so far is unchanged
    (on by default: a rerun against an unchanged agent costs no caller request)."""
    caller_cache_dir: str = ".agent_eval_cache/caller"
    """The caller cache's folder; the caller's synthesized speech goes in its ``audio/``, the
    criteria verdicts in its ``verdicts/``."""
    caller_cache_refresh: bool = False
    """``--agent-eval-refresh-caller-cache``: ask the caller and criteria judge models again
    and rewrite their cache entries (command line only)."""
    save_simulations_dir: str | None = None
    """Where each simulated conversation is written as a plain transcript
    (``--agent-eval-save-simulations``)."""
    speed: float | None = None
    """How fast voice adapters stream audio (``speed``, ``--agent-eval-speed``): 0 as fast as
    the agent takes it, 1.0 real time, other values scale real time; None: each adapter's own
    ``speed`` argument (`parse_speed`)."""
    crashes_fail_gates: bool = True
    """A run in which the agent crashed fails its eval whatever the pass rate, and no group
    absorbs it; false makes a crash an ordinary FAIL, counted in the pass rate."""
    attribute: bool = True
    """Explain each failed voice run: name the component it is put down to, with the evidence
    (docs/attribution.md). Never changes a verdict, never runs for a passed run; false turns
    it off."""

    @property
    def caller_cache_path(self) -> Path:
        """``caller_cache_dir`` under the rootdir (also where the caller's speech is
        synthesized, whether or not ``caller_cache`` is on)."""
        return self.rootdir / self.caller_cache_dir

    @property
    def save_simulations_path(self) -> Path | None:
        """``save_simulations_dir`` resolved against the rootdir, or None."""
        if self.save_simulations_dir is None:
            return None
        return (self.rootdir / self.save_simulations_dir).resolve()

    @property
    def judge(self) -> JudgeSettings:
        """The judge-related settings as one record."""
        cache = (self.rootdir / self.judge_cache_dir) if self.judge_cache else None
        return JudgeSettings(
            model=self.judge_model or self.model,
            retries=self.retries,
            timeout_s=self.timeout,
            cache_dir=cache,
            max_chars=self.judge_max_chars,
        )

    @property
    def stt_cache_path(self) -> Path | None:
        """The on-disk transcript cache folder (``stt_cache_dir`` under the rootdir), or None
        when ``stt_cache`` is off."""
        return (self.rootdir / self.stt_cache_dir) if self.stt_cache else None

    @property
    def save_audio_path(self) -> Path | None:
        """``save_audio_dir`` resolved against the rootdir, or None."""
        if self.save_audio_dir is None:
            return None
        return (self.rootdir / self.save_audio_dir).resolve()

    @property
    def yaml_paths(self) -> list[Path]:
        """``yaml_dirs`` resolved against the rootdir."""
        return [(self.rootdir / d).resolve() for d in self.yaml_dirs]

    @property
    def audio_root_paths(self) -> tuple[Path, ...]:
        """Where ``audio:`` files may live: the rootdir and every ``audio_roots`` folder."""
        extra = ((self.rootdir / Path(d).expanduser()).resolve() for d in self.audio_roots)
        return (self.rootdir.resolve(), *extra)

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with some fields replaced (command-line options win over the file)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


# key -> (accepted python types, human description)
_KEYS: dict[str, tuple[tuple[type, ...], str]] = {
    "yaml_dirs": ((list,), "a list of folder paths"),
    "threshold": ((int, float), "a number between 0.0 and 1.0"),
    "runs": ((int,), "an integer >= 1"),
    "model": ((str,), "a pydantic-ai model id string, e.g. 'openai:gpt-4o'"),
    "judge_model": ((str,), "a pydantic-ai model id string"),
    "retries": ((int,), "an integer >= 0"),
    "timeout": ((int, float), "a number of seconds > 0"),
    "judge_cache": ((bool,), "true or false"),
    "judge_cache_dir": ((str,), "a folder path"),
    "live": ((bool,), "true or false"),
    "report_path": ((str,), "a file path"),
    "html_report_path": ((str,), "a file path"),
    "concurrency": ((int,), "an integer >= 1"),
    "early_stop": ((bool,), "true or false"),
    "stale_audio": ((str,), "one of 'fail', 'skip', 'synthesize'"),
    "results_path": ((str,), "a file path"),
    "subset_gates": ((str,), "one of 'strict', 'report-only', 'skip'"),
    "max_fixture_s": ((int, float), "a number of seconds > 0"),
    "stt_cache": ((bool,), "true or false"),
    "stt_cache_dir": ((str,), "a folder path"),
    "turn_timeout_s": ((int, float), "a number of seconds > 0"),
    "audio_roots": ((list,), "a list of folder paths"),
    "judge_max_chars": ((int,), "an integer number of characters"),
    "voice": ((dict,), "a table of voice settings"),
    "groups": ((dict,), "a table of [tool.agent_eval.groups.NAME] tables"),
    "conditions": ((dict,), "a table of [tool.agent_eval.conditions.NAME] presets"),
    "save_audio_dir": ((str,), "a folder path"),
    "prices": (
        (dict,),
        "a table of model ids, each {input_per_million = N, output_per_million = N}",
    ),
    "currency": ((str,), "a currency code, e.g. 'USD'"),
    "caller_model": ((str,), "a pydantic-ai model id string, e.g. 'openai:gpt-4o-mini'"),
    "caller_cache": ((bool,), "true or false"),
    "caller_cache_dir": ((str,), "a folder path"),
    "save_simulations_dir": ((str,), "a folder path"),
    "speed": ((str, int, float), "'max' (or 0), 'realtime' (or 1) or a number between 0 and 100"),
    "crashes_fail_gates": ((bool,), "true or false"),
    "attribute": ((bool,), "true or false"),
    # Read by `agent-eval capacity` (pytest_agent_eval._capacity), which validates it.
    "capacity": ((dict,), "a table of capacity settings ([tool.agent_eval.capacity])"),
}

_VOICE_KEYS: dict[str, tuple[tuple[type, ...], str]] = {
    "backend": ((str,), "a backend name, e.g. 'hibari'"),
    "voice": ((str,), "a voice name"),
    "model": ((str,), "a model name"),
    "speed": ((int, float), "a number > 0"),
    "sample_rate": ((int,), "an integer number of Hz"),
    "seed": ((int,), "an integer"),
    "language": ((str,), "a language code"),
}

_GATE_KEYS: dict[str, tuple[tuple[type, ...], str]] = {
    "threshold": ((int, float), "a number between 0.0 and 1.0"),
    "tags": ((list,), "a list of tag strings"),
    "pytest_markers": ((list,), "a list of marker names"),
    "must_pass": ((list,), "a list of transcript ids or test names"),
    "enforce": ((bool,), "true or false"),
}


def _check_type(where: str, key: str, value: Any, spec: tuple[tuple[type, ...], str]) -> None:
    types, description = spec
    # bool is an int subclass: do not accept `runs = true`.
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    if not ok:
        raise ConfigError(
            f"{where}: '{key}' must be {description}, got {type(value).__name__} {value!r}"
        )


def _check_keys(
    where: str,
    table: Mapping[str, Any],
    spec: Mapping[str, tuple[tuple[type, ...], str]],
    warnings: list[str],
) -> None:
    for key, value in table.items():
        if key not in spec:
            warnings.append(f"{where}: unknown key '{key}'{did_you_mean(key, spec)}; it is ignored")
            continue
        _check_type(where, key, value, spec[key])


def parse_settings(
    table: Mapping[str, Any], *, rootdir: Path, source: str = "[tool.agent_eval]"
) -> tuple[Settings, list[str]]:
    """Validate a ``[tool.agent_eval]`` table.

    Returns:
        The settings and a list of warnings (unknown keys).

    Raises:
        ConfigError: For a value of the wrong type or out of range.
    """
    warnings: list[str] = []
    _check_keys(source, table, _KEYS, warnings)
    values: dict[str, Any] = {k: v for k, v in table.items() if k in _KEYS}
    values.pop("capacity", None)

    if "yaml_dirs" in values:
        dirs = values["yaml_dirs"]
        if not all(isinstance(d, str) for d in dirs):
            raise ConfigError(f"{source}: 'yaml_dirs' must be a list of strings, got {dirs!r}")
        values["yaml_dirs"] = tuple(dirs)
    if "threshold" in values and not 0.0 <= values["threshold"] <= 1.0:
        raise ConfigError(
            f"{source}: 'threshold' must be between 0.0 and 1.0, got {values['threshold']!r}"
        )
    for key in LIMITS:
        if key in values:
            check_limit(key, values[key], f"{source}: '{key}'")
    if "audio_roots" in values:
        roots = values["audio_roots"]
        if not all(isinstance(d, str) for d in roots):
            raise ConfigError(f"{source}: 'audio_roots' must be a list of strings, got {roots!r}")
        values["audio_roots"] = tuple(roots)
    if "stale_audio" in values and values["stale_audio"] not in _STALE_AUDIO_CHOICES:
        raise ConfigError(
            f"{source}: 'stale_audio' must be one of {', '.join(_STALE_AUDIO_CHOICES)}, "
            f"got {values['stale_audio']!r}{did_you_mean(values['stale_audio'], _STALE_AUDIO_CHOICES)}"
        )
    if "subset_gates" in values and values["subset_gates"] not in SUBSET_GATES_CHOICES:
        raise ConfigError(
            f"{source}: 'subset_gates' must be one of {', '.join(SUBSET_GATES_CHOICES)}, "
            f"got {values['subset_gates']!r}"
            f"{did_you_mean(values['subset_gates'], SUBSET_GATES_CHOICES)}"
        )
    if "speed" in values:
        values["speed"] = parse_speed(values["speed"], f"{source}: 'speed'")
    if "voice" in values:
        voice = values["voice"]
        _check_keys(f"{source}.voice", voice, _VOICE_KEYS, warnings)
        values["voice"] = VoiceSettings(**{k: v for k, v in voice.items() if k in _VOICE_KEYS})
    if "prices" in values:
        values["prices"] = _parse_prices(values["prices"], source)
    if "groups" in values:
        values["groups"] = tuple(
            _parse_gate(name, spec, source, warnings) for name, spec in values["groups"].items()
        )
    if "conditions" in values:
        presets = parse_presets(
            values["conditions"], where=f"{source}.conditions", error=ConfigError
        )
        values["conditions"] = {name: tuple(chain) for name, chain in presets.items()}
    return Settings(rootdir=rootdir, **values), warnings


def _parse_prices(table: dict[str, Any], source: str) -> tuple[tuple[str, float, float], ...]:
    out = []
    for model, spec in table.items():
        where = f"{source}.prices.{model!r}"
        if not isinstance(spec, dict) or set(spec) != {"input_per_million", "output_per_million"}:
            raise ConfigError(
                f"{where}: must be {{input_per_million = N, output_per_million = N}}, got {spec!r}"
            )
        prices = [spec["input_per_million"], spec["output_per_million"]]
        if not all(
            isinstance(p, int | float) and not isinstance(p, bool) and p >= 0 for p in prices
        ):
            raise ConfigError(f"{where}: prices must be numbers >= 0, got {prices!r}")
        out.append((str(model), float(prices[0]), float(prices[1])))
    return tuple(out)


def _parse_gate(name: str, spec: Any, source: str, warnings: list[str]) -> GateConfig:
    where = f"{source}.groups.{name}"
    if not isinstance(spec, dict):
        raise ConfigError(f"{where} must be a table, got {type(spec).__name__} {spec!r}")
    _check_keys(where, spec, _GATE_KEYS, warnings)
    for key in ("tags", "pytest_markers", "must_pass"):
        items = spec.get(key, [])
        if not all(isinstance(x, str) for x in items):
            raise ConfigError(f"{where}: '{key}' must be a list of strings, got {items!r}")
    threshold = spec.get("threshold", 1.0)
    if not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"{where}: 'threshold' must be between 0.0 and 1.0, got {threshold!r}")
    if not (spec.get("tags") or spec.get("pytest_markers") or spec.get("must_pass")):
        raise ConfigError(
            f"{where}: a group needs at least one of 'tags', 'pytest_markers' or 'must_pass' "
            "to select tests"
        )
    return GateConfig(
        name=name,
        threshold=float(threshold),
        tags=tuple(spec.get("tags", ())),
        pytest_markers=tuple(spec.get("pytest_markers", ())),
        must_pass=tuple(spec.get("must_pass", ())),
        enforce=bool(spec.get("enforce", False)),
    )


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start``."""
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_settings(rootdir: Path, pyproject: Path | None = None) -> tuple[Settings, list[str]]:
    """Read ``[tool.agent_eval]`` from ``pyproject`` (default: rootdir/pyproject.toml).

    Raises:
        ConfigError: For unreadable TOML or bad values.
    """
    path = pyproject if pyproject is not None else rootdir / "pyproject.toml"
    if not path.is_file():
        return Settings(rootdir=rootdir), []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    table = data.get("tool", {}).get("agent_eval", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.agent_eval] must be a table")
    settings, warnings = parse_settings(
        table, rootdir=path.parent, source=f"{path.name} [tool.agent_eval]"
    )
    text = path.read_text(encoding="utf-8")
    return settings, [ConfigWarning(w, path, _warned_line(w, text)) for w in warnings]


class ConfigWarning(str):
    """A warning about ``[tool.agent_eval]`` (an unknown key): its text, and the file and line
    it is about, so pytest shows it there rather than at the line of this package that
    issued it (see `warn_about_config`)."""

    path: Path | None
    line: int | None

    def __new__(cls, text: str, path: Path | None = None, line: int | None = None) -> ConfigWarning:
        made = super().__new__(cls, text)
        made.path, made.line = path, line
        return made


_UNKNOWN_KEY = re.compile(r"\[tool\.agent_eval\]((?:\.[^:]+)?): unknown key '([^']+)'")


def _warned_line(warning: str, text: str) -> int | None:
    """The line of the key an unknown-key warning names: under the table it is in (``[tool.
    agent_eval.voice]``) when that table has a header, else the first line that sets the key
    after ``[tool.agent_eval``; None when it cannot be found."""
    match = _UNKNOWN_KEY.search(warning)
    if match is None:
        return None
    tables, key = match.group(1), match.group(2)
    lines = text.splitlines()
    header = re.compile(r"^\s*\[\s*tool\.agent_eval" + re.escape(tables) + r"\s*\]")
    sets_key = re.compile(r"^\s*[\"']?" + re.escape(key) + r"[\"']?\s*=")
    start = next((i for i, line in enumerate(lines) if header.match(line)), None)
    if start is None:
        start = next((i for i, line in enumerate(lines) if "[tool.agent_eval" in line), 0)
    for number in range(start, len(lines)):
        if sets_key.match(lines[number]):
            return number + 1
    return None


def parse_bool_env(name: str, environ: Mapping[str, str] | None = None) -> bool | None:
    """Read a boolean environment variable: ``1/true/yes/on`` or ``0/false/no/off``.

    Returns None when unset or empty.

    Raises:
        ConfigError: For any other value, listing the accepted ones.
    """
    env = os.environ if environ is None else environ
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return None
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ConfigError(
        f"{name}={raw!r} is not understood; use 1/true/yes to enable, 0/false/no to disable"
    )


def parse_shard(value: str | None) -> tuple[int, int] | None:
    """``--agent-eval-shard K/N`` as ``(K, N)``, 1 <= K <= N.

    Raises:
        ConfigError: For anything else, with the form expected.
    """
    if value is None:
        return None
    index, sep, count = value.strip().partition("/")
    if sep and index.strip().isdigit() and count.strip().isdigit():
        k, n = int(index), int(count)
        if n >= 1 and 1 <= k <= n:
            return k, n
        raise ConfigError(
            f"--agent-eval-shard {value}: K must be between 1 and N (shards are numbered "
            f"from 1, as in a CI matrix: 1/{max(n, 1)} ... {max(n, 1)}/{max(n, 1)})"
        )
    raise ConfigError(
        f"--agent-eval-shard {value!r}: write K/N, e.g. --agent-eval-shard 2/4 for the second "
        "of four shards"
    )


SPEED_NAMES: dict[str, float] = {"max": 0.0, "realtime": 1.0}
"""The named streaming speeds: ``max`` streams as fast as the agent takes the audio (the
adapters' default; streaming speed never changes a verdict), ``realtime`` as a caller speaks."""
MAX_SPEED = 100.0
"""The fastest scaled speed: beyond it real time is so compressed that ``max`` says it better."""


def parse_speed(value: object, where: str) -> float:
    """A streaming speed as the adapters take it: ``"max"`` (or 0) is 0.0, ``"realtime"`` (or
    1) is 1.0, another number scales real time (2 is twice as fast, 0.5 half).

    Args:
        value: From ``[tool.agent_eval] speed`` (a string or a number) or the command line.
        where: What to name in the error (``--agent-eval-speed``, the pyproject key).

    Raises:
        ConfigError: For anything else, with the values accepted.
    """
    number: float | None = None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in SPEED_NAMES:
            return SPEED_NAMES[text]
        try:
            number = float(text)
        except ValueError:
            number = None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    if number is not None and 0.0 <= number <= MAX_SPEED:
        return number
    raise ConfigError(
        f"{where} must be 'max' (or 0: as fast as the agent takes the audio), "
        f"'realtime' (or 1) or a number between 0 and {MAX_SPEED:g} that scales real time "
        f"(2 is twice as fast), got {value!r}{did_you_mean(str(value), SPEED_NAMES)}"
    )
