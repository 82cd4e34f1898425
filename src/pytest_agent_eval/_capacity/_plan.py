"""What a capacity run does: the steps of K, the budgets, the gate and where reports go.

Values come from ``[tool.agent_eval.capacity]`` in pyproject.toml, then the command line wins.
Every bad value is a `ConfigError` naming where it came from and what is accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .._config import parse_speed
from ..errors import ConfigError

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "CapacityPlan",
    "parse_plan_table",
    "parse_steps",
    "ramp_steps",
]

DEFAULT_MAX_SESSIONS = 16
"""Where the doubling ramp (1, 2, 4, ...) stops when no bound or list is given."""

MAX_SESSIONS_LIMIT = 1024
"""No step may ask for more concurrent sessions than this: a typo should not fork a storm."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityPlan:
    """One capacity run, validated."""

    rootdir: Path
    """The project: where pyproject.toml (and the conftest.py with ``llm_eval_agent``) live."""
    transcripts: tuple[Path, ...] = ()
    """Transcript files or folders; empty: ``[tool.agent_eval] yaml_dirs``."""
    agent: str | None = None
    """``module:attr`` of an adapter or a no-argument factory returning one; None: the
    project's ``llm_eval_agent`` fixture."""
    worker: Path | None = None
    """Worker mode: the user's LiveKit worker file, run as ``python FILE start`` behind a
    livekit-server on loopback and called through rooms (instead of ``agent``)."""
    agent_name: str | None = None
    """The agent name the worker registers (``rtc_session(agent_name=...)``): worker mode."""
    load_threshold: float | None = None
    """Worker mode: the worker's ``load_threshold``, to judge the calls it took by (None: the
    threshold the worker logs when it marks itself full; never logged, the calls go
    unjudged)."""
    process_per_session: bool = False
    """Each conversation in a process of its own (a bot per call, as Pipecat deployments
    run), instead of K sessions in this one."""
    cpu_by_component: bool = False
    """Meter each step's CPU by component (`_components`). Off by default: the meter times
    every event-loop callback, which costs CPU of its own and so would lower the knee."""
    steps: tuple[int, ...] = (1, 2, 4, 8, 16)
    """The values of K (concurrent sessions), ascending."""
    repeats: int = 3
    """How many times each step runs."""
    p95_latency_ms: float = 2000.0
    """Budget: p95 of end of speech to first agent audio (or reply text), per step."""
    loop_lag_ms: float = 100.0
    """Budget: p95 of the event loop's lag (how late a probe task wakes), per step."""
    min_sessions_per_core: float | None = None
    """The gate: exit 1 when the measured sessions per core is below it."""
    step_timeout_s: float = 300.0
    """A step (one repeat of K sessions) that runs longer is stopped and counted as over."""
    speed: float = 1.0
    """How fast fixtures are streamed: 1.0 real time (what capacity means)."""
    stop_at_breach: bool = True
    """Stop ramping after the first step over budget."""
    refine: int = 4
    """After the first step over budget, this many more steps halve the gap between it and
    the last step within budget (16 ok, 32 over: 24, then 20 or 28, ...): four find a knee
    between 16 and 32 to one session, which is what made it repeatable within 10% over
    runs (docs/benchmarks.md, issue 36); with two, a knee sat 4 sessions (25%) from the next."""
    fault_rate: float = 0.0
    """Share of the scripted stand-ins' provider requests that fail (0 to 1): half with a 429,
    half with a timeout after ``fault_timeout_s``."""
    fault_timeout_s: float = 10.0
    """How long an injected timeout hangs before its error (a provider client's timeout)."""
    answer_timeout_s: float = 30.0
    """A turn with no answer (first audio or reply) within this many seconds: the
    conversation stopped answering, and is counted so in its step."""
    json_path: Path | None = None
    html_path: Path | None = None

    def __post_init__(self) -> None:
        if not self.steps:
            raise ConfigError("capacity: no steps to run")
        if list(self.steps) != sorted(set(self.steps)):
            raise ConfigError(f"capacity: steps must be ascending and distinct, got {self.steps}")
        if self.steps[0] < 1 or self.steps[-1] > MAX_SESSIONS_LIMIT:
            raise ConfigError(
                f"capacity: steps must be between 1 and {MAX_SESSIONS_LIMIT} sessions, "
                f"got {self.steps}"
            )
        if self.worker is not None and self.agent is not None:
            raise ConfigError(
                "capacity: give either --worker (a LiveKit worker file, run as in production) "
                "or --agent (an adapter in this process), not both"
            )
        if self.worker is not None and self.process_per_session:
            raise ConfigError(
                "capacity: --worker runs the worker's own job processes; "
                "--process-per-session is for an adapter in this process"
            )
        if self.worker is not None and self.fault_rate > 0:
            raise ConfigError(
                "capacity: --fault-rate injects faults into the scripted stand-ins of sessions "
                "in this process; --worker runs the agent in the worker's own job processes, "
                "where none would be injected. Drop --fault-rate (fault_rate) with --worker, or "
                "measure faults with --agent"
            )
        if (self.worker is None) != (self.agent_name is None):
            raise ConfigError(
                "capacity: worker mode needs both --worker FILE and --agent-name NAME (the "
                "agent_name the worker registers with @server.rtc_session(agent_name=...))"
            )
        if self.load_threshold is not None:
            if self.worker is None:
                raise ConfigError(
                    "capacity: load_threshold (--load-threshold) judges the calls a LiveKit "
                    "worker took; give it with --worker FILE, or drop it"
                )
            if not 0 < self.load_threshold <= 1:
                raise ConfigError(
                    "capacity: load_threshold must be > 0 and <= 1 (the worker's "
                    f"load_threshold, a share of its CPU, e.g. 0.7), got {self.load_threshold!r}"
                )
        if self.refine < 0:
            raise ConfigError(f"capacity: refine must be >= 0, got {self.refine}")
        if self.repeats < 1:
            raise ConfigError(f"capacity: repeats must be >= 1, got {self.repeats}")
        if not 0 <= self.fault_rate <= 1:
            raise ConfigError(
                f"capacity: fault_rate must be between 0 and 1 (0.05: 5% of provider requests "
                f"fail), got {self.fault_rate!r}"
            )
        if self.fault_timeout_s < 0:
            raise ConfigError(f"capacity: fault_timeout_s must be >= 0, got {self.fault_timeout_s}")
        for name in ("p95_latency_ms", "loop_lag_ms", "step_timeout_s", "answer_timeout_s"):
            value = getattr(self, name)
            if not value > 0:
                raise ConfigError(f"capacity: {name} must be > 0, got {value!r}")
        if self.min_sessions_per_core is not None and self.min_sessions_per_core < 0:
            raise ConfigError(
                f"capacity: min_sessions_per_core must be >= 0, got {self.min_sessions_per_core}"
            )
        if self.speed <= 0:
            raise ConfigError(
                "capacity: speed must be above 0 (1.0 is real time); a capacity run at "
                "'max' speed would measure nothing a caller waits for"
            )

    def with_changes(self, **changes: Any) -> CapacityPlan:
        """This plan with some fields replaced (validated again)."""
        return replace(self, **changes)


def ramp_steps(max_sessions: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to ``max_sessions``, which is always the last step."""
    if not 1 <= max_sessions <= MAX_SESSIONS_LIMIT:
        raise ConfigError(
            f"capacity: max_sessions must be between 1 and {MAX_SESSIONS_LIMIT}, "
            f"got {max_sessions!r}"
        )
    steps: list[int] = []
    k = 1
    while k < max_sessions:
        steps.append(k)
        k *= 2
    steps.append(max_sessions)
    return tuple(steps)


def parse_steps(value: str | list[Any], where: str) -> tuple[int, ...]:
    """``"1,2,4,8"`` (or a TOML list of integers) -> ``(1, 2, 4, 8)``, sorted and distinct."""
    items: list[Any] = value.split(",") if isinstance(value, str) else list(value)
    steps: list[int] = []
    for item in items:
        text = item.strip() if isinstance(item, str) else item
        if isinstance(text, bool):
            raise ConfigError(f"{where}: steps must be whole numbers >= 1, got {text!r}")
        try:
            k = int(text)
        except (TypeError, ValueError):
            raise ConfigError(
                f"{where}: steps must be whole numbers >= 1, e.g. 1,2,4,8; got {item!r}"
            ) from None
        if isinstance(text, float) and k != text:
            raise ConfigError(f"{where}: steps must be whole numbers >= 1, got {text!r}")
        if k < 1:
            raise ConfigError(f"{where}: steps must be whole numbers >= 1, got {k}")
        steps.append(k)
    if not steps:
        raise ConfigError(f"{where}: no steps given; write them like 1,2,4,8")
    return tuple(sorted(set(steps)))


_NUMBER_KEYS = (
    "p95_latency_ms",
    "loop_lag_ms",
    "min_sessions_per_core",
    "step_timeout_s",
    "fault_rate",
    "fault_timeout_s",
    "answer_timeout_s",
    "load_threshold",
)
_TABLE_KEYS = frozenset(
    {
        "agent",
        "worker",
        "agent_name",
        "process_per_session",
        "cpu_by_component",
        "steps",
        "max_sessions",
        "repeats",
        "refine",
        "speed",
        "results_path",
        "html_path",
    }
    | set(_NUMBER_KEYS)
)


def parse_plan_table(table: Mapping[str, Any], *, rootdir: Path, source: str) -> dict[str, Any]:
    """``[tool.agent_eval.capacity]`` as `CapacityPlan` keyword arguments.

    Raises:
        ConfigError: For an unknown key or a value of the wrong type.
    """
    out: dict[str, Any] = {}
    for key, value in table.items():
        where = f"{source}: '{key}'"
        if key not in _TABLE_KEYS:
            raise ConfigError(
                f"{source}: unknown key '{key}'; the keys are {', '.join(sorted(_TABLE_KEYS))}"
            )
        if key in _NUMBER_KEYS:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"{where} must be a number, got {value!r}")
            out[key] = float(value)
        elif key in ("repeats", "max_sessions", "refine"):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{where} must be a whole number, got {value!r}")
            out[key] = value
        elif key == "steps":
            if not isinstance(value, list):
                raise ConfigError(f"{where} must be a list of whole numbers, e.g. [1, 2, 4]")
            out[key] = parse_steps(value, where)
        elif key in ("process_per_session", "cpu_by_component"):
            if not isinstance(value, bool):
                raise ConfigError(f"{where} must be true or false, got {value!r}")
            out[key] = value
        elif key == "speed":
            out[key] = parse_speed(value, where)
        else:  # agent, agent_name, worker, results_path, html_path
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{where} must be a non-empty string, got {value!r}")
            out[key] = value if key in ("agent", "agent_name") else rootdir / value
    if "max_sessions" in out:
        if "steps" in out:
            raise ConfigError(f"{source}: give either 'steps' or 'max_sessions', not both")
        out["steps"] = ramp_steps(out.pop("max_sessions"))
    if "results_path" in out:
        out["json_path"] = out.pop("results_path")
    return out
