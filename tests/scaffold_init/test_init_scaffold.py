"""``python -m pytest_agent_eval init``: each adapter's scaffold passes ``pytest --agent-eval-live``
as made, a second ``init`` changes nothing, existing files are kept, and bad input is refused
with the fix before anything is written."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from init_support import clean_env, run_init, snapshot

SCHEMA_COMMENT = (
    "# yaml-language-server: $schema="
    "https://datarootsio.github.io/pytest-agent-eval/schema/transcript.json"
)
TEXT_FILES = ["tests/evals/opening_hours.yaml", "tests/conftest.py", "pyproject.toml"]


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The inline pytest runs below must not see the outer run's live mode or CI summary.
    for name in ("EVAL_LIVE", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)


def _created(stdout: str) -> list[str]:
    return [
        line.split()[1].rstrip(":")
        for line in stdout.splitlines()
        if line.strip().startswith("created")
    ]


def _assert_rerun_changes_nothing(adapter: str, project: Path) -> None:
    before = snapshot(project)
    again = run_init("--adapter", adapter, project)
    assert again.returncode == 0, again.stderr
    assert _created(again.stdout) == []
    assert "Nothing to do: every file was already there." in again.stdout
    assert snapshot(project) == before


@pytest.mark.parametrize("adapter", ["callable", "pydantic-ai", "openai"])
def test_text_scaffold_passes_live_as_made(pytester: pytest.Pytester, adapter: str) -> None:
    if adapter == "openai":
        pytest.importorskip("openai", reason="the OpenAI scaffold needs the openai extra")
    made = run_init("--adapter", adapter, pytester.path)
    assert made.returncode == 0, made.stderr
    assert _created(made.stdout) == TEXT_FILES
    transcript = (pytester.path / "tests/evals/opening_hours.yaml").read_text()
    assert transcript.splitlines()[0] == SCHEMA_COMMENT
    config = tomllib.loads((pytester.path / "pyproject.toml").read_text())
    assert config["tool"]["agent_eval"]["yaml_dirs"] == ["tests/evals"]

    result = pytester.runpytest("--agent-eval-live", "-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["opening_hours *3 *3 *1.00 *PASS*", "1/1 evals passed"])
    _assert_rerun_changes_nothing(adapter, pytester.path)


def test_livekit_scaffold_passes_live_as_made(livekit_project: Path, tmp_path: Path) -> None:
    project = shutil.copytree(livekit_project, tmp_path / "project")
    wav = project / "tests/evals/audio/voice_opening_hours_t1.wav"
    assert wav.stat().st_size > 16_000  # about half a second of 16 kHz audio at least
    assert wav.with_name(wav.name + ".hash").is_file()
    voice = (project / "tests/evals/voice_opening_hours.yaml").read_text()
    assert voice.splitlines()[0] == SCHEMA_COMMENT

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--agent-eval-live", "-p", "no:cacheprovider"],
        cwd=project,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    for transcript in ("opening_hours", "voice_opening_hours"):
        assert re.search(rf"^{transcript} +3 +3 +1\.00 .* PASS ", result.stdout, re.MULTILINE)
    assert "2 passed" in result.stdout
    assert "2/2 evals passed" in result.stdout.splitlines()
    _assert_rerun_changes_nothing("livekit", project)


def test_livekit_realtime_scaffold_passes_live_as_made(tmp_path: Path) -> None:
    """The agent on a realtime model: no STT, the scripted model hears the spoken turn."""
    pytest.importorskip("livekit.agents", reason="the LiveKit scaffold needs the livekit extra")
    project = tmp_path / "realtime-project"
    made = run_init("--adapter", "livekit-realtime", project)
    assert made.returncode == 0, made.stdout + made.stderr
    agent = (project / "tests/opening_hours_agent.py").read_text()
    assert "ScriptedRealtimeModel(RULES)" in agent and "stt=" not in agent
    assert (project / "tests/evals/audio/voice_opening_hours_t1.wav").is_file()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--agent-eval-live", "-p", "no:cacheprovider"],
        cwd=project,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert re.search(r"^voice_opening_hours +3 +3 +1\.00 .* PASS ", result.stdout, re.MULTILINE)
    assert "2/2 evals passed" in result.stdout.splitlines()
    _assert_rerun_changes_nothing("livekit-realtime", project)


def test_pipecat_scaffold_passes_live_as_made(tmp_path: Path) -> None:
    pytest.importorskip("pipecat.frames.frames", reason="the Pipecat scaffold needs its extra")
    project = tmp_path / "voice-project"
    made = run_init("--adapter", "pipecat", project)
    assert made.returncode == 0, made.stdout + made.stderr
    wav = project / "tests/evals/audio/voice_opening_hours_t1.wav"
    assert wav.stat().st_size > 16_000 and wav.with_name(wav.name + ".hash").is_file()
    voice = (project / "tests/evals/voice_opening_hours.yaml").read_text()
    assert voice.splitlines()[0] == SCHEMA_COMMENT and "Pipecat pipeline" in voice

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--agent-eval-live", "-p", "no:cacheprovider"],
        cwd=project,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    for transcript in ("opening_hours", "voice_opening_hours"):
        assert re.search(rf"^{transcript} +3 +3 +1\.00 .* PASS ", result.stdout, re.MULTILINE)
    assert "2/2 evals passed" in result.stdout.splitlines()
    _assert_rerun_changes_nothing("pipecat", project)


def test_an_existing_pyproject_gets_the_section_appended(tmp_path: Path) -> None:
    original = '[project]\nname = "shop"\n\n[tool.ruff]\nline-length = 100'  # no final newline
    (tmp_path / "pyproject.toml").write_text(original)

    made = run_init("--adapter", "callable", tmp_path)

    assert made.returncode == 0, made.stderr
    assert "  appended  pyproject.toml: [tool.agent_eval] added at the end" in made.stdout
    text = (tmp_path / "pyproject.toml").read_text()
    assert text.startswith(original + "\n")
    config = tomllib.loads(text)
    assert config["project"] == {"name": "shop"}
    assert config["tool"]["ruff"] == {"line-length": 100}
    assert config["tool"]["agent_eval"]["yaml_dirs"] == ["tests/evals"]


def test_existing_section_and_conftest_are_kept_and_said_so(tmp_path: Path) -> None:
    pyproject = '[tool.agent_eval]\nyaml_dirs = ["evals"]\nruns = 5\n'
    (tmp_path / "pyproject.toml").write_text(pyproject)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/conftest.py").write_text("# mine\n")

    made = run_init("--adapter", "callable", tmp_path)

    assert made.returncode == 0, made.stderr
    assert _created(made.stdout) == ["tests/evals/opening_hours.yaml"]
    assert (
        "  kept      pyproject.toml: [tool.agent_eval] is already there; left as it is; its "
        "yaml_dirs ['evals'] miss \"tests/evals\": add it to run the samples"
    ) in made.stdout
    assert "  kept      tests/conftest.py: exists; left as it is; it must provide" in made.stdout
    assert (tmp_path / "pyproject.toml").read_text() == pyproject
    assert (tmp_path / "tests/conftest.py").read_text() == "# mine\n"


BAD_INPUT = {
    "unknown adapter": (
        ["-m", "pytest_agent_eval", "init", "--adapter", "langflow", "{target}"],
        "error: unknown adapter 'langflow': pass --adapter with one of callable, pydantic-ai, "
        "openai, livekit, pipecat, livekit-realtime",
    ),
    "target is a file": (
        ["-m", "pytest_agent_eval", "init", "--adapter", "callable", "{file}"],
        "error: {file} is a file, not a folder: pass the project folder (it is created if missing)",
    ),
    "target under a file": (
        ["-m", "pytest_agent_eval", "init", "--adapter", "callable", "{file}/project"],
        "error: cannot create the folder {file}/project: Not a directory; pass a folder you can "
        "write to",
    ),
    "broken pyproject": (
        ["-m", "pytest_agent_eval", "init", "--adapter", "callable", "{broken}"],
        "error: {broken}/pyproject.toml is not valid TOML (",
    ),
    "no adapter, no terminal": (
        ["-m", "pytest_agent_eval", "init", "{target}"],
        "error: no adapter chosen and no terminal to ask in: pass --adapter with one of "
        "callable, pydantic-ai, openai, livekit, pipecat, livekit-realtime",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_is_refused_with_the_fix_and_nothing_written(tmp_path: Path, case: str) -> None:
    (tmp_path / "file").write_text("not a folder\n")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken/pyproject.toml").write_text("[tool.agent_eval\n")
    paths = {"target": tmp_path / "new", "file": tmp_path / "file", "broken": tmp_path / "broken"}
    args, expected = BAD_INPUT[case]
    command = [sys.executable, *(a.format(**paths) for a in args)]
    before = snapshot(tmp_path)

    result = subprocess.run(
        command,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert result.returncode == 2, result.stdout + result.stderr
    assert expected.format(**paths) in result.stderr
    assert "Traceback" not in result.stderr
    assert snapshot(tmp_path) == before
    assert not paths["target"].exists()


def test_a_fixture_that_cannot_be_made_is_reported_with_the_fix(tmp_path: Path) -> None:
    pytest.importorskip("livekit.agents", reason="the LiveKit scaffold needs the livekit extra")
    pytest.importorskip("espeakng_loader", reason="the espeak backend names the bad voice")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.agent_eval]\nyaml_dirs = ["tests/evals"]\n'
        '[tool.agent_eval.voice]\nbackend = "espeak"\nvoice = "nosuchvoice"\n'
    )

    made = run_init("--adapter", "livekit", tmp_path)

    assert made.returncode == 1, made.stdout + made.stderr
    assert (
        "  failed    tests/evals/audio/voice_opening_hours_t1.wav: espeak-ng failed: espeak-ng "
        "has no voice 'nosuchvoice'; fix it, then run python -m pytest_agent_eval.synthesize_audio"
    ) in made.stdout
    assert "Some steps failed (see above)." in made.stdout
    assert not list((tmp_path / "tests/evals").rglob("*.wav"))


def test_in_a_terminal_init_asks_for_the_adapter(tmp_path: Path) -> None:
    pytest.importorskip("openai", reason="the answer picks the OpenAI scaffold")
    controller, terminal = os.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest_agent_eval", "init", str(tmp_path)],
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=clean_env(),
            text=True,
        )
        # An answer out of range is asked again; a name is taken as well as a number.
        os.write(controller, b"9\nOpenAI\n")
        stdout, stderr = process.communicate(timeout=120)
    finally:
        os.close(terminal)
        os.close(controller)

    assert process.returncode == 0, stderr
    assert "  3. openai       the OpenAI SDK (Chat Completions with tools)" in stdout
    # The prompt answers in the prompt's terms (there is no --adapter to pass at a prompt).
    assert (
        "'9' is not one of the choices: answer a number from 1 to 6 or one of callable, "
        "pydantic-ai, openai, livekit, pipecat, livekit-realtime"
    ) in stdout
    assert "--adapter" not in stdout
    assert "pytest-agent-eval init: openai adapter in" in stdout
    assert "OpenAIAdapter(client, MODEL" in (tmp_path / "tests/conftest.py").read_text()


def test_the_console_script_runs_the_same_command(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("agent-eval")
    if not script.exists():
        pytest.skip("the agent-eval script is not installed here; pip install -e . again")
    made = subprocess.run(
        [str(script), "init", "--adapter", "callable", str(tmp_path)],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    assert _created(made.stdout) == TEXT_FILES


@pytest.mark.parametrize(
    ("args", "expected"),
    [([], "usage: python -m pytest_agent_eval COMMAND"), (["deploy"], "unknown command 'deploy'")],
)
def test_the_dispatcher_names_its_commands(args: list[str], expected: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest_agent_eval", *args],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert expected in result.stdout + result.stderr
    assert "init    add a sample eval suite" in result.stdout + result.stderr


def _extra_closure(extra: str) -> set[str]:
    """Every distribution ``pip install 'pytest-agent-eval[extra]'`` brings, read from the
    installed distributions' metadata (requirements and their markers, recursively)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: dict[str, set[str]] = {}
    todo = [("pytest-agent-eval", {extra})]
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        if key in seen and extras <= seen[key]:
            continue
        seen.setdefault(key, set()).update(extras)
        for text in metadata.requires(name) or []:
            requirement = Requirement(text)
            marker = requirement.marker
            if marker is not None and not any(marker.evaluate({"extra": e}) for e in [*extras, ""]):
                continue
            todo.append((requirement.name, set(requirement.extras)))
    return set(seen)


@pytest.mark.parametrize("adapter", ["pydantic-ai", "openai", "livekit", "pipecat"])
def test_every_module_a_scaffold_imports_comes_with_its_extra(adapter: str) -> None:
    # The loop this prevents: the OpenAI scaffold imported httpx, which its extra did not bring
    # (current openai releases use another HTTP package), so "pip install the extra" never
    # fixed "needs httpx".
    from importlib import metadata

    from packaging.utils import canonicalize_name

    from pytest_agent_eval._scaffold import ADAPTERS

    choice = ADAPTERS[adapter]
    pytest.importorskip(choice.needs[0].split(".")[0], reason=f"needs the {choice.extra} extra")
    brought = _extra_closure(choice.extra)
    providers = metadata.packages_distributions()
    assert choice.needs, "the check reads the modules from the templates"
    for module in choice.needs:
        top = module.split(".")[0]
        dists = {canonicalize_name(d) for d in providers.get(top, [])}
        assert dists & brought, (
            f"{adapter}: {module} comes from {sorted(dists)}, none of which "
            f"pytest-agent-eval[{choice.extra}] brings"
        )


def test_a_module_the_installed_extra_does_not_bring_is_named_not_the_extra_again() -> None:
    pytest.importorskip("openai", reason="the openai extra must be installed for this case")
    from pytest_agent_eval._scaffold import ADAPTERS, AdapterChoice, missing_requirement

    assert missing_requirement(ADAPTERS["openai"]) is None
    choice = AdapterChoice(
        "openai", "x", "conftest_openai.py.txt", extra="openai", init_needs=("no_such_module",)
    )
    assert missing_requirement(choice) == (
        "init --adapter openai needs no_such_module, which is not installed, and "
        "pytest-agent-eval[openai] (installed here) does not bring it: install the package "
        "that provides no_such_module (e.g. pip install no_such_module)"
    )


def test_the_livekit_conftest_imports_livekit_only_inside_its_fixture(
    livekit_project: Path,
) -> None:
    # What docs/ci.md recommends: the xdist controller loads conftest.py but runs no test.
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('c', {str(livekit_project / 'tests/conftest.py')!r})\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('livekit', 'onnxruntime')))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert loaded.stdout.strip() == "[]"
    agent = (livekit_project / "tests/opening_hours_agent.py").read_text()
    assert "VAD = silero.VAD.load()" in agent
    assert (
        "from opening_hours_agent import make_session"
        in (livekit_project / "tests/conftest.py").read_text()
    )


def test_a_livekit_scaffold_in_a_tests_package_imports_its_agent_relatively(
    tmp_path: Path,
) -> None:
    pytest.importorskip("livekit.agents", reason="the LiveKit scaffold needs the livekit extra")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/__init__.py").write_text("")

    made = run_init("--adapter", "livekit", tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    conftest = (tmp_path / "tests/conftest.py").read_text()
    assert "from .opening_hours_agent import make_session" in conftest

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--agent-eval-live", "-p", "no:cacheprovider", "-q"],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "2/2 evals passed" in result.stdout.splitlines()
