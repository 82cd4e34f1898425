"""Datasets in YAML: one transcript template over a table of cases, each case its own test."""

from __future__ import annotations

import textwrap

from .conftest import Project, lit

# Books the party size it hears ("two" -> 2), so a case passes only when its own values reached
# both the user text and the expectations.
BOOKING_AGENT = """
SIZES = {"two": 2, "four": 4, "six": 6}

@pytest.fixture
def llm_eval_agent():
    def agent(history):
        words = history[-1].content.lower().replace(",", " ").replace(".", " ").split()
        size = next((SIZES[w] for w in words if w in SIZES), 0)
        return AgentReply(f"Booked for {size}.", [ToolCall("book", {"size": size})])
    return agent
"""

TEMPLATE = """\
    id: booking
    cases: {cases}
    turns:
      - user: "A table for {{party}}, please."
        expect:
          reply_contains_any: ["Booked for {{size}}"]
          tool_calls_args:
            - tool: book
              args: {{size: "{{size}}"}}
"""


def test_inline_cases_are_tests_with_readable_ids_selectable_with_k(project: Project) -> None:
    project.conftest(BOOKING_AGENT)
    inline = (
        "[{id: two, party: two, size: 2}, {id: four, party: four, size: 4}, {party: six, size: 5}]"
    )
    project.transcript("booking", TEMPLATE.format(cases=inline))
    collected = project.run("--collect-only", "-q")
    collected.stdout.fnmatch_lines(
        [
            lit("tests/evals/booking.yaml::booking[two]"),
            lit("tests/evals/booking.yaml::booking[four]"),
            lit("tests/evals/booking.yaml::booking[case3]"),  # no id field: its position
            "3 tests collected*",
        ]
    )
    assert project.run("--collect-only", "-q", "-k", "four").ret == 0
    result = project.run_live("-q")
    # case3 expects 5 for a party of six: its own values reached its expectations.
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*booking[[]case3[]]*", "*Booked for 6.*"])


def test_cases_combine_with_variants_and_agent_params(project: Project) -> None:
    project.conftest(
        """
        @pytest.fixture(params=["fast", "smart"])
        def llm_eval_agent(request):
            return lambda history: AgentReply("ok")
        """
    )
    project.transcript(
        "booking",
        """\
        id: booking
        cases: [{id: two, party: two}, {id: four, party: four}]
        variants: [clean, phone]
        turns:
          - user: "A table for {party}."
            audio: book.wav
        """,
    )
    result = project.run("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            lit("tests/evals/booking.yaml::booking[two-clean-fast]"),
            lit("tests/evals/booking.yaml::booking[two-clean-smart]"),
            lit("tests/evals/booking.yaml::booking[two-phone-fast]"),
            lit("tests/evals/booking.yaml::booking[four-phone-smart]"),
            "8 tests collected*",
        ]
    )
    selected = project.run("--collect-only", "-q", "-k", "four and phone")
    selected.stdout.fnmatch_lines(["2/8 tests collected*"])


def test_cases_from_csv_and_jsonl_files_next_to_the_yaml(project: Project) -> None:
    project.conftest(BOOKING_AGENT)
    folder = project.path / "tests" / "evals"
    folder.mkdir(parents=True)
    # CSV values are text, so the tool argument check is left out for them.
    (folder / "cases.csv").write_text("id,party,size\ntwo,two,2\n\nfour,four,4\n")
    project.transcript(
        "from_csv",
        """\
        id: from_csv
        cases: cases.csv
        turns:
          - user: "A table for {party}, please."
            expect:
              reply_contains_any: ["Booked for {size}."]
        """,
    )
    # JSONL keeps JSON types: a field that is a whole value stays a number.
    (folder / "data").mkdir()
    (folder / "data" / "cases.jsonl").write_text(
        '{"id": "two", "party": "two", "size": 2}\n\n{"id": "six", "party": "six", "size": 6}\n'
    )
    project.transcript("from_jsonl", TEMPLATE.format(cases="data/cases.jsonl"))
    result = project.run_live("-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines_random(
        [
            "*from_csv.yaml::from_csv[[]two[]] PASSED*",
            "*from_csv.yaml::from_csv[[]four[]] PASSED*",
            "*from_jsonl.yaml::booking[[]two[]] PASSED*",
            "*from_jsonl.yaml::booking[[]six[]] PASSED*",
        ]
    )


BAD_DATASETS = {
    "missing_field": (
        {"cases.csv": "id,party\ntwo,two\n"},
        "cases.csv",
        "*/tests/evals/booking.yaml:6, transcript 'booking', turn 1, turns[[]0].expect"
        ".reply_contains_any[[]0]: {size} names no field of case 'two' (*/tests/evals/cases.csv:2)"
        "; its fields: id, party (write {{ and }} for a literal brace)",
    ),
    "file_not_found": (
        {},
        "missing.jsonl",
        "*/tests/evals/booking.yaml:2, transcript 'booking', cases: case file 'missing.jsonl' "
        "not found (looked for */tests/evals/missing.jsonl; the path is relative to this YAML "
        "file)",
    ),
    "short_csv_row": (
        {"cases.csv": "id,party,size\ntwo,two,2\nfour,four\n"},
        "cases.csv",
        "*/tests/evals/cases.csv:3: 2 value(s) for the 3 column(s) of the header (id, party, size)",
    ),
    "bad_jsonl_line": (
        {"cases.jsonl": '{"id": "two", "party": "two", "size": 2}\n{"id": "four", party}\n'},
        "cases.jsonl",
        "*/tests/evals/cases.jsonl:2: not a JSON object: Expecting property name*",
    ),
    "duplicate_id": (
        {"cases.jsonl": '{"id": "two", "party": "two", "size": 2}\n{"id": "two", "party": "x"}\n'},
        "cases.jsonl",
        "*/tests/evals/cases.jsonl:2: case id 'two' is used twice (also */tests/evals/"
        "cases.jsonl:1); case ids name the tests, so each must be unique",
    ),
    "id_with_a_dash": (
        {},
        "[{id: two-people, party: two, size: 2}]",
        "*/tests/evals/booking.yaml:2 (cases[[]0]): case id 'two-people' may hold letters, "
        "digits, '_', '.' and '+' only*e.g. 'two_people'",
    ),
}


def test_bad_datasets_are_collection_errors_naming_file_case_and_field(project: Project) -> None:
    project.conftest(BOOKING_AGENT)
    folder = project.path / "tests" / "evals"
    for name, (files, cases, message) in BAD_DATASETS.items():
        case_folder = folder / name
        case_folder.mkdir(parents=True)
        for file, text in files.items():
            (case_folder / file).write_text(text)
        (case_folder / "booking.yaml").write_text(textwrap.dedent(TEMPLATE.format(cases=cases)))
        result = project.run("--collect-only", "-q", f"tests/evals/{name}")
        assert result.ret == 2, name  # a collection error, never an INTERNALERROR
        result.stdout.fnmatch_lines([message.replace("/tests/evals/", f"/tests/evals/{name}/")])
        assert "INTERNALERROR" not in result.stdout.str()
        assert "Traceback" not in result.stdout.str(), name


def test_the_python_api_refuses_a_template_and_runs_each_case(project: Project) -> None:
    project.conftest(BOOKING_AGENT)
    folder = project.path / "tests" / "evals"
    folder.mkdir(parents=True)
    project.test_file(
        "test_api.py",
        f"""
        from pathlib import Path
        from pytest_agent_eval._expansion import expand
        from pytest_agent_eval._loader import load_transcript_text

        TEXT = {textwrap.dedent(TEMPLATE.format(cases="[{party: two, size: 2}]"))!r}
        HERE = Path({str(folder / "x.yaml")!r})

        async def test_whole(agent_eval):
            await agent_eval.run(transcript=load_transcript_text(TEXT, path=HERE))

        async def test_each(agent_eval):
            (case,) = expand(load_transcript_text(TEXT, path=HERE))
            assert case.id == "booking[case1]" and case.case == "case1"
            assert (await agent_eval.run(transcript=case)).passed
        """,
    )
    result = project.run_live("tests/test_api.py")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*transcript 'booking' has cases, which make one test each; run each of*expand*"]
    )
