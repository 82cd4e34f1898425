"""`importing_pipecat` drops only the deprecation warnings Pipecat's own code raises; every
other warning inside it reaches the filters in force, as without it (no Pipecat needed: the
code below runs as a module named like Pipecat's)."""

from __future__ import annotations

import warnings

import pytest

from pytest_agent_eval._compat.pipecat_imports import importing_pipecat, is_pipecat_module

WARNS = "import warnings\nwarnings.warn('old helper', {category})\n"


def _run_as(module: str, category: str) -> None:
    exec(WARNS.format(category=category), {"__name__": module})


def test_pipecat_s_own_deprecation_warnings_are_dropped_under_error() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with importing_pipecat():
            _run_as("pipecat.audio.utils", "DeprecationWarning")
            _run_as("pipecat_flows.manager", "PendingDeprecationWarning")


@pytest.mark.parametrize(
    ("module", "category"),
    [
        ("acme_bot", "DeprecationWarning"),  # the user's code, inside an import of Pipecat
        ("pipecatalog", "DeprecationWarning"),  # a name that only starts like Pipecat's
        ("pipecat.audio.utils", "UserWarning"),  # Pipecat's, but no deprecation
    ],
)
def test_any_other_warning_is_raised_again_to_the_filters(module: str, category: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(Warning, match="old helper"), importing_pipecat():
            _run_as(module, category)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with importing_pipecat():
            _run_as(module, category)
    assert [str(w.message) for w in shown] == ["old helper"]


def test_a_deprecation_pipecat_aims_at_the_user_s_line_is_kept() -> None:
    """A deprecated Pipecat function (or module) warns with a stack level that blames its
    caller: when the caller is the user's bot, the warning is the user's to hear."""
    pipecat_code = compile(
        "import warnings\n"
        "def old():\n"
        "    warnings.warn('old helper', DeprecationWarning, stacklevel=2)\n",
        "/site-packages/pipecat/adapters/schemas/old.py",
        "exec",
    )
    pipecat_module: dict[str, object] = {"__name__": "pipecat.adapters.schemas.old"}
    exec(pipecat_code, pipecat_module)
    bot = compile("\n\nold()\n", "/project/bot.py", "exec")
    inside = compile("old()\n", "/site-packages/pipecat/services/tts.py", "exec")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with importing_pipecat():  # Pipecat calling its own deprecated helper: dropped
            exec(inside, {"__name__": "pipecat.services.tts", "old": pipecat_module["old"]})
        with pytest.raises(DeprecationWarning, match="old helper"), importing_pipecat():
            exec(bot, {"__name__": "bot", "old": pipecat_module["old"]})


def test_pipecat_modules_by_name() -> None:
    assert is_pipecat_module("pipecat") and is_pipecat_module("pipecat.frames.frames")
    assert is_pipecat_module("pipecat_flows.manager")
    assert not is_pipecat_module("pipecatalog") and not is_pipecat_module("livekit.agents")
