"""Parts of room mode that need no server: the worker-file advice, the shutdown log filter, the
VAD settings the helper reports, and the "heard the whole fixture" rule."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest

from pytest_agent_eval.adapters.livekit._compat import vad_settings
from pytest_agent_eval.adapters.livekit.room._hearing import HEARD_TOLERANCE_S, still_to_hear
from pytest_agent_eval.adapters.livekit.room._logs import RoomShutdownLogs, quiet_room_shutdown
from pytest_agent_eval.adapters.livekit.room._workers import find_worker_files, no_worker_advice

WORKER = """\
from livekit.agents import AgentServer, cli

AGENT_NAME: str = "booking-agent"
server = AgentServer()


@server.rtc_session(agent_name=AGENT_NAME)
async def entrypoint(ctx): ...
"""


def _project(tmp_path: Path) -> Path:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "booking.py").write_text(WORKER)
    (tmp_path / "agents" / "support.py").write_text(
        '@server.rtc_session(agent_name="support-desk")\nasync def entrypoint(ctx): ...\n'
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "conftest.py").write_text("import pytest\n")
    # Never read: a virtualenv's copy of LiveKit's own examples.
    venv = tmp_path / ".venv" / "lib"
    venv.mkdir(parents=True)
    (venv / "example.py").write_text('@server.rtc_session(agent_name="venv-agent")\n')
    return tmp_path


def test_worker_files_and_the_names_they_register(tmp_path: Path) -> None:
    found = {w.path.name: w.names for w in find_worker_files(_project(tmp_path))}
    assert found == {"booking.py": ("booking-agent",), "support.py": ("support-desk",)}


def test_a_typo_in_the_agent_name_reads_as_one(tmp_path: Path) -> None:
    advice = no_worker_advice("bokking-agent", _project(tmp_path))
    assert "No worker file here registers 'bokking-agent'" in advice
    assert "agents/booking.py registers 'booking-agent'" in advice
    assert "Did you mean 'booking-agent'?" in advice


def test_the_file_that_registers_the_name_is_the_one_to_start(tmp_path: Path) -> None:
    advice = no_worker_advice("support-desk", _project(tmp_path))
    assert advice.startswith("agents/support.py registers 'support-desk': start it")
    assert "`python agents/support.py start`" in advice


def test_without_worker_files_the_advice_is_generic(tmp_path: Path) -> None:
    advice = no_worker_advice("booking-agent", tmp_path)
    assert "python <your worker file> start" in advice
    assert "agent_name='booking-agent'" in advice


def _rtc_error(message: str) -> None:
    # What livekit-rtc's log bridge sends (livekit/rtc/_ffi_client.py).
    logging.getLogger("livekit").error(
        "%s:%s:%s - %s", "livekit::rtc_engine::rtc_session", 704, "rtc_session", message
    )


def test_the_data_channel_shutdown_error_is_demoted_only_while_a_room_is_open(
    caplog: pytest.LogCaptureFixture,
) -> None:
    closed = "publisher data channel '_reliable' closed unexpectedly"
    cut_short = (
        'failed to negotiate the publisher: Rtc(RtcError { error_type: InvalidState, message: "'
        'Failed to set local offer sdp: Called in wrong state: closed" })'
    )
    with caplog.at_level(logging.WARNING):
        with quiet_room_shutdown(linger_s=0.05):
            _rtc_error(closed)
            _rtc_error(cut_short)
            _rtc_error("could not connect: timed out")  # any other error stays one
            scope = RoomShutdownLogs.installed()
        # livekit-ffi's batch sent after the disconnect returned: still the room's end.
        _rtc_error(cut_short)
        assert scope is not None and scope.removed.wait(10)
        _rtc_error(closed)  # no room of ours open, nor just closed: not ours to quiet
    messages = [(r.levelname, r.getMessage().split(" - ", 1)[1]) for r in caplog.records]
    assert messages == [("ERROR", "could not connect: timed out"), ("ERROR", closed)]
    assert RoomShutdownLogs.installed() is None


def test_the_filter_stays_while_another_room_is_open() -> None:
    with quiet_room_shutdown(linger_s=0):
        with quiet_room_shutdown(linger_s=0):
            pass
        assert RoomShutdownLogs.installed() is not None
    assert RoomShutdownLogs.installed() is None


def test_a_room_opened_while_the_filter_lingers_keeps_it() -> None:
    with quiet_room_shutdown(linger_s=0.5):
        first = RoomShutdownLogs.installed()
    with quiet_room_shutdown(linger_s=0):
        # The lingering filter was taken over and its removal called off: it is still there
        # past the time it was due to go.
        assert RoomShutdownLogs.installed() is first is not None
        assert not first.removed.wait(1.0)
    assert first.removed.is_set() and RoomShutdownLogs.installed() is None


def test_the_vad_settings_rebuild_the_same_vad() -> None:
    silero = pytest.importorskip("livekit.plugins.silero")
    vad = silero.VAD.load(min_silence_duration=0.8, activation_threshold=0.6)
    settings = vad_settings(vad)
    assert settings is not None and settings["min_silence_duration"] == 0.8
    assert silero.VAD.load(**settings)._opts == vad._opts


def test_heard_to_the_end_counts_where_the_speech_ends_not_the_pieces() -> None:
    # A fixture whose speech starts 0.5 s in and whose last segment the VAD ends at 3.5 s;
    # the agent's timeline is 9.5 s ahead (its first speech starts at 10.0).
    assert still_to_hear([], 0.5, 3.5) == math.inf
    assert still_to_hear([(10.0, 13.0)], 0.5, 3.5) is None  # one segment, as scanned
    assert still_to_hear([(10.0, 11.6), (12.0, 13.02)], 0.5, 3.5) is None  # two, either way
    # Cut in two by a gap: the first piece's end is not the end of the speech...
    assert still_to_hear([(10.0, 12.0)], 0.5, 3.5) == pytest.approx(1.0)
    # ... and the second, pushed later by the gap, is.
    assert still_to_hear([(10.0, 12.0), (12.8, 14.3)], 0.5, 3.5) is None
    # A little early is the measuring (codec, jitter buffer); more is speech still to come.
    assert still_to_hear([(10.0, 13.0 - HEARD_TOLERANCE_S)], 0.5, 3.5) is None
    assert still_to_hear([(10.0, 12.7)], 0.5, 3.5) == pytest.approx(0.3)


def test_a_room_turn_timeline_puts_the_callers_stream_on_the_agents_axis() -> None:
    from pytest_agent_eval._serialize import to_json
    from pytest_agent_eval.adapters.livekit.room._observer import RoomTurnLog
    from pytest_agent_eval.adapters.livekit.room._timeline import room_timeline
    from pytest_agent_eval.models import Timeline, TimelineEvent

    # The helper's record, timed from when it took the turn's begin request (its zero).
    recorded = Timeline(
        events=[
            TimelineEvent(kind="vad_speech", t_start=1.1, t_end=2.4),
            TimelineEvent(kind="end_of_turn", t_start=2.9),
            TimelineEvent(kind="agent_speech", t_start=3.2, t_end=4.0, detail={"text": "Hi."}),
        ],
        clock="real",
        unobserved=["user_speech"],
    )
    # The caller took the request's round trip (0.008 s) for the agent's zero: 100.204.
    log = RoomTurnLog(
        began_at=99.0, stream=(100.9, 102.6), agent_zero=100.204, agent_zero_error_s=0.004
    )
    timeline = room_timeline(to_json(recorded), log)
    assert timeline is not None and timeline.clock == "real"
    assert timeline.unobserved == ["user_speech"]
    assert [(e.kind, e.t_start, e.t_end) for e in timeline.events] == [
        ("stream", 0.696, 2.396),
        ("vad_speech", 1.1, 2.4),
        ("end_of_turn", 2.9, None),
        ("agent_speech", 3.2, 4.0),
    ]
    assert timeline.of("agent_speech")[0].detail == {"text": "Hi."}
    # A text turn: the helper records no timeline, and none is drawn.
    assert room_timeline(None, log) is None
