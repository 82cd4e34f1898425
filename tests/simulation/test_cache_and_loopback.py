"""The caller cache replays an unchanged conversation with no request and diverges from the
first changed reply; the caller and the judge also work over the wire, through the real
OpenAI SDK against the loopback Chat Completions server."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from sim_models import CallerCall, End, ScriptedCaller, ScriptedJudge
from test_conversation import REFUND, always_met, polite_caller, refund_agent, run, simulation

from pytest_agent_eval import AgentReply
from pytest_agent_eval._config import JudgeSettings
from pytest_agent_eval._report._format import simulation_rows
from pytest_agent_eval._runner import RunSettings
from pytest_agent_eval.models import TranscriptResult
from pytest_agent_eval.simulation import CallerSettings, SimulationSettings, run_simulation


def _chat_prefix() -> str:
    """The model-id prefix of OpenAI Chat Completions: ``openai-chat`` in pydantic-ai 2.x
    (where ``openai`` means the Responses API), ``openai`` in 1.x."""
    from pydantic_ai.models import infer_model

    try:
        infer_model("openai-chat:probe")
    except ValueError:
        return "openai"
    except Exception:  # a missing key: the prefix itself is known
        return "openai-chat"
    return "openai-chat"


CHAT = _chat_prefix()


def verdicts(result: TranscriptResult) -> list[Any]:
    """Everything a verdict is made of, run by run (not durations)."""
    return [
        (
            r.verdict,
            [(t.user, t.reply, t.passed) for t in r.turns],
            [
                (e.passed, re.sub(r" \(cached verdict[^)]*\)$", "", e.reasoning))
                for e in r.evaluations
            ],
            r.simulation.ended_by if r.simulation else None,
        )
        for r in result.runs
    ]


def test_a_rerun_against_an_unchanged_agent_makes_no_caller_request(tmp_path: Path) -> None:
    sim = simulation(runs=3)
    first_caller = ScriptedCaller(polite_caller)
    first = run(sim, first_caller, cache_dir=tmp_path)
    assert len(first_caller.calls) == 9  # 3 runs x (2 utterances + the end)
    assert list(tmp_path.rglob("*.json"))

    again = ScriptedCaller(polite_caller)
    judge = ScriptedJudge(always_met)
    second = run(sim, again, judge, cache_dir=tmp_path)
    assert again.calls == []  # every caller turn replayed
    assert judge.calls == []  # and every verdict
    assert verdicts(second) == verdicts(first)
    for r in second.runs:
        assert r.simulation is not None
        assert (r.simulation.requests, r.simulation.cached_turns) == (0, 3)
        assert r.simulation.cached_verdicts == 1
        assert r.simulation.recorded_at is not None
        assert r.simulation.usage is None
        (verdict,) = r.evaluations
        # The verdict says when it was recorded: at or after the run's oldest replayed entry
        # (the caller's turns and the verdict may be written a second apart).
        stamp = re.search(r"\(cached verdict, recorded ([^)]+)\)$", verdict.reasoning)
        assert stamp is not None, verdict.reasoning
        assert stamp.group(1) >= r.simulation.recorded_at
        replayed = dict(simulation_rows(r))["Replayed"]
        assert replayed.startswith("3 caller turn(s) and 1 criteria verdict(s) from the caller")
        assert f"recorded {r.simulation.recorded_at}" in replayed


def test_refresh_asks_again_and_rewrites_what_the_next_run_replays(tmp_path: Path) -> None:
    sim = simulation()
    run(sim, ScriptedCaller(polite_caller), cache_dir=tmp_path)

    def changed(call: CallerCall) -> str | End:  # the model behind the same name changed
        said = polite_caller(call)
        return "Hello, I would like a refund, my blender broke." if call.turn == 1 else said

    fresh = ScriptedCaller(changed)
    judge = ScriptedJudge(always_met)
    refreshed = run(sim, fresh, judge, cache_dir=tmp_path, refresh=True)
    assert len(fresh.calls) == 3 and len(judge.calls) == 1
    record = refreshed.runs[0].simulation
    assert record is not None
    assert (record.cached_turns, record.cached_verdicts, record.recorded_at) == (0, 0, None)

    # The next ordinary run replays what the refresh recorded, not the old turns.
    replay = ScriptedCaller(polite_caller)
    again = run(sim, replay, cache_dir=tmp_path)
    assert replay.calls == []
    assert again.runs[0].turns[0].user == "Hello, I would like a refund, my blender broke."


def test_no_cache_reads_and_writes_nothing(tmp_path: Path) -> None:
    run(simulation(), ScriptedCaller(polite_caller), cache_dir=tmp_path / "cache")
    before = sorted(p.read_text() for p in tmp_path.rglob("*.json"))
    caller, judge = ScriptedCaller(polite_caller), ScriptedJudge(always_met)
    run(simulation(), caller, judge, cache_dir=None)
    assert (len(caller.calls), len(judge.calls)) == (3, 1)
    assert sorted(p.read_text() for p in tmp_path.rglob("*.json")) == before


def test_a_model_of_the_same_name_with_other_settings_is_not_a_cache_hit(tmp_path: Path) -> None:
    from pydantic_ai.models.function import FunctionModel

    run(simulation(), ScriptedCaller(polite_caller), cache_dir=tmp_path)
    caller = ScriptedCaller(polite_caller)
    tuned = FunctionModel(caller._respond, model_name=caller.name, settings={"max_tokens": 64})
    settings = SimulationSettings(
        run=RunSettings(judge=JudgeSettings(model=ScriptedJudge(always_met).model)),
        caller=CallerSettings(model=tuned, cache_dir=tmp_path),
    )
    asyncio.run(run_simulation(simulation(), refund_agent, settings=settings))
    assert len(caller.calls) == 3  # asked again: the request would not be the same


def test_a_cache_entry_of_the_old_layout_is_not_replayed(tmp_path: Path) -> None:
    """Entries written before keys held the package version and the model's server are
    misses: they cannot say what they were recorded against."""
    from pytest_agent_eval.simulation._cache import CallerCache

    run(simulation(), ScriptedCaller(polite_caller), cache_dir=tmp_path)
    for path in tmp_path.glob("??/*.json"):
        entry = json.loads(path.read_text())
        entry["format"] = 1
        path.write_text(json.dumps(entry))
        assert CallerCache(tmp_path).get(path.stem) is None


def test_a_changed_agent_diverges_only_from_its_first_changed_reply(tmp_path: Path) -> None:
    sim = simulation()
    run(sim, ScriptedCaller(polite_caller), cache_dir=tmp_path)

    async def changed(history: Any) -> AgentReply:
        reply = await refund_agent(history)
        if reply.reply == REFUND:  # only the second reply changes
            return AgentReply("Refund issued, reference RF-10.", reply.tool_calls)
        return reply

    caller = ScriptedCaller(polite_caller)
    result = run(sim, caller, agent=changed, cache_dir=tmp_path)
    record = result.runs[0].simulation
    assert record is not None
    # Turns 1 and 2 were written before the changed reply: replayed. The end came after it.
    assert (record.cached_turns, record.requests) == (2, 1)
    assert [c.turn for c in caller.calls] == [3]
    assert "RF-10" in caller.calls[0].prompt


def test_another_seed_is_another_caller_not_a_cache_hit(tmp_path: Path) -> None:
    from pytest_agent_eval.simulation import CallerConfig

    run(simulation(), ScriptedCaller(polite_caller), cache_dir=tmp_path)
    caller = ScriptedCaller(polite_caller)
    run(simulation(caller=CallerConfig(seed=7)), caller, cache_dir=tmp_path)
    assert len(caller.calls) == 3


def _loopback_caller(loopback: ModuleType, body: dict[str, Any]) -> dict[str, Any]:
    """The caller's side of the wire: words until the agent gave a reference, then the tool."""
    tools = [t["function"]["name"] for t in body.get("tools", [])]
    said = "\n".join(str(m.get("content")) for m in body["messages"])
    if "end_conversation" in tools and "RF-9" in said:
        args = {"outcome": "goal_reached", "reason": "Refund done."}
        return loopback.tool_call_completion([("end_conversation", args, "c1")])
    if "Which order" in said:
        return loopback.text_completion("It is order 1234.")
    return loopback.text_completion("My blender arrived broken, I want a refund.")


def test_caller_and_judge_over_the_openai_wire(
    loopback: ModuleType, openai_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from pytest_agent_eval._config import JudgeSettings
    from pytest_agent_eval._runner import RunSettings
    from pytest_agent_eval.simulation import (
        CallerSettings,
        SimulationSettings,
        run_simulation,
    )

    judged: list[str] = []

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        tools = [t["function"]["name"] for t in body.get("tools", [])]
        if "end_conversation" in tools or not tools:
            return _loopback_caller(loopback, body)
        judged.append(json.dumps(body["messages"]))
        args = {"reasoning": "Turn 2 calls lookup_order.", "verdict": "met"}
        return loopback.tool_call_completion([(tools[0], args, "j1")])

    with loopback.ChatServer(respond) as server:
        openai_env.setenv("OPENAI_BASE_URL", server.base_url)
        settings = SimulationSettings(
            run=RunSettings(judge=JudgeSettings(model=f"{CHAT}:loopback-judge", retries=0)),
            caller=CallerSettings(model=f"{CHAT}:loopback-caller", retries=0, cache_dir=tmp_path),
        )
        import asyncio

        result = asyncio.run(run_simulation(simulation(), refund_agent, settings=settings))
        assert result.verdict == "passed", result.runs[0].error
        record = result.runs[0].simulation
        assert record is not None
        assert (record.ended_by, record.outcome, record.turns) == ("caller", "goal_reached", 2)
        assert record.model == f"{CHAT}:loopback-caller"
        assert record.requests == 3 and record.usage is not None
        assert record.usage.input_tokens == 11 + 11 + 13  # the server's usage, summed
        caller_bodies = [b for b in server.requests if b["model"] == "loopback-caller"]
        assert len(caller_bodies) == 3
        # The caller's sampling settings reached the wire.
        assert {b.get("temperature") for b in caller_bodies} == {0.7}
        assert all(isinstance(b.get("seed"), int) for b in caller_bodies)
        assert len(judged) == 1 and "lookup_order" in judged[0]

        # The same session again: the caller cache answers, and the criteria verdicts with it.
        before = len(server.requests)
        again = asyncio.run(run_simulation(simulation(), refund_agent, settings=settings))
        assert again.verdict == "passed"
        assert server.requests[before:] == []


def test_a_judge_model_fixture_and_judge_verdicts_reach_every_criterion() -> None:
    judge = ScriptedJudge(always_met)
    sim = simulation(criteria=["a", "b", "c"])
    result = run(sim, ScriptedCaller(polite_caller), judge)
    assert result.verdict == "passed"
    assert [e.key for e in result.runs[0].evaluations] == [
        "criteria[0]",
        "criteria[1]",
        "criteria[2]",
    ]
    assert len(judge.calls) == 3


@pytest.mark.parametrize("any_path", [True, False], ids=["answers-every-path", "404-elsewhere"])
def test_an_openai_id_against_a_chat_completions_server_says_to_use_openai_chat(
    loopback: ModuleType, openai_env: pytest.MonkeyPatch, any_path: bool
) -> None:
    """pydantic-ai's ``openai:`` is the Responses API; a server that speaks only Chat
    Completions answers it with a chat completion the client cannot read (a bare ``TypeError:
    'NoneType' object is not iterable``) or a 404. Both say what to use instead, for the
    caller and for the criteria judge."""
    from pydantic_ai.models import infer_model

    from pytest_agent_eval._config import JudgeSettings
    from pytest_agent_eval._runner import RunSettings

    if type(infer_model("openai:served-model")).__name__ == "OpenAIChatModel":
        pytest.skip("this pydantic-ai reads 'openai:' as Chat Completions (1.x): no mismatch")

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        return loopback.text_completion("Hello, I want a refund.")

    with loopback.ChatServer(respond, any_path=any_path) as server:
        openai_env.setenv("OPENAI_BASE_URL", server.base_url)
        settings = SimulationSettings(
            run=RunSettings(judge=JudgeSettings(model="openai:served-model", retries=0)),
            caller=CallerSettings(model="openai:served-model", retries=0),
        )
        result = asyncio.run(run_simulation(simulation(), refund_agent, settings=settings))
        assert server.paths == ["/v1/responses"]
    assert result.verdict == "error"
    error = result.runs[0].error or ""
    assert "the simulated caller failed at turn 1" in error
    assert "use 'openai-chat:served-model' (pydantic-ai's OpenAIChatModel)" in error
    if any_path:
        assert "answered it with something else" in error


def test_the_wrong_api_hint_is_for_openai_ids_only() -> None:
    from pytest_agent_eval._retry import wrong_api_hint

    unreadable = TypeError("'NoneType' object is not iterable")
    assert wrong_api_hint("openai:m", unreadable)
    assert wrong_api_hint("openai-chat:m", unreadable) == ""
    assert wrong_api_hint("openai:m", ValueError("bad")) == ""
