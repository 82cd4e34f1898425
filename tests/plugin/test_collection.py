"""Collection and validation of YAML transcripts, as users see it in pytest's output."""

from __future__ import annotations

import pytest

from .conftest import Project, lit

GOOD = """\
    id: good_one
    turns:
      - user: hello
        expect:
          reply_contains_any: [hello]
"""

# (file body, the collection error users see) for every kind of bad input; in the message,
# `*` is a wildcard and everything else is literal.
BAD_INPUTS = {
    "unknown_top_level_field": (
        """\
        id: typo_top
        threshhold: 0.5
        turns:
          - user: hi
        """,
        "*/tests/evals/bad.yaml:2, transcript 'typo_top', threshhold: unknown field 'threshhold'"
        " (Did you mean 'threshold'?). Allowed here: call_expect, cases, conditions, description,"
        " far_end, greeting, id, latency_p95_ms_max, phone, runs, seed, tags, threshold,"
        " turn_timeout_s, turns, userdata, variants, voice",
    ),
    "unknown_expect_field": (
        """\
        id: typo_expect
        turns:
          - user: hi
            expect:
              reply_contain_any: [hello]
        """,
        "*/tests/evals/bad.yaml:5, transcript 'typo_expect', turn 1,"
        " turns[0].expect.reply_contain_any: unknown field 'reply_contain_any'"
        " (Did you mean 'reply_contains_any'?). Allowed here: *",
    ),
    "unknown_turn_field": (
        """\
        id: typo_turn
        turns:
          - user: hi
          - usr: again
        """,
        "*/tests/evals/bad.yaml:4, transcript 'typo_turn', turn 2, turns[1].usr: unknown field"
        " 'usr' (Did you mean 'user'?). Allowed here: audio, conditions, dtmf, expect, interrupt,"
        " user, voice",
    ),
    "wrong_type_runs": (
        """\
        id: wrong_runs
        runs: three
        turns:
          - user: hi
        """,
        "*/tests/evals/bad.yaml:2, transcript 'wrong_runs', runs: expected an integer,"
        " got a string 'three'",
    ),
    "wrong_type_list": (
        """\
        id: wrong_list
        turns:
          - user: hi
            expect:
              reply_contains_any: confirmed
        """,
        "*/tests/evals/bad.yaml:5, transcript 'wrong_list', turn 1,"
        " turns[0].expect.reply_contains_any: expected a list, got a string 'confirmed';"
        ' write a list, e.g. `- "text"` on its own line or ["a", "b"]',
    ),
    "empty_turns": (
        """\
        id: no_turns
        turns: []
        """,
        "*/tests/evals/bad.yaml:2, transcript 'no_turns', turns: 'turns' is empty;"
        " add at least one turn (`- user: ...`)",
    ),
    "missing_user": (
        """\
        id: no_user
        turns:
          - expect:
              reply_contains_any: [hi]
        """,
        "*/tests/evals/bad.yaml:3, transcript 'no_user', turn 1, turns[0]: missing required"
        " field 'user'; every turn needs the user's words in `user:`, or, for a turn of keys"
        " alone, the keys in `dtmf:`",
    ),
    "missing_id": (
        """\
        turns:
          - user: hi
        """,
        "*/tests/evals/bad.yaml:1, (top level): missing required field 'id';"
        " add `id: some_name`; it becomes the test name",
    ),
    "bad_regex": (
        """\
        id: bad_regex
        turns:
          - user: hi
            expect:
              reply_matches_any:
                - "BK-\\\\d+"
                - "(unclosed"
        """,
        "*/tests/evals/bad.yaml:7, transcript 'bad_regex', turn 1,"
        " turns[0].expect.reply_matches_any[1]: invalid regex '(unclosed': missing ),"
        " unterminated subpattern at position 0. In YAML, double-quote patterns and double the"
        " backslashes*",
    ),
    "threshold_above_one": (
        """\
        id: high
        threshold: 1.5
        turns:
          - user: hi
        """,
        "*/tests/evals/bad.yaml:2, transcript 'high', threshold: threshold must be between 0.0"
        " and 1.0, got 1.5",
    ),
    "threshold_below_zero": (
        """\
        id: low
        threshold: -0.1
        turns:
          - user: hi
        """,
        "*/tests/evals/bad.yaml:2, transcript 'low', threshold: threshold must be between 0.0"
        " and 1.0, got -0.1",
    ),
    "runs_zero": (
        """\
        id: zero_runs
        runs: 0
        turns:
          - user: hi
        """,
        "*/tests/evals/bad.yaml:2, transcript 'zero_runs', runs: runs must be at least 1, got 0",
    ),
    "args_without_args_or_judge": (
        """\
        id: args_nothing
        turns:
          - user: hi
            expect:
              tool_calls_args:
                - tool: book_slot
        """,
        "*/tests/evals/bad.yaml:6, transcript 'args_nothing', turn 1,"
        " turns[0].expect.tool_calls_args[0]: needs 'args' (deterministic check) or 'judge'"
        " (LLM-judged rubric); got neither",
    ),
    "args_bad_mode": (
        """\
        id: args_mode
        turns:
          - user: hi
            expect:
              tool_calls_args:
                - tool: book_slot
                  args: {time: 10am}
                  mode: exakt
        """,
        "*/tests/evals/bad.yaml:8, transcript 'args_mode', turn 1,"
        " turns[0].expect.tool_calls_args[0].mode: 'exakt' is not one of subset, exact"
        " (Did you mean 'exact'?)",
    ),
    "yaml_syntax_error": (
        """\
        id: broken
        turns:
          - user: "unterminated
            expect: {}
        """,
        "*/tests/evals/bad.yaml:5: invalid YAML at line 5, column 1: found unexpected end of"
        " stream (while"
        " scanning a quoted scalar at line 3); a quoted string is never closed: add its closing"
        " quote",
    ),
    "yaml_bad_indentation": (
        """\
        id: broken_indent
        turns:
          - user: hi
           expect: {}
        """,
        "*/tests/evals/bad.yaml:4: invalid YAML at line 4, column *: *(while parsing a block"
        " collection at"
        " line 3); check indentation (spaces, the same for each item of a list) and quoting"
        " (quote strings containing ': ' or '#'; inside single quotes write ' as '')",
    ),
    "regex_backslash_in_double_quotes": (
        """\
        id: regex
        turns:
          - user: hi
            expect:
              reply_matches_any: ["BK-\\d+"]
        """,
        "*/tests/evals/bad.yaml:5: invalid YAML at line 5, column 31: found unknown escape"
        " character (while parsing a quoted scalar at line 5); inside double quotes a backslash"
        ' starts an escape, and \\d is not one: write "BK-\\\\d+" (each backslash doubled) or'
        " use single quotes, in which a backslash is just a backslash: 'BK-\\d+'",
    ),
    "tab_indentation": (
        "id: tabbed\nturns:\n\t- user: hi\n",
        "*/tests/evals/bad.yaml:3: invalid YAML at line 3, column 1: found character that cannot"
        " start any token (while scanning for the next token at line 3); there is a tab at line"
        " 3: YAML indents with spaces, never tabs; replace the tab with spaces",
    ),
    "duplicate_key": (
        """\
        id: dup_key
        turns:
          - user: hi
            expect:
              reply_contains_any: [a]
              reply_contains_any: [b]
        """,
        "*/tests/evals/bad.yaml:6: duplicate key 'reply_contains_any' (key 'reply_contains_any'"
        " first given on line 5); keep only one",
    ),
    "unknown_args_field": (
        """\
        id: args_typo
        turns:
          - user: hi
            expect:
              tool_calls_args:
                - tool: book_slot
                  arg: {time: 10am}
        """,
        "*/tests/evals/bad.yaml:7, transcript 'args_typo', turn 1,"
        " turns[0].expect.tool_calls_args[0].arg: unknown field 'arg' (Did you mean 'args'?)."
        " Allowed here: args, judge, mode, tool",
    ),
    "unknown_judge_field": (
        """\
        id: judge_typo
        turns:
          - user: hi
            expect:
              judge: {rubrik: Be nice.}
        """,
        "*/tests/evals/bad.yaml:5, transcript 'judge_typo', turn 1, turns[0].expect.judge.rubrik:"
        " unknown field 'rubrik' (Did you mean 'rubric'?). Allowed here: model, rubric",
    ),
    "expect_is_a_list": (
        """\
        id: expect_list
        turns:
          - user: hi
            expect:
              - reply_contains_any: [hi]
        """,
        "*/tests/evals/bad.yaml:4, transcript 'expect_list', turn 1, turns[0].expect: expected a"
        " mapping, got a list [{'reply_contains_any': ['hi']}]; `expect:` is a mapping of checks"
        " such as `reply_contains_any: [...]`",
    ),
    "tags_is_a_string": (
        """\
        id: tags_string
        tags: smoke
        turns:
          - user: hi
        """,
        "*/tests/evals/bad.yaml:2, transcript 'tags_string', tags: expected a list, got a string"
        " 'smoke'",
    ),
    "turns_is_a_mapping": (
        """\
        id: turns_mapping
        turns:
          user: hi
        """,
        "*/tests/evals/bad.yaml:2, transcript 'turns_mapping', turns: expected a list, got a"
        " mapping {'user': 'hi'}",
    ),
    "ordered_not_boolean": (
        """\
        id: ordered_text
        turns:
          - user: hi
            expect:
              tool_calls_ordered: yes please
        """,
        "*/tests/evals/bad.yaml:5, transcript 'ordered_text', turn 1,"
        " turns[0].expect.tool_calls_ordered: expected true or false, got a string 'yes please'",
    ),
    "user_not_a_string": (
        """\
        id: user_number
        turns:
          - user: 42
        """,
        "*/tests/evals/bad.yaml:3, transcript 'user_number', turn 1, turns[0].user: expected a"
        ' string, got an integer 42; quote it to make it text: "42"',
    ),
    "two_documents": (
        """\
        id: first
        turns:
          - user: hi
        ---
        id: second
        turns:
          - user: yo
        """,
        "*/tests/evals/bad.yaml:4: invalid YAML at line 4, column 1: but found another document"
        " (expected a"
        " single document in the stream at line 1)*",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_transcript_is_a_collection_error_naming_file_line_and_field(
    project: Project, case: str
) -> None:
    body, message = BAD_INPUTS[case]
    project.echo_agent("hello")
    project.transcript("bad", body)
    project.transcript("good", GOOD)

    result = project.run_live()

    # A collection error, not a crash: the good file is still collected, pytest stops before
    # running (its default for collection errors), and only our message is shown.
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR collecting tests/evals/bad.yaml*", lit(message).replace("[*]", "*")]
    )
    result.stdout.fnmatch_lines(["collected 1 item / 1 error"])
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*jsonschema*")


def test_unterminated_quote_points_at_the_line_where_it_opened(project: Project) -> None:
    project.echo_agent("hello")
    project.transcript("bad", BAD_INPUTS["yaml_syntax_error"][0])

    result = project.run_live()

    result.assert_outcomes(errors=1)
    # Either located at line 3, or naming line 3 as where the quoted string started.
    result.stdout.re_match_lines(
        [r".*/tests/evals/bad\.yaml:(3: invalid YAML.*|\d+: invalid YAML.*line 3\b.*)"]
    )


def test_bad_transcript_fails_ci_even_when_not_live(project: Project) -> None:
    project.echo_agent("hello")
    project.transcript("bad", BAD_INPUTS["unknown_expect_field"][0])
    project.transcript("good", GOOD)

    result = project.run()

    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*turns[[]0].expect.reply_contain_any: unknown field 'reply_contain_any'*"]
    )


def test_other_transcripts_run_with_continue_on_collection_errors(project: Project) -> None:
    project.echo_agent("hello")
    project.transcript("bad", BAD_INPUTS["threshold_above_one"][0])
    project.transcript("good", GOOD)

    result = project.run_live("--continue-on-collection-errors")

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, errors=1)


def test_duplicate_ids_across_files_name_both_files(project: Project) -> None:
    project.echo_agent("hello")
    project.transcript("first", GOOD)
    project.transcript("second", GOOD, folder="tests/evals/more")

    result = project.run_live("--continue-on-collection-errors")

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*/tests/evals/more/second.yaml:1: id 'good_one' is already used by"
            " */tests/evals/first.yaml; transcript ids must be unique because they name the tests"
        ]
    )


@pytest.mark.parametrize(
    ("body", "shape"),
    [
        ("name: my-app\nversion: 2\n", "a mapping"),
        ("- one\n- two\n", "a list"),
        ("", "empty"),
    ],
    ids=["mapping", "list", "empty"],
)
def test_non_transcript_yaml_is_a_clear_collection_error(
    project: Project, body: str, shape: str
) -> None:
    project.echo_agent("hello")
    project.transcript("settings.yaml", body)
    project.transcript("good", GOOD)

    result = project.run_live("--continue-on-collection-errors")

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting tests/evals/settings.yaml*",
            f"*/tests/evals/settings.yaml: this YAML file is not a transcript (it is {shape}"
            " without 'id' and 'turns' keys). Transcripts need 'id' and 'turns'; move other YAML"
            " files out of yaml_dirs, or start their name with '_' so they are not collected",
        ]
    )
    result.stdout.no_fnmatch_line("*INTERNALERROR*")


def test_underscore_yaml_files_are_ignored(project: Project) -> None:
    project.echo_agent("hello")
    project.transcript("_shared_snippets.yaml", "anchors:\n  greeting: &greet hi\n")
    project.transcript("_draft.yml", "id: draft\nturns: []\n")
    project.transcript(".hidden.yaml", "id: hidden\nturns: []\n")
    project.transcript("good", GOOD)

    result = project.run_live("-v")

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["tests/evals/good.yaml::good_one PASSED*"])
    result.stdout.no_fnmatch_line("*_shared_snippets*")
    result.stdout.no_fnmatch_line("*_draft*")
    result.stdout.no_fnmatch_line("*hidden*")


def test_yml_suffix_and_nested_folders_are_collected(project: Project) -> None:
    project.echo_agent("hello")
    project.transcript("top.yaml", GOOD.replace("good_one", "top"))
    project.transcript("short.yml", GOOD.replace("good_one", "short"))
    project.transcript(
        "deep.yaml", GOOD.replace("good_one", "deep"), folder="tests/evals/billing/refunds"
    )

    result = project.run_live("-v")

    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines_random(
        [
            "tests/evals/top.yaml::top PASSED*",
            "tests/evals/short.yml::short PASSED*",
            "tests/evals/billing/refunds/deep.yaml::deep PASSED*",
        ]
    )


def test_yaml_dirs_config_is_respected(project: Project) -> None:
    project.pyproject('yaml_dirs = ["agent_evals", "more/evals"]')
    project.echo_agent("hello")
    project.conftest(
        "@pytest.fixture\ndef llm_eval_agent():\n    return lambda history: 'hello'\n",
        folder=".",
    )
    project.transcript("a", GOOD.replace("good_one", "in_first"), folder="agent_evals")
    project.transcript("b", GOOD.replace("good_one", "in_second"), folder="more/evals/x")
    # The default folder is not searched once yaml_dirs is set, and neither is any other.
    project.transcript("c", GOOD.replace("good_one", "default_dir"), folder="tests/evals")
    project.transcript("d", GOOD.replace("good_one", "elsewhere"), folder="config")

    result = project.run_live("-v")

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random(
        ["agent_evals/a.yaml::in_first PASSED*", "more/evals/x/b.yaml::in_second PASSED*"]
    )
    result.stdout.no_fnmatch_line("*default_dir*")
    result.stdout.no_fnmatch_line("*elsewhere*")


def test_yaml_outside_yaml_dirs_is_not_validated(project: Project) -> None:
    project.echo_agent("hello")
    project.transcript("good", GOOD)
    # A CI workflow or docker-compose file beside the tests is not our business.
    project.transcript("compose.yaml", "services:\n  db:\n    image: postgres\n", folder="tests")

    result = project.run_live()

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1)


def test_audio_is_resolved_relative_to_the_yaml_file(project: Project) -> None:
    absolute = project.path / "elsewhere" / "given.wav"
    project.agent(
        """
        def agent(history):
            import json

            last = history[-1]
            # Both access styles give the same path; a text agent can ignore it entirely.
            assert last.audio == last["audio"]
            # It is not a key of the message dict, so it never reaches an API call.
            assert "audio" not in last and "audio" not in json.dumps(last)
            return f"audio={last.audio}"
        """
    )
    project.transcript(
        "voice",
        f"""\
        id: voice_booking
        turns:
          - user: book it
            audio: clips/booking_t1.wav
            expect:
              reply_contains_all: ["audio={project.path}/tests/evals/voice/clips/booking_t1.wav"]
          - user: and this one
            audio: {absolute}
            expect:
              reply_contains_all: ["audio={absolute}"]
          - user: thanks
            expect:
              reply_contains_all: ["audio=None"]
        """,
        folder="tests/evals/voice",
    )

    # The WAVs do not exist: a text agent is unaffected by audio: and the test passes.
    result = project.run_live("-v")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["tests/evals/voice/voice.yaml::voice_booking PASSED*"])
