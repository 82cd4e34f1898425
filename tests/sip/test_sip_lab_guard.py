"""SIP tests skip by hand on a machine that cannot host a SIP lab, and fail in CI instead."""

from __future__ import annotations

from pathlib import Path

import pytest
from sip_lab import REQUIRE_ENV, SIP_BIN_ENV, require_sip_labs


def test_without_the_sip_service_sip_tests_skip_saying_how_to_build_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(SIP_BIN_ENV, str(tmp_path / "no-such-sip-service"))
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_sip_labs()
    reason = str(skipped.value)
    # Without root or livekit-server the reason is theirs; with them, the SIP service's build.
    assert (
        "need root" in reason
        or "livekit-server" in reason
        or ("build_sip_service.sh" in reason and "libopus-dev" in reason)
    ), reason


def test_in_ci_the_skip_is_a_failure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(SIP_BIN_ENV, str(tmp_path / "no-such-sip-service"))
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match=f"{REQUIRE_ENV} is set"):
        require_sip_labs()
