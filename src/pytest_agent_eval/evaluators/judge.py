"""LLM-as-judge evaluators: a rubric, a pydantic-ai model, and a structured verdict.

Flow of one verdict:

1. Build the prompt: the rubric and the rules go in the model's instructions; the conversation,
   the turn's tool calls and the reply (or a tool call's arguments) go in the user message
   inside data blocks the reply cannot break out of (see ``_judge_prompt``).
2. With a verdict cache configured, return the stored verdict for an identical prompt.
3. Ask the model for a ``{passed, reasoning}`` verdict, each attempt bounded by ``timeout_s``
   (the attempt loop is `pytest_agent_eval._retry.attempt_with_budget`, shared with the
   simulated caller). Transient failures (timeouts, 429, 5xx, dropped connections, a malformed verdict) are
   retried ``retries`` times with exponential backoff and jitter; a provider's ``Retry-After``
   is honoured up to ``timeout_s`` (longer, and the judge gives up at once, saying it was rate
   limited). The judge owns the retry budget: the provider SDK's own retries are turned off
   (`_compat.pydantic_ai`), so ``retries=2`` means at most 3 HTTP requests, not 9. A model
   that rejects ``temperature`` is asked again without it, which does not use up a retry.
4. A verdict becomes ``EvalResult(passed, reasoning, usage=...)``. When every attempt failed,
   or the failure is not transient (bad API key, unknown model), the result is
   ``EvalResult(passed=False, errored=True, reasoning="judge errored: ...")``: a judge that
   could not answer is never mistaken for a judge that said no. Nothing is raised.

pydantic-ai is imported on first use, never when this module is imported.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from .._async import on_loop_close
from .._compat.pydantic_ai import (
    close_built_model,
    infer_judge_model,
    model_id,
    no_sdk_retry_settings,
    usage_of,
)
from .._retry import Budget, attempt_with_budget, describe_error
from ..errors import install_command
from ..models import EvalResult, ToolCall, TurnContext, Usage, sum_usage
from ._judge_cache import VerdictCache, verdict_key
from ._judge_prompt import (
    JUDGE_PROMPT_VERSION,
    JudgePrompt,
    build_reply_prompt,
    build_tool_args_prompt,
)
from ._judge_settings import DEFAULT_JUDGE_MODEL, JudgeSettings
from ._tools import made_calls, refusals

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = [
    "DEFAULT_JUDGE_MODEL",
    "JUDGE_PROMPT_VERSION",
    "JudgeEvaluator",
    "JudgeModel",
    "OutputMode",
    "ToolCallArgsJudgeEvaluator",
    "build_model",
]

JudgeModel: TypeAlias = "str | Model"
"""A pydantic-ai model id (``"openai:gpt-4o"``, ``"anthropic:claude-sonnet-4-5"``, ...) or a
pydantic-ai ``Model`` instance (an OpenAI-compatible local server, ``FunctionModel``, ...)."""

Sleep: TypeAlias = Callable[[float], Awaitable[Any]]

OutputMode: TypeAlias = Literal["tool", "native", "prompted"]
"""How the verdict is requested: through a tool call (works with most models), the
provider's native structured output, or JSON asked for in the prompt (for local models
without tool calling)."""


@functools.cache
def _verdict_type() -> type[Any]:
    """The judge's structured output, built on first use so pydantic stays out of import time."""
    from pydantic import BaseModel, Field

    class JudgeVerdict(BaseModel):
        """The judge's answer."""

        reasoning: str = Field(description="One to three sentences citing the evidence.")
        passed: bool = Field(description="True only when the rubric is clearly met.")

    return JudgeVerdict


def build_model(spec: Any) -> Any:
    """The model ``spec`` names: a pydantic-ai ``Model`` as it is, an id built with its SDK's
    own retries off (we count attempts) and closed when the session's event loop ends (built
    here, so closed here; a user's model is theirs to close)."""
    if not isinstance(spec, str):
        return spec
    built = infer_judge_model(spec)
    on_loop_close(lambda: close_built_model(built))
    return built


class _JudgeFields:
    """The fields each judge declares in its own order, named here for the shared engine.

    A plain class, not a dataclass: its annotations add no fields, so each judge keeps its
    positional order (``rubric, model, ...``) at run time and for the type checker.
    """

    model: JudgeModel | None
    retries: int | None
    timeout: float | None
    name: str


@dataclass(kw_only=True)
class _JudgeBase(_JudgeFields):
    """Options and the verdict engine shared by both judges (all keyword-only)."""

    settings: JudgeSettings | None = None
    """Model default, retries, timeout and cache folder; None means `JudgeSettings()`."""
    temperature: float | None = 0.0
    """Sampling temperature for the judge; None leaves the provider default."""
    backoff_s: float = 1.0
    """Base delay before the first retry; doubled for each later one."""
    max_backoff_s: float = 20.0
    """Upper bound of one backoff delay, also for a provider's ``Retry-After``."""
    sleep: Sleep = field(default=asyncio.sleep, repr=False, compare=False)
    """How to wait between retries (injectable so tests need not wait)."""
    output_mode: OutputMode = "tool"
    """How the structured verdict is requested from the model (see `OutputMode`)."""
    _resolved: Any = field(default=None, init=False, repr=False, compare=False)
    _omit_temperature: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.retries is not None and (
            isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0
        ):
            raise ValueError(f"retries must be a whole number >= 0, got {self.retries!r}")
        if self.timeout is not None and (
            isinstance(self.timeout, bool)
            or not isinstance(self.timeout, int | float)
            or not self.timeout > 0
        ):
            raise ValueError(f"timeout must be a number of seconds > 0, got {self.timeout!r}")

    @property
    def judge_settings(self) -> JudgeSettings:
        """The effective settings: ``settings`` (or the defaults), with ``retries`` and
        ``timeout`` given to the judge itself winning."""
        base = self.settings if self.settings is not None else JudgeSettings()
        given: dict[str, Any] = {}
        if self.retries is not None:
            given["retries"] = self.retries
        if self.timeout is not None:
            given["timeout_s"] = float(self.timeout)
        return replace(base, **given) if given else base

    @property
    def model_id(self) -> str:
        """The id of the judge model that will be used (explicit, then settings, then default)."""
        return model_id(self._model_spec())

    def _model_spec(self) -> Any:
        if self.model is not None:
            return self.model
        return self.judge_settings.model or DEFAULT_JUDGE_MODEL

    def _model(self) -> Any:
        if self._resolved is None:
            self._resolved = build_model(self._model_spec())
        return self._resolved

    def _errored(self, why: str, usage: Usage | None = None) -> EvalResult:
        return EvalResult(
            passed=False,
            reasoning=f"judge errored: {why}",
            name=self.name,
            errored=True,
            usage=usage,
            model=self.model_id,
        )

    async def _run_once(
        self, model: Any, prompt: JudgePrompt, *, omit_temperature: bool = False
    ) -> tuple[Any, Usage | None]:
        from pydantic_ai import Agent, NativeOutput, PromptedOutput

        output_type: Any = _verdict_type()
        if self.output_mode == "native":
            output_type = NativeOutput(output_type)
        elif self.output_mode == "prompted":
            output_type = PromptedOutput(output_type)
        agent = Agent(
            model,
            output_type=output_type,
            instructions=prompt.instructions,
            name=self.name,
        )
        model_settings: dict[str, Any] = no_sdk_retry_settings()
        if self.temperature is not None and not omit_temperature:
            model_settings["temperature"] = self.temperature
        result = await agent.run(prompt.user_prompt, model_settings=model_settings or None)  # type: ignore[arg-type]
        return result.output, usage_of(result)

    async def _judge(self, prompt: JudgePrompt) -> EvalResult:
        """Ask for one verdict, with cache, timeout, retries and the temperature quirk."""
        settings = self.judge_settings
        model_id = self.model_id
        try:
            model = self._model()
        except ImportError as exc:
            return self._errored(
                f"judge model {model_id!r} needs a package that is not installed ({exc}); "
                f"for OpenAI models: {install_command('openai')}"
            )
        except Exception as exc:  # pydantic-ai's UserError: unknown model, missing API key
            return self._errored(
                f"cannot use judge model {model_id!r}: {describe_error(exc)}. Set judge_model "
                "in [tool.agent_eval] or the turn's judge.model to a model you can reach"
            )

        cache = VerdictCache(settings.cache_dir) if settings.cache_dir is not None else None
        key = verdict_key(
            prompt_version=JUDGE_PROMPT_VERSION,
            model=model_id,
            instructions=prompt.instructions,
            user_prompt=prompt.user_prompt,
        )
        if cache is not None and (hit := cache.get(key)) is not None:
            return EvalResult(
                passed=hit.passed,
                reasoning=f"{hit.reasoning} (cached verdict){prompt.cut_note()}",
                name=self.name,
                model=model_id,
            )

        budget = Budget(
            retries=settings.retries,
            timeout_s=settings.timeout_s,
            backoff_s=self.backoff_s,
            max_backoff_s=self.max_backoff_s,
            sleep=self.sleep,
            omit_temperature=self._omit_temperature,
        )
        outcome = await attempt_with_budget(
            lambda _previous, omit: self._run_once(model, prompt, omit_temperature=omit),
            budget,
            model_id=model_id,
            what="verdict",
            uses_temperature=self.temperature is not None,
        )
        self._omit_temperature = budget.omit_temperature
        if outcome.value is None:
            return self._errored(outcome.failure or "no verdict")
        verdict, usage = outcome.value

        passed, reasoning = bool(verdict.passed), str(verdict.reasoning).strip()
        if cache is not None:
            cache.put(key, passed=passed, reasoning=reasoning, model=model_id)
        return EvalResult(
            passed=passed,
            reasoning=reasoning + prompt.cut_note(),
            name=self.name,
            usage=usage,
            model=model_id,
        )


@dataclass
class JudgeEvaluator(_JudgeBase):
    """Judge a turn's reply, and the tool calls behind it, against a natural-language rubric.

    The judge sees the whole conversation so far (tool calls and results included), the tool
    calls of this turn with their arguments and outputs, and the reply. The reply is passed as
    data: text in it that tries to instruct the judge is ignored.

    Args:
        rubric: What a good reply does, in plain words.
        model: pydantic-ai model id or ``Model`` instance; None uses ``settings.model``
            (``judge_model``, then ``model`` from ``[tool.agent_eval]``), then
            ``"openai:gpt-4o"``.
        retries: Retries after a transient failure; None takes ``settings.retries`` (2 by
            default, or ``retries`` from ``[tool.agent_eval]``).
        timeout: Seconds allowed per judge call; None takes ``settings.timeout_s`` (30 by
            default, or ``timeout`` from ``[tool.agent_eval]``).
        settings: Retries, timeout per call, cache folder and default model.
        name: Name shown in results and reports.
        temperature: Sampling temperature (0.0); dropped automatically for models that
            reject it.
        backoff_s: Base delay of the exponential backoff between retries.
        max_backoff_s: Cap of one backoff delay.
        sleep: Awaitable sleep used between retries (tests inject a no-op).
        output_mode: ``"tool"`` (default), ``"native"`` or ``"prompted"``: how the verdict
            is requested; ``"prompted"`` suits local models without tool calling.

    Example:
        ```python
        from pytest_agent_eval import Expect, Turn
        from pytest_agent_eval.evaluators.judge import JudgeEvaluator

        Turn(
            user="Book a table for two at 7pm",
            expect=Expect(evaluators=[JudgeEvaluator("Confirms the time and party size.")]),
        )
        ```
    """

    rubric: str
    model: JudgeModel | None = None
    retries: int | None = None
    timeout: float | None = None
    _: KW_ONLY
    name: str = "judge"

    async def evaluate(self, ctx: TurnContext) -> EvalResult:
        """Return the judge's verdict on the turn (errored, not raised, when it cannot answer)."""
        settings = self.judge_settings
        return await self._judge(build_reply_prompt(self.rubric, ctx, max_chars=settings.max_chars))


@dataclass
class ToolCallArgsJudgeEvaluator(_JudgeBase):
    """Judge the JSON arguments of the turn's calls to one tool against a rubric.

    Passes when any call to ``tool`` in the turn passes (calls are judged in order, stopping
    at the first pass). Fails, with the calls that were made, when the tool was not called.

    Args:
        tool: Name of the tool whose arguments to judge.
        rubric: What good arguments look like, e.g. "the time is within business hours".
        model: pydantic-ai model id or ``Model`` instance; None falls back as for
            `JudgeEvaluator`.
        retries: See `JudgeEvaluator`.
        timeout: See `JudgeEvaluator`.
        settings: Retries, timeout per call, cache folder and default model.
        name: Name shown in results and reports.
        temperature: See `JudgeEvaluator`.
        backoff_s: See `JudgeEvaluator`.
        max_backoff_s: See `JudgeEvaluator`.
        sleep: See `JudgeEvaluator`.
        output_mode: See `JudgeEvaluator`.
    """

    tool: str
    rubric: str
    model: JudgeModel | None = None
    retries: int | None = None
    timeout: float | None = None
    _: KW_ONLY
    name: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.name:
            self.name = f"tool_args_judge[{self.tool}]"

    async def evaluate(self, ctx: TurnContext) -> EvalResult:
        """Judge each call to ``tool``; any pass is a pass."""
        calls = [ToolCall.coerce(c) for c in ctx.tool_calls]
        # A call the framework refused ran nothing: it is not a call with those arguments.
        matching = [c for c in made_calls(calls) if c.name == self.tool]
        if not matching:
            made = ", ".join(c.name for c in made_calls(calls)) or "none"
            return EvalResult(
                passed=False,
                reasoning=f"no call to {self.tool!r} in this turn (calls made: {made})"
                + refusals(calls, [self.tool]),
                name=self.name,
            )
        notes: list[str] = []
        results: list[EvalResult] = []
        total = len(matching)
        for number, call in enumerate(matching, 1):
            label = f"{self.tool} call {number}/{total}" if total > 1 else f"{self.tool} call"
            if call.args is None:
                notes.append(
                    f"{label}: arguments were not captured (return ToolCall(name, args) from "
                    "the agent, or use a bundled adapter)"
                )
                continue
            prompt = build_tool_args_prompt(
                self.rubric, ctx, call, max_chars=self.judge_settings.max_chars
            )
            result = await self._judge(prompt)
            results.append(result)
            notes.append(f"{label}: {result.reasoning}")
            if result.passed:
                return EvalResult(
                    passed=True,
                    reasoning=notes[-1],
                    name=self.name,
                    usage=sum_usage(r.usage for r in results),
                    model=self.model_id,
                )
        errored = any(r.errored for r in results)
        return EvalResult(
            passed=False,
            reasoning="; ".join(notes),
            name=self.name,
            errored=errored,
            usage=sum_usage(r.usage for r in results),
            model=self.model_id if results else None,
        )
