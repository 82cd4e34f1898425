"""Old import paths: each still works, warns, and names where its name went."""

from __future__ import annotations

import importlib
import sys
import warnings
from pathlib import Path

import pytest
from test_public_api import COMPAT_NAMES

import pytest_agent_eval
from pytest_agent_eval import legacy


@pytest.mark.parametrize(
    ("module", "name"),
    [(module, name) for module, names in legacy.MOVED.items() for name in names],
)
def test_every_moved_name_resolves_to_its_replacement_with_a_warning(
    module: str, name: str
) -> None:
    target = legacy.MOVED[module][name]
    old = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"{module}\.{name} moved; ") as caught:
        value = getattr(old, name)
    new_module, _, attr = target.partition(":")
    assert value is getattr(importlib.import_module(new_module), attr)
    # The warning names where the name went: its new module, or the public function that
    # replaces a function kept here.
    message = str(caught[0].message)
    if new_module == "pytest_agent_eval.legacy":
        assert "pytest_agent_eval.l" in message, message
    elif (module, name) == ("pytest_agent_eval.speech", "PauseMarkupError"):
        assert "catch pytest_agent_eval.TranscriptError" in message, message
    elif attr != name:  # a rename: the warning gives the new name too
        assert message.endswith(f"it is {attr} now: import {attr} from {new_module}"), message
    elif "._" in new_module:
        assert f"no longer public (for now it is {new_module}.{attr}" in message, message
    else:
        assert message.endswith(f"import it from {new_module}"), message
    # The warning points at the caller's line, not at this package.
    assert Path(caught[0].filename) == Path(__file__)


def test_the_warning_names_the_public_replacement() -> None:
    from pytest_agent_eval import yaml_loader

    with pytest.warns(DeprecationWarning, match=r"import it from pytest_agent_eval$"):
        assert yaml_loader.TranscriptError is pytest_agent_eval.TranscriptError
    with pytest.warns(DeprecationWarning, match=r"use pytest_agent_eval\.load_transcript_file"):
        yaml_loader.load_transcript  # noqa: B018


def test_an_unknown_name_of_an_old_module_is_an_attribute_error_listing_what_is_served() -> None:
    from pytest_agent_eval import yaml_loader

    with pytest.raises(
        AttributeError, match=r"'load_transcripts'.*: TranscriptError, load_transcript$"
    ):
        yaml_loader.load_transcripts  # noqa: B018


def test_a_module_that_never_existed_is_still_not_found() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("pytest_agent_eval.no_such_module")


def test_install_is_idempotent() -> None:
    before = list(sys.meta_path)
    legacy.install()
    legacy.install()
    assert sys.meta_path == before


def test_the_earlier_loader_reads_a_str_path(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        "id: greet\nturns:\n  - user: hi\n    expect:\n      reply_contains_any: [hello]\n"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        transcript = legacy.load_transcript(str(path), default_runs=3)
    assert transcript.id == "greet" and transcript.runs == 3


def test_an_earlier_project_importing_the_old_loader_runs_green_with_the_warning(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_old="""
        from pytest_agent_eval.yaml_loader import TranscriptError, load_transcript

        def test_loads(tmp_path):
            path = tmp_path / "t.yaml"
            path.write_text("id: t\\nturns:\\n  - user: hi\\n")
            assert load_transcript(str(path)).id == "t"
            assert issubclass(TranscriptError, Exception)
        """
    )
    result = pytester.runpytest("-W", "default")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*DeprecationWarning: pytest_agent_eval.yaml_loader.* moved;*"])


# The earlier package's public paths (spec/compat.md, docs/migration.md "What works as it did"):
# real modules, imported without a warning, offering the names users type.
# (evaluators.base, .contains and .tool_call are old paths since issue 33: tests/unit/test_surface.py.)
EARLIER_PUBLIC = {
    "pytest_agent_eval": sorted(COMPAT_NAMES),
    "pytest_agent_eval.models": ["TurnResult", "RunResult", "Turn", "Expect", "Transcript"],
    "pytest_agent_eval.evaluators": [
        "ContainsEvaluator",
        "ToolCallEvaluator",
        "ToolCallArgsEvaluator",
        "JudgeEvaluator",
        "ToolCallArgsJudgeEvaluator",
    ],
    "pytest_agent_eval.evaluators.judge": ["JudgeEvaluator", "ToolCallArgsJudgeEvaluator"],
    "pytest_agent_eval.adapters.pydantic_ai": ["PydanticAIAdapter"],
    "pytest_agent_eval.adapters.openai": ["OpenAIAdapter"],
    "pytest_agent_eval.synthesize_audio": ["main"],
}


@pytest.mark.parametrize("module", sorted(EARLIER_PUBLIC))
def test_the_earlier_public_modules_import_without_a_warning(module: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        imported = importlib.import_module(module)
        for name in EARLIER_PUBLIC[module]:
            assert getattr(imported, name) is not None, f"{module}.{name}"


@pytest.mark.parametrize(
    "module",
    [
        "pytest_agent_eval.collection",
        "pytest_agent_eval.eval_items",
        "pytest_agent_eval.fixture",
        "pytest_agent_eval.scaffold",
        "pytest_agent_eval.conditions",
        "pytest_agent_eval.expectations",
        "pytest_agent_eval.importers",
        "pytest_agent_eval.report.terminal",
        "pytest_agent_eval.synthesize.plan",
        "pytest_agent_eval.synthesize.backend",
        "pytest_agent_eval._timeshim",
    ],
)
def test_plumbing_no_doc_taught_is_private_with_no_old_path(module: str) -> None:
    """Modules only our own code imported became private (issue 23): their old paths are not
    served, since no user was taught them."""
    assert module not in legacy.MOVED
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(module)


def test_the_synthesizer_script_of_an_earlier_install_still_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An ``agent-eval-synthesize`` script written by a 0.4 install imports
    ``synthesize.cli:main``: it warns, naming the command module, and runs the command."""
    from pytest_agent_eval.synthesize import cli  # type: ignore[attr-defined]

    with pytest.warns(
        DeprecationWarning, match=r"import it from pytest_agent_eval\.synthesize_audio$"
    ):
        main = cli.main
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "usage:" in capsys.readouterr().out
