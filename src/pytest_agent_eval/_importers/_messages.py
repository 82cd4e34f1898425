"""Read an OpenAI-format message list (Chat Completions ``messages``, with tool calls) into an
`ImportedCall` for the text adapters.

Accepted: a JSON list of messages, or an object with a ``messages`` list (a request body, a
saved trace). Roles: ``system``/``developer`` (the agent's own prompt, not imported), ``user``,
``assistant`` (``content`` and ``tool_calls``), ``tool`` (the output of a call, matched by
``tool_call_id``), and the older ``function_call``/``function`` pair.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._text import shorten
from ._call import CallImportError, ImportedCall, Notice, ToolUse, UserTurn, Utterance, tool_use

__all__ = ["parse_messages", "read_messages"]


def read_messages(path: Path) -> ImportedCall:
    """Read the message list at ``path``.

    Raises:
        CallImportError: Not JSON, not a message list, or no user message.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CallImportError(f"{path}: cannot read the message list ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CallImportError(
            f"{path}:{exc.lineno}: not JSON ({exc.msg}); give a JSON list of OpenAI-format "
            'messages ([{"role": "user", "content": "..."}, ...]) or an object with a '
            "'messages' list"
        ) from None
    return parse_messages(data, name=str(path))


def _content_text(content: Any, where: str, notices: list[Notice], turn: int | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        texts: list[str] = []
        dropped: set[str] = set()
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and part.get("type") in ("text", "input_text"):
                texts.append(str(part.get("text", "")))
            elif isinstance(part, Mapping):
                dropped.add(str(part.get("type")))
        if dropped:
            notices.append(
                Notice(
                    text=f"{where}: parts of type {', '.join(sorted(dropped))} are not "
                    "imported (text only)",
                    turn=turn,
                )
            )
        return "\n".join(t for t in texts if t).strip()
    raise CallImportError(f"{where}: content is a {type(content).__name__}, not text or parts")


def parse_messages(data: Any, *, name: str) -> ImportedCall:
    """Read a message list already loaded from JSON; ``name`` names it in messages."""
    messages = data.get("messages") if isinstance(data, Mapping) else data
    if not isinstance(messages, list):
        raise CallImportError(
            f"{name}: expected a JSON list of OpenAI-format messages, or an object with a "
            f"'messages' list; this is a {type(data).__name__}"
            + (" without 'messages'" if isinstance(data, Mapping) else "")
        )
    conversation = ImportedCall(
        source=f"{Path(name).name} (OpenAI-format messages)",
        kind="messages",
        name_hint=Path(name).stem,
        turns=[],
    )
    open_calls: dict[str, tuple[list[ToolUse], int]] = {}
    for index, message in enumerate(messages):
        where = f"{name}: messages[{index}]"
        if not isinstance(message, Mapping):
            raise CallImportError(f"{where} is a {type(message).__name__}, not a message object")
        role = message.get("role")
        turn = conversation.turns[-1] if conversation.turns else None
        number = len(conversation.turns) or None
        if role in ("system", "developer"):
            continue
        if role == "user":
            text = _content_text(message.get("content"), where, conversation.notices, number)
            if not text:
                conversation.notices.append(
                    Notice(text=f"{where} is a user message with no text; skipped")
                )
                continue
            conversation.turns.append(UserTurn(text=text, spoken=False))
        elif role == "assistant":
            text = _content_text(message.get("content"), where, conversation.notices, number)
            calls = list(message.get("tool_calls") or [])
            if isinstance(message.get("function_call"), Mapping):
                calls.append({"function": message["function_call"], "id": f"legacy-{index}"})
            target_tools = turn.tools if turn is not None else conversation.greeting_tools
            for position, call in enumerate(calls):
                use, call_id = _tool_call(call, f"{where}.tool_calls[{position}]")
                target_tools.append(use)
                if use.args is None:
                    conversation.notices.append(
                        Notice(
                            text=f"the call to {use.name} had arguments that are not a JSON "
                            f"object ({shorten(use.raw_args, 80)!r}); its arguments are not "
                            "drafted",
                            turn=number,
                        )
                    )
                if call_id is not None:
                    open_calls[call_id] = (target_tools, len(target_tools) - 1)
            if text:
                said = Utterance(text=text)
                (turn.replies if turn is not None else conversation.greeting).append(said)
        elif role in ("tool", "function"):
            call_id = message.get("tool_call_id")
            if role == "function":
                call_id = next((k for k in reversed(open_calls) if k.startswith("legacy-")), None)
            if not isinstance(call_id, str) or call_id not in open_calls:
                conversation.notices.append(
                    Notice(text=f"{where}: a tool result for no earlier tool call; skipped")
                )
                continue
            target, position = open_calls.pop(call_id)
            output = _content_text(message.get("content"), where, conversation.notices, number)
            target[position] = replace(target[position], output=output)
        else:
            raise CallImportError(
                f"{where}: unknown role {role!r} (expected system, developer, user, assistant "
                "or tool)"
            )
    if not conversation.turns:
        raise CallImportError(
            f"{name}: no user message among {len(messages)} message(s): there is no turn to replay"
        )
    return conversation


def _tool_call(call: Any, where: str) -> tuple[ToolUse, str | None]:
    if not isinstance(call, Mapping):
        raise CallImportError(f"{where} is a {type(call).__name__}, not a tool call object")
    function = call.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise CallImportError(
            f'{where}: a tool call needs "function": {{"name": ..., "arguments": ...}}'
        )
    call_id = call.get("id")
    use = tool_use(function["name"], function.get("arguments", ""))
    return use, call_id if isinstance(call_id, str) else None
