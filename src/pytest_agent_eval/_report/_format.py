"""The wording and formats every report shares, in one module: numbers, scores and intervals,
the headline sentences (nothing ran, interrupted), the baseline table's columns and rows, the
failure text. The renderers (terminal, markdown, HTML, the results file, the JUnit properties
and pytest's short summary through `account`) import their shared text from here, never from
each other."""

from __future__ import annotations

from collections.abc import Sequence

from .._records import EvalRecord
from .._text import TOOL_ARGS_MAX_CHARS, shorten
from .._text import format_tool_call as fmt_tool_call
from ..models import (
    AgentSpeech,
    AgentTurn,
    BargeIn,
    RunResult,
    SimulatedCaller,
    TranscriptResult,
    TurnResult,
    Usage,
    score_and_threshold_text,
)
from ._baseline import BaselineComparison
from ._records import ReportData

__all__ = [
    "AGENT_SPEECH_LABEL",
    "BASELINE_HEADER",
    "COLLECTION_STOPPED",
    "INTERRUPTED",
    "NOTHING_RAN",
    "NO_RESULT",
    "SCORE_DECIMALS",
    "TOOL_ARGS_MAX_CHARS",
    "VERDICT_LABELS",
    "agent_rows",
    "baseline_rows",
    "cost_lines",
    "crash_lines",
    "fmt_agent_speech",
    "fmt_barge_in",
    "fmt_interval",
    "fmt_latency",
    "fmt_planned_runs",
    "fmt_rate",
    "fmt_record_score",
    "fmt_result_interval",
    "fmt_runs",
    "fmt_score",
    "fmt_seconds",
    "fmt_threshold",
    "fmt_tokens",
    "fmt_tool_call",
    "fmt_usage",
    "fmt_usage_per_run",
    "fmt_variant",
    "fmt_wer",
    "greeting_shown",
    "heard_rows",
    "interrupted_lines",
    "latency_fact",
    "latency_lines",
    "no_tool_calls",
    "replay_fact",
    "replay_note",
    "replayed_runs",
    "score_fact",
    "session_facts",
    "session_notice",
    "shorten",
    "shown_markers",
    "side_by_side",
    "simulation_rows",
    "verdict_label",
]

NO_RESULT = (
    "The eval did not produce a result (the test errored before it ran).",
    "The test passed without running agent_eval.run() (a marker-only eval): its passing test "
    "is its verdict.",
)
"""What a report says of an eval without a result: errored (index 0) or passed (index 1)."""

INTERRUPTED = "Interrupted: the session was stopped (Ctrl-C) before every eval ran."
"""The first words of every report of an interrupted session."""

COLLECTION_STOPPED = "before any test ran: {count} file(s) failed to load"
"""How a session stopped by collection errors was cut short (``stopped``, ``{count}`` filled
in): pytest runs no test at all when a file fails to collect, unless
``--continue-on-collection-errors`` is given."""


def session_notice(data: ReportData) -> tuple[str, list[tuple[str, list[str]]]] | None:
    """What every report says first when the session did not run every eval: a headline, then
    lists under their titles (the files that failed to load, with why; the evals that did not
    run); None for a session that ran everything it collected."""
    loads = [_load_error_line(nodeid, error) for nodeid, error in data.load_errors]
    lists: list[tuple[str, list[str]]] = []
    if loads:
        lists.append((f"{len(loads)} file(s) failed to load:", loads))
    stopped = data.stopped or "by Ctrl-C"
    if data.interrupted and loads and stopped.startswith("before any test ran"):
        head = (
            f"No eval ran: {len(loads)} file(s) failed to load, and pytest runs no test when "
            "collection fails. Fix them, or pass --continue-on-collection-errors to run the "
            "other tests."
        )
        if data.not_run:
            lists.append((f"{len(data.not_run)} eval(s) did not run:", list(data.not_run)))
    elif data.interrupted:
        head = (
            INTERRUPTED
            if stopped == "by Ctrl-C"
            else f"Interrupted: the session stopped {stopped} before every eval ran."
        )
        if data.not_run:
            lists.append(
                (f"{len(data.not_run)} eval(s) never ran or never finished:", list(data.not_run))
            )
    elif loads:
        head = "Not every eval ran: the evals of the file(s) below did not load."
    else:
        return None
    return head, lists


def _load_error_line(nodeid: str, error: str) -> str:
    """``tests/evals/bad.yaml:5: invalid YAML ...``: the error as it names its file, else
    prefixed with the node id."""
    return error if error.startswith(nodeid) else f"{nodeid}: {error}"


SCORE_DECIMALS = 2
"""Scores are fractions of a few runs; two decimals tell 2/3 from 3/4 without false precision."""


def fmt_score(value: float) -> str:
    """``0.67``."""
    return f"{value:.{SCORE_DECIMALS}f}"


def fmt_interval(interval: tuple[float, float]) -> str:
    """``[0.21–0.94]``."""
    low, high = interval
    return f"[{fmt_score(low)}–{fmt_score(high)}]"


def fmt_rate(value: float | None) -> str:
    """A percentage, or ``–``."""
    return "–" if value is None else f"{value:.0%}"


def _second_decimals(*values: float | None) -> int:
    """Two decimals under 10 s, one from there: the same for every value shown together."""
    return 2 if max((v for v in values if v is not None), default=0.0) < 10 else 1


def fmt_seconds(value: float | None, *, like: float | None = None) -> str:
    """``0.42 s``, ``12.3 s``, or ``–``; with ``like``, as many decimals as ``like`` gets
    (values shown side by side read alike: ``p50 9.9 s, p95 15.9 s``)."""
    if value is None:
        return "–"
    return f"{value:.{_second_decimals(value, like)}f} s"


def fmt_latency(result: TranscriptResult | None) -> str:
    """The median and p95 turn latency of a voice transcript, in one format (``0.40/0.60 s``,
    ``15.9/15.9 s``), or ``–``."""
    if result is None or result.p95_latency_s is None:
        return "–"
    p50, p95 = result.p50_latency_s or 0.0, result.p95_latency_s
    decimals = _second_decimals(p50, p95)
    return f"{p50:.{decimals}f}/{p95:.{decimals}f} s"


def score_fact(result: TranscriptResult) -> str:
    """``Score 0.67 [0.21–0.94] against threshold 1.00: 2 of 3 runs passed, 1.20 s``: the
    first fact of a transcript's section in the markdown and HTML reports."""
    saved = f", {result.saved_runs} saved by early stop" if result.saved_runs else ""
    if not result.evaluated_run_count:
        return (
            f"No score (no run evaluated the agent) against threshold "
            f"{fmt_score(result.threshold)}: 0 of {len(result.runs)} runs passed{saved}, "
            f"{fmt_seconds(result.duration_s)}"
        )
    return (
        f"Score {fmt_score(result.score)} {fmt_interval(result.interval)} against threshold "
        f"{fmt_score(result.threshold)}: {result.passed_run_count} of {len(result.runs)} runs "
        f"passed{saved}, {fmt_seconds(result.duration_s)}"
    )


def latency_fact(result: TranscriptResult) -> str:
    """``p95 turn latency 0.60 s (p50 0.40 s, over 6 voice turns)``, for a transcript that
    measured latency."""
    p50, p95 = result.p50_latency_s, result.p95_latency_s
    return (
        f"p95 turn latency {fmt_seconds(p95, like=p50)} (p50 {fmt_seconds(p50, like=p95)}, "
        f"over {len(result.turn_latencies_s)} voice turns)"
    )


def latency_lines(result: TranscriptResult) -> list[str]:
    """Voice-turn latency over the runs, as sentences: the whole transcript, then each turn
    (``turn 1: p50 0.40 s, p95 0.60 s over 5 runs``); empty when nothing was measured."""
    if result.p95_latency_s is None:
        return []
    values = result.turn_latencies_s
    p50_all, p95_all = result.p50_latency_s, result.p95_latency_s
    lines = [
        f"latency p50 {fmt_seconds(p50_all, like=p95_all)}, p95 "
        f"{fmt_seconds(p95_all, like=p50_all)} over {len(values)} voice turn(s)"
    ]
    for index, count, p50, p95 in result.turn_latency_percentiles():
        lines.append(
            f"turn {index + 1}: p50 {fmt_seconds(p50, like=p95)}, p95 "
            f"{fmt_seconds(p95, like=p50)} over {count} run(s)"
        )
    return lines


def fmt_wer(wer: float | None) -> str:
    """``WER 0.12``, or "" when none was measured."""
    return "" if wer is None else f"WER {wer:.2f}"


def fmt_barge_in(barge: BargeIn) -> str:
    """One sentence on a barge-in: what was tested and what the agent did."""
    if barge.precondition is not None:
        return f"not tested: {barge.precondition}"
    at = (
        f" at {fmt_seconds(barge.reply_position_s)} into the reply"
        if barge.reply_position_s is not None
        else ""
    )
    if barge.stopped and barge.stop_latency_s is not None:
        said = f"; the session kept {barge.interrupted_text!r}" if barge.interrupted_text else ""
        resumed = (
            f" (it went quiet after {barge.quiet_after_s * 1000:.0f} ms, then resumed)"
            if barge.resumed and barge.quiet_after_s is not None
            else ""
        )
        return (
            f"interrupted{at}; the agent stopped {barge.stop_latency_s * 1000:.0f} ms after the "
            f"interrupting speech began{resumed}{said}"
        )
    if barge.resumed:
        return f"interrupted{at}; the agent went quiet, then resumed its reply"
    played = f" ({fmt_seconds(barge.played_s)} played)" if barge.played_s is not None else ""
    return f"interrupted{at}; the agent kept speaking{played}"


def fmt_runs(result: TranscriptResult) -> str:
    """``3`` or ``2 of 5`` (early stop saved the rest)."""
    ran = len(result.runs)
    if result.saved_runs:
        return f"{ran} of {result.planned_runs}"
    return str(ran)


def fmt_tokens(count: int | None) -> str:
    """``1,234``, or ``–`` when the count is unknown (an adapter that does not count requests)."""
    return "–" if count is None else f"{count:,}"


def fmt_threshold(record: EvalRecord) -> str:
    """The threshold the eval was to meet, also when it produced no result; ``–`` if unknown.
    With as many decimals as it takes to tell it from the score (0.670 against 0.667)."""
    res = record.result
    if res is not None:
        return score_and_threshold_text(res.score, res.threshold)[1]
    return "–" if record.threshold is None else fmt_score(record.threshold)


def fmt_record_score(res: TranscriptResult) -> str:
    """The score, with as many decimals as it takes to tell it from the threshold; ``–`` when
    no run evaluated the agent (every run an ERROR: there is no score, not a score of 0)."""
    if not res.evaluated_run_count:
        return "–"
    return score_and_threshold_text(res.score, res.threshold)[0]


def fmt_result_interval(res: TranscriptResult) -> str:
    """The score's interval (``[0.21–0.94]``), or ``–`` when no run evaluated the agent."""
    return fmt_interval(res.interval) if res.evaluated_run_count else "–"


def fmt_planned_runs(record: EvalRecord) -> str:
    """Runs made (``3``, ``2 of 5``), or, for an eval that produced no result, ``0 of 5``."""
    if record.result is not None:
        return fmt_runs(record.result)
    if record.verdict != "error" or record.planned_runs is None:
        return "–"
    return f"0 of {record.planned_runs}"


def fmt_usage(usage: Usage | None) -> str:
    """``1,234 (1,000 in / 234 out)``, or ``–`` when nothing was reported."""
    if usage is None:
        return "–"
    return (
        f"{fmt_tokens(usage.total_tokens)} "
        f"({fmt_tokens(usage.input_tokens)} in / {fmt_tokens(usage.output_tokens)} out)"
    )


def fmt_usage_per_run(usage: Usage | None, runs: int) -> str:
    """``1,230 (410/run)``: the total and the mean per run, or ``–``."""
    if usage is None:
        return "–"
    per_run = round(usage.total_tokens / runs) if runs else 0
    return f"{fmt_tokens(usage.total_tokens)} ({fmt_tokens(per_run)}/run)"


def fmt_usage_parts(
    agent: Usage | None, judge: Usage | None, caller: Usage | None, runs: int
) -> str:
    """``agent 1,230 (410/run), judges 96 (32/run), callers 300 (100/run)``: who spent how many
    tokens, with the mean per run; the callers only when a simulated caller made requests
    (a transcript has none), so the sentence reads as before for transcripts."""
    text = f"agent {fmt_usage_per_run(agent, runs)}, judges {fmt_usage_per_run(judge, runs)}"
    if caller is not None:
        text += f", callers {fmt_usage_per_run(caller, runs)}"
    return text


AGENT_SPEECH_LABEL = "agent-initiated"
"""How every report marks speech the agent started itself (a greeting, a ``say()``), so it is
never read as the reply to the user's turn."""


def fmt_agent_speech(speech: AgentSpeech) -> str:
    """``greeting, Receptionist, at 0.42 s``: why, who and when, for one agent-initiated line."""
    parts = [speech.cause]
    if speech.agent:
        parts.append(speech.agent)
    if speech.started_at_s is not None:
        parts.append(f"at {fmt_seconds(speech.started_at_s)}")
    if speech.latency_s is not None:
        parts.append(f"latency {fmt_seconds(speech.latency_s)}")
    return ", ".join(parts)


def heard_rows(turn: AgentTurn) -> list[tuple[str, str]]:
    """What the speech recognizer heard, as (label, text) rows: one ``Heard`` row, or one row
    per speech segment (``Heard, segment 1 of 2``) when the audio was cut in several, so a
    sentence split in the wrong place shows."""
    segments = turn.heard_segments
    wer = f" ({fmt_wer(turn.wer)})" if turn.wer is not None else ""
    if len(segments) > 1:
        n = len(segments)
        rows = [(f"Heard, segment {i} of {n}", text) for i, text in enumerate(segments, start=1)]
        if turn.wer is not None:
            rows[-1] = (f"{rows[-1][0]} (WER of all {n}: {turn.wer:.2f})", rows[-1][1])
        return rows
    return [] if turn.heard is None else [(f"Heard{wer}", turn.heard)]


def no_tool_calls(turn: TurnResult) -> str:
    """What a report says of a turn without tool calls: "none" only when the turn finished; a
    turn cut short by a crash or an error may have made calls its record does not hold."""
    if turn.crash is not None or turn.error:
        return "not recorded (the turn did not finish)"
    return "none"


def agent_rows(turn: AgentTurn) -> list[tuple[str, str]]:
    """Which agents the turn went through, as (label, text) rows, whenever the adapter reported
    them (not only when a check asks): ``Handoffs`` (``Greeter -> Billing``, in order, or
    ``none``) and ``Active agent`` at the end of the turn."""
    rows = []
    if turn.handoffs is not None:
        shown = [f"{h.from_agent or '?'} -> {h.to_agent}" for h in turn.handoffs]
        rows.append(("Handoffs", ", ".join(shown) or "none"))
    if turn.active_agent is not None:
        rows.append(("Active agent", turn.active_agent))
    return rows


def simulation_rows(run: RunResult) -> list[tuple[str, str]]:
    """A simulated run's conversation facts, as (label, text) rows: who the caller was, who
    ended the call and why, the turns used, and what the caller cost; empty for a transcript's
    run. The criteria's verdicts are the run's ``evaluations``, shown after these."""
    record = run.simulation
    if record is None:
        return []
    rows = [("Caller", record.persona.strip())]
    if record.goal.strip():
        rows.append(("Goal", record.goal.strip()))
    if record.ended_by == "caller":
        outcome = "goal reached" if record.outcome == "goal_reached" else "gave up"
        ended = f"by the caller after turn {record.turns} ({outcome}): {record.reason}"
    elif record.ended_by == "max_turns":
        ended = f"by max_turns ({record.max_turns}): the caller had not ended the call"
    elif record.ended_by == "agent":
        ended = f"by the agent: {record.reason}"
    else:
        ended = f"broke off: {record.reason}"
    rows.append(("Ended", ended))
    rows.append(
        (
            "Turns",
            f"{record.turns} of at most {record.max_turns} ({record.scripted_turns} scripted, "
            f"{record.simulated_turns} by the caller; it could end the call after turn "
            f"{record.min_turns})",
        )
    )
    cost = f"{record.requests} request(s), {record.cached_turns} turn(s) replayed from the cache"
    if record.usage is not None:
        cost += f", tokens {fmt_usage(record.usage)}"
    rows.append(("Caller model", f"{record.model or '?'} · {cost}"))
    if replayed := replay_note(record):
        rows.append(("Replayed", replayed))
    if record.not_judged:
        rows.append(("Criteria", f"not judged: {record.not_judged}"))
    return rows


def replay_note(record: SimulatedCaller) -> str:
    """What a simulated run replayed from the caller cache instead of asking the models, and
    when it was recorded ("" when it replayed nothing): a replay shows the models as they
    answered then, so a report must not let it pass for a live run."""
    parts = []
    if record.cached_turns:
        parts.append(f"{record.cached_turns} caller turn(s)")
    if record.cached_verdicts:
        parts.append(f"{record.cached_verdicts} criteria verdict(s)")
    if not parts:
        return ""
    when = f", recorded {record.recorded_at}" if record.recorded_at else ""
    return (
        f"{' and '.join(parts)} from the caller cache{when}, not asked of the models this "
        "session (--agent-eval-refresh-caller-cache asks them again)"
    )


def replayed_runs(data: ReportData) -> tuple[int, int, str | None]:
    """Over the session: simulated runs that replayed something, simulated runs, and the
    oldest recording time among what was replayed."""
    replayed = total = 0
    oldest: str | None = None
    for res in data.results:
        for run in res.runs:
            record = run.simulation
            if record is None:
                continue
            total += 1
            if record.cached_turns or record.cached_verdicts:
                replayed += 1
                when = record.recorded_at
                if when is not None and (oldest is None or when < oldest):
                    oldest = when
    return replayed, total, oldest


def replay_fact(data: ReportData) -> str | None:
    """The session fact about the caller cache, or None when no simulation ran."""
    replayed, total, oldest = replayed_runs(data)
    if not total:
        return None
    if not replayed:
        return f"simulated runs replayed from the caller cache: none of {total}"
    since = f" (recorded since {oldest})" if oldest else ""
    return f"simulated runs replayed from the caller cache: {replayed} of {total}{since}"


def greeting_shown(run: RunResult) -> bool:
    """Whether a run's greeting deserves a place in a report: something was said or called
    before turn 1, or the transcript checked it."""
    greeting = run.greeting
    said = greeting is not None and bool(greeting.speech or greeting.tool_calls)
    return said or bool(run.greeting_evaluations)


VERDICT_LABELS = {
    "passed": "PASS",
    "failed": "FAIL",
    "crashed": "CRASHED",
    "error": "ERROR",
    "skipped": "SKIP",
}
"""How every report names a verdict (of an eval, a run or a turn)."""


def verdict_label(record: EvalRecord) -> str:
    """``PASS``, ``FAIL``, ``CRASHED``, ``ERROR`` or ``SKIP``."""
    return VERDICT_LABELS[record.verdict]


def crash_lines(records: Sequence[EvalRecord]) -> list[str]:
    """``booking: 1 of 3 run(s) crashed: run 2, turn 1: RuntimeError: boom (at agent.py:12 in
    on_enter)``: one line per eval in which the agent crashed, for every report."""
    return [f"{r.label}: {r.crash_reason}" for r in records if r.crash_reason]


def shown_markers(record: EvalRecord) -> list[str]:
    """The markers worth showing: ``agent_eval`` itself is on every eval, so it is left out."""
    return [m for m in record.markers if m != "agent_eval"]


def session_facts(data: ReportData) -> list[str]:
    """What every report states about the session besides its results: the package version
    and the agent frameworks installed, the agent and judge model ids where the adapters and
    judges reported them, the seeds, how the evals were chosen and whether the session ran to
    its end."""
    facts = []
    if data.package_version:
        facts.append(f"pytest-agent-eval {data.package_version}")
    if data.frameworks:
        facts.append("frameworks: " + ", ".join(f"{n} {v}" for n, v in data.frameworks))
    facts.append("agent models: " + (", ".join(data.agent_models) or "not reported"))
    facts.append("judge models: " + (", ".join(data.judge_models) or "none ran"))
    if (replay := replay_fact(data)) is not None:
        facts.append(replay)
    seeds = ", ".join(f"{what} {value}" for what, value in data.seeds)
    facts.append("seeds: " + (seeds or "none set"))
    if data.selection:
        facts.append("subset: " + " ".join(data.selection))
    facts.append(
        "session complete: yes"
        if data.complete
        else f"session complete: no (stopped {data.stopped or 'by Ctrl-C'})"
    )
    if data.load_errors:
        facts.append(f"files that failed to load: {len(data.load_errors)}")
    return facts


def side_by_side(data: ReportData) -> tuple[list[str], list[tuple[str, dict[str, EvalRecord]]]]:
    """Variants of a parametrized agent next to each other: the parametrization ids (in the
    order first seen), and per transcript run under several of them, its record under each.
    Empty when no transcript ran under two variants."""
    groups: dict[tuple[str, str], dict[str, EvalRecord]] = {}
    for record in data.ran:
        if record.param is None:
            continue
        base = record.nodeid.rsplit("[", 1)[0] if record.nodeid.endswith("]") else record.nodeid
        groups.setdefault((base, record.transcript_id), {})[record.param] = record
    compared = [(key[1], variants) for key, variants in groups.items() if len(variants) > 1]
    params = list(dict.fromkeys(p for _, variants in compared for p in variants))
    return params, compared


def fmt_variant(record: EvalRecord | None) -> str:
    """One cell of the side-by-side table: ``PASS 1.00 [0.44–1.00]``, or ``–``."""
    if record is None:
        return "–"
    res = record.result
    if res is None:
        return verdict_label(record)
    if not res.evaluated_run_count:
        return f"{verdict_label(record)} –"
    return f"{verdict_label(record)} {fmt_record_score(res)} {fmt_result_interval(res)}"


def cost_lines(data: ReportData) -> list[str]:
    """``Cost: 0.0123 USD (agent gpt-4o-mini 0.0100; judge openai:gpt-4o 0.0023)`` and the
    tokens left unpriced; empty when no prices are configured."""
    if not data.prices:
        return []
    cost, unpriced = data.costs
    parts = "; ".join(f"{who} {value:.4f}" for who, value in cost.items())
    lines = [f"Cost: {sum(cost.values()):.4f} {data.currency}" + (f" ({parts})" if parts else "")]
    if unpriced:
        lines.append(
            f"{unpriced:,} tokens not priced (no model id reported, or no price for the model "
            "in [tool.agent_eval.prices])"
        )
    return lines


NOTHING_RAN = "No eval test ran in this session."
"""The sentence a report holds instead of results when every eval was skipped or deselected."""


def interrupted_lines(data: ReportData) -> list[str]:
    """The notice of a session that did not run every eval (interrupted, or files that failed
    to load) and what did not run, as plain text lines; empty for a complete session."""
    notice = session_notice(data)
    if notice is None:
        return []
    head, lists = notice
    return [head, *(line for title, items in lists for line in (title, *items))]


BASELINE_HEADER = (
    "Transcript",
    "Then",
    "Now",
    "Change",
    "p",
    "Δ p95 latency",
    "Δ agent tokens/run",
)
"""The columns of the baseline table in every report."""


def _score_text(score: float | None, ci: tuple[float, float] | None, runs: str) -> str:
    if score is None or ci is None:
        return "–"
    return f"{score:.2f} [{ci[0]:.2f}–{ci[1]:.2f}] ({runs})"


def baseline_rows(comparison: BaselineComparison) -> list[list[str]]:
    """One row per compared eval, in the order of `BASELINE_HEADER`; regressions first."""
    order = {"regressed": 0, "not comparable": 1, "improved": 2, "unchanged": 3}
    rows = []
    for c in sorted(comparison.changes, key=lambda c: order[c.change]):
        latency = "–" if c.latency_delta_s is None else f"{c.latency_delta_s:+.2f} s"
        tokens = "–" if c.tokens_delta_per_run is None else f"{c.tokens_delta_per_run:+,.0f}"
        rows.append(
            [
                c.label,
                _score_text(c.then_score, c.then_ci, c.then_runs),
                _score_text(c.now_score, c.now_ci, c.now_runs),
                "unchanged within noise" if c.change == "unchanged" else c.change,
                "–" if c.p_value is None else f"{c.p_value:.3f}",
                latency,
                tokens,
            ]
        )
    return rows
