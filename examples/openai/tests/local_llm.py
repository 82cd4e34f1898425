"""A tiny local stand-in for an OpenAI-compatible server, so this example runs offline.

It speaks the Chat Completions wire format on 127.0.0.1 and scripts two roles: the booking
agent's model (it calls the tools) and the judge (it answers pydantic-ai's verdict tool).
Point the example at a real server instead with BOOKING_OPENAI_BASE_URL (see conftest.py).
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_BOOKING = re.compile(r"for (\d+) on (\w+) at (\d{1,2}:\d{2})", re.IGNORECASE)


def _message(content: str | None = None, calls: list[tuple[str, dict[str, Any]]] = ()) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}_{name}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(calls)
        ]
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "created": 0,
        "model": "local",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30},
    }


def _judge(body: dict[str, Any]) -> dict:
    instructions = body["messages"][0]["content"]
    prompt = body["messages"][-1]["content"]
    suffix = re.search(r"tags end in _(\w+)", instructions)
    tag = f"agent_reply_{suffix.group(1)}" if suffix else "agent_reply"
    found = re.search(rf"<{tag}>(.*?)</{tag}>", prompt, re.DOTALL)
    reply = found.group(1) if found else ""
    passed = bool(re.search(r"BK-\d+", reply)) and "booked" in reply.lower()
    verdict = {"passed": passed, "reasoning": "reference given" if passed else "no reference"}
    return _message(calls=[(body["tools"][0]["function"]["name"], verdict)])


def _agent(body: dict[str, Any]) -> dict:
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "tool":
        calls = {c["id"]: c for m in messages for c in m.get("tool_calls") or []}
        call = calls[last["tool_call_id"]]["function"]
        args = json.loads(call["arguments"])
        if call["name"] == "book_table":
            if last["content"].startswith("Error"):
                return _message("Sorry, we are closed then.")
            return _message(
                f"Booked! A table for {args['guests']} on {args['day'].title()} at "
                f"{args['time']}. Your reference is {last['content']}."
            )
        return _message(f"I have sent the confirmation for {args['reference']} by email.")
    text = last["content"] or ""
    if match := _BOOKING.search(text):
        guests, day, time = match.groups()
        return _message(
            calls=[("book_table", {"day": day.lower(), "time": time, "guests": int(guests)})]
        )
    if "email" in text.lower():
        references = [
            m["content"] for m in messages if m["role"] == "tool" and "BK-" in m["content"]
        ]
        if references:
            return _message(calls=[("send_confirmation", {"reference": references[-1]})])
    return _message("Happy to help you book a table.")


def respond(body: dict[str, Any]) -> dict:
    """Answer one Chat Completions request as the judge or as the booking agent's model."""
    system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
    return _judge(body) if "impartial judge" in system else _agent(body)


class LocalLLM:
    """The server: ``with LocalLLM() as llm: llm.base_url``."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                data = json.dumps(respond(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> LocalLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
