"""Renderers and file writing as plain functions over records built by hand."""

from __future__ import annotations

import wave
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_agent_eval._report._files import (
    GITHUB_STEP_SUMMARY_LIMIT_BYTES,
    append_step_summary,
    write_atomic,
)
from pytest_agent_eval._report._html import AudioStore, render_html
from pytest_agent_eval._report._markdown import md_escape, render_markdown
from pytest_agent_eval._report._records import (
    EvalRecord,
    RecordCollector,
    ReportData,
    SessionRecords,
    serialized_records,
)
from pytest_agent_eval._report._terminal import summary_lines
from pytest_agent_eval.models import (
    Crash,
    EvalResult,
    RunResult,
    ToolCall,
    TranscriptResult,
    TurnResult,
    Usage,
)


def _data(*records: EvalRecord) -> ReportData:
    return ReportData(session=SessionRecords(records=records))


def _turn(**kw: object) -> TurnResult:
    base: dict[str, object] = {"index": 0, "user": "hi", "reply": "hello"}
    base.update(kw)
    return TurnResult(**base)  # type: ignore[arg-type]


def _record(result: TranscriptResult | None, outcome: str = "passed") -> EvalRecord:
    return EvalRecord(
        nodeid="tests/evals/t.yaml::t",
        transcript_id="t",
        result=result,
        test_outcome=outcome,  # type: ignore[arg-type]
    )


def test_md_escape_changes_only_what_breaks_a_cell_or_injects_html() -> None:
    # Verbatim: ids, tool names and replies are found by grep as they were written.
    assert md_escape("simple_test book_slot *not bold* a_b [x](y) $x$ ~~s~~ # h >= 1") == (
        "simple_test book_slot *not bold* a_b [x](y) $x$ ~~s~~ # h >= 1"
    )
    # A pipe would split the table cell, a line break the line, "<" would open HTML.
    assert md_escape("a|b\r\nc <script>alert(1)</script>") == (
        "a\\|b<br>c &lt;script>alert(1)&lt;/script>"
    )
    # "&" only where it would start an entity: "&amp;" must show as typed.
    assert md_escape("Tom & Jerry &amp; &#39; &#x27; &copy;") == (
        "Tom & Jerry &amp;amp; &amp;#39; &amp;#x27; &amp;copy;"
    )


def test_markdown_shows_errored_judges_run_errors_and_early_stop() -> None:
    turn = _turn(
        evaluations=[
            EvalResult(passed=False, reasoning="judge timed out", name="judge", errored=True),
            EvalResult(passed=False, reasoning="no booking", name="reply"),
        ],
        error="AdapterError: session closed",
    )
    result = TranscriptResult(
        passed=False,
        score=0.0,
        threshold=0.8,
        runs=[RunResult(index=0, turns=[turn], error="could not start")],
        transcript_id="t",
        planned_runs=5,
    )
    text = render_markdown(_data(_record(result, "failed")))
    assert "- ⚠️ errored judge — judge timed out" in text
    assert "- ❌ reply — no booking" in text
    assert "- ⚠️ Error: AdapterError: session closed" in text
    assert "⚠️ Run error: could not start" in text
    assert "| 1 of 5 | 0 |" in text
    assert "4 saved by early stop" in text


def test_an_eval_that_never_produced_a_result_is_an_error() -> None:
    data = _data(_record(None, "error"))
    assert "| ⚠️ ERROR |" in render_markdown(data)
    assert any("ERROR" in line.text for line in summary_lines(data))


def test_tool_call_arguments_output_and_errors_are_shown() -> None:
    call = ToolCall("pay", {"amount": 12}, output="card declined", is_error=True)
    result = TranscriptResult(
        passed=True, score=1.0, threshold=1.0, runs=[RunResult(0, [_turn(tool_calls=[call])])]
    )
    assert '- Tool calls: pay({"amount": 12}) → "card declined" [error]' in render_markdown(
        _data(_record(result))
    )


def test_a_crashed_turn_does_not_claim_it_made_no_tool_calls() -> None:
    """Issue 32, tried again as a new user: a turn whose agent crashed after a tool ran was
    reported "Tool calls: none", though its record ends at the crash. A finished turn without
    calls still says none."""
    crashed = _turn(reply="", crash=Crash("RuntimeError", "on_enter failed"), error="crashed")
    quiet = _turn(index=1)
    result = TranscriptResult(
        passed=False, score=0.0, threshold=1.0, runs=[RunResult(0, [crashed, quiet])]
    )
    data = _data(_record(result, "failed"))
    markdown = render_markdown(data)
    assert "- Tool calls: not recorded (the turn did not finish)" in markdown
    assert markdown.count("- Tool calls: none") == 1
    html = render_html(data, rootdir=Path.cwd(), report_dir=Path.cwd())
    assert "not recorded (the turn did not finish)" in html


def test_terminal_leaves_out_latency_and_token_columns_when_nothing_was_measured() -> None:
    result = TranscriptResult(passed=True, score=1.0, threshold=1.0, runs=[RunResult(0, [_turn()])])
    header = summary_lines(_data(_record(result)))[0].text
    assert "p95 latency" not in header and "tokens" not in header
    with_usage = TranscriptResult(
        passed=True,
        score=1.0,
        threshold=1.0,
        runs=[RunResult(0, [_turn(usage=Usage(10, 5, 1), latency_s=0.3, audio="t1.wav")])],
    )
    header = summary_lines(_data(_record(with_usage)))[0].text
    assert "p95 latency" in header and "agent tokens" in header


def _wav(path: Path) -> Path:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x01" * 800)
    return path


def test_audio_is_embedded_once_linked_when_big_and_named_when_missing(tmp_path: Path) -> None:
    small = _wav(tmp_path / "small.wav")
    store = AudioStore(rootdir=tmp_path, report_dir=tmp_path / "site")
    first = store.player(str(small), "user audio")
    second = store.player("small.wav", "user audio")  # relative to rootdir: the same file
    assert 'data-audio="a0"' in first and 'data-audio="a0"' in second
    assert list(store.data) == ["a0"]
    assert store.data["a0"].startswith("data:audio/")

    big = AudioStore(rootdir=tmp_path, report_dir=tmp_path / "site", embed_limit_bytes=10)
    assert 'src="../small.wav"' in big.player(str(small), "reply audio")
    assert big.data == {}

    missing = store.player("gone.wav", "reply audio")
    assert "<audio" not in missing and "audio file not found: gone.wav" in missing


def test_audio_past_the_embed_budget_is_linked(tmp_path: Path) -> None:
    one, two = _wav(tmp_path / "one.wav"), _wav(tmp_path / "two.wav")
    size = one.stat().st_size
    store = AudioStore(rootdir=tmp_path, report_dir=tmp_path, embed_budget_bytes=size + 10)
    assert 'data-audio="a0"' in store.player(str(one), "user audio")
    assert 'src="two.wav"' in store.player(str(two), "user audio")
    assert 'data-audio="a0"' in store.player(str(one), "user audio")  # already embedded
    assert list(store.data) == ["a0"]
    assert store.embedded_bytes == size


def test_html_escapes_replies(tmp_path: Path) -> None:
    result = TranscriptResult(
        passed=True,
        score=1.0,
        threshold=1.0,
        runs=[RunResult(0, [_turn(reply="<img src=x onerror=alert(1)>")])],
    )
    page = render_html(_data(_record(result)), rootdir=tmp_path, report_dir=tmp_path)
    assert "<img" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_write_atomic_creates_folders_and_keeps_the_old_file_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "report.md"
    write_atomic(target, "first\n")
    assert target.read_text(encoding="utf-8") == "first\n"
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "half written \udcff")  # cannot be encoded: fails mid-write
    assert target.read_text(encoding="utf-8") == "first\n"
    assert [p.name for p in target.parent.iterdir()] == ["report.md"]


def test_step_summary_falls_back_to_the_short_form_when_too_big(tmp_path: Path) -> None:
    target = tmp_path / "summary.md"
    env = {"GITHUB_STEP_SUMMARY": str(target)}
    assert append_step_summary("full\n", "short\n", env) == target
    big = "x" * (GITHUB_STEP_SUMMARY_LIMIT_BYTES + 1)
    append_step_summary(big, "short\n", env)
    text = target.read_text(encoding="utf-8")
    assert text.startswith("full\nshort\n")
    assert "too large for a job summary" in text and big not in text
    assert append_step_summary("full", "short", {}) is None


def _report(nodeid: str, when: str, outcome: str, **attrs: object) -> SimpleNamespace:
    return SimpleNamespace(
        nodeid=nodeid,
        when=when,
        outcome=outcome,
        failed=outcome == "failed",
        skipped=outcome == "skipped",
        passed=outcome == "passed",
        **attrs,
    )


def test_collector_reads_the_list_form_and_the_single_form() -> None:
    payload = {"nodeid": "a.py::t", "transcript_id": "t", "kind": "python", "result": None}
    assert serialized_records(SimpleNamespace(agent_eval_all=[payload, payload])) == [
        payload,
        payload,
    ]
    assert serialized_records(SimpleNamespace(agent_eval=payload)) == [payload]
    assert serialized_records(SimpleNamespace()) == []

    collector = RecordCollector()
    result = TranscriptResult(passed=False, score=0.0, threshold=1.0, runs=[]).to_dict()
    collector.add_test_report(_report("a.py::t", "setup", "passed", agent_eval=payload))  # type: ignore[arg-type]
    collector.add_test_report(
        _report("a.py::t", "call", "failed", agent_eval={**payload, "result": result})  # type: ignore[arg-type]
    )
    collector.add_test_report(_report("b.py::u", "setup", "failed"))  # type: ignore[arg-type]
    session = collector.build()
    (record,) = session.records
    assert record.verdict == "failed" and record.test_outcome == "failed"
    assert session.failed_nodeids == ("a.py::t", "b.py::u")
    assert session.eval_nodeids == {"a.py::t"}
    assert session.failed_in_call == {"a.py::t"}


def _voice_result(tmp_path: Path) -> TranscriptResult:
    from pytest_agent_eval.models import BargeIn

    clean, streamed = _wav(tmp_path / "clean.wav"), _wav(tmp_path / "streamed.wav")
    turns = [
        _turn(
            audio=str(clean),
            audio_in=streamed,
            conditions="telephone(low_hz=300, high_hz=3400, codec=mulaw)",
            heard="hi there",
            wer=0.5,
            latency_s=0.4,
        ),
        _turn(
            index=1,
            audio=str(clean),
            heard="stop",
            wer=0.0,
            latency_s=0.8,
            barge_in=BargeIn(reply_position_s=1.2, stopped=True, stop_latency_s=0.61),
        ),
    ]
    return TranscriptResult(
        passed=True,
        score=1.0,
        threshold=1.0,
        runs=[RunResult(0, turns)],
        transcript_id="t[phone]",
        variant="phone",
        base_id="t",
    )


def test_html_plays_the_streamed_audio_beside_the_clean_fixture(tmp_path: Path) -> None:
    page = render_html(
        _data(_record(_voice_result(tmp_path))), rootdir=tmp_path, report_dir=tmp_path
    )
    assert "<dt>Clean fixture</dt>" in page and "<dt>Streamed audio</dt>" in page
    assert page.count("<audio") == 3  # clean and streamed for turn 1, the fixture for turn 2
    assert "telephone(low_hz=300, high_hz=3400, codec=mulaw)" in page
    assert "Heard (WER 0.50)" in page and "Variant: phone" in page
    assert "the agent stopped 610 ms after the interrupting speech began" in page
    assert "p95 turn latency 0.80 s (p50 0.40 s, over 2 voice turns)" in page
    assert "Mean WER 0.25 over 2 voice turn(s)" in page


def test_markdown_and_the_account_show_wer_conditions_barge_in_and_latency(
    tmp_path: Path,
) -> None:
    from pytest_agent_eval._report._account import format_account

    result = _voice_result(tmp_path)
    text = render_markdown(_data(_record(result)))
    assert "- Audio conditions: telephone(low_hz=300, high_hz=3400, codec=mulaw)" in text
    assert "- Streamed audio: " in text and "streamed.wav" in text
    assert "- Heard (WER 0.50): hi there" in text
    assert "- Barge-in: interrupted at 1.20 s into the reply; the agent stopped 610 ms" in text
    assert "- p95 turn latency 0.80 s (p50 0.40 s, over 2 voice turns)" in text
    assert "  - turn 1: p50 0.40 s, p95 0.40 s over 1 run(s)" in text
    assert "- Mean WER 0.25 over 2 voice turn(s)" in text
    account = format_account(result, verbose=True)
    assert "  latency p50 0.40 s, p95 0.80 s over 2 voice turn(s)" in account
    assert "      audio conditions: telephone(" in account
    assert "      heard (WER 0.50): 'hi there'" in account
    assert "      barge-in: interrupted at 1.20 s into the reply" in account
    lines = summary_lines(_data(_record(result)))
    assert "p50/p95 latency" in lines[0].text and "0.40/0.80 s" in lines[2].text
