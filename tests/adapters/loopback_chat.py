"""A loopback HTTP server speaking the OpenAI Chat Completions wire format, for tests.

The real `openai` SDK (and pydantic-ai's OpenAI model) talk to it over a socket on 127.0.0.1:
requests are recorded as parsed JSON, and a Python ``respond(body)`` decides each answer: a
completion dict (status 200), a ``(status, body)`` pair for an error, or ``(status, body,
headers)`` to send headers too (``Retry-After``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "ChatServer",
    "error_body",
    "text_completion",
    "tool_call_completion",
]

Respond = Callable[[dict[str, Any]], "dict[str, Any] | tuple[int, dict[str, Any]]"]


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def text_completion(
    text: str, *, model: str = "loopback-model", prompt_tokens: int = 11, completion_tokens: int = 7
) -> dict[str, Any]:
    """A 200 body whose assistant message is plain text."""
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                # Extra keys real servers send; a client must not echo them back.
                "message": {
                    "role": "assistant",
                    "content": text,
                    "refusal": None,
                    "audio": None,
                    "annotations": [],
                },
                "finish_reason": "stop",
            }
        ],
        "usage": _usage(prompt_tokens, completion_tokens),
    }


def tool_call_completion(
    calls: list[tuple[str, dict[str, Any], str]],
    *,
    model: str = "loopback-model",
    prompt_tokens: int = 13,
    completion_tokens: int = 5,
) -> dict[str, Any]:
    """A 200 body whose assistant message calls tools: ``[(name, args, call_id), ...]``."""
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)},
                        }
                        for name, args, call_id in calls
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": _usage(prompt_tokens, completion_tokens),
    }


def error_body(
    message: str, *, type_: str = "invalid_request_error", code: str | None = None
) -> dict[str, Any]:
    """An OpenAI-style error body."""
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


class ChatServer:
    """Threaded HTTP server on 127.0.0.1, port chosen by the OS.

    Args:
        respond: Decides the answer to each ``POST .../chat/completions`` body.
        keep_alive: Speak HTTP/1.1 and keep connections open between requests, as real
            servers do (a client then reuses its pooled connections).
        any_path: Answer every path as Chat Completions, as some proxies in front of a
            self-hosted model do (``/v1/responses`` included); else other paths are 404.
    """

    def __init__(
        self, respond: Respond, *, keep_alive: bool = False, any_path: bool = False
    ) -> None:
        self.respond = respond
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(body)
                server.paths.append(self.path)
                extra: list[dict[str, Any]] = []
                chat = self.path.rstrip("/").endswith("/chat/completions")
                if not chat and not any_path:
                    status, answer = 404, error_body(f"no route {self.path}")
                else:
                    try:
                        outcome = server.respond(body)
                    except Exception as exc:  # a bug in the test's script: show it as a 500
                        outcome = (
                            500,
                            error_body(f"{type(exc).__name__}: {exc}", type_="server_error"),
                        )
                    if not isinstance(outcome, tuple):
                        outcome = (200, outcome)
                    status, answer, *extra = outcome
                data = json.dumps(answer).encode()
                self.send_response(status)
                for name, value in (extra[0] if extra else {}).items():
                    self.send_header(name, str(value))
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        # A short poll interval lets shutdown() return promptly at the end of each test.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
