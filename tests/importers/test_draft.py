"""What the drafter picks from a reply, and how a transcript's YAML reads back: the parts of
the importer that need no call."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agent_eval._importers._build import ImportRequest, plan_import
from pytest_agent_eval._importers._call import ImportedCall, UserTurn, Utterance, tool_use
from pytest_agent_eval._importers._draft import agent_class_name, key_terms
from pytest_agent_eval._loader import load_transcript_file


@pytest.mark.parametrize(
    ("reply", "terms"),
    [
        (
            "You're all set: table for 2 at 19:00 under Alice, reference BK-101.",
            ["2", "19:00", "Alice", "BK-101"],
        ),
        ("Welcome to Chez Pytest! How can I help?", ["Chez Pytest"]),
        ("The booking is under Alice.", ["Alice"]),
        # Nothing a regression would change but its words: the two longest.
        ("Hello! How can I help you today?", ["Hello", "today"]),
        ("I'm sorry. I can transfer you to Billing Support now.", ["Billing Support"]),
        ("", []),
    ],
)
def test_key_terms(reply: str, terms: list[str]) -> None:
    assert key_terms(reply) == terms


def test_agent_ids_become_class_names() -> None:
    assert agent_class_name("billing_agent") == "BillingAgent"
    assert agent_class_name("greeter") == "Greeter"
    assert agent_class_name("CustomName") == "CustomName"  # an id= that is not snake case


def test_awkward_values_read_back_as_they_were(tmp_path: Path) -> None:
    """Words YAML would take for something else, quotes, a '#', a pause-like bracket and odd
    tool arguments all read back as the call had them (the importer checks this itself too)."""
    args = {"note": "yes", "when": "19:00", "ratio": 1e-05, "nested": {"a": [1, "no"]}, "x": None}
    turns = [
        UserTurn(text="yes", spoken=False),
        UserTurn(text='It\'s "fine": #1 [pause 2s] ok', spoken=False, tools=[tool_use("t", args)]),
    ]
    turns[1].replies.append(Utterance(text="Noted: it's 'fine'."))
    conversation = ImportedCall(source="test", kind="messages", turns=turns)
    out = tmp_path / "awkward.yaml"
    imported = plan_import(conversation, ImportRequest(out=out, command="test"))
    out.write_text(imported.yaml_text)
    loaded = load_transcript_file(out)
    assert [t.user for t in loaded.turns] == ["yes", 'It\'s "fine": #1 (pause 2s) ok']
    assert [n.text for n in imported.notices] == [
        "its text holds '[pause', which transcripts read as a pause marker; written with "
        "'(pause' instead"
    ]
    assert loaded.turns[1].expect.tool_calls_args[0].args == args
