"""``transferred_to`` in YAML, on the real loader and runner: the short and long forms load, an
empty destination is refused naming file, line and field, and an adapter that cannot see
transfers makes the check error, never pass."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.errors import TranscriptError
from pytest_agent_eval.models import Transcript
from pytest_agent_eval.models._keypad import TransferExpect


def _load(value: str) -> Transcript:
    text = f"id: t\nturns:\n  - user: The pharmacist, please.\n    expect:\n      transferred_to: {value}\n"
    return load_transcript_text(text, path=Path("transfer.yaml"))


def test_the_short_and_long_forms_load() -> None:
    assert _load('"tel:+15550111"').turns[0].expect.transferred_to == TransferExpect(
        "tel:+15550111"
    )
    long = _load('{to: "sip:desk@example.test", kind: warm}').turns[0].expect.transferred_to
    assert long == TransferExpect("sip:desk@example.test", kind="warm")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            '""',
            r"transfer\.yaml:5.*turns\[0\]\.expect\.transferred_to\.to: give where the call goes",
        ),
        ("{to: tel, kind: hot}", r"transfer\.yaml:5.*kind"),
    ],
)
def test_a_transfer_without_a_destination_is_refused(value: str, message: str) -> None:
    with pytest.raises(TranscriptError, match=message):
        _load(value)


def test_a_number_matches_its_tel_uri() -> None:
    expect = TransferExpect("+15550111")
    assert expect.matches("tel:+15550111") and expect.matches("+15550111")
    assert not expect.matches("tel:+15550112")


def test_an_adapter_that_cannot_see_transfers_errors() -> None:
    def agent(history: object) -> str:
        return "Transferring you."

    result = asyncio.run(run_transcript(_load('"tel:+15550111"'), agent))
    (check,) = result.runs[0].turns[0].evaluations
    assert check.errored and "does not see SIP transfers" in check.reasoning
    assert result.runs[0].verdict == "error"
