"""Simulation files and LiveKit's scenarios.yaml as they load: what each field becomes, and one
clear error naming the file, the line and the field for bad input."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_agent_eval.errors import TranscriptError
from pytest_agent_eval.simulation import load_simulation_file


def matches(text: str, pattern: str) -> bool:
    """``pattern``'s literal parts, split at ``*``, appear in ``text`` in order (no other
    wildcard: brackets are literal)."""
    at = 0
    for part in pattern.split("*"):
        found = text.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return pattern.endswith("*") or text.endswith(pattern.rsplit("*", 1)[-1])


def write(tmp_path: Path, text: str, name: str = "sim.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_simulation_file_loads_every_field(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        id: refund
        runs: 3
        threshold: 0.6
        tags: [refunds]
        userdata: {order: "1234", tier: gold}
        persona: Dana, polite but in a hurry.
        goal: A refund for order 1234.
        criteria:
          - The agent looks the order up.
          - The agent confirms the amount.
        max_turns: 8
        min_turns: 3
        every_turn:
          reply_contains_none: ["as an AI"]
          max_latency_ms: 2500
        caller:
          model: test
          temperature: 0.2
          seed: 4
          max_words: 40
        judge:
          model: test
        turns:
          - user: Hello, I have a problem with an order.
            expect:
              reply_contains_any: [order]
        """,
    )
    (sim,) = load_simulation_file(path)
    assert sim.id == "refund" and sim.transcript.runs == 3 and sim.transcript.threshold == 0.6
    assert sim.transcript.tags == ["refunds"]
    assert sim.transcript.userdata == {"order": "1234", "tier": "gold"}
    assert sim.persona == "Dana, polite but in a hurry." and sim.goal == "A refund for order 1234."
    assert [(c.text, c.key, c.location) for c in sim.criteria] == [
        ("The agent looks the order up.", "criteria[0]", "sim.yaml:9"),
        ("The agent confirms the amount.", "criteria[1]", "sim.yaml:10"),
    ]
    assert (sim.max_turns, sim.min_turns) == (8, 3)
    assert sim.every_turn.reply_contains_none == ["as an AI"]
    assert sim.every_turn.max_latency_ms == 2500
    assert sim.every_turn_locations["expect.reply_contains_none"] == "sim.yaml:14"
    assert (sim.caller.model, sim.caller.temperature, sim.caller.seed, sim.caller.max_words) == (
        "test",
        0.2,
        4,
        40,
    )
    assert sim.judge_model == "test"
    (opening,) = sim.transcript.turns
    assert opening.user == "Hello, I have a problem with an order."
    assert opening.expect.reply_contains_any == ["order"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "id: s\ncriteria: [x]\n",
            "sim.yaml:1, simulation 's', (top level): missing required field 'persona'; add "
            "`persona:`, who the caller is*",
        ),
        (
            "id: s\npersona: p\n",
            "sim.yaml:1, simulation 's', (top level): missing required field 'criteria'; add "
            "`criteria:`*",
        ),
        (
            "id: s\npersona: p\ncriteria: []\n",
            "sim.yaml:3, simulation 's', criteria: *",
        ),
        (
            "id: s\npersona: p\ncriteria: [x]\nmax_turns: 2\nmin_turns: 3\n",
            "sim.yaml:4, simulation 's', max_turns: max_turns (2) is below min_turns (3)*",
        ),
        (
            "id: s\npersona: p\ncriteria: [x]\nmax_turns: 1\nmin_turns: 1\nturns:\n  - user: hi\n",
            "sim.yaml:4, simulation 's', max_turns: max_turns (1) leaves the caller no turn*",
        ),
        (
            "id: s\npersona: p\ncriteria: [x]\ncaller:\n  model: gpt-4o\n",
            "sim.yaml:5, simulation 's', caller.model: *provider:model*",
        ),
        (
            "id: s\npersona: p\ncriteria: [x]\njudge:\n  model: nosuch:model\n",
            "sim.yaml:5, simulation 's', judge.model: *",
        ),
        (
            "id: s\npersona: p\ncriteria: [x]\nmax_turn: 4\n",
            "sim.yaml:4, simulation 's', max_turn: unknown field 'max_turn' (Did you mean "
            "'max_turns'?)*",
        ),
        (
            "id: s\npersona: p\ncriteria: [x]\nevery_turn:\n  reply_contains_nope: [x]\n",
            "sim.yaml:5, simulation 's', every_turn.reply_contains_nope: unknown field*",
        ),
        (
            "id: s\npersona: p\ncriteria: [x]\ncaller:\n  max_words: 0\n",
            "sim.yaml:5, simulation 's', caller.max_words: *",
        ),
    ],
    ids=[
        "no-persona",
        "no-criteria",
        "empty-criteria",
        "max-below-min",
        "max-not-above-scripted",
        "model-without-provider",
        "unknown-judge-model",
        "unknown-field",
        "unknown-every-turn-key",
        "zero-max-words",
    ],
)
def test_bad_simulation_input_is_one_error_with_file_line_and_field(
    tmp_path: Path, body: str, message: str
) -> None:
    from pytest_agent_eval._compat.pydantic_ai import model_id_problem

    if "model:" in body and model_id_problem("nosuch:model") is None:
        pytest.skip(
            "this pydantic-ai has no way to check a model id without building the model: it is "
            "checked when first used (test_caller_failures.py shows that error)"
        )
    path = write(tmp_path, body)
    with pytest.raises(TranscriptError) as caught:
        load_simulation_file(path)
    text = str(caught.value)
    assert text.count("sim.yaml") == 1  # one error, not a list
    assert matches(text, f"*{message}"), text


SCENARIOS = """\
id: SCNG_9nF2
name: Hotel receptionist
scenarios:
  - id: SCN_a1
    label: Book a double room
    instructions: |
      You are Sam. You want a double room for two nights from Friday.
      Give your name when asked.
    agent_expectations: The agent books a double room for two nights and confirms the dates.
    tags:
      feature: booking
      difficulty: 2
      vip: true
    userdata:
      guest: {name: Sam, loyalty: gold}
  - label: Cancel a booking
    instructions: You want to cancel booking BK-7.
    agent_expectations: The agent cancels BK-7 after checking the name on it.
"""


def test_livekit_scenarios_load_as_they_are(tmp_path: Path) -> None:
    path = write(tmp_path, SCENARIOS, "scenarios.yaml")
    book, cancel = load_simulation_file(path, default_runs=4, default_threshold=0.5)
    assert book.source == "livekit" and book.id == "Book a double room"
    assert book.persona.startswith("You are Sam. You want a double room")
    assert [(c.text, c.key, c.location) for c in book.criteria] == [
        (
            "The agent books a double room for two nights and confirms the dates.",
            "agent_expectations",
            "scenarios.yaml:9",
        )
    ]
    assert book.transcript.tags == ["feature:booking", "difficulty:2", "vip:true"]
    assert book.transcript.userdata == {"guest": {"name": "Sam", "loyalty": "gold"}}
    assert (book.transcript.runs, book.transcript.threshold) == (4, 0.5)
    assert "Hotel receptionist" in book.transcript.description
    assert "SCN_a1" in book.transcript.description
    assert cancel.id == "Cancel a booking" and cancel.transcript.tags == []
    assert cancel.transcript.line == 16


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("agent_expectations: The agent cancels", "agent_expectation: The agent cancels"),
            "scenarios.yaml:18, scenario 'Cancel a booking', scenarios[1].agent_expectation: "
            "unknown field 'agent_expectation' (Did you mean 'agent_expectations'?)*",
        ),
        (
            ("  - label: Cancel a booking\n", "  - label: Book a double room\n"),
            "scenarios.yaml:16, scenario 'Book a double room', scenarios[1].label: label "
            "'Book a double room' is also scenario 1's*",
        ),
        (
            ("    instructions: You want to cancel booking BK-7.\n", ""),
            "scenarios.yaml:16, scenario 'Cancel a booking', scenarios[1]: *instructions*",
        ),
        (
            ("name: Hotel receptionist\n", "name: Hotel receptionist\nowner: me\n"),
            "scenarios.yaml:3, owner: unknown field 'owner'*",
        ),
    ],
    ids=["misspelt-field", "duplicate-label", "no-instructions", "unknown-top-level"],
)
def test_bad_scenarios_are_one_error_with_file_line_and_field(
    tmp_path: Path, edit: tuple[str, str], message: str
) -> None:
    old, new = edit
    assert old in SCENARIOS
    path = write(tmp_path, SCENARIOS.replace(old, new), "scenarios.yaml")
    with pytest.raises(TranscriptError) as caught:
        load_simulation_file(path)
    assert matches(str(caught.value), f"*{message}"), str(caught.value)


def test_a_bad_simulation_is_a_collection_error_not_an_internal_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "bad.yaml").write_text(
        "id: s\npersona: p\ncriteria: [x]\nmax_turn: 4\n"
    )
    (pytester.path / "evals" / "scenarios.yaml").write_text(
        SCENARIOS.replace(
            "agent_expectations: The agent cancels", "agent_expectation: The agent cancels"
        )
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == 2
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out
    result.stdout.fnmatch_lines(
        [
            "*evals/bad.yaml:4, simulation 's', max_turn: unknown field 'max_turn'*",
            "*evals/scenarios.yaml:18, scenario 'Cancel a booking', "
            "scenarios[[]1[]].agent_expectation: unknown field*",
        ],
        consecutive=False,
    )


def test_a_saved_conversation_names_a_file_outside_the_rootdir_by_its_name_only(
    tmp_path: Path,
) -> None:
    from pytest_agent_eval.simulation._save import shown_path

    root = tmp_path / "project"
    assert shown_path(str(root / "evals" / "a.yaml"), root) == "evals/a.yaml"
    assert shown_path(str(tmp_path / "elsewhere" / "a.yaml"), root) == "a.yaml"
    assert shown_path(str(tmp_path / "a.yaml"), None) == "a.yaml"
    assert shown_path("evals/a.yaml", None) == "evals/a.yaml"


def test_scenario_tags_written_as_a_list_of_strings_are_read(tmp_path: Path) -> None:
    body = SCENARIOS.replace(
        "    tags:\n      feature: booking\n      difficulty: 2\n      vip: true\n",
        '    tags: [smoke, "feature:booking"]\n',
    )
    assert body != SCENARIOS
    book, _ = load_simulation_file(write(tmp_path, body, "scenarios.yaml"))
    assert book.transcript.tags == ["smoke", "feature:booking"]


def test_a_tags_value_that_is_neither_a_mapping_nor_a_list_is_refused_with_its_line(
    tmp_path: Path,
) -> None:
    body = SCENARIOS.replace(
        "    tags:\n      feature: booking\n      difficulty: 2\n      vip: true\n",
        "    tags: booking\n",
    )
    with pytest.raises(TranscriptError) as caught:
        load_simulation_file(write(tmp_path, body, "scenarios.yaml"))
    text = str(caught.value)
    assert "scenarios.yaml:10, scenario 'Book a double room', scenarios[0].tags" in text, text


def test_scenarios_that_share_a_label_under_distinct_ids_are_two_tests(tmp_path: Path) -> None:
    body = SCENARIOS.replace(
        "  - label: Cancel a booking\n", "  - id: SCN_b2\n    label: Book a double room\n"
    )
    first, second = load_simulation_file(write(tmp_path, body, "scenarios.yaml"))
    assert (first.id, second.id) == ("Book a double room (SCN_a1)", "Book a double room (SCN_b2)")
    # The same id twice is still one scenario written twice: refused.
    twice = body.replace("id: SCN_b2", "id: SCN_a1")
    with pytest.raises(TranscriptError) as caught:
        load_simulation_file(write(tmp_path, twice, "scenarios.yaml"))
    assert "label 'Book a double room' and id 'SCN_a1' is also scenario 1's" in str(caught.value)


def test_scenarios_that_share_a_label_are_collected_as_two_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "scenarios.yaml").write_text(
        SCENARIOS.replace(
            "  - label: Cancel a booking\n", "  - id: SCN_b2\n    label: Book a double room\n"
        )
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "evals/scenarios.yaml::Book_a_double_room_SCN_a1",
            "evals/scenarios.yaml::Book_a_double_room_SCN_b2",
        ]
    )


def test_a_caller_that_hears_audio_loads_and_skips_a_text_agent(tmp_path: Path) -> None:
    from pytest_agent_eval.adapters.base import as_adapter
    from pytest_agent_eval.simulation._collect import text_agent_skip

    path = write(tmp_path, "id: ear\npersona: Alice.\ncriteria: [books]\ncaller:\n  hears: audio\n")
    (sim,) = load_simulation_file(path)
    assert sim.caller.hears == "audio"
    reason = text_agent_skip(sim, as_adapter(lambda history: "hi"))
    assert reason is not None and "caller.hears: audio" in reason
    with pytest.raises(TranscriptError, match="hears"):
        load_simulation_file(write(tmp_path, path.read_text().replace("audio", "video")))
