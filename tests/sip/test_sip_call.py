"""Phone calls over real SIP on loopback: a PJSIP user agent dials LiveKit's SIP service,
which puts the call in a room with the agent (the dispatch rule); and the agent's backend dials
out with create_sip_participant, which the PJSIP phone answers. G.711 RTP both ways."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sip_lab import (
    AGENT_NAME,
    CALLER_NUMBER,
    CALLER_SAYS,
    PHONE_PORT,
    SIP_PORT,
    TRUNK_NUMBER,
    SipLab,
)

from pytest_agent_eval.voice._clip import read_wav
from pytest_agent_eval.voice._dtmf import detect_keys
from pytest_agent_eval.voice._whisper import transcribe

DIALER_WORKER = Path(__file__).resolve().parent / "dialer_worker.py"
"""tests/telephony's outbound agent as the lab's worker."""
SIP_KIND = 3
"""``rtc.ParticipantKind.PARTICIPANT_KIND_SIP``."""


def _cpu_s(pid: int) -> float:
    """User and system CPU seconds of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _agent_saw(reports: Path, caller_number: str) -> list[dict[str, Any]]:
    """The agent's report of the call from ``caller_number``."""
    for report in reports.glob("*.jsonl"):
        entries = [json.loads(line) for line in report.read_text().splitlines()]
        for entry in entries:
            if entry.get("attributes", {}).get("sip.phoneNumber") == caller_number:
                return entries
    raise AssertionError(
        f"no call from {caller_number} in the agent's reports: {list(reports.iterdir())}"
    )


def test_a_phone_call_reaches_the_agent_and_its_reply_comes_back(
    sip_lab: SipLab, agent_reports: Path, caller_fixture: Path, tmp_path: Path
) -> None:
    record = tmp_path / "caller-heard.wav"
    assert sip_lab.sip is not None
    sip_cpu_before = _cpu_s(sip_lab.sip.popen.pid)
    call = sip_lab.call(
        "place_call",
        caller_number=CALLER_NUMBER,
        dial=TRUNK_NUMBER,
        sip_port=SIP_PORT,
        say=str(caller_fixture),
        record=str(record),
        keys="4521#",
        codec="PCMU/8000",
    )
    sip_cpu = _cpu_s(sip_lab.sip.popen.pid) - sip_cpu_before
    print(f"\ncall: {call}; the SIP service's CPU for the call: {sip_cpu:.2f} s")
    assert call["codec"] == "PCMU/8000"

    saw = _agent_saw(agent_reports, CALLER_NUMBER)
    caller = next(entry for entry in saw if "participant" in entry)
    # The agent sees a SIP participant with the caller's number and the number dialled.
    assert caller["kind"] == SIP_KIND
    assert caller["participant"] == f"sip_{CALLER_NUMBER}"
    assert caller["attributes"]["sip.phoneNumber"] == CALLER_NUMBER
    assert caller["attributes"]["sip.trunkPhoneNumber"] == TRUNK_NUMBER
    # It heard the caller's fixture (its Whisper STT, over G.711 and Opus) and replied.
    heard = " ".join(entry["heard"] for entry in saw if "heard" in entry)
    assert "vegan" in heard.lower(), f"the agent heard {heard!r}, not {CALLER_SAYS!r}"
    said = [entry["said"] for entry in saw if "said" in entry]
    assert any("risotto" in line for line in said), said
    # The keys pressed as RFC 4733 events reached the agent as its DTMF events, in order.
    assert "".join(entry["key"] for entry in saw if "key" in entry) == "4521#"

    # What came back over RTP: the agent's reply, and its echo of the keys both as RFC 4733
    # events and as tones in band (the SIP service's audio_dtmf).
    assert call["keys_heard"] == "4521#"
    heard_back = read_wav(record)
    assert "".join(key.key for key in detect_keys(heard_back)) == "4521#"
    assert "risotto" in transcribe(heard_back).lower()


def test_the_agent_s_outbound_call_is_answered_by_the_lab_s_phone(
    sip_lab: SipLab, agent_reports: Path, caller_fixture: Path, tmp_path: Path
) -> None:
    callee = "+15550177"
    record = tmp_path / "callee-heard.wav"
    with ThreadPoolExecutor(1) as pool:
        # The phone listens first; should the INVITE come before it, SIP over UDP resends it.
        answered = pool.submit(
            sip_lab.call,
            "answer_call",
            number=callee,
            listen_port=PHONE_PORT,
            say=str(caller_fixture),
            record=str(record),
        )
        dialled = sip_lab.call(
            "dial_out",
            agent_name=AGENT_NAME,
            room="outbound-call",
            number=callee,
            trunk_number=TRUNK_NUMBER,
            phone_port=PHONE_PORT,
        )
        call = answered.result()
    print(f"\noutbound call: {dialled}; the phone: {call}")
    assert dialled["identity"] == f"sip_{callee}"
    assert call["codec"] == "PCMU/8000"
    # The phone rang from the outbound trunk's number.
    assert f"sip:{TRUNK_NUMBER}@" in call["remote_uri"]
    saw = _agent_saw(agent_reports, callee)
    callee_seen = next(entry for entry in saw if "participant" in entry)
    # The attributes LiveKit's SIP service sets on an outbound call's callee: the ones the
    # in-process fake job gives an outbound agent's callee. (Imported here: the adapter's
    # package loads Silero, which collecting this folder must not.)
    from pytest_agent_eval.adapters.livekit.session._dial import callee_attributes

    attributes = callee_seen["attributes"]
    in_process = callee_attributes(
        number=callee, trunk_number=TRUNK_NUMBER, trunk_id="", call_id="SCL_x"
    )
    assert sorted(attributes) == sorted(in_process)
    assert attributes["sip.phoneNumber"] == callee
    assert attributes["sip.trunkPhoneNumber"] == TRUNK_NUMBER
    assert attributes["sip.callStatus"] == "active"
    assert callee_seen["kind"] == SIP_KIND
    assert callee_seen["participant"] == f"sip_{callee}"
    heard = " ".join(entry["heard"] for entry in saw if "heard" in entry)
    assert "vegan" in heard.lower(), f"the agent heard {heard!r}, not {CALLER_SAYS!r}"
    assert "risotto" in transcribe(read_wav(record)).lower()


def _refused(sip_lab: SipLab, *, callee: str, status: int) -> dict[str, Any]:
    """What ``create_sip_participant`` raised when the lab's phone answered ``status``."""
    with ThreadPoolExecutor(1) as pool:
        phone = pool.submit(
            sip_lab.call, "refuse_call", number=callee, listen_port=PHONE_PORT, status=status
        )
        raised = sip_lab.call(
            "dial_unanswered",
            room=f"refused-{status}",
            number=callee,
            trunk_number=TRUNK_NUMBER,
            phone_port=PHONE_PORT,
            ringing_timeout_s=3.0,
        )
        print(f"\nstatus {status}: the phone {phone.result()}; LiveKit raised {raised}")
    return raised


def test_a_busy_far_end_fails_create_sip_participant_with_486(sip_lab: SipLab) -> None:
    raised = _refused(sip_lab, callee="+15550178", status=486)
    # What the in-process fake job raises for far_end: busy (adapters/livekit/session/_dial.py).
    assert raised["class"] == "livekit.api.twirp_client.SipCallError"
    assert (raised["code"], raised["status"]) == ("resource_exhausted", 429)
    assert raised["message"] == "twirp error unknown: INVITE failed: sip status: 486: Busy Here"
    assert raised["metadata"]["sip_status_code"] == "486"
    assert raised["metadata"]["sip_status"] == "Busy Here"
    assert raised["str"] == "SIP call failed: 486 Busy Here (resource_exhausted)"


def test_a_far_end_that_is_unavailable_fails_create_sip_participant_with_480(
    sip_lab: SipLab,
) -> None:
    raised = _refused(sip_lab, callee="+15550180", status=480)
    assert raised["class"] == "livekit.api.twirp_client.SipCallError"
    assert raised["metadata"]["sip_status_code"] == "480"
    assert raised["metadata"]["sip_status"] == "Temporarily Unavailable"


def test_a_far_end_that_rings_out_fails_create_sip_participant_on_the_ringing_timeout(
    sip_lab: SipLab,
) -> None:
    raised = _refused(sip_lab, callee="+15550179", status=180)
    # What the in-process fake job raises for far_end: no_answer: no SIP status, a timeout.
    assert raised["class"] == "livekit.api.twirp_client.ServerError"
    assert (raised["code"], raised["status"]) == ("canceled", 408)
    assert raised["message"] == "twirp error unknown: sip request timed out"
    assert raised["metadata"] == {}


def test_the_dialler_agent_on_a_busy_line_hangs_up_with_the_reason_it_gets_in_process(
    sip_lab: SipLab,
) -> None:
    """tests/telephony's outbound agent, from LiveKit's docs, in a real job: its call to a busy
    phone fails, and its except-branch ends the job with the reason it gives in process
    (test_livekit_outbound.py: the same hang_up record)."""
    reports = sip_lab.workdir / "dialer-reports"
    reports.mkdir()
    trunk = sip_lab.call("outbound_trunk", phone_port=PHONE_PORT, trunk_number=TRUNK_NUMBER)
    worker = sip_lab.start_worker(
        "dialer-worker", DIALER_WORKER, SIP_AGENT_REPORTS=str(reports), DIALER_TRUNK_ID=trunk
    )
    with ThreadPoolExecutor(1) as pool:
        phone = pool.submit(
            sip_lab.call, "refuse_call", number="+15550177", listen_port=PHONE_PORT, status=486
        )
        sip_lab.call("dispatch", agent_name="dialer-agent", room="dialer-busy")
        assert phone.result()["last_status"] == 486
    worker.wait_for_line("dialer: shut down in dialer-busy", timeout_s=60.0)
    (entry,) = [
        json.loads(line) for line in (reports / "dialer-busy.jsonl").read_text().splitlines()
    ]
    assert entry == {
        "shutdown": "call failed: twirp error unknown: INVITE failed: sip status: 486: Busy Here"
    }
