"""Every failed check names its YAML key and ``file:line``, in the terminal and both reports; a
transcript built in Python names the key alone. Wrong tool arguments say, key by key (nested
ones too), what was expected and what the call had."""

from __future__ import annotations

from .conftest import Project, lit

WEATHER = """\
id: weather
turns:
  - user: "What's the weather in Paris?"
    expect:
      reply_contains_any: [weather]
  - user: And tomorrow?
    expect:
      reply_contains_all: [sunny, tomorrow]
      tool_calls_args:
        - tool: get_weather
          args: {city: Paris}
        - tool: get_weather
          args: {opts: {unit: c, detail: {lang: en}}}
"""

AGENT = (
    "return AgentReply('The weather tomorrow: rain.', [ToolCall('get_weather', "
    "{'city': 'paris', 'opts': {'unit': 'c', 'detail': {'lang': 'fr', 'hourly': True}}})])\n"
)


def test_each_failed_check_names_its_key_and_line_everywhere(project: Project) -> None:
    project.agent(AGENT)
    project.transcript("weather", WEATHER)

    result = project.run_live("--agent-eval-report=r.md", "--agent-eval-html=r.html")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            lit(
                "      - turns[1].expect.reply_contains_all (weather.yaml:8) fail: reply is "
                "missing ['sunny'] (reply was 'The weather tomorrow: rain.')"
            ),
            lit(
                "      - turns[1].expect.tool_calls_args[0] (weather.yaml:10) fail: no call to "
                "get_weather has matching arguments (subset): city: expected 'Paris', got "
                "'paris' (saw get_weather("
            )
            + "*",
            lit(
                "      - turns[1].expect.tool_calls_args[1] (weather.yaml:12) fail: no call to "
                "get_weather has matching arguments (subset): opts.detail.lang: expected 'en', "
                "got 'fr' (saw get_weather("
            )
            + "*",
        ]
    )
    # The passing check of turn 1 is not listed; with -v it would be.
    result.stdout.no_fnmatch_line("*reply_contains_any (weather.yaml:5) fail*")
    # pytest's short summary starts with the first failed check.
    result.stdout.fnmatch_lines(["FAILED tests/evals/weather.yaml::weather - reply_contains_all*"])
    markdown = (project.path / "r.md").read_text()
    assert "- ❌ turns[1].expect.reply_contains_all (weather.yaml:8) — reply is missing" in markdown
    assert "- ✅ turns[0].expect.reply_contains_any (weather.yaml:5) — reply text checks" in (
        markdown
    )
    html = (project.path / "r.html").read_text()
    assert "<b>turns[1].expect.tool_calls_args[1] (weather.yaml:12)</b>" in html


def test_a_transcript_level_check_names_its_key_and_line(project: Project) -> None:
    project.echo_agent("Hello, booked.")
    project.transcript(
        "greeted",
        "id: greeted\nruns: 1\ngreeting:\n  contains_any: [welcome]\nturns:\n  - user: hi\n",
    )

    result = project.run_live()

    result.stdout.fnmatch_lines(["      - greeting (greeted.yaml:3) errored: cannot be checked: *"])


def test_a_dataset_case_names_the_line_of_its_template(project: Project) -> None:
    project.echo_agent("Booked.")
    project.transcript(
        "cases",
        """\
        id: cases
        cases:
          - {id: pizza, dish: pizza}
        turns:
          - user: "One {dish}, please"
            expect:
              reply_contains_all: ["{dish}"]
        """,
    )

    result = project.run_live()

    result.stdout.fnmatch_lines(
        [
            lit(
                "      - turns[0].expect.reply_contains_all (cases.yaml:7) fail: reply is missing "
                "['pizza'] (reply was 'Booked.')"
            )
        ]
    )


def test_a_transcript_built_in_python_names_the_key_without_a_line(project: Project) -> None:
    project.echo_agent("Sorry.")
    project.test_file(
        "test_api.py",
        """
        def test_booking(agent_eval):
            result = agent_eval.run_sync(
                turns=[Turn("hi"), Turn("book", expect=Expect(tool_calls_include=["book"]))]
            )
            result.assert_threshold()
        """,
    )

    result = project.run_live()

    result.stdout.fnmatch_lines(
        [
            lit(
                "      - turns[1].expect.tool_calls_include fail: expected tool calls not made: "
                "['book'] (saw no tool calls)"
            )
        ]
    )


def test_a_long_error_is_cut_in_its_middle_never_before_its_fix(project: Project) -> None:
    # Errors end with their fix (ours always do); a long one used to be cut at 400 characters.
    detail = "the upstream service said: " + "no slot, " * 250
    project.agent(f"raise RuntimeError({detail!r} + 'fix: book through the phone line')\n")
    project.transcript("booking", "id: booking\nturns:\n  - user: hi\n")

    result = project.run_live()

    result.assert_outcomes(failed=1)
    (line,) = [s for s in result.outlines if s.startswith("      error: RuntimeError")]
    assert "the upstream service said: no slot" in line
    assert " … " in line  # the middle went
    assert "fix: book through the phone line" in line
    assert len(line) < 1600


def test_the_short_summary_and_junit_message_start_with_the_failed_check_under_xdist(
    project: Project,
) -> None:
    # Under -n the report crosses from a worker to the controller; the first failed check
    # must survive the trip (pytest 8 shows only a crash message, never a string's first line).
    project.agent(AGENT)
    project.transcript("weather", WEATHER)

    result = project.run_live("-n", "2", "--junitxml=junit.xml")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["FAILED tests/evals/weather.yaml::weather - reply_contains_all*"])
    junit = (project.path / "junit.xml").read_text()
    assert 'message="reply_contains_all (line 8): reply is missing' in junit
    # The whole account is still the failure's text.
    assert "no call to get_weather has matching arguments" in junit
