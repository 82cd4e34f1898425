"""What a Pipecat bot's function calls did, told truly (issue 32): a Flows function that raised
reads ``error``, a call Pipecat refused (a function not offered at that moment) is not a call
with those arguments, and the scripted LLM calls only the functions the context offers."""

from __future__ import annotations

from typing import Any

import pipecat.flows as flows
import pytest
from corpus_bots import FLOW_RULES, voice_bot
from pipecat.pipeline.worker import PipelineWorker
from pipecat_support import converse, run, transcript

from pytest_agent_eval.adapters.pipecat import InProcessTransport, PipecatAdapter, Rule
from pytest_agent_eval.errors import AdapterError
from pytest_agent_eval.evaluators import ToolCallArgsEvaluator, ToolCallEvaluator
from pytest_agent_eval.evaluators._tool_outcome import ToolOutcomeEvaluator
from pytest_agent_eval.models import Turn, TurnContext

DOWN = "the booking system is down"


def _ctx(reply: Any) -> TurnContext:
    return TurnContext(user="", reply=reply.reply, tool_calls=list(reply.calls), history=[])


async def _lookup_tables(args: Any, flow_manager: Any) -> Any:
    raise RuntimeError(DOWN)


async def _record_party(args: Any, flow_manager: Any) -> Any:
    return {"party": args["size"]}, None


def _node(*functions: tuple[str, Any, dict[str, Any]]) -> Any:
    return flows.NodeConfig(
        name="desk",
        role_message="You are a booking assistant.",
        task_messages=[{"role": "developer", "content": "Ask whether they want a table."}],
        functions=[
            flows.FlowsFunctionSchema(
                name=name,
                description=name,
                properties=properties,
                required=list(properties),
                handler=handler,
            )
            for name, handler, properties in functions
        ],
    )


def _flow_bot(
    rules: list[Rule], *functions: tuple[str, Any, dict[str, Any]], careless: bool = False
) -> Any:
    """A one-node flow offering ``functions``; ``careless``: its model names functions without
    looking at what is offered, as real models sometimes do (the scripted LLM, asked with no
    tools, does not check them)."""

    def make(transport: InProcessTransport) -> PipelineWorker:
        worker, _context, llm, pair = voice_bot(transport, instructions=FLOW_RULES)
        llm.rules = rules
        if careless:
            respond_to = llm.respond_to
            llm.respond_to = lambda messages, tools=None: respond_to(messages, None)  # type: ignore[method-assign]
        manager = flows.FlowManager(worker=worker, llm=llm, context_aggregator=pair)

        @transport.event_handler("on_client_connected")
        async def on_client_connected(transport: Any, client: Any) -> None:
            await manager.initialize(_node(*functions))

        return worker

    return make


def test_a_flows_function_that_raises_reads_error_with_its_text() -> None:
    """Flows catches the exception and hands the model ``{"status": "error", "error": ...}`` as
    an ordinary result; before, the call read ``ok`` and ``status: error`` failed."""
    rules = [
        Rule(
            r"free tables",
            tool="lookup_tables",
            reply=lambda ctx: "Sorry, I cannot check." if ctx.tool_error else "We have tables.",
        )
    ]
    bot = _flow_bot(rules, ("lookup_tables", _lookup_tables, {}))
    _, (reply,) = run(converse(PipecatAdapter(bot), transcript(Turn(user="Any free tables?"))))
    (call,) = reply.calls
    assert (call.name, call.outcome, call.error) == ("lookup_tables", "error", DOWN)
    assert reply.reply == "Sorry, I cannot check."  # the scripted model read it as a failure
    failed = ToolOutcomeEvaluator("lookup_tables", "error", [DOWN])._check(_ctx(reply))
    assert failed.passed, failed.reasoning
    ok = ToolOutcomeEvaluator("lookup_tables", "ok")._check(_ctx(reply))
    assert not ok.passed and DOWN in ok.reasoning


def test_a_call_pipecat_refused_is_not_a_call_with_those_arguments() -> None:
    """The model names ``record_party``, which the node does not offer: Pipecat answers "not
    currently available" and runs nothing. Before, ``tool_calls_args`` passed on it."""

    careless = _flow_bot(
        [Rule(r"(?P<size>\w+) people", tool="record_party", args={"size": "{size}"})],
        ("lookup_tables", _lookup_tables, {}),
        careless=True,
    )
    _, (reply,) = run(converse(PipecatAdapter(careless), transcript(Turn(user="Two people."))))
    (call,) = reply.calls
    assert (call.name, call.args, call.outcome) == ("record_party", {"size": 2}, "refused")
    assert call.refused and "not currently available" in (call.error or "")
    args = ToolCallArgsEvaluator("record_party", {"size": 2})._check(_ctx(reply))
    assert not args.passed and not args.errored
    assert "the framework refused the call to record_party" in args.reasoning
    include = ToolCallEvaluator(include=["record_party"])._check(_ctx(reply))
    assert not include.passed and "refused" in include.reasoning
    refused = ToolOutcomeEvaluator("record_party", "refused")._check(_ctx(reply))
    assert refused.passed, refused.reasoning


def test_the_scripted_llm_calls_only_what_the_node_offers() -> None:
    """A rule naming a function the active node does not offer errors the turn, naming the
    rule, the function and what was offered; before, the call was made (and refused)."""
    bot = _flow_bot(
        [Rule(r"(?P<size>\w+) people", tool="record_party", args={"size": "{size}"})],
        ("lookup_tables", _lookup_tables, {}),
    )
    with pytest.raises(AdapterError) as info:
        run(converse(PipecatAdapter(bot), transcript(Turn(user="Two people."))))
    message = str(info.value)
    assert "the rule '(?P<size>\\\\w+) people' calls the tool 'record_party'" in message
    assert "(offered: lookup_tables)" in message
    assert "No real model can call a tool it was not offered" in message


def test_a_function_offered_by_the_node_runs() -> None:
    bot = _flow_bot(
        [Rule(r"(?P<size>\w+) people", tool="record_party", args={"size": "{size}"}, reply="Ok.")],
        ("record_party", _record_party, {"size": {"type": "integer"}}),
    )
    _, (reply,) = run(converse(PipecatAdapter(bot), transcript(Turn(user="Two people."))))
    (call,) = reply.calls
    assert (call.name, call.args, call.outcome) == ("record_party", {"size": 2}, "ok")


def test_a_flows_error_envelope_with_more_keys_is_still_an_error() -> None:
    from pytest_agent_eval.adapters.pipecat._record import flows_error

    assert flows_error({"status": "error", "error": "no table", "code": 404}) == "no table"
    assert flows_error({"status": "error"}) == "the function reported status 'error'"
    assert flows_error({"status": "success", "error": "ignored"}) is None
    assert flows_error("status: error") is None
