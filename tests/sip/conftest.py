"""Fixtures of the SIP tests: a lab with LiveKit's SIP service on loopback, its agent worker,
and the caller's fixture.

SIP tests skip, saying why, on a machine that cannot host a SIP lab (no root, no livekit-server,
no SIP service build, no redis-server, no pjsua2); `.ci/run` sets
AGENT_EVAL_REQUIRE_SIP_TESTS=1, which turns that skip into a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Required (CI): a missing livekit fails collection instead of skipping.
if not os.environ.get("AGENT_EVAL_REQUIRE_SIP_TESTS"):
    pytest.importorskip("livekit.agents", reason="needs the livekit extra")

from sip_lab import CALLER_SAYS, SIP_WORKER, SipLab, require_sip_labs

from pytest_agent_eval.models import Transcript, Turn
from pytest_agent_eval.synthesize import ensure_fixtures


@pytest.fixture
def sip_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SipLab]:
    """A SIP lab per call test; checked for leaks when it stops. Not one per process: in one
    lab the second call's RTP never reached LiveKit's SIP service v1.8.0, which ended that call
    for a media timeout (whichever call came second, inbound or outbound); not understood yet."""
    require_sip_labs()
    with SipLab(tmp_path_factory.mktemp("sip-lab")) as lab:
        yield lab
        leaks = lab.leaks()
    print(f"\nSIP lab timings: {lab.timings}")
    assert leaks == [], f"packets left the lab's loopback namespace: {leaks}"


@pytest.fixture
def agent_reports(sip_lab: SipLab) -> Path:
    """Where the SIP agent writes what it saw, one file per call's room."""
    reports = sip_lab.workdir / "agent-reports"
    reports.mkdir()
    sip_lab.start_worker("sip-worker", SIP_WORKER, SIP_AGENT_REPORTS=str(reports))
    return reports


@pytest.fixture(scope="session")
def caller_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The caller's words as a WAV, synthesized offline."""
    wav = tmp_path_factory.mktemp("caller") / "vegan.wav"
    transcript = Transcript(id="caller", turns=[Turn(user=CALLER_SAYS, audio=wav)])
    ensure_fixtures([transcript], jobs=1).raise_for_failures()
    return wav
