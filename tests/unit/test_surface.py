"""The public surface is a deliberate list of at most 25 modules (issue 33), and every module
that left it still imports from its old path, through the legacy table, with a warning.

A module is public when no part of its dotted path starts with ``_`` (``__main__`` counts: it
is a command users run). Adding one is a decision: it goes in `PUBLIC_MODULES` here, and the
cap holds. Read from the files, so no optional dependency is imported.
"""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path

import pytest

import pytest_agent_eval
from pytest_agent_eval import legacy

SRC = Path(pytest_agent_eval.__file__).parent

MAX_PUBLIC_MODULES = 25

PUBLIC_MODULES = {
    # What users import: the façade, the records, the errors, the evaluators (and the judges'
    # module, which the earlier package's users import), the voice core, simulated callers.
    "pytest_agent_eval",
    "pytest_agent_eval.models",
    "pytest_agent_eval.errors",
    "pytest_agent_eval.evaluators",
    "pytest_agent_eval.evaluators.judge",
    "pytest_agent_eval.voice",
    "pytest_agent_eval.simulation",
    "pytest_agent_eval.synthesize",
    # The adapters: the protocol and one module per framework.
    "pytest_agent_eval.adapters",
    "pytest_agent_eval.adapters.base",
    "pytest_agent_eval.adapters.langchain",
    "pytest_agent_eval.adapters.openai",
    "pytest_agent_eval.adapters.pydantic_ai",
    "pytest_agent_eval.adapters.smolagents",
    "pytest_agent_eval.adapters.pipecat",
    "pytest_agent_eval.adapters.livekit",
    "pytest_agent_eval.adapters.livekit.realtime",
    "pytest_agent_eval.adapters.livekit.realtime.openai",
    # LiveKit's three parts export nothing of their own (adapters.livekit re-exports their
    # names); they stay put while the shared voice turn (issue 33) splits their modules, and
    # are the next to go private.
    "pytest_agent_eval.adapters.livekit.offline",
    "pytest_agent_eval.adapters.livekit.room",
    "pytest_agent_eval.adapters.livekit.session",
    # Entry points: the pytest plugin, the commands, and the old paths' table.
    "pytest_agent_eval.plugin",
    "pytest_agent_eval.__main__",
    "pytest_agent_eval.synthesize_audio",
    "pytest_agent_eval.legacy",
}

# Issue 33's moves: old public module -> where its code lives now (None: a shim of the earlier
# package, deleted, its names served from the public modules that define them).
MADE_PRIVATE: dict[str, str | None] = {
    "pytest_agent_eval.runner": "pytest_agent_eval._runner",
    "pytest_agent_eval.config": "pytest_agent_eval._config",
    "pytest_agent_eval.gates": "pytest_agent_eval._gates",
    "pytest_agent_eval.loader": "pytest_agent_eval._loader",
    "pytest_agent_eval.schema": "pytest_agent_eval._schema",
    "pytest_agent_eval.expansion": "pytest_agent_eval._expansion",
    "pytest_agent_eval.evaluators.base": "pytest_agent_eval.evaluators._base",
    "pytest_agent_eval.evaluators.contains": None,
    "pytest_agent_eval.evaluators.tool_call": None,
}


def _public_modules() -> set[str]:
    found = set()
    for path in SRC.rglob("*.py"):
        parts = ("pytest_agent_eval", *path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(p.startswith("_") and p != "__main__" for p in parts):
            found.add(".".join(parts))
    return found


def test_the_public_modules_are_the_deliberate_list() -> None:
    assert len(PUBLIC_MODULES) <= MAX_PUBLIC_MODULES
    actual = _public_modules()
    assert actual - PUBLIC_MODULES == set(), "new public modules: make them private or list them"
    assert PUBLIC_MODULES - actual == set(), "listed modules that are gone or private now"


def test_no_module_made_private_is_still_a_file() -> None:
    for old in MADE_PRIVATE:
        path = SRC.joinpath(*old.split(".")[1:])
        assert not path.with_suffix(".py").exists() and not path.is_dir(), old


@pytest.mark.parametrize("old", sorted(MADE_PRIVATE))
def test_each_old_path_warns_and_resolves_to_the_same_object(old: str) -> None:
    names = legacy.MOVED[old]
    assert names, f"{old} serves no names"
    module = importlib.import_module(old)
    home = MADE_PRIVATE[old]
    for name, target in sorted(names.items()):
        new_module, _, attr = target.partition(":")
        with pytest.warns(DeprecationWarning, match=r" moved; ") as caught:
            value = getattr(module, name)
        message = str(caught[0].message)
        assert message.startswith(f"{old}.{name} moved; "), message
        assert new_module in message, f"the warning does not name {new_module}: {message}"
        # The object is the one its new home defines, and (for a moved module) the one its
        # private module holds under the same name: nothing was copied or wrapped.
        assert value is getattr(importlib.import_module(new_module), attr)
        if home is not None:
            assert value is getattr(importlib.import_module(home), name)


def test_an_old_path_imported_with_from_warns_once_per_name() -> None:
    with pytest.warns(DeprecationWarning, match=r"import it from pytest_agent_eval$") as caught:
        from pytest_agent_eval.runner import RunSettings  # type: ignore[attr-defined]
    assert len(caught) == 1
    assert RunSettings is pytest_agent_eval.RunSettings


def test_no_internal_code_uses_an_old_path() -> None:
    """Our own code, tests and examples import the new homes: an old path in them would warn
    in every run and hide the day the table drops it."""
    repo = SRC.parent.parent
    old_paths = set(legacy.MOVED) - {"pytest_agent_eval.evaluators", "pytest_agent_eval.voice"}
    offenders = []
    for folder in ("src", "bench", "examples"):
        for path in (repo / folder).rglob("*.py"):
            text = path.read_text("utf-8")
            for old in old_paths:
                if f"from {old} import" in text or f"import {old}\n" in text:
                    offenders.append(f"{path.relative_to(repo)}: {old}")
    assert offenders == []


def test_the_old_paths_do_not_warn_until_a_name_is_used() -> None:
    # Importing the module alone is silent: a name read from it is what warns.
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for old in MADE_PRIVATE:
            importlib.import_module(old)
