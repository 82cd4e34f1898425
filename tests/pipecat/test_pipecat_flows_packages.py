"""Pipecat Flows in both of its packages: ``pipecat.flows`` (bundled with pipecat-ai) and the
separate pipecat-ai-flows distribution (``pipecat_flows``, in the dev extra). Both can be
installed at once; they are two ``FlowManager`` classes, a bot uses the one it imports, and the
adapter records the node transitions of either (the corpus runs the same two-node flow on both,
at both speeds: ``tests/pipecat/test_pipecat_corpus.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_bots import flows_bot, standalone_flows_bot
from pipecat_support import converse, run, spoken, transcript

from pytest_agent_eval.adapters.pipecat import PipecatAdapter, _compat

pipecat_flows = pytest.importorskip("pipecat_flows", reason="needs pipecat-ai-flows (dev extra)")


def test_both_flows_packages_are_found_and_are_two_flow_managers() -> None:
    import pipecat.flows

    assert _compat.flows_packages() == ["pipecat.flows", "pipecat_flows"]
    assert pipecat.flows.FlowManager is not pipecat_flows.FlowManager


@pytest.mark.parametrize("bot", [flows_bot, standalone_flows_bot], ids=["bundled", "separate"])
def test_each_package_records_its_nodes_with_the_other_installed(
    bot: object, phrases: dict[str, Path]
) -> None:
    import pipecat.flows.manager
    import pipecat_flows.manager

    script = transcript(spoken("book", phrases), spoken("two", phrases), id="flows_both")
    greeting, replies = run(converse(PipecatAdapter(bot), script))
    assert greeting.speech[0].agent == "greeting"
    assert [r.active_agent for r in replies] == ["party_size", "booked"]
    assert [[(h.from_agent, h.to_agent) for h in r.handoffs or []] for r in replies] == [
        [("greeting", "party_size")],
        [("party_size", "booked")],
    ]
    # Whichever the bot used, both classes are watched.
    for manager in (pipecat.flows.manager.FlowManager, pipecat_flows.manager.FlowManager):
        assert getattr(manager._set_node, "_agent_eval_watched", False)


def test_the_separate_package_is_left_unimported_for_a_bot_that_does_not_use_it() -> None:
    """Importing pipecat_flows warns that it (and the pipecat.adapters.schemas it uses) is
    deprecated: that is for a bot that imports it to hear, not one the adapter imports it for."""
    import sys

    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] == "pipecat_flows"}
    for name in saved:
        del sys.modules[name]
    try:
        _compat.watch_flows(_Worker(), lambda before, after: None)
        assert "pipecat_flows" not in sys.modules
        assert "pipecat.flows.manager" in sys.modules
    finally:
        sys.modules.update(saved)


class _Worker:
    """Stands for a worker: watch_flows only keys its listener on it."""
