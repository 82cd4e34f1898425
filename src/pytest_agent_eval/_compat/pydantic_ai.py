"""What the judges and the pydantic-ai adapter need of pydantic-ai, across its 1.x and 2.x
releases.

Duck-typed where possible, so importing this module (and the package) never imports pydantic-ai.
The version-dependent parts:

- A run's usage: a method (``result.usage()``) in 1.x, also an attribute in later releases.
- The provider SDK's own retries: pydantic-ai builds OpenAI/Anthropic/Groq clients whose SDK
  retries a 429 or 5xx twice by itself, which multiplied with the judge's own retries (2 judge
  retries made 9 HTTP requests). Releases that accept ``max_retries`` in model settings get 0
  per request (also for a model the user built, whose client is left untouched); for a model the
  judge built itself from an id, the SDK client's ``max_retries`` is also set to 0, which covers
  releases without that setting.
- Closing the SDK client of a model the judge built, at the end of the session.

`drift_problems` (run by a test) names the installed version and what no longer holds.
"""

from __future__ import annotations

import inspect
from importlib import metadata
from typing import Any

from ..models import Usage

__all__ = [
    "close_built_model",
    "drift_problems",
    "infer_judge_model",
    "model_id",
    "model_id_problem",
    "no_sdk_retry_settings",
    "pydantic_ai_version",
    "usage_of",
]


def pydantic_ai_version() -> str:
    """The installed pydantic-ai (slim or full), or ``"not installed"``."""
    for dist in ("pydantic-ai-slim", "pydantic-ai"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return "not installed"


def usage_of(result: Any) -> Usage | None:
    """The tokens and requests of a pydantic-ai run result as a `Usage`, or None when absent."""
    usage = getattr(result, "usage", None)
    if inspect.ismethod(usage):  # pydantic-ai 1.x exposes usage() as a method
        usage = usage()
    if usage is None:
        return None
    return Usage(
        input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
        output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
        requests=int(getattr(usage, "requests", 0) or 0),
    )


def _settings_take_max_retries() -> bool:
    try:
        from pydantic_ai.settings import ModelSettings
    except ImportError:
        return False
    return "max_retries" in getattr(ModelSettings, "__annotations__", {})


def no_sdk_retry_settings() -> dict[str, Any]:
    """Model settings that turn the provider SDK's own retries off, where pydantic-ai has them."""
    return {"max_retries": 0} if _settings_take_max_retries() else {}


def _sdk_client(model: Any) -> Any:
    try:
        return getattr(model, "client", None)
    except Exception:  # a provider whose client property needs credentials
        return None


def infer_judge_model(model_id: str) -> Any:
    """The pydantic-ai model for ``model_id``, with its SDK client's own retries turned off
    (the judge counts attempts itself)."""
    from pydantic_ai.models import infer_model

    model = infer_model(model_id)
    client = _sdk_client(model)
    if isinstance(getattr(client, "max_retries", None), int):
        client.max_retries = 0
    return model


def model_id(model: Any) -> str:
    """A model's id for messages and cache keys (``openai:gpt-4o-mini``, ``function:...``):
    the id it was given, or its provider and name."""
    if isinstance(model, str):
        return model
    system = getattr(model, "system", None)
    name = getattr(model, "model_name", None)
    if system and name:
        return name if str(name).startswith(f"{system}:") else f"{system}:{name}"
    return type(model).__name__


def model_id_problem(model_id: str) -> str | None:
    """Why ``model_id`` names no pydantic-ai model (no ``provider:`` prefix, an unknown
    provider), with pydantic-ai's own suggestion; None when it names one. Nothing is built, no
    key is needed and nothing is fetched, so a file can be checked where no model is reachable.
    On a pydantic-ai without these helpers (1.x before they existed), None: the model is then
    checked when it is first used."""
    if model_id == "test":
        return None
    try:
        from pydantic_ai.models import infer_model
    except ImportError:  # pydantic-ai is a dependency; a broken install says so when used
        return None
    try:
        from pydantic_ai.models import parse_model_id
        from pydantic_ai.providers import infer_provider_class
    except ImportError:
        return None

    def build_nothing(name: str) -> Any:
        raise _Known(name)

    provider, _ = parse_model_id(model_id)
    if provider is None:
        try:  # says "Unknown model: gpt-4o. Did you mean 'openai:gpt-4o'?"
            infer_model(model_id, provider_factory=build_nothing)
        except _Known:
            return None
        except Exception as exc:  # pydantic-ai's UserError
            return str(exc)
        return None
    try:
        infer_provider_class(provider)
    except ValueError as exc:
        return f"Unknown model: {model_id} ({exc})"
    except ImportError:  # a known provider whose package is not installed: said when used
        return None
    return None


class _Known(Exception):
    """Raised instead of building a provider: the id was understood up to there."""


async def close_built_model(model: Any) -> None:
    """Close the SDK client of a model built by `infer_judge_model` (never a user's model)."""
    client = _sdk_client(model)
    close = getattr(client, "close", None)
    if close is None:
        return
    try:
        result = close()
        if inspect.isawaitable(result):
            await result
    except Exception:  # closing is best effort; a failure here must not fail the session
        return


def drift_problems() -> list[str]:
    """What no longer holds of the assumptions above, each naming the pydantic-ai version."""
    version = pydantic_ai_version()
    problems: list[str] = []
    try:
        import pydantic_ai
        from pydantic_ai.models import infer_model  # noqa: F401
    except ImportError as exc:
        return [f"pydantic-ai {version}: cannot import it ({exc})"]
    for name in ("Agent", "NativeOutput", "PromptedOutput"):
        if not hasattr(pydantic_ai, name):
            problems.append(f"pydantic-ai {version}: pydantic_ai.{name} is gone")
    try:
        from pydantic_ai.exceptions import ModelHTTPError
    except ImportError:
        problems.append(f"pydantic-ai {version}: pydantic_ai.exceptions.ModelHTTPError is gone")
    else:
        if "status_code" not in inspect.signature(ModelHTTPError).parameters:
            problems.append(f"pydantic-ai {version}: ModelHTTPError takes no status_code")
    return problems
