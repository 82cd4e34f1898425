"""One list of a transcript's problems (`_problems.transcript_problems`) for the loader and the
runner; each turn's audio conditions and seed derived once and handed to the adapter."""

from __future__ import annotations

import asyncio
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_agent_eval import (
    AgentReply,
    ConversationInfo,
    Expect,
    GreetingExpect,
    InterruptConfig,
    Transcript,
    TranscriptError,
    Turn,
    TurnInput,
)
from pytest_agent_eval._conditions import condition_seed, turn_conditions
from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval._problems import transcript_problems
from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.models import AudioCondition
from pytest_agent_eval.voice._speech import PauseMarkupError

# The same transcript, with one of each problem, written in Python and in YAML.
PYTHON = Transcript(
    id="t",
    greeting=GreetingExpect(matches_any=["ok", "(greet"]),
    turns=[
        Turn("hello", interrupt=InterruptConfig(stop_within_ms=1000, after_ms=500)),
        Turn("Hi [pause soon] there", expect=Expect(reply_matches_all=["fine", "BK-(\\d+"])),
        Turn(
            "bye",
            conditions=[AudioCondition("noise", {"snr_db": 10})],
            expect=Expect(tool_calls_outcome=[{"tool": "lookup", "output_matches": ["(x"]}]),
        ),
    ],
)

YAML = """\
id: t
greeting:
  matches_any: [ok, "(greet"]
turns:
  - user: hello
    interrupt: {stop_within_ms: 1000, after_ms: 500}
  - user: Hi [pause soon] there
    expect:
      reply_matches_all: [fine, "BK-(\\\\d+"]
  - user: bye
    conditions: [{noise: {snr_db: 10}}]
    expect:
      tool_calls_outcome:
        - {tool: lookup, output_matches: ["(x"]}
"""

EXPECTED_FIELDS = [
    ("greeting", "matches_any", 1),
    ("turns", 1, "expect", "reply_matches_all", 1),
    ("turns", 1, "user"),
    ("turns", 2, "expect", "tool_calls_outcome", 0, "output_matches", 0),
    ("turns", 2, "conditions"),
    ("turns", 0, "interrupt"),
]


def test_a_python_transcript_lists_every_problem_at_its_yaml_field() -> None:
    problems = transcript_problems(PYTHON)
    assert [p.at for p in problems] == EXPECTED_FIELDS
    assert [p.turn for p in problems] == [None, 1, 1, 2, 2, 0]
    assert problems[2].error is PauseMarkupError
    assert problems[1].problem.startswith("invalid regex 'BK-(\\d+'")
    assert problems[1].yaml_fix.startswith("In YAML, double-quote patterns")
    assert "first turn cannot interrupt" in problems[5].problem


def test_the_loader_reports_the_first_problem_the_list_names_with_file_and_line() -> None:
    # The loader raises the first problem of the same list (with the YAML fix for a regex);
    # each problem, left alone in the file, is what it says.
    with pytest.raises(TranscriptError) as info:
        load_transcript_text(YAML, path=Path("t.yaml"))
    assert str(info.value).startswith(
        "t.yaml:3, transcript 't', greeting.matches_any[1]: invalid regex '(greet'"
    )
    assert str(info.value).endswith("or single-quote them ('\\d+')")
    only_pause = "id: t\nturns:\n  - user: hello\n  - user: Hi [pause soon] there\n"
    with pytest.raises(PauseMarkupError, match=r"t.yaml:4, .*turns\[1\]\.user: malformed"):
        load_transcript_text(only_pause, path=Path("t.yaml"))


def test_the_runner_refuses_a_python_transcript_for_the_first_problem_before_any_run() -> None:
    started: list[int] = []

    class Adapter:
        consumes_audio = False

        async def start_conversation(self, info: ConversationInfo) -> object:
            started.append(info.run_index)
            raise AssertionError("no run may start")

    with pytest.raises(TranscriptError) as info:
        asyncio.run(run_transcript(PYTHON, Adapter()))
    # The Python message names the transcript and the field, without the YAML-only fix.
    assert str(info.value) == (
        "transcript 't', greeting: invalid regex '(greet': missing ), unterminated subpattern "
        "at position 0"
    )
    assert started == []


@dataclass
class _Recorder:
    consumes_audio: bool = False
    infos: list[ConversationInfo] = field(default_factory=list)
    sent: list[TurnInput] = field(default_factory=list)

    async def start_conversation(self, info: ConversationInfo) -> _Recorder:
        self.infos.append(info)
        return self

    async def respond(self, turn: TurnInput) -> AgentReply:
        self.sent.append(turn)
        return AgentReply("ok")

    async def aclose(self) -> None:
        return None


def test_each_turn_input_carries_its_conditions_seed_and_the_turn_that_interrupts_it(
    tmp_path: Path,
) -> None:
    audio = tmp_path / "a.wav"
    noise = AudioCondition("noise", {"snr_db": 10})
    script = Transcript(
        id="t",
        seed=7,
        conditions=[noise],
        turns=[
            Turn("one", audio=audio),
            Turn("two", audio=audio, interrupt=InterruptConfig(stop_within_ms=900, at_word=2)),
            Turn("three"),
        ],
    )
    adapter = _Recorder()
    asyncio.run(run_transcript(script, adapter))
    first, second, third = adapter.sent
    assert first.conditions == tuple(turn_conditions(script, 0)) == (noise,)
    assert first.seed == condition_seed(script, 0, 0)
    assert third.conditions == ()  # a text turn has no audio to change
    # Turn 2 speaks over the reply to turn 1: turn 1's input carries it, as it is later sent.
    assert first.interrupted_by is not None
    assert first.interrupted_by.index == 1
    assert first.interrupted_by.conditions == second.conditions
    assert first.interrupted_by.seed == second.seed
    assert second.interrupted_by is None and third.interrupted_by is None
    (info,) = adapter.infos
    assert info.turn_conditions == ((noise,), (noise,), ())
    assert TurnInput.of(script, 1, 0).conditions == second.conditions


def test_a_problem_left_alone_in_yaml_and_in_python_reads_the_same() -> None:
    text = textwrap.dedent(
        """\
        id: t
        turns:
          - user: hi
            expect:
              reply_matches_any: ["("]
        """
    )
    with pytest.raises(TranscriptError) as yaml_error:
        load_transcript_text(text, path=Path("t.yaml"))
    python = Transcript(id="t", turns=[Turn("hi", expect=Expect(reply_matches_any=["("]))])
    with pytest.raises(TranscriptError) as python_error:
        asyncio.run(run_transcript(python, _Recorder()))
    problem = "invalid regex '(': missing ), unterminated subpattern at position 0"
    assert f"turns[0].expect.reply_matches_any[0]: {problem}. In YAML" in str(yaml_error.value)
    assert str(python_error.value) == f"transcript 't', turn 1: {problem}"
