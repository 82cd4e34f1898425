"""The ``turn_taking:`` gate through pytest itself, against a project's own LiveKit agent (its
session factory, Silero VAD, endpointing and its ``on_user_turn_completed``): a configuration
that takes over mid-sentence pauses fails the pause budget; one that waits passes it; and
``agent-eval compare`` on the two configurations' results files names the latency that moved."""

from __future__ import annotations

import json

import pytest

CONFTEST = """
import os

import pytest
from livekit.agents import Agent, AgentSession
from livekit.plugins import silero

from pytest_agent_eval.adapters.livekit import LiveKitAdapter

# TT_DEAF: a VAD that never hears speech (it needs a minute of it first).
VAD = silero.VAD.load(min_speech_duration=60.0 if os.environ.get("TT_DEAF") else 0.05)
DELAY = float(os.environ["TT_MIN_DELAY"])
SEEN = []


class Booking(Agent):
    def __init__(self):
        super().__init__(instructions="You book tables.")

    async def on_user_turn_completed(self, turn_ctx, new_message):
        SEEN.append(new_message.text_content)


def make_session():
    session = AgentSession(
        vad=VAD,
        turn_handling={
            "turn_detection": "vad",
            "endpointing": {"min_delay": DELAY, "max_delay": max(DELAY, 3.0)},
            "interruption": {"mode": "vad"},
        },
        user_away_timeout=None,
    )
    return session, Booking()


@pytest.fixture
def llm_eval_agent():
    return LiveKitAdapter(make_session)


def pytest_sessionfinish(session):
    with open("heard.json", "w") as f:
        import json
        json.dump(SEEN, f)
"""

# The pack's first voice speaks four of the twelve pauses: 0.3, 0.9, 1.5 and 1.9 s.
TURNS = """\
id: turns
tags: [gate:turns]
turn_taking:
  categories: [pause]
  voices: 1
  budgets:
    pause_takeover_rate_max: 0.0
    unanswered_rate_max: 0.0
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    pytester.makeconftest(CONFTEST)
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "turns.yaml").write_text(TURNS, encoding="utf-8")
    return pytester


def _run(
    project: pytest.Pytester, delay: float, *, deaf: bool = False
) -> tuple[pytest.RunResult, dict]:  # type: ignore[type-arg]
    project._monkeypatch.setenv("TT_MIN_DELAY", str(delay))  # type: ignore[attr-defined]
    project._monkeypatch.setenv("TT_DEAF", "1" if deaf else "")  # type: ignore[attr-defined]
    result = project.runpytest_subprocess(
        "--agent-eval-live", "-p", "no:cacheprovider", "--agent-eval-results=r.json"
    )
    document = json.loads((project.path / "r.json").read_text(encoding="utf-8"))
    return result, document


def test_a_configuration_that_takes_over_pauses_fails_and_one_that_waits_passes(
    project: pytest.Pytester,
) -> None:
    fast, fast_doc = _run(project, 0.5)
    fast.assert_outcomes(failed=1)
    fast.stdout.fnmatch_lines(
        [
            "*pause_takeover_rate = *budget <= 0: over budget*",
            "*turn-taking conformance*",
            "eval*metric*value*95% interval*n*budget*verdict",
            "turns?pause?*pause_takeover_rate*/4*<= 0*FAIL",
        ]
    )
    (entry,) = fast_doc["evals"]
    assert entry["verdict"] == "failed"
    took = entry["turn_taking"]
    assert took["category"] == "pause" and took["framework"] == "livekit"
    assert took["clock"] == "virtual" and took["stimuli"] == 4
    rate = next(m for m in took["metrics"] if m["name"] == "pause_takeover_rate")
    assert rate["hits"] >= 1 and rate["count"] == 4
    # The agent's own on_user_turn_completed ran: it heard the caller's words.
    heard = json.loads((project.path / "heard.json").read_text(encoding="utf-8"))
    assert any("four people on Friday evening" in h or "please" in h for h in heard), heard
    # Each pause taken over is in the record with what went wrong, its sounds and its clip.
    assert took["missed"] == rate["hits"] == len(took["misses"])
    for miss in took["misses"]:
        assert miss["what"].startswith("took the turn at "), miss
        assert miss["agent_turn_start_s"] < miss["caller_end_s"]
        assert [s["kind"] for s in miss["caller"]].count("pause") == 1
        assert miss["audio"].startswith(".agent_eval_cache/turn_taking/seed-0/pause-")
        assert (project.path / miss["audio"]).is_file()

    slow, slow_doc = _run(project, 2.5)
    slow.assert_outcomes(passed=1)
    (entry,) = slow_doc["evals"]
    assert entry["verdict"] == "passed"
    assert entry["turn_taking"]["missed"] == 0 and entry["turn_taking"]["misses"] == []
    rate = next(m for m in entry["turn_taking"]["metrics"] if m["name"] == "pause_takeover_rate")
    assert (rate["hits"], rate["count"]) == (0, 4)


def test_an_agent_whose_vad_hears_nothing_is_an_error_not_a_pass(project: pytest.Pytester) -> None:
    # Deaf, the agent would never take over a pause: pause_takeover_rate_max: 0.0 would pass.
    result, document = _run(project, 0.5, deaf=True)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*never heard the caller speak*silero.VAD.load()*"])
    (entry,) = document["evals"]
    assert entry["verdict"] == "error"
    assert entry["turn_taking"]["budgets"] == []


# The pack's first two voices speak six short answers: past the five observations a change
# needs (fewer are "too few samples"), the end-of-turn latencies' intervals separate between
# 0.5 and 2.5 s endpointing.
SHORT_ANSWERS = """\
id: turns
turn_taking:
  categories: [short_answer]
  voices: 2
  budgets:
    end_of_turn_latency_ms_p50_max: 5000
"""


def test_compare_names_the_latency_two_endpointing_delays_separate(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_agent_eval.__main__ import main

    (project.path / "evals" / "turns.yaml").write_text(SHORT_ANSWERS, encoding="utf-8")
    _run(project, 0.5)[0].assert_outcomes(passed=1)
    (project.path / "r.json").rename(project.path / "base.json")
    _run(project, 2.5)[0].assert_outcomes(passed=1)
    base, new, page = (str(project.path / n) for n in ("base.json", "r.json", "c.md"))
    capsys.readouterr()

    # Both items passed their budget: only the turn-taking comparison sees the change.
    assert main(["compare", base, new, "--markdown", page, "--fail-on-regression"]) == 1
    captured = capsys.readouterr()
    assert "0 regressed, 0 improved, 1 unchanged within noise" in captured.out
    for percentile in ("p50", "p95"):
        name = f"end_of_turn_latency_ms_{percentile}"
        [row] = [line for line in captured.out.splitlines() if name in line]
        assert row.split()[-2:] == ["separate", "regressed"], row
    named = captured.err.splitlines()
    assert [line.split(":")[1] for line in named] == [" turn-taking regressed"] * 2
    assert "turns[short_answer] end_of_turn_latency_ms_p50: " in named[0]
    assert "turns[short_answer] end_of_turn_latency_ms_p95: " in named[1]
    assert all(line.endswith("higher is worse") for line in named)
    [unanswered] = [line for line in captured.out.splitlines() if "unanswered_rate" in line]
    assert unanswered.split()[2:4] == ["0.00", "0.00"]  # none unanswered, either time
    assert unanswered.split()[-2:] == ["within", "noise"]
    assert "| separate | regressed |" in (project.path / "c.md").read_text(encoding="utf-8")
    # The other way round, the shorter delay is an improvement: nothing fails.
    assert main(["compare", new, base, "--fail-on-regression"]) == 0


def test_lines_and_levels_play_each_stimulus_as_the_agent_would_hear_it(
    project: pytest.Pytester,
) -> None:
    """``lines: [clean, phone]`` and ``levels_db: [0, -12]``: each of the four pauses is played
    four times through the agent's own VAD and endpointing, each play a stimulus of its own in
    the metrics, a miss naming the line and level it was heard at, with the audio it heard."""
    turns = TURNS.replace("  voices: 1\n", "  voices: 1\n  lines: [clean, phone]\n")
    turns = turns.replace("  voices: 1\n", "  voices: 1\n  levels_db: [0, -12]\n")
    (project.path / "evals" / "turns.yaml").write_text(turns, encoding="utf-8")
    result, document = _run(project, 0.5)
    result.assert_outcomes(failed=1)
    (entry,) = document["evals"]
    took = entry["turn_taking"]
    assert took["stimuli"] == 16
    assert took["lines"] == ["clean", "phone"] and took["levels_db"] == [0.0, -12.0]
    rate = next(m for m in took["metrics"] if m["name"] == "pause_takeover_rate")
    assert rate["count"] == 16 and rate["hits"] == took["missed"] >= 1
    heard_at = {m["stimulus_id"].partition("@")[2] for m in took["misses"]}
    # A 0.5 s endpointing delay takes over the 0.9 and 1.3 s pauses at any line and level
    # the VAD hears, so misses come from conditioned plays too.
    assert heard_at - {""}, took["misses"]
    for miss in took["misses"]:
        if "@" in miss["stimulus_id"]:
            assert miss["audio"] == (
                f".agent_eval_cache/turn_taking/seed-0/lines/{miss['stimulus_id']}.wav"
            )
        assert (project.path / miss["audio"]).is_file()
