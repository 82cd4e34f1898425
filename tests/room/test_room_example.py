"""The room example, run by pytest as a user would, against its unchanged worker file."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from room_lab import RoomLab


def test_the_example_passes_in_room_mode(
    lab: RoomLab,
    booking_worker: str,
    example_copy: Path,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shutil.copytree(example_copy, pytester.path, dirs_exist_ok=True)
    for name in ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET"):
        monkeypatch.setenv(name, lab.env()[name])
    result = pytester.run(
        *lab.command(
            [
                *(sys.executable, "-m", "pytest", "--agent-eval-live", "-p", "no:cacheprovider"),
                # Issue 32: nothing the package opens outlives the session, so a project that
                # turns warnings into errors (a common CI setting) passes too.
                *("-W", "error"),
                # One run of each transcript keeps CI short (run_demo.sh does the example's
                # three); it also keeps real-time calls from running at once on 2 cores beside
                # the rest of the suite, which starves the agent's Whisper and VAD.
                *("--agent-eval-runs", "1"),
                *("--agent-eval-results", "results.json", "--agent-eval-html", "report.html"),
            ]
        ),
        timeout=600,
    )
    assert result.ret == 0, "\n".join(result.outlines[-60:])
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*booking_remembered*1*1*PASS*", "*2/2 evals passed*"])
    # Every turn's reply, where every voice adapter saves it: <dir>/<id>/run<N>-turn<M>-reply.wav
    saved = sorted((pytester.path / ".agent_eval_cache" / "reply-audio").glob("*/*-reply.wav"))
    assert len(saved) == 3 + 1  # every turn
    # Every audio turn's timeline is in the results file, on the real clock, with what room
    # mode observes (the caller's stream, the agent's VAD, end of turn and speech); a text
    # turn has none. The HTML report draws them as it draws every voice adapter's.
    results = json.loads((pytester.path / "results.json").read_text())
    turns = [t for e in results["evals"] for run in e["captures"] for t in run["turns"]]
    assert len(turns) == 3 + 1
    drawn = [t["timeline"] for t in turns if t["timeline"] is not None]
    assert len(drawn) == 2 + 1  # the audio turns
    for timeline in drawn:
        assert timeline["clock"] == "real" and timeline["unobserved"] == ["user_speech"]
        kinds = {e["kind"] for e in timeline["events"]}
        assert {"stream", "vad_speech", "end_of_turn", "agent_speech"} <= kinds, timeline
    html = (pytester.path / "report.html").read_text()
    assert html.count('<figure class="timeline-figure">') == len(drawn)
    assert 'data-kind="stream"' in html and 'data-kind="tool_call"' in html
