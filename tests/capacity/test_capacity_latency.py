"""Provider latency for the scripted stand-ins (``adapters/_latency.py``): the distribution it
draws from, its bad values, and the scripted LLMs waiting it before they answer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from pytest_agent_eval._capacity._measure import percentile
from pytest_agent_eval.adapters._latency import ProviderLatency, ReplayedLatency, as_latency

REPORT = Path(__file__).parents[1] / "docs/support/import/calls/booking/session_report.json"
"""A real LiveKit session report (the import docs' example call)."""


def test_draws_have_the_median_and_95th_percentile_asked_for() -> None:
    latency = ProviderLatency(0.4, 1.2, seed=7)
    draws = [latency.draw() for _ in range(4001)]
    p50, p95 = percentile(draws, 50), percentile(draws, 95)
    assert p50 is not None and 0.36 < p50 < 0.44
    assert p95 is not None and 1.05 < p95 < 1.35
    assert min(draws) > 0


def test_a_seed_repeats_the_sequence_and_a_single_value_is_fixed() -> None:
    first = [ProviderLatency(0.2, 0.5, seed=1).draw() for _ in range(3)]
    again = [ProviderLatency(0.2, 0.5, seed=1).draw() for _ in range(3)]
    assert first == again
    fixed = as_latency(0.25, "x")
    assert fixed is not None and {fixed.draw() for _ in range(5)} == {0.25}
    pair = as_latency((0.1, 0.3), "x")
    assert pair is not None and (pair.p50_s, pair.p95_s) == (0.1, 0.3)
    assert as_latency(None, "x") is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1.0, "latency p50 must be a number of seconds >= 0"),
        ((0.5, 0.1), "latency p95 must be a number of seconds >= its p50"),
        ((0, 0.5), "latency p50 of 0 with a p95 of 0.5: a log-normal delay needs a median"),
        ({"p50": 1}, "latency must be seconds, \\(p50, p95\\) seconds, LiveKit session reports"),
        ("fast", "fast: cannot read the session report"),
        (True, "latency must be seconds"),
    ],
)
def test_bad_latency_names_where_it_was_given(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=rf"^ScriptedLLM\(latency=\.\.\.\): {message}"):
        as_latency(value, "ScriptedLLM(latency=...)")  # type: ignore[arg-type]


def test_session_reports_replay_the_delays_their_calls_saw(tmp_path: Path) -> None:
    # A real LiveKit session report (livekit-agents 1.8.9), as `agent-eval import` reads it.
    latency = as_latency([str(REPORT), REPORT], "x")
    assert isinstance(latency, ReplayedLatency)
    seen = {round(m["llm_node_ttft"], 9) for m in _assistant_metrics(REPORT)}
    assert len(seen) == 3 and set(map(_nine, latency.samples)) == seen  # both paths: six
    assert len(latency.samples) == 6
    assert {_nine(latency.draw()) for _ in range(200)} == seen
    # Another metric of the same reports: a TTS's time to first byte.
    tts = as_latency(REPORT, "x", metric="tts_node_ttfb")
    assert tts is not None and {_nine(tts.draw()) for _ in range(200)} == {
        round(m["tts_node_ttfb"], 9) for m in _assistant_metrics(REPORT)
    }
    bare = json.loads(REPORT.read_text())
    for item in bare["chat_history"]["items"]:
        item.pop("metrics", None)
    (tmp_path / "bare.json").write_text(json.dumps(bare))
    with pytest.raises(ValueError, match=r"^x: no assistant message in .*bare.json has metrics"):
        as_latency(tmp_path / "bare.json", "x")
    (tmp_path / "other.json").write_text('{"events": []}')
    with pytest.raises(ValueError, match=r"^x: .*other.json: no sdk_version"):
        as_latency(tmp_path / "other.json", "x")


def test_replayed_delays_are_taken_as_they_are_from_a_tuple_and_never_infinite(
    tmp_path: Path,
) -> None:
    # Real calls' delays with a median of 0: no log-normal is fitted, so nothing to refuse.
    zeros = ReplayedLatency([0.0, 0.0, 0.3], seed=1)
    assert {zeros.draw() for _ in range(100)} == {0.0, 0.3}
    # A tuple of paths is reports, not (p50, p95).
    pair = as_latency((str(REPORT), REPORT), "x")
    assert isinstance(pair, ReplayedLatency) and len(pair.samples) == 6
    # An Infinity in a report (json reads it) would hang a stand-in: refused, naming the file.
    damaged = json.loads(REPORT.read_text())
    for item in damaged["chat_history"]["items"]:
        if item.get("role") == "assistant" and "metrics" in item:
            item["metrics"]["llm_node_ttft"] = float("inf")
            break
    (tmp_path / "inf.json").write_text(json.dumps(damaged))
    with pytest.raises(ValueError, match=r"^x: .*inf.json: chat_history.items\[\d+\]"):
        as_latency(tmp_path / "inf.json", "x")
    with pytest.raises(ValueError, match="inf is not a delay"):
        ReplayedLatency([0.1, float("inf")])


def test_a_scripted_llm_waits_a_delay_replayed_from_a_session_report() -> None:
    pytest.importorskip("livekit.agents", reason="needs the livekit extra")
    from pytest_agent_eval.adapters.livekit import Rule, ScriptedLLM

    scripted = ScriptedLLM([Rule(r"hello", reply="Hi there")], latency=str(REPORT))
    assert isinstance(scripted.latency, ReplayedLatency)
    assert scripted.latency.draw() in scripted.latency.samples


def _assistant_metrics(path: Path) -> list[dict[str, float]]:
    items = json.loads(path.read_text())["chat_history"]["items"]
    return [i["metrics"] for i in items if i.get("role") == "assistant" and i.get("metrics")]


def _nine(value: float) -> float:
    return round(value, 9)


class _Counted(ProviderLatency):
    """A real latency that also counts its waits."""

    def __init__(self) -> None:
        super().__init__(0.001)
        self.waits = 0

    async def wait(self) -> float:
        self.waits += 1
        return await super().wait()


def test_the_livekit_scripted_llm_waits_its_latency_before_answering() -> None:
    pytest.importorskip("livekit.agents", reason="needs the livekit extra")
    from livekit.agents import llm

    from pytest_agent_eval.adapters.livekit import Rule, ScriptedLLM

    latency = _Counted()
    scripted = ScriptedLLM([Rule(r"hello", reply="Hi there")], latency=latency)
    ctx = llm.ChatContext.empty()
    ctx.add_message(role="user", content="hello")

    async def answer() -> str:
        words: list[str] = []
        async with scripted.chat(chat_ctx=ctx) as stream:
            async for chunk in stream:
                if chunk.delta is not None and chunk.delta.content:
                    words.append(chunk.delta.content)
        return "".join(words)

    assert asyncio.run(answer()) == "Hi there"
    assert latency.waits == 1
    with pytest.raises(ValueError, match=r"^ScriptedLLM\(latency=\.\.\.\)"):
        ScriptedLLM([], latency=(1.0, 0.5))


def test_the_pipecat_scripted_llm_takes_a_latency() -> None:
    pytest.importorskip("pipecat", reason="needs the pipecat extra")
    from pytest_agent_eval.adapters.pipecat import ScriptedLLMService

    service = ScriptedLLMService([], latency=(0.3, 0.9))
    assert service.latency is not None and service.latency.p95_s == 0.9
    with pytest.raises(ValueError, match=r"^ScriptedLLMService\(latency=\.\.\.\)"):
        ScriptedLLMService([], latency="slow")  # type: ignore[arg-type]
