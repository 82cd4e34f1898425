"""The exceptions pytest-agent-eval raises, and why each exists.

```
AgentEvalError          base of everything below
  TranscriptError       bad YAML or model values (also a ValueError)
  ConfigError           bad [tool.agent_eval] value or command-line option
  AudioFixtureError     WAV missing, unreadable, empty, silent, or stale against its sidecar
  AdapterError          our adapter could not drive or observe the agent or its session
    AgentFailedError    the agent failed the turn as the adapter observed it (a FAIL)
      AgentTimeoutError the agent did not answer within the adapter's own timeout
    AgentCrashError     the agent crashed: its own code raised, or its session or pipeline
                        hit an error it could not recover from
  JudgeError            the judge call itself failed, which is not a "no"
  MissingExtraError     an optional dependency is not installed (also an ImportError)
```

Every exception the package raises derives from `AgentEvalError`: the ones above, and those
of its parts that keep a builtin base too for the callers that catch it
(`InvalidPatternError` is also a ``re.error`` and a ``ValueError``, `NetworkRefusedError` a
``ConnectionRefusedError``, `PytestDriftError` a ``RuntimeError``, a conditions value's
problem a ``ValueError``); tests/unit/test_concepts.py holds it.

Every message follows one shape: what went wrong, where (file, transcript, turn, field), and
how to fix it.

Raised during a run, every one of them makes the run an ERROR (the agent could not be
evaluated, `models.Verdict`) except `AgentFailedError` (and its `AgentTimeoutError`): an agent
that never answers, or never hears the caller under the audio conditions asked for, failed, as
one past ``turn_timeout_s`` does; and `AgentCrashError`: an agent that crashed is a FAIL of its
own kind, ``crashed``.
"""

from __future__ import annotations

from typing import Self

__all__ = [
    "AdapterError",
    "AgentCrashError",
    "AgentEvalError",
    "AgentFailedError",
    "AgentTimeoutError",
    "AudioFixtureError",
    "ConfigError",
    "JudgeError",
    "MissingExtraError",
    "TranscriptError",
    "install_command",
    "require_extra",
]


class AgentEvalError(Exception):
    """Base class of every error raised by pytest-agent-eval."""

    def labelled(self, label: str) -> Self:
        """A copy with ``label`` (``turn 2``) in front of the message: the same class and the
        same fields (an `AgentCrashError` keeps its crash), for an adapter that says where."""
        copy = type(self).__new__(type(self))
        copy.__dict__.update(self.__dict__)
        copy.args = (f"{label}: {self}",)
        return copy


class TranscriptError(AgentEvalError, ValueError):
    """A transcript (YAML or Python) is invalid; the message names file, turn and field."""


class ConfigError(AgentEvalError):
    """A `[tool.agent_eval]` value or command-line option is invalid."""


class AudioFixtureError(AgentEvalError):
    """A WAV fixture is missing, unreadable, empty, silent or stale."""


class AdapterError(AgentEvalError):
    """Our adapter could not drive or observe the agent or the session around it during a run
    (a session that closed, a worker that left, what a check needs but cannot be seen): the
    run is an ERROR. The message says what, in which turn, and the fix."""


class AgentFailedError(AdapterError):
    """The agent failed the turn, as the adapter observed it: it never answered, or never
    heard the caller under the audio conditions the turn asked for. A FAIL (counted, and
    absorbable by a passing group), not an ERROR: the agent was evaluated."""


class AgentTimeoutError(AgentFailedError):
    """The agent did not answer within the adapter's own timeout: the agent failed (a FAIL,
    like a turn past ``turn_timeout_s``), not the adapter."""


class AgentCrashError(AdapterError):
    """The agent crashed, as seen by an adapter: an exception escaped the agent's own code (a
    hook, a processor, a tool the framework does not catch), or its session or pipeline hit
    an error it could not recover from. The run is ``crashed`` (a FAIL that no gate absorbs),
    not an ERROR: the agent was evaluated, and it broke.

    Args:
        message: What happened, in which turn (the run's record shows it).
        kind: The exception's class name, or the framework's error kind.
        detail: The exception's own message.
        where: ``file:line in function`` of the agent's frame, or the framework's error
            source; None when unknown.
    """

    def __init__(
        self, message: str, *, kind: str = "", detail: str = "", where: str | None = None
    ) -> None:
        # ``kind`` has a default only so that the error unpickles (from a subprocess, an
        # xdist worker): pickle rebuilds it from its message, then restores these fields.
        super().__init__(message)
        self.kind = kind or type(self).__name__
        self.detail = detail
        self.where = where


class JudgeError(AgentEvalError):
    """The judge model could not give a verdict (timeout, API error, bad output)."""


class MissingExtraError(AgentEvalError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""


def require_extra(module: str, *, extra: str, feature: str) -> None:
    """Import ``module`` or raise `MissingExtraError` naming the extra that provides it.

    Args:
        module: The importable module name, e.g. ``"livekit.agents"``.
        extra: The pytest-agent-eval extra that installs it, e.g. ``"livekit"``.
        feature: What needs it, in the user's words, e.g. ``"LiveKitAdapter"``.
    """
    import importlib

    try:
        importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        raise MissingExtraError(
            f"{feature} needs {top}, which is not installed: {install_command(extra)}"
        ) from exc


def install_command(extra: str) -> str:
    """The command that adds ``extra`` to this installation of the package.

    Installed from a folder (a clone of the source, as the README does until a release is on
    the package index), the extra must come from that folder again: installing it by name
    would fetch the earlier release from the index in its place. So the command names the
    folder pip recorded (``direct_url.json``), with ``-e`` for an editable install, and the
    package name only for an install from an index.
    """
    import json
    from importlib import metadata
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    by_name = f"pip install 'pytest-agent-eval[{extra}]'"
    try:
        recorded = metadata.distribution("pytest-agent-eval").read_text("direct_url.json")
    except metadata.PackageNotFoundError:  # running from a source tree on sys.path
        return f"pip install './pytest-agent-eval[{extra}]' (from a clone of the source)"
    if not recorded:
        return by_name
    try:
        origin = json.loads(recorded)
    except ValueError:
        return by_name
    url = urlparse(str(origin.get("url", "")))
    if url.scheme != "file":
        return by_name
    folder = Path(unquote(url.path))
    if not folder.is_dir():
        return f"pip install './pytest-agent-eval[{extra}]' (from a clone of the source)"
    editable = bool((origin.get("dir_info") or {}).get("editable"))
    return f"pip install {'-e ' if editable else ''}'{folder}[{extra}]'"
