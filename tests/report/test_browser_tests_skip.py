"""The browser tests on a machine without Chromium: they skip with the reason (so the README's
test command passes on a fresh machine), unless AGENT_EVAL_REQUIRE_BROWSER_TESTS asks for them,
as `.ci/run` does; then they fail saying why. Each case is a real pytest run of the suite's own
HTML report test, with AGENT_EVAL_CHROMIUM pointing at a file that does not exist."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BROWSER_TEST = "tests/report/test_html_report.py::test_html_report_renders_filters_and_plays_audio"


def _run_without_chromium(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, **env: str
) -> pytest.RunResult:
    monkeypatch.setenv("AGENT_EVAL_CHROMIUM", str(pytester.path / "no-chromium-here"))
    monkeypatch.delenv("AGENT_EVAL_REQUIRE_BROWSER_TESTS", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return pytester.runpytest_subprocess(
        str(ROOT / BROWSER_TEST), "-p", "no:cacheprovider", "-p", "no:xdist", "-rs"
    )


def test_without_chromium_the_browser_tests_skip_with_the_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run_without_chromium(pytester, monkeypatch)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED *headless Chromium not found (AGENT_EVAL_CHROMIUM=*no-chromium-here)*"]
    )
    assert "apt-get install -y chromium" in result.stdout.str()


def test_ci_asks_for_the_browser_tests_and_a_missing_chromium_fails_them(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run_without_chromium(pytester, monkeypatch, AGENT_EVAL_REQUIRE_BROWSER_TESTS="1")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*headless Chromium not found*; AGENT_EVAL_REQUIRE_BROWSER_TESTS is set, so the "
            "browser tests must run*"
        ]
    )


def test_ci_sets_the_variable() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert "export AGENT_EVAL_REQUIRE_BROWSER_TESTS=1" in script
