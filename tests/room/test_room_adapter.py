"""The room adapter against the example's worker, through a real LiveKit server."""

from __future__ import annotations

from pathlib import Path

import pytest
from room_lab import RoomLab

from pytest_agent_eval.errors import AdapterError
from pytest_agent_eval.models import AgentReply, Handoff
from pytest_agent_eval.voice._fixtures import read_wav, transcribe, word_error_rate

BOOK_TEXT = "Hi, I am Alice and I would like a table for two at seven pm."
NAME_TEXT = "What name is the booking under?"


def test_a_conversation_through_a_room(
    lab: RoomLab, booking_worker: str, example_copy: Path, tmp_path: Path
) -> None:
    audio = example_copy / "evals" / "audio"
    out = lab.call(
        "converse",
        agent_name=booking_worker,
        turns=[
            {"user": BOOK_TEXT, "audio": str(audio / "booking_t1.wav")},
            {"user": "Do you have vegan dishes?"},
            {"user": NAME_TEXT, "audio": str(audio / "booking_t3.wav")},
        ],
        audio_out_dir=str(tmp_path / "reply-audio"),
    )
    first, second, third = out["replies"]
    assert isinstance(first, AgentReply)

    # What the agent heard, over WebRTC, with its own Whisper.
    assert first.heard is not None and word_error_rate(BOOK_TEXT, first.heard) <= 0.25
    assert third.heard is not None and word_error_rate(NAME_TEXT, third.heard) <= 0.25
    assert second.heard is None  # a text turn

    # Tool calls, arguments and outputs, from the agent-side helper.
    assert [(c.name, c.args) for c in first.calls] == [
        ("book_table", {"party_size": 2, "time": "19:00", "name": "Alice"})
    ]
    assert first.calls[0].output == "table for 2 at 19:00 under Alice, reference BK-101"
    assert [(c.name, c.args, c.output) for c in second.calls] == [
        ("check_menu", {"diet": "vegan"}, "mushroom risotto and lentil curry")
    ]
    assert third.calls == []
    assert all(r.metadata["livekit"]["tool_calls_observed"] is True for r in out["replies"])
    assert all(r.tool_calls_unobserved is None for r in out["replies"])

    # The replies, as the room's transcription streams carried them; turn 3 needs turn 1.
    answers = [
        "You're all set: table for 2 at 19:00 under Alice, reference BK-101.",
        "Yes, we have mushroom risotto and lentil curry.",
        "The booking is under Alice.",
    ]
    for reply, answer in zip(out["replies"], answers, strict=True):
        assert reply.reply.endswith(answer), reply.reply
        # Real time over WebRTC: on a starved CPU the caller's frames can arrive with a gap the
        # agent's VAD takes for the end of the turn, and it starts answering a fragment until
        # the rest of the sentence cuts it off. That cut-off speech is part of what the caller
        # heard, so it stays in the turn's reply, as one more assistant message of the turn.
        if reply.reply != answer:
            said = [
                event["text"]
                for event in reply.metadata["livekit"]["events"]
                if event["type"] == "message" and event["role"] == "assistant"
            ]
            assert len(said) >= 2 and said[-1] == answer, said

    for reply in out["replies"]:
        meta = reply.metadata["livekit"]
        assert meta["mode"] == "room" and meta["room"] == out["room"]
        assert meta["agent_states"][-1] == "listening" and "speaking" in meta["agent_states"]
        assert reply.latency_s is not None and reply.latency_s > 0
        assert reply.first_audio_latency_s is not None and reply.first_audio_latency_s > 0
        assert reply.usage is not None and reply.usage.output_tokens > 0
        # The saved reply audio is the agent's voice saying the reply.
        assert reply.audio_out is not None and reply.audio_out.is_file()
        clip = read_wav(reply.audio_out)
        assert clip.duration_s > 0.5
        assert word_error_rate(reply.reply, transcribe(clip)) <= 0.35

    # The run's room is gone as soon as the run ends.
    assert out["room"] not in out["rooms_after"]


def test_without_the_helper_tool_calls_are_marked_unobservable(
    lab: RoomLab, lab_worker: str
) -> None:
    out = lab.call(
        "converse",
        agent_name=lab_worker,
        dispatch_metadata="no-helper",
        turns=[{"user": "Do you have vegan dishes?"}],
    )
    (reply,) = out["replies"]
    # The agent did call check_menu (its reply says what the tool returned), but a room shows
    # no tool calls: the reply says they could not be observed, rather than "none were made".
    assert reply.reply == "Yes, we have mushroom risotto and lentil curry."
    assert reply.calls == []
    assert reply.tool_calls_unobserved is not None
    assert reply.metadata["livekit"]["tool_calls_observed"] is False


def test_without_the_helper_a_tool_expectation_fails_naming_it(
    lab: RoomLab, lab_worker: str
) -> None:
    # An exclusion would pass on the empty list of calls a room shows: the turn fails instead.
    with pytest.raises(AdapterError) as caught:
        lab.call(
            "converse",
            agent_name=lab_worker,
            dispatch_metadata="no-helper",
            turns=[
                {
                    "user": "Do you have vegan dishes?",
                    "expect": {"tool_calls_exclude": ["book_table"]},
                }
            ],
        )
    message = str(caught.value)
    assert message.startswith("turn 1: this turn has tool expectations (tool_calls_exclude)")
    assert "add publish_eval_events(session)" in message


def test_without_the_helper_an_agent_expectation_fails_naming_it(
    lab: RoomLab, lab_worker: str
) -> None:
    with pytest.raises(AdapterError) as caught:
        lab.call(
            "converse",
            agent_name=lab_worker,
            dispatch_metadata="no-helper",
            turns=[{"user": "I have a question about my bill.", "expect": {"agent_is": "Billing"}}],
        )
    message = str(caught.value)
    assert message.startswith("turn 1: this turn has agent expectations (agent_is)")
    assert "add publish_eval_events(session)" in message


def test_a_greeting_is_waited_for_and_kept_apart(lab: RoomLab, lab_worker: str) -> None:
    out = lab.call(
        "converse",
        agent_name=lab_worker,
        dispatch_metadata="greeter",
        wait_for_greeting=True,
        turns=[{"user": "Do you have vegan dishes?"}],
        bystander=True,
    )
    (reply,) = out["replies"]
    assert out["greeting"] == "Welcome to Chez Pytest! How can I help?"
    # The greeting as in process: the greeter's own speech, with its cause and agent.
    assert out["greeting_record"].speech[0].cause == "greeting"
    assert out["greeting_record"].speech[0].agent == "GreeterAgent"
    assert [s["text"] for s in reply.metadata["livekit"]["greeting"]] == [out["greeting"]]
    # Turn 1's reply is only the answer to turn 1.
    assert reply.reply == "Yes, we have mushroom risotto and lentil curry."
    assert [c.name for c in reply.calls] == ["check_menu"]
    # The helper's events (tool outputs included) went to the test's caller only, not to
    # another participant in the room.
    assert out["bystander_events"] == 0


def test_handoffs_and_the_active_agent_come_from_the_helper(lab: RoomLab, lab_worker: str) -> None:
    # The same typed records as in process, so handoff_to / agent_is read a room run too.
    out = lab.call(
        "converse",
        agent_name=lab_worker,
        dispatch_metadata="handoff",
        turns=[{"user": "I have a question about my bill."}],
    )
    (reply,) = out["replies"]
    assert reply.reply == "Billing here. How can I help with your bill?"
    assert [c.name for c in reply.calls] == ["transfer_to_billing"]
    assert reply.handoffs == [Handoff("FrontDesk", "BillingDesk")]
    assert reply.active_agent == "BillingDesk"


def test_without_the_helper_agents_are_unknown_not_none(lab: RoomLab, lab_worker: str) -> None:
    out = lab.call(
        "converse",
        agent_name=lab_worker,
        dispatch_metadata="no-helper",
        turns=[{"user": "Do you have vegan dishes?"}],
    )
    (reply,) = out["replies"]
    assert reply.handoffs is None and reply.active_agent is None
