"""The data of an evaluation: transcripts going in, results coming out (the public path).

Public records are plain dataclasses, as the seed documentation shows them. Validation of YAML
happens at the edge (`loader`); these classes only check invariants a Python user could break.
What the agent did in a turn is one record, `AgentTurn`, shared by `AgentReply` (what an adapter
returns), `TurnContext` (what evaluators see) and `TurnResult` (what reports show). Results turn
into plain JSON and back through one typed serializer (`to_dict` / `from_dict` wrap it), so they
can travel inside pytest reports, including across xdist workers.

The package's parts: `_inputs` (transcripts, turns, expectations), `_turns` (what flows between
runner and agent), `_results` (a check, a turn, a run, a transcript), `_stats` (passes needed,
the Wilson interval, percentiles) and `_earlier` (the earlier package's keyword names on
results). Import from here: the parts are private.
"""

from __future__ import annotations

from . import _earlier  # noqa: F401  (the earlier names, patched onto the result records)
from ._inputs import (
    MAX_RUNS,
    MAX_TURN_TIMEOUT_S,
    AudioCondition,
    CallExpect,
    Case,
    DtmfInput,
    Expect,
    GreetingExpect,
    InterruptConfig,
    JudgeConfig,
    PhoneCall,
    ToolCallArgsConfig,
    ToolCalledConfig,
    ToolCallOutcomeConfig,
    ToolOutcome,
    Transcript,
    Turn,
    Variant,
    VoiceSettings,
    describe_conditions,
)
from ._results import (
    CallEnd,
    Crash,
    EvalResult,
    RunResult,
    SimulatedCaller,
    TranscriptResult,
    TurnResult,
    Verdict,
)
from ._stats import (
    SCORE_MAX_DECIMALS,
    passes_needed,
    percentile,
    score_and_threshold_text,
    wilson_interval,
)
from ._timeline import Timeline, TimelineEvent
from ._turns import (
    AgentReply,
    AgentSpeech,
    AgentTurn,
    BargeIn,
    Greeting,
    Handoff,
    Message,
    ToolCall,
    TurnContext,
    Usage,
    sum_usage,
)

__all__ = [
    "MAX_RUNS",
    "MAX_TURN_TIMEOUT_S",
    "SCORE_MAX_DECIMALS",
    "AgentReply",
    "AgentSpeech",
    "AgentTurn",
    "AudioCondition",
    "BargeIn",
    "CallEnd",
    "CallExpect",
    "Case",
    "Crash",
    "DtmfInput",
    "EvalResult",
    "Expect",
    "Greeting",
    "GreetingExpect",
    "Handoff",
    "InterruptConfig",
    "JudgeConfig",
    "Message",
    "PhoneCall",
    "RunResult",
    "SimulatedCaller",
    "Timeline",
    "TimelineEvent",
    "ToolCall",
    "ToolCallArgsConfig",
    "ToolCallOutcomeConfig",
    "ToolCalledConfig",
    "ToolOutcome",
    "Transcript",
    "TranscriptResult",
    "Turn",
    "TurnContext",
    "TurnResult",
    "Usage",
    "Variant",
    "Verdict",
    "VoiceSettings",
    "describe_conditions",
    "passes_needed",
    "percentile",
    "score_and_threshold_text",
    "sum_usage",
    "wilson_interval",
]
