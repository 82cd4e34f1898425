"""Counterfactuals that name why a failed voice run failed (issue 35).

For each FAILed run of a voice transcript (never a passed, crashed or ERROR run), in order:

1. *tool*: a tool call up to the first failing turn that ended in an error, or was still
   running when its turn ended, is named from the run's own record (nothing is rerun):
   ``tool``.
2. *judge*: when every no of the failing turn is a judge's, the judges are asked again on the
   same reply, the cache off (`_judge`); all yes: ``judge``.
3. *speech output*: the failing turn's saved reply audio, heard by offline Whisper, against
   the reply text (`_speech`); a number, name or code the failed check is about, said
   otherwise: ``speech_output``.
4. *heard words*: what the agent's speech recognizer heard on each audio turn up to the failing
   one, against the fixture's known words (the turn's WER over 0, and the words that differ);
   and *turn cut*: an end of turn on the failing turn's timeline with more of the caller's
   speech after it (`_turn_cut`).
5. *perfect hearing*: the conversation up to the failing turn, run again as audio with the
   agent's STT replaced by the stand-in that hears the fixture's known words (the adapter's
   ``with_fixture_hearing()``), its VAD, turn detection, timing and audio conditions its own.
   When the failing turn then passes and a turn was misheard: ``hearing``.
6. *committed turn*, when a turn was cut: the same audio rerun, the agent's own STT, with each
   caller's turn committed at its fixture's end (manual turn detection: the adapter's
   ``with_committed_turns()``). When the failing turn then passes: ``turn_taking``.
7. *logic*: the same conversation given as text to the same agent (its voice-only checks left
   out), each turn whole. When the failing turn fails again: ``agent_logic``. When it passes
   and the turn was cut but could not be committed at its end: ``turn_taking``, the text
   standing in. When it passes and a turn was misheard, but perfect
   hearing could not be tried (the adapter cannot swap its agent's STT, the agent already
   hears with the stand-in, a realtime model hears for itself): ``hearing``, the text standing
   in for perfect hearing. Otherwise: ``undetermined``, saying what was tried.

A failing turn whose only failed checks are latency checks is ``undetermined`` without a
rerun: a text turn's latency says nothing about a voice turn's.

A call with a far end numbers its turns as the call had them (the far end's hello first):
each rerun gives the transcript's turns up to the failing one (``scripted_turn`` maps them)
and is judged on the call's same turn. Its call whose own turns passed but a check of the
whole call said no is run again whole as text, its checks of the whole call kept: the same
check failing is ``agent_logic``.

An attribution only explains: it is written on the run and never changes a verdict.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import replace

from .._runner import RunSettings, describe_exception, run_transcript
from .._sanitize import scrub
from ..models import (
    AudioCondition,
    EvalResult,
    RunResult,
    Transcript,
    TranscriptResult,
    TurnResult,
)
from ..models import Turn as TranscriptTurn
from ..models._attribution import Attribution, Cause, Evidence, EvidenceVerdict
from ..models._far_end import scripted_turn
from ..voice._speech import spoken_text
from ._judge import judged_only, rejudge
from ._speech import speech_output_evidence
from ._turn_cut import turn_cut_evidence
from ._words import misheard_spans

__all__ = ["attribute_result", "failing_turn", "fixture_hearing_transcript", "text_transcript"]

_VOICE_ONLY_KEYS = ("heard_contains_any", "heard_contains_all", "heard_wer_max")
"""Checks of what the speech recognizer heard: a text turn has nothing to check them on."""


def failing_turn(run: RunResult) -> TurnResult | None:
    """The run's first turn where the agent did something wrong (a check said no, it hung,
    it crashed), or None when every turn passed (a greeting or whole-call check failed)."""
    for turn in run.turns:
        agent_error = turn.error is not None and not turn.errored
        if agent_error or turn.crash is not None or any(_said_no(e) for e in turn.evaluations):
            return turn
    return None


def _said_no(evaluation: EvalResult) -> bool:
    return not evaluation.passed and not evaluation.errored


def _check_id(evaluation: EvalResult) -> str:
    return evaluation.key or evaluation.name


def _short_label(evaluation: EvalResult) -> str:
    """``tool_calls_args[0] (line 8)``: the check's key without its turn, and its line."""
    label = re.sub(r"^turns\[\d+\]\.expect\.", "", _check_id(evaluation))
    line = (evaluation.location or "").rpartition(":")[2]
    return f"{label} (line {line})" if line.isdigit() else label


def _is_latency(evaluation: EvalResult) -> bool:
    """A check of timing or turn-taking (a turn's latency, its barge-in): no counterfactual of
    this version makes those perfect, and a text rerun has none of them to check."""
    check = _check_id(evaluation)
    return "max_latency_ms" in check or "interrupt" in check


def _voice_only(evaluation: EvalResult) -> bool:
    return any(key in _check_id(evaluation) for key in _VOICE_ONLY_KEYS)


def fixture_hearing_transcript(
    transcript: Transcript, upto: int, *, kind: str = "audio"
) -> Transcript:
    """``transcript``'s turns up to turn ``upto`` (zero-based, included) as they are, audio,
    conditions and barge-ins kept (a turn's ``interrupt`` is its own speaking over the reply
    before it, so the failing turn keeps its own),
    with no check of what was heard (the stand-in hears every word); one run, and none of the
    checks of the greeting, the whole call or the latency over runs."""
    turns = [
        replace(
            turn,
            expect=replace(
                turn.expect, heard_contains_any=[], heard_contains_all=[], heard_wer_max=None
            ),
        )
        for turn in transcript.turns[: upto + 1]
    ]
    return _one_run(transcript, turns, conditions=transcript.conditions, kind=kind)


def text_transcript(transcript: Transcript, upto: int) -> Transcript:
    """``transcript``'s turns up to turn ``upto`` (zero-based, included), each given as text:
    no audio, no audio conditions, no barge-in, and no check of what was heard; a far end
    heard as audio (``as: audio``) given as text too; one run, and none of the checks of the
    greeting, the whole call or the latency over runs."""
    turns = [
        replace(
            turn,
            audio=None,
            conditions=[],
            interrupt=None,
            expect=replace(
                turn.expect, heard_contains_any=[], heard_contains_all=[], heard_wer_max=None
            ),
        )
        for turn in transcript.turns[: upto + 1]
    ]
    far = transcript.far_end
    text = replace(transcript, far_end=replace(far, played_as="text")) if far else transcript
    return _one_run(text, turns, conditions=[], kind="text")


def _one_run(
    transcript: Transcript,
    turns: list[TranscriptTurn],
    *,
    conditions: list[AudioCondition],
    kind: str,
) -> Transcript:
    # An id of its own: what an adapter keeps per transcript (reply audio saved by id and run,
    # a realtime recording's cassette) is the failed run's evidence, never the rerun's. Its
    # base id stays the transcript's: a far end's fixtures are found by it (`far_end_fixture`).
    return replace(
        transcript,
        id=f"{transcript.id}~{kind}-rerun",
        base_id=transcript.base_id or transcript.id,
        turns=turns,
        runs=1,
        threshold=1.0,
        conditions=conditions,
        variants=[],
        cases=[],
        greeting=None,
        latency_p95_ms_max=None,
        call_expect=None,
    )


async def attribute_result(
    result: TranscriptResult,
    transcript: Transcript,
    agent: object,
    settings: RunSettings,
) -> None:
    """Write an `Attribution` on every FAILed run of ``result`` that streamed audio.

    ``transcript`` is the one ``result`` ran, ``agent`` the adapter it ran against (text reruns
    use it too), ``settings`` its run settings. Verdicts, scores and checks are left alone.
    """
    reruns: dict[tuple[str, int], RunResult | str | None] = {}
    for run in result.runs:
        # A call with a far end is a voice call whose far end speaks in text (docs/telephony.md)
        streamed = any(t.audio is not None for t in run.turns) or transcript.far_end is not None
        if run.verdict != "failed" or not streamed:
            continue
        try:
            attribution = await _attribute_run(run, transcript, agent, settings, reruns)
        except Exception as exc:  # attribution explains; it must never break a result
            attribution = Attribution(
                "undetermined",
                [
                    Evidence(
                        "text_rerun",
                        "error",
                        error=describe_exception(exc),
                        detail=f"attribution failed: {describe_exception(exc)}",
                    )
                ],
            )
        run.attribution = scrub(attribution)


async def _attribute_run(
    run: RunResult,
    transcript: Transcript,
    agent: object,
    settings: RunSettings,
    reruns: dict[tuple[str, int], RunResult | str | None],
) -> Attribution:
    failing = failing_turn(run)
    call_no = [e for e in run.evaluations if _said_no(e)]
    if failing is None and transcript.far_end is not None and call_no:
        return await _attribute_call(run, call_no, transcript, agent, settings, reruns)
    if failing is None:
        return Attribution(
            "undetermined",
            [
                Evidence(
                    "tool_record",
                    "none",
                    detail="no turn failed (the greeting or a whole-call check did); "
                    "no counterfactual of this version applies to those",
                )
            ],
        )
    upto = failing.index  # the run's turn; ``own`` the transcript's turns it ran up to it
    own = _scripted_upto(transcript, upto)
    considered = [t for t in run.turns if t.index <= upto]
    tools = _tool_evidence(considered)
    if tools:
        return Attribution("tool", tools, turn=upto)
    said_no = [e for e in failing.evaluations if _said_no(e)]
    if failing.error is None and said_no and all(_is_latency(e) for e in said_no):
        return Attribution(
            "undetermined",
            [
                Evidence(
                    "tool_record",
                    "none",
                    turn=upto,
                    detail=f"turn {upto + 1} failed only its timing or turn-taking "
                    f"({', '.join(_short_label(e) for e in said_no)}), which no counterfactual "
                    "of this version explains",
                )
            ],
            turn=upto,
        )
    evidence = []
    checked = [e for e in said_no if not _voice_only(e)]
    if judged_only(failing, checked):
        asked = await rejudge(run, failing, checked, transcript, settings)
        if asked.verdict == "passed":
            return Attribution("judge", [asked], turn=upto)
        evidence.append(asked)
    spoken = await speech_output_evidence(failing, checked)
    if any(e.verdict == "found" for e in spoken):
        return Attribution("speech_output", evidence + spoken, turn=upto)
    evidence += spoken + _heard_evidence(considered, upto)
    misheard = any(e.verdict == "found" and e.counterfactual == "heard_words" for e in evidence)
    after = _scripted_index(transcript, upto + 1)
    following = (
        transcript.turns[after] if after is not None and after < len(transcript.turns) else None
    )
    cut = turn_cut_evidence(
        failing, barged_into=following is not None and bool(following.interrupt)
    )
    if cut is not None:
        evidence.append(cut)
    hearing = await _rerun(reruns, "audio", transcript, own - 1, agent, settings)
    if hearing is not None:
        verdict, detail = _judge_rerun(failing, hearing, "with the fixture's words as its STT")
        evidence.append(
            Evidence(
                "fixture_hearing",
                verdict,
                turn=upto,
                error=_why_not(hearing, verdict),
                detail=detail,
                **_audio_of(hearing, upto),
            )
        )
        if verdict == "passed" and misheard:
            return Attribution("hearing", evidence, turn=upto)
    else:
        evidence.append(
            Evidence(
                "fixture_hearing",
                "error",
                turn=upto,
                error="the adapter cannot swap its agent's STT",
                detail=f"{type(agent).__name__} cannot replace its agent's STT with the "
                "fixture's words; the turns given as text stand in for perfect hearing",
            )
        )
    committed = (
        None if cut is None else await _committed(reruns, failing, transcript, agent, settings)
    )
    if committed is not None:
        evidence.append(committed)
        if committed.verdict == "passed":
            return Attribution("turn_taking", evidence, turn=upto)
    text = await _rerun(reruns, "text", transcript, own - 1, agent, settings)
    assert text is not None
    verdict, detail = _judge_rerun(failing, text, "given as text")
    evidence.append(
        Evidence(
            "text_rerun",
            verdict,
            turn=upto,
            error=_why_not(text, verdict),
            detail=detail,
        )
    )
    swapped = next(e for e in evidence if e.counterfactual == "fixture_hearing").verdict in (
        "passed",
        "failed",
        "crashed",
    )
    committed_ran = committed is not None and committed.verdict != "error"
    cause: Cause = "undetermined"
    if verdict == "passed" and cut is not None and not committed_ran:
        cause = "turn_taking"  # the text, committed once at its end, stands in for the audio
    elif verdict == "passed" and misheard and not swapped:
        cause = "hearing"  # the text rerun stands in for perfect hearing
    elif verdict in ("failed", "crashed"):
        cause = "agent_logic"
    elif verdict == "passed":
        evidence[-1].detail += "; yet " + (
            "perfect hearing did not make it pass"
            if swapped and misheard
            else "the same audio committed at the fixture's end did not make it pass"
            if committed_ran
            else "every word was heard as the fixture says it and no turn was cut"
        )
    return Attribution(cause, evidence, turn=upto)


def _scripted_index(transcript: Transcript, call_turn: int) -> int | None:
    """The transcript's turn that the run's turn ``call_turn`` ran (zero-based), or None for a
    turn a far end said itself (its hello, its menus: ``scripted_turn``)."""
    if transcript.far_end is None:
        return call_turn
    return scripted_turn(transcript.far_end, call_turn)


def _scripted_upto(transcript: Transcript, call_turn: int) -> int:
    """How many of the transcript's turns a run had given up to its turn ``call_turn``
    (included): every one before it, and none of a far end's own before its first."""
    if transcript.far_end is None:
        return call_turn + 1
    for turn in range(call_turn, -1, -1):
        index = scripted_turn(transcript.far_end, turn)
        if index is not None:
            return index + 1
    return 0


async def _attribute_call(
    run: RunResult,
    said_no: list[EvalResult],
    transcript: Transcript,
    agent: object,
    settings: RunSettings,
    reruns: dict[tuple[str, int], RunResult | str | None],
) -> Attribution:
    """A call with a far end whose own turns passed, and a check of the whole call said no
    (the far end's ``expect:``, ``call_expect``, a turn the agent's hang-up cut off): the run's
    tool record, then the whole call again with every turn given as text, the call's checks
    kept. The same check fails again: ``agent_logic``."""
    tools = _tool_evidence(run.turns)
    if tools:
        return Attribution("tool", tools)
    rerun = await _rerun(reruns, "call", transcript, len(transcript.turns) - 1, agent, settings)
    assert rerun is not None
    verdict, detail = _judge_call_rerun(said_no, rerun)
    cause: Cause = "agent_logic" if verdict == "failed" else "undetermined"
    if verdict == "passed":
        detail += "; a check of the whole call is rerun as text only, so hearing and "
        detail += "turn-taking are not tried on it"
    evidence = Evidence("text_rerun", verdict, error=_why_not(rerun, verdict), detail=detail)
    return Attribution(cause, [evidence])


def _judge_call_rerun(
    said_no: list[EvalResult], rerun: RunResult | str
) -> tuple[EvidenceVerdict, str]:
    """How the call's checks that said no did when the call was run again as text."""
    how = "the call given as text"
    if isinstance(rerun, str):
        return "error", f"{how} could not run: {rerun}"
    broken = next((t for t in rerun.turns if t.error is not None or t.crash is not None), None)
    if broken is not None:
        reason = f"turn {broken.index + 1}: {broken.error or broken.crash}"
        return "error", f"{how} did not run to its end, so its checks say nothing: {reason}"
    if rerun.error is not None:
        return "error", f"{how} did not run to its end, so its checks say nothing: {rerun.error}"
    checks = {_check_id(e): e for e in rerun.evaluations}
    missing = [_check_id(e) for e in said_no if _check_id(e) not in checks]
    if missing:  # a check the rerun could not hold is never taken for a pass
        return "error", f"{how} could not check {', '.join(missing)}"
    again = [checks[_check_id(e)] for e in said_no]
    if any(e.errored for e in again):
        return "error", f"{how} could not evaluate {', '.join(_check_id(e) for e in again)}"
    failed = [e for e in again if not e.passed]
    if failed:
        said = "; ".join(f"{_short_label(e)}: {e.reasoning}" for e in failed)
        return "failed", f"{how} fails the same check: {said}"
    names = ", ".join(sorted(_short_label(e) for e in said_no))
    return "passed", f"{how} passes ({names})"


async def _committed(
    reruns: dict[tuple[str, int], RunResult | str | None],
    failing: TurnResult,
    transcript: Transcript,
    agent: object,
    settings: RunSettings,
) -> Evidence:
    """The turn-taking counterfactual: the same audio, the agent's own STT, the end of each
    caller's turn committed at its fixture's end (manual turn detection), not where the agent's
    VAD and turn detection put it."""
    upto = failing.index
    own = _scripted_upto(transcript, upto)
    rerun = await _rerun(reruns, "committed", transcript, own - 1, agent, settings)
    if rerun is None:
        return Evidence(
            "committed_turn",
            "error",
            turn=upto,
            error="the adapter cannot commit its agent's turns",
            detail=f"{type(agent).__name__} cannot commit the caller's turn at the fixture's "
            "end; the turns given as text stand in for it",
        )
    verdict, detail = _judge_rerun(
        failing, rerun, "the same audio with the turn committed at the fixture's end"
    )
    return Evidence(
        "committed_turn",
        verdict,
        turn=upto,
        error=_why_not(rerun, verdict),
        detail=detail,
        **_audio_of(rerun, upto),
    )


def _audio_of(rerun: RunResult | str, index: int) -> dict[str, str | None]:
    """An audio rerun's audio on turn ``index`` (what it streamed, its reply), to hear in the
    report beside the run's own."""
    turn = (
        None if isinstance(rerun, str) else next((t for t in rerun.turns if t.index == index), None)
    )
    if turn is None:
        return {"audio_in": None, "audio_out": None}
    streamed = turn.audio_in or turn.audio
    return {
        "audio_in": None if streamed is None else str(streamed),
        "audio_out": None if turn.audio_out is None else str(turn.audio_out),
    }


def _why_not(rerun: RunResult | str, verdict: EvidenceVerdict) -> str | None:
    """Why a rerun said nothing (its verdict ``error``): it could not run, or its run's
    error (an agent whose STT could not be swapped)."""
    if verdict != "error":
        return None
    return rerun if isinstance(rerun, str) else rerun.error


def _tool_evidence(turns: Sequence[TurnResult]) -> list[Evidence]:
    found = []
    for turn in turns:
        for call in turn.tool_calls:
            if call.outcome == "error":
                error = call.error or (None if call.output is None else str(call.output))
                what = f"raised {error}" if error else "failed"
            elif call.outcome == "pending":
                error, what = "still running when the turn ended", "did not finish in its turn"
            else:
                continue
            found.append(
                Evidence(
                    "tool_record",
                    "found",
                    turn=turn.index,
                    tool=call.name,
                    error=error,
                    detail=f"turn {turn.index + 1}: tool {call.name!r} {what}",
                )
            )
    return found


def _heard_evidence(turns: Sequence[TurnResult], upto: int) -> list[Evidence]:
    found = []
    for turn in turns:
        if turn.audio is None or turn.heard is None:
            continue
        spans = misheard_spans(spoken_text(turn.user), turn.heard)
        if (turn.wer is not None and turn.wer <= 0) or not spans:
            continue
        found += [
            Evidence(
                "heard_words",
                "found",
                turn=turn.index,
                heard=heard,
                intended=intended,
                detail=f"turn {turn.index + 1}: heard {heard!r} where the fixture says "
                f"{intended!r}",
            )
            for heard, intended in spans
        ]
    if not found:
        found.append(
            Evidence(
                "heard_words",
                "none",
                turn=upto,
                detail="every audio turn was heard as its fixture says it",
            )
        )
    return found


_TWINS = {"audio": "with_fixture_hearing", "committed": "with_committed_turns"}
"""The audio reruns, each with the adapter's method giving the agent's counterfactual twin:
perfect hearing (``"audio"``), the turn committed at the fixture's end (``"committed"``)."""


async def _rerun(
    reruns: dict[tuple[str, int], RunResult | str | None],
    kind: str,
    transcript: Transcript,
    upto: int,
    agent: object,
    settings: RunSettings,
) -> RunResult | str | None:
    """The run of the conversation up to turn ``upto``, once per kind and turn: ``"audio"``
    with the agent's STT replaced by the fixture's words, ``"committed"`` with each caller's
    turn committed at its fixture's end (None when the adapter cannot make that twin), or
    ``"text"`` with every turn given as text; or why it could not run."""
    key = (kind, upto)
    if key in reruns:
        return reruns[key]
    if kind in _TWINS:
        swap = getattr(agent, _TWINS[kind], None)
        if swap is None:
            reruns[key] = None
            return None
        try:
            target, rerun_of = swap(), fixture_hearing_transcript(transcript, upto, kind=kind)
        except Exception as exc:  # the rerun's own boundary: say why, never raise
            reruns[key] = describe_exception(exc)
            return reruns[key]
    elif kind == "call":  # the whole call as text, its checks of the whole call kept
        whole = text_transcript(transcript, upto)
        target, rerun_of = agent, replace(whole, call_expect=transcript.call_expect)
    else:
        target, rerun_of = agent, text_transcript(transcript, upto)
    # An audio rerun's streamed audio is saved as the run's was (under the rerun's own id).
    saved = settings.save_audio_dir if kind in _TWINS else None
    quiet = replace(settings, concurrency=1, early_stop=False, save_audio_dir=saved)
    try:
        result = await run_transcript(rerun_of, target, settings=quiet)
    except (KeyboardInterrupt, SystemExit, asyncio.CancelledError):
        raise
    except BaseException as exc:  # the rerun's own boundary (a pytest.skip too): say why
        reruns[key] = describe_exception(exc)
    else:
        reruns[key] = result.runs[0] if result.runs else f"the {kind} rerun made no run"
    return reruns[key]


def _judge_rerun(
    failing: TurnResult, rerun: RunResult | str, how: str
) -> tuple[EvidenceVerdict, str]:
    """How the failing turn did in a rerun (``how`` it was rerun: ``"given as text"``):
    passed (every check that failed in the audio run passes, or with only checks of hearing
    failing, every check passes), failed or crashed, or error; with a sentence saying so."""
    where = f"turn {failing.index + 1}"
    if isinstance(rerun, str):
        return "error", f"the rerun {how} could not run: {rerun}"
    turn = next((t for t in rerun.turns if t.index == failing.index), None)
    if turn is None:
        earlier = next((t for t in rerun.turns if t.error is not None or t.crash is not None), None)
        if earlier is not None:
            said = earlier.crash.describe() if earlier.crash is not None else earlier.error
            reason = f"turn {earlier.index + 1}: {said}"
        else:
            reason = rerun.error or "it stopped before that turn"
        return "error", f"the rerun {how} did not reach {where}: {reason}"
    if turn.crash is not None:
        return "crashed", f"{how}, {where} crashes too: {turn.crash.describe()}"
    if turn.errored or any(e.errored for e in turn.evaluations):
        return "error", f"the rerun {how} could not evaluate {where}: {turn.error or 'a check'}"
    if turn.error is not None:
        return "failed", f"{how}, {where} fails too: {turn.error}"
    failed = [_check_id(e) for e in failing.evaluations if _said_no(e) and not _voice_only(e)]
    checks = {_check_id(e): e for e in turn.evaluations}
    if failed:
        missing = [c for c in failed if c not in checks]
        if missing:  # a check the rerun could not hold is never taken for a pass
            return "error", f"the rerun {how} could not check {where}'s {', '.join(missing)}"
        again = [checks[c] for c in failed if not checks[c].passed]
    else:
        again = [e for e in turn.evaluations if not e.passed]
    if again:
        said = "; ".join(f"{_short_label(e)}: {e.reasoning}" for e in again)
        return "failed", f"{how}, {where} fails the same check: {said}"
    names = ", ".join(sorted({_short_label(e) for e in failing.evaluations if _said_no(e)}))
    return "passed", f"{how}, {where} passes ({names or 'no check failed'})"
