"""The ``agent_eval`` fixture object, and the one path every eval takes inside a pytest test.

A YAML transcript runs exactly like ``agent_eval.run(transcript=...)`` from a Python test:
resolve the adapter, check voice fixtures, run the transcript through the runner, and keep the
result on the test item, where the report hook finds it. State lives in stash keys declared here.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ._async import SessionLoop
from ._compat.pytest import NO_PARAM_WORDS
from ._conditions import streamed_conditions
from ._eval_plan import marker_plan
from ._options import SessionSettings
from ._records import EvalRecord
from ._report._progress import live_progress
from ._runner import RunSettings, run_transcript
from .adapters.base import AgentAdapter, as_adapter
from .errors import AgentEvalError, TranscriptError
from .models import Transcript, TranscriptResult, Turn, describe_conditions
from .models._turn_taking import TurnTakingRecord

__all__ = [
    "AGENT_FIXTURE",
    "JUDGE_MODEL_FIXTURE",
    "MISSING_AGENT_MESSAGE",
    "AgentEval",
    "adapter_or_fail",
    "call_async_test",
    "check_audio_fixtures",
    "close_session_loop",
    "kept_results",
    "loop_key",
    "record_result",
    "records_key",
    "refusal_key",
    "refuse",
    "session_key",
    "session_loop",
]

AGENT_FIXTURE = "llm_eval_agent"
"""The fixture, written by the user, that returns the agent YAML transcripts talk to."""
JUDGE_MODEL_FIXTURE = "llm_eval_judge_model"
"""An optional user fixture returning the judge model (an id or a pydantic-ai ``Model``)."""
MISSING_AGENT_MESSAGE = f"""\
no '{AGENT_FIXTURE}' fixture: YAML transcripts need it to know which agent to talk to.
Define it in a conftest.py next to (or above) your transcripts, for example:

    # tests/conftest.py
    import pytest
    from pytest_agent_eval import AgentReply

    @pytest.fixture
    def {AGENT_FIXTURE}():
        async def my_agent(history):
            # history[-1].content is this turn's user text
            return AgentReply("Booking confirmed!", ["create_booking"])
        return my_agent
"""

session_key = pytest.StashKey[SessionSettings]()
"""On ``config.stash``: the session's settings, set in ``pytest_configure``."""


records_key = pytest.StashKey[list[EvalRecord]]()
"""On ``item.stash``: every eval the test ran (one for a YAML transcript), as the record its
report carries: its result, file, description and notes (`attach_records` adds the rest)."""
refusal_key = pytest.StashKey[str]()
"""On ``item.stash``: why our code refused to run an eval of the test (bad input, a fixture
not ready, an adapter that cannot start): the eval is an ERROR, the test a pytest error."""
loop_key = pytest.StashKey[SessionLoop]()
"""On ``config.stash``: the one event loop every eval of the session runs on."""


def refuse(item: pytest.Item, message: str) -> None:
    """End the test because the eval could not be run, saying why: an ERROR (the agent was
    not evaluated), never a FAIL a gate could absorb."""
    __tracebackhide__ = True
    item.stash[refusal_key] = message
    pytest.fail(message, pytrace=False)


def session_loop(config: pytest.Config) -> SessionLoop:
    """The session's event loop for evals (made on first use, closed at the end)."""
    loop = config.stash.get(loop_key, None)
    if loop is None:
        loop = config.stash[loop_key] = SessionLoop()
    return loop


def close_session_loop(config: pytest.Config) -> None:
    """Close what the evals opened on the session's loop, then the loop."""
    loop = config.stash.get(loop_key, None)
    if loop is not None:
        del config.stash[loop_key]
        loop.close()


class AgentEval:
    """The ``agent_eval`` fixture: run a conversation from a Python test.

    Args:
        request: The requesting test's fixture request.
        session: The session's settings (``config.stash[session_key]``).

    Example:
        ```python
        @pytest.mark.agent_eval(threshold=0.8, runs=5, tags=["smoke"])
        async def test_booking(agent_eval):
            result = await agent_eval.run(agent=my_agent, turns=[Turn("Book a table")])
            result.assert_threshold()
        ```
    """

    def __init__(self, request: pytest.FixtureRequest, session: SessionSettings) -> None:
        self._request = request
        self._session = session

    def _transcript(
        self,
        turns: Sequence[Turn] | None,
        transcript: Transcript | None,
        transcript_id: str | None,
        threshold: float | None,
        runs: int | None,
        tags: Sequence[str] | None,
    ) -> Transcript:
        marker = self._request.node.get_closest_marker("agent_eval")
        planned = marker_plan(marker.kwargs if marker is not None else {}, self._session.settings)
        if transcript is None:
            if not turns:
                raise TranscriptError(
                    "agent_eval.run() needs turns=[Turn(...), ...] or transcript="
                )
            transcript = Transcript(
                id=transcript_id or self._request.node.name,
                turns=[t if isinstance(t, Turn) else Turn(str(t)) for t in turns],
                threshold=threshold if threshold is not None else planned.threshold,
                runs=runs if runs is not None else planned.runs,
                tags=list(tags if tags is not None else planned.tags),
            )
        elif threshold is not None or runs is not None:
            transcript = replace(
                transcript,
                threshold=transcript.threshold if threshold is None else threshold,
                runs=transcript.runs if runs is None else runs,
            )
        runs_planned = self._session.planned_runs(transcript.runs)
        if runs_planned != transcript.runs:
            transcript = replace(transcript, runs=runs_planned)
        return transcript

    def _marker_turn_timeout(self) -> float | None:
        marker = self._request.node.get_closest_marker("agent_eval")
        value = marker.kwargs.get("turn_timeout_s") if marker is not None else None
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TranscriptError(
                f"agent_eval marker: turn_timeout_s must be a number of seconds, got {value!r}"
            )
        from ._config import check_limit
        from .errors import ConfigError

        try:
            check_limit("turn_timeout_s", value, "agent_eval marker: turn_timeout_s")
        except ConfigError as exc:
            raise TranscriptError(str(exc)) from None
        return float(value)

    async def run(
        self,
        agent: Any = None,
        turns: Sequence[Turn] | None = None,
        *,
        transcript: Transcript | None = None,
        id: str | None = None,
        threshold: float | None = None,
        runs: int | None = None,
        tags: Sequence[str] | None = None,
        judge_model: Any = None,
    ) -> TranscriptResult:
        """Run ``turns`` (or a whole ``transcript``) against ``agent`` and return the result.

        Args:
            agent: Agent callable or adapter; default: the ``llm_eval_agent`` fixture.
            turns: The conversation.
            transcript: Alternatively, a ready `Transcript` (e.g. from the loader).
            id: Name in reports; default: the test name.
            threshold: Pass fraction; default: the marker's, then config.
            runs: Number of runs; default: the marker's, then config.
            tags: Quality-gate tags; default: the marker's.
            judge_model: Judge model for this call (id or pydantic-ai Model).

        Returns:
            The aggregated result; call ``assert_threshold()`` on it to fail the test.
        """
        __tracebackhide__ = True
        # pytest.fail is called outside each ``except``: inside, pytest shows the caught
        # exception too ("During handling of the above exception"), the message twice.
        failure: str | None = None
        try:
            resolved = self._transcript(turns, transcript, id, threshold, runs, tags)
            turn_timeout_s = self._marker_turn_timeout()
        except TranscriptError as exc:
            failure = str(exc)
        if failure is not None:
            refuse(self._request.node, failure)
        if agent is None:
            agent = self._agent_fixture()
        adapter = adapter_or_fail(agent, self._request.node)
        consumes_audio = getattr(adapter, "consumes_audio", False)
        if not consumes_audio:
            unheard = _unheard_conditions(resolved, adapter) or _voice_only_checks(
                resolved, adapter
            )
            if unheard is not None:
                pytest.skip(unheard)
        notes: tuple[str, ...] = ()
        far = resolved.far_end  # a far end heard as audio streams fixtures as audio turns do
        heard = far is not None and far.played_as == "audio"
        if consumes_audio and (resolved.has_audio or heard):
            notes = check_audio_fixtures(resolved, self._session, self._request.node)
        if judge_model is None:
            judge_model = _judge_model_fixture(self._request)
        settings = RunSettings.from_settings(
            self._session.settings, judge_model=judge_model, turn_timeout_s=turn_timeout_s
        )
        progress = live_progress(self._request.config, resolved.runs, len(resolved.turns))
        try:
            result = await run_transcript(
                resolved,
                adapter,
                settings=settings,
                on_run_done=progress.run_done if progress else None,
                on_turn_start=progress.turn_start if progress else None,
            )
        except AgentEvalError as exc:  # bad input found before any run: say it short
            failure = _naming_transcript(str(exc), resolved)
        else:
            failure = None
        finally:
            if progress is not None:
                progress.close()
        if failure is not None:  # outside the except: no "during handling" second copy
            refuse(self._request.node, failure)
        # A failing eval only: one that passed its threshold costs nothing extra, though some
        # of its runs failed (a green suite stays as cheap as with attribution off).
        failed = not result.passed and any(run.verdict == "failed" for run in result.runs)
        if self._session.settings.attribute and consumes_audio and failed:
            from ._attribution import attribute_result

            # Explains each FAILed voice run (docs/attribution.md); no verdict changes.
            await attribute_result(result, resolved, adapter, settings)
        record_result(
            self._request.node,
            result,
            path=resolved.path,
            description=resolved.description,
            notes=notes,
        )
        return result

    def _agent_fixture(self) -> Any:
        """The ``llm_eval_agent`` fixture's value, or a test failure saying what to do."""
        __tracebackhide__ = True
        problem = None
        try:
            return self._request.getfixturevalue(AGENT_FIXTURE)
        except pytest.fail.Exception as exc:
            if NO_PARAM_WORDS not in str(exc):
                raise
            problem = (
                f"agent_eval.run() got no agent= and '{AGENT_FIXTURE}' is parametrized, so "
                "pytest must run this test once per agent: take the fixture as an argument "
                f"and pass it on, e.g.\n\n    def test_x(agent_eval, {AGENT_FIXTURE}):\n"
                f"        agent_eval.run_sync(agent={AGENT_FIXTURE}, turns=[...])"
            )
        except pytest.FixtureLookupError:
            problem = (
                "agent_eval.run() got no agent= and there is no "
                f"'{AGENT_FIXTURE}' fixture to fall back on; pass agent=... or define the "
                "fixture:\n\n" + MISSING_AGENT_MESSAGE.split("\n", 2)[2]
            )
        # Outside the except blocks, so the failure is not chained to pytest's own.
        refuse(self._request.node, problem)

    def run_sync(self, *args: Any, **kwargs: Any) -> TranscriptResult:
        """`run` for synchronous tests (on the session's one event loop)."""
        __tracebackhide__ = True
        return session_loop(self._request.config).run(self.run(*args, **kwargs))


def _naming_transcript(message: str, transcript: Transcript) -> str:
    """``message`` with the transcript named in front, unless it names it already (the runner,
    the loader and adapters name the transcript and turn themselves)."""
    if f"transcript {transcript.id!r}" in message:
        return message
    return f"transcript {transcript.id!r}: {message}"


def _unheard_conditions(transcript: Transcript, adapter: Any) -> str | None:
    """Why a text agent skips ``transcript``: it changes only audio (audio conditions, a
    variant), which a text agent never hears, so it would run exactly like the clean one and
    its result would say nothing about those conditions. None when it has no conditions."""
    conditions = [
        c for i in range(len(transcript.turns)) for c in streamed_conditions(transcript, i)
    ]
    if not conditions:
        return None
    what = (
        f"variant {transcript.variant!r}"
        if transcript.variant is not None
        else "its audio conditions"
    )
    return (
        f"transcript {transcript.id!r}: {what} ({describe_conditions(conditions)}) change only "
        f"the audio, and {type(adapter).__name__} is a text agent, which hears no audio: it "
        "would run exactly like the clean transcript. Run it with a voice adapter (such as "
        "LiveKitAdapter)"
    )


VOICE_ONLY_KEYS = ("heard_contains_any", "heard_contains_all", "heard_wer_max", "interrupt")
"""Turn keys only a voice adapter can observe (what its STT heard, barge-in)."""


def _voice_only_checks(transcript: Transcript, adapter: Any) -> str | None:
    """Why a text agent skips ``transcript``: it asserts what only voice has (what the STT
    heard, barge-in, voice-turn latency percentiles), which a text agent cannot observe, so
    those checks could neither pass nor fail for the right reason. None when it asserts none."""
    where: list[str] = []
    for index, turn in enumerate(transcript.turns):
        keys = [k for k in VOICE_ONLY_KEYS if k != "interrupt" and getattr(turn.expect, k)]
        if turn.interrupt is not None:
            keys.append("interrupt")
        if keys:
            where.append(f"turn {index + 1} ({', '.join(keys)})")
    if transcript.latency_p95_ms_max is not None:
        where.append("latency_p95_ms_max")
    if not where:
        return None
    return (
        f"transcript {transcript.id!r} asserts what only a voice agent can show: "
        f"{'; '.join(where)}; {type(adapter).__name__} is a text agent, which has no speech "
        "recognizer, no audio to interrupt and no voice-turn latency. Run it with a voice "
        "adapter (such as LiveKitAdapter)"
    )


def adapter_or_fail(agent: Any, item: pytest.Item) -> AgentAdapter:
    """``agent`` as an adapter, or an ERROR naming the agent fixture."""
    __tracebackhide__ = True
    try:
        return as_adapter(agent)
    except TypeError as exc:
        failure = f"'{AGENT_FIXTURE}' returned an unusable agent: {exc}"
    refuse(item, failure)  # outside the except: one message, no chain
    raise AssertionError("unreachable")  # refuse() raises


def _judge_model_fixture(request: pytest.FixtureRequest) -> Any:
    """The ``llm_eval_judge_model`` fixture's value, when the project defines one."""
    try:
        return request.getfixturevalue(JUDGE_MODEL_FIXTURE)
    except pytest.FixtureLookupError:
        return None


def check_audio_fixtures(
    transcript: Transcript, session: SessionSettings, item: pytest.Item
) -> tuple[str, ...]:
    """Error, skip or synthesize when a voice transcript's fixtures are missing or stale.

    Text adapters never get here: they ignore ``audio:``.

    Returns:
        The notes on fixtures that are ready (one made by the earlier package), for the
        reports: a note, never a Python warning.
    """
    __tracebackhide__ = True
    from .synthesize._preflight import check_fixtures

    mode = session.settings.stale_audio
    failure: str | None = None
    try:
        readiness = check_fixtures(transcript, session.settings.voice, mode)
    except AgentEvalError as exc:  # a failed synthesis, or a missing extra
        failure = str(exc)
    if failure is not None:  # outside the except: one message, no exception chain
        refuse(item, failure)
    unready = readiness.unready
    if unready is None:
        return readiness.notes
    if mode == "skip":
        pytest.skip(unready.message)
    message = unready.message
    if mode == "fail" and unready.synthesis_fixes_some:
        # Only where synthesizing helps: never for a broken recording alone.
        message += "\n(or run pytest with --agent-eval-stale-audio=synthesize to make them first)"
    refuse(item, message)
    raise AssertionError("unreachable")  # refuse() raises


def kept_results(item: pytest.Item) -> list[TranscriptResult]:
    """The results of the evals ``item`` ran so far, in order (every kept record has one)."""
    return [kept.result for kept in item.stash.get(records_key, []) if kept.result is not None]


def record_result(
    item: pytest.Item,
    result: TranscriptResult,
    *,
    path: Path | None,
    description: str = "",
    notes: tuple[str, ...] = (),
    turn_taking: TurnTakingRecord | None = None,
) -> None:
    """Keep ``result`` (and a turn-taking item's ``turn_taking`` record) on the item for its
    report, and add JUnit properties."""
    kept = EvalRecord(
        nodeid=item.nodeid,
        transcript_id=result.transcript_id,
        path=str(path) if path is not None else None,
        result=result,
        description=description,
        notes=notes,
        turn_taking=turn_taking,
    )
    item.stash.setdefault(records_key, []).append(kept)
    low, high = result.interval
    properties: list[tuple[str, object]] = [
        ("agent_eval_score", round(result.score, 4)),
        ("agent_eval_ci_low", round(low, 4)),
        ("agent_eval_ci_high", round(high, 4)),
        ("agent_eval_runs", len(result.runs)),
        ("agent_eval_passed_runs", result.passed_run_count),
        ("agent_eval_threshold", result.threshold),
        ("agent_eval_verdict", result.verdict),
    ]
    if result.crash_reason is not None:
        # A crash is other news than a wrong answer: CI can grep for it in the JUnit file.
        properties += [
            ("agent_eval_crashed_runs", len(result.crashed_runs)),
            ("agent_eval_crash", result.crash_reason),
        ]
    if result.p95_latency_s is not None:
        properties.append(("agent_eval_p95_latency_s", round(result.p95_latency_s, 4)))
    causes = [run.attribution.cause for run in result.runs if run.attribution is not None]
    if causes:  # why its voice runs failed (docs/attribution.md): "hearing=2,tool=1"
        counted = ",".join(f"{c}={causes.count(c)}" for c in sorted(set(causes)))
        properties.append(("agent_eval_causes", counted))
    # Tokens, so CI can chart cost from the JUnit file alone (only what was reported).
    for who, usage in (("agent", result.agent_usage), ("judge", result.judge_usage)):
        if usage is not None:
            properties += [
                (f"agent_eval_{who}_input_tokens", usage.input_tokens),
                (f"agent_eval_{who}_output_tokens", usage.output_tokens),
            ]
            if usage.requests is not None:
                properties.append((f"agent_eval_{who}_requests", usage.requests))
    item.user_properties.extend(properties)


def call_async_test(pyfuncitem: pytest.Function) -> bool | None:
    """Run an ``async def`` eval test when no async plugin (pytest-asyncio, anyio) claims it.

    Returns:
        True when it ran the test, None to leave it to pytest or the async plugin.
    """
    func = pyfuncitem.obj
    if not inspect.iscoroutinefunction(func):
        return None
    if any(pyfuncitem.get_closest_marker(m) for m in ("asyncio", "anyio", "trio")):
        return None
    params = inspect.signature(func).parameters
    kwargs = {name: pyfuncitem.funcargs[name] for name in params if name in pyfuncitem.funcargs}
    session_loop(pyfuncitem.config).run(func(**kwargs))
    return True
