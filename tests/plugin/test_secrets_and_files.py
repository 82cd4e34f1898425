"""Nothing leaves the project folder, no secret reaches a report, no control sequence reaches a
terminal or a CI page."""

from __future__ import annotations

import math
import struct
import wave
from pathlib import Path

import pytest

from .conftest import Project


def write_wav(path: Path, seconds: float = 0.3, rate: int = 16000) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frames = b"".join(
        struct.pack("<h", int(12000 * math.sin(2 * math.pi * 440 * i / rate)))
        for i in range(int(seconds * rate))
    )
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(frames)


@pytest.mark.parametrize(
    "audio", ["/proc/self/environ", "../../../../../../etc/passwd"], ids=["proc", "dotdot"]
)
def test_audio_outside_the_project_is_a_loader_error(project: Project, audio: str) -> None:
    project.echo_agent("hi")
    project.transcript("leak", f"id: leak\nturns:\n  - user: hi\n    audio: {audio}\n")
    result = project.run("--agent-eval-html=report.html")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [f"*leak.yaml:4, transcript 'leak', turn 1, turns[[]0[]].audio: '{audio}' resolves to *"]
    )
    result.stdout.fnmatch_lines(["*audio fixtures must live inside the project folder*"])


def test_a_symlink_out_of_the_project_is_refused(project: Project, tmp_path: Path) -> None:
    secret = tmp_path / "outside" / "secret.wav"
    write_wav(secret)
    link = project.path / "tests" / "evals" / "inside.wav"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(secret)
    project.echo_agent("hi")
    project.transcript("link", "id: link\nturns:\n  - user: hi\n    audio: inside.wav\n")
    result = project.run()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*'inside.wav' resolves to *secret.wav, outside the project*"])


def test_audio_roots_allow_a_shared_fixture_folder(project: Project, tmp_path: Path) -> None:
    shared = project.path.parent / f"{project.path.name}-shared"
    write_wav(shared / "hello.wav")
    project.pyproject(f'audio_roots = ["../{shared.name}"]')
    project.echo_agent("hi")
    project.transcript(
        "shared", f"id: shared\nturns:\n  - user: hi\n    audio: ../../../{shared.name}/hello.wav\n"
    )
    result = project.run_live()
    result.assert_outcomes(passed=1)


def test_html_embeds_only_files_that_decode_as_audio(project: Project) -> None:
    evals = project.path / "tests" / "evals"
    write_wav(evals / "real.wav")
    evals.mkdir(parents=True, exist_ok=True)
    (evals / "fake.wav").write_text("OPENAI_API_KEY=sk-not-audio-at-all-1234567890\n")
    project.echo_agent("hi")
    project.transcript(
        "voice",
        "id: voice\nturns:\n  - user: hi\n    audio: real.wav\n  - user: again\n"
        "    audio: fake.wav\n",
    )
    result = project.run_live("--agent-eval-html=report.html")
    result.assert_outcomes(passed=1)
    html = (project.path / "report.html").read_text()
    assert html.count("data:audio/wav;base64,") == 1
    assert "not embedded: tests/evals/fake.wav is not readable audio" in html.replace(
        str(project.path) + "/", ""
    )
    assert "c2stbm90LWF1ZGlv" not in html  # base64 of the fake file's text
    assert "sk-not-audio" not in html


SECRET = "sk-live-0123456789abcdefSECRET"


def test_secrets_are_redacted_from_terminal_reports_and_junit(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACME_API_KEY", "acme-key-value-42")
    project.agent(
        f"""
        def agent(history):
            raise RuntimeError(
                "provider said 401 for Authorization: Bearer {SECRET} and key acme-key-value-42"
            )
        """
    )
    project.transcript("leaky", "id: leaky\nturns:\n  - user: hi\n")
    project.test_file(
        "test_python_leak.py",
        f"""
        def test_python_leak(agent_eval):
            result = agent_eval.run_sync(
                agent=lambda h: AgentReply("your key is {SECRET}"), turns=[Turn("hi")]
            )
            raise AssertionError("the provider echoed Bearer {SECRET}")
        """,
    )
    summary = project.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = project.run_live(
        "--agent-eval-report=report.md", "--agent-eval-html=report.html", "--junitxml=junit.xml"
    )
    result.assert_outcomes(failed=2)
    texts = {
        "terminal": result.stdout.str(),
        "markdown": (project.path / "report.md").read_text(),
        "html": (project.path / "report.html").read_text(),
        "junit": (project.path / "junit.xml").read_text(),
        "summary": summary.read_text(),
    }
    for name, text in texts.items():
        assert SECRET not in text, name
        assert "acme-key-value-42" not in text, name
    assert "Bearer [REDACTED]" in texts["terminal"]
    assert "[REDACTED]" in texts["junit"]


def test_control_sequences_never_reach_a_report(project: Project) -> None:
    project.agent(
        'return AgentReply("ok \\x1b[31mred\\x1b[0m \\x1b]0;pwned title\\x07 \\x1b]8;;http://x\\x1b\\\\'
        'link\\x1b]8;;\\x1b\\\\ end")\n'
    )
    project.transcript(
        "escapes",
        "id: escapes\nturns:\n  - user: hi\n    expect:\n      reply_contains_any: [nothing]\n",
    )
    result = project.run_live("--agent-eval-report=report.md", "--agent-eval-html=report.html")
    result.assert_outcomes(failed=1)
    for text in (
        result.stdout.str(),
        (project.path / "report.md").read_text(),
        (project.path / "report.html").read_text(),
    ):
        assert "\x1b" not in text
        assert "\x07" not in text
    assert "ok red" in (project.path / "report.md").read_text()
    result.stdout.fnmatch_lines(["*reply: 'ok red link end'*"])
