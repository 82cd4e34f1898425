"""One definition of a fixture's state: ``--check``, the pytest gate and the synthesizer agree on
every kind of file a transcript can point at (issue 12: they used to disagree on recordings and
hand-edited sidecars; issue 9: a WAV that lost its sidecar passed as a recording).

Every fixture here is real: made by the offline synthesizer, written by soundfile as another
tool would, or made the way pytest-agent-eval 0.3 made them.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import textwrap
import wave
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.synthesize import ensure_fixtures, fixture_problems
from pytest_agent_eval.synthesize._cli import main
from pytest_agent_eval.voice._fixtures import (
    FixtureState,
    Origin,
    Sidecar,
    read_sidecar,
    set_max_fixture_s,
    write_sidecar,
)

pytest.importorskip("hibari", reason="needs the voice extra")

CAP_S = 5
"""max_fixture_s of the test project: small, so an over-long recording is cheap to make."""

PYPROJECT = f'[tool.agent_eval]\nyaml_dirs = ["evals"]\nmax_fixture_s = {CAP_S}\n'

CONFTEST = textwrap.dedent(
    """
    import pytest
    from pytest_agent_eval import AgentReply
    from pytest_agent_eval.voice._fixtures import read_wav


    class ListeningConversation:
        async def respond(self, turn):
            clip = read_wav(turn.audio)
            return AgentReply(f"heard {clip.duration_s:.1f} seconds", heard=turn.text)

        async def aclose(self):
            return None


    class ListeningAdapter:
        consumes_audio = True

        async def start_conversation(self, info):
            return ListeningConversation()


    @pytest.fixture
    def llm_eval_agent():
        return ListeningAdapter()
    """
)

SYNTH_TEXT = "Book me a table for two."
"""What every synthesized case says (the YAML of some cases then says something else)."""
OTHER_TEXT = "Make it four people."


def _recording(source: Path, target: Path) -> None:
    data, rate = _soundfile().read(str(source), dtype="int16")
    _soundfile().write(str(target), data, rate, subtype="PCM_16")


def _soundfile():  # type: ignore[no-untyped-def]
    import soundfile

    return soundfile


def _plain_wav(path: Path, samples: np.ndarray, rate: int = 16000) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype("<i2").tobytes())


def _legacy(source: Path, target: Path, text: str) -> None:
    """As pytest-agent-eval 0.3 left a fixture: a 24 kHz PCM WAV and sha256(user.strip())."""
    data, rate = _soundfile().read(str(source), dtype="float32")
    import soxr

    _plain_wav(target, np.round(soxr.resample(data, rate, 24000) * 32767), 24000)
    digest = hashlib.sha256(text.strip().encode("utf-8")).hexdigest()
    target.with_name(target.name + ".hash").write_text(digest + "\n")


def _edit_sidecar(wav: Path, **changes: object) -> None:
    side = json.loads(wav.with_name(wav.name + ".hash").read_text())
    side.update(changes)
    wav.with_name(wav.name + ".hash").write_text(json.dumps(side))


# case -> (the YAML's text, how the files are made from a fresh synthesized fixture, state,
#          origin). "made" is the synthesized WAV for SYNTH_TEXT at evals/<case>.wav.
Setup = Callable[[Path], None]
CASES: dict[str, tuple[str, Setup, FixtureState, Origin | None]] = {
    "fresh": (SYNTH_TEXT, lambda wav: None, FixtureState.FRESH, Origin.SYNTHESIZED),
    "missing": (
        SYNTH_TEXT,
        lambda wav: (wav.unlink(), wav.with_name(wav.name + ".hash").unlink()),
        FixtureState.MISSING,
        None,
    ),
    "text_changed": (OTHER_TEXT, lambda wav: None, FixtureState.STALE, Origin.SYNTHESIZED),
    "sidecar_lost": (
        SYNTH_TEXT,
        lambda wav: wav.with_name(wav.name + ".hash").unlink(),
        FixtureState.STALE,
        Origin.EMBEDDED,
    ),
    "sidecar_lost_other_text": (
        OTHER_TEXT,
        lambda wav: wav.with_name(wav.name + ".hash").unlink(),
        FixtureState.STALE,
        Origin.EMBEDDED,
    ),
    "hand_edited": (
        OTHER_TEXT,
        lambda wav: _edit_sidecar(wav, text=OTHER_TEXT),  # "make it pass" without re-synthesis
        FixtureState.STALE,
        Origin.SYNTHESIZED,
    ),
    "pending": (
        SYNTH_TEXT,
        lambda wav: write_sidecar(
            wav, Sidecar(text=SYNTH_TEXT, inputs=read_sidecar(wav).inputs, pending=True)
        ),
        FixtureState.STALE,
        Origin.SYNTHESIZED,
    ),
    "unreadable_sidecar": (
        SYNTH_TEXT,
        lambda wav: wav.with_name(wav.name + ".hash").write_text("{not json"),
        FixtureState.STALE,
        Origin.SYNTHESIZED,
    ),
    "recording": (
        SYNTH_TEXT,
        lambda wav: (
            _recording(wav, wav.with_name("tmp.wav")),
            wav.with_name(wav.name + ".hash").unlink(),
            wav.with_name("tmp.wav").replace(wav),
        ),
        FixtureState.FRESH,
        Origin.RECORDING,
    ),
    "recording_corrupt": (
        SYNTH_TEXT,
        lambda wav: (
            wav.with_name(wav.name + ".hash").unlink(),
            wav.write_bytes(b"RIFF\x10\x00\x00\x00WAVEjunk-not-audio"),
        ),
        FixtureState.INVALID,
        Origin.RECORDING,
    ),
    "recording_empty": (
        SYNTH_TEXT,
        lambda wav: (
            wav.with_name(wav.name + ".hash").unlink(),
            _plain_wav(wav, np.zeros(0)),
        ),
        FixtureState.INVALID,
        Origin.RECORDING,
    ),
    "recording_silent": (
        SYNTH_TEXT,
        lambda wav: (
            wav.with_name(wav.name + ".hash").unlink(),
            _plain_wav(wav, np.zeros(16000)),
        ),
        FixtureState.INVALID,
        Origin.RECORDING,
    ),
    "recording_too_long": (
        SYNTH_TEXT,
        lambda wav: (
            wav.with_name(wav.name + ".hash").unlink(),
            _plain_wav(wav, np.sin(np.arange(16000 * (CAP_S + 1)) / 5) * 8000),
        ),
        FixtureState.INVALID,
        Origin.RECORDING,
    ),
    "legacy": (
        SYNTH_TEXT,
        lambda wav: (wav.with_name(wav.name + ".hash").unlink(), _legacy(wav, wav, SYNTH_TEXT)),
        FixtureState.FRESH,
        Origin.LEGACY,
    ),
    "legacy_text_changed": (
        OTHER_TEXT,
        lambda wav: (wav.with_name(wav.name + ".hash").unlink(), _legacy(wav, wav, SYNTH_TEXT)),
        FixtureState.STALE,
        Origin.LEGACY,
    ),
}


@pytest.fixture(autouse=True)
def _default_cap() -> Iterator[None]:
    """The command line and in-process pytest runs set the process's cap: put it back."""
    yield
    set_max_fixture_s(None)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with one synthesized fixture per case, all saying SYNTH_TEXT."""
    root = tmp_path_factory.mktemp("states")
    (root / "evals").mkdir()
    for case in CASES:
        (root / "evals" / f"{case}.yaml").write_text(
            f'id: {case}\nturns:\n  - user: "{SYNTH_TEXT}"\n    audio: {case}.wav\n'
        )
    assert main(["-j", "1", str(root / "evals")]) == 0
    set_max_fixture_s(None)
    return root


@pytest.fixture
def project(made: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every case set up in a fresh copy, with the YAML text each case names."""
    shutil.copytree(made / "evals", pytester.path / "evals")
    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makeconftest(CONFTEST)
    for case, (text, setup, _, _) in CASES.items():
        wav = pytester.path / "evals" / f"{case}.wav"
        setup(wav)
        (pytester.path / "evals" / f"{case}.yaml").write_text(
            f'id: {case}\nturns:\n  - user: "{text}"\n    audio: {case}.wav\n'
        )
    monkeypatch.chdir(pytester.path)
    return pytester.path


def _check_states(out: str) -> dict[str, str]:
    """case -> state word, from the lines of ``--check``."""
    states = {}
    for line in out.splitlines():
        parts = line.split()
        if (
            len(parts) > 1
            and parts[0] in {s.value.split()[0] for s in FixtureState}
            and parts[1].startswith("evals/")
            and parts[1].endswith(".wav:")
        ):
            states[parts[1][len("evals/") : -len(".wav:")]] = parts[0]
    return states


def test_check_gate_and_synthesizer_agree_on_every_kind_of_file(
    project: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = {case: spec[2] for case, spec in CASES.items()}

    # --check (strict)
    assert main(["--check"]) == 1
    out = capsys.readouterr().out
    reported = _check_states(out)
    assert reported == {c: s.value for c, s in expected.items() if s is not FixtureState.FRESH}
    assert "note: evals/legacy.wav: made by pytest-agent-eval 0.3" in out
    assert "sidecar unreadable" not in out.split("legacy")[0]  # a 0.3 sidecar is read as such

    # The gate's function, in both modes, and with the origin each file has.
    set_max_fixture_s(CAP_S)
    for case, (_, _, state, origin) in CASES.items():
        transcript = load_transcript_file(project / "evals" / f"{case}.yaml")
        for strict in (True, False):
            # A 0.3 fixture is a note, never a Python warning (filterwarnings = ["error"]).
            with _no_warning():
                problems = fixture_problems(transcript, strict=strict)
            got = problems[0].state if problems else FixtureState.FRESH
            assert got is state, (case, strict, problems)
            if problems:
                assert problems[0].origin is origin, case

    # pytest itself (fail mode): fresh ones pass, every other one fails before its run.
    result = pytester.runpytest("--agent-eval-live", "-p", "no:cacheprovider", "-rf")
    fresh = [c for c, s in expected.items() if s is FixtureState.FRESH]
    result.assert_outcomes(passed=len(fresh), errors=len(CASES) - len(fresh))
    text = result.stdout.str()
    for case, state in expected.items():
        if state is not FixtureState.FRESH:
            assert f"audio fixture evals/{case}.wav is {state.value} (" in text, case

    # The synthesizer: makes the missing and stale ones (never a recording), reports the rest.
    set_max_fixture_s(CAP_S)
    before = {c: (project / "evals" / f"{c}.wav").read_bytes() for c in CASES if c != "missing"}
    transcripts = [load_transcript_file(project / "evals" / f"{c}.yaml") for c in CASES]
    summary = ensure_fixtures(transcripts, jobs=1)
    made_now = {r.spec.wav.stem for r in summary.synthesized}
    assert made_now == {
        c for c, s in expected.items() if s in (FixtureState.MISSING, FixtureState.STALE)
    }
    assert {p.wav.stem for p in summary.unusable} == {
        c for c, s in expected.items() if s is FixtureState.INVALID
    }
    assert {s.spec.wav.stem for s in summary.up_to_date} == set(fresh)
    for case in CASES:
        if expected[case] is FixtureState.INVALID or case == "recording":
            assert (project / "evals" / f"{case}.wav").read_bytes() == before[case], case
    summary.raise_for_failures()  # broken recordings are not synthesis failures
    assert not summary.ok
    assert main(["--check"]) == 1
    after = _check_states(capsys.readouterr().out)
    assert after == {c: "invalid" for c, s in expected.items() if s is FixtureState.INVALID}


class _no_warning:
    """Assert that no FixtureNoteWarning is raised inside the block."""

    def __enter__(self) -> None:
        import warnings

        self._catch = warnings.catch_warnings(record=True)
        self._seen = self._catch.__enter__()
        warnings.simplefilter("always")

    def __exit__(self, *exc: object) -> None:
        from pytest_agent_eval.synthesize._plan import FixtureNoteWarning

        self._catch.__exit__(*exc)
        assert not [w for w in self._seen if issubclass(w.category, FixtureNoteWarning)]
