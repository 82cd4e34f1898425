"""A capacity run refuses a transcript with a far end (``far_end:``): it would send the
transcript's turns and never the far end's, measuring a call that is not the one written."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agent_eval._capacity._agent import load_plan_transcripts
from pytest_agent_eval._config import Settings
from pytest_agent_eval.errors import ConfigError


def test_a_far_end_transcript_is_refused_by_capacity_naming_its_file(tmp_path: Path) -> None:
    call = tmp_path / "call.yaml"
    call.write_text('id: confirm\nfar_end: human\nturns:\n  - user: "Yes."\n')
    with pytest.raises(ConfigError, match=r"call\.yaml: transcript 'confirm' has a far end"):
        load_plan_transcripts([call], Settings(rootdir=tmp_path))
