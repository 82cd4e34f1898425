"""A transcript that fails to load is reported as what it is: which file, why, and that no eval
ran (pytest runs no test when collection fails), in the terminal, both reports and the results
file; never as a Ctrl-C interruption."""

from __future__ import annotations

import json

from .conftest import Project

GOOD = """\
id: good
turns:
  - user: hi
    expect:
      reply_contains_any: [booked]
"""
# A tab where YAML wants spaces: YAML's own words, with the fix.
BROKEN = "id: broken\nturns:\n\t- user: hi\n"


def _project(project: Project) -> None:
    project.echo_agent("booked")
    project.transcript("good", GOOD)
    project.transcript("broken", BROKEN)


def test_a_transcript_that_fails_to_load_is_named_and_no_eval_ran(project: Project) -> None:
    _project(project)
    result = project.run_live(
        "--agent-eval-report=r.md", "--agent-eval-html=r.html", "--agent-eval-results=r.json"
    )

    assert result.ret == 2
    out = result.stdout.str()
    assert "Ctrl-C" not in out
    result.stdout.fnmatch_lines(
        [
            "*= agent eval summary =*",
            "No eval ran: 1 file(s) failed to load, and pytest runs no test when collection "
            "fails. Fix them, or pass --continue-on-collection-errors to run the other tests.",
            "1 file(s) failed to load:",
            "tests/evals/broken.yaml:3: invalid YAML at line 3, column 1: found character that "
            "cannot start any token*",
            "1 eval(s) did not run:",
            "tests/evals/good.yaml::good",
        ]
    )
    markdown = (project.path / "r.md").read_text()
    html = (project.path / "r.html").read_text()
    for text in (markdown, html):
        assert "Ctrl-C" not in text
        assert "No eval ran: 1 file(s) failed to load" in text
        assert "tests/evals/broken.yaml:3: invalid YAML" in text
        assert "tests/evals/good.yaml::good" in text
    document = json.loads((project.path / "r.json").read_text())
    assert document["complete"] is False
    assert document["stopped"] == "before any test ran: 1 file(s) failed to load"
    (error,) = document["load_errors"]
    assert error["nodeid"] == "tests/evals/broken.yaml"
    assert error["error"].startswith("tests/evals/broken.yaml:3: invalid YAML at line 3")


def test_a_run_that_goes_on_past_a_load_error_still_names_it(project: Project) -> None:
    # Under --continue-on-collection-errors (and under xdist, which does the same) the other
    # evals run; the file that did not load is still named, in every report.
    _project(project)
    for args in (["--continue-on-collection-errors"], ["-n", "2"]):
        result = project.run_live(*args, "--agent-eval-report=r.md", "--agent-eval-results=r.json")
        assert result.ret == 1, args
        result.stdout.fnmatch_lines(
            [
                "Not every eval ran: the evals of the file(s) below did not load.",
                "1 file(s) failed to load:",
                "tests/evals/broken.yaml:3: invalid YAML*",
                "good  *1  *1  *1.00*PASS*",
            ]
        )
        markdown = (project.path / "r.md").read_text()
        assert "Not every eval ran: the evals of the file(s) below did not load." in markdown
        document = json.loads((project.path / "r.json").read_text())
        assert document["complete"] is True
        assert [e["nodeid"] for e in document["load_errors"]] == ["tests/evals/broken.yaml"]
