"""What a missing-extra message tells the user to run (`errors.install_command`): the extra
from the folder the package was installed from, since by name pip would fetch the earlier
release from the package index in place of this one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_agent_eval.errors import MissingExtraError, install_command, require_extra


def _installed(tmp_path: Path, direct_url: dict[str, object] | None) -> Path:
    """A site folder holding this package's metadata as pip writes it."""
    site = tmp_path / "site"
    info = site / "pytest_agent_eval-0.4.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: pytest-agent-eval\nVersion: 0.4.0\n"
    )
    recorded = info / "direct_url.json"
    recorded.unlink(missing_ok=True)
    if direct_url is not None:
        recorded.write_text(json.dumps(direct_url))
    return site


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    def put(direct_url: dict[str, object] | None) -> None:
        monkeypatch.setattr(sys, "path", [str(_installed(tmp_path, direct_url)), *sys.path])

    return put


def test_an_editable_clone_is_named_with_e(install, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    clone = tmp_path / "my clone"
    clone.mkdir()
    install({"url": clone.as_uri(), "dir_info": {"editable": True}})
    assert install_command("livekit") == f"pip install -e '{clone}[livekit]'"


def test_a_folder_install_names_the_folder(install, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    install({"url": tmp_path.as_uri(), "dir_info": {}})
    assert install_command("openai") == f"pip install '{tmp_path}[openai]'"
    with pytest.raises(MissingExtraError) as info:
        require_extra("no_such_module_x", extra="openai", feature="Thing")
    assert str(info.value) == (
        f"Thing needs no_such_module_x, which is not installed: pip install '{tmp_path}[openai]'"
    )


def test_a_folder_that_is_gone_points_at_a_clone(install, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    install({"url": (tmp_path / "gone").as_uri(), "dir_info": {}})
    assert install_command("voice") == (
        "pip install './pytest-agent-eval[voice]' (from a clone of the source)"
    )


def test_an_index_install_is_named_by_name(install) -> None:  # type: ignore[no-untyped-def]
    install(None)
    assert install_command("pipecat") == "pip install 'pytest-agent-eval[pipecat]'"
    install({"url": "https://example.invalid/p.whl", "archive_info": {}})
    assert install_command("pipecat") == "pip install 'pytest-agent-eval[pipecat]'"
