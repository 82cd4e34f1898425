"""JUnit properties for CI dashboards, and a plugin that loads without heavy imports."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from .conftest import Project

AGENT = """
import itertools


@pytest.fixture
def llm_eval_agent():
    calls = itertools.count(1)

    def agent(history):
        return "booked" if next(calls) != 2 else "sorry"

    return agent
"""


def _properties(xml_path, name: str) -> dict[str, str]:
    root = ET.parse(xml_path).getroot()
    for case in root.iter("testcase"):
        if case.get("name") == name:
            return {p.get("name"): p.get("value") for p in case.iter("property")}
    raise AssertionError(f"no testcase {name!r} in {xml_path}")


def test_junit_xml_carries_score_runs_and_threshold(project: Project) -> None:
    project.pyproject("concurrency = 1")
    project.conftest(AGENT)
    project.transcript(
        "booking",
        """\
        id: booking
        runs: 3
        threshold: 0.6
        turns:
          - user: Book
            expect: {reply_contains_any: [booked]}
        """,
    )
    project.test_file(
        "test_python.py",
        """
        @pytest.mark.agent_eval(runs=4, threshold=1.0)
        def test_python_eval(agent_eval):
            agent_eval.run_sync(
                turns=[Turn("Book", expect=Expect(reply_contains_any=["booked"]))]
            ).assert_threshold()
        """,
    )

    result = project.run_live("--junitxml=report.xml")

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*generated xml file: *report.xml*"])
    yaml_props = _properties(project.path / "report.xml", "booking")
    assert yaml_props["agent_eval_score"] == "0.6667"
    assert yaml_props["agent_eval_runs"] == "3"
    assert yaml_props["agent_eval_passed_runs"] == "2"
    assert yaml_props["agent_eval_threshold"] == "0.6"
    assert (
        0
        < float(yaml_props["agent_eval_ci_low"])
        < 0.6667
        < float(yaml_props["agent_eval_ci_high"])
    )
    py_props = _properties(project.path / "report.xml", "test_python_eval")
    assert py_props["agent_eval_score"] == "0.75"
    assert py_props["agent_eval_runs"] == "4"
    assert py_props["agent_eval_passed_runs"] == "3"
    assert py_props["agent_eval_threshold"] == "1.0"


HEAVY = ("pydantic_ai", "openai", "livekit", "numpy")


def test_loading_the_plugin_and_running_evals_imports_nothing_heavy(project: Project) -> None:
    project.echo_agent("booked", "[ToolCall('create_booking', {'party': 2})]")
    project.transcript(
        "booking",
        """\
        id: booking
        turns:
          - user: Book
            expect:
              reply_contains_any: [booked]
              reply_matches_any: ["^book"]
              tool_calls_args:
                - tool: create_booking
                  args: {party: 2}
        """,
    )
    # Runs after the transcript (tests/evals sorts before tests/test_zz_*.py).
    project.test_file(
        "test_zz_imports.py",
        f"""
        import sys

        import pytest_agent_eval.plugin


        def test_no_heavy_modules():
            loaded = sorted(
                name for name in sys.modules if name.split(".")[0] in {HEAVY!r}
            )
            assert loaded == [], f"heavy modules imported: {{loaded}}"
        """,
    )

    result = project.pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--agent-eval-live", "-v"
    )

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "tests/evals/booking.yaml::booking PASSED*",
            "tests/test_zz_imports.py::test_no_heavy_modules PASSED*",
        ]
    )


def test_pytest_does_not_rewrite_the_packages_own_modules(project: Project) -> None:
    """pytest marks a plugin's whole distribution for assertion rewriting; the package takes
    itself out (it asserts nothing a test reads), so no module of it beyond the two that load
    before the unmarking goes through the rewriting hook, while test files still do."""
    project.echo_agent("booked")
    project.transcript(
        "booking",
        """\
        id: booking
        turns:
          - user: Book
            expect:
              reply_contains_any: [booked]
        """,
    )
    project.test_file(
        "test_zz_rewrite.py",
        """
        import sys

        import pytest_agent_eval._runner


        def loaded_by_the_rewriting_hook(prefix):
            return sorted(
                name
                for name, module in list(sys.modules.items())
                if name.split(".")[0] == prefix
                and type(getattr(module, "__loader__", None)).__name__
                == "AssertionRewritingHook"
            )


        def test_rewritten():
            # At most the modules that load before the unmarking (none where pytest does not
            # mark an editable install, as 8.0); never the rest, such as the runner.
            assert "pytest_agent_eval._runner" in sys.modules
            assert set(loaded_by_the_rewriting_hook("pytest_agent_eval")) <= {
                "pytest_agent_eval",
                "pytest_agent_eval._compat",
                "pytest_agent_eval._compat.pytest_rewrite",
            }
            assert loaded_by_the_rewriting_hook("test_zz_rewrite") == ["test_zz_rewrite"]
        """,
    )

    result = project.pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--agent-eval-live", "-v"
    )

    result.assert_outcomes(passed=2)


def test_collecting_transcripts_does_not_import_the_simulation_package(project: Project) -> None:
    """Collection tells a simulation file from a transcript by its text, so a run of
    transcripts only never imports the simulation package; a simulation file still gets it."""
    project.echo_agent("booked")
    project.transcript(
        "booking",
        "id: booking\nturns:\n  - user: Book\n    expect: {reply_contains_any: [booked]}\n",
    )
    project.test_file(
        "test_zz_simulation.py",
        """
        import sys


        def test_not_imported():
            assert "pytest_agent_eval.simulation" not in sys.modules
        """,
    )

    result = project.pytester.runpytest_subprocess("-p", "no:cacheprovider", "--agent-eval-live")

    result.assert_outcomes(passed=2)

    project.transcript(
        "caller",
        """\
        id: caller
        persona: A caller who wants a table.
        criteria: [The agent books it.]
        """,
    )
    result = project.pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*caller*"])


def test_plugin_works_when_no_optional_extra_is_installed(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Make the heavy modules unimportable in the child process, as if the extras were missing.
    blocker = project.path / "blockers"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        f"import sys\nfor name in {HEAVY!r}:\n    sys.modules[name] = None\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(blocker))
    project.echo_agent("booked")
    project.transcript(
        "booking",
        "id: booking\nturns:\n  - user: Book\n    expect: {reply_contains_any: [booked]}\n",
    )
    # A judged transcript is still collected and validated (then deselected: no model here).
    project.transcript(
        "judged",
        "id: judged\nturns:\n  - user: Book\n    expect:\n      judge: {rubric: Polite.}\n",
    )
    project.test_file(
        "test_zz_blocked.py",
        f"""
        import importlib


        @pytest.mark.parametrize("name", {HEAVY!r})
        def test_really_blocked(name):
            with pytest.raises(ImportError):
                importlib.import_module(name)
        """,
    )

    result = project.pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--agent-eval-live", "-k", "not judged"
    )

    result.assert_outcomes(passed=1 + len(HEAVY), deselected=1)
