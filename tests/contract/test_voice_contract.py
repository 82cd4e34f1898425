"""The voice adapter contract (issue 33): one corpus of behaviours run through every voice
adapter available in process, asserting the same record shapes, the same outcome classes for
the same behaviour, and the same timeline event kinds (less what an adapter declares
unobserved).

An adapter joins by adding one entry to `ADAPTERS`: a function that runs a behaviour (one of
`BEHAVIOURS`) on real components and returns its replies. Not joined yet: LiveKit realtime
(its scripted model's corpus speaks other phrases) and room mode (needs a livekit-server);
the corpus has no handoff, memory, silent-agent, crash, split-fixture or audio-condition
behaviour yet.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parents[1]
for folder in ("livekit", "pipecat"):
    if str(TESTS / folder) not in sys.path:
        sys.path.insert(0, str(TESTS / folder))

pytestmark = pytest.mark.voice

from pytest_agent_eval.models import AgentReply, Timeline, Turn  # noqa: E402

BEHAVIOURS = ("tool", "slow_tool", "failing_tool")
"""What the agent does in the behaviour's (only, or checked) turn."""

Run = Callable[[str, Path], list[AgentReply]]


def _livekit(behaviour: str, folder: Path) -> list[AgentReply]:
    pytest.importorskip("livekit.agents", reason="needs the livekit extra")
    from corpus_agents import PHRASES, SCENARIOS, synthesize
    from livekit_support import converse_greeted, run, transcript

    from pytest_agent_eval.adapters.livekit import LiveKitAdapter

    scenario_id, keys = {
        "tool": ("tools_that_await", ["order"]),
        "slow_tool": ("tools_that_await", ["order", "warehouse"]),
        "failing_tool": ("tool_that_raises", ["dessert"]),
    }[behaviour]
    audio = synthesize(folder)
    scenario = next(s for s in SCENARIOS if s.id == scenario_id)
    script = transcript(*[Turn(user=PHRASES[k], audio=audio[k]) for k in keys], id=scenario_id)
    adapter = LiveKitAdapter(scenario.factory(), tail_silence_s=0.7)
    _, replies = run(converse_greeted(adapter, script))
    return list(replies)


def _pipecat(behaviour: str, folder: Path) -> list[AgentReply]:
    pytest.importorskip("pipecat", reason="needs the pipecat extra")
    from corpus_bots import SCENARIOS
    from pipecat_support import PHRASES, converse, run, synthesize_phrases, transcript

    from pytest_agent_eval.adapters.pipecat import PipecatAdapter

    scenario_id, keys = {
        "tool": ("functions_that_await", ["weather"]),
        "slow_tool": ("functions_that_await", ["weather", "forecast"]),
        "failing_tool": ("function_that_raises", ["dessert"]),
    }[behaviour]
    audio = synthesize_phrases(folder)
    scenario = next(s for s in SCENARIOS if s.id == scenario_id)
    script = transcript(*[Turn(user=PHRASES[k], audio=audio[k]) for k in keys], id=scenario_id)
    _, replies = run(converse(PipecatAdapter(scenario.bot), script))
    return list(replies)


ADAPTERS: dict[str, Run] = {"livekit": _livekit, "pipecat": _pipecat}

EXPECTED_KINDS = {"stream", "vad_speech", "user_speech", "end_of_turn", "agent_speech"}
"""What every audio turn of the corpus has: the user spoke, the agent took the turn and
answered."""


def shape(reply: AgentReply) -> dict[str, Any]:
    """What must be alike across adapters for one behaviour (no timings, no wording)."""
    return {
        "replied": bool(reply.reply),
        "heard": reply.heard is not None,
        "latency": reply.latency_s is not None,
        "outcomes": [c.outcome for c in reply.tool_calls],
        "timeline": reply.timeline is not None,
        # The framework's own key (``livekit``, ``pipecat``) aside.
        "metadata": sorted(k for k in reply.metadata if k not in ("livekit", "pipecat")),
    }


def check_timeline(reply: AgentReply) -> Timeline:
    timeline = reply.timeline
    assert timeline is not None
    assert timeline.clock in ("virtual", "real")
    seen = set(timeline.kinds)
    wanted = (EXPECTED_KINDS | ({"tool_call"} if reply.tool_calls else set())) - set(
        timeline.unobserved
    )
    assert wanted <= seen, f"missing {wanted - seen} in {timeline}"
    assert not seen & set(timeline.unobserved), "an unobserved kind was drawn"
    starts = [e.t_start for e in timeline.events]
    assert starts == sorted(starts)
    (end_of_turn, *_) = timeline.of("end_of_turn")
    # The agent took the turn after hearing speech, and answered after taking it.
    assert timeline.of("vad_speech")[0].t_start <= end_of_turn.t_start
    assert all(e.t_start >= end_of_turn.t_start for e in timeline.of("tool_call"))
    assert timeline.of("agent_speech")[-1].t_start >= end_of_turn.t_start
    names = [e.detail.get("name") for e in timeline.of("tool_call")]
    assert names == [c.name for c in reply.tool_calls]
    for event, call in zip(timeline.of("tool_call"), reply.tool_calls, strict=True):
        assert (event.detail.get("status") == "error") is call.is_error, (event, call)
        assert event.t_end is not None
    return timeline


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Any]:
    """Each (adapter, behaviour) run once: its replies, or why it could not run."""
    return {}


def _replies(
    outcomes: dict[tuple[str, str], Any],
    adapter: str,
    behaviour: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> list[AgentReply]:
    key = (adapter, behaviour)
    if key not in outcomes:
        outcomes[key] = ADAPTERS[adapter](behaviour, tmp_path_factory.mktemp(adapter))
    return outcomes[key]  # type: ignore[no-any-return]


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_every_audio_turn_has_the_timeline_kinds(
    adapter: str,
    behaviour: str,
    outcomes: dict[tuple[str, str], Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    replies = _replies(outcomes, adapter, behaviour, tmp_path_factory)
    for reply in replies:
        check_timeline(reply)
    if behaviour == "slow_tool":
        # The slow tool is drawn as long as it ran: the agent's answer waited for it.
        fast, slow = (r.timeline for r in replies)
        assert fast is not None and slow is not None
        assert slow.of("tool_call")[0].t_end - slow.of("tool_call")[0].t_start > (  # type: ignore[operator]
            fast.of("tool_call")[0].t_end - fast.of("tool_call")[0].t_start  # type: ignore[operator]
        )


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_the_same_behaviour_gives_the_same_record_shape(
    behaviour: str,
    outcomes: dict[tuple[str, str], Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    shapes = {
        adapter: [shape(r) for r in _replies(outcomes, adapter, behaviour, tmp_path_factory)]
        for adapter in sorted(ADAPTERS)
    }
    first, *others = shapes
    for other in others:
        assert shapes[other] == shapes[first], (first, other)
