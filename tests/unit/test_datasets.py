"""Filling a transcript template from its cases: what is replaced, what is left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agent_eval._expansion import expand
from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval.errors import TranscriptError

TEMPLATE = r"""
id: booking
cases:
  - {id: two, party: two, size: 2, note: "{party}"}
turns:
  - user: "{size} people, {party} of us, {{literal}} {note}"
    audio: "audio/{party}.wav"
    expect:
      reply_matches_any: ["BK-\\d{3}", "{party}"]
      tool_calls_args:
        - tool: book
          args: {size: "{size}", label: "party of {size}"}
"""


def test_fields_fill_text_and_expectations_typed_where_whole(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (case,) = expand(load_transcript_text(TEMPLATE, path=tmp_path / "b.yaml"))
    turn = case.turns[0]
    # Values are inserted once: a value holding braces is not filled again.
    assert turn.user == "2 people, two of us, {literal} {party}"
    # A regex's {3} is not a field; audio paths are not templated.
    assert turn.expect.reply_matches_any == [r"BK-\d{3}", "two"]
    assert Path(str(turn.audio)).name == "{party}.wav"
    # A whole-string placeholder keeps the case's type; inside text it is written out.
    assert turn.expect.tool_calls_args[0].args == {"size": 2, "label": "party of 2"}
    assert case.case == "two" and case.id == "booking[two]" and case.cases == []


def test_a_case_file_outside_the_project_is_refused(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("")
    (tmp_path / "secret.csv").write_text("id,party\nx,y\n")
    text = "id: b\ncases: ../secret.csv\nturns:\n  - user: '{party}'\n"
    with pytest.raises(TranscriptError, match=r"outside the project .*case files must live"):
        load_transcript_text(text, path=project / "b.yaml")


def test_a_bad_value_after_filling_names_its_case(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    text = (
        "id: b\ncases: [{id: ok, n: 0.2}, {id: bad, n: lots}]\nturns:\n"
        "  - user: hi\n    audio: a.wav\n    expect:\n      heard_wer_max: '{n}'\n"
    )
    with pytest.raises(TranscriptError) as caught:
        load_transcript_text(text, path=tmp_path / "b.yaml")
    message = str(caught.value)
    assert "heard_wer_max" in message and "(in case 'bad', " in message, message


@pytest.mark.parametrize(
    ("cases", "where"),
    [
        ("5", r"b\.yaml.*cases: expected a list of cases"),
        ("[5]", r"cases\[0\]: a case is a mapping"),
    ],
)
def test_cases_that_are_no_list_of_mappings_name_the_field(
    tmp_path: Path, cases: str, where: str
) -> None:
    # Both once crashed with a TypeError inside the message itself (a helper called without
    # its length limit), so the user saw a traceback instead of the field to fix.
    (tmp_path / "pyproject.toml").write_text("")
    text = f"id: b\ncases: {cases}\nturns:\n  - user: '{{party}}'\n"
    with pytest.raises(TranscriptError, match=where):
        load_transcript_text(text, path=tmp_path / "b.yaml")


def test_a_jsonl_case_that_is_no_object_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "cases.jsonl").write_text('{"id": "ok", "party": "x"}\n[1, 2]\n')
    text = "id: b\ncases: cases.jsonl\nturns:\n  - user: '{party}'\n"
    with pytest.raises(TranscriptError, match=r"cases\.jsonl:2: each line is one case.*\[1, 2\]"):
        load_transcript_text(text, path=tmp_path / "b.yaml")
