"""Room tests skip by hand on a machine that cannot host a lab, and fail in CI instead."""

from __future__ import annotations

from pathlib import Path

import pytest
from room_lab import REQUIRE_ENV, SERVER_BIN_ENV, require_labs


def test_without_the_server_room_tests_skip_saying_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(SERVER_BIN_ENV, str(tmp_path / "no-such-server"))
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_labs()
    reason = str(skipped.value)
    # Without root the reason is root; with it, the server and how to build it.
    assert "need root" in reason or "go install github.com/livekit/livekit-server" in reason


def test_in_ci_the_skip_is_a_failure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(SERVER_BIN_ENV, str(tmp_path / "no-such-server"))
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match=f"{REQUIRE_ENV} is set"):
        require_labs()
