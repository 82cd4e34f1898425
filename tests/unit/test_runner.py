"""The runner: runs, thresholds, isolation, concurrency bound, early stop, history."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from pytest_agent_eval import AgentReply, Expect, ToolCall, Transcript, Turn
from pytest_agent_eval._runner import RunSettings, passes_needed, run_transcript
from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
from pytest_agent_eval.errors import AgentCrashError, AudioFixtureError
from pytest_agent_eval.models import Crash, Message, TranscriptResult


def transcript(
    runs: int = 3, threshold: float = 0.8, turns: list[Turn] | None = None
) -> Transcript:
    return Transcript(
        id="t",
        turns=turns or [Turn("hello", expect=Expect(reply_contains_any=["ok"]))],
        runs=runs,
        threshold=threshold,
    )


@dataclass
class RecordingAdapter:
    """A real AgentAdapter whose replies depend on the run index."""

    passing_runs: set[int] | None = None
    raise_in_runs: set[int] = field(default_factory=set)
    started: list[int] = field(default_factory=list)
    closed: list[int] = field(default_factory=list)
    inflight: int = 0
    max_inflight: int = 0
    prepared: int = 0
    consumes_audio: bool = False

    async def prepare(self, transcript: Transcript) -> None:
        self.prepared += 1

    async def start_conversation(self, info: ConversationInfo) -> RecordingConversation:
        self.started.append(info.run_index)
        return RecordingConversation(self, info.run_index)


@dataclass
class RecordingConversation:
    adapter: RecordingAdapter
    run_index: int
    seen: list[list[Message]] = field(default_factory=list)

    async def respond(self, turn: TurnInput) -> AgentReply:
        a = self.adapter
        a.inflight += 1
        a.max_inflight = max(a.max_inflight, a.inflight)
        try:
            for _ in range(3):  # yield so other runs can start if the bound allows
                await asyncio.sleep(0)
            if self.run_index in a.raise_in_runs:
                raise ValueError(f"agent broke in run {self.run_index}")
            ok = a.passing_runs is None or self.run_index in a.passing_runs
            return AgentReply("ok" if ok else "nope")
        finally:
            a.inflight -= 1

    async def aclose(self) -> None:
        self.adapter.closed.append(self.run_index)


@pytest.mark.parametrize(
    ("threshold", "runs", "needed"),
    [(0.8, 5, 4), (0.7, 10, 7), (1.0, 3, 3), (0.0, 3, 0), (0.5, 3, 2)],
)
def test_passes_needed(threshold: float, runs: int, needed: int) -> None:
    assert passes_needed(threshold, runs) == needed


def test_verdict_from_pass_fraction() -> None:
    adapter = RecordingAdapter(passing_runs={0, 1})
    result = asyncio.run(run_transcript(transcript(runs=3, threshold=0.6), adapter))
    assert (result.passed, result.passed_run_count, round(result.score, 2)) == (True, 2, 0.67)
    adapter = RecordingAdapter(passing_runs={0, 1})
    result = asyncio.run(run_transcript(transcript(runs=3, threshold=0.8), adapter))
    assert not result.passed
    assert [r.index for r in result.runs] == [0, 1, 2]
    assert adapter.prepared == 1


def test_exception_in_one_run_crashes_only_that_run_and_closes_it() -> None:
    adapter = RecordingAdapter(raise_in_runs={1})
    result = asyncio.run(run_transcript(transcript(runs=3, threshold=0.6), adapter))
    assert result.passed_run_count == 2 and round(result.score, 2) == 0.67
    broken = result.runs[1]
    assert not broken.passed
    assert broken.turns[0].error is not None
    assert broken.turns[0].error.startswith("ValueError: agent broke in run 1 (at ")
    assert "test_runner.py" in broken.turns[0].error
    assert sorted(adapter.closed) == [0, 1, 2]
    assert sorted(adapter.started) == [0, 1, 2]
    # The agent's own exception is a crash, with the place in the agent's code; it fails the
    # eval although 2 of 3 runs meet the threshold of 0.6.
    crash = broken.turns[0].crash
    assert crash is not None
    assert (crash.type, crash.message) == ("ValueError", "agent broke in run 1")
    assert crash.where is not None and crash.where.startswith("test_runner.py:")
    assert crash.where.endswith(" in respond")
    assert (broken.turns[0].verdict, broken.verdict) == ("crashed", "crashed")
    assert not result.passed and result.verdict == "crashed"
    assert result.crash_reason == (
        f"1 of 3 run(s) crashed: run 2, turn 1: ValueError: agent broke in run 1 (at {crash.where})"
    )
    assert result.threshold_message().startswith("LLM eval CRASHED: 1 of 3 run(s) crashed")


def test_crashes_fail_off_makes_a_crash_an_ordinary_fail() -> None:
    adapter = RecordingAdapter(raise_in_runs={1})
    settings = RunSettings(crashes_fail=False)
    result = asyncio.run(
        run_transcript(transcript(runs=3, threshold=0.6), adapter, settings=settings)
    )
    assert result.passed and result.verdict == "passed"
    assert result.runs[1].verdict == "crashed"  # the run still says what happened


def test_a_crash_round_trips_through_the_serializer() -> None:
    adapter = RecordingAdapter(raise_in_runs={0})
    result = asyncio.run(run_transcript(transcript(runs=1), adapter))
    again = TranscriptResult.from_dict(result.to_dict())
    assert again.verdict == "crashed"
    assert again.runs[0].turns[0].crash == result.runs[0].turns[0].crash


def test_an_adapter_crash_error_is_a_crash_not_an_error() -> None:
    class CrashingConversation:
        async def respond(self, turn: object) -> AgentReply:
            raise AgentCrashError(
                "turn 1: the agent's on_enter raised",
                kind="RuntimeError",
                detail="no menu",
                where="agent.py:12 in on_enter",
            )

        async def aclose(self) -> None:
            return None

    class Crashing:
        async def start_conversation(self, info: object) -> CrashingConversation:
            return CrashingConversation()

    result = asyncio.run(run_transcript(transcript(runs=2), Crashing()))
    assert result.verdict == "crashed" and result.errored_run_count == 0
    assert result.runs[0].turns[0].crash == Crash(
        type="RuntimeError", message="no menu", where="agent.py:12 in on_enter"
    )
    assert result.runs[0].turns[0].error == "turn 1: the agent's on_enter raised"


def test_concurrency_is_bounded() -> None:
    adapter = RecordingAdapter()
    settings = RunSettings(concurrency=2)
    asyncio.run(run_transcript(transcript(runs=6), adapter, settings=settings))
    assert adapter.max_inflight == 2
    adapter = RecordingAdapter()
    asyncio.run(run_transcript(transcript(runs=6), adapter, settings=RunSettings(concurrency=1)))
    assert adapter.max_inflight == 1


def test_early_stop_on_settled_pass_and_fail() -> None:
    settings = RunSettings(concurrency=1, early_stop=True)
    passing = RecordingAdapter()
    result = asyncio.run(
        run_transcript(transcript(runs=10, threshold=0.8), passing, settings=settings)
    )
    assert result.passed and len(result.runs) == 8 and result.saved_runs == 2
    failing = RecordingAdapter(passing_runs=set())
    result = asyncio.run(
        run_transcript(transcript(runs=10, threshold=0.8), failing, settings=settings)
    )
    assert not result.passed and len(result.runs) == 3 and result.saved_runs == 7
    assert result.planned_runs == 10


def test_without_early_stop_every_run_happens() -> None:
    adapter = RecordingAdapter(passing_runs=set())
    result = asyncio.run(run_transcript(transcript(runs=5), adapter))
    assert len(result.runs) == 5 and result.saved_runs == 0


def test_history_carries_tool_calls_and_results_and_runs_do_not_share_it() -> None:
    seen: list[list[dict[str, object]]] = []

    async def agent(history: list[Message]) -> AgentReply:
        seen.append([dict(m) for m in history])
        if len(history) == 1:
            return AgentReply(
                "booked", [ToolCall("book", {"n": 2}, output={"ref": "BK-1"}, call_id="c9")]
            )
        return AgentReply(f"you have {len(history)} messages")

    turns = [Turn("book"), Turn("and then?")]
    asyncio.run(run_transcript(transcript(runs=2, turns=turns), agent))
    first_run_turn_2 = seen[1]
    assert [m["role"] for m in first_run_turn_2] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert first_run_turn_2[1]["tool_calls"] == [
        {"id": "c9", "type": "function", "function": {"name": "book", "arguments": '{"n": 2}'}}
    ]
    assert first_run_turn_2[2] == {
        "role": "tool",
        "content": '{"ref": "BK-1"}',
        "tool_call_id": "c9",
    }
    assert len(seen) == 4
    assert [len(h) for h in seen] == [1, 5, 1, 5]


def test_turns_after_an_agent_error_are_not_run_but_failed_expectations_continue() -> None:
    calls: list[str] = []

    def agent(history: list[Message]) -> str:
        calls.append(history[-1].content or "")
        if history[-1].content == "two":
            raise RuntimeError("down")
        return "nope"

    turns = [Turn("one", expect=Expect(reply_contains_any=["ok"])), Turn("two"), Turn("three")]
    result = asyncio.run(run_transcript(transcript(runs=1, turns=turns), agent))
    run = result.runs[0]
    assert calls == ["one", "two"]
    assert [t.passed for t in run.turns] == [False, False]
    assert run.turns[1].error is not None and "RuntimeError: down" in run.turns[1].error


def test_failed_start_is_recorded() -> None:
    class NoStart:
        consumes_audio = False

        async def start_conversation(self, info: ConversationInfo) -> None:
            raise ConnectionError("no session")

    result = asyncio.run(run_transcript(transcript(runs=2), NoStart()))
    assert not result.passed
    assert all(
        r.error is not None
        and r.error.startswith("starting the conversation failed: ConnectionError")
        for r in result.runs
    )


def test_prepare_errors_propagate_before_any_run() -> None:
    class Picky(RecordingAdapter):
        async def prepare(self, transcript: Transcript) -> None:
            raise AudioFixtureError("a.wav: missing")

    adapter = Picky()
    with pytest.raises(AudioFixtureError, match="missing"):
        asyncio.run(run_transcript(transcript(), adapter))
    assert adapter.started == []


def test_cancellation_closes_open_conversations() -> None:
    class Hanging(RecordingAdapter):
        async def start_conversation(self, info: ConversationInfo) -> HangingConversation:
            self.started.append(info.run_index)
            return HangingConversation(self, info.run_index)

    class HangingConversation(RecordingConversation):
        async def respond(self, turn: TurnInput) -> AgentReply:
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

    adapter = Hanging()

    async def main() -> None:
        task = asyncio.create_task(
            run_transcript(transcript(runs=3), adapter, settings=RunSettings(concurrency=3))
        )
        while len(adapter.started) < 3:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert sorted(adapter.closed) == [0, 1, 2]


def test_agent_reply_shapes_are_accepted() -> None:
    for value in ("ok", ("ok", ["t"]), AgentReply("ok")):

        def agent(history: list[Message], value: object = value) -> object:
            return value

        assert asyncio.run(run_transcript(transcript(runs=1), agent)).passed
    result = asyncio.run(run_transcript(transcript(runs=1), lambda h: 42))
    error = result.runs[0].turns[0].error
    assert error is not None and "expected AgentReply(reply, tool_calls)" in error


def test_threshold_zero_with_early_stop_still_runs_once() -> None:
    adapter = RecordingAdapter()
    settings = RunSettings(concurrency=1, early_stop=True)
    result = asyncio.run(
        run_transcript(transcript(runs=4, threshold=0.0), adapter, settings=settings)
    )
    assert adapter.started == [0]
    assert len(result.runs) == 1
    assert result.passed


def test_bad_regex_in_python_expect_is_a_transcript_error() -> None:
    from pytest_agent_eval import TranscriptError

    bad = transcript(turns=[Turn("hi"), Turn("x", expect=Expect(reply_matches_any=["("]))])
    with pytest.raises(TranscriptError, match=r"transcript 't', turn 2: invalid regex '\('"):
        asyncio.run(run_transcript(bad, RecordingAdapter()))


def test_run_sync_inside_a_running_loop_uses_a_worker_thread() -> None:
    from pytest_agent_eval._async import run_sync

    async def inner() -> str:
        await asyncio.sleep(0)
        return "done"

    async def outer() -> str:
        return run_sync(inner())

    assert asyncio.run(outer()) == "done"


def test_early_stop_keeps_no_more_runs_in_flight_than_could_settle_the_verdict() -> None:
    # threshold 0.8 of 5 needs 4 passes; 2 failures settle it. With every run failing, at
    # most 2 runs are ever started even though 4 could run at once.
    failing = RecordingAdapter(passing_runs=set())
    settings = RunSettings(concurrency=4, early_stop=True)
    result = asyncio.run(
        run_transcript(transcript(runs=5, threshold=0.8), failing, settings=settings)
    )
    assert sorted(failing.started) == [0, 1]
    assert failing.max_inflight == 2
    assert not result.passed
    assert result.saved_runs == 3
    # Without early stop the same concurrency starts four at once.
    eager = RecordingAdapter(passing_runs=set())
    asyncio.run(run_transcript(transcript(runs=5), eager, settings=RunSettings(concurrency=4)))
    assert eager.max_inflight == 4


# -- the greeting: read from the conversation, checked once per run ----------------------------


@dataclass
class GreetingAdapter:
    """Conversations whose optional greeting() returns ``said`` (sync, or async)."""

    said: object
    asynchronous: bool = False
    consumes_audio: bool = False

    async def start_conversation(self, info: ConversationInfo) -> object:
        adapter = self

        class Conversation:
            def greeting(self) -> object:
                if not adapter.asynchronous:
                    return adapter.said

                async def later() -> object:
                    return adapter.said

                return later()

            async def respond(self, turn: TurnInput) -> AgentReply:
                return AgentReply("ok")

            async def aclose(self) -> None:
                pass

        return Conversation()


def _greeted(**checks: list[str]) -> Transcript:
    from pytest_agent_eval.models import GreetingExpect

    return Transcript(id="t", turns=[Turn("hello")], runs=2, greeting=GreetingExpect(**checks))


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_the_greeting_is_read_once_per_run_and_checked(asynchronous: bool) -> None:
    from pytest_agent_eval.models import AgentSpeech, Greeting

    said = Greeting([AgentSpeech(text="Welcome!", cause="greeting")])
    adapter = GreetingAdapter(said, asynchronous)
    result = asyncio.run(run_transcript(_greeted(contains_any=["welcome"]), adapter))
    assert result.passed and len(result.runs) == 2
    for run in result.runs:
        assert run.greeting == said
        (verdict,) = run.greeting_evaluations
        assert verdict.passed and verdict.name == "greeting"
    failed = asyncio.run(run_transcript(_greeted(contains_none=["welcome"]), adapter))
    assert not failed.passed
    assert all(not r.passed and r.turns[0].passed for r in failed.runs)


def test_a_greeting_that_is_not_one_fails_the_run_with_the_reason() -> None:
    result = asyncio.run(run_transcript(_greeted(contains_any=["hi"]), GreetingAdapter("hi")))
    assert not result.passed
    for run in result.runs:
        assert run.error is not None and run.turns == []
        assert run.error.startswith(
            "reading the greeting failed: AdapterError: Conversation.greeting() returned str; "
            "expected a Greeting or None"
        )


def test_without_greeting_checks_the_greeting_is_kept_for_reports_only() -> None:
    from pytest_agent_eval.models import Greeting

    result = asyncio.run(run_transcript(transcript(runs=1), GreetingAdapter(Greeting())))
    (run,) = result.runs
    assert run.greeting == Greeting() and run.greeting_evaluations == []
    # A conversation without greeting(): nothing observed, nothing checked.
    plain = asyncio.run(run_transcript(transcript(runs=1), RecordingAdapter()))
    assert plain.runs[0].greeting is None


def test_a_text_agent_gets_the_words_without_pause_markers() -> None:
    seen: list[str] = []

    async def agent(history: list[Message]) -> str:
        seen.append(history[-1].content or "")
        return "ok"

    script = transcript(runs=1, turns=[Turn("Hi, Maria here. [pause 2s] I need a refill.")])
    result = asyncio.run(run_transcript(script, agent))
    assert seen == ["Hi, Maria here. I need a refill."]
    (turn,) = result.runs[0].turns
    assert turn.user == "Hi, Maria here. [pause 2s] I need a refill."  # reports: as written


def test_a_malformed_pause_marker_fails_before_any_run() -> None:
    from pytest_agent_eval.voice._speech import PauseMarkupError

    adapter = RecordingAdapter()
    script = transcript(turns=[Turn("hello"), Turn("Hi [pause soon] there")])
    with pytest.raises(PauseMarkupError) as info:
        asyncio.run(run_transcript(script, adapter))
    assert str(info.value).startswith(
        "transcript 't', turn 2: user: malformed pause marker '[pause soon]'"
    )
    assert adapter.started == []


def test_a_crash_error_keeps_its_crash_when_labelled_and_pickled() -> None:
    import pickle

    error = AgentCrashError("on_enter raised", kind="KeyError", detail="'menu'", where="a.py:3")
    for copy in (error.labelled("turn 2"), pickle.loads(pickle.dumps(error.labelled("turn 2")))):
        assert type(copy) is AgentCrashError and str(copy) == "turn 2: on_enter raised"
        assert (copy.kind, copy.detail, copy.where) == ("KeyError", "'menu'", "a.py:3")


def test_a_crash_is_placed_in_the_agents_code_and_only_there() -> None:
    import json

    def agent_code() -> None:
        json.loads("{")  # raises inside the standard library, called from the agent

    try:
        agent_code()
    except ValueError as exc:
        crash = Crash.from_agent_code(exc)
        assert crash is not None and crash.where is not None
        assert crash.where.startswith("test_runner.py:") and crash.where.endswith(" in agent_code")

    async def framework_only() -> BaseException | None:
        # An exception whose traceback never passes through the user's code (as one a
        # framework logs from its own task): not the agent's crash.
        task = asyncio.ensure_future(asyncio.to_thread(json.loads, "{"))
        await asyncio.wait([task])
        return task.exception()

    exc = asyncio.run(framework_only())
    assert exc is not None
    assert Crash.from_agent_code(exc) is None
    assert Crash.of(exc).where is not None  # still placed, in the innermost frame
