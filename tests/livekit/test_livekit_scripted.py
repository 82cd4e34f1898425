"""ScriptedLLM rules and FixtureTextSTT's word sharing, as plain functions."""

from __future__ import annotations

import json

import pytest
from livekit.agents import llm

from pytest_agent_eval.adapters.livekit import Rule, ScriptedLLM, parse_number


def chat(*messages: tuple[str, str]) -> llm.ChatContext:
    ctx = llm.ChatContext.empty()
    for role, text in messages:
        ctx.add_message(role=role, content=text)  # type: ignore[arg-type]
    return ctx


def with_tool_output(ctx: llm.ChatContext, output: str, *, is_error: bool = False) -> None:
    ctx.items.append(llm.FunctionCall(call_id="c1", name="book", arguments="{}"))
    ctx.items.append(
        llm.FunctionCallOutput(call_id="c1", name="book", output=output, is_error=is_error)
    )


@pytest.mark.parametrize(
    ("text", "value"), [("4", 4), ("four", 4), ("Twelve.", 12), ("many", None), (None, None)]
)
def test_parse_number(text: str | None, value: int | None) -> None:
    assert parse_number(text) == value


def test_tool_rule_calls_then_replies_with_the_output() -> None:
    scripted = ScriptedLLM(
        [
            Rule(
                r"table for (?P<n>\w+)",
                tool="book",
                args={"size": "{n}", "note": "for {n}"},
                reply="Booked: {output}{error}",
            )
        ]
    )
    ctx = chat(("user", "A table for four please"))
    text, calls = scripted.respond_to(ctx)
    assert text == ""
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("book", {"size": 4, "note": "for four"})
    ]
    with_tool_output(ctx, "ref 7")
    assert scripted.respond_to(ctx) == ("Booked: ref 7", [])


def test_templated_args_follow_the_types_the_tool_declares() -> None:
    # A real livekit tool: `rx` is a string (a prescription number), `party` an int.
    @llm.function_tool
    async def refill(rx: str, party: int) -> str:
        """Refill a prescription."""
        return "ok"

    scripted = ScriptedLLM(
        [
            Rule(
                r"rx (?P<rx>\d+) for (?P<n>\w+)",
                tool="refill",
                args={"rx": "{rx}", "party": "{n}"},
                reply="done",
            )
        ]
    )
    ctx = chat(("user", "refill rx 1234 for two"))
    _, calls = scripted.respond_to(ctx, [refill])
    arguments = json.loads(calls[0].arguments)
    assert arguments == {"rx": "1234", "party": 2}
    # livekit's own argument validation accepts the call (it rejected an int for `rx`).
    from livekit.agents.llm.utils import prepare_function_arguments

    positional, _ = prepare_function_arguments(fnc=refill, json_arguments=calls[0].arguments)
    assert positional == ("1234", 2)
    # Without the agent's tools (an unknown tool), the earlier rule holds: numbers become ints.
    _, unknown = scripted.respond_to(ctx)
    assert json.loads(unknown[0].arguments) == {"rx": 1234, "party": 2}


def test_reply_sees_tool_errors() -> None:
    scripted = ScriptedLLM([Rule(r"book", tool="book", reply="Failed? {error}")])
    ctx = chat(("user", "book it"))
    with_tool_output(ctx, "boom", is_error=True)
    assert scripted.respond_to(ctx) == ("Failed? error", [])


def test_preamble_goes_with_the_tool_call() -> None:
    scripted = ScriptedLLM([Rule(r"menu", tool="menu", preamble="One moment.", reply="Done.")])
    text, calls = scripted.respond_to(chat(("user", "the menu?")))
    assert (text, [c.name for c in calls]) == ("One moment.", ["menu"])


def test_first_matching_rule_wins_and_default_reply_otherwise() -> None:
    scripted = ScriptedLLM(
        [Rule(r"hello", reply="first"), Rule(r"hello there", reply="second")],
        default_reply="I heard: {user}",
    )
    assert scripted.respond_to(chat(("user", "hello there")))[0] == "first"
    assert scripted.respond_to(chat(("user", "bye")))[0] == "I heard: bye"


def test_recall_searches_only_earlier_user_messages() -> None:
    scripted = ScriptedLLM([Rule(r"who am i", reply=lambda c: str(c.recall(r"i am (\w+)")))])
    ctx = chat(("user", "I am Ada"), ("assistant", "Hi Ada, I am Bot"), ("user", "who am i"))
    assert scripted.respond_to(ctx)[0] == "Ada"
    assert scripted.respond_to(chat(("user", "who am i, I am Zed")))[0] == "None"


def test_rule_needs_a_reply_or_a_tool() -> None:
    with pytest.raises(ValueError, match="needs a reply, a tool, or both"):
        Rule(r"x")


def test_greeting_answers_before_the_user_speaks() -> None:
    scripted = ScriptedLLM([Rule(r"hello", reply="Hi!")], greeting="Welcome to the line.")
    assert scripted.respond_to(chat(("system", "Greet the user warmly."))) == (
        "Welcome to the line.",
        [],
    )
    assert scripted.respond_to(chat(("user", "hello"))) == ("Hi!", [])
    silent = ScriptedLLM([Rule(r"hello", reply="Hi!")])
    assert silent.respond_to(chat()) == ("Sorry, I can't help with that.", [])


def instructed(ctx: llm.ChatContext, instructions: str) -> llm.ChatContext:
    """What LiveKit sends for ``generate_reply(instructions=...)``: the agent's instructions
    first (an ``lk.`` id), the conversation, then the reply's instructions."""
    ctx.items.insert(
        0,
        llm.ChatMessage(id="lk.agent_task.instructions", role="system", content=["Be billing."]),
    )
    ctx.add_message(role="system", content=instructions)
    return ctx


def test_an_agent_that_inherits_the_conversation_gets_its_scripted_intro() -> None:
    """The history has user messages, yet the reply answers the instructions, not the rules."""
    scripted = ScriptedLLM(
        [Rule(r"bill", tool="transfer", reply="Transferring.")],
        instructions=[Rule(r"introduce yourself", reply="Hi, this is billing.")],
    )
    history = chat(("user", "A question about my bill"), ("assistant", "Transferring."))
    assert scripted.respond_to(instructed(history, "Introduce yourself.")) == (
        "Hi, this is billing.",
        [],
    )
    # Without an instructed reply, the same history goes to the rules as before.
    assert scripted.respond_to(chat(("user", "A question about my bill")))[1][0].name == (
        "transfer"
    )


def test_greeting_answers_an_instructed_reply_no_rule_matches() -> None:
    scripted = ScriptedLLM([Rule(r"bill", reply="Rules.")], greeting="Welcome back!")
    history = chat(("user", "my bill"), ("assistant", "Rules."))
    assert scripted.respond_to(instructed(history, "Greet the caller.")) == ("Welcome back!", [])
    fallback = ScriptedLLM([Rule(r"bill", reply="Rules.")])
    history = chat(("user", "my bill"), ("assistant", "Rules."))
    assert fallback.respond_to(instructed(history, "Greet the caller.")) == ("Rules.", [])


def test_an_instruction_rule_can_call_a_tool_then_reply() -> None:
    scripted = ScriptedLLM(
        [], instructions=[Rule(r"offer (?P<what>\w+)", tool="menu", reply="We have {output}.")]
    )
    ctx = instructed(chat(("user", "hi")), "Offer drinks.")
    text, calls = scripted.respond_to(ctx)
    assert (text, [c.name for c in calls]) == ("", ["menu"])
    with_tool_output(ctx, "lemonade")
    assert scripted.respond_to(ctx) == ("We have lemonade.", [])


def test_a_system_message_added_with_the_users_turn_does_not_turn_it_into_a_greeting() -> None:
    """What an agent's ``on_user_turn_completed`` adds to the turn (``turn_ctx.add_message(
    role="system", ...)``) lands after the user's message; the user's words are still what the
    rules answer, through the tool call and its reply, not the ``greeting=`` line."""
    scripted = ScriptedLLM(
        [Rule(r"order", tool="book", reply="Your order {output}.")], greeting="Welcome!"
    )
    ctx = chat(("user", "Where is my order?"), ("system", "The caller is a gold member."))
    text, calls = scripted.respond_to(ctx)
    assert (text, [c.name for c in calls]) == ("", ["book"])
    with_tool_output(ctx, "ships tomorrow")
    assert scripted.respond_to(ctx) == ("Your order ships tomorrow.", [])
    # An instructions rule that matches it still wins, and no matching rule leaves the greeting.
    briefed = ScriptedLLM(
        [Rule(r"order", reply="Rules.")],
        greeting="Welcome!",
        instructions=[Rule(r"gold member", reply="Hello, gold member.")],
    )
    assert briefed.respond_to(chat(("user", "my order"), ("system", "a gold member"))) == (
        "Hello, gold member.",
        [],
    )
    assert briefed.respond_to(chat(("user", "hi"), ("system", "Greet the caller."))) == (
        "Welcome!",
        [],
    )
