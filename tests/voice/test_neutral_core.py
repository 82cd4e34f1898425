"""The voice core is framework-neutral: it imports and works with LiveKit and Pipecat blocked.

Both voice adapters build on `pytest_agent_eval.voice` (issue 23, issue 24 part 2), so nothing in
it may need either framework. The proof runs in a fresh interpreter whose imports of ``livekit``
and ``pipecat`` fail, imports every module of the package, and uses the pieces both adapters
share on a real fixture of the repository.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VOICE = ROOT / "src" / "pytest_agent_eval" / "voice"
FIXTURE = ROOT / "examples" / "voice-pipecat" / "evals" / "audio" / "menu.wav"

_BLOCK = textwrap.dedent(
    """
    import importlib.abc, sys

    class Blocked(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("livekit", "pipecat"):
                raise ImportError(f"{name} is blocked in this test")
            return None

    sys.meta_path.insert(0, Blocked())
    """
)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _BLOCK + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def _voice_modules() -> list[str]:
    names = []
    for path in sorted(VOICE.rglob("*.py")):
        parts = path.relative_to(VOICE.parent.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_the_blocker_blocks_the_frameworks() -> None:
    """The check could fail: under the blocker an adapter that needs LiveKit does not import."""
    out = _run("import pytest_agent_eval.adapters.livekit._audio\n")
    assert out.returncode != 0
    assert "livekit is blocked" in out.stderr


def test_every_voice_module_imports_without_livekit_or_pipecat() -> None:
    modules = _voice_modules()
    assert "pytest_agent_eval.voice._fixture_pcm" in modules
    assert len(modules) >= 25
    out = _run(
        f"""
        import importlib, sys
        for name in {modules!r}:
            importlib.import_module(name)
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("livekit", "pipecat"))
        print("loaded:", loaded)
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "loaded: []"


@pytest.mark.skipif(not FIXTURE.exists(), reason="the Pipecat example's fixture is not here")
def test_the_shared_pieces_work_without_livekit_or_pipecat() -> None:
    """Fixture PCM, barge-in planning, latency, the scripted rules and the factory rule, each
    used as both adapters use them, with neither framework importable."""
    out = _run(
        f"""
        from pathlib import Path
        from pytest_agent_eval.voice._barge_in import word_offset_s
        from pytest_agent_eval.voice._factory import takes_info
        from pytest_agent_eval.voice._fixture_pcm import load_fixture_pcm
        from pytest_agent_eval.voice._hearing import Hearing
        from pytest_agent_eval.voice._latency import Unmeasured, reply_latency_s
        from pytest_agent_eval.voice._script import Rule, ScriptContext, parse_number, render

        pcm = load_fixture_pcm(Path({str(FIXTURE)!r}), sample_rate=16000)
        print("pcm", pcm.sample_rate, pcm.duration_s > 0.5, len(pcm.pcm) % 2 == 0)
        print("again", load_fixture_pcm(Path({str(FIXTURE)!r}), sample_rate=16000) is pcm)
        print("word", round(word_offset_s("one two three", 2, 1.0, 2.3), 3))
        print("latency", reply_latency_s([1.0, 2.0], 2.5), reply_latency_s([3.0], 2.0))
        print("none", reply_latency_s([], 1.0) == Unmeasured(None))
        rule = Rule(r"table for (?P<n>\\w+)", reply="Booked for {{n}}.")
        match = rule.search("a table for four please")
        ctx = ScriptContext(match=match, user="a table for four please")
        print("rule", render(rule.reply, ctx), parse_number(match.group("n")))
        print("info", takes_info(lambda info: 0), takes_info(lambda stt=None: 0))
        print("hearing", Hearing("f.wav", segments=2, ended=1).missing() is not None)
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "pcm 16000 True True",
        "again True",
        "word 1.371",  # "one " is 4 of the 14 characters
        "latency 0.5 Unmeasured(early_s=1.0)",
        "none True",
        "rule Booked for four. 4",
        "info True False",
        "hearing True",
    ]


def test_old_paths_warn_and_hand_back_the_voice_objects() -> None:
    """The 0.4 paths users were taught (``audio_fixtures``, ``speech``) warn, naming the voice
    package, and resolve to its objects; the private shims (``audio_fixtures.<module>``,
    ``synthesize.backend(s)``) are gone."""
    import importlib

    import pytest_agent_eval.audio_fixtures as old_fixtures
    import pytest_agent_eval.speech as old_speech

    from pytest_agent_eval import voice
    from pytest_agent_eval.voice import _fixtures, _speech

    with pytest.warns(DeprecationWarning, match=r"speech\.spoken_text moved; import it from "):
        assert old_speech.spoken_text is _speech.spoken_text
    with pytest.warns(
        DeprecationWarning,
        match=r"audio_fixtures\.judge_fixture moved; import it from pytest_agent_eval\.voice$",
    ):
        assert old_fixtures.judge_fixture is _fixtures.judge_fixture is voice.judge_fixture
    for gone in (
        "pytest_agent_eval.audio_fixtures.conditions",
        "pytest_agent_eval.synthesize.backend",
        "pytest_agent_eval.synthesize.backends.hibari",
    ):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(gone)
    assert voice.spoken_text("Hello [pause 1s] there") == "Hello there"
