"""Audio variants as pytest tests: ids, -k, agent params, text agents, reports and gates."""

from __future__ import annotations

import textwrap

# Imported here, in the outer process: pytester's in-process runs drop the modules first
# imported inside them, and numpy cannot be imported twice in one process.
import numpy as np
import pytest
import soundfile

# The WER every voice turn records needs the normalizer of the [livekit] extra; the
# lowest-versions CI slice runs without extras.
pytest.importorskip("whisper_normalizer.english")

from .conftest import Project, lit

VARIANTS = """\
    id: booking
    seed: 4
    variants:
      - clean
      - phone
      - name: noisy
        conditions: [{noise: {color: pink, snr_db: 5}}]
        threshold: 0.5
    turns:
      - user: "Book a table for two."
        audio: book.wav
        expect:
          heard_wer_max: 0.0
      - user: "Thanks."
"""

# A voice adapter written against the public protocol: it "hears" the turn's words when the
# audio is clean and garbles them under any condition, and says which conditions it got.
HEARING_ADAPTER = """
class HearingConversation:
    async def respond(self, turn):
        kinds = ",".join(c.kind for c in turn.conditions) or "none"
        heard = turn.text if not turn.conditions else "bork a tabby for too"
        return AgentReply(f"conditions: {kinds} seed {turn.seed}", [], heard=heard)

    async def aclose(self):
        return None


class HearingAdapter:
    consumes_audio = True

    async def start_conversation(self, info):
        return HearingConversation()


@pytest.fixture
def llm_eval_agent():
    return HearingAdapter()
"""


def _recording(project: Project) -> None:
    """A one-second WAV without sidecar: a recording, used as it is."""
    rng = np.random.default_rng(0)
    samples = (0.2 * rng.standard_normal(16000)).astype(np.float32)
    soundfile.write(str(project.path / "tests" / "evals" / "book.wav"), samples, 16000)


def test_each_variant_is_its_own_test_with_a_readable_id(project: Project) -> None:
    project.echo_agent("Booked.")
    project.transcript("booking", VARIANTS)
    result = project.run("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            lit("tests/evals/booking.yaml::booking[clean]"),
            lit("tests/evals/booking.yaml::booking[phone]"),
            lit("tests/evals/booking.yaml::booking[noisy]"),
            "3 tests collected*",
        ]
    )


def test_k_selects_variants_by_name(project: Project) -> None:
    project.echo_agent("Booked.")
    project.transcript("booking", VARIANTS)
    result = project.run("--collect-only", "-q", "-k", "phone")
    result.stdout.fnmatch_lines([lit("tests/evals/booking.yaml::booking[phone]"), "1/3 tests*"])
    result = project.run("--collect-only", "-q", "-k", "booking and not clean")
    result.stdout.fnmatch_lines(["2/3 tests collected*"])


def test_a_parametrized_agent_adds_its_id_after_the_variant(project: Project) -> None:
    project.conftest(
        """
        @pytest.fixture(params=["fast", "smart"])
        def llm_eval_agent(request):
            def agent(history):
                return AgentReply(request.param)
            return agent
        """
    )
    project.transcript("booking", VARIANTS)
    result = project.run("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            lit("tests/evals/booking.yaml::booking[clean-fast]"),
            lit("tests/evals/booking.yaml::booking[clean-smart]"),
            lit("tests/evals/booking.yaml::booking[phone-fast]"),
            lit("tests/evals/booking.yaml::booking[phone-smart]"),
            lit("tests/evals/booking.yaml::booking[noisy-fast]"),
            lit("tests/evals/booking.yaml::booking[noisy-smart]"),
            "6 tests collected*",
        ]
    )
    assert project.run("--collect-only", "-q", "-k", "phone-smart").ret == 0


def test_a_text_agent_runs_the_clean_variant_and_skips_the_others_saying_why(
    project: Project,
) -> None:
    project.echo_agent("Booked.")
    project.transcript(
        "booking", VARIANTS.replace("heard_wer_max: 0.0", "reply_contains_any: [booked]")
    )
    result = project.run_live("-rs")
    result.assert_outcomes(passed=1, skipped=2)  # the clean variant ran
    result.stdout.fnmatch_lines(
        [
            "*booking*variant 'phone' (telephone(low_hz=300, high_hz=3400, codec=mulaw)) change"
            " only the audio, and CallableAdapter is a text agent, which hears no audio*",
            "*booking*variant 'noisy' (noise(snr_db=5, color=pink, talkers=4))*",
        ]
    )


def test_a_text_agent_skips_voice_only_checks_naming_them_and_still_runs_text_ones(
    project: Project,
) -> None:
    project.echo_agent("Booked.")
    project.transcript(
        "booking",
        """\
        id: booking
        latency_p95_ms_max: 900
        turns:
          - user: "Book a table for two."
            audio: book.wav
            expect:
              heard_wer_max: 0.2
              heard_contains_any: [table]
          - user: "Thanks."
            audio: book.wav
            interrupt: {after_ms: 300, stop_within_ms: 800}
        """,
    )
    project.transcript(
        "plain",
        "id: plain\nturns:\n  - user: hi\n    expect:\n      reply_contains_any: [booked]\n",
    )
    result = project.run_live("-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*transcript 'booking' asserts what only a voice agent can show: turn 1 "
            "(heard_contains_any, heard_wer_max); turn 2 (interrupt); latency_p95_ms_max;"
            " CallableAdapter is a text agent*",
        ]
    )


def test_a_voice_adapter_gets_each_variants_conditions_and_reports_keep_them_apart(
    project: Project,
) -> None:
    project.pyproject(
        """
        [tool.agent_eval.groups.clean_line]
        must_pass = ["booking[clean]"]
        [tool.agent_eval.groups.every_line]
        must_pass = ["booking"]
        """
    )
    project.conftest(HEARING_ADAPTER)
    project.transcript("booking", VARIANTS)
    _recording(project)
    report = project.path / "report.md"
    result = project.run_live("--agent-eval-report", str(report))
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*clean_line: 1/1 passed*PASSED",
            "*every_line: 1/3 passed*FAILED",
            "  must_pass: booking FAILED",
        ]
    )
    text = report.read_text()
    assert "booking[clean]" in text and "booking[phone]" in text and "booking[noisy]" in text
    # Each variant's adapter got that variant's conditions, and its own seed per turn.
    assert "conditions: none seed" in text
    assert "conditions: telephone seed" in text
    assert "conditions: noise seed" in text
    assert "Audio conditions: telephone(low_hz=300, high_hz=3400, codec=mulaw)" in text
    assert "Heard (WER 0.00): Book a table for two." in text
    assert "Heard (WER 0.60): bork a tabby for too" in text


def test_the_python_api_refuses_an_unexpanded_transcript(project: Project) -> None:
    project.conftest(HEARING_ADAPTER)
    _folder = project.path / "tests" / "evals"
    _folder.mkdir(parents=True)
    _recording(project)
    project.test_file(
        "test_api.py",
        f"""
        from pytest_agent_eval._expansion import expand
        from pytest_agent_eval._loader import load_transcript_text
        from pathlib import Path

        TEXT = {textwrap.dedent(VARIANTS)!r}

        async def test_whole(agent_eval):
            t = load_transcript_text(TEXT, path=Path({str(_folder / "x.yaml")!r}))
            await agent_eval.run(transcript=t)

        import pytest

        # It checks which variants fail itself: no automatic assert_threshold at the end.
        @pytest.mark.agent_eval(assert_threshold=False)
        async def test_each(agent_eval):
            t = load_transcript_text(TEXT, path=Path({str(_folder / "x.yaml")!r}))
            results = [await agent_eval.run(transcript=v) for v in expand(t)]
            assert [r.transcript_id for r in results] == [
                "booking[clean]", "booking[phone]", "booking[noisy]"
            ]
            assert [r.variant for r in results] == ["clean", "phone", "noisy"]
            assert [r.passed for r in results] == [True, False, False]
        """,
    )
    result = project.run_live("tests/test_api.py")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*transcript 'booking' has variants, which make one test each; run each of*expand*"]
    )


def test_user_presets_come_from_pyproject(project: Project) -> None:
    project.pyproject(
        """
        [tool.agent_eval.conditions.loud_line]
        telephone = {}
        gain = {db = 6}
        """
    )
    project.echo_agent("Booked.")
    project.transcript(
        "booking",
        """\
        id: booking
        variants: [clean, loud_line]
        turns:
          - user: hi
            audio: book.wav
        """,
    )
    result = project.run_live("-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*variant 'loud_line' (telephone(*), gain(db=6))*"])


def test_an_unknown_preset_is_a_collection_error_with_the_line(project: Project) -> None:
    project.echo_agent("Booked.")
    project.transcript("booking", VARIANTS.replace("- phone", "- phon"))
    result = project.run()
    result.stdout.fnmatch_lines(
        [
            "*/booking.yaml:5, transcript 'booking', "
            + lit("variants[1]: 'phon' is neither a condition nor a preset (Did you mean 'phone'?)")
            + "*"
        ]
    )


def test_variants_run_under_xdist_and_reach_the_report_apart(project: Project) -> None:
    project.conftest(HEARING_ADAPTER)
    project.transcript("booking", VARIANTS)
    _recording(project)
    result = project.run_live("-p", "xdist", "-n", "2", "--agent-eval-report", "r.md")
    result.assert_outcomes(passed=1, failed=2)
    text = (project.path / "r.md").read_text()
    for variant in ("clean", "phone", "noisy"):
        assert f"### {'✅' if variant == 'clean' else '❌'} booking[{variant}]" in text
