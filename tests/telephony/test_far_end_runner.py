"""The far end driving a run (``far_end:``), on the real runner with plain text agents: a
voicemail box's greeting and beep and the message checks, a person's hello before the
transcript's turns, and an IVR with an adapter that cannot see keys sent (an ERROR, never a
FAIL)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_agent_eval.loader import load_transcript_text
from pytest_agent_eval.models import TranscriptResult
from pytest_agent_eval.models._far_end import BEEP_WORDS
from pytest_agent_eval.runner import run_transcript

VOICEMAIL = """
id: reminder
far_end:
  kind: voicemail
  greeting: "Hi, this is Sam. Leave a message after the beep."
  expect:
    voicemail: {says: ["Tuesday at 3"]}
"""


def _run(text: str, agent: Any) -> TranscriptResult:
    transcript = load_transcript_text(text, path=Path("call.yaml"))
    return asyncio.run(run_transcript(transcript, agent))


def _last(history: Sequence[Any]) -> str:
    return str(history[-1]["content"])


def test_a_message_left_after_the_beep_passes() -> None:
    def agent(history: Sequence[Any]) -> str:
        if _last(history) == BEEP_WORDS:
            return "Hi Sam, a reminder of your appointment on Tuesday at 3. Bye."
        return ""

    result = _run(VOICEMAIL, agent)
    run = result.runs[0]
    assert [t.user for t in run.turns] == [
        "Hi, this is Sam. Leave a message after the beep.",
        BEEP_WORDS,
    ]
    assert result.passed, run.evaluations
    (check,) = run.evaluations
    assert check.key == "far_end" and check.location == "call.yaml:3"


def test_talking_over_the_greeting_fails() -> None:
    def agent(history: Sequence[Any]) -> str:
        return "Hi Sam, a reminder of your appointment on Tuesday at 3."

    result = _run(VOICEMAIL, agent)
    (check,) = result.runs[0].evaluations
    assert not result.passed and not check.errored
    assert "talked over the voicemail's greeting, before the beep" in check.reasoning


def test_a_message_without_what_it_must_say_fails() -> None:
    def agent(history: Sequence[Any]) -> str:
        return "Hi Sam, please call us back." if _last(history) == BEEP_WORDS else ""

    result = _run(VOICEMAIL, agent)
    (check,) = result.runs[0].evaluations
    assert not result.passed and not check.errored
    assert "does not say 'Tuesday at 3'" in check.reasoning


def test_a_person_says_hello_before_the_transcripts_turns_with_their_checks() -> None:
    text = """
id: confirm
far_end: {kind: human, hello: "Hello, Sam speaking."}
turns:
  - user: "Yes, I can make it."
    expect:
      reply_contains_all: ["see you Tuesday"]
"""
    seen: list[str] = []

    def agent(history: Sequence[Any]) -> str:
        seen.append(_last(history))
        return "Hi Sam, can you make Tuesday?" if len(seen) == 1 else "Great, see you Tuesday."

    result = _run(text, agent)
    assert seen == ["Hello, Sam speaking.", "Yes, I can make it."]
    assert result.passed
    assert [e.passed for e in result.runs[0].turns[1].evaluations] == [True]

    def wrong(history: Sequence[Any]) -> str:
        return "Goodbye."

    assert not _run(text, wrong).passed


def test_an_ivr_with_an_adapter_that_cannot_see_keys_errors() -> None:
    text = """
id: reach_billing
far_end:
  kind: ivr
  menu:
    main: {prompt: "For billing, press 2.", keys: {"2": billing}}
    billing: {prompt: "Billing."}
  expect: {reached: billing}
"""

    def agent(history: Sequence[Any]) -> str:
        return "I pressed 2."

    result = _run(text, agent)
    run = result.runs[0]
    assert not result.passed and run.verdict == "error"
    assert run.error is not None and "does not report them" in run.error
