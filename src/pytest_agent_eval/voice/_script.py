"""The scripted LLM's rules, framework-neutral: regex rules -> a tool call and/or a reply.

Both voice adapters ship an offline LLM that answers from rules instead of a model (LiveKit's
``ScriptedLLM``, Pipecat's ``ScriptedLLMService``), so a transcript can run in CI with no key.
The rules, how their templates are filled and how numbers are read are the same for both: one
`Rule` class, whichever adapter a user imports it from. What a rule's callables are handed
differs by framework only in the framework's own context object: LiveKit's ``ScriptContext``
carries the ``ChatContext``; the neutral `ScriptContext` here (Pipecat's) carries the earlier
user messages and the framework's context as ``context``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import AdapterError

__all__ = [
    "ArgsTemplate",
    "Rule",
    "ScriptContext",
    "Template",
    "check_offered",
    "parse_number",
    "render",
    "render_args",
]

_NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
}


def parse_number(text: str | None) -> int | None:
    """``"4"`` or ``"four"`` -> 4 (English words up to twenty); None when it is neither.

    Speech recognizers write small numbers either way, so rules that read numbers from what the
    user said should accept both.
    """
    if text is None:
        return None
    word = text.strip().lower().rstrip(".,!?")
    if word.isdigit():
        return int(word)
    return _NUMBER_WORDS.get(word)


def decoded_output(output: str | None) -> Any:
    """A tool's output as a rule's `ScriptContext.tool_result` holds it: decoded when it is
    JSON (a dict the tool returned, say), else the text as given."""
    if output is None:
        return None
    try:
        return json.loads(output)
    except (TypeError, ValueError):
        return output


@dataclass(frozen=True, slots=True)
class ScriptContext:
    """What a rule's callables see when the scripted LLM answers."""

    match: re.Match[str]
    """The rule's pattern matched against the last user message (or the instructions)."""
    user: str
    """The last user message ("" before the user has spoken)."""
    earlier_user_messages: tuple[str, ...] = ()
    """The user messages before the last one, oldest first."""
    tool_output: str | None = None
    """The output of this turn's tool call, once it has run, as the LLM was given it."""
    tool_result: Any = None
    """The same, decoded when it is JSON (a dict a function handler returned, say)."""
    tool_error: bool = False
    """True when this turn's tool call failed."""
    instructions: str | None = None
    """The instructions of an instructed reply (a developer or system message after the last
    user message), if any."""
    context: Any = None
    """The framework's own context object the LLM was given (Pipecat: the ``LLMContext``;
    LiveKit: the ``llm.ChatContext``)."""

    @property
    def chat_ctx(self) -> Any:
        """`context` under LiveKit's name: everything the LLM was given (instructions, earlier
        turns, tool calls and results)."""
        return self.context

    def group(self, name: str | int, default: str | None = None) -> str | None:
        """A group of the match, or ``default`` when it did not take part."""
        value = self.match.group(name)
        return default if value is None else value

    def recall(self, pattern: str, group: str | int = 1) -> str | None:
        """Search the earlier user messages, newest first, for ``pattern``; the group or None.

        This is how a scripted bot "remembers": it finds only what the pipeline kept in the
        context it handed to the LLM.
        """
        regex = re.compile(pattern, re.IGNORECASE)
        for text in reversed(self.earlier_user_messages):
            if m := regex.search(text):
                return m.group(group)
        return None


# A callable template gets the script context (`ScriptContext`), whichever model answers.
Template = str | Callable[[Any], str]
ArgsTemplate = Mapping[str, Any] | Callable[[Any], Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class Rule:
    """One scripted behaviour: when the user's words match, call a tool and/or reply.

    String templates are filled with `str.format` from the match's named groups plus
    ``{user}`` (the user message), ``{output}`` (the tool's output) and ``{error}`` (``"error"``
    when the tool failed, else ``""``). Callables receive a ``ScriptContext`` instead.

    Args:
        pattern: Regular expression searched (case-insensitively) in the last user message.
        reply: What to say; after the tool ran when ``tool`` is set. None says nothing more.
        tool: Name of a tool to call first. It must be one the agent offers the model at that
            moment (see `check_offered`): a real model cannot call any other.
        args: The tool's arguments. A string value that is exactly one placeholder whose text
            is a number (``"{party}"`` -> ``"4"`` or ``"four"``) becomes an int, unless the
            tool declares that argument as a string.
        preamble: Text said in the same response as the tool call, before it runs.
    """

    pattern: str | re.Pattern[str]
    reply: Template | None = None
    tool: str | None = None
    args: ArgsTemplate | None = None
    preamble: Template | None = None
    _regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        regex = (
            self.pattern
            if isinstance(self.pattern, re.Pattern)
            else re.compile(self.pattern, re.IGNORECASE)
        )
        object.__setattr__(self, "_regex", regex)
        if self.reply is None and self.tool is None:
            raise ValueError(f"Rule {self.pattern!r} needs a reply, a tool, or both")

    def search(self, text: str) -> re.Match[str] | None:
        """The match of this rule in ``text``, or None."""
        return self._regex.search(text)


def check_offered(rule: Rule, offered: Iterable[str], *, model: str, how_to_offer: str) -> None:
    """Refuse a rule's tool call when the agent does not offer that tool at this moment.

    A scripted model stands in for a real one, and no real model can call a function it was
    not offered: with the tool missing (a Pipecat Flows node without it, an agent whose tools
    changed) the model would have done something else, and the script cannot say what. So the
    run errors, naming the rule, the tool and what was offered, instead of passing or failing
    on a call no model could make. It is the test's script that is wrong (or the agent's offer:
    the message says both).

    Raises:
        AdapterError: ``rule.tool`` is not among ``offered``.
    """
    names = sorted(set(offered))
    if rule.tool is None or rule.tool in names:
        return
    pattern = rule.pattern.pattern if isinstance(rule.pattern, re.Pattern) else rule.pattern
    raise AdapterError(
        f"{model}: the rule {pattern!r} calls the tool {rule.tool!r}, which the agent does not "
        f"offer at this moment (offered: {', '.join(names) if names else 'no tools'}). No real "
        "model can call a tool it was not offered, so the script cannot stand in for one here: "
        f"fix the script (a narrower pattern, or an earlier rule for this moment), or, if the "
        f"agent should offer {rule.tool!r} now, {how_to_offer}"
    )


_PLACEHOLDER = re.compile(r"^\{(\w+)\}$")


def _fields(ctx: Any) -> dict[str, Any]:
    values: dict[str, Any] = {k: (v or "") for k, v in ctx.match.groupdict().items()}
    values.update(
        user=ctx.user,
        output=ctx.tool_output or "",
        error="error" if ctx.tool_error else "",
    )
    return values


def render(template: Template, ctx: Any) -> str:
    """A reply or preamble template, filled in from ``ctx`` (a script context)."""
    if callable(template):
        return str(template(ctx))
    return template.format(**_fields(ctx))


def render_args(
    args: ArgsTemplate | None, ctx: Any, declared: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A tool call's arguments, filled in. A lone placeholder whose text is a number becomes an
    int, unless the tool declares that argument as a string (``declared`` maps argument names
    to their JSON-schema type: ``"{rx}"`` -> ``"1234"`` for a ``rx: str``): the call must pass
    the tool's own validation, as a real LLM's would."""
    if args is None:
        return {}
    if callable(args):
        return dict(args(ctx))
    values = _fields(ctx)
    declared = declared or {}
    out: dict[str, Any] = {}
    for key, value in args.items():
        if isinstance(value, str):
            text = value.format(**values)
            wants_text = declared.get(key) == "string"
            if (
                not wants_text
                and _PLACEHOLDER.match(value)
                and (number := parse_number(text)) is not None
            ):
                out[key] = number
            else:
                out[key] = text
        else:
            out[key] = value
    return out
